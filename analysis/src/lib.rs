//! Analysis engine of scope-profiler: the run model ([`run`]) and the algorithms on it.
pub mod call_graph;
pub mod call_metadata;
mod call_numbering;
mod call_order;
pub mod callstack;
pub mod column_memory;
pub mod compare;
pub mod events;
pub mod figures;
pub mod lane_summary;
pub mod loop_blocks;
pub mod merge;
pub mod numpy_reductions;
pub mod packed_ids;
pub mod pool;
pub mod python_text;
pub mod rank_reconstruction;
pub mod record_batch;
pub mod region_stats;
pub mod region_summary;
pub mod row_view;
pub mod run;
pub mod run_analysis;
pub mod summary_order;

pub use call_graph::{call_graph, CallGraphRow};
pub use callstack::{
    build_call_arrays, build_lenient, build_with_lanes, group_lanes, lane_calls, lane_id, split_by_lane, CallArrays,
    LaneSplit, NestingError, RegionInput, SetAside,
};
pub use events::{events_batch, events_batch_with, EventColumn, EventsError, OptionalColumns};
pub use lane_summary::{
    lane_label, no_thread_table_note, summary_only_note, task_summary, task_summary_split, thread_summary,
    thread_summary_from, thread_summary_split, thread_table_note, untracked_tasks_note, LaneLabels, TaskSummaryRow,
    ThreadSummaryRow,
};
pub use loop_blocks::{loop_blocks, own_lane_holder, BelowBlockFloor, LoopBlock, LoopBlockRow, BLOCK_FLOOR_NS};
pub use merge::{merge_runs, merge_sets, MergeError, MergeOptions, MergeSet, PROCESSES};
pub use python_text::{py_float_repr, py_format_g, py_repr};
pub use rank_reconstruction::{
    assign_call_ids, exclusive_by_row, exclusive_from, number_rank, rank_call_arrays, rank_reconstruction,
    region_input, set_aside_causes, set_aside_report, CallNumbering,
};
pub use region_summary::{nesting_note, rank_summary, summary_table_columns, RankSummary, RegionSummaryRow};
pub use row_view::{ExclusiveOf, LaneFilter, RowView, ViewPath};
pub use run::{secs, IdColumn, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow, UNKNOWN};
pub use run_analysis::{Reconstruction, RunAnalysis};
pub use summary_order::SortKey;
