//! `scope_profiler.exports`, trace formats: `export_perfetto`, `export_pprof`.
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::perfetto::write_perfetto;
use scope_profiler_formats::pprof::write_pprof;

use crate::export::{only, ExportArgs};

/// Write Perfetto protobuf traces, one file per run (speedscope's naming rule, default
/// suffix `.pftrace`): a process track per rank, a thread track per thread, a task track
/// (under its thread) per task, nested slices per call and `"awaiting"` child slices for a
/// task's await time. Returns the paths written; errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_perfetto<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::Perfetto, "open with https://ui.perfetto.dev", &|run, sel, p| {
        only(p, write_perfetto(run, sel, p))
    })
}

/// Write pprof profiles, one file per run (speedscope's naming rule, default suffix
/// `.pb.gz`; a name not ending in `.gz` is written uncompressed): sample type
/// wall/nanoseconds holding the self time per call stack, each stack rooted at its lane
/// (thread / task) name. Returns the paths written; errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_pprof<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::Pprof, "open with: go tool pprof -http=: FILE", &|run, sel, p| {
        only(p, write_pprof(run, sel, p))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_perfetto, m)?)?;
    m.add_function(wrap_pyfunction!(export_pprof, m)?)
}
