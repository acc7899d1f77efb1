//! `scope_profiler.chrome_trace_export`: `export_chrome_trace`.
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::chrome_trace::write_chrome_trace;
use scope_profiler_formats::export_plan::ExportFormat;

use crate::export::{only, ExportArgs};

/// Write Chrome Trace Event JSON, one file per run (speedscope's naming rule, default
/// suffix `.trace.json`): one track per lane (threads, then tasks, each named), complete
/// events in µs from the run start, identical calls with identical name and args so viewers
/// aggregate them. Returns the paths written; errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_chrome_trace<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::ChromeTrace, "open with Perfetto or chrome://tracing", &|run, sel, p| {
        only(p, write_chrome_trace(run, sel, p))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_chrome_trace, m)?)
}
