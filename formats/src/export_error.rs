//! The error every export writer of this crate returns.
use thiserror::Error;

use scope_profiler_analysis::NestingError;

/// Why an export could not be written. Nothing is left at the target path on error.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ExportError {
    /// A selected rank's calls cannot be reconstructed (the reference's `NestingError`
    /// message, spec-callstack §3). Python maps it to `scope_profiler.NestingError`.
    #[error("{0}")]
    Nesting(String),
    /// The selected ranks and regions hold no calls. Python: `ValueError` with this text.
    #[error("No calls recorded for the requested ranks.")]
    NoCalls,
    /// The request does not fit this run (a timeline window that starts after the run's
    /// last call ends); the message names the request and the run's extent. Python:
    /// `ValueError`; the command line: a usage error (exit 2).
    #[error("{0}")]
    Request(String),
    /// Writing failed; the message names the path. Python: `OSError`.
    #[error("{0}")]
    Io(String),
    /// The file system refused the target: `errno` of the failing call, and the path it
    /// concerned. Python: the `OSError` subclass of that errno (`FileNotFoundError`,
    /// `PermissionError`, ...) with `errno` and `filename` set.
    #[error("{message}")]
    File { message: String, errno: i32, path: std::path::PathBuf },
}

impl ExportError {
    /// `Io` for `e`, or `File` when the operating system gave an errno. `doing` says what
    /// failed ("could not write", "could not create").
    pub fn io(doing: &str, path: &std::path::Path, e: &std::io::Error) -> ExportError {
        let message = format!("{doing} {}: {e}", path.display());
        match e.raw_os_error() {
            Some(errno) => ExportError::File { message, errno, path: path.to_path_buf() },
            None => ExportError::Io(message),
        }
    }
}

impl From<NestingError> for ExportError {
    fn from(e: NestingError) -> Self {
        ExportError::Nesting(e.0)
    }
}

/// Callers whose errors are plain messages (`?` in functions returning `Result<_, String>`).
impl From<ExportError> for String {
    fn from(e: ExportError) -> Self {
        e.to_string()
    }
}
