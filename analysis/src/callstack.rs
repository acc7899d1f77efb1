//! Call-stack reconstruction per lane (`spec-callstack.md`).
//!
//! Regions store only `(start_ns, end_ns)` per call; nesting is recovered from
//! containment, per lane. Sorted order is start ascending, end descending, then input
//! position (region order, then call order); call id = position in that order.

use thiserror::Error;

/// Recorded calls cannot form a call tree (overlap without nesting, or end < start).
/// The message follows the reference's wording (see `spec-callstack.md` §3).
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{0}")]
pub struct NestingError(pub String);

/// One region's calls as input to [`build_call_arrays`]. Slices are ns on the recording clock.
#[derive(Debug, Clone, Copy)]
pub struct RegionInput<'a> {
    pub name: &'a str,
    pub start_ns: &'a [i64],
    pub end_ns: &'a [i64],
    /// Thread-table index per call, if the region has a thread column.
    pub thread_ids: Option<&'a [i64]>,
    /// Task-table index per call (-1 outside tasks), if the region has a task column.
    pub task_ids: Option<&'a [i64]>,
}

/// Reconstructed calls of one rank, indexed by call id (position in sorted order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallArrays {
    /// Position of the call's region in the input slice.
    pub region_index: Vec<i64>,
    /// Position of the call in its region's own arrays.
    pub call_index: Vec<i64>,
    pub start_ns: Vec<i64>,
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
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }
    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
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

/// Reconstruct nesting for the calls of `regions` (one rank).
///
/// Errors: [`NestingError`] when a call ends before it starts or two calls on one lane
/// overlap without nesting (message names both calls, child first).
pub fn build_call_arrays(regions: &[RegionInput<'_>]) -> Result<CallArrays, NestingError> {
    let _ = regions;
    todo!("analysis helper implements this")
}

/// Split reconstructed calls into lanes, ascending lane value (`spec-callstack.md` §4).
/// Each entry holds the lane id and the call ids (positions in `calls`) of that lane in order.
/// No calls -> empty; no lane column -> one entry `(-1, all)`.
pub fn split_by_lane(calls: &CallArrays) -> Vec<(i64, Vec<usize>)> {
    let _ = calls;
    todo!("analysis helper implements this")
}
