//! The region summary of one rank: one row per region row with its call count, duration
//! totals and extremes, exclusive and await time, plus the rank's thread summary. Computed
//! once here; the text report (`scope-profiler summary`, `print_summary()`) and the HTML
//! report (`scope-profiler report`, `export_html`) only format it.
use crate::events::OptionalColumns;
use crate::lane_summary::{
    task_summary_split, thread_summary_from, thread_table_note, untracked_tasks_note, TaskSummaryRow, ThreadSummaryRow,
};
use crate::rank_reconstruction::{exclusive_from, rank_call_arrays, set_aside_calls, set_aside_report};
use crate::{NestingError, Run};

/// One region row of a rank. Durations are `end - start` of each call, ns on the recording
/// clock (`time.perf_counter_ns()`), wall time.
#[derive(Debug, Clone, PartialEq)]
pub struct RegionSummaryRow {
    /// Position of the row in [`Run::regions`].
    pub row: usize,
    /// Region name.
    pub name: String,
    /// Number of calls.
    pub calls: usize,
    /// Σ durations, ns (inclusive time).
    pub total_ns: i64,
    /// Mean duration, ns (`total_ns / calls`, 0 without calls).
    pub mean_ns: f64,
    /// Shortest / longest call, ns (0 without calls).
    pub min_ns: i64,
    pub max_ns: i64,
    /// Σ exclusive ns (the call minus its children on its lane): stored in the file, else
    /// from the rank's reconstruction; `None` when the calls cannot be nested.
    pub exclusive_ns: Option<i64>,
    /// Σ await ns (time the call's task was suspended inside it, `track_async`); `None`
    /// when the row has no await column.
    pub await_ns: Option<i64>,
    /// Σ task-step ns of the calls ([`crate::RegionCalls::task_step_total_ns`]: the time calls on a
    /// thread's own lane left it to task steps), 0 when not recorded.
    pub task_step_ns: i64,
}

impl RegionSummaryRow {
    /// Σ held ns = `total_ns - await_ns - task_step_ns` (the time the calls ran or waited on
    /// their thread: not suspended in an `await`, and not running task steps from the
    /// thread's own lane); `None` without an await column.
    pub fn held_ns(&self) -> Option<i64> {
        self.await_ns.map(|a| self.total_ns - a - self.task_step_ns)
    }
}

/// The summary of one rank.
#[derive(Debug)]
pub struct RankSummary {
    pub rank: u32,
    /// The rank's region rows, in file order.
    pub rows: Vec<RegionSummaryRow>,
    /// Why exclusive times are missing (the reconstruction failed), if they are.
    pub nesting_note: Option<String>,
    /// [`set_aside_report`] of the rank's reconstruction: calls left out because they do not
    /// nest in their lane.
    pub set_aside_note: Option<String>,
    /// The thread summary (`None` without a thread table; `Err` when the calls cannot be
    /// reconstructed).
    pub threads: Option<Result<Vec<ThreadSummaryRow>, NestingError>>,
    /// The task/greenlet summary (`None` without a task table; `Err` as `threads`).
    pub tasks: Option<Result<Vec<TaskSummaryRow>, NestingError>>,
    /// [`untracked_tasks_note`]: calls that look like an event loop's tasks recorded
    /// without `track_async`, and what to do.
    pub untracked_tasks_note: Option<String>,
    /// [`thread_table_note`]: thread-table rows with unsound times, thread ids without a
    /// row (a damaged file).
    pub thread_table_note: Option<String>,
    /// The rank was read without its calls (`read_h5_summary`): the threads' and tasks'
    /// calls and region times are not known (the summaries give 0, as 0.7.5 does).
    pub summary_only: bool,
}

impl RankSummary {
    /// Whether any row carries await times (the run was recorded with `track_async`).
    pub fn has_await(&self) -> bool {
        self.rows.iter().any(|r| r.await_ns.is_some())
    }
}

/// The summary of `rank`, `None` when the rank has no region row. The rank is
/// reconstructed (once) only when exclusive totals are missing or it has a thread or task table.
pub fn rank_summary(run: &Run, rank: u32) -> Option<RankSummary> {
    let positions: Vec<usize> = (0..run.regions.len()).filter(|&i| run.regions[i].rank == rank).collect();
    if positions.is_empty() {
        return None;
    }
    let mut rows: Vec<RegionSummaryRow> = positions.iter().map(|&i| region_row(run, i)).collect();
    let has_threads = run.rank_threads(rank).next().is_some();
    let has_tasks = run.rank_tasks(rank).next().is_some();
    let missing = rows.iter().any(|r| r.exclusive_ns.is_none());
    let rec = (missing || has_threads || has_tasks).then(|| rank_call_arrays(run, rank));
    let mut out = RankSummary {
        rank,
        rows: Vec::new(),
        nesting_note: None,
        set_aside_note: None,
        threads: None,
        tasks: None,
        untracked_tasks_note: None,
        thread_table_note: None,
        summary_only: run.summary_only(rank),
    };
    match &rec {
        Some(Ok((order, calls))) => {
            if missing {
                for (pos, values) in exclusive_from(run, order, calls) {
                    if let Some(r) = rows.iter_mut().find(|r| r.row == pos) {
                        r.exclusive_ns = Some(values.iter().sum());
                    }
                }
            }
            out.untracked_tasks_note = untracked_tasks_note(run, rank, calls);
            // the advice is said once: by the untracked-tasks note when it applies
            out.set_aside_note = match out.untracked_tasks_note {
                Some(_) => set_aside_calls(run, rank, order, calls).map(|list| format!("{list} (see below).")),
                None => set_aside_report(run, rank, order, calls),
            };
        }
        Some(Err(e)) if missing => out.nesting_note = Some(nesting_note(run, rank, e)),
        _ => {}
    }
    if has_threads {
        if run.rank_tasks(rank).next().is_some() {
            out.tasks = rec.as_ref().map(|r| match r {
                Ok((_, calls)) => Ok(task_summary_split(run, rank, calls, &crate::callstack::split_by_lane(calls))),
                Err(e) => Err(e.clone()),
            });
        }
        out.threads = rec.map(|r| r.map(|(_, calls)| thread_summary_from(run, rank, &calls)));
        if let Some(Ok(rows)) = &out.threads {
            out.thread_table_note = thread_table_note(run, rank, rows);
        }
    }
    out.rows = rows;
    Some(out)
}

/// The note for a rank whose calls cannot be reconstructed (the summary's, finalize()'s
/// "call graph not recorded" warning): the error, plus, when the rank recorded no thread
/// ids, the likely cause - calls of several threads sharing one stack - and the flag that
/// records them apart (a threaded program run without `--track-threads` is not pointed only
/// at a missing `sp_end`).
pub fn nesting_note(run: &Run, rank: u32, e: &NestingError) -> String {
    let untracked = run.rank_rows(rank).all(|r| r.thread_ids.is_none());
    if untracked && e.0.starts_with(crate::callstack::NOT_NESTED) {
        format!(
            "{} If the program runs regions on several threads (or asyncio tasks), their calls share one \
             stack without tracking: record it with --track-threads (--track-async for asyncio), \
             track_threads=True in Python.",
            e.0
        )
    } else {
        e.0.clone()
    }
}

/// The totals of row `i` of `run.regions` (exclusive: the stored total, if any); a
/// summary-only row ([`crate::RegionCalls::stored`]) gives its stored statistics.
fn region_row(run: &Run, i: usize) -> RegionSummaryRow {
    let r = &run.regions[i];
    let name = run.region_names.get(r.region as usize).cloned().unwrap_or_else(|| "?".into());
    if let Some(s) = &r.stored {
        let n = r.num_calls();
        return RegionSummaryRow {
            row: i,
            name,
            calls: n,
            total_ns: s.total,
            mean_ns: if n > 0 { s.total as f64 / n as f64 } else { 0.0 },
            min_ns: if n > 0 { s.minimum } else { 0 },
            max_ns: if n > 0 { s.maximum } else { 0 },
            exclusive_ns: r.exclusive_total_ns,
            await_ns: None,
            task_step_ns: 0,
        };
    }
    let n = r.len();
    let (mut total, mut min, mut max) = (0i64, i64::MAX, i64::MIN);
    for (s, e) in r.start_ns.values().iter().zip(r.end_ns.values().iter()) {
        let d = e - s;
        total += d;
        min = min.min(d);
        max = max.max(d);
    }
    RegionSummaryRow {
        row: i,
        name,
        calls: n,
        total_ns: total,
        mean_ns: if n > 0 { total as f64 / n as f64 } else { 0.0 },
        min_ns: if n > 0 { min } else { 0 },
        max_ns: if n > 0 { max } else { 0 },
        exclusive_ns: r.exclusive_total_ns,
        await_ns: r.await_total_ns(),
        task_step_ns: r.task_step_total_ns().unwrap_or(0),
    }
}

/// The columns of the region summary table (`ProfilingResults.to_arrow()` / `to_polars()` /
/// `to_pandas()`), in order: `summary()`'s keys, or with `per_rank` one row per (region,
/// rank). They depend on the query (`per_rank`) and on the run's optional columns (GPU
/// values, await times: [`OptionalColumns`]), never on how many rows the query gives (an
/// empty run has every column, and `rank` in its per-rank frame).
pub fn summary_table_columns(run: &Run, per_rank: bool) -> Vec<&'static str> {
    let has = OptionalColumns::of(run);
    let mut cols = vec!["name", if per_rank { "rank" } else { "num_ranks" }];
    cols.extend([
        "num_calls",
        "total_duration",
        "inclusive_duration",
        "exclusive_duration",
        "average_duration",
        "min_duration",
        "max_duration",
        "first_duration",
        "last_duration",
        "std_duration",
    ]);
    if has.gpu {
        cols.extend(["gpu_total_duration", "gpu_average_duration"]);
    }
    if per_rank {
        cols.extend(["p50_duration", "p95_duration", "p99_duration"]);
        return cols;
    }
    cols.extend([
        "tags",
        "p50_duration",
        "p95_duration",
        "p99_duration",
        "rank_imbalance",
        "rank_imbalance_pct",
        "p50",
        "p95",
        "p99",
        "imbalance",
    ]);
    if has.task || run.regions.iter().any(|r| r.await_ns.is_some()) {
        cols.extend(["await_duration", "held_duration"]);
    }
    cols
}
