//! HDF5 in the reference's layout (`spec-hdf5.md`): read schemas 1-3, write schema 3.
use std::path::Path;

use scope_profiler_analysis::Run;
use thiserror::Error;

/// Why a profile file could not be read or written. Every message names the file.
#[derive(Debug, Error)]
pub enum H5Error {
    /// The file does not exist: "HDF5 file not found: <path>".
    #[error("{0}")]
    NotFound(String),
    /// Not HDF5, truncated, damaged index, not a scope-profiler file (Python: `CorruptProfileError`).
    #[error("{0}")]
    Corrupt(String),
    /// Schema attribute invalid or newer than supported (Python: `HDF5SchemaError`).
    #[error("{0}")]
    Schema(String),
    /// Writing failed (Python: `OSError`).
    #[error("{0}")]
    Write(String),
}

/// Read a file of schema 1, 2 or 3 into a [`Run`].
pub fn read_h5(path: &Path) -> Result<Run, H5Error> {
    let _ = path;
    todo!("formats helper implements this")
}

/// Write `run` as schema 3, atomically (temp file beside the target, then rename), umask respected.
pub fn write_h5(run: &Run, path: &Path) -> Result<(), H5Error> {
    let _ = (run, path);
    todo!("formats helper implements this")
}
