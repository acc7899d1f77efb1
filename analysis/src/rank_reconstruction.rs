//! Reconstruction of one rank of a [`Run`], and what is derived from it: call ids at
//! finalize, per-call exclusive time per row.
use std::collections::HashMap;

use arrow_array::Int64Array;

use crate::call_numbering::Numbered;
use crate::callstack::{build_lenient, CallArrays, LaneSplit, NestingError, RegionInput};
use crate::packed_ids::IdColumn;
use crate::run::{RegionCalls, Run};

/// The rows of `rank` in reconstruction order: region-table order (the reference iterates
/// its regions by name order), ties (duplicate rows) in file order. For a file or snapshot
/// whose rows follow region registration order this is file order.
pub(crate) fn rank_rows_ordered(run: &Run, rank: u32) -> Vec<usize> {
    let mut rows: Vec<usize> = run.regions.iter().enumerate().filter(|(_, r)| r.rank == rank).map(|(i, _)| i).collect();
    rows.sort_by_key(|&i| run.regions[i].region); // stable: file order on ties
    rows
}

/// The [`RegionInput`] of one row (name from `run.region_names`, `"?"` if out of range).
pub fn region_input<'a>(run: &'a Run, row: &'a RegionCalls) -> RegionInput<'a> {
    RegionInput {
        name: run.region_names.get(row.region as usize).map(String::as_str).unwrap_or("?"),
        start_ns: row.start_ns.values(),
        end_ns: row.end_ns.values(),
        thread_ids: row.thread_ids.as_ref().map(|a| &a.values()[..]),
        task_ids: row.task_ids.as_ref().map(|a| &a.values()[..]),
    }
}

/// Reconstruct all rows of `rank`. `CallArrays::region_index` then indexes `rows`, the
/// returned list of positions in `run.regions`. `rows` is in region-table order (the
/// reference's input order, which decides the parent on exactly identical intervals); for
/// rows written in registration order that is file order. Lenient ([`build_lenient`]): on a
/// rank with lanes, calls that do not nest are set aside, not an error.
///
/// Errors: [`NestingError`] as [`build_lenient`].
pub fn rank_call_arrays(run: &Run, rank: u32) -> Result<(Vec<usize>, CallArrays), NestingError> {
    rank_reconstruction(run, rank).map(|(rows, calls, _)| (rows, calls))
}

/// [`rank_call_arrays`] plus the lane split computed on the way (see [`build_lenient`]).
#[allow(clippy::type_complexity)]
pub fn rank_reconstruction(run: &Run, rank: u32) -> Result<(Vec<usize>, CallArrays, Option<LaneSplit>), NestingError> {
    let rows = rank_rows_ordered(run, rank);
    let inputs: Vec<RegionInput<'_>> = rows.iter().map(|&i| region_input(run, &run.regions[i])).collect();
    let (mut calls, split) = build_lenient(&inputs)?;
    if let Some(steps) = TaskSteps::of(run, &rows) {
        steps.take_from_exclusive(&mut calls);
    }
    Ok((rows, calls, split))
}

/// The task-step ns of the calls of a rank's rows ([`RegionCalls::task_step_ns`]): the time a
/// call on a thread's own lane left its thread to task steps. Those stretches are the task
/// lanes' time, so a call's exclusive time is its duration less its children's durations on
/// its lane, less its own task-step time, plus its children's (theirs lie inside its own):
/// the time it ran outside its children and outside task steps. `__main__.<module>` around
/// `asyncio.run(main())` is then not charged with `main`'s work.
pub(crate) struct TaskSteps<'a> {
    /// Per row (reconstruction order), its task-step column.
    columns: Vec<Option<&'a [i64]>>,
}

impl<'a> TaskSteps<'a> {
    /// `None` when no row of `rows` records task steps (runs without `track_async`, old files).
    pub(crate) fn of(run: &'a Run, rows: &[usize]) -> Option<Self> {
        let columns: Vec<Option<&[i64]>> =
            rows.iter().map(|&i| run.regions[i].task_step_ns.as_ref().map(|a| &a.values()[..])).collect();
        columns.iter().any(Option::is_some).then_some(TaskSteps { columns })
    }

    /// Task-step ns of call `index` of row `row`, clamped to `[0, duration]` (a damaged
    /// file's value outside it would make exclusive time negative or larger than duration).
    #[inline]
    pub(crate) fn get(&self, row: usize, index: usize, duration: i64) -> i64 {
        let v = self.columns.get(row).copied().flatten().and_then(|c| c.get(index).copied()).unwrap_or(0);
        v.clamp(0, duration.max(0))
    }

    /// Apply the rule (see the type) to the per-row exclusive totals of a streaming
    /// numbering of `rows`: a call's task steps leave its row's total and return to its
    /// parent's row. A parent is found among the calls with task steps (a parent encloses
    /// its child, so it ran at least the child's steps). Returns false, the totals then
    /// partly changed, when a parent is not there (a damaged column): the caller takes the
    /// general reconstruction instead.
    pub(crate) fn take_from_totals(&self, run: &Run, rows: &[usize], numbered: &mut Numbered) -> bool {
        // (row, call id, parent id, task-step ns) of every call with task steps
        let mut with_steps: Vec<(usize, i64, i64, i64)> = Vec::new();
        for (k, &r) in rows.iter().enumerate() {
            let Some(col) = self.columns[k] else { continue };
            let row = &run.regions[r];
            let (start, end) = (row.start_ns.values(), row.end_ns.values());
            let mut ids: Option<(Vec<i64>, Vec<i64>)> = None;
            for (i, &v) in col.iter().enumerate() {
                let s = if v > 0 && i < start.len().min(end.len()) { self.get(k, i, end[i] - start[i]) } else { 0 };
                if s == 0 {
                    continue;
                }
                let (id, parent) =
                    ids.get_or_insert_with(|| (numbered.call_ids[k].to_vec(), numbered.parent_ids[k].to_vec()));
                with_steps.push((k, id[i], parent[i], s));
            }
        }
        let row_of: HashMap<i64, usize> = with_steps.iter().map(|&(k, id, _, _)| (id, k)).collect();
        for &(k, _, parent, s) in &with_steps {
            numbered.exclusive_totals[k] -= s;
            if parent >= 0 {
                match row_of.get(&parent) {
                    Some(&pk) => numbered.exclusive_totals[pk] += s,
                    None => return false,
                }
            }
        }
        true
    }

    /// Apply the rule (see the type) to `calls.exclusive_ns`.
    pub(crate) fn take_from_exclusive(&self, calls: &mut CallArrays) {
        for id in 0..calls.len() {
            let d = calls.end_ns[id] - calls.start_ns[id];
            let s = self.get(calls.region_index[id] as usize, calls.call_index[id] as usize, d);
            if s == 0 {
                continue;
            }
            calls.exclusive_ns[id] -= s;
            let p = calls.parent[id];
            if p >= 0 {
                calls.exclusive_ns[p as usize] += s;
            }
        }
    }
}

/// Scatter a per-call value (indexed by call id) back to every row's recorded order.
/// Returns one `(position in run.regions, values)` per row of `rows`, in `rows` order.
fn scatter_by_row(
    run: &Run,
    rows: &[usize],
    calls: &CallArrays,
    value: impl Fn(usize) -> i64,
) -> Vec<(usize, Vec<i64>)> {
    let mut out: Vec<(usize, Vec<i64>)> = rows.iter().map(|&r| (r, vec![0i64; run.regions[r].len()])).collect();
    for id in 0..calls.len() {
        let (ri, ci) = (calls.region_index[id] as usize, calls.call_index[id] as usize);
        out[ri].1[ci] = value(id);
    }
    out
}

/// At finalize: give every call of `rank` a call id `base + sorted position` and a parent id
/// (`base + parent position`, `-1` for roots), stored in recording order as each row's
/// `call_ids`/`parent_ids`; set each row's `exclusive_total_ns` (Σ exclusive ns of its calls).
/// Returns the next base (`base + number of calls`).
/// On `NestingError` nothing is changed (the caller drops the call graph and warns).
///
/// [`number_rank`] then [`CallNumbering::apply`]: callers that have other work on the run
/// meanwhile (the HDF5 writer's encoding of the columns that do not depend on call ids) do
/// the two steps themselves.
pub fn assign_call_ids(run: &mut Run, rank: u32, base: i64) -> Result<i64, NestingError> {
    Ok(number_rank(run, rank, base)?.apply(run))
}

/// The call ids, parent ids and exclusive totals [`assign_call_ids`] gives the rows of one
/// rank, computed from a shared `&Run` (so other readers of the run can run alongside), not
/// yet stored.
pub struct CallNumbering {
    /// Per row: (position in `run.regions`, call ids, parent ids, Σ exclusive ns).
    rows: Vec<(usize, IdColumn, IdColumn, i64)>,
    next: i64,
}

impl CallNumbering {
    /// Store the numbering in `run` (the run it was computed from, unchanged since in its
    /// rows and their calls); returns the next base (`base + number of calls`).
    pub fn apply(self, run: &mut Run) -> i64 {
        for (row, ids, parents, total) in self.rows {
            let r = &mut run.regions[row];
            r.call_ids = Some(ids);
            r.parent_ids = Some(parents);
            r.exclusive_total_ns = Some(total);
        }
        self.next
    }
}

/// [`assign_call_ids`]'s numbering of `rank` from `base`, without storing it.
///
/// Cost: one streaming merge of the rank's sorted runs ([`crate::call_numbering`]), no
/// reconstruction; the general reconstruction only for what that pass leaves (its errors).
///
/// Errors: [`NestingError`] when the rank's calls cannot be reconstructed.
pub fn number_rank(run: &Run, rank: u32, base: i64) -> Result<CallNumbering, NestingError> {
    let rows = rank_rows_ordered(run, rank);
    let numbered = {
        let inputs: Vec<RegionInput<'_>> = rows.iter().map(|&i| region_input(run, &run.regions[i])).collect();
        let n: usize = inputs.iter().map(|r| r.start_ns.len()).sum();
        (n <= i32::MAX as usize).then(|| crate::call_numbering::number_calls(&inputs, base)).flatten()
    };
    if let Some(mut numbered) = numbered {
        if let Some(steps) = TaskSteps::of(run, &rows) {
            if !steps.take_from_totals(run, &rows, &mut numbered) {
                return number_in_general(run, rank, base);
            }
        }
        let n: usize = numbered.call_ids.iter().map(IdColumn::len).sum();
        let columns = numbered.call_ids.into_iter().zip(numbered.parent_ids).zip(numbered.exclusive_totals);
        let rows = rows.iter().zip(columns).map(|(&row, ((ids, parents), total))| (row, ids, parents, total)).collect();
        return Ok(CallNumbering { rows, next: base + n as i64 });
    }
    number_in_general(run, rank, base)
}

/// [`number_rank`] through the general reconstruction ([`rank_call_arrays`]).
fn number_in_general(run: &Run, rank: u32, base: i64) -> Result<CallNumbering, NestingError> {
    let (rows, calls) = rank_call_arrays(run, rank)?;
    let ids = scatter_by_row(run, &rows, &calls, |id| base + id as i64);
    let parents = scatter_by_row(run, &rows, &calls, |id| {
        let p = calls.parent[id];
        if p < 0 {
            -1
        } else {
            base + p as i64
        }
    });
    let mut totals = vec![0i64; rows.len()];
    for id in 0..calls.len() {
        totals[calls.region_index[id] as usize] += calls.exclusive_ns[id];
    }
    let rows = ids
        .into_iter()
        .zip(parents)
        .zip(totals)
        .map(|(((row, id_vals), (_, parent_vals)), total)| {
            (row, Int64Array::from(id_vals).into(), Int64Array::from(parent_vals).into(), total)
        })
        .collect();
    Ok(CallNumbering { rows, next: base + calls.len() as i64 })
}

/// Per-call exclusive ns of every row of `rank`: `(position in run.regions, values in the
/// row's recorded order)`, rows in ascending position (file order).
///
/// Errors: [`NestingError`] when the rank's calls cannot be reconstructed.
pub fn exclusive_by_row(run: &Run, rank: u32) -> Result<Vec<(usize, Vec<i64>)>, NestingError> {
    let (rows, calls) = rank_call_arrays(run, rank)?;
    Ok(exclusive_from(run, &rows, &calls))
}

/// [`exclusive_by_row`] from an existing reconstruction (`rows`, `calls` of [`rank_call_arrays`]).
pub fn exclusive_from(run: &Run, rows: &[usize], calls: &CallArrays) -> Vec<(usize, Vec<i64>)> {
    let mut out = scatter_by_row(run, rows, calls, |id| calls.exclusive_ns[id]);
    out.sort_by_key(|(r, _)| *r);
    out
}

/// The one message about the calls of `rank` that a lenient reconstruction set aside
/// ([`CallArrays::set_aside`]), `None` when there are none: how many, and the first few with
/// region, call index, lane label and times (s from the rank's first call start), each with
/// the call it crosses, then their likely cause.
pub fn set_aside_report(run: &Run, rank: u32, rows: &[usize], calls: &CallArrays) -> Option<String> {
    set_aside_calls(run, rank, rows, calls)
        .map(|list| format!("{list}. Likely cause: {}.", set_aside_causes(run, rank, calls).join("; or ")))
}

/// [`set_aside_report`] without the likely cause: for a summary whose next note says it
/// (an event loop's tasks recorded without `track_async`, [`crate::untracked_tasks_note`]).
pub fn set_aside_calls(run: &Run, rank: u32, rows: &[usize], calls: &CallArrays) -> Option<String> {
    const SHOWN: usize = 3;
    if calls.set_aside.is_empty() {
        return None;
    }
    let labels = crate::lane_summary::LaneLabels::new(run, rank);
    let origin = calls.start_ns.iter().copied().min().unwrap_or(0);
    let at = |ns: i64| (ns - origin) as f64 / 1e9;
    let call = |id: usize| {
        let row = &run.regions[rows[calls.region_index[id] as usize]];
        let name = run.region_names.get(row.region as usize).map(String::as_str).unwrap_or("?");
        format!(
            "{} call {} [{:.9}, {:.9}] s",
            crate::py_repr(name),
            calls.call_index[id],
            at(calls.start_ns[id]),
            at(calls.end_ns[id])
        )
    };
    let shown: Vec<String> = calls
        .set_aside
        .iter()
        .take(SHOWN)
        .map(|a| {
            let (i, p) = (a.call as usize, a.crossed as usize);
            format!("{} on {} starts inside {} but ends after it", call(i), labels.label(calls.lane_of(i)), call(p))
        })
        .collect();
    let more = calls.set_aside.len().saturating_sub(SHOWN);
    Some(format!(
        "{} call(s) on rank {rank} do not nest in their lane and were set aside (kept in the data; left out of their neighbours' exclusive time, root time, exports and timelines): {}{}",
        calls.set_aside.len(),
        shown.join("; "),
        if more > 0 { format!("; and {more} more") } else { String::new() },
    ))
}

/// What likely made the set-aside calls of `rank` cross another call on their lane, from the
/// lanes they are on, rather than always blaming generators. One cause per kind of lane, in the order unknown lane, thread lane, task lane:
/// * the unknown lane (-1: calls without a thread id): threads recorded without
///   `track_threads`, whose calls share one stack;
/// * a thread's lane in a rank without task ids: a generator advanced inside another region,
///   or an event loop's tasks recorded without `track_async`;
/// * a thread's lane with task ids, or a task's lane: a generator (`yield` inside a region).
pub fn set_aside_causes(run: &Run, rank: u32, calls: &CallArrays) -> Vec<&'static str> {
    let tasks = run.rank_rows(rank).any(|r| r.task_ids.is_some());
    let mut kinds = [false; 3];
    for a in &calls.set_aside {
        let lane = calls.lane_of(a.call as usize);
        kinds[if lane == -1 {
            0
        } else if lane <= -2 && !tasks {
            1
        } else {
            2
        }] = true;
    }
    const CAUSES: [&str; 3] = [
        "calls of several threads recorded without track_threads (--track-threads) share one stack",
        "a generator timed over its iteration (a yield inside a region) advanced inside another region, or an event loop's tasks recorded without track_async (--track-async)",
        "a generator or async generator timed over its iteration (a yield inside a region) advanced inside another region",
    ];
    kinds.iter().zip(CAUSES).filter(|(k, _)| **k).map(|(_, c)| c).collect()
}
