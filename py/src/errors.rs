//! Python exception types raised from Rust. `scope_profiler` re-exports them.
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    scope_profiler,
    CorruptProfileError,
    PyOSError,
    "The file is not a readable scope-profiler profile (not HDF5, truncated, or damaged). The message names the file."
);
create_exception!(
    scope_profiler,
    HDF5SchemaError,
    PyValueError,
    "The file's scope-profiler HDF5 schema version is invalid or newer than this package reads."
);
create_exception!(
    scope_profiler,
    NestingError,
    PyValueError,
    "Recorded calls on one lane overlap without nesting, so no call tree exists."
);

create_exception!(
    scope_profiler,
    EventDataUnavailableError,
    pyo3::exceptions::PyRuntimeError,
    "A summary-only result (read_h5_summary) was asked for per-call event data."
);
create_exception!(
    scope_profiler,
    SummaryDataUnavailable,
    PyValueError,
    "read_h5_summary(fallback=False) on a file without fixed-size summary statistics (schema 1)."
);
create_exception!(
    scope_profiler,
    JSONProfileError,
    PyValueError,
    "The file is not a scope-profiler JSON profile, uses a newer format version, or is malformed. The message names the file."
);

create_exception!(
    scope_profiler.native_trace,
    TraceFormatError,
    PyValueError,
    "A file is not a scope-profiler Fortran/C region trace (.spt), is truncated, or uses an unknown format version. The message names the file."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TraceFormatError", py.get_type::<TraceFormatError>())?;
    m.add("EventDataUnavailableError", py.get_type::<EventDataUnavailableError>())?;
    m.add("SummaryDataUnavailable", py.get_type::<SummaryDataUnavailable>())?;
    m.add("CorruptProfileError", py.get_type::<CorruptProfileError>())?;
    m.add("HDF5SchemaError", py.get_type::<HDF5SchemaError>())?;
    m.add("NestingError", py.get_type::<NestingError>())?;
    m.add("JSONProfileError", py.get_type::<JSONProfileError>())?;
    Ok(())
}

/// Map a reconstruction failure to Python's `NestingError`.
pub fn nesting_err(e: scope_profiler_analysis::NestingError) -> PyErr {
    NestingError::new_err(e.0)
}

/// Emit `message` as a `RuntimeWarning` (pointing at the caller; a NUL shown as `\x00`).
/// Raises only if warnings are errors.
pub fn runtime_warning(py: Python<'_>, message: &str) -> PyResult<()> {
    let message = std::ffi::CString::new(message.replace('\0', "\\x00")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, 1)
}

/// Emit the one `RuntimeWarning` about the calls of `rank` that its reconstruction set aside
/// (calls that do not nest in their lane: region, lane and times of the first few; see
/// `RunAnalysis::set_aside_notice`) - once per rank and run, nothing when there are none or
/// the rank is not reconstructed yet. Raises only if the warning is turned into an error.
pub fn warn_set_aside(py: Python<'_>, analysis: &scope_profiler_analysis::RunAnalysis, rank: u32) -> PyResult<()> {
    analysis.set_aside_notice(rank).map_or(Ok(()), |message| runtime_warning(py, &message))
}

/// The `RuntimeWarning` of a lane summary of a rank read without its calls
/// (`analysis::summary_only_note`). Raises only if warnings are errors.
pub fn warn_summary_only(py: Python<'_>, run: &scope_profiler_analysis::Run, rank: u32) -> PyResult<()> {
    scope_profiler_analysis::summary_only_note(run, rank).map_or(Ok(()), |message| runtime_warning(py, message))
}

/// The `RuntimeWarning` of an empty `thread_summary(rank)` of a rank with calls but no thread
/// table (`analysis::no_thread_table_note`). Raises only if warnings are errors.
pub fn warn_no_thread_table(py: Python<'_>, run: &scope_profiler_analysis::Run, rank: u32) -> PyResult<()> {
    scope_profiler_analysis::no_thread_table_note(run, rank).map_or(Ok(()), |message| runtime_warning(py, &message))
}

/// The `RuntimeWarning` of a `thread_summary(rank)` over a damaged thread table: rows whose
/// times are shown as unknown (None), thread ids without a row (`analysis::thread_table_note`),
/// prefixed with `source` (the file) when there is one. Raises only if
/// warnings are errors.
pub fn warn_thread_table(
    py: Python<'_>,
    run: &scope_profiler_analysis::Run,
    rank: u32,
    rows: &[scope_profiler_analysis::ThreadSummaryRow],
    source: &str,
) -> PyResult<()> {
    if let Some(message) = scope_profiler_analysis::thread_table_note(run, rank, rows) {
        runtime_warning(py, &if source.is_empty() { message } else { format!("{source}: {message}") })?;
    }
    Ok(())
}

/// Map an HDF5 read/write failure to the reference's exception types.
pub fn h5_err(e: scope_profiler_formats::H5Error) -> PyErr {
    use scope_profiler_formats::H5Error::*;
    match e {
        NotFound(m) => pyo3::exceptions::PyFileNotFoundError::new_err(m),
        Corrupt(m) => CorruptProfileError::new_err(m),
        Schema(m) => HDF5SchemaError::new_err(m),
        Write(m) => PyOSError::new_err(m),
    }
}

/// A failed HDF5 write of `path` as Python raises it: with the OS error number, the
/// matching `OSError` subclass (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`,
/// `NotADirectoryError`, ...) with `errno`, `strerror` (the message) and `filename` set;
/// otherwise a plain `OSError` with the message.
pub fn write_failure_err(f: scope_profiler_formats::hdf5::write::WriteFailure, path: &str) -> PyErr {
    match f.errno {
        // OSError(errno, strerror, filename) picks the subclass of errno itself.
        Some(errno) => PyOSError::new_err((errno, f.error.to_string(), path.to_string())),
        None => PyOSError::new_err(f.error.to_string()),
    }
}

/// `later` as Python raises it while handling `earlier` (`later.__context__ = earlier`): a
/// `finally`-style second exit that fails keeps the first failure as its context.
pub(crate) fn raised_while_handling(py: Python<'_>, later: PyErr, earlier: PyErr) -> PyErr {
    let _ = later.value(py).setattr("__context__", earlier.value(py));
    later
}
