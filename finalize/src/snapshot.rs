//! Recorder snapshot -> [`Run`] (rank 0).
use arrow_array::Int64Array;
use arrow_buffer::ScalarBuffer;
use scope_profiler_analysis::{LoopBlockRow, MetaValue, RegionCalls, Run, TaskRow, ThreadRow};
use scope_profiler_recorder::{Recorder, RegionColumns, RegionMeta, TaskRowData, ThreadRowData};

/// What one recorder holds at a checkpoint, as plain values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Completed calls per region with any ([`Recorder::snapshot`] order: ascending region
    /// id; within a region by thread index, each thread in entry order). Absolute ns on
    /// the recording clock (`CLOCK_MONOTONIC`).
    pub regions: Vec<RegionColumns>,
    /// Thread table, timestamps relative to the run origin (`-1` kept).
    pub threads: Vec<ThreadRowData>,
    /// Task table, timestamps relative to the run origin (`-1` kept).
    pub tasks: Vec<TaskRowData>,
    /// Whether calls carry a thread column (the recorder tracks threads).
    pub thread_ids: bool,
    /// Whether calls carry task ids and await times (the recorder has async columns).
    pub task_columns: bool,
    /// Event-loop blocks recorded so far (every one, like the lane tables), absolute ns.
    pub loop_blocks: Vec<scope_profiler_recorder::event_loop::LoopBlock>,
}

impl Snapshot {
    /// Copy the completed calls of region ids `< num_regions`, then the thread and task
    /// tables relative to `origin_ns` (this re-samples the calling thread's CPU time).
    ///
    /// # Safety
    /// As [`Recorder::snapshot`]: no thread may be inside `enter`/`exit` of `rec`
    /// concurrently, and earlier such calls must happen-before this one.
    pub unsafe fn take(rec: &Recorder, num_regions: usize, origin_ns: i64) -> Snapshot {
        // columns of 4 MiB and more on huge pages where the kernel offers them, copied
        // (their pages first touched) on every core of the analysis pool; a region recorded
        // on one thread gets no thread column ([`run_from_snapshot`] shares one)
        let run = |n: usize, job: &(dyn Fn(usize) + Sync)| {
            use rayon::prelude::*;
            scope_profiler_analysis::pool::install(|| (0..n).into_par_iter().for_each(job))
        };
        let regions = rec.snapshot_par(num_regions, scope_profiler_analysis::column_memory::with_capacity, run, true);
        Snapshot {
            regions,
            threads: rec.thread_rows(origin_ns),
            tasks: rec.task_rows(origin_ns),
            thread_ids: rec.tracking(),
            task_columns: rec.async_columns(),
            loop_blocks: rec.loop_blocks().blocks(),
        }
    }
}

/// The snapshot as a rank-0 [`Run`]: one row per region with calls, in snapshot order,
/// named from `regions` (indexed by region id; the run's region table lists only regions
/// with calls, renumbered densely in that order). Thread ids are kept only with
/// `snap.thread_ids`, task ids and await ns only with `snap.task_columns`. No call ids yet.
/// Rows recorded on one thread ([`RegionColumns::one_thread`]) share the values of their
/// thread column: one buffer per thread, as long as its longest row.
/// `num_ranks` is `max(1, metadata mpi_size)` when there are rows or lane-table rows, else 0.
///
/// Errors: [`UnknownRegion`] when a column names a region id outside `regions` (a
/// snapshot taken with more regions than the table has; [`crate::checkpoint`] takes both
/// under one lock, so it cannot happen there).
pub fn run_from_snapshot(
    snap: Snapshot,
    regions: &[RegionMeta],
    metadata: Vec<(String, MetaValue)>,
) -> Result<Run, UnknownRegion> {
    let mut run = Run { metadata, ..Default::default() };
    let shared = if snap.thread_ids { SharedThreadColumns::new(&snap.regions) } else { SharedThreadColumns::default() };
    for cols in snap.regions {
        let m = regions.get(cols.region as usize).ok_or(UnknownRegion { id: cols.region, regions: regions.len() })?;
        let region = run.region_names.len() as u32;
        run.region_names.push(m.name.to_string());
        let n = cols.starts.len();
        let mut row = RegionCalls::new(region, 0, Int64Array::from(cols.starts), Int64Array::from(cols.ends));
        row.thread_ids = snap.thread_ids.then(|| match cols.one_thread {
            Some(t) => shared.column(t, n),
            None => Int64Array::from(cols.thread_ids),
        });
        if snap.task_columns {
            row.task_ids = Some(Int64Array::from(cols.task_ids));
            row.await_ns = Some(Int64Array::from(cols.await_ns));
            row.ready_wait_ns = Some(Int64Array::from(cols.ready_wait_ns));
            // only rows with a call on a thread's own lane open across task steps carry it
            if cols.task_step_ns.iter().any(|&v| v != 0) {
                row.task_step_ns = Some(Int64Array::from(cols.task_step_ns));
            }
        }
        row.source_file = m.source_file.as_deref().map(str::to_owned);
        row.source_line = m.source_line;
        row.source_text = m.source_text().map(str::to_owned);
        row.tags = m.tags().to_vec();
        run.regions.push(row);
    }
    run.threads = snap.threads.into_iter().map(thread_row).collect();
    if !snap.task_columns {
        // steps are timed only with async columns: not recorded, rather than 0
        run.threads.iter_mut().for_each(|t| t.task_step_ns = scope_profiler_analysis::UNKNOWN);
    }
    run.tasks = snap.tasks.into_iter().map(task_row).collect();
    run.loop_blocks = snap
        .loop_blocks
        .iter()
        .map(|b| LoopBlockRow {
            rank: 0,
            thread: b.thread as i64,
            task: b.task,
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            delayed_tasks: b.delayed_tasks,
        })
        .collect();
    let mpi_size = run.meta_int("mpi_size").unwrap_or(1).max(1) as u32;
    // a tracked run that recorded no region is still a run of this process: one rank with
    // its thread table (the reference's file says 0 ranks: a defect we do not copy)
    let recorded = !run.regions.is_empty() || !run.threads.is_empty() || !run.tasks.is_empty();
    run.num_ranks = if recorded { mpi_size.max(1) } else { 0 };
    Ok(run)
}

/// One buffer of thread ids per thread that some row was recorded on alone, as long as the
/// longest such row: each of those rows' thread column is a slice of it.
#[derive(Default)]
struct SharedThreadColumns(Vec<(i64, ScalarBuffer<i64>)>);

impl SharedThreadColumns {
    fn new(regions: &[RegionColumns]) -> Self {
        let mut longest: Vec<(i64, usize)> = Vec::new();
        for c in regions {
            let Some(t) = c.one_thread else { continue };
            match longest.iter_mut().find(|(u, _)| *u == t) {
                Some((_, n)) => *n = (*n).max(c.starts.len()),
                None => longest.push((t, c.starts.len())),
            }
        }
        SharedThreadColumns(longest.into_iter().map(|(t, n)| (t, ScalarBuffer::from(vec![t; n]))).collect())
    }
    /// `n` thread ids `t` (at most the longest row's of `t`).
    fn column(&self, t: i64, n: usize) -> Int64Array {
        match self.0.iter().find(|(u, _)| *u == t) {
            Some((_, values)) => Int64Array::new(values.slice(0, n), None),
            None => Int64Array::from(vec![t; n]),
        }
    }
}

/// A snapshot column names a region the region table does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("snapshot has calls of region id {id} but the region table has {regions} regions")]
pub struct UnknownRegion {
    pub id: u32,
    pub regions: usize,
}

/// A recorder thread row as a run's thread-table row (rank 0).
pub fn thread_row(r: ThreadRowData) -> ThreadRow {
    ThreadRow {
        rank: 0,
        index: r.index,
        ident: r.info.ident,
        native_id: r.info.native_id,
        daemon: r.info.daemon,
        start_ns: r.start_ns,
        end_ns: r.end_ns,
        cpu_ns: r.cpu_ns,
        cpu_start_ns: r.cpu_start_ns,
        task_step_ns: r.task_step_ns,
        ready_wait_ns: r.ready_wait_ns,
        loop_idle_ns: r.loop_idle_ns,
        name: r.info.name,
    }
}

/// A recorder task row as a run's task-table row (rank 0).
pub fn task_row(t: TaskRowData) -> TaskRow {
    TaskRow::new(0, t.index, t.kind, t.name, t.coro_name)
        .on_thread(t.thread_index)
        .lifetime(t.created_ns, t.done_ns)
        .timing(t.steps, t.running_ns, t.suspended_ns)
        .ready_wait(t.ready_wait_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows recorded on one thread get thread columns of their length from one
    /// shared buffer per thread; other rows keep their own.
    #[test]
    fn rows_of_one_thread_share_their_thread_column() {
        let row = |region: u32, n: usize, one_thread: Option<i64>| RegionColumns {
            region,
            starts: vec![1; n],
            ends: vec![2; n],
            thread_ids: if one_thread.is_some() { vec![] } else { (0..n as i64).collect() },
            one_thread,
            ..Default::default()
        };
        let snap = Snapshot {
            regions: vec![row(0, 3, Some(4)), row(1, 5, Some(4)), row(2, 2, Some(0)), row(3, 4, None)],
            thread_ids: true,
            ..Default::default()
        };
        let table: Vec<RegionMeta> = ["a", "b", "c", "d"].into_iter().map(RegionMeta::named).collect();
        let run = run_from_snapshot(snap, &table, vec![]).unwrap();
        let threads: Vec<Vec<i64>> =
            run.regions.iter().map(|r| r.thread_ids.as_ref().unwrap().values().to_vec()).collect();
        assert_eq!(threads, vec![vec![4; 3], vec![4; 5], vec![0; 2], vec![0, 1, 2, 3]]);
    }
}
