//! `scope_profiler.results.ProfilingResults`: one run as an ordered mapping of region name to
//! `MPIRegion`, a view over a run held in Rust (`analysis::RunAnalysis`: the rows, the lane
//! tables, the per-rank reconstructions computed once and shared by every analysis).
//!
//! All public times are float s; per-call timestamps are absolute on the recording clock
//! (`CLOCK_MONOTONIC`) unless a method says relative (then minus `time_origin`).
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyImportError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};
use scope_profiler_analysis::region_stats::{time_bounds, RowStats};
use scope_profiler_analysis::{lane_label, py_repr, record_batch, RegionCalls, RowView, Run, RunAnalysis};

use crate::errors::{nesting_err, EventDataUnavailableError};
use crate::native_run::NativeRun;
use crate::results::concurrency::{lane_tables, TaskInfo, ThreadInfo};
use crate::results::mpi_region::{MPIRegion, RegionParts};
use crate::results::pickling::{pickled_run, PickledRun};
use crate::results::region::Region;

/// Region-name patterns: `re.match` (anchored at the start), as the reference applies them.
struct Patterns<'py>(Option<Vec<Bound<'py, PyAny>>>);

impl<'py> Patterns<'py> {
    fn new(py: Python<'py>, arg: Option<Bound<'py, PyAny>>) -> PyResult<Self> {
        let Some(arg) = arg.filter(|a| !a.is_none()) else {
            return Ok(Patterns(None));
        };
        let re = py.import("re")?;
        let items: Vec<Bound<'py, PyAny>> =
            if arg.is_instance_of::<PyString>() { vec![arg] } else { arg.try_iter()?.collect::<PyResult<_>>()? };
        let compiled = items.into_iter().map(|p| re.call_method1("compile", (p,))).collect::<PyResult<_>>()?;
        Ok(Patterns(Some(compiled)))
    }
    fn any_match(&self, name: &str) -> PyResult<Option<bool>> {
        let Some(list) = &self.0 else { return Ok(None) };
        for p in list {
            if !p.call_method1("match", (name,))?.is_none() {
                return Ok(Some(true));
            }
        }
        Ok(Some(false))
    }
}

/// The profiling data of one run: `results["solve"][0].average_duration` is rank 0's mean
/// in s. Built by `read_h5`, at `finalize()`, or from `{name: MPIRegion}` (then the
/// regions' exclusive times come from this result set's reconstruction).
#[pyclass(module = "scope_profiler.results", frozen, weakref)]
pub struct ProfilingResults {
    analysis: Arc<RunAnalysis>,
    regions: Vec<Py<MPIRegion>>,
    index: HashMap<String, usize>,
    metadata: Py<PyDict>,
    file_path: PathBuf,
    is_root: bool,
    event_data: bool,
    num_ranks: i64,
    likwid: Py<PyDict>,
    perf_events: Py<PyDict>,
    line_profile: Py<PyDict>,
    tables: PyOnceLock<(Py<PyDict>, Py<PyDict>)>,
    run_start_time: Option<f64>,
    finalize_time: Option<f64>,
}

fn meta_time(md: &Bound<'_, PyDict>, key: &str) -> Option<f64> {
    let v = md.get_item(key).ok()??;
    v.extract::<f64>().ok().map(|ns| ns / 1e9)
}

fn dict_or_empty<'py>(py: Python<'py>, d: Option<Bound<'py, PyDict>>) -> PyResult<Py<PyDict>> {
    Ok(match d {
        Some(d) => d.copy()?.unbind(),
        None => PyDict::new(py).unbind(),
    })
}

impl ProfilingResults {
    /// Results over `run` (read from `file_path` or just recorded): one `Region` per row,
    /// one `MPIRegion` per name with rows (file order of names; ranks in row order).
    pub fn from_run(py: Python<'_>, run: Run, file_path: String, event_data: bool) -> PyResult<Self> {
        Self::from_analysis(py, Arc::new(RunAnalysis::new(Arc::new(run))), file_path, event_data)
    }

    /// Results over an analysed run (its cached reconstructions are shared).
    pub fn from_analysis(
        py: Python<'_>,
        analysis: Arc<RunAnalysis>,
        file_path: String,
        event_data: bool,
    ) -> PyResult<Self> {
        let run = &analysis.run;
        let mut per_name: Vec<Vec<(i64, Py<Region>)>> = (0..run.region_names.len()).map(|_| Vec::new()).collect();
        for (pos, row) in run.regions.iter().enumerate() {
            let region = Py::new(py, Region::of(RowView::of_run(&analysis, pos), event_data))?;
            if let Some(slot) = per_name.get_mut(row.region as usize) {
                slot.push((row.rank as i64, region));
            }
        }
        let mut regions = Vec::new();
        let mut index = HashMap::new();
        for (name, parts) in run.region_names.iter().zip(per_name) {
            if !parts.is_empty() && !index.contains_key(name) {
                index.insert(name.clone(), regions.len());
                regions.push(Py::new(py, MPIRegion::of(py, name.clone(), parts))?);
            }
        }
        let metadata = crate::run_values::metadata_dict(py, run)?;
        Ok(ProfilingResults {
            run_start_time: meta_time(&metadata, "start_time_ns"),
            finalize_time: meta_time(&metadata, "finalize_time_ns"),
            num_ranks: run.num_ranks as i64,
            metadata: metadata.unbind(),
            analysis,
            regions,
            index,
            file_path: PathBuf::from(file_path),
            is_root: true,
            event_data,
            likwid: PyDict::new(py).unbind(),
            perf_events: PyDict::new(py).unbind(),
            line_profile: PyDict::new(py).unbind(),
            tables: PyOnceLock::new(),
        })
    }

    /// These results with `num_ranks` = `n` (the run keeps its own count).
    pub fn with_num_ranks(self, n: i64) -> Self {
        ProfilingResults { num_ranks: n, ..self }
    }

    pub fn is_root_set(&self) -> bool {
        self.is_root
    }
    pub fn file_path_string(&self) -> String {
        self.file_path.to_string_lossy().into_owned()
    }
    /// Region names (insertion order).
    pub fn names(&self, py: Python<'_>) -> Vec<String> {
        self.mpi(py).iter().map(|r| r.borrow().name().to_string()).collect()
    }
    /// The analysed run.
    pub fn analysis(&self) -> &Arc<RunAnalysis> {
        &self.analysis
    }
    pub fn run(&self) -> &Arc<Run> {
        &self.analysis.run
    }
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<&(Py<PyDict>, Py<PyDict>)> {
        self.tables.get_or_try_init(py, || {
            let (t, k) = lane_tables(py, &self.analysis.run)?;
            Ok((t.unbind(), k.unbind()))
        })
    }
    fn mpi<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, MPIRegion>> {
        self.regions.iter().map(|r| r.bind(py).clone()).collect()
    }
    pub(crate) fn require_event_data(&self, operation: &str) -> PyResult<()> {
        if self.event_data {
            Ok(())
        } else {
            Err(EventDataUnavailableError::new_err(format!(
                "{operation}() requires per-call events, but this profile was loaded with read_h5_summary(); load it with read_h5()"
            )))
        }
    }
    /// `get_regions(include, exclude)`: filtered by `re.match`, sorted (stable) by the
    /// earliest first start over each region's ranks.
    pub fn selected<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, MPIRegion>>> {
        let inc = Patterns::new(py, include)?;
        let exc = Patterns::new(py, exclude)?;
        let mut keyed = Vec::with_capacity(self.regions.len());
        for r in self.mpi(py).into_iter() {
            let name = r.borrow().name().to_string();
            if inc.any_match(&name)? == Some(false) || exc.any_match(&name)? == Some(true) {
                continue;
            }
            let first = r
                .borrow()
                .parts()
                .iter()
                .map(|(_, g)| RowStats::new(g.bind(py).get().view().calls()).first_start())
                .reduce(f64::min)
                .unwrap_or(0.0);
            keyed.push((first, r));
        }
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(keyed.into_iter().map(|(_, r)| r).collect())
    }
    fn origin(&self, relative: bool, origin: Option<f64>) -> f64 {
        match origin {
            Some(o) => o,
            None if relative => self.time_origin(),
            None => 0.0,
        }
    }
    fn per_rank_rows<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut rows = Vec::new();
        for r in self.selected(py, include, exclude)? {
            let mpi = r.borrow();
            let mut parts: Vec<&(i64, Py<Region>)> = mpi.parts().iter().collect();
            parts.sort_by_key(|(k, _)| *k);
            for (rank, g) in parts {
                let g = g.bind(py);
                let d = PyDict::new(py);
                d.set_item("name", mpi.name())?;
                d.set_item("rank", rank)?;
                for (k, v) in g.get().summary_dict(py)?.iter() {
                    d.set_item(k, v)?;
                }
                for (key, q) in [("p50_duration", 50.0), ("p95_duration", 95.0), ("p99_duration", 99.0)] {
                    d.set_item(key, g.call_method1("percentile_duration", (q,))?)?;
                }
                rows.push(d);
            }
        }
        Ok(rows)
    }
    /// The notebook's thread and task tables of rank 0 (`analysis::summary_order::notebook_lanes`).
    fn lane_tables_html(
        &self,
        py: Python<'_>,
        threads: Vec<scope_profiler_analysis::ThreadSummaryRow>,
        tasks: Vec<scope_profiler_analysis::TaskSummaryRow>,
    ) -> PyResult<String> {
        let lanes = scope_profiler_analysis::summary_order::notebook_lanes(&threads, &tasks);
        let mut out = String::new();
        for (title, list, more) in [
            ("threads (rank 0)", crate::results::frames::thread_summary_dicts(py, &lanes.threads)?, lanes.threads_more),
            (
                "tasks and greenlets (rank 0)",
                crate::results::frames::task_summary_dicts(py, &lanes.tasks)?,
                lanes.tasks_more,
            ),
        ] {
            let dicts: Vec<Bound<'_, PyDict>> =
                list.iter().map(|d| d.cast_into::<PyDict>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
            if !dicts.is_empty() {
                out.push_str(&crate::results::html_tables::summary_html(py, title, &dicts, None, more)?);
            }
        }
        Ok(out)
    }

    fn summary_rows<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.selected(py, include, exclude)?.iter().map(|r| r.borrow().results_row(py)).collect()
    }
}

/// Whether any value of `{rank: data}` is truthy.
fn any_truthy(d: &Bound<'_, PyDict>) -> PyResult<bool> {
    for v in d.values() {
        if v.is_truthy()? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `{rank: data}` (a copy) without `rank`, else `rank`'s data (`{}` when absent).
fn of_rank<'py>(d: &Bound<'py, PyDict>, rank: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
    match rank {
        None => Ok(d.copy()?.into_any()),
        Some(r) => Ok(d.get_item(r)?.unwrap_or_else(|| PyDict::new(d.py()).into_any())),
    }
}

/// `threads={rank: [ThreadInfo]}` / `tasks=` of the constructor as table rows (ranks ascending).
fn table_rows<T: pyo3::PyClass + Sync, R: Clone>(
    arg: Option<Bound<'_, PyDict>>,
    row: impl Fn(&T) -> &R,
    set_rank: impl Fn(&mut R, u32),
) -> PyResult<Vec<R>> {
    let mut out: Vec<(u32, Vec<R>)> = Vec::new();
    if let Some(d) = arg {
        for (rank, rows) in d.iter() {
            let rank: u32 = rank.extract()?;
            let mut list = Vec::new();
            for item in rows.try_iter()? {
                let item = item?;
                let obj = item.cast::<T>()?;
                let mut r = row(&obj.borrow()).clone();
                set_rank(&mut r, rank);
                list.push(r);
            }
            out.push((rank, list));
        }
    }
    out.sort_by_key(|(r, _)| *r);
    Ok(out.into_iter().flat_map(|(_, l)| l).collect())
}

#[pymethods]
impl ProfilingResults {
    /// A result set over `regions` (`{name: MPIRegion}`, order kept). The regions' rows are
    /// gathered into one run (arrays shared, not copied) and every `Region` is re-pointed at
    /// it, so exclusive times nest across all of them; `exclusive_totals` (`{name: {rank:
    /// ns}}`) are the stored totals used until per-call values are built. `num_ranks=None`:
    /// the number of distinct ranks.
    #[new]
    #[pyo3(signature = (regions, metadata=None, num_ranks=None, likwid=None, perf_events=None, line_profile=None,
        file_path=None, is_root=true, exclusive_totals=None, event_data_available=true, threads=None, tasks=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        regions: &Bound<'_, PyDict>,
        metadata: Option<Bound<'_, PyDict>>,
        num_ranks: Option<i64>,
        likwid: Option<Bound<'_, PyDict>>,
        perf_events: Option<Bound<'_, PyDict>>,
        line_profile: Option<Bound<'_, PyDict>>,
        file_path: Option<Bound<'_, PyAny>>,
        is_root: bool,
        exclusive_totals: Option<Bound<'_, PyDict>>,
        event_data_available: bool,
        threads: Option<Bound<'_, PyDict>>,
        tasks: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let file_path: PathBuf = match file_path {
            Some(p) if !p.is_none() => p.extract()?,
            _ => PathBuf::new(),
        };
        let mut run = Run::default();
        let mut mpis: Vec<Py<MPIRegion>> = Vec::new();
        let mut index = HashMap::new();
        let mut members: Vec<(Py<Region>, usize)> = Vec::new();
        let mut ranks = std::collections::BTreeSet::new();
        for (name, mpi) in regions.iter() {
            let name: String = name.extract()?;
            let mpi = mpi.cast_into::<MPIRegion>()?;
            let id = run.region_names.len() as u32;
            run.region_names.push(name.clone());
            for (rank, region) in mpi.borrow().parts() {
                let view = region.bind(py).get().view();
                let mut calls: RegionCalls = view.calls().clone();
                calls.region = id;
                calls.rank = u32::try_from(*rank).map_err(|_| PyValueError::new_err(format!("invalid rank {rank}")))?;
                calls.exclusive_total_ns = match &exclusive_totals {
                    Some(t) => t
                        .get_item(&name)?
                        .and_then(|per| per.get_item(rank).ok())
                        .map(|v| v.extract::<i64>())
                        .transpose()?,
                    None => None,
                };
                if calls.stored.is_some() && calls.exclusive_total_ns.is_none() {
                    calls.exclusive_total_ns = view.calls().exclusive_total_ns;
                }
                ranks.insert(*rank);
                members.push((region.clone_ref(py), run.regions.len()));
                run.regions.push(calls);
            }
            index.insert(name, mpis.len());
            mpis.push(mpi.unbind());
        }
        let position = run.order_rows_by_rank();
        run.threads = table_rows::<ThreadInfo, _>(threads, ThreadInfo::row, |r, k| r.rank = k)?;
        run.tasks = table_rows::<TaskInfo, _>(tasks, TaskInfo::row, |r, k| r.rank = k)?;
        let md = match metadata {
            Some(m) => m.copy()?,
            None => PyDict::new(py),
        };
        run.metadata = crate::run_values::meta_from_dict(&md)?;
        let num_ranks = num_ranks.unwrap_or(ranks.len() as i64);
        run.num_ranks =
            u32::try_from(num_ranks.max(0)).unwrap_or(u32::MAX).max(ranks.last().map_or(0, |r| *r as u32 + 1));
        let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
        for (region, old) in members {
            region.bind(py).get().attach(RowView::of_run(&analysis, position[old]));
        }
        Ok(ProfilingResults {
            run_start_time: meta_time(&md, "start_time_ns"),
            finalize_time: meta_time(&md, "finalize_time_ns"),
            metadata: md.unbind(),
            analysis,
            regions: mpis,
            index,
            file_path,
            is_root,
            event_data: event_data_available,
            num_ranks,
            likwid: dict_or_empty(py, likwid)?,
            perf_events: dict_or_empty(py, perf_events)?,
            line_profile: dict_or_empty(py, line_profile)?,
            tables: PyOnceLock::new(),
        })
    }

    /// Load a profile file (schema 1-3); same as `scope_profiler.read_h5`.
    #[classmethod]
    #[pyo3(signature = (file_path, verbose=false))]
    fn from_h5(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        file_path: PathBuf,
        verbose: bool,
    ) -> PyResult<Self> {
        crate::io::h5reader::read(py, file_path, verbose)
    }

    /// Results over a `_native.NativeRun` (internal).
    #[classmethod]
    fn _from_native(
        _cls: &Bound<'_, pyo3::types::PyType>,
        py: Python<'_>,
        native: PyRef<'_, NativeRun>,
    ) -> PyResult<Self> {
        ProfilingResults::from_analysis(py, Arc::clone(&native.analysis), native.file_path.clone(), true)
    }

    /// The run in Rust (internal handle for writers and the run transport).
    fn _native_run(&self) -> NativeRun {
        NativeRun::of(Arc::clone(&self.analysis), self.file_path.to_string_lossy().into_owned())
    }
    #[getter]
    fn _native(&self) -> NativeRun {
        self._native_run()
    }

    /// Reconstruct every rank now, in parallel (GIL released); later analyses reuse it.
    /// Returns the ranks. Raises NestingError for the first rank that fails.
    fn reconstruct(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        let analysis = Arc::clone(&self.analysis);
        let all = py.detach(move || analysis.all());
        all.into_iter().map(|(rank, r)| r.map(|_| rank).map_err(nesting_err)).collect()
    }

    /// The cached reconstruction of `rank` as `CallArrays` (read-only views, no copy).
    /// Raises NestingError.
    #[pyo3(signature = (rank=0))]
    fn call_arrays(&self, py: Python<'_>, rank: u32) -> PyResult<crate::results::call_stack::CallArrays> {
        crate::results::call_stack::CallArrays::cached(py, &self.analysis, rank)
    }

    /// `split_by_lane(call_arrays(rank))` with the grouping reused from the cache.
    #[pyo3(signature = (rank=0))]
    fn split_by_lane(&self, py: Python<'_>, rank: u32) -> PyResult<crate::results::call_stack::LaneSplit> {
        let calls = crate::results::call_stack::CallArrays::cached(py, &self.analysis, rank)?;
        crate::results::call_stack::LaneSplit::of(py, calls)
    }

    // -- mapping -----------------------------------------------------------------------------

    fn get_region<'py>(&self, py: Python<'py>, region_name: &str) -> PyResult<Bound<'py, MPIRegion>> {
        match self.index.get(region_name) {
            Some(&i) => Ok(self.regions[i].bind(py).clone()),
            None => Err(PyKeyError::new_err(format!(
                "No region named {} in {}. Available regions: {}",
                py_repr(region_name),
                self.file_path.display(),
                crate::run_values::py_list_repr(&self.region_names(py))
            ))),
        }
    }
    fn __getitem__<'py>(&self, py: Python<'py>, region_name: &str) -> PyResult<Bound<'py, MPIRegion>> {
        self.get_region(py, region_name)
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyList::new(py, self.mpi(py))?.try_iter()?.into_any())
    }
    fn __contains__(&self, region_name: &str) -> bool {
        self.index.contains_key(region_name)
    }
    fn __len__(&self) -> usize {
        self.regions.len()
    }
    /// Region names, insertion order.
    #[getter]
    fn region_names(&self, py: Python<'_>) -> Vec<String> {
        self.mpi(py).iter().map(|r| r.borrow().name().to_string()).collect()
    }
    /// Regions filtered by `re.match` patterns (a str is one pattern), sorted by earliest
    /// first start.
    #[pyo3(signature = (include=None, exclude=None))]
    fn get_regions<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, MPIRegion>>> {
        self.selected(py, include, exclude)
    }

    // -- summaries -------------------------------------------------------------------------

    /// One dict per region (`get_regions` order): `get_summary()` + `tags`, percentiles,
    /// rank imbalance. Raises NestingError when exclusive time cannot be reconstructed.
    #[pyo3(signature = (include=None, exclude=None))]
    fn summary<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.summary_rows(py, include, exclude)
    }
    /// `summary()` as a pandas DataFrame (or one row per (region, rank) with `per_rank`).
    #[pyo3(signature = (include=None, exclude=None, per_rank=false))]
    fn to_dataframe<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        per_rank: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pd = py.import("pandas").map_err(|_| {
            PyImportError::new_err("to_dataframe() requires pandas. Install scope-profiler[pproc] or pandas directly.")
        })?;
        let rows =
            if per_rank { self.per_rank_rows(py, include, exclude)? } else { self.summary_rows(py, include, exclude)? };
        pd.call_method1("DataFrame", (PyList::new(py, rows)?,))
    }

    /// One dict per call: region order (get_regions) -> rank -> recorded order. Keys `name,
    /// rank, call_index, start, end, duration` (s minus origin: `origin`, else `time_origin`
    /// when `relative`, else 0) [+ gpu, ids, `thread`, `task`/`await_duration`, `metadata`].
    #[pyo3(signature = (include=None, exclude=None, ranks=None, relative=true, origin=None))]
    fn events<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        ranks: Option<Bound<'py, PyAny>>,
        relative: bool,
        origin: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.require_event_data("events")?;
        let origin = self.origin(relative, origin);
        let out = PyList::empty(py);
        for r in self.selected(py, include, exclude)? {
            for e in r.call_method1("events", (ranks.clone(), origin))?.try_iter()? {
                out.append(e?)?;
            }
        }
        Ok(out)
    }

    /// `events()` as a pandas DataFrame built from numpy columns (pandas only): `name, rank,
    /// call_index, start, end, duration` and, when recorded, `gpu_duration`, `call_id`,
    /// `parent_id`, `thread`, `task`, `await_duration` (int columns float where a region lacks them).
    #[pyo3(signature = (include=None, exclude=None, ranks=None, relative=true, origin=None))]
    fn to_events_dataframe<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        ranks: Option<Bound<'py, PyAny>>,
        relative: bool,
        origin: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.require_event_data("to_events_dataframe")?;
        let pd = py.import("pandas").map_err(|_| {
            PyImportError::new_err(
                "to_events_dataframe() requires pandas. Install scope-profiler[pproc] or pandas directly.",
            )
        })?;
        let origin = self.origin(relative, origin);
        let rows = self.event_rows(py, include, exclude, ranks)?;
        let columns = crate::results::frames::events_numpy(py, &self.analysis.run, &rows, origin)?;
        pd.call_method1("DataFrame", (columns,))
    }

    /// `build_call_stack(get_regions(include, exclude), rank, origin)` (see `call_stack`).
    #[pyo3(signature = (rank=0, include=None, exclude=None, relative=true, origin=None))]
    fn call_stack<'py>(
        &self,
        py: Python<'py>,
        rank: u32,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        relative: bool,
        origin: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.require_event_data("call_stack")?;
        let origin = self.origin(relative, origin);
        let regions = self.selected(py, include, exclude)?;
        crate::results::call_stack::call_stack_dicts(py, &regions, rank, origin)
    }

    /// Call relationships `call_id, parent_id, name, call_index, depth` of `rank`: from the
    /// stored call ids (excluded parents skipped to the nearest kept ancestor), else from
    /// `call_stack()` (ids are positions).
    #[pyo3(signature = (rank=0, include=None, exclude=None))]
    fn call_graph<'py>(
        &self,
        py: Python<'py>,
        rank: u32,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let kept: std::collections::HashSet<String> = self
            .selected(py, include.clone(), exclude.clone())?
            .iter()
            .map(|r| r.borrow().name().to_string())
            .collect();
        let run = &self.analysis.run;
        let graph = scope_profiler_analysis::call_graph(run, rank, &|name: &str| kept.contains(name));
        let out = PyList::empty(py);
        match graph {
            Some(rows) => {
                for r in rows {
                    let d = PyDict::new(py);
                    d.set_item("call_id", r.call_id)?;
                    d.set_item("parent_id", r.parent_id)?;
                    d.set_item("name", run.region_names.get(r.region as usize).map(String::as_str).unwrap_or(""))?;
                    d.set_item("call_index", r.call_index)?;
                    d.set_item("depth", r.depth)?;
                    out.append(d)?;
                }
            }
            None => {
                for call in self.call_stack(py, rank, include, exclude, true, None)?.iter() {
                    let d = PyDict::new(py);
                    for (key, from) in [
                        ("call_id", "call_id"),
                        ("parent_id", "parent"),
                        ("name", "name"),
                        ("call_index", "call_index"),
                        ("depth", "depth"),
                    ] {
                        d.set_item(key, call.get_item(from)?)?;
                    }
                    out.append(d)?;
                }
            }
        }
        Ok(out)
    }

    // -- lanes ---------------------------------------------------------------------------------

    /// `{rank: [ThreadInfo, ...]}` in index order; `{}` when threads were not tracked.
    #[getter]
    fn threads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(self.tables(py)?.0.bind(py).clone())
    }
    /// `{rank: [TaskInfo, ...]}` in creation order; `{}` without tasks.
    #[getter]
    fn tasks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(self.tables(py)?.1.bind(py).clone())
    }
    /// `"MainThread"`, `"Task-2 (fetch) on MainThread"`, `"unknown lane"`, ...; a lane the
    /// rank does not have gets a label made from its id (`"thread 7"`, `"task 50"`), as
    /// 0.7.5 gives it.
    #[pyo3(signature = (lane, rank=0))]
    fn lane_label(&self, lane: i64, rank: u32) -> String {
        lane_label(&self.analysis.run, lane, rank)
    }
    /// One dict per thread-table row of `rank` (index order), s:
    /// `index, name, alive`; `wall_time` (start to end, or to the run's end while alive; the
    /// thread that called `setup()` starts with the run); `cpu_time` (CPU burned during the
    /// run, `CLOCK_THREAD_CPUTIME_ID`) and `cpu_time_total` (the thread's whole life, the
    /// reference's `cpu_time`); `num_calls`; `region_time` (wall-clock union of the top-level
    /// calls on the thread's lane and on the lanes of the tasks/greenlets that ran on it,
    /// never above `wall_time`; a task call inside a call of the thread itself is part of
    /// it); with `track_async` (else None): `held_time` (the thread's own top-level calls
    /// outside the task steps it ran, plus those steps), `await_time` (time its tasks'
    /// top-level calls were open with none of them running: a union, not a sum),
    /// `task_step_time` (time in task steps; None in files without it) and
    /// `task_await_time_sum` (the tasks' awaits summed: a per-task sum, the `await_time`s of
    /// its rows in `task_summary()`), `ready_wait_time` (the union of its tasks' ready waits)
    /// and `idle_time` (its instrumented event loops waiting with nothing ready; None for a
    /// thread that ran none); each but the per-task sum `<= wall_time`. `[]` without a thread
    /// table, with a `RuntimeWarning` saying why when the rank has calls (recorded without
    /// `track_threads`). A damaged thread table (negative times, an end before the start,
    /// thread ids without a row) gives None for those times, a row `thread N` per id without
    /// one, and a `RuntimeWarning` naming the file, the rows and the problem. Raises
    /// NestingError.
    #[pyo3(signature = (rank=0))]
    fn thread_summary<'py>(&self, py: Python<'py>, rank: u32) -> PyResult<Bound<'py, PyList>> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.thread_summary(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, &self.analysis, rank)?;
        crate::errors::warn_summary_only(py, &self.analysis.run, rank)?;
        crate::errors::warn_no_thread_table(py, &self.analysis.run, rank)?;
        crate::errors::warn_thread_table(py, &self.analysis.run, rank, &rows, &self.file_path_string())?;
        crate::results::frames::thread_summary_dicts(py, &rows)
    }
    /// One dict per task/greenlet of `rank` (task-table order), s: `index, kind, name,
    /// coro_name, thread_index, thread` (the thread of its latest step), `done`,
    /// `wall_time` (creation to completion, or to the run's end), `num_calls` (calls on its
    /// lane), `region_time` (Σ its top-level calls), `held_time` / `await_time` (None
    /// without an await column; `held_time + await_time == region_time`), `ready_wait_time`
    /// (s ready to resume while its loop ran other code; None when not known). `[]` without
    /// a task table. Raises NestingError.
    #[pyo3(signature = (rank=0))]
    fn task_summary<'py>(&self, py: Python<'py>, rank: u32) -> PyResult<Bound<'py, PyList>> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.task_summary(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, &self.analysis, rank)?;
        crate::errors::warn_summary_only(py, &self.analysis.run, rank)?;
        crate::results::frames::task_summary_dicts(py, &rows)
    }

    /// The event-loop blocks of `rank` lasting at least `threshold` s, longest first: dicts
    /// `thread, task` (-1: a plain callback, or a gevent thread's main greenlet), `start` (s
    /// from the run's start), `duration` (s), `region` (the innermost call on that lane
    /// covering at least half of the block, else the one open when it began, else None) and
    /// `delayed_tasks` (None when not known: a gevent hub's or uvloop's block). Raises
    /// ValueError for a threshold below the recording floor (0.001 s) or a rank the run does
    /// not have.
    #[pyo3(signature = (rank=0, threshold=0.01))]
    fn loop_blocks<'py>(&self, py: Python<'py>, rank: i64, threshold: f64) -> PyResult<Bound<'py, PyList>> {
        if !(0..self.num_ranks).contains(&rank) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "rank {rank} is not in this run: it has {} rank(s), 0 to {}",
                self.num_ranks,
                self.num_ranks - 1
            )));
        }
        let rank = rank as u32;
        if !threshold.is_finite() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("threshold {threshold} is not a number of s")));
        }
        let rows = scope_profiler_analysis::loop_blocks(&self.analysis.run, rank, (threshold * 1e9).round() as i64)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        crate::results::frames::loop_block_dicts(py, &rows)
    }

    // -- metadata, times ---------------------------------------------------------------------

    /// Rank 0's metadata (a mutable dict).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.metadata.bind(py).clone()
    }
    #[getter]
    fn num_ranks(&self) -> i64 {
        self.num_ranks
    }
    #[getter]
    fn num_nodes(&self, py: Python<'_>) -> Option<i64> {
        match self.metadata.bind(py).get_item("num_nodes").ok().flatten() {
            Some(v) => v.extract::<i64>().ok().or_else(|| v.str().ok()?.to_str().ok()?.parse().ok()),
            None => (self.num_ranks == 1).then_some(1),
        }
    }
    /// The file read or written (`pathlib.Path`).
    #[getter]
    fn file_path<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("pathlib")?.getattr("Path")?.call1((self.file_path.clone(),))
    }
    #[getter]
    fn label(&self, py: Python<'_>) -> PyResult<Option<String>> {
        match self.metadata.bind(py).get_item("label")? {
            Some(v) if v.is_truthy()? => Ok(Some(v.str()?.to_string())),
            _ => Ok(None),
        }
    }
    #[setter]
    fn set_label(&self, py: Python<'_>, value: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let md = self.metadata.bind(py);
        match value {
            Some(v) if v.is_truthy()? => md.set_item("label", v.str()?),
            _ => {
                if md.contains("label")? {
                    md.del_item("label")?;
                }
                Ok(())
            }
        }
    }
    /// The label, else the file's stem.
    #[getter]
    fn display_label(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match self.label(py)? {
            Some(l) => l,
            None => self.file_path(py)?.getattr("stem")?.extract()?,
        })
    }
    #[getter]
    fn is_root(&self) -> bool {
        self.is_root
    }
    #[getter]
    fn has_event_data(&self) -> bool {
        self.event_data
    }
    #[getter]
    fn line_profile<'py>(&self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.line_profile.bind(py).clone()
    }
    #[getter]
    fn has_likwid(&self, py: Python<'_>) -> PyResult<bool> {
        any_truthy(self.likwid.bind(py))
    }
    #[getter]
    fn likwid_ranks(&self, py: Python<'_>) -> PyResult<Vec<i64>> {
        let mut out = Vec::new();
        for (k, v) in self.likwid.bind(py).iter() {
            if v.is_truthy()? {
                out.push(k.extract()?);
            }
        }
        out.sort_unstable();
        Ok(out)
    }
    #[pyo3(signature = (rank=None))]
    fn get_likwid_regions<'py>(&self, py: Python<'py>, rank: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        of_rank(self.likwid.bind(py), rank)
    }
    #[getter]
    fn has_perf_events(&self, py: Python<'_>) -> PyResult<bool> {
        any_truthy(self.perf_events.bind(py))
    }
    #[pyo3(signature = (rank=None))]
    fn get_perf_events<'py>(&self, py: Python<'py>, rank: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        of_rank(self.perf_events.bind(py), rank)
    }
    /// `metadata["start_time_ns"] / 1e9` (s, recording clock) or None.
    #[getter]
    fn run_start_time(&self) -> Option<f64> {
        self.run_start_time
    }
    #[getter]
    fn finalize_time(&self) -> Option<f64> {
        self.finalize_time
    }
    /// finalize - start, s, or None.
    #[getter]
    fn total_time(&self) -> Option<f64> {
        Some(self.finalize_time? - self.run_start_time?)
    }
    /// Earliest first start over regions with calls, s (0.0 if none).
    #[getter]
    fn minimum_start_time(&self) -> f64 {
        time_bounds(&self.analysis.run.regions).map_or(0.0, |(start, _)| start)
    }
    #[getter]
    fn maximum_end_time(&self) -> f64 {
        time_bounds(&self.analysis.run.regions).map_or(0.0, |(_, end)| end)
    }
    /// `run_start_time` if set, else `minimum_start_time` (s).
    #[getter]
    fn time_origin(&self) -> f64 {
        self.run_start_time.unwrap_or_else(|| self.minimum_start_time())
    }
    #[getter]
    fn startup_time(&self) -> f64 {
        self.minimum_start_time() - self.time_origin()
    }
    #[getter]
    fn time_span(&self) -> f64 {
        time_bounds(&self.analysis.run.regions).map_or(0.0, |(start, end)| end - start)
    }

    // -- printing ---------------------------------------------------------------------------

    /// `"<label> - <relative path> (N rank(s))"`.
    fn default_title(&self, py: Python<'_>) -> PyResult<String> {
        let rank_label = if self.num_ranks == 1 { "rank" } else { "ranks" };
        let os_path = py.import("os")?.getattr("path")?;
        let path: String = match os_path.call_method1("relpath", (self.file_path.clone(),)) {
            Ok(p) => p.extract()?,
            Err(_) => self.file_path.display().to_string(),
        };
        let title = format!("{path} ({} {rank_label})", self.num_ranks);
        Ok(match self.label(py)? {
            Some(l) => format!("{l} - {title}"),
            None => title,
        })
    }

    /// Print the region table and, when threads were tracked, the thread and task tables of
    /// each rank (the `scope-profiler summary` report) to `stream` (default stdout).
    /// `include`/`exclude`/`ranks` restrict it; `sort` orders the regions (`total`, the
    /// default: inclusive time; `exclusive`, `calls`, `mean` or `avg`, `name`, `start`:
    /// definition order; ValueError for another), `top` shows only the first N of each rank
    /// and counts the rest, `all_tasks` lists every task (else the 20 busiest); `columns`,
    /// `percentage_mode` are accepted for compatibility. Never raises on a nesting failure
    /// (prints why). Does nothing on a non-root result set.
    #[pyo3(signature = (include=None, exclude=None, ranks=None, sort="total", title=None, stream=None,
        suppress_notes=false, columns=None, percentage_mode="coverage", *, top=None, all_tasks=false))]
    #[allow(clippy::too_many_arguments)]
    fn print_summary(
        &self,
        py: Python<'_>,
        include: Option<Bound<'_, PyAny>>,
        exclude: Option<Bound<'_, PyAny>>,
        ranks: Option<Bound<'_, PyAny>>,
        sort: &str,
        title: Option<String>,
        stream: Option<Bound<'_, PyAny>>,
        suppress_notes: bool,
        columns: Option<Bound<'_, PyAny>>,
        percentage_mode: &str,
        top: Option<usize>,
        all_tasks: bool,
    ) -> PyResult<()> {
        let _ = (columns, percentage_mode);
        let sort = scope_profiler_analysis::SortKey::parse(sort).map_err(PyValueError::new_err)?;
        if !self.is_root {
            return Ok(());
        }
        // what the caller filtered by, as Python shows it (the report's header says it)
        let mut filters = Vec::new();
        for (key, value) in [("include", &include), ("exclude", &exclude), ("ranks", &ranks)] {
            if let Some(v) = value.as_ref().filter(|v| !v.is_none()) {
                filters.push(format!("{key}={}", v.repr()?));
            }
        }
        let filter = (!filters.is_empty()).then(|| filters.join(", "));
        let names: Vec<String> =
            self.selected(py, include, exclude)?.iter().map(|r| r.borrow().name().to_string()).collect();
        let ranks: Option<Vec<u32>> = match ranks {
            None => None,
            Some(r) if r.extract::<u32>().is_ok() => Some(vec![r.extract()?]),
            Some(r) => Some(r.extract()?),
        };
        let title = match title {
            Some(t) => t,
            None => self.default_title(py)?,
        };
        let run = Arc::clone(&self.analysis.run);
        let mut text = py.detach(move || {
            let sel = scope_profiler_formats::Selection {
                ranks: ranks.unwrap_or_default(),
                regions: Some(names),
                label: String::new(),
            };
            let picked = sel.apply(&run);
            let mut run = picked.into_owned();
            if !sel.ranks.is_empty() {
                run.regions.retain(|r| sel.ranks.contains(&r.rank));
            }
            let opts = scope_profiler_formats::text_summary::SummaryOptions {
                sort,
                top: top.filter(|&n| n > 0),
                all_tasks,
                filter,
                hints: Some(("top=None lists every one".into(), "all_tasks=True lists every one".into())),
            };
            scope_profiler_formats::text_summary::summary_text_with(&run, &title, &opts)
        });
        if !suppress_notes {
            text.push_str("\n  Regions may nest, so the summed total can exceed the wall-clock time.\n");
        }
        let print = py.import("builtins")?.getattr("print")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("end", "")?;
        if let Some(s) = stream.filter(|s| !s.is_none()) {
            kwargs.set_item("file", s)?;
        }
        print.call((text,), Some(&kwargs))?;
        Ok(())
    }

    /// Pickle support: the run (one object, shared with its regions), the regions in order
    /// (`(name, colour, [(rank, Region)])`) and the rest of the result set's state.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let run = pickled_run(py, &self.analysis)?;
        let regions = PyList::empty(py);
        for r in self.mpi(py) {
            let r = r.borrow();
            let parts: RegionParts = r.parts().iter().map(|(k, g)| (*k, g.clone_ref(py))).collect();
            regions.append((r.name(), r.color.clone_ref(py), parts))?;
        }
        let state = PyTuple::new(
            py,
            [
                run.into_any(),
                regions.into_any(),
                self.file_path_string().into_pyobject(py)?.into_any(),
                PyBool::new(py, self.is_root).to_owned().into_any(),
                PyBool::new(py, self.event_data).to_owned().into_any(),
                self.num_ranks.into_pyobject(py)?.into_any(),
                self.metadata.bind(py).clone().into_any(),
                self.likwid.bind(py).clone().into_any(),
                self.perf_events.bind(py).clone().into_any(),
                self.line_profile.bind(py).clone().into_any(),
            ],
        )?;
        Ok((py.get_type::<ProfilingResults>().getattr("_from_pickle")?, state))
    }

    /// The result set `__reduce__` describes.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn _from_pickle(
        py: Python<'_>,
        run: PyRef<'_, PickledRun>,
        regions: Vec<(String, Py<PyAny>, RegionParts)>,
        file_path: PathBuf,
        is_root: bool,
        event_data: bool,
        num_ranks: i64,
        metadata: Bound<'_, PyDict>,
        likwid: Bound<'_, PyDict>,
        perf_events: Bound<'_, PyDict>,
        line_profile: Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let mut mpis = Vec::with_capacity(regions.len());
        let mut index = HashMap::new();
        for (name, color, parts) in regions {
            index.entry(name.clone()).or_insert(mpis.len());
            let mut mpi = MPIRegion::of(py, name, parts);
            mpi.color = color;
            mpis.push(Py::new(py, mpi)?);
        }
        Ok(ProfilingResults {
            analysis: Arc::clone(run.analysis()),
            regions: mpis,
            index,
            run_start_time: meta_time(&metadata, "start_time_ns"),
            finalize_time: meta_time(&metadata, "finalize_time_ns"),
            metadata: metadata.unbind(),
            file_path,
            is_root,
            event_data,
            num_ranks,
            likwid: likwid.unbind(),
            perf_events: perf_events.unbind(),
            line_profile: line_profile.unbind(),
            tables: PyOnceLock::new(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name: String = self.file_path(py)?.getattr("name")?.extract()?;
        Ok(format!(
            "<ProfilingResults {}: {} region(s), {} rank(s)>",
            py_repr(&name),
            self.regions.len(),
            self.num_ranks
        ))
    }

    /// Notebook view: title, region summary table (await and held columns for runs with
    /// await times), rank 0's thread and task summaries, thread and task counts.
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        let mut columns = vec![
            "name",
            "num_ranks",
            "num_calls",
            "total_duration",
            "exclusive_duration",
            "average_duration",
            "min_duration",
            "max_duration",
        ];
        let rows = if self.event_data || self.regions.is_empty() {
            self.summary_rows(py, None, None)?
        } else {
            self.selected(py, None, None)?.iter().map(|r| r.borrow().summary_dict(py)).collect::<PyResult<_>>()?
        };
        if rows.iter().any(|r| r.contains("await_duration").unwrap_or(false)) {
            columns.extend(["await_duration", "held_duration"]);
        }
        let (rows, more) = crate::results::html_tables::top_region_rows(rows)?;
        let more =
            (more > 0).then(|| format!("... and {more} more regions (print_summary() or to_polars() lists them)"));
        let mut out =
            crate::results::html_tables::summary_html(py, &self.default_title(py)?, &rows, Some(&columns), more)?;
        if self.event_data {
            let analysis = Arc::clone(&self.analysis);
            // a run whose calls cannot be reconstructed shows the region table alone
            if let Ok((threads, tasks)) = py.detach(move || {
                Ok::<_, scope_profiler_analysis::NestingError>((analysis.thread_summary(0)?, analysis.task_summary(0)?))
            }) {
                out.push_str(&self.lane_tables_html(py, threads, tasks)?);
            }
        }
        let (threads, tasks) = (self.analysis.run.threads.len(), self.analysis.run.tasks.len());
        if threads > 0 || tasks > 0 {
            out.push_str(&format!("<p>{threads} thread(s), {tasks} task(s) tracked</p>"));
        }
        Ok(out)
    }

    // -- frames (Arrow tables, `__arrow_c_stream__`) --------------------------------------------

    /// The region summary as an Arrow table: `summary()` keys, or with `per_rank=True` the
    /// `to_dataframe(per_rank=True)` columns. Raises ValueError when a filter matches nothing.
    #[pyo3(signature = (include=None, exclude=None, per_rank=false))]
    fn to_arrow<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        per_rank: bool,
    ) -> PyResult<pyo3_arrow::PyTable> {
        let filtered = include.as_ref().is_some_and(|v| !v.is_none()) || exclude.as_ref().is_some_and(|v| !v.is_none());
        let rows =
            if per_rank { self.per_rank_rows(py, include, exclude)? } else { self.summary_rows(py, include, exclude)? };
        if rows.is_empty() && filtered {
            return Err(PyValueError::new_err("No regions matched the selected filters."));
        }
        let columns = scope_profiler_analysis::summary_table_columns(&self.analysis.run, per_rank);
        crate::results::frames::dict_rows_table(py, &rows, &columns)
    }
    /// Thread table of every rank (`rank, index, name, ident, native_id, daemon, start_time,
    /// end_time, cpu_time, alive, wall_time, cpu_time_total`; s since the run start;
    /// `cpu_time` during the run, `cpu_time_total` the whole life) as an Arrow table.
    fn threads_frame(&self) -> PyResult<pyo3_arrow::PyTable> {
        crate::results::frames::batch_table(record_batch::threads_table(&self.analysis.run))
    }
    /// Task table of every rank (`TaskInfo` fields) as an Arrow table.
    fn tasks_frame(&self) -> PyResult<pyo3_arrow::PyTable> {
        crate::results::frames::batch_table(record_batch::tasks_table(&self.analysis.run))
    }
    /// `thread_summary(rank)` as an Arrow table. Raises NestingError.
    #[pyo3(signature = (rank=0))]
    fn thread_summary_frame(&self, py: Python<'_>, rank: u32) -> PyResult<pyo3_arrow::PyTable> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.thread_summary(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, &self.analysis, rank)?;
        crate::errors::warn_summary_only(py, &self.analysis.run, rank)?;
        crate::errors::warn_no_thread_table(py, &self.analysis.run, rank)?;
        crate::errors::warn_thread_table(py, &self.analysis.run, rank, &rows, &self.file_path_string())?;
        crate::results::frames::batch_table(record_batch::thread_summary_table(&rows))
    }
    /// `task_summary(rank)` as an Arrow table. Raises NestingError.
    #[pyo3(signature = (rank=0))]
    fn task_summary_frame(&self, py: Python<'_>, rank: u32) -> PyResult<pyo3_arrow::PyTable> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.task_summary(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, &self.analysis, rank)?;
        crate::errors::warn_summary_only(py, &self.analysis.run, rank)?;
        crate::results::frames::batch_table(record_batch::task_summary_table(&rows))
    }
    /// `events()` as an Arrow table (lane columns and ids kept).
    #[pyo3(signature = (include=None, exclude=None, ranks=None, relative=true, origin=None))]
    fn events_frame<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        ranks: Option<Bound<'py, PyAny>>,
        relative: bool,
        origin: Option<f64>,
    ) -> PyResult<pyo3_arrow::PyTable> {
        self.require_event_data("events_frame")?;
        let origin = self.origin(relative, origin);
        let rows = self.event_rows(py, include, exclude, ranks)?;
        crate::results::frames::events_table(py, &self.analysis.run, &rows, origin)
    }
    /// `polars.DataFrame` of the summary (or of `table`, any `*_frame()`).
    #[pyo3(signature = (include=None, exclude=None, per_rank=false, *, table=None))]
    fn to_polars<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        per_rank: bool,
        table: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::results::frames::polars_frame(self.table_or_summary(py, include, exclude, per_rank, table)?)
    }
    /// `pandas.DataFrame` of the summary (or of `table`) through pyarrow.
    #[pyo3(signature = (include=None, exclude=None, per_rank=false, *, table=None))]
    fn to_pandas<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        per_rank: bool,
        table: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let why = "to_pandas() converts Arrow tables with pyarrow (pip install pyarrow); to_dataframe() and to_events_dataframe() need only pandas";
        crate::results::frames::pandas_frame(self.table_or_summary(py, include, exclude, per_rank, table)?, why)
    }
}

impl ProfilingResults {
    /// `table` if given, else the summary table (`to_arrow`), for `to_polars` / `to_pandas`.
    fn table_or_summary<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        per_rank: bool,
        table: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match table {
            Some(t) => Ok(t),
            None => Ok(Bound::new(py, self.to_arrow(py, include, exclude, per_rank)?)?.into_any()),
        }
    }

    /// Row positions (in this run) of the selected (region, rank) pairs in `events()` order.
    fn event_rows<'py>(
        &self,
        py: Python<'py>,
        include: Option<Bound<'py, PyAny>>,
        exclude: Option<Bound<'py, PyAny>>,
        ranks: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<usize>> {
        let wanted: Option<Vec<u32>> = match ranks {
            None => None,
            Some(r) if r.is_none() => None,
            Some(r) if r.extract::<u32>().is_ok() => Some(vec![r.extract()?]),
            Some(r) => Some(r.extract()?),
        };
        let names: Vec<String> =
            self.selected(py, include, exclude)?.iter().map(|r| r.borrow().name().to_string()).collect();
        Ok(self.analysis.run.rows_of(&names, wanted.as_deref()))
    }
}
