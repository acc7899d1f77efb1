//! Many runs as one dataset: Parquet files that DuckDB, Polars, Dask, Spark and pyarrow read
//! as tables over all runs (`docs/datasets.md`).
//!
//! Layout of a dataset directory `DIR`:
//!
//! ```text
//! DIR/runs.parquet                       one row per run (runs_table)
//! DIR/calls/run=<id>/part-0.parquet      one row per call      (Hive partition per run)
//! DIR/threads/run=<id>/part-0.parquet    one row per thread
//! DIR/tasks/run=<id>/part-0.parquet      one row per task
//! DIR/regions/run=<id>/part-0.parquet    one row per (rank, region)
//! DIR/.staging/                          partitions being written (hidden from readers)
//! ```
//!
//! A run whose table has no row has no partition in it. Times of `calls` are ns from the
//! run's start (metadata `start_time_ns`: the base of `events_frame()`), those of `threads`
//! and `tasks` too (as the run stores them).
//!
//! Writing is crash-safe: a partition is written under `.staging/` and renamed into place
//! whole; `runs.parquet` is replaced (temp file + rename) last, after every partition of the
//! build. A run is part of the dataset once it is in `runs.parquet`; the partitions of a
//! build that was killed before that are removed by the next build ([`prepare`]).
//! One build at a time writes to a dataset.
mod build;
mod layout;
mod run_id;
mod runs_table;
mod tables;

pub use build::{build, convert_file, convert_files, find_runs, BuildOutcome, Converted};
pub use layout::{commit, prepare, write_run};
pub use run_id::run_id;
pub use runs_table::{parse_iso_timestamp, read_runs, runs_batch, RunRow};
pub use tables::{run_tables, time_origin, RunTables, Table};

/// Why a dataset could not be built or read: the message names the path and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DatasetError(pub String);

impl DatasetError {
    pub fn new(message: impl Into<String>) -> Self {
        DatasetError(message.into())
    }
}

/// The name of the runs table in a dataset directory.
pub const RUNS_FILE: &str = "runs.parquet";
