//! Lanes seen by people: labels and per-thread summaries (`spec-results.md` §4).
use std::collections::HashMap;

use rayon::prelude::*;

use crate::callstack::{split_by_lane, CallArrays, LaneSplit, NestingError};
use crate::rank_calls::rank_call_arrays;
use crate::run::{secs, Run, TaskRow, ThreadRow};

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
///
/// `wall_time` = `end_ns/1e9 − start_ns/1e9` (s, float arithmetic in that order like the
/// reference), `None` while alive; `cpu_time` = `cpu_ns/1e9`; `num_calls` counts calls whose
/// thread id is the row's index; `region_time` = Σ durations (ns, then /1e9) of root calls on
/// the thread's bare lane `-2-index` and on every task lane whose `thread_index == index`.
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
/// [`rank_call_arrays`]); O(calls + threads + tasks).
pub fn thread_summary_from(run: &Run, rank: u32, calls: &CallArrays) -> Vec<ThreadSummaryRow> {
    if run.rank_threads(rank).next().is_none() {
        return Vec::new();
    }
    let split = if calls.lane.is_empty() { LaneSplit::default() } else { split_by_lane(calls) };
    thread_summary_split(run, rank, calls, &split)
}

/// [`thread_summary_from`] given the lane split of `calls` too (the cached reconstruction's):
/// root time is summed per lane, and without task columns a thread's call count is the size
/// of its lane - O(lanes) instead of a pass over the calls.
pub fn thread_summary_split(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit) -> Vec<ThreadSummaryRow> {
    crate::par::install(|| thread_summary_on_pool(run, rank, calls, split))
}

fn thread_summary_on_pool(run: &Run, rank: u32, calls: &CallArrays, split: &LaneSplit) -> Vec<ThreadSummaryRow> {
    let threads: Vec<&ThreadRow> = run.rank_threads(rank).collect();
    if threads.is_empty() {
        return Vec::new();
    }

    // Thread index -> (num_calls, root ns); rows sharing an index share the entry.
    let mut slot: HashMap<i64, usize> = HashMap::with_capacity(threads.len());
    for t in &threads {
        let next = slot.len();
        slot.entry(t.index).or_insert(next);
    }
    let mut num_calls = vec![0i64; slot.len()];
    let mut root_ns = vec![0i64; slot.len()];

    // Dense lookup for the usual small non-negative thread indices (a HashMap probe per
    // call is the cost of this function otherwise).
    let max_index = threads.iter().map(|t| t.index).max().unwrap_or(-1);
    let dense: Option<Vec<usize>> = (0..(1 << 20)).contains(&max_index).then(|| {
        let mut d = vec![usize::MAX; max_index as usize + 1];
        for (&index, &s) in &slot {
            if index >= 0 {
                d[index as usize] = s;
            }
        }
        d
    });
    let slot_of = |t: i64| -> Option<usize> {
        match &dense {
            Some(d) => usize::try_from(t).ok().and_then(|t| d.get(t)).copied().filter(|&s| s != usize::MAX),
            None => slot.get(&t).copied(),
        }
    };
    // Calls per thread. Without task columns a call's lane is -2 - its thread id (or -1),
    // so the count is the lane's size; else the rows' thread columns, counted in parallel.
    let tasks_recorded = run.rank_rows(rank).any(|r| r.task_ids.is_some());
    if !tasks_recorded {
        for (lane, ids) in split.iter() {
            if lane <= -2 {
                if let Some(s) = slot_of(-2 - lane) {
                    num_calls[s] += ids.len() as i64;
                }
            }
        }
    }
    let columns: Vec<&[i64]> = if !tasks_recorded {
        Vec::new()
    } else {
        run.rank_rows(rank).filter_map(|r| r.thread_ids.as_ref().map(|a| &a.values()[..])).collect()
    };
    let chunks: Vec<&[i64]> = columns.iter().flat_map(|c| c.chunks(1 << 16)).collect();
    for counts in chunks
        .par_iter()
        .map(|ids| {
            let mut counts = vec![0i64; num_calls.len()];
            for &t in ids.iter() {
                if let Some(s) = slot_of(t) {
                    counts[s] += 1;
                }
            }
            counts
        })
        .collect::<Vec<_>>()
    {
        for (total, c) in num_calls.iter_mut().zip(counts) {
            *total += c;
        }
    }

    // Root ns per lane, then per thread: a thread's bare lane, and every task lane whose
    // task rows name the thread (each distinct thread once).
    let mut task_threads: Vec<(i64, i64)> = run.rank_tasks(rank).map(|t| (t.index, t.thread_index)).collect();
    task_threads.sort_unstable();
    for (lane, ns) in root_ns_per_lane(calls, split) {
        if lane <= -2 {
            if let Some(s) = slot_of(-2 - lane) {
                root_ns[s] += ns;
            }
        } else if lane >= 0 {
            let from = task_threads.partition_point(|&(k, _)| k < lane);
            let mut last_slot = usize::MAX;
            for &(_, th) in task_threads[from..].iter().take_while(|&&(k, _)| k == lane) {
                if let Some(s) = slot_of(th) {
                    if s != last_slot {
                        root_ns[s] += ns;
                        last_slot = s;
                    }
                }
            }
        }
    }

    threads
        .iter()
        .map(|t| {
            let s = slot[&t.index];
            let alive = t.end_ns == crate::run::UNKNOWN;
            ThreadSummaryRow {
                index: t.index,
                name: t.name.clone(),
                alive,
                wall_time: if alive { None } else { Some(secs(t.end_ns) - secs(t.start_ns)) },
                cpu_time: secs(t.cpu_ns),
                num_calls: num_calls[s],
                region_time: secs(root_ns[s]),
            }
        })
        .collect()
}

/// `(lane, Σ root durations ns)` per lane of `split` (lanes in parallel).
fn root_ns_per_lane(calls: &CallArrays, split: &LaneSplit) -> Vec<(i64, i64)> {
    (0..split.len())
        .into_par_iter()
        .map(|k| {
            let (lane, ids) = split.get(k);
            let ns = ids
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| calls.parent[i] < 0)
                .map(|i| calls.end_ns[i] - calls.start_ns[i])
                .sum::<i64>();
            // set-aside calls are roots that overlap the lane's other roots: not counted
            let aside = calls
                .set_aside
                .iter()
                .map(|a| a.call as usize)
                .filter(|&i| calls.lane_of(i) == lane)
                .map(|i| calls.end_ns[i] - calls.start_ns[i])
                .sum::<i64>();
            (lane, ns - aside)
        })
        .collect()
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

    fn thread_label(&self, index: i64) -> String {
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
