//! Call-stack reconstruction per lane (`spec-callstack.md`).
//!
//! Regions store only `(start_ns, end_ns)` per call; nesting is recovered from
//! containment, per lane. Sorted order is start ascending, end descending, then input
//! position (region order, then call order); call id = position in that order.
//!
//! Cost: the sorted order (`order.rs`: a k-way merge of the few sorted runs recorded
//! data consists of, or a bucket sort; parallel, written straight into the output columns),
//! then one stack walk per lane (lanes in parallel, a single stack cut where it is empty; a
//! lane's open-call stack is a linked list through `parent`, so there is no per-call
//! allocation): about linear, whatever the number of lanes.
//!
//! Index columns (`region_index`, `call_index`, `depth`, `parent`, `lane`) are `i32`: half
//! the memory of `i64` on what is the largest structure of an analysis. A rank therefore
//! holds fewer than 2^31 calls (about 100 GB of recorded data), and thread and task ids
//! fit in `i32`; beyond that [`build_call_arrays`] returns an error instead of wrapping.

use std::collections::HashMap;

use rayon::prelude::*;
use thiserror::Error;

use crate::call_order::{sorted_columns, SortedColumns, CHUNK, PARALLEL_MIN};
use crate::column_memory::{Column, ColumnPtr};
use crate::python_text::py_repr;

/// Recorded calls cannot form a call tree (overlap without nesting, or end < start).
/// The message follows the reference's wording (see `spec-callstack.md` §3).
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{0}")]
pub struct NestingError(pub String);

/// One region's calls as input to [`build_call_arrays`]. Slices are ns on the recording clock.
///
/// `start_ns` and `end_ns` must have the same length (else [`build_call_arrays`] returns a
/// [`NestingError`]); the lane columns, when present, are read per call with a missing
/// entry meaning `-1`.
#[derive(Debug, Clone, Copy)]
pub struct RegionInput<'a> {
    /// Region name (used in error messages).
    pub name: &'a str,
    /// Call starts, ns, in recorded order.
    pub start_ns: &'a [i64],
    /// Call ends, ns, same length as `start_ns`.
    pub end_ns: &'a [i64],
    /// Thread-table index per call, if the region has a thread column.
    pub thread_ids: Option<&'a [i64]>,
    /// Task-table index per call (-1 outside tasks), if the region has a task column.
    pub task_ids: Option<&'a [i64]>,
}

/// Reconstructed calls of one rank, indexed by call id (position in sorted order).
///
/// Every vector has length [`CallArrays::len`] except `lane`, which is empty when no input
/// region had a thread column ("one stack").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallArrays {
    /// Position of the call's region in the input slice.
    pub region_index: Vec<i32>,
    /// Position of the call in its region's own arrays.
    pub call_index: Vec<i32>,
    /// Call start, ns.
    pub start_ns: Vec<i64>,
    /// Call end, ns.
    pub end_ns: Vec<i64>,
    /// 0 = root of its lane.
    pub depth: Vec<i32>,
    /// Call id of the enclosing call on the same lane, -1 for a root.
    pub parent: Vec<i32>,
    /// Duration minus the durations of direct children on the same lane, ns.
    pub exclusive_ns: Vec<i64>,
    /// Lane per call (`spec-callstack.md` §1); empty when no region has a thread column.
    pub lane: Vec<i32>,
    /// Calls set aside by a lenient reconstruction ([`build_lenient`]), ascending ids: each
    /// started inside the call `crossed` on its lane but ended after it (a generator timed
    /// over its iteration and first advanced inside another region, say). A set-aside call
    /// stays in the arrays as a root (`parent` -1, depth 0, exclusive = its duration) and is
    /// nobody's parent; exports, timelines and root time leave it out. Always empty from
    /// [`build_call_arrays`], which raises instead.
    pub set_aside: Vec<SetAside>,
}

/// A call set aside by [`build_lenient`]: it starts inside `crossed` (a call id on the same
/// lane) and ends after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetAside {
    pub call: u32,
    pub crossed: u32,
}

impl CallArrays {
    /// Number of calls.
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }
    /// Whether there are no calls.
    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }
    /// Lane of call `id` (`-1` when the lane column is empty).
    #[inline]
    pub fn lane_of(&self, id: usize) -> i64 {
        if self.lane.is_empty() {
            -1
        } else {
            self.lane[id] as i64
        }
    }
    /// Largest depth (0 for a flat run), `None` without calls.
    pub fn max_depth(&self) -> Option<i64> {
        self.depth.iter().copied().max().map(i64::from)
    }
}

/// Lane of one call: `task_id` if >= 0, else `-2 - thread_id` if >= 0, else -1.
#[inline]
pub fn lane_id(thread_id: i64, task_id: i64) -> i64 {
    if task_id >= 0 {
        task_id
    } else if thread_id >= 0 {
        -2 - thread_id
    } else {
        -1
    }
}

/// Maps lane values to dense slots `0..num_slots`, slot order = ascending lane value.
pub(crate) enum LaneSlots {
    /// Lane values within a small range: slot = lane - min.
    Offset { min: i64, len: usize },
    /// Sparse lane values: sorted distinct values and their slots.
    Sparse { values: Vec<i64>, slot: HashMap<i64, usize> },
}

impl LaneSlots {
    /// Build from the lane value of every call (`lanes` non-empty).
    pub(crate) fn new(lanes: &[i32]) -> Self {
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for &l in lanes {
            min = min.min(l as i64);
            max = max.max(l as i64);
        }
        if lanes.is_empty() {
            return LaneSlots::Offset { min: 0, len: 0 };
        }
        let range = (max as i128) - (min as i128) + 1;
        if range <= 4 * lanes.len() as i128 + 4096 {
            LaneSlots::Offset { min, len: range as usize }
        } else {
            let mut values: Vec<i64> = lanes.iter().map(|&l| l as i64).collect();
            values.par_sort_unstable();
            values.dedup();
            let slot = values.iter().enumerate().map(|(i, &v)| (v, i)).collect();
            LaneSlots::Sparse { values, slot }
        }
    }
    #[inline]
    pub(crate) fn num_slots(&self) -> usize {
        match self {
            LaneSlots::Offset { len, .. } => *len,
            LaneSlots::Sparse { values, .. } => values.len(),
        }
    }
    #[inline]
    pub(crate) fn slot(&self, lane: i64) -> usize {
        match self {
            LaneSlots::Offset { min, .. } => (lane - min) as usize,
            LaneSlots::Sparse { slot, .. } => slot[&lane],
        }
    }
    #[inline]
    pub(crate) fn lane(&self, slot: usize) -> i64 {
        match self {
            LaneSlots::Offset { min, .. } => min + slot as i64,
            LaneSlots::Sparse { values, .. } => values[slot],
        }
    }
}

/// `'{name}' call {call_index} [{start}, {end}] ns`, the reference's call label.
fn call_label(regions: &[RegionInput<'_>], calls: &CallArrays, id: usize) -> String {
    let name = regions.get(calls.region_index[id] as usize).map(|r| r.name).unwrap_or("?");
    format!("{} call {} [{}, {}] ns", py_repr(name), calls.call_index[id], calls.start_ns[id], calls.end_ns[id])
}

/// Reconstruct nesting for the calls of `regions` (one rank).
///
/// Calls are sorted by start ascending, end descending, then input position (region order,
/// then call order); a call's id is its position in that order. Per lane (or for all calls
/// when no region has a thread column) a call's parent is the innermost earlier call on the
/// same lane still open at its start: a call `[s, e]` is closed at instant `t` when `e <= t`,
/// except that a zero-length call is still open at its own start (the reference's scaled
/// `2·end+1`). Exclusive time = duration − Σ durations of direct children, ns.
///
/// Cost: O(n log n) for the sort plus O(n) for the walk; memory O(n).
///
/// Errors: [`NestingError`] when a call ends before it starts
/// (`"a recorded call ends before it starts"`), when a region's `start_ns` and `end_ns`
/// differ in length, or when two calls on one lane overlap without nesting; that message
/// names the first offending child in sorted order and then its parent:
/// `recorded calls are not properly nested: 'B' call 0 [5, 15] ns starts inside 'A' call 0
/// [0, 10] ns but ends after it. Regions must nest completely or not overlap at all - check
/// for a missing or misordered sp_end / __exit__.`
///
/// Also an error (not a wrapped value): 2^31 calls or more, or a thread or task id beyond
/// the `i32` range (the index columns are `i32`, see the module documentation).
pub fn build_call_arrays(regions: &[RegionInput<'_>]) -> Result<CallArrays, NestingError> {
    build_with_lanes(regions).map(|(calls, _)| calls)
}

/// How a [`NestingError`] for calls that cross on one lane begins (the rest names them).
pub const NOT_NESTED: &str = "recorded calls are not properly nested";

/// [`build_call_arrays`] plus the lane split it computed on the way ([`split_by_lane`] of
/// the result; `None` when the calls have no lane column or a single lane).
pub fn build_with_lanes(regions: &[RegionInput<'_>]) -> Result<(CallArrays, Option<LaneSplit>), NestingError> {
    crate::pool::install(|| build_on_pool(regions, false))
}

/// [`build_with_lanes`] for a run's own analysis (summaries, exclusive times, exports,
/// timelines): when the calls have lanes (thread or task columns), a call that crosses the
/// call enclosing it on its lane is set aside ([`CallArrays::set_aside`]) instead of
/// failing the whole rank, and the rest is reconstructed as usual. Without lanes a crossing
/// is still a [`NestingError`]: there it means interleaved untracked threads, whose calls
/// cannot be told apart. Other errors as [`build_call_arrays`].
pub fn build_lenient(regions: &[RegionInput<'_>]) -> Result<(CallArrays, Option<LaneSplit>), NestingError> {
    let lenient = regions.iter().any(|r| r.thread_ids.is_some());
    crate::pool::install(|| build_on_pool(regions, lenient))
}

fn build_on_pool(regions: &[RegionInput<'_>], lenient: bool) -> Result<(CallArrays, Option<LaneSplit>), NestingError> {
    let mut n = 0usize;
    for r in regions {
        if r.start_ns.len() != r.end_ns.len() {
            return Err(NestingError(format!(
                "region {} has {} recorded starts but {} ends",
                py_repr(r.name),
                r.start_ns.len(),
                r.end_ns.len()
            )));
        }
        n += r.start_ns.len();
    }
    if n == 0 {
        return Ok((CallArrays::default(), None));
    }
    if n > i32::MAX as usize {
        return Err(NestingError(format!(
            "too many recorded calls to reconstruct on one rank: {n} (at most {})",
            i32::MAX
        )));
    }

    let Some(SortedColumns { start, end, region, call }) = sorted_columns(regions, n) else {
        return Err(NestingError("a recorded call ends before it starts".into()));
    };
    let has_lanes = regions.iter().any(|r| r.thread_ids.is_some());
    let lane = if has_lanes { lane_column(regions, &region, &call)? } else { Vec::new() };
    let mut calls =
        CallArrays { region_index: region, call_index: call, start_ns: start, end_ns: end, lane, ..Default::default() };
    let split = if has_lanes { LaneSplit::of(&calls.lane) } else { None };
    match walk(&calls.start_ns, &calls.end_ns, split.as_ref(), lenient) {
        Ok((parent, depth, exclusive_ns, set_aside)) => {
            calls.parent = parent;
            calls.depth = depth;
            calls.exclusive_ns = exclusive_ns;
            calls.set_aside = set_aside;
        }
        Err((child, parent)) => {
            return Err(NestingError(format!(
                "{NOT_NESTED}: {} starts inside {} but ends after it. Regions \
                 must nest completely or not overlap at all - check for a missing or misordered sp_end / \
                 __exit__.",
                call_label(regions, &calls, child),
                call_label(regions, &calls, parent),
            )));
        }
    }
    Ok((calls, split))
}

/// The lane of every call (`region`, `call` columns in sorted order), in parallel chunks.
/// Errors when a lane id does not fit `i32`.
fn lane_column(regions: &[RegionInput<'_>], region: &[i32], call: &[i32]) -> Result<Vec<i32>, NestingError> {
    let n = region.len();
    let mut lane: Column<i32> = Column::new(n);
    let out = lane.ptr();
    let fill = |k: usize| -> bool {
        let mut ok = true;
        for j in k * CHUNK..((k + 1) * CHUNK).min(n) {
            let reg = &regions[region[j] as usize];
            let i = call[j] as usize;
            let v = match reg.thread_ids {
                None => -1,
                Some(t) => {
                    let thread = t.get(i).copied().unwrap_or(-1);
                    let task = reg.task_ids.and_then(|k| k.get(i).copied()).unwrap_or(-1);
                    lane_id(thread, task)
                }
            };
            ok &= v >= i32::MIN as i64 && v <= i32::MAX as i64;
            // SAFETY: j < n; chunks are disjoint.
            unsafe { out.write(j, v as i32) };
        }
        ok
    };
    // every chunk runs (no short-circuit): all positions are written either way
    let ok = if n >= PARALLEL_MIN {
        (0..n.div_ceil(CHUNK)).into_par_iter().map(fill).collect::<Vec<bool>>().into_iter().all(|x| x)
    } else {
        (0..n.div_ceil(CHUNK)).map(fill).collect::<Vec<bool>>().into_iter().all(|x| x)
    };
    // SAFETY: the chunks tile 0..n and every position was written.
    let lane = unsafe { lane.finish() };
    if !ok {
        return Err(NestingError(format!(
            "thread or task ids beyond {} cannot be reconstructed (damaged lane columns?)",
            i32::MAX
        )));
    }
    Ok(lane)
}

/// The calls of each lane: lane `lanes[k]` holds call ids `order[offsets[k]..offsets[k + 1]]`,
/// ascending; lanes ascending (`spec-callstack.md` §4). Compressed rows: 4 bytes per call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaneSplit {
    /// Lane values, ascending.
    pub lanes: Vec<i32>,
    /// `lanes.len() + 1` offsets into `order`.
    pub offsets: Vec<usize>,
    /// Call ids grouped by lane, ascending within each lane.
    pub order: Vec<u32>,
}

impl LaneSplit {
    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }
    /// Whether there are no lanes (no calls).
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }
    /// Lane `k`: its value and its call ids.
    pub fn get(&self, k: usize) -> (i64, &[u32]) {
        (self.lanes[k] as i64, &self.order[self.offsets[k]..self.offsets[k + 1]])
    }
    /// `(lane, call ids)` per lane, ascending lanes.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (i64, &[u32])> + '_ {
        (0..self.len()).map(|k| self.get(k))
    }
    /// All `n` calls as the one lane `lane` (no lanes without calls).
    fn single(lane: i32, n: usize) -> LaneSplit {
        if n == 0 {
            return LaneSplit::default();
        }
        LaneSplit { lanes: vec![lane], offsets: vec![0, n], order: (0..n as u32).collect() }
    }

    /// Group a lane column (counting sort by lane slot). `None` for fewer than two lanes.
    fn of(lane: &[i32]) -> Option<LaneSplit> {
        let n = lane.len();
        let first = *lane.first()?;
        let one_lane = if n >= PARALLEL_MIN {
            lane.par_chunks(CHUNK).all(|c| c.iter().all(|&l| l == first))
        } else {
            lane.iter().all(|&l| l == first)
        };
        if one_lane {
            return None;
        }
        let slots = LaneSlots::new(lane);
        let num_slots = slots.num_slots();
        let slot = |l: i32| slots.slot(l as i64);
        // Counting sort by lane slot; for large inputs with few lanes, in parallel parts
        // (a count per part and slot, then each part scatters into its own slots).
        let parts = if n >= PARALLEL_MIN && num_slots <= 1 << 12 { rayon::current_num_threads().max(1) * 2 } else { 1 };
        let bound = |p: usize| p * n / parts;
        let mut cursors: Vec<Vec<usize>> = (0..parts)
            .into_par_iter()
            .map(|p| {
                let mut c = vec![0usize; num_slots];
                for &l in &lane[bound(p)..bound(p + 1)] {
                    c[slot(l)] += 1;
                }
                c
            })
            .collect();
        let mut lanes = Vec::new();
        let mut offsets = vec![0usize];
        let mut at = 0usize;
        for s in 0..num_slots {
            let start = at;
            for c in cursors.iter_mut() {
                let k = c[s];
                c[s] = at;
                at += k;
            }
            if at > start {
                lanes.push(slots.lane(s) as i32);
                offsets.push(at);
            }
        }
        let mut order: Column<u32> = Column::new(n);
        let out = order.ptr();
        cursors.par_iter_mut().enumerate().for_each(|(p, cursor)| {
            let (lo, hi) = (bound(p), bound(p + 1));
            for (k, &l) in lane[lo..hi].iter().enumerate() {
                let i = lo + k;
                let s = slot(l);
                // SAFETY: cursor[s] stays inside this part's share of lane s's range (< n);
                // parts' shares are disjoint.
                unsafe { out.write(cursor[s], i as u32) };
                cursor[s] += 1;
            }
        });
        // SAFETY: the lanes' ranges tile 0..n and every slot was written once.
        Some(LaneSplit { lanes, offsets, order: unsafe { order.finish() } })
    }
}

/// Output columns of the walk, written by several walkers at disjoint positions.
#[derive(Clone, Copy)]
struct Out {
    parent: ColumnPtr<i32>,
    depth: ColumnPtr<i32>,
    exclusive: ColumnPtr<i64>,
}

/// Parent, depth and exclusive ns of every call in sorted order, per lane of `split` (`None`
/// = one stack); lanes are walked in parallel. `Err((child, parent))`: the first call
/// (sorted order) that starts inside its parent but ends after it.
#[allow(clippy::type_complexity)]
fn walk(start: &[i64], end: &[i64], split: Option<&LaneSplit>, lenient: bool) -> Result<Walked, (usize, usize)> {
    let n = start.len();
    let (mut parent, mut depth, mut exclusive) = (Column::new(n), Column::new(n), Column::new(n));
    let out = Out { parent: parent.ptr(), depth: depth.ptr(), exclusive: exclusive.ptr() };
    let walked: Vec<Lane> = match split {
        // One stack: cut at calls where it is empty and walk the segments in parallel.
        None => {
            let cuts = empty_stack_cuts(start, end);
            (0..cuts.len() - 1)
                .into_par_iter()
                // SAFETY: segments are disjoint, and no call has its parent in another
                // segment (the stack is empty at every cut).
                .map(|k| unsafe { walk_lane(start, end, cuts[k]..cuts[k + 1], out, lenient) })
                .collect()
        }
        Some(split) => (0..split.len())
            .into_par_iter()
            // SAFETY: every walker owns one lane's positions (lanes partition the calls).
            .map(|k| unsafe { walk_lane(start, end, split.get(k).1.iter().map(|&i| i as usize), out, lenient) })
            .collect(),
    };
    let bad = walked.iter().filter_map(|w| w.crossing).min();
    // SAFETY: lanes (or segments) partition 0..n and every walker writes each of its calls
    // before moving on - unless it stopped at a nesting error, in which case the columns are
    // not needed: only the offending call's parent is reported.
    match bad {
        None => {
            let mut set_aside: Vec<SetAside> = walked.into_iter().flat_map(|w| w.set_aside).collect();
            set_aside.sort_unstable_by_key(|s| s.call);
            Ok(unsafe { (parent.finish(), depth.finish(), exclusive.finish(), set_aside) })
        }
        // SAFETY: the walker that found `i` wrote its parent before returning.
        Some(i) => Err((i, unsafe { out.parent.read(i) } as usize)),
    }
}

/// Parent, depth and exclusive columns of a walk, and the calls it set aside.
type Walked = (Vec<i32>, Vec<i32>, Vec<i64>, Vec<SetAside>);

/// What the walk of one lane (or segment) found.
struct Lane {
    /// The first call that ends after its parent, when not lenient (the walk stopped there).
    crossing: Option<usize>,
    /// The calls set aside, when lenient.
    set_aside: Vec<SetAside>,
}

/// Positions `0 = c0 < c1 < ... < ck = n` of calls at whose start every earlier call has
/// ended (the one stack is empty there), about `n / parts` apart, for walking the segments
/// in parallel: `max(end[..c]) < start[c]`. A cut that would need a scan longer than a
/// segment (a call spanning it, e.g. one outer region around the whole run) is left out.
fn empty_stack_cuts(start: &[i64], end: &[i64]) -> Vec<usize> {
    let n = start.len();
    let parts = if n >= PARALLEL_MIN { rayon::current_num_threads() * 2 } else { 1 };
    if parts <= 1 {
        return vec![0, n];
    }
    let bound = |c: usize| c * n / parts;
    let chunk_max: Vec<i64> = (0..parts)
        .into_par_iter()
        .map(|c| end[bound(c)..bound(c + 1)].iter().copied().max().unwrap_or(i64::MIN))
        .collect();
    let mut cuts = vec![0];
    let mut prefix = i64::MIN;
    for c in 1..parts {
        prefix = prefix.max(chunk_max[c - 1]);
        let (lo, hi) = (bound(c), bound(c + 1));
        let mut m = prefix;
        let mut i = lo.max(*cuts.last().unwrap() + 1);
        while i < hi && m >= start[i] {
            m = m.max(end[i]);
            i += 1;
        }
        if i < hi {
            cuts.push(i);
        }
    }
    cuts.push(n);
    cuts
}

/// The stack walk of one lane (its call ids ascending). The open-call stack is the chain
/// `top -> parent -> ...`. A call that ends after its parent stops the walk (its parent is
/// set; [`Lane::crossing`]) - or, `lenient`, is set aside: it becomes a root with its whole
/// duration as exclusive time, its parent's exclusive time is restored, and it is not
/// pushed on the stack, so the calls after it nest as if it had not been recorded.
///
/// # Safety
/// `out` points at three columns of `start.len()` values, and no other walker writes the
/// positions of this lane.
unsafe fn walk_lane(start: &[i64], end: &[i64], ids: impl Iterator<Item = usize>, out: Out, lenient: bool) -> Lane {
    let mut top: i32 = -1;
    let mut set_aside = Vec::new();
    for i in ids {
        let si = start[i];
        let mut t = top;
        // Closed at si: end < si, or end == si for a call of non-zero length
        // (scaled: 2·end (+1 if zero-length) <= 2·si).
        while t >= 0 {
            let tu = t as usize;
            let et = end[tu];
            if et < si || (et == si && start[tu] != et) {
                t = out.parent.read(tu);
            } else {
                break;
            }
        }
        out.parent.write(i, t);
        let dur = end[i].wrapping_sub(si);
        out.exclusive.write(i, dur);
        if t >= 0 {
            let tu = t as usize;
            out.depth.write(i, out.depth.read(tu) + 1);
            out.exclusive.write(tu, out.exclusive.read(tu).wrapping_sub(dur));
            if end[tu] < end[i] {
                if !lenient {
                    return Lane { crossing: Some(i), set_aside };
                }
                out.exclusive.write(tu, out.exclusive.read(tu).wrapping_add(dur));
                out.parent.write(i, -1);
                out.depth.write(i, 0);
                set_aside.push(SetAside { call: i as u32, crossed: tu as u32 });
                top = t; // the stack as it was: `i` is nobody's parent
                continue;
            }
        } else {
            out.depth.write(i, 0);
        }
        top = i as i32;
    }
    Lane { crossing: None, set_aside }
}

/// Group a lane column: [`split_by_lane`] of calls whose lane column is `lane` (non-empty
/// input; an empty column gives no lanes).
pub fn group_lanes(lane: &[i32]) -> LaneSplit {
    match lane.first() {
        None => LaneSplit::default(),
        Some(&first) => {
            crate::pool::install(|| LaneSplit::of(lane)).unwrap_or_else(|| LaneSplit::single(first, lane.len()))
        }
    }
}

/// Split reconstructed calls into lanes, ascending lane value (`spec-callstack.md` §4):
/// thread lanes `-N..=-2` first (descending thread index), then `-1`, then tasks `0, 1, …`,
/// each with its call ids (positions in `calls`) ascending. No calls -> no lanes; no lane
/// column -> the one lane `-1` with every call.
/// Cost: O(n) (counting sort) for dense lane values, O(n log n) otherwise.
pub fn split_by_lane(calls: &CallArrays) -> LaneSplit {
    if calls.lane.is_empty() {
        return LaneSplit::single(-1, calls.len());
    }
    group_lanes(&calls.lane)
}

/// The calls `ids` (ascending positions in `calls`, one lane's) as arrays of their own:
/// every column sliced, `parent` remapped to positions within `ids` (`-1` for a root, or a
/// parent outside `ids`).
pub fn lane_calls(calls: &CallArrays, ids: &[u32]) -> CallArrays {
    let mut local: HashMap<u32, i32> = HashMap::with_capacity(ids.len());
    for (k, &id) in ids.iter().enumerate() {
        local.insert(id, k as i32);
    }
    let pick_i32 = |col: &Vec<i32>| ids.iter().map(|&i| col[i as usize]).collect::<Vec<i32>>();
    let pick_i64 = |col: &Vec<i64>| ids.iter().map(|&i| col[i as usize]).collect::<Vec<i64>>();
    CallArrays {
        region_index: pick_i32(&calls.region_index),
        call_index: pick_i32(&calls.call_index),
        start_ns: pick_i64(&calls.start_ns),
        end_ns: pick_i64(&calls.end_ns),
        depth: pick_i32(&calls.depth),
        parent: ids
            .iter()
            .map(|&i| {
                let p = calls.parent[i as usize];
                if p < 0 {
                    -1
                } else {
                    local.get(&(p as u32)).copied().unwrap_or(-1)
                }
            })
            .collect(),
        exclusive_ns: pick_i64(&calls.exclusive_ns),
        lane: if calls.lane.is_empty() { Vec::new() } else { pick_i32(&calls.lane) },
        set_aside: calls
            .set_aside
            .iter()
            .filter_map(|a| {
                Some(SetAside { call: *local.get(&a.call)? as u32, crossed: *local.get(&a.crossed)? as u32 })
            })
            .collect(),
    }
}

#[cfg(test)]
mod lane_calls_tests {
    use super::*;

    #[test]
    fn a_lane_keeps_its_calls_and_remaps_parents() {
        // two lanes interleaved: lane -2 = ids 0, 2 (2 child of 0); lane -3 = ids 1, 3 (3 child of 1)
        let calls = CallArrays {
            region_index: vec![0, 0, 1, 1],
            call_index: vec![0, 1, 0, 1],
            start_ns: vec![0, 1, 2, 3],
            end_ns: vec![10, 11, 5, 6],
            depth: vec![0, 0, 1, 1],
            parent: vec![-1, -1, 0, 1],
            exclusive_ns: vec![7, 7, 3, 3],
            lane: vec![-2, -3, -2, -3],
            set_aside: Vec::new(),
        };
        let lane = lane_calls(&calls, &[1, 3]);
        assert_eq!(lane.start_ns, vec![1, 3]);
        assert_eq!(lane.parent, vec![-1, 0]);
        assert_eq!(lane.lane, vec![-3, -3]);
        assert_eq!(lane.call_index, vec![1, 1]);
    }
}
