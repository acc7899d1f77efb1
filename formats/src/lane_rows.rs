//! The thread and task rows of the selected ranks, with their labels and call counts: what
//! the Parquet export's lanes file and the dataset's `threads` / `tasks` tables are made of.
//! Times stay as the run stores them (ns since metadata `start_time_ns`); each table shifts
//! them to its own clock. Crate-internal.
use scope_profiler_analysis::{LaneLabels, Run, TaskRow, ThreadRow};

use crate::call_columns::CallsPerLane;

/// A thread or a task of one rank.
pub(crate) enum LaneKind<'a> {
    Thread(&'a ThreadRow),
    Task(&'a TaskRow),
}

/// One lane: its rank, lane number (`-2 - index` for a thread, the index for a task), label
/// and number of calls, and its table row.
pub(crate) struct LaneRow<'a> {
    pub rank: u32,
    pub lane: i64,
    pub label: String,
    pub num_calls: i64,
    pub kind: LaneKind<'a>,
}

impl LaneRow<'_> {
    /// Index in its thread or task table.
    pub fn index(&self) -> i64 {
        match self.kind {
            LaneKind::Thread(t) => t.index,
            LaneKind::Task(t) => t.index,
        }
    }
    /// The thread's or task's name.
    pub fn name(&self) -> &str {
        match self.kind {
            LaneKind::Thread(t) => &t.name,
            LaneKind::Task(t) => &t.name,
        }
    }
    /// The thread itself, or the thread that ran the task's latest step.
    pub fn thread_index(&self) -> i64 {
        match self.kind {
            LaneKind::Thread(t) => t.index,
            LaneKind::Task(t) => t.thread_index,
        }
    }
    /// Thread start / task creation, ns since the run origin.
    pub fn start_ns(&self) -> i64 {
        match self.kind {
            LaneKind::Thread(t) => t.start_ns,
            LaneKind::Task(t) => t.created_ns,
        }
    }
    /// Thread end / task completion, ns since the run origin; `None` while alive / not done.
    pub fn end_ns(&self) -> Option<i64> {
        let end = match self.kind {
            LaneKind::Thread(t) => t.end_ns,
            LaneKind::Task(t) => t.done_ns,
        };
        (end >= 0).then_some(end)
    }
}

/// The lanes of `ranks` (duplicates ignored), each rank's threads by index, then its tasks
/// by index; `per_lane` gives their numbers of calls.
pub(crate) fn lane_rows<'a>(run: &'a Run, ranks: &[u32], per_lane: &CallsPerLane) -> Vec<LaneRow<'a>> {
    let mut ranks = ranks.to_vec();
    ranks.dedup();
    let mut out = Vec::new();
    for &rank in &ranks {
        let labels = LaneLabels::new(run, rank);
        let calls = |lane: i64| per_lane.get(&(rank, lane)).copied().unwrap_or(0);
        let mut threads: Vec<_> = run.rank_threads(rank).collect();
        threads.sort_by_key(|t| t.index);
        for t in threads {
            let lane = -2 - t.index;
            out.push(LaneRow {
                rank,
                lane,
                label: labels.label(lane),
                num_calls: calls(lane),
                kind: LaneKind::Thread(t),
            });
        }
        let mut tasks: Vec<_> = run.rank_tasks(rank).collect();
        tasks.sort_by_key(|t| t.index);
        for t in tasks {
            let lane = t.index;
            out.push(LaneRow {
                rank,
                lane,
                label: labels.label(lane),
                num_calls: calls(lane),
                kind: LaneKind::Task(t),
            });
        }
    }
    out
}
