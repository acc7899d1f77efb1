//! `NativeRun`: a loaded or just-recorded run held in Rust, seen from Python.
use std::sync::Arc;

use pyo3::prelude::*;
use scope_profiler_analysis::Run;

/// A run held in Rust (an [`scope_profiler_analysis::Run`]). The Python results
/// objects (`ProfilingResults`, `Region`, ...) are views over one of these.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct NativeRun {
    pub run: Arc<Run>,
    /// Path of the file the run was read from or written to ("" if none).
    pub file_path: String,
}

impl NativeRun {
    pub fn new(run: Run, file_path: String) -> Self {
        NativeRun { run: Arc::new(run), file_path }
    }
}
