//! Lanes seen by people: labels and per-thread summaries (`spec-results.md` §4).
use crate::callstack::NestingError;
use crate::run::Run;

/// One row of `thread_summary(rank)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSummaryRow {
    pub index: i64,
    pub name: String,
    pub alive: bool,
    /// s (end - start), `None` while alive.
    pub wall_time: Option<f64>,
    /// s of CPU (`CLOCK_THREAD_CPUTIME_ID`).
    pub cpu_time: f64,
    /// Calls (all regions, nested included) whose thread id is `index`.
    pub num_calls: i64,
    /// s: root calls of the thread's bare lane and of the tasks whose last step ran on it.
    pub region_time: f64,
}

/// `thread_summary(rank)`: one row per thread-table row, index order; empty without a table.
pub fn thread_summary(run: &Run, rank: u32) -> Result<Vec<ThreadSummaryRow>, NestingError> {
    let _ = (run, rank);
    todo!("analysis helper implements this")
}

/// `lane_label(lane, rank)`: "MainThread", "Task-2 (fetch) on MainThread", "unknown lane", ...
pub fn lane_label(run: &Run, lane: i64, rank: u32) -> String {
    let _ = (run, lane, rank);
    todo!("analysis helper implements this")
}
