//! Lanes seen by people: labels and per-thread summaries (`spec-results.md` §4).
use std::collections::HashMap;

use rayon::prelude::*;

use crate::callstack::{split_by_lane, CallArrays, LaneSplit, NestingError};
use crate::rank_reconstruction::rank_call_arrays;
use crate::run::{secs, Run, TaskRow, ThreadRow};

/// One row of `thread_summary(rank)`. Times in s on the recording clock (wall) or the
/// thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadSummaryRow {
    pub index: i64,
    pub name: String,
    /// Whether the thread table has a row for this thread. `false`: calls carry its id but
    /// the table (a damaged file) has no row; named `thread {index}`, times unknown.
    pub listed: bool,
    /// Whether the thread was still running at the end of the recording.
    pub alive: bool,
    /// s from the thread's start (registration; the run's start for the thread that called
    /// `setup()`) to its end, or to the end of the run (`finalize_time_ns`) while alive.
    /// `None` without a start, or alive in a run whose end is not recorded, or when the
    /// start or end is unsound (negative, an end before the start: [`thread_table_note`]).
    pub wall_time: Option<f64>,
    /// s of CPU burned during the run: `cpu_ns - cpu_start_ns`, or the whole-life figure
    /// when the file does not record `cpu_start_ns` (files of 0.7.5). `None` when the row's
    /// CPU clock readings are unsound (negative, or below their start: a damaged file,
    /// [`thread_table_note`]) or the thread has no row.
    pub cpu_time: Option<f64>,
    /// s of CPU over the thread's whole life (CPU before `setup()` included), the
    /// reference's `cpu_time`; `None` as `cpu_time`.
    pub cpu_time_total: Option<f64>,
    /// Calls (all regions, nested included) whose thread id is `index`.
    pub num_calls: i64,
    /// s of wall-clock time covered by the top-level calls of the thread's lanes (its bare
    /// lane and the lanes of the tasks/greenlets whose latest step ran on it), counted once
    /// where calls of different lanes overlap; never more than `wall_time`.
    pub region_time: f64,
    /// s the thread was held: by its own lane's top-level calls outside the task steps they
    /// ran (`__main__.<module>` around `asyncio.run(...)`, the `session()` root: an event
    /// loop's own time, its callbacks and its waits for I/O or timers, are theirs), plus
    /// `task_step_time`. Where the steps are not recorded (files written without it), the
    /// task lanes' top-level calls' held time (Σ duration − await) plus the bare lane's
    /// top-level calls outside the task calls they enclose. `None` when the rank recorded no
    /// await column (no `track_async`). The parts do not overlap: `held_time <= wall_time`.
    pub held_time: Option<f64>,
    /// s during which the thread's tasks waited: the union of the top-level calls of the
    /// task lanes on the thread, less the time those calls held it (Σ duration − await):
    /// wall-clock time with a task call open and none of them running (the loop idle, or
    /// running other code). One task's await time for a thread that runs one task; never
    /// above `region_time`. `None` without an await column.
    pub await_time: Option<f64>,
    /// s the thread spent running task steps (asyncio tasks, greenlets; an eager task's
    /// first step inside its creator's counted once): `<= wall_time`. `None` when not
    /// recorded (no `track_async`, files written without it).
    pub task_step_time: Option<f64>,
    /// s: Σ await of the top-level calls of the task lanes on the thread, a per-task sum
    /// (200 tasks awaiting 50 ms at once give 10 s): the sum of their `task_summary()`
    /// `await_time`s, not a time of the thread. `None` without an await column.
    pub task_await_time_sum: Option<f64>,
    /// s in which some task resumed on this thread (an event loop's thread) was ready to
    /// run but waited for the thread: the union of the tasks' ready waits, so at most the
    /// thread's wall time ([`crate::ThreadRow::ready_wait_ns`]); `None` for a thread that
    /// ran no task step, or whose loop could not tell.
    pub ready_wait_time: Option<f64>,
    /// s the instrumented event loops run on the thread waited with nothing ready: an
    /// asyncio loop's `select` with nothing queued, a trio run's I/O wait with a timeout
    /// ([`crate::ThreadRow::loop_idle_ns`]); at most `wall_time`, and no task step overlaps
    /// it. It falls inside the bare-lane call that runs the loop, so it is part of that
    /// call's held time and of `held_time`. `None` for a thread that ran no instrumented
    /// loop (no `track_async`, uvloop, gevent) or a file without it.
    pub idle_time: Option<f64>,
}

/// One row of `task_summary(rank)`: an asyncio task or greenlet lane. Times in s, wall clock.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSummaryRow {
    /// Task-table index, also the lane id.
    pub index: i64,
    /// `"task"` or `"greenlet"`.
    pub kind: String,
    pub name: String,
    pub coro_name: String,
    /// Thread-table index of the thread that ran the latest step (`-1` unknown).
    pub thread_index: i64,
    /// That thread's name (`"thread {i}"` when not in the table, `"unknown lane"` for -1).
    pub thread: String,
    pub done: bool,
    /// s from creation to completion, or to the end of the run (`finalize_time_ns`) when not
    /// done; `None` when neither is known.
    pub wall_time: Option<f64>,
    /// Calls on the lane (all regions, nested included).
    pub num_calls: i64,
    /// s: Σ durations of the lane's top-level calls (they do not overlap on one lane).
    pub region_time: f64,
    /// s: Σ (duration − await) of the top-level calls; `None` without an await column.
    pub held_time: Option<f64>,
    /// s: Σ await of the top-level calls; `None` without an await column.
    pub await_time: Option<f64>,
    /// s the task was ready to resume but its event loop ran other code, over its whole
    /// life ([`TaskRow::ready_wait_ns`]); `None` when not known (no `track_async`, a loop
    /// that cannot tell, a greenlet, a file without it).
    pub ready_wait_time: Option<f64>,
}

/// `thread_summary(rank)`: one row per thread-table row, index order, then one per thread id
/// that calls carry but the table has no row for (a damaged file: `listed` false, ascending
/// id); empty without a table. Unsound times are `None` ([`thread_table_note`] says which).
///
/// See [`ThreadSummaryRow`] for each number; `wall_time` is `end/1e9 − start/1e9` (float
/// arithmetic in that order, like the reference), the end being `finalize_time_ns −
/// start_time_ns` (metadata) for a thread alive at the end. Top-level calls are the roots of
/// the lane reconstruction, calls set aside by it left out.
///
/// Errors: [`NestingError`] when the rank's calls cannot be reconstructed.
pub fn thread_summary(run: &Run, rank: u32) -> Result<Vec<ThreadSummaryRow>, NestingError> {
    if run.rank_threads(rank).next().is_none() {
        return Ok(Vec::new());
    }
    let (_, calls) = rank_call_arrays(run, rank)?;
    Ok(thread_summary_from(run, rank, &calls))
}

/// [`thread_summary`] from an existing reconstruction of `rank` (`calls` from
/// [`rank_call_arrays`]); O(calls log calls).
pub fn thread_summary_from(run: &Run, rank: u32, calls: &CallArrays) -> Vec<ThreadSummaryRow> {
    if run.rank_threads(rank).next().is_none() {
        return Vec::new();
    }
    let split = if calls.lane.is_empty() { LaneSplit::default() } else { split_by_lane(calls) };
    thread_summary_split(run, rank, calls, &split)
}

/// [`thread_summary_from`] given the lane split of `calls` too (the cached reconstruction's):
/// without task columns a thread's call count is the size of its lane - O(lanes) instead of
/// a pass over the calls.
pub fn thread_summary_split(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit) -> Vec<ThreadSummaryRow> {
    crate::pool::install(|| thread_summary_on_pool(run, rank, calls, split))
}

/// `task_summary(rank)`: one row per task-table row of `rank` (index order); empty without
/// a task table. See [`TaskSummaryRow`].
///
/// Errors: [`NestingError`] when the rank's calls cannot be reconstructed.
pub fn task_summary(run: &Run, rank: u32) -> Result<Vec<TaskSummaryRow>, NestingError> {
    if run.rank_tasks(rank).next().is_none() {
        return Ok(Vec::new());
    }
    let (_, calls) = rank_call_arrays(run, rank)?;
    let split = if calls.lane.is_empty() { LaneSplit::default() } else { split_by_lane(&calls) };
    Ok(task_summary_split(run, rank, &calls, &split))
}

/// [`task_summary`] from an existing reconstruction of `rank` and its lane split.
pub fn task_summary_split(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit) -> Vec<TaskSummaryRow> {
    let tasks: Vec<&TaskRow> = run.rank_tasks(rank).collect();
    if tasks.is_empty() {
        return Vec::new();
    }
    // task lanes only, without their root intervals; ascending lane id (the split's order)
    let mut lanes = crate::pool::install(|| lane_times(run, rank, calls, split, false));
    lanes.retain(|l| l.lane >= 0);
    lanes.sort_unstable_by_key(|l| l.lane);
    let lane_of = |index: i64| lanes.binary_search_by_key(&index, |l| l.lane).ok().map(|k| &lanes[k]);
    let has_await = rank_has_await(run, rank);
    let labels = LaneLabels::new(run, rank);
    let run_end = run_end_ns(run, rank);
    tasks
        .iter()
        .map(|t| {
            let lane = lane_of(t.index);
            let (held, awaited) = lane.map_or((0, 0), |l| (l.held_ns, l.await_ns));
            let done = t.done_ns != crate::run::UNKNOWN;
            let end = if done { Some(t.done_ns) } else { run_end };
            TaskSummaryRow {
                index: t.index,
                kind: t.kind.clone(),
                name: t.name.clone(),
                coro_name: t.coro_name.clone(),
                thread_index: t.thread_index,
                thread: if t.thread_index == crate::run::UNKNOWN {
                    "unknown lane".to_string()
                } else {
                    labels.thread_label(t.thread_index)
                },
                done,
                wall_time: end.filter(|_| t.created_ns != crate::run::UNKNOWN).map(|e| secs(e) - secs(t.created_ns)),
                num_calls: lane.map_or(0, |l| l.calls),
                region_time: secs(held + awaited),
                held_time: has_await.then(|| secs(held)),
                await_time: has_await.then(|| secs(awaited)),
                ready_wait_time: (t.ready_wait_ns >= 0).then(|| secs(t.ready_wait_ns)),
            }
        })
        .collect()
}

/// The end of the run relative to its start (`finalize_time_ns − start_time_ns`), ns, for
/// the lane tables of `rank`. The metadata is one process's: in a run stacked from several
/// files (`merged_from` with more than one path) only rank 0's tables share its origin and
/// end, so other ranks have none.
fn run_end_ns(run: &Run, rank: u32) -> Option<i64> {
    let stacked = matches!(run.meta("merged_from"), Some(crate::run::MetaValue::StrList(p)) if p.len() > 1);
    if stacked && rank > 0 {
        return None;
    }
    match (run.meta_int("start_time_ns"), run.meta_int("finalize_time_ns")) {
        (Some(s), Some(f)) if f >= s => Some(f - s),
        _ => None,
    }
}

/// Whether any row of `rank` carries an await column (`track_async`).
fn rank_has_await(run: &Run, rank: u32) -> bool {
    run.rank_rows(rank).any(|r| r.await_ns.is_some())
}

/// The top-level calls of one lane.
struct LaneTimes {
    lane: i64,
    /// Calls on the lane (all depths).
    calls: i64,
    /// `(start, end, await)` ns of the top-level calls, ascending start (non-overlapping).
    roots: Vec<(i64, i64, i64)>,
    /// Σ (duration − await) and Σ await ns of the top-level calls (await clamped to
    /// `[0, duration]`; 0 without an await column).
    held_ns: i64,
    await_ns: i64,
    /// Σ task-step ns of the top-level calls (`RegionCalls::task_step_ns`, clamped to
    /// `[0, duration]`; 0 without that column): on a thread's own lane, the task steps they ran.
    step_ns: i64,
}

/// [`LaneTimes`] of every lane of `split` (lanes in parallel; `roots` filled only with
/// `with_roots`). Set-aside calls are roots that overlap their lane's other roots: not counted.
fn lane_times(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit, with_roots: bool) -> Vec<LaneTimes> {
    // await column per reconstruction row (`calls.region_index` indexes these rows)
    let ordered = crate::rank_reconstruction::rank_rows_ordered(run, rank);
    let awaits: Vec<Option<&[i64]>> =
        ordered.iter().map(|&i| run.regions[i].await_ns.as_ref().map(|a| &a.values()[..])).collect();
    let steps = crate::rank_reconstruction::TaskSteps::of(run, &ordered);
    let mut aside = vec![false; if calls.set_aside.is_empty() { 0 } else { calls.len() }];
    for a in &calls.set_aside {
        aside[a.call as usize] = true;
    }
    (0..split.len())
        .into_par_iter()
        .map(|k| {
            let (lane, ids) = split.get(k);
            let mut out =
                LaneTimes { lane, calls: ids.len() as i64, roots: Vec::new(), held_ns: 0, await_ns: 0, step_ns: 0 };
            for &i in ids {
                let i = i as usize;
                if calls.parent[i] >= 0 || aside.get(i).copied().unwrap_or(false) {
                    continue;
                }
                let (s, e) = (calls.start_ns[i], calls.end_ns[i]);
                let d = e - s;
                let w = awaits
                    .get(calls.region_index[i] as usize)
                    .copied()
                    .flatten()
                    .and_then(|a| a.get(calls.call_index[i] as usize).copied())
                    .unwrap_or(0)
                    .clamp(0, d.max(0)); // as RegionCalls::await_total_ns counts it
                if with_roots {
                    out.roots.push((s, e, w));
                }
                out.held_ns += d - w;
                out.await_ns += w;
                if let Some(steps) = &steps {
                    out.step_ns += steps.get(calls.region_index[i] as usize, calls.call_index[i] as usize, d);
                }
            }
            out.roots.sort_unstable();
            out
        })
        .collect()
}

/// Whether `[start, end]` lies inside one of `sorted` (ascending start, non-overlapping).
fn inside(sorted: &[(i64, i64)], start: i64, end: i64) -> bool {
    let k = sorted.partition_point(|&(b, _)| b <= start);
    k > 0 && end <= sorted[k - 1].1
}

/// ns covered by the union of `intervals` (sorted here).
fn union_ns(mut intervals: Vec<(i64, i64)>) -> i64 {
    intervals.sort_unstable();
    let mut total = 0i64;
    let mut current: Option<(i64, i64)> = None;
    for (s, e) in intervals {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                current = Some((s, e));
            }
            None => current = Some((s, e)),
        }
    }
    total + current.map_or(0, |(s, e)| e - s)
}

fn thread_summary_on_pool(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit) -> Vec<ThreadSummaryRow> {
    let threads: Vec<&ThreadRow> = run.rank_threads(rank).collect();
    if threads.is_empty() {
        return Vec::new();
    }
    let counted = ThreadCalls::count(run, rank, split, &threads);
    let times = ThreadTimes::of(run, rank, calls, split, &SlotIndex::new(&counted.slot));
    summary_rows(run, rank, &threads, &counted, &times)
}

/// The calls of each thread of a rank: a slot per thread index of the thread table (rows
/// sharing an index share the slot), then one per thread id that calls carry but the table
/// has no row for.
struct ThreadCalls {
    /// Thread index -> slot of `num_calls` (and of [`ThreadTimes`]' vectors).
    slot: HashMap<i64, usize>,
    /// Calls per slot.
    num_calls: Vec<i64>,
    /// `(thread id, calls)` of the ids without a thread-table row, ascending.
    unlisted: Vec<(i64, i64)>,
}

impl ThreadCalls {
    fn count(run: &Run, rank: u32, split: &LaneSplit, threads: &[&ThreadRow]) -> Self {
        // Thread index -> slot; rows sharing an index share the entry.
        let mut slot: HashMap<i64, usize> = HashMap::with_capacity(threads.len());
        for t in threads {
            let next = slot.len();
            slot.entry(t.index).or_insert(next);
        }
        let mut num_calls = vec![0i64; slot.len()];
        // Calls whose thread id has no thread-table row (`-1`, "unknown thread", aside): a
        // damaged file. Such threads get a row of their own, after the table's, so their calls
        // are counted somewhere.
        let mut unlisted: HashMap<i64, i64> = HashMap::new();

        // Calls per thread. Without task columns a call's lane is -2 - its thread id (or -1),
        // so the count is the lane's size; else the rows' thread columns, counted in parallel.
        let tasks_recorded = run.rank_rows(rank).any(|r| r.task_ids.is_some());
        let slots = SlotIndex::new(&slot);
        if tasks_recorded {
            count_thread_columns(run, rank, &slots, &mut num_calls, &mut unlisted);
        } else {
            for (lane, ids) in split.iter() {
                if lane <= -2 {
                    match slots.get(-2 - lane) {
                        Some(s) => num_calls[s] += ids.len() as i64,
                        None => *unlisted.entry(-2 - lane).or_default() += ids.len() as i64,
                    }
                }
            }
        }
        let mut unlisted: Vec<(i64, i64)> = unlisted.into_iter().collect();
        unlisted.sort_unstable();
        for &(t, n) in &unlisted {
            slot.insert(t, num_calls.len());
            num_calls.push(n);
        }
        ThreadCalls { slot, num_calls, unlisted }
    }
}

/// Add the calls of `rank`'s thread columns to `num_calls` (by slot) and to `unlisted` (by
/// thread id, for ids without a slot other than the unknown thread), in parallel chunks.
fn count_thread_columns(
    run: &Run,
    rank: u32,
    slots: &SlotIndex<'_>,
    num_calls: &mut [i64],
    unlisted: &mut HashMap<i64, i64>,
) {
    let columns: Vec<&[i64]> =
        run.rank_rows(rank).filter_map(|r| r.thread_ids.as_ref().map(|a| &a.values()[..])).collect();
    let chunks: Vec<&[i64]> = columns.iter().flat_map(|c| c.chunks(1 << 16)).collect();
    for (counts, missing) in chunks
        .par_iter()
        .map(|ids| {
            let mut counts = vec![0i64; num_calls.len()];
            let mut missing: HashMap<i64, i64> = HashMap::new();
            for &t in ids.iter() {
                match slots.get(t) {
                    Some(s) => counts[s] += 1,
                    None if t != crate::run::UNKNOWN => *missing.entry(t).or_default() += 1,
                    None => {}
                }
            }
            (counts, missing)
        })
        .collect::<Vec<_>>()
    {
        for (total, c) in num_calls.iter_mut().zip(counts) {
            *total += c;
        }
        for (t, n) in missing {
            *unlisted.entry(t).or_default() += n;
        }
    }
}

/// Per slot of [`ThreadCalls`]: the ns the thread's top-level calls cover (their union over
/// its bare lane and its tasks' lanes), and with task lanes the held and await ns
/// ([`ThreadSummaryRow`] says what each is).
struct ThreadTimes {
    covered: Vec<i64>,
    held: Vec<i64>,
    awaited: Vec<i64>,
    /// Σ await of the task lanes' top-level calls on the thread (a per-task sum).
    task_awaits: Vec<i64>,
}

/// The top-level calls of the lanes of one thread, as [`ThreadTimes::of`] gathers them.
#[derive(Default, Clone)]
struct ThreadLanes {
    /// `(start, end)` of the bare-lane roots, then of the task roots outside them.
    roots: Vec<(i64, i64)>,
    /// `(start, end)` of the task roots that lie inside a bare-lane root.
    enclosed: Vec<(i64, i64)>,
    /// `(start, end)` of every task root on the thread.
    task_roots: Vec<(i64, i64)>,
    /// Σ duration and Σ task steps of the bare-lane roots.
    bare_ns: i64,
    bare_steps: i64,
    /// Σ (duration − await) and Σ await of the task roots.
    task_held: i64,
    task_awaits: i64,
}

impl ThreadTimes {
    fn of(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit, slots: &SlotIndex<'_>) -> Self {
        let n = slots.len();
        let lanes = lane_times(run, rank, calls, split, true);
        let mut per: Vec<ThreadLanes> = vec![ThreadLanes::default(); n];
        for lt in lanes.iter().filter(|lt| lt.lane <= -2) {
            if let Some(s) = slots.get(-2 - lt.lane) {
                per[s].roots.extend(lt.roots.iter().map(|&(b, e, _)| (b, e)));
                per[s].bare_ns += lt.held_ns + lt.await_ns;
                per[s].bare_steps += lt.step_ns;
            }
        }
        // the bare-lane roots of each thread, ascending start (non-overlapping per lane; rows
        // sharing an index may bring several lanes, hence the sort)
        let bare: Vec<Vec<(i64, i64)>> = per
            .iter()
            .map(|p| {
                let mut r = p.roots.clone();
                r.sort_unstable();
                r
            })
            .collect();
        // every task lane whose task rows name the thread (each distinct thread once)
        let mut task_threads: Vec<(i64, i64)> = run.rank_tasks(rank).map(|t| (t.index, t.thread_index)).collect();
        task_threads.sort_unstable();
        for lt in lanes.iter().filter(|lt| lt.lane >= 0) {
            let from = task_threads.partition_point(|&(k, _)| k < lt.lane);
            let mut last_slot = usize::MAX;
            for &(_, th) in task_threads[from..].iter().take_while(|&&(k, _)| k == lt.lane) {
                let Some(s) = slots.get(th).filter(|&s| s != last_slot) else { continue };
                last_slot = s;
                let p = &mut per[s];
                for &(b, e, w) in &lt.roots {
                    if inside(&bare[s], b, e) {
                        p.enclosed.push((b, e));
                    } else {
                        p.roots.push((b, e));
                    }
                    p.task_roots.push((b, e));
                    p.task_held += e - b - w;
                    p.task_awaits += w;
                }
            }
        }
        let steps = thread_task_steps(run, rank, slots);
        let parts: Vec<(i64, i64, i64, i64)> = per
            .into_par_iter()
            .zip(steps)
            .map(|(p, steps)| {
                let held = match steps {
                    // the thread's own lane outside its task steps, and the steps
                    Some(steps) => p.bare_ns - p.bare_steps + steps,
                    // a bare-lane call holds the thread only outside the task calls it encloses
                    // (those are split into their own held and await): like exclusive time,
                    // across lanes
                    None => p.bare_ns - union_ns(p.enclosed) + p.task_held,
                };
                let awaited = (union_ns(p.task_roots) - p.task_held).max(0);
                (union_ns(p.roots), held, awaited, p.task_awaits)
            })
            .collect();
        ThreadTimes {
            covered: parts.iter().map(|p| p.0).collect(),
            held: parts.iter().map(|p| p.1).collect(),
            awaited: parts.iter().map(|p| p.2).collect(),
            task_awaits: parts.iter().map(|p| p.3).collect(),
        }
    }
}

/// Per slot, the task-step ns of the thread-table rows of `rank` in it (summed over rows
/// sharing an index), `None` when not recorded (or the slot has no row). One pass.
fn thread_task_steps(run: &Run, rank: u32, slots: &SlotIndex<'_>) -> Vec<Option<i64>> {
    let mut out: Vec<Option<Option<i64>>> = vec![None; slots.len()];
    for t in run.rank_threads(rank) {
        let Some(s) = slots.get(t.index) else { continue };
        let v = (t.task_step_ns >= 0).then_some(t.task_step_ns);
        out[s] = Some(match out[s] {
            None => v,
            Some(sum) => sum.zip(v).map(|(a, b)| a + b),
        });
    }
    out.into_iter().map(Option::flatten).collect()
}

/// The summary rows of `threads` (the thread table's rows of `rank`, in order), then one per
/// unlisted thread id.
fn summary_rows(
    run: &Run,
    rank: u32,
    threads: &[&ThreadRow],
    counted: &ThreadCalls,
    times: &ThreadTimes,
) -> Vec<ThreadSummaryRow> {
    let has_await = rank_has_await(run, rank);
    let run_end = run_end_ns(run, rank);
    let slot = &counted.slot;
    let ThreadTimes { covered, held, awaited, task_awaits } = times;
    // unsound values (`ThreadRow::problems`) are unknown here, never a negative time
    let mut rows: Vec<ThreadSummaryRow> = threads
        .iter()
        .map(|t| {
            let s = slot[&t.index];
            let alive = t.end_ns == crate::run::UNKNOWN;
            let end = if alive { run_end } else { t.sound_end_ns() };
            ThreadSummaryRow {
                index: t.index,
                name: t.name.clone(),
                listed: true,
                alive,
                wall_time: end.zip(t.sound_start_ns()).map(|(e, b)| secs(e) - secs(b)),
                cpu_time: t.sound_cpu_run_ns().map(secs),
                cpu_time_total: t.sound_cpu_ns().map(secs),
                num_calls: counted.num_calls[s],
                region_time: secs(covered[s]),
                held_time: has_await.then(|| secs(held[s])),
                await_time: has_await.then(|| secs(awaited[s])),
                task_step_time: (t.task_step_ns >= 0).then(|| secs(t.task_step_ns)),
                task_await_time_sum: has_await.then(|| secs(task_awaits[s])),
                ready_wait_time: (t.ready_wait_ns >= 0).then(|| secs(t.ready_wait_ns)),
                idle_time: (t.loop_idle_ns >= 0).then(|| secs(t.loop_idle_ns)),
            }
        })
        .collect();
    rows.extend(counted.unlisted.iter().map(|&(t, n)| {
        let s = slot[&t];
        ThreadSummaryRow {
            index: t,
            name: format!("thread {t}"),
            listed: false,
            alive: false,
            wall_time: None,
            cpu_time: None,
            cpu_time_total: None,
            num_calls: n,
            region_time: secs(covered[s]),
            held_time: has_await.then(|| secs(held[s])),
            await_time: has_await.then(|| secs(awaited[s])),
            task_step_time: None,
            task_await_time_sum: has_await.then(|| secs(task_awaits[s])),
            ready_wait_time: None,
            idle_time: None,
        }
    }));
    rows
}

/// Thread index -> slot of `thread_summary`'s tables: a dense vector for the usual small
/// non-negative indices (a HashMap probe per call is the cost of the summary otherwise),
/// else the map.
struct SlotIndex<'a> {
    dense: Option<Vec<usize>>,
    map: &'a HashMap<i64, usize>,
}

impl<'a> SlotIndex<'a> {
    fn new(map: &'a HashMap<i64, usize>) -> Self {
        let max_index = map.keys().copied().max().unwrap_or(-1);
        let dense = (0..(1 << 20)).contains(&max_index).then(|| {
            let mut d = vec![usize::MAX; max_index as usize + 1];
            for (&index, &s) in map {
                if index >= 0 {
                    d[index as usize] = s;
                }
            }
            d
        });
        SlotIndex { dense, map }
    }

    /// The number of slots (they are numbered densely from 0).
    fn len(&self) -> usize {
        self.map.len()
    }

    fn get(&self, t: i64) -> Option<usize> {
        match &self.dense {
            Some(d) => usize::try_from(t).ok().and_then(|t| d.get(t)).copied().filter(|&s| s != usize::MAX),
            None => self.map.get(&t).copied(),
        }
    }
}

/// What is wrong with `rank`'s thread table, given its summary `rows` (from
/// [`thread_summary`]): the rows whose times no recording gives ([`ThreadRow::problems`],
/// shown as unknown in the summary) and the thread ids that calls carry but the table has
/// no row for (listed as `thread N` with unknown times). `None` for a sound table. One
/// message naming the table, each bad row (its position in the run's thread table, ranks
/// ascending: the file's row for files written in rank order) and the problem; the caller
/// adds the file. A damaged table never gives negative times or uncounted calls without a
/// word.
pub fn thread_table_note(run: &Run, rank: u32, rows: &[ThreadSummaryRow]) -> Option<String> {
    const SHOWN: usize = 5;
    let bad: Vec<String> = run
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| t.rank == rank)
        .filter_map(|(k, t)| {
            let p = t.problems();
            (!p.is_empty())
                .then(|| format!("row {k} (thread {} {}): {}", t.index, crate::py_repr(&t.name), p.join(", ")))
        })
        .collect();
    let unlisted: Vec<&ThreadSummaryRow> = rows.iter().filter(|r| !r.listed).collect();
    if bad.is_empty() && unlisted.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !bad.is_empty() {
        let more = if bad.len() > SHOWN { format!("; and {} more row(s)", bad.len() - SHOWN) } else { String::new() };
        parts.push(format!(
            "thread_table of rank {rank} has times no recording gives, shown as unknown (-): {}{more}",
            bad[..bad.len().min(SHOWN)].join("; ")
        ));
    }
    if !unlisted.is_empty() {
        let calls: i64 = unlisted.iter().map(|r| r.num_calls).sum();
        let ids: Vec<String> = unlisted.iter().take(SHOWN).map(|r| r.index.to_string()).collect();
        let more = if unlisted.len() > SHOWN { format!(" and {} more", unlisted.len() - SHOWN) } else { String::new() };
        parts.push(format!(
            "{calls} call(s) on rank {rank} carry thread id(s) {}{more} with no thread_table row: listed as \
             `thread N` with unknown times",
            ids.join(", ")
        ));
    }
    Some(format!("{}. The file is damaged.", parts.join("; ")))
}

/// What the lane summaries of a rank read without its calls (`read_h5_summary`,
/// [`Run::summary_only`]) cannot say: their calls and region times (given as 0, as 0.7.5
/// gives them). `None` for a rank with its calls.
pub fn summary_only_note(run: &Run, rank: u32) -> Option<&'static str> {
    run.summary_only(rank)
        .then_some("calls and region times per thread and task: not in a summary-only read (read_h5 loads the calls)")
}

/// Why `thread_summary(rank)` is empty, when it is because the rank has calls but no thread
/// table: the run was recorded without `track_threads` (0.7.5 returns `[]` silently).
/// `None` when the rank has a thread table, or no calls either.
pub fn no_thread_table_note(run: &Run, rank: u32) -> Option<String> {
    if run.rank_threads(rank).next().is_some() || run.rank_rows(rank).next().is_none() {
        return None;
    }
    Some(format!(
        "thread_summary(rank={rank}) is empty: the run was recorded without track_threads, so it has no \
         thread table. Record with track_threads=True (scope-profiler run --track-threads) for one row per thread."
    ))
}

/// A note when `rank`'s calls look like an event loop's tasks (asyncio, gevent) recorded
/// without `track_async`: the rank has thread ids but no task ids, and calls on a thread's
/// lane were set aside because they overlap without nesting (coroutines suspended inside
/// regions interleave their calls on the one thread that runs them). Says to record with
/// `--track-async` / `track_async=True`, not only at a missing `sp_end`. `None` otherwise.
pub fn untracked_tasks_note(run: &Run, rank: u32, calls: &CallArrays) -> Option<String> {
    let threads = run.rank_rows(rank).any(|r| r.thread_ids.is_some());
    let tasks = run.rank_rows(rank).any(|r| r.task_ids.is_some());
    if !threads || tasks || calls.lane.is_empty() {
        return None;
    }
    let crossed = calls.set_aside.iter().filter(|a| calls.lane_of(a.call as usize) <= -2).count();
    (crossed > 0).then(|| {
        format!(
            "{crossed} call(s) on rank {rank} overlap others on the same thread without nesting, as the \
             calls of asyncio tasks or greenlets do when they are suspended inside a region: their \
             times are not per task. If this program runs an event loop, record it with --track-async \
             (track_async=True), which gives each task its own lane and its await time."
        )
    })
}

/// Lane labels of one rank with O(1) lookups, for labelling many lanes (exports).
/// Gives exactly [`lane_label`]'s strings.
pub struct LaneLabels<'a> {
    threads: HashMap<i64, &'a ThreadRow>,
    tasks: HashMap<i64, &'a TaskRow>,
}

impl<'a> LaneLabels<'a> {
    /// Index the thread and task tables of `rank` (first row wins on a duplicate index).
    pub fn new(run: &'a Run, rank: u32) -> Self {
        let mut threads = HashMap::new();
        for t in run.rank_threads(rank) {
            threads.entry(t.index).or_insert(t);
        }
        let mut tasks = HashMap::new();
        for t in run.rank_tasks(rank) {
            tasks.entry(t.index).or_insert(t);
        }
        LaneLabels { threads, tasks }
    }

    /// The name of thread `index`, `"thread {index}"` when the table has no such row.
    pub fn thread_label(&self, index: i64) -> String {
        match self.threads.get(&index) {
            Some(t) => t.name.clone(),
            None => format!("thread {index}"),
        }
    }

    /// See [`lane_label`].
    pub fn label(&self, lane: i64) -> String {
        if lane >= 0 {
            match self.tasks.get(&lane) {
                Some(task) => {
                    let thread_lane = -2 - task.thread_index;
                    let on = if thread_lane <= -2 {
                        self.thread_label(task.thread_index)
                    } else if thread_lane == -1 {
                        "unknown lane".to_string()
                    } else {
                        // A negative thread index below -1 would point at a task lane; the
                        // reference recurses forever there.
                        format!("thread {}", task.thread_index)
                    };
                    let tail = task.coro_name.rsplit('.').next().unwrap_or("");
                    format!("{} ({}) on {}", task.name, tail, on)
                }
                None => format!("task {lane}"),
            }
        } else if lane == -1 {
            "unknown lane".to_string()
        } else {
            self.thread_label(-2 - lane)
        }
    }
}

/// `lane_label(lane, rank)`: "MainThread", "Task-2 (fetch) on MainThread", "unknown lane", ...
///
/// * `lane >= 0` (task): `"{task.name} ({last dotted part of coro_name}) on {thread label}"`
///   when the rank's task table has that index, else `"task {lane}"`;
/// * `lane == -1`: `"unknown lane"`;
/// * `lane <= -2`: thread index `-2 - lane`: its name, else `"thread {index}"`.
pub fn lane_label(run: &Run, lane: i64, rank: u32) -> String {
    LaneLabels::new(run, rank).label(lane)
}
