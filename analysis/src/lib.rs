//! Analysis engine of scope-profiler: the run model ([`run`]) and the algorithms on it.
pub mod cache;
pub mod call_graph;
pub mod call_metadata;
mod call_numbering;
pub mod callstack;
pub mod events;
pub mod lanes;
pub mod memory;
pub mod merge;
pub mod npcompat;
mod order;
pub mod packed;
pub mod par;
pub mod pytext;
pub mod rank_calls;
pub mod region_stats;
pub mod run;
pub mod summary;
pub mod view;

pub use cache::{Reconstruction, RunAnalysis};
pub use call_graph::{call_graph, CallGraphRow};
pub use callstack::{
    build_call_arrays, build_lenient, build_with_lanes, group_lanes, lane_calls, lane_id, split_by_lane, CallArrays,
    LaneSplit, NestingError, RegionInput, SetAside,
};
pub use events::{events_batch, events_batch_with, EventColumn, EventsError, OptionalColumns};
pub use lanes::{
    lane_label, no_thread_table_note, task_summary, task_summary_split, thread_summary, thread_summary_from,
    thread_summary_split, thread_table_note, untracked_tasks_note, LaneLabels, TaskSummaryRow, ThreadSummaryRow,
};
pub use merge::{merge_runs, MergeError, MergeOptions, PROCESSES};
pub use pytext::{py_float_repr, py_format_g, py_repr};
pub use rank_calls::{
    assign_call_ids, exclusive_by_row, exclusive_from, number_rank, rank_call_arrays, rank_reconstruction,
    region_input, set_aside_causes, set_aside_report, CallNumbering,
};
pub use run::{secs, IdColumn, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow, UNKNOWN};
pub use summary::{nesting_note, rank_summary, summary_table_columns, RankSummary, RegionSummaryRow};
pub use view::{ExclusiveOf, LaneFilter, RowView};
