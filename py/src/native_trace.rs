//! Backs `scope_profiler.native_trace`: the `.spt` region traces of the reference's C and
//! Fortran region APIs ([`scope_profiler_formats::native_trace`]).
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::TraceFormatError;

/// `read_trace_columns(path) -> (rank, version, [(name, source_file, source_line, starts,
/// ends), ...])`: one `.spt` trace, regions in file order; `starts`/`ends` int64 ns arrays
/// (the clock of `time.perf_counter_ns`), `source_file`/`source_line` `None` when the trace
/// has none (version 1). Raises `TraceFormatError` (a `ValueError`; not a trace, truncated,
/// unknown version, trailing bytes, a region twice) or `OSError` (unreadable file).
#[pyfunction]
fn read_trace_columns<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<(i32, i32, Bound<'py, PyList>)> {
    let trace = py
        .detach(|| scope_profiler_formats::native_trace::read_trace(&path))?
        .map_err(|e| TraceFormatError::new_err(e.0))?;
    let regions = PyList::empty(py);
    for r in trace.regions {
        regions.append((
            r.name,
            r.source_file,
            r.source_line,
            PyArray1::from_vec(py, r.start_ns),
            PyArray1::from_vec(py, r.end_ns),
        ))?;
    }
    Ok((trace.rank, trace.version, regions))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_trace_columns, m)?)?;
    Ok(())
}
