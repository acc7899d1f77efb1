//! The per-call columns of a reconstructed run: one value per call of the selected ranks,
//! each rank's calls in sorted order (start ascending, end descending), with the
//! reconstruction's depth, lane and exclusive time. What the Parquet export's events file
//! and the dataset's `calls` table are made of; each puts them in its own schema and time
//! base. Crate-internal.
use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{DictionaryArray, Int32Array, Int64Array, StringArray};
use scope_profiler_analysis::Run;

use crate::export_lanes::{reconstruct, RankCalls};
use crate::ExportError;

/// Calls per (rank, lane).
pub(crate) type CallsPerLane = HashMap<(u32, i64), i64>;

/// One value per call, in the order described in the module documentation.
#[derive(Debug, Default)]
pub(crate) struct CallColumns {
    pub rank: Vec<i32>,
    /// Region name id (position in `run.region_names`).
    pub region: Vec<u32>,
    /// Position of the call in its region row's arrays.
    pub call_index: Vec<i64>,
    /// Recording clock, ns.
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    /// Sorted position, numbered across the selected ranks in order.
    pub call_id: Vec<i64>,
    /// Parent's `call_id`, -1 for a root.
    pub parent_id: Vec<i64>,
    /// Thread-table / task-table index, -1 where absent.
    pub thread: Vec<i64>,
    pub task: Vec<i64>,
    /// ns the call's task was suspended inside the call; `None` where not recorded.
    pub await_ns: Vec<Option<i64>>,
    pub depth: Vec<i64>,
    /// Task index (>= 0), `-2 - thread` (thread lane), -1 (unknown).
    pub lane: Vec<i64>,
    pub exclusive_ns: Vec<i64>,
    pub per_lane: CallsPerLane,
}

impl CallColumns {
    /// Number of calls.
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }

    /// The columns of the calls of `ranks` (in this order). Errors: `Nesting` for a rank
    /// that cannot be reconstructed, `NoCalls` when no selected rank has a call.
    pub fn of(run: &Run, ranks: &[u32]) -> Result<Self, ExportError> {
        let all = reconstruct(run, ranks)?;
        let n: usize = all.iter().map(|r| r.calls.len()).sum();
        let mut c = CallColumns::with_capacity(n);
        let mut base = 0i64;
        for r in &all {
            c.push_rank(run, r, base);
            base += r.calls.len() as i64;
        }
        Ok(c)
    }

    fn with_capacity(n: usize) -> Self {
        CallColumns {
            rank: Vec::with_capacity(n),
            region: Vec::with_capacity(n),
            call_index: Vec::with_capacity(n),
            start_ns: Vec::with_capacity(n),
            end_ns: Vec::with_capacity(n),
            call_id: Vec::with_capacity(n),
            parent_id: Vec::with_capacity(n),
            thread: Vec::with_capacity(n),
            task: Vec::with_capacity(n),
            await_ns: Vec::with_capacity(n),
            depth: Vec::with_capacity(n),
            lane: Vec::with_capacity(n),
            exclusive_ns: Vec::with_capacity(n),
            per_lane: HashMap::new(),
        }
    }

    /// Append the calls of one reconstructed rank; its call ids start at `base`.
    fn push_rank(&mut self, run: &Run, r: &RankCalls, base: i64) {
        let c = &r.calls;
        for id in 0..c.len() {
            let row = &run.regions[r.rows[c.region_index[id] as usize]];
            let ci = c.call_index[id];
            let at = |a: &Option<Int64Array>| a.as_ref().and_then(|a| a.values().get(ci as usize).copied());
            self.rank.push(r.rank as i32);
            self.region.push(row.region);
            self.call_index.push(ci as i64);
            self.start_ns.push(c.start_ns[id]);
            self.end_ns.push(c.end_ns[id]);
            self.call_id.push(base + id as i64);
            self.parent_id.push(if c.parent[id] < 0 { -1 } else { base + c.parent[id] as i64 });
            self.thread.push(at(&row.thread_ids).unwrap_or(-1));
            self.task.push(at(&row.task_ids).unwrap_or(-1));
            self.await_ns.push(at(&row.await_ns));
            self.depth.push(c.depth[id] as i64);
            let lane = c.lane_of(id);
            self.lane.push(lane);
            *self.per_lane.entry((r.rank, lane)).or_default() += 1;
            self.exclusive_ns.push(c.exclusive_ns[id]);
        }
    }

    /// Durations, ns.
    pub fn duration_ns(&self) -> Int64Array {
        self.start_ns.iter().zip(&self.end_ns).map(|(s, e)| e - s).collect::<Vec<_>>().into()
    }

    /// `start_ns - origin` per call.
    pub fn start_from(&self, origin: i64) -> Int64Array {
        self.start_ns.iter().map(|s| s - origin).collect::<Vec<_>>().into()
    }

    /// Region names as a dictionary over `run.region_names` (an id out of range is `"?"`).
    pub fn region_dictionary(&self, run: &Run) -> DictionaryArray<Int32Type> {
        let n = run.region_names.len();
        let keys: Int32Array = self.region.iter().map(|&r| (r as usize).min(n) as i32).collect::<Vec<_>>().into();
        let values: StringArray =
            run.region_names.iter().map(String::as_str).chain(std::iter::once("?")).map(Some).collect();
        DictionaryArray::try_new(keys, Arc::new(values)).expect("keys are within the values")
    }

    /// Region names as plain strings (an id out of range is `"?"`).
    pub fn region_names(&self, run: &Run) -> StringArray {
        self.region.iter().map(|&r| Some(run.region_names.get(r as usize).map(String::as_str).unwrap_or("?"))).collect()
    }
}
