//! `NativeRun`: the internal handle of a run held in Rust (what writers, the MPI transport and
//! the manager pass around); users hold `ProfilingResults`, a view over the same run.
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use scope_profiler_analysis::{Reconstruction, Run, RunAnalysis};

use crate::errors::{h5_err, nesting_err};
use crate::run_values;

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

    /// A handle sharing `analysis` (and its cached reconstructions).
    pub fn of(analysis: Arc<RunAnalysis>, file_path: String) -> Self {
        NativeRun { run: Arc::clone(&analysis.run), analysis, file_path }
    }

    /// The cached reconstruction of `rank` (computed on first use, GIL released).
    pub fn reconstruction(&self, py: Python<'_>, rank: u32) -> PyResult<Arc<Reconstruction>> {
        let analysis = Arc::clone(&self.analysis);
        let rec = py.detach(move || analysis.rank(rank)).map_err(nesting_err)?;
        crate::errors::warn_set_aside(py, &self.analysis, rank)?;
        Ok(rec)
    }
}

#[pymethods]
impl NativeRun {
    /// Read an HDF5 profile (schema 1-3). Raises `FileNotFoundError`, `CorruptProfileError`
    /// or `HDF5SchemaError` (messages name the file).
    #[staticmethod]
    fn read_h5(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let run = crate::io::h5reader::read_file(py, &path)?;
        Ok(NativeRun::new(run, path.to_string_lossy().into_owned()))
    }

    /// Build a run from Python columns (copies). `rows`: list of dicts with the keys of
    /// `row()`; `threads`/`tasks`: tuples as returned by `threads()`/`tasks()`.
    #[staticmethod]
    #[pyo3(signature = (region_names, rows, threads, tasks, metadata, num_ranks=None, file_path=String::new()))]
    fn from_columns(
        region_names: Vec<String>,
        rows: &Bound<'_, PyList>,
        threads: Vec<run_values::ThreadTuple>,
        tasks: Vec<run_values::TaskTuple>,
        metadata: &Bound<'_, PyDict>,
        num_ranks: Option<u32>,
        file_path: String,
    ) -> PyResult<Self> {
        let run = run_values::run_from_py(region_names, rows, threads, tasks, metadata, num_ranks)?;
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
}
