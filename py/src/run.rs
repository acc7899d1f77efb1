//! `NativeRun`: a loaded or just-recorded run held in Rust, seen from Python.
//!
//! The Python results objects (`scope_profiler.results`) are views over one of these: the
//! per-call int64 columns reach Python as read-only numpy arrays over the Run's Arrow buffers
//! (the `NativeRun` is their base object, so no copy is made and the memory lives as long as
//! any array does). Reconstruction, lane labels and thread summaries run here; the
//! `export_*` functions (`crate::export`) write from its `run`.
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use scope_profiler_analysis::{Reconstruction, Run, RunAnalysis};

use crate::errors::{h5_err, nesting_err};
use crate::results::arrays::owned_i64;
use crate::results::convert;

/// A run held in Rust (an [`scope_profiler_analysis::Run`]). The Python results
/// objects (`ProfilingResults`, `Region`, ...) are views over one of these.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct NativeRun {
    pub run: Arc<Run>,
    /// Path of the file the run was read from or written to ("" if none).
    pub file_path: String,
    /// The per-rank reconstructions, computed once and shared by exclusive durations,
    /// thread summaries, lane splits, frames and exports.
    pub analysis: Arc<RunAnalysis>,
}

impl NativeRun {
    pub fn new(run: Run, file_path: String) -> Self {
        let run = Arc::new(run);
        NativeRun { analysis: Arc::new(RunAnalysis::new(Arc::clone(&run))), run, file_path }
    }

    /// The cached reconstruction of `rank` (computed on first use, GIL released).
    pub fn reconstruction(&self, py: Python<'_>, rank: u32) -> PyResult<Arc<Reconstruction>> {
        let analysis = Arc::clone(&self.analysis);
        py.detach(move || analysis.rank(rank)).map_err(nesting_err)
    }
}

#[pymethods]
impl NativeRun {
    /// Read an HDF5 profile (schema 1-3). Raises `FileNotFoundError`, `CorruptProfileError`
    /// or `HDF5SchemaError` (messages name the file).
    #[staticmethod]
    fn read_h5(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let run = py.detach(|| scope_profiler_formats::read_h5(&path)).map_err(h5_err)?;
        Ok(NativeRun::new(run, path.to_string_lossy().into_owned()))
    }

    /// Build a run from Python columns (copies). `rows`: list of dicts with the keys of
    /// `row()`; `threads`/`tasks`: tuples as returned by `threads()`/`tasks()`.
    #[staticmethod]
    #[pyo3(signature = (region_names, rows, threads, tasks, metadata, num_ranks=None, file_path=String::new()))]
    fn from_columns(
        region_names: Vec<String>,
        rows: &Bound<'_, PyList>,
        threads: Vec<convert::ThreadTuple>,
        tasks: Vec<convert::TaskTuple>,
        metadata: &Bound<'_, PyDict>,
        num_ranks: Option<u32>,
        file_path: String,
    ) -> PyResult<Self> {
        let run = convert::run_from_py(region_names, rows, threads, tasks, metadata, num_ranks)?;
        Ok(NativeRun::new(run, file_path))
    }

    /// Write the run as schema 3, atomically.
    fn write_h5(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let run = Arc::clone(&self.run);
        py.detach(move || scope_profiler_formats::write_h5(&run, &path)).map_err(h5_err)
    }

    #[getter]
    fn file_path(&self) -> &str {
        &self.file_path
    }

    #[getter]
    fn num_ranks(&self) -> u32 {
        self.run.num_ranks
    }

    #[getter]
    fn region_names(&self) -> Vec<String> {
        self.run.region_names.clone()
    }

    fn __len__(&self) -> usize {
        self.run.regions.len()
    }

    /// Region row `i` (file order) as a dict; see `results::convert::row_dict`.
    fn row<'py>(slf: &Bound<'py, Self>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let run = &slf.get().run;
        if i >= run.regions.len() {
            return Err(PyIndexError::new_err("row index out of range"));
        }
        // SAFETY: `run` is owned by `slf` (Arc<Run> in a frozen pyclass, never mutated).
        unsafe { convert::row_dict(slf.as_any(), run, i) }
    }

    /// `(call_ids, parent_ids)` of row `i` as owned int64 arrays (decoded when held
    /// bit-packed), `None` for an absent column. Raises IndexError for a bad row.
    fn row_ids<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
        let r = self.run.regions.get(i).ok_or_else(|| PyIndexError::new_err("row index out of range"))?;
        let (c, p) = (r.call_ids.clone(), r.parent_ids.clone());
        let (c, p) = py.detach(move || (c.map(|c| c.to_vec()), p.map(|p| p.to_vec())));
        let arr = |a: Option<Vec<i64>>| a.map(|a| owned_i64(py, a));
        PyTuple::new(py, [arr(c), arr(p)])
    }

    /// Every region row, in file order.
    fn rows<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let run = &slf.get().run;
        let out = PyList::empty(slf.py());
        for i in 0..run.regions.len() {
            // SAFETY: as in `row`.
            out.append(unsafe { convert::row_dict(slf.as_any(), run, i) }?)?;
        }
        Ok(out)
    }

    /// Thread-table rows `(rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns, name)`.
    fn threads(&self) -> Vec<convert::ThreadTuple> {
        self.run.threads.iter().map(convert::thread_tuple).collect()
    }

    /// Task-table rows `(rank, index, thread_index, created_ns, done_ns, steps, running_ns,
    /// suspended_ns, kind, name, coro_name)`.
    fn tasks(&self) -> Vec<convert::TaskTuple> {
        self.run.tasks.iter().map(convert::task_tuple).collect()
    }

    /// Rank 0's metadata as a new dict.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        convert::metadata_dict(py, &self.run)
    }

    /// Per-call exclusive ns of every row of `rank`: list of `(row position, int64 array)`
    /// (from the cached reconstruction).
    fn exclusive_by_row<'py>(&self, py: Python<'py>, rank: u32) -> PyResult<Bound<'py, PyList>> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.exclusive_by_row(rank)).map_err(nesting_err)?;
        let out = PyList::empty(py);
        for (pos, values) in rows {
            out.append((pos, owned_i64(py, values)))?;
        }
        Ok(out)
    }

    /// Reconstruct all rows of `rank` (cached): `(row positions, columns)` with the columns
    /// of `build_call_arrays` (`region_index` indexes the returned row positions). The
    /// columns are read-only numpy views of the cached reconstruction (no copy).
    fn rank_call_arrays<'py>(slf: &Bound<'py, Self>, rank: u32) -> PyResult<(Vec<usize>, Bound<'py, PyTuple>)> {
        let rec = slf.get().reconstruction(slf.py(), rank)?;
        let rows = rec.rows.clone();
        Ok((rows, crate::results::callstack::cached_call_arrays_to_py(slf.as_any(), rec)?))
    }

    /// Reconstruct every rank with rows, in parallel across ranks (GIL released), so that
    /// later per-rank analyses find their reconstruction cached. Raises `NestingError` for
    /// the first rank (ascending) that cannot be reconstructed.
    fn reconstruct_all(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        let analysis = Arc::clone(&self.analysis);
        let all = py.detach(move || analysis.all());
        let mut ranks = Vec::with_capacity(all.len());
        for (rank, r) in all {
            r.map_err(nesting_err)?;
            ranks.push(rank);
        }
        Ok(ranks)
    }

    /// Lanes of `rank` from the cached reconstruction: `(lanes, offsets, order)`; lane
    /// `lanes[k]` (int64, ascending) holds call ids `order[offsets[k]:offsets[k+1]]`
    /// (ascending). `offsets` int64; `order` a read-only uint32 view of the cached split (no
    /// copy). No calls -> empty arrays; no lane column -> one lane `-1` and an empty `order`
    /// (the lane is every call, in order).
    fn split_by_lane<'py>(slf: &Bound<'py, Self>, rank: u32) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let rec = slf.get().reconstruction(py, rank)?;
        crate::results::callstack::cached_lane_split_to_py(py, rec)
    }

    /// `thread_summary(rank)` rows as dicts (keys `index, name, alive, wall_time, cpu_time,
    /// num_calls, region_time`); `[]` without a thread table. Raises `NestingError`.
    fn thread_summary<'py>(&self, py: Python<'py>, rank: u32) -> PyResult<Bound<'py, PyList>> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.thread_summary(rank)).map_err(nesting_err)?;
        let out = PyList::empty(py);
        for r in rows {
            let d = PyDict::new(py);
            d.set_item("index", r.index)?;
            d.set_item("name", r.name)?;
            d.set_item("alive", r.alive)?;
            d.set_item("wall_time", r.wall_time)?;
            d.set_item("cpu_time", r.cpu_time)?;
            d.set_item("num_calls", r.num_calls)?;
            d.set_item("region_time", r.region_time)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The thread table (all ranks) as an Arrow table (`__arrow_c_stream__`).
    fn threads_frame(&self) -> PyResult<pyo3_arrow::PyTable> {
        crate::results::frames::threads_table(&self.run)
    }

    /// The task table (all ranks) as an Arrow table.
    fn tasks_frame(&self) -> PyResult<pyo3_arrow::PyTable> {
        crate::results::frames::tasks_table(&self.run)
    }

    /// `thread_summary(rank)` as an Arrow table (cached reconstruction). Raises `NestingError`.
    fn thread_summary_frame(&self, py: Python<'_>, rank: u32) -> PyResult<pyo3_arrow::PyTable> {
        let analysis = Arc::clone(&self.analysis);
        let rows = py.detach(move || analysis.thread_summary(rank)).map_err(nesting_err)?;
        crate::results::frames::thread_summary_table(&rows)
    }

    /// The calls of region rows `rows` (positions, in this order) as an Arrow table with the
    /// keys of `events()` (lane columns kept); times in s minus `origin`.
    #[pyo3(signature = (rows, origin=0.0))]
    fn events_frame(&self, py: Python<'_>, rows: Vec<usize>, origin: f64) -> PyResult<pyo3_arrow::PyTable> {
        let run = Arc::clone(&self.run);
        py.detach(move || crate::results::frames::events_table(&run, &rows, origin))
    }

    #[pyo3(signature = (lane, rank=0))]
    fn lane_label(&self, lane: i64, rank: u32) -> String {
        scope_profiler_analysis::lane_label(&self.run, lane, rank)
    }
}
