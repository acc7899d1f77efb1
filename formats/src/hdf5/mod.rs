//! HDF5 in the reference's layout (`spec-hdf5.md`): read schemas 1-3, write schema 3.
//!
//! Reading never panics on bad input: every HDF5 failure, inconsistent index or
//! out-of-range value becomes an [`H5Error`] naming the file (and a panic inside the HDF5
//! bindings is caught and reported as [`H5Error::Corrupt`]).
//!
//! * [`read`]: entry point [`read_h5`], schema check, metadata, rank groups;
//! * [`read_summary`]: [`read_h5_summary`], statistics and lane tables without `/events`;
//! * [`typed`]: typed reads of datasets and attributes with size checks;
//! * [`columnar`]: schema-2/3 event columns, region index and lane tables;
//! * [`schema1`]: schema-1 per-rank groups;
//! * [`heap_guard`]: refuse files whose global heap makes HDF5 loop forever;
//! * [`summary`]: the `summary_statistics` compound (reference's `_timing_summary`);
//! * [`write`]: [`write_h5`] (schema 3, atomic publication).
use thiserror::Error;

pub mod columnar;
pub mod heap_guard;
pub mod read;
pub mod read_summary;
pub mod schema1;
pub mod summary;
pub mod typed;
pub mod vlen;
pub mod write;

pub use read::read_h5;
pub use read_summary::{read_h5_summary, RunSummary, SummaryRow};
pub use summary::{summary_record, SummaryRecord};
pub use write::{python_json_str_list, write_h5};
pub(crate) use write::process_umask;

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

pub(crate) type R<T> = Result<T, H5Error>;

/// Newest schema this crate reads (and the one it writes).
pub const SCHEMA_VERSION: i64 = 3;
pub(crate) const SCHEMA_ATTRIBUTE: &str = "scope_profiler_schema";

/// Python's `repr()` of a string (shared with the analysis crate's error messages).
pub(crate) use scope_profiler_analysis::py_repr;
