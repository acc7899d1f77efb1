//! Analysis engine of scope-profiler: the run model ([`run`]) and the algorithms on it.
pub mod cache;
pub mod events;
pub mod callstack;
pub mod lanes;
pub mod memory;
pub mod merge_tmp;
pub mod npcompat;
mod order;
pub mod packed;
pub mod par;
pub mod pytext;
pub mod rank_calls;
pub mod run;
pub mod region_stats;
pub mod stack;
pub mod view;

pub use cache::{Reconstruction, RunAnalysis};
pub use callstack::{
    build_call_arrays, build_with_lanes, group_lanes, lane_calls, lane_id, split_by_lane, CallArrays, LaneSplit,
    NestingError, RegionInput,
};
pub use lanes::{lane_label, thread_summary, thread_summary_from, thread_summary_split, LaneLabels, ThreadSummaryRow};
pub use rank_calls::{
    assign_call_ids, exclusive_by_row, exclusive_from, rank_call_arrays, rank_reconstruction, region_input,
};
pub use run::{IdColumn, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow, UNKNOWN};
pub use pytext::{py_float_repr, py_format_g, py_repr};
pub use stack::stack_runs;
pub use view::{ExclusiveOf, LaneFilter, RowView};
