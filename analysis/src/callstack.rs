//! Call-stack reconstruction per lane (`spec-callstack.md`).
//!
//! Regions store only `(start_ns, end_ns)` per call; nesting is recovered from
//! containment, per lane. Sorted order is start ascending, end descending, then input
//! position (region order, then call order); call id = position in that order.
//!
//! Cost: one sort of all calls (O(n log n), parallel for large inputs) and one linear
//! walk over the sorted calls. Every lane keeps its open-call stack as a linked list
//! through `parent` (the top of a lane's stack is its most recent call), so the walk
//! needs no per-lane pass and no per-call allocation: O(n) after the sort, whatever the
//! number of lanes.

use std::collections::HashMap;

use rayon::iter::{IntoParallelIterator, IntoParallelRefIterator, IntoParallelRefMutIterator, ParallelExtend, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use thiserror::Error;

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
    pub region_index: Vec<i64>,
    /// Position of the call in its region's own arrays.
    pub call_index: Vec<i64>,
    /// Call start, ns.
    pub start_ns: Vec<i64>,
    /// Call end, ns.
    pub end_ns: Vec<i64>,
    /// 0 = root of its lane.
    pub depth: Vec<i64>,
    /// Call id of the enclosing call on the same lane, -1 for a root.
    pub parent: Vec<i64>,
    /// Duration minus the durations of direct children on the same lane, ns.
    pub exclusive_ns: Vec<i64>,
    /// Lane per call (`spec-callstack.md` §1); empty when no region has a thread column.
    pub lane: Vec<i64>,
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
            self.lane[id]
        }
    }
    /// Largest depth (0 for a flat run), `None` without calls.
    pub fn max_depth(&self) -> Option<i64> {
        self.depth.iter().copied().max()
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

/// Python's `repr()` of a string (used in the reference's error messages; the HDF5 reader
/// and writer in `scope-profiler-formats` use it too).
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
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
    pub(crate) fn new(lanes: &[i64]) -> Self {
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for &l in lanes {
            min = min.min(l);
            max = max.max(l);
        }
        if lanes.is_empty() {
            return LaneSlots::Offset { min: 0, len: 0 };
        }
        let range = (max as i128) - (min as i128) + 1;
        if range <= 4 * lanes.len() as i128 + 4096 {
            LaneSlots::Offset { min, len: range as usize }
        } else {
            let mut values = lanes.to_vec();
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

/// Below this many calls the sort runs on one thread.
const PARALLEL_SORT_MIN: usize = 1 << 16;

/// One output column from the sorted keys (parallel for large inputs).
fn extract<K: Sync>(keys: &[K], f: impl Fn(&K) -> i64 + Sync + Send) -> Vec<i64> {
    if keys.len() >= PARALLEL_SORT_MIN {
        keys.par_iter().map(f).collect()
    } else {
        keys.iter().map(f).collect()
    }
}

/// Sort unique keys, in parallel for large inputs.
fn sort_keys<T: Ord + Send>(keys: &mut [T]) {
    if keys.len() >= PARALLEL_SORT_MIN {
        keys.par_sort_unstable();
    } else {
        keys.sort_unstable();
    }
}

/// `'{name}' call {call_index} [{start}, {end}] ns`, the reference's call label.
fn call_label(
    regions: &[RegionInput<'_>],
    region_index: &[i64],
    call_index: &[i64],
    start: &[i64],
    end: &[i64],
    id: usize,
) -> String {
    let name = regions.get(region_index[id] as usize).map(|r| r.name).unwrap_or("?");
    format!("{} call {} [{}, {}] ns", py_repr(name), call_index[id], start[id], end[id])
}

/// At most this many sorted runs per call (on average a run of >= 64 calls) for the merge
/// path; inputs with more (shuffled) runs are sorted instead.
const MERGE_MAX_RUN_FRACTION: usize = 64;

/// The calls of `regions` in sorted order (start asc, end desc, then input position) as
/// ids `region << 32 | call`, when the input consists of few sorted runs (recorded data:
/// each region's calls are in entry order per lane, so a region holds one sorted run per
/// thread). Bottom-up pairwise merges of adjacent runs (stable, so ties keep input
/// position order), pairs merged in parallel: O(n log runs). `None` when the input has
/// too many runs for merging to pay.
fn merged_order(regions: &[RegionInput<'_>], n: usize) -> Option<Vec<u64>> {
    let max_runs = n / MERGE_MAX_RUN_FRACTION + 16;
    let mut bounds: Vec<usize> = Vec::with_capacity(16);
    let mut ids: Vec<u64> = Vec::with_capacity(n);
    bounds.push(0);
    for (ri, r) in regions.iter().enumerate() {
        let (st, en) = (r.start_ns, r.end_ns);
        let hi = (ri as u64) << 32;
        for c in 0..st.len() {
            if c > 0 && (st[c] < st[c - 1] || (st[c] == st[c - 1] && en[c] > en[c - 1])) {
                bounds.push(ids.len());
                if bounds.len() > max_runs {
                    return None;
                }
            }
            ids.push(hi | c as u64);
        }
        if ids.len() > *bounds.last().unwrap() {
            bounds.push(ids.len());
        }
    }
    // bounds: run starts + final end (deduplicated: empty regions push nothing new)
    bounds.dedup();
    let starts: Vec<&[i64]> = regions.iter().map(|r| r.start_ns).collect();
    let ends: Vec<&[i64]> = regions.iter().map(|r| r.end_ns).collect();
    let key = |id: u64| -> (i64, i64) {
        let (r, c) = ((id >> 32) as usize, (id & 0xffff_ffff) as usize);
        // SAFETY-free: indices come from the loops above
        (starts[r][c], ends[r][c])
    };
    // a <= b in sort order: start asc, end desc
    let le = |a: u64, b: u64| -> bool {
        let (sa, ea) = key(a);
        let (sb, eb) = key(b);
        sa < sb || (sa == sb && ea >= eb)
    };
    let merge = |left: &[u64], right: &[u64], out: &mut [u64]| {
        let (mut i, mut j, mut k) = (0, 0, 0);
        while i < left.len() && j < right.len() {
            if le(left[i], right[j]) {
                out[k] = left[i];
                i += 1;
            } else {
                out[k] = right[j];
                j += 1;
            }
            k += 1;
        }
        out[k..k + left.len() - i].copy_from_slice(&left[i..]);
        k += left.len() - i;
        out[k..].copy_from_slice(&right[j..]);
    };
    let mut buf: Vec<u64> = vec![0; if bounds.len() > 2 { n } else { 0 }];
    while bounds.len() > 2 {
        // pairs of adjacent runs -> one run each
        let pairs: Vec<(usize, usize, usize)> = bounds
            .windows(2)
            .step_by(2)
            .enumerate()
            .map(|(k, w)| (w[0], w[1], bounds.get(2 * k + 2).copied().unwrap_or(w[1]).max(w[1])))
            .collect();
        // split `buf` into disjoint output chunks, one per pair
        let mut chunks: Vec<(&mut [u64], usize, usize, usize)> = Vec::with_capacity(pairs.len());
        let mut rest: &mut [u64] = &mut buf;
        let mut at = 0;
        for &(lo, mid, hi) in &pairs {
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(hi - at);
            rest = tail;
            at = hi;
            chunks.push((chunk, lo, mid, hi));
        }
        let src = &ids;
        chunks.par_iter_mut().for_each(|(out, lo, mid, hi)| {
            if mid == hi {
                out.copy_from_slice(&src[*lo..*hi]);
            } else {
                merge(&src[*lo..*mid], &src[*mid..*hi], out);
            }
        });
        std::mem::swap(&mut ids, &mut buf);
        let mut next: Vec<usize> = pairs.iter().map(|p| p.0).collect();
        next.push(n);
        bounds = next;
    }
    Some(ids)
}

/// The sort path of [`build_call_arrays`]: key sort of all calls, then column extraction.
fn sorted_columns(regions: &[RegionInput<'_>], n: usize, has_lanes: bool, calls: &mut CallArrays) {
    if has_lanes {
        let mut keys: Vec<(i64, i64, u64, i64)> = Vec::with_capacity(n);
        for (ri, r) in regions.iter().enumerate() {
            let hi = (ri as u64) << 32;
            let lane_of = |ci: usize| match r.thread_ids {
                None => -1,
                Some(t) => {
                    let thread = t.get(ci).copied().unwrap_or(-1);
                    let task = r.task_ids.and_then(|k| k.get(ci).copied()).unwrap_or(-1);
                    lane_id(thread, task)
                }
            };
            let key = |ci: usize| (r.start_ns[ci], !r.end_ns[ci], hi | ci as u64, lane_of(ci));
            if r.start_ns.len() >= PARALLEL_SORT_MIN {
                keys.par_extend((0..r.start_ns.len()).into_par_iter().map(key));
            } else {
                keys.extend((0..r.start_ns.len()).map(key));
            }
        }
        sort_keys(&mut keys);
        calls.start_ns = extract(&keys, |k| k.0);
        calls.end_ns = extract(&keys, |k| !k.1);
        calls.region_index = extract(&keys, |k| (k.2 >> 32) as i64);
        calls.call_index = extract(&keys, |k| (k.2 & 0xffff_ffff) as i64);
        calls.lane = extract(&keys, |k| k.3);
    } else {
        let mut keys: Vec<(i64, i64, u64)> = Vec::with_capacity(n);
        for (ri, r) in regions.iter().enumerate() {
            let hi = (ri as u64) << 32;
            let key = |ci: usize| (r.start_ns[ci], !r.end_ns[ci], hi | ci as u64);
            if r.start_ns.len() >= PARALLEL_SORT_MIN {
                keys.par_extend((0..r.start_ns.len()).into_par_iter().map(key));
            } else {
                keys.extend((0..r.start_ns.len()).map(key));
            }
        }
        sort_keys(&mut keys);
        calls.start_ns = extract(&keys, |k| k.0);
        calls.end_ns = extract(&keys, |k| !k.1);
        calls.region_index = extract(&keys, |k| (k.2 >> 32) as i64);
        calls.call_index = extract(&keys, |k| (k.2 & 0xffff_ffff) as i64);
    }

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
pub fn build_call_arrays(regions: &[RegionInput<'_>]) -> Result<CallArrays, NestingError> {
    crate::par::install(|| build_call_arrays_on_pool(regions))
}

fn build_call_arrays_on_pool(regions: &[RegionInput<'_>]) -> Result<CallArrays, NestingError> {
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
        return Ok(CallArrays::default());
    }
    for r in regions {
        if r.start_ns.iter().zip(r.end_ns).any(|(s, e)| e < s) {
            return Err(NestingError("a recorded call ends before it starts".into()));
        }
    }
    if regions.len() > u32::MAX as usize
        || regions.iter().any(|r| r.start_ns.len() > u32::MAX as usize)
    {
        return Err(NestingError("too many recorded calls to reconstruct".into()));
    }

    // (start, !end, region << 32 | call): ascending order is start asc, end desc
    // (`!e` reverses the order without overflow), then input position. Keys are unique.
    let has_lanes = regions.iter().any(|r| r.thread_ids.is_some());
    let mut calls = CallArrays { depth: vec![0; n], parent: vec![-1; n], ..Default::default() };
    // Sort keys (start, !end, region << 32 | call[, lane]): ascending order is start asc,
    // end desc (`!e` reverses the order without overflow), then input position; keys are
    // unique. The lane rides along in the key so that no per-call random access into the
    // input columns is needed after the sort. Columns are then extracted in parallel (on
    // large runs this is bound by first-touch page faults of the output arrays).
    if let Some(ids) = merged_order(regions, n) {
        let starts: Vec<&[i64]> = regions.iter().map(|r| r.start_ns).collect();
        let ends: Vec<&[i64]> = regions.iter().map(|r| r.end_ns).collect();
        let rc = |id: &u64| ((*id >> 32) as usize, (*id & 0xffff_ffff) as usize);
        calls.start_ns = extract(&ids, |id| {
            let (r, c) = rc(id);
            starts[r][c]
        });
        calls.end_ns = extract(&ids, |id| {
            let (r, c) = rc(id);
            ends[r][c]
        });
        calls.region_index = extract(&ids, |id| (*id >> 32) as i64);
        calls.call_index = extract(&ids, |id| (*id & 0xffff_ffff) as i64);
        if has_lanes {
            calls.lane = extract(&ids, |id| {
                let (r, c) = rc(id);
                let reg = &regions[r];
                match reg.thread_ids {
                    None => -1,
                    Some(t) => {
                        let thread = t.get(c).copied().unwrap_or(-1);
                        let task = reg.task_ids.and_then(|k| k.get(c).copied()).unwrap_or(-1);
                        lane_id(thread, task)
                    }
                }
            });
        }
    } else {
        sorted_columns(regions, n, has_lanes, &mut calls);
    }

    // One walk in global sorted order. `top[slot]` = most recent call on that lane; a
    // lane's open-call stack is the chain top -> parent -> ... .
    let slots = if has_lanes { Some(LaneSlots::new(&calls.lane)) } else { None };
    let mut top: Vec<i64> = vec![-1; slots.as_ref().map_or(1, |s| s.num_slots())];
    {
        let (start, end) = (&calls.start_ns, &calls.end_ns);
        let (parent, depth) = (&mut calls.parent, &mut calls.depth);
        for i in 0..n {
            let slot = match &slots {
                Some(s) => s.slot(calls.lane[i]),
                None => 0,
            };
            let si = start[i];
            let mut t = top[slot];
            // Closed at si: end < si, or end == si for a call of non-zero length
            // (scaled: 2·end (+1 if zero-length) <= 2·si).
            while t >= 0 {
                let tu = t as usize;
                let et = end[tu];
                if et < si || (et == si && start[tu] != et) {
                    t = parent[tu];
                } else {
                    break;
                }
            }
            parent[i] = t;
            if t >= 0 {
                let tu = t as usize;
                depth[i] = depth[tu] + 1;
                if end[tu] < end[i] {
                    let msg = format!(
                        "recorded calls are not properly nested: {} starts inside {} but ends \
                         after it. Regions must nest completely or not overlap at all - check \
                         for a missing or misordered sp_end / __exit__.",
                        call_label(regions, &calls.region_index, &calls.call_index, start, end, i),
                        call_label(regions, &calls.region_index, &calls.call_index, start, end, tu),
                    );
                    return Err(NestingError(msg));
                }
            }
            top[slot] = i as i64;
        }
    }

    calls.exclusive_ns.extend(calls.start_ns.iter().zip(&calls.end_ns).map(|(s, e)| e.wrapping_sub(*s)));
    for i in 0..n {
        let p = calls.parent[i];
        if p >= 0 {
            let d = calls.end_ns[i].wrapping_sub(calls.start_ns[i]);
            let x = &mut calls.exclusive_ns[p as usize];
            *x = x.wrapping_sub(d);
        }
    }
    Ok(calls)
}

/// Split reconstructed calls into lanes, ascending lane value (`spec-callstack.md` §4):
/// thread lanes `-N..=-2` first (descending thread index), then `-1`, then tasks `0, 1, …`.
/// Each entry holds the lane id and the call ids (positions in `calls`) of that lane in
/// ascending order. No calls -> empty; no lane column -> one entry `(-1, all)`.
/// Cost: O(n) (counting sort) for dense lane values, O(n log n) otherwise.
pub fn split_by_lane(calls: &CallArrays) -> Vec<(i64, Vec<usize>)> {
    crate::par::install(|| split_by_lane_on_pool(calls))
}

fn split_by_lane_on_pool(calls: &CallArrays) -> Vec<(i64, Vec<usize>)> {
    let n = calls.len();
    if n == 0 {
        return Vec::new();
    }
    if calls.lane.is_empty() {
        return vec![(-1, (0..n).collect())];
    }
    let slots = LaneSlots::new(&calls.lane);
    let mut counts = vec![0usize; slots.num_slots()];
    let slot_of: Vec<u32> = calls.lane.iter().map(|&l| slots.slot(l) as u32).collect();
    for &s in &slot_of {
        counts[s as usize] += 1;
    }
    let mut out: Vec<(i64, Vec<usize>)> = Vec::new();
    let mut out_of_slot = vec![usize::MAX; counts.len()];
    for (s, &c) in counts.iter().enumerate() {
        if c > 0 {
            out_of_slot[s] = out.len();
            out.push((slots.lane(s), Vec::with_capacity(c)));
        }
    }
    for (i, &s) in slot_of.iter().enumerate() {
        out[out_of_slot[s as usize]].1.push(i);
    }
    out
}
