//! `scope_profiler.call_stack`: call-stack reconstruction seen from Python.
//!
//! Regions store only `(start_ns, end_ns)` per call; nesting is recovered from containment,
//! per lane (`analysis::callstack`, spec-callstack.md). `CallArrays` is one rank's
//! reconstruction (read-only numpy views of Rust-owned columns, no copy); `LaneSplit` its
//! lanes; `build_call_stack` the reference's list of dicts.
use std::any::Any;
use std::sync::Arc;

use numpy::PyArray1;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PySlice, PyTuple};
use scope_profiler_analysis::record_batch::{call_stack_table, CallSource};
use scope_profiler_analysis::{
    build_call_arrays, group_lanes, lane_calls, split_by_lane, CallArrays as Calls, ExclusiveOf, LaneSplit as Split,
    RegionInput, RunAnalysis,
};

use crate::errors::nesting_err;
use crate::numpy_arrays::view;
use crate::results::events::{batch_dicts, batch_of, RowDicts};
use crate::results::mpi_region::MPIRegion;

/// Owner of Rust memory that numpy views point into.
#[pyclass(module = "scope_profiler._native", frozen)]
struct Keeper {
    _owner: Arc<dyn Any + Send + Sync>,
}

/// The columns, either a cached reconstruction's or arrays of their own.
#[derive(Clone)]
enum Source {
    Cached(Arc<scope_profiler_analysis::Reconstruction>),
    Owned(Arc<Calls>),
}

impl Source {
    fn calls(&self) -> &Calls {
        match self {
            Source::Cached(r) => &r.calls,
            Source::Owned(c) => c,
        }
    }
    fn owner(&self) -> Arc<dyn Any + Send + Sync> {
        match self {
            Source::Cached(r) => Arc::clone(r) as Arc<dyn Any + Send + Sync>,
            Source::Owned(c) => Arc::clone(c) as Arc<dyn Any + Send + Sync>,
        }
    }
}

const FIELDS: [&str; 11] = [
    "names",
    "source_files",
    "source_lines",
    "region_index",
    "call_index",
    "start_ns",
    "end_ns",
    "depth",
    "parent",
    "exclusive_ns",
    "lane",
];

/// One rank's reconstructed nesting in start-sorted (call id) order. Every array is indexed
/// by call id, so `parent` indexes back into the same arrays; `names[region_index[i]]` is the
/// call's region and `call_index[i]` its position in that region's arrays. `lane` is empty
/// when no region had a thread column (one stack). `start_ns`, `end_ns`, `exclusive_ns` are
/// int64 ns (recording clock); the index columns int32 (the reference uses int64; same
/// values). `len()` is the number of calls; iterating yields the 11 fields (NamedTuple order).
#[pyclass(module = "scope_profiler.call_stack", frozen)]
pub struct CallArrays {
    source: Source,
    /// Region names (input order, regions with data on the rank); shared by lane slices.
    #[pyo3(get)]
    names: Py<PyList>,
    #[pyo3(get)]
    source_files: Py<PyList>,
    #[pyo3(get)]
    source_lines: Py<PyList>,
    /// The names as Rust strings (for `build_call_stack`).
    name_strs: Vec<String>,
}

impl CallArrays {
    /// The cached reconstruction of `rank` of `analysis` (rows in region-table order).
    pub fn cached(py: Python<'_>, analysis: &Arc<RunAnalysis>, rank: u32) -> PyResult<Self> {
        let a = Arc::clone(analysis);
        let rec = py.detach(move || a.rank(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, analysis, rank)?;
        let run = &analysis.run;
        let rows = &rec.rows;
        let names: Vec<String> = rows
            .iter()
            .map(|&i| run.region_names.get(run.regions[i].region as usize).cloned().unwrap_or_default())
            .collect();
        let files: Vec<Option<String>> =
            rows.iter().map(|&i| run.regions[i].source_file.clone().filter(|f| !f.is_empty())).collect();
        let lines: Vec<Option<i64>> = rows.iter().map(|&i| run.regions[i].source_line.filter(|&l| l >= 0)).collect();
        Self::new(py, Source::Cached(rec), names, files, lines)
    }
    fn new(
        py: Python<'_>,
        source: Source,
        names: Vec<String>,
        files: Vec<Option<String>>,
        lines: Vec<Option<i64>>,
    ) -> PyResult<Self> {
        Ok(CallArrays {
            source,
            names: PyList::new(py, &names)?.unbind(),
            source_files: PyList::new(py, files)?.unbind(),
            source_lines: PyList::new(py, lines)?.unbind(),
            name_strs: names,
        })
    }
    /// Lane-slice arrays sharing this one's name lists.
    fn with_source(&self, py: Python<'_>, source: Source) -> Self {
        CallArrays {
            source,
            names: self.names.clone_ref(py),
            source_files: self.source_files.clone_ref(py),
            source_lines: self.source_lines.clone_ref(py),
            name_strs: self.name_strs.clone(),
        }
    }
    pub fn calls(&self) -> &Calls {
        self.source.calls()
    }
    fn keeper<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(py, Keeper { _owner: self.source.owner() })?.into_any())
    }
    fn i32_col<'py>(&self, py: Python<'py>, col: impl Fn(&Calls) -> &Vec<i32>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        let keeper = self.keeper(py)?;
        // SAFETY: the vector lives in the source `keeper` owns, never mutated.
        Ok(unsafe { view(col(self.calls()), &keeper) })
    }
    fn i64_col<'py>(&self, py: Python<'py>, col: impl Fn(&Calls) -> &Vec<i64>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let keeper = self.keeper(py)?;
        // SAFETY: as in `i32_col`.
        Ok(unsafe { view(col(self.calls()), &keeper) })
    }
}

#[pymethods]
impl CallArrays {
    #[classattr]
    fn _fields() -> Vec<&'static str> {
        FIELDS.to_vec()
    }
    #[getter]
    fn region_index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.i32_col(py, |c| &c.region_index)
    }
    #[getter]
    fn call_index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.i32_col(py, |c| &c.call_index)
    }
    #[getter]
    fn start_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        self.i64_col(py, |c| &c.start_ns)
    }
    #[getter]
    fn end_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        self.i64_col(py, |c| &c.end_ns)
    }
    #[getter]
    fn depth<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.i32_col(py, |c| &c.depth)
    }
    #[getter]
    fn parent<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.i32_col(py, |c| &c.parent)
    }
    #[getter]
    fn exclusive_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        self.i64_col(py, |c| &c.exclusive_ns)
    }
    #[getter]
    fn lane<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i32>>> {
        self.i32_col(py, |c| &c.lane)
    }
    /// Ids of the calls the run's reconstruction set aside (they start inside another call
    /// of their lane and end after it), ascending int64, shape `(n_set_aside,)`; empty from
    /// `build_call_arrays`, which raises instead. A set-aside call is a root (parent -1) with
    /// its whole duration as exclusive time; exports and timelines leave it out.
    #[getter]
    fn set_aside<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_vec(py, self.calls().set_aside.iter().map(|a| a.call as i64).collect())
    }
    fn __len__(&self) -> usize {
        self.calls().len()
    }
    fn __getitem__<'py>(slf: &Bound<'py, Self>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let k = if index < 0 { index + FIELDS.len() as isize } else { index };
        let name = usize::try_from(k)
            .ok()
            .and_then(|k| FIELDS.get(k))
            .ok_or_else(|| PyIndexError::new_err("tuple index out of range"))?;
        slf.getattr(*name)
    }
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let items = FIELDS.iter().map(|f| slf.getattr(*f)).collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(slf.py(), items)?.try_iter()?.into_any())
    }
    fn __repr__(&self) -> String {
        format!("CallArrays({} call(s), {} region(s))", self.calls().len(), self.name_strs.len())
    }
}

/// The lanes of a reconstruction: `(lane, CallArrays)` pairs in ascending lane value, each
/// lane's arrays sliced on first access (`parent` remapped within the lane). A read-only
/// sequence (`len`, indexing, slicing, iteration, `==` with a list).
#[pyclass(module = "scope_profiler.call_stack", frozen)]
pub struct LaneSplit {
    calls: Py<CallArrays>,
    split: SplitOf,
}

/// The lanes: a cached reconstruction's own split, or one made for these calls.
enum SplitOf {
    Cached(Arc<scope_profiler_analysis::Reconstruction>),
    Own(Split),
}

impl std::ops::Deref for SplitOf {
    type Target = Split;
    fn deref(&self) -> &Split {
        match self {
            SplitOf::Cached(rec) => rec.lanes(),
            SplitOf::Own(s) => s,
        }
    }
}

impl LaneSplit {
    /// The lanes of `calls` (the cached split when `calls` is a cached reconstruction).
    pub fn of(py: Python<'_>, calls: CallArrays) -> PyResult<Self> {
        Ok(Self::of_object(py, Py::new(py, calls)?))
    }
    /// The lanes of the `CallArrays` object `calls` (a single lane is that object itself).
    pub fn of_object(py: Python<'_>, calls: Py<CallArrays>) -> Self {
        let split = match &calls.get().source {
            Source::Cached(rec) if !rec.calls.lane.is_empty() => {
                let rec = Arc::clone(rec);
                let computing = Arc::clone(&rec);
                py.detach(move || {
                    computing.lanes();
                });
                SplitOf::Cached(rec)
            }
            source => {
                let c = source.calls();
                SplitOf::Own(match c.len() {
                    0 => Split::default(),
                    // one stack: the lane is the calls themselves (no id list needed)
                    n if c.lane.is_empty() => Split { lanes: vec![-1], offsets: vec![0, n], order: Vec::new() },
                    _ => py.detach(|| split_by_lane(c)),
                })
            }
        };
        LaneSplit { calls, split }
    }
    fn lane<'py>(&self, py: Python<'py>, k: usize) -> PyResult<Bound<'py, PyTuple>> {
        let calls = self.calls.bind(py);
        if self.split.len() == 1 {
            let lane = self.split.lanes[0];
            return PyTuple::new(py, [lane.into_pyobject(py)?.into_any(), calls.clone().into_any()]);
        }
        let (lane, ids) = self.split.get(k);
        let c = calls.get();
        let own = c.with_source(py, Source::Owned(Arc::new(lane_calls(c.calls(), ids))));
        PyTuple::new(py, [lane.into_pyobject(py)?.into_any(), Bound::new(py, own)?.into_any()])
    }
}

#[pymethods]
impl LaneSplit {
    /// Lane values, ascending (int64).
    #[getter]
    fn lanes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_vec(py, self.split.lanes.iter().map(|&l| i64::from(l)).collect())
    }
    /// Calls per lane (int64), aligned with `lanes`.
    fn lane_sizes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_vec(py, self.split.offsets.windows(2).map(|w| (w[1] - w[0]) as i64).collect())
    }
    fn __len__(&self) -> usize {
        self.split.len()
    }
    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.split.len() as isize;
        if let Ok(slice) = index.cast::<PySlice>() {
            let ind = slice.indices(n)?;
            let mut out = Vec::new();
            let mut k = ind.start;
            while (ind.step > 0 && k < ind.stop) || (ind.step < 0 && k > ind.stop) {
                out.push(self.lane(py, k as usize)?);
                k += ind.step;
            }
            return Ok(PyList::new(py, out)?.into_any());
        }
        let mut k: isize = index.extract()?;
        if k < 0 {
            k += n;
        }
        if !(0..n).contains(&k) {
            return Err(PyIndexError::new_err("lane index out of range"));
        }
        Ok(self.lane(py, k as usize)?.into_any())
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let items = (0..self.split.len()).map(|k| self.lane(py, k)).collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.try_iter()?.into_any())
    }
    fn __eq__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        if other.cast::<PyList>().is_ok() || other.cast::<PyTuple>().is_ok() || other.cast::<LaneSplit>().is_ok() {
            let mine = PyList::new(py, slf.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
            let theirs = PyList::new(py, other.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
            return Ok(mine.eq(theirs)?.into_pyobject(py)?.to_owned().into_any());
        }
        Ok(py.NotImplemented().into_bound(py))
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<LaneSplit: {} lane(s), {} call(s)>", self.split.len(), self.calls.bind(py).get().calls().len())
    }
}

/// Reconstruct `regions` (`MPIRegion`s, in this order: an earlier region's call encloses a
/// later one's identical call) on `rank`; regions without data there are skipped. The cached
/// reconstruction is returned when the regions are exactly a result set's rows of that rank
/// in its order and it set no call aside. Raises NestingError (a call ends before it starts, or two calls on one lane
/// overlap without nesting; the message names both, child first).
pub fn reconstruct(py: Python<'_>, regions: &[Bound<'_, MPIRegion>], rank: i64) -> PyResult<CallArrays> {
    let mut views = Vec::new();
    for r in regions {
        let mpi = r.borrow();
        if let Some((_, region)) = mpi.parts().iter().find(|(k, _)| *k == rank) {
            views.push((mpi.name().to_string(), region.bind(py).get().view()));
        }
    }
    if let Some((_, first)) = views.first() {
        let same_run = views
            .iter()
            .all(|(_, v)| Arc::ptr_eq(&v.analysis, &first.analysis) && matches!(v.exclusive, ExclusiveOf::Run));
        if same_run && rank >= 0 {
            let rows: Vec<usize> = views.iter().map(|(_, v)| v.row).collect();
            let cached = CallArrays::cached(py, &first.analysis, rank as u32)?;
            if let Source::Cached(rec) = &cached.source {
                // the cache is lenient (calls that do not nest are set aside); this API is
                // strict, so with set-aside calls it reconstructs again and raises
                if rec.rows == rows && rec.calls.set_aside.is_empty() {
                    return Ok(cached);
                }
            }
        }
    }
    let inputs: Vec<RegionInput<'_>> = views
        .iter()
        .map(|(name, v)| {
            let c = v.calls();
            RegionInput {
                name,
                start_ns: c.start_ns.values(),
                end_ns: c.end_ns.values(),
                thread_ids: c.thread_ids.as_ref().map(|a| &a.values()[..]),
                task_ids: c.task_ids.as_ref().map(|a| &a.values()[..]),
            }
        })
        .collect();
    let calls = py.detach(|| build_call_arrays(&inputs)).map_err(nesting_err)?;
    CallArrays::new(
        py,
        Source::Owned(Arc::new(calls)),
        views.iter().map(|(n, _)| n.clone()).collect(),
        views.iter().map(|(_, v)| v.calls().source_file.clone()).collect(),
        views.iter().map(|(_, v)| v.calls().source_line).collect(),
    )
}

fn mpi_list<'py>(regions: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, MPIRegion>>> {
    regions.try_iter()?.map(|r| Ok(r?.cast_into::<MPIRegion>()?)).collect()
}

/// `build_call_arrays(regions, rank)`: see [`reconstruct`].
#[pyfunction(name = "build_call_arrays")]
pub fn py_build_call_arrays(py: Python<'_>, regions: &Bound<'_, PyAny>, rank: i64) -> PyResult<CallArrays> {
    reconstruct(py, &mpi_list(regions)?, rank)
}

/// One dict per call of `rank` in sorted order (parents first): `call_id, name, call_index,
/// start, end` (s minus `origin`), `duration, inclusive_duration, exclusive_duration` (s),
/// `depth, parent` (call id or None), `call_path` (`"a > b"`), `source_file, source_lineno,
/// lane` (-1 without lanes), `color` (the MPIRegion's).
pub fn call_stack_dicts<'py>(
    py: Python<'py>,
    regions: &[Bound<'py, MPIRegion>],
    rank: u32,
    origin: f64,
) -> PyResult<Bound<'py, PyList>> {
    let arrays = reconstruct(py, regions, rank as i64)?;
    let files: Vec<Option<String>> = arrays.source_files.bind(py).extract()?;
    let lines: Vec<Option<i64>> = arrays.source_lines.bind(py).extract()?;
    let sources: Vec<CallSource<'_>> =
        arrays.name_strs.iter().zip(&files).zip(&lines).map(|((n, f), l)| (n.as_str(), f.as_deref(), *l)).collect();
    let batch = batch_of(call_stack_table(arrays.calls(), &sources, origin))?;
    let out = batch_dicts(py, &batch, RowDicts { skip: &[], keep_nulls: true, summary_rows: false })?;
    let colors: Vec<(String, Py<PyAny>)> = regions
        .iter()
        .map(|r| Ok((r.borrow().name().to_string(), r.getattr("color")?.unbind())))
        .collect::<PyResult<_>>()?;
    let color_of =
        |name: &str| colors.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone_ref(py)).unwrap_or_else(|| py.None());
    for (call, &region) in out.iter().zip(&arrays.calls().region_index) {
        call.set_item("color", color_of(&arrays.name_strs[region as usize]))?;
    }
    Ok(out)
}

/// `build_call_stack(regions, rank, origin=0.0)`: see [`call_stack_dicts`]. Raises NestingError.
#[pyfunction]
#[pyo3(signature = (regions, rank, origin=0.0))]
pub fn build_call_stack<'py>(
    py: Python<'py>,
    regions: &Bound<'py, PyAny>,
    rank: u32,
    origin: f64,
) -> PyResult<Bound<'py, PyList>> {
    call_stack_dicts(py, &mpi_list(regions)?, rank, origin)
}

/// Indices of the top-level calls (`parent is None`) of a `build_call_stack` result.
#[pyfunction]
pub fn call_stack_roots(calls: &Bound<'_, PyList>) -> PyResult<Vec<usize>> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        if call.get_item("parent")?.is_none() {
            out.push(i);
        }
    }
    Ok(out)
}

/// Child indices per call of a `build_call_stack` result, in start order.
#[pyfunction]
pub fn call_stack_children(calls: &Bound<'_, PyList>) -> PyResult<Vec<Vec<usize>>> {
    let mut children = vec![Vec::new(); calls.len()];
    for (i, call) in calls.iter().enumerate() {
        let parent = call.get_item("parent")?;
        if !parent.is_none() {
            let p: usize = parent.extract()?;
            if let Some(list) = children.get_mut(p) {
                list.push(i);
            }
        }
    }
    Ok(children)
}

/// Split a reconstruction into one `CallArrays` per lane, ascending lane value (thread lanes
/// -N..-2, i.e. descending thread index, then -1, then tasks). No calls -> empty; no lane
/// column -> `[(-1, calls)]`; one lane -> `[(lane, calls)]`.
#[pyfunction(name = "split_by_lane")]
pub fn py_split_by_lane(py: Python<'_>, calls: &Bound<'_, CallArrays>) -> LaneSplit {
    LaneSplit::of_object(py, calls.clone().unbind())
}

/// `(lanes int64, offsets int64, order uint32)` of a lane column: lane `lanes[k]` holds the
/// positions `order[offsets[k]:offsets[k+1]]`. A counting sort in Rust (O(n)).
#[pyfunction]
pub fn lane_groups<'py>(py: Python<'py>, lane: numpy::PyReadonlyArray1<'py, i32>) -> PyResult<Bound<'py, PyTuple>> {
    let values = lane.as_slice().map(|s| s.to_vec()).unwrap_or_else(|_| lane.as_array().iter().copied().collect());
    let split = py.detach(|| group_lanes(&values));
    let lanes: Vec<i64> = split.lanes.iter().map(|&l| i64::from(l)).collect();
    let offsets: Vec<i64> = split.offsets.iter().map(|&o| o as i64).collect();
    PyTuple::new(
        py,
        [
            PyArray1::from_vec(py, lanes).into_any(),
            PyArray1::from_vec(py, offsets).into_any(),
            PyArray1::from_vec(py, split.order).into_any(),
        ],
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallArrays>()?;
    m.add_class::<LaneSplit>()?;
    m.add_function(wrap_pyfunction!(py_build_call_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(build_call_stack, m)?)?;
    m.add_function(wrap_pyfunction!(call_stack_roots, m)?)?;
    m.add_function(wrap_pyfunction!(call_stack_children, m)?)?;
    m.add_function(wrap_pyfunction!(py_split_by_lane, m)?)?;
    m.add_function(wrap_pyfunction!(lane_groups, m)?)?;
    Ok(())
}
