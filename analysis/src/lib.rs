//! Analysis engine of scope-profiler: the run model ([`run`]) and the algorithms on it.
pub mod cache;
pub mod callstack;
pub mod lanes;
pub mod memory;
pub mod merge;
mod order;
pub mod packed;
pub mod par;
pub mod rank_calls;
pub mod run;

pub use cache::{Reconstruction, RunAnalysis};
pub use callstack::{
    build_call_arrays, build_with_lanes, group_lanes, lane_id, py_repr, split_by_lane, CallArrays, LaneSplit,
    NestingError, RegionInput,
};
pub use lanes::{lane_label, thread_summary, thread_summary_from, thread_summary_split, LaneLabels, ThreadSummaryRow};
pub use merge::{merge_runs, MergeError, MergeOptions};
pub use rank_calls::{
    assign_call_ids, exclusive_by_row, exclusive_from, rank_call_arrays, rank_reconstruction, region_input,
};
pub use run::{IdColumn, MetaValue, RegionCalls, Run, TaskRow, ThreadRow, UNKNOWN};
