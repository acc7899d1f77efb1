//! The Arrow frames of a run (events, summary tables): their columns come from the run and
//! the query, never from the rows selected.
mod support;

use arrow_array::Int64Array;
use scope_profiler_analysis::{Run, ThreadRow};
use support::run;

/// `events_frame(include=['zzz'])` has the unfiltered frame's columns; an empty run's
/// summary frames have every column, the per-rank one `rank` and the percentiles: the
/// columns come from the run and the query, never from the rows selected.
#[test]
fn frames_keep_their_columns_when_empty() {
    use scope_profiler_analysis::{events_batch, summary_table_columns};
    let mut r = run("x", vec![]);
    r.regions[0].call_ids = Some(Int64Array::from(vec![0, 1]).into());
    r.regions[0].parent_ids = Some(Int64Array::from(vec![-1, -1]).into());
    r.regions[0].thread_ids = Some(Int64Array::from(vec![0, 0]));
    r.regions[0].task_ids = Some(Int64Array::from(vec![0, -1]));
    r.regions[0].await_ns = Some(Int64Array::from(vec![1, 0]));
    let names = |rows: &[usize]| -> Vec<String> {
        events_batch(&r, rows, 0.0).unwrap().schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    let all = names(&[0]);
    assert_eq!(all.len(), 11, "{all:?}");
    assert_eq!(names(&[]), all, "no row selected: the same columns");
    // an empty run recorded with track_threads (a thread table, no calls) has the thread column
    let empty = Run { threads: vec![], num_ranks: 0, ..Run::default() };
    let tracked = Run { threads: vec![main_thread()], ..Run::default() };
    let cols = |run: &Run| -> Vec<String> {
        events_batch(run, &[], 0.0).unwrap().schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    assert_eq!(cols(&empty), ["name", "rank", "call_index", "start", "end", "duration"]);
    assert_eq!(cols(&tracked).last().map(String::as_str), Some("thread"));
    // summary tables: per-rank has `rank` and the percentiles, with or without calls
    let per_rank = summary_table_columns(&empty, true);
    assert_eq!(per_rank[1], "rank");
    assert_eq!(per_rank.len(), 15);
    assert_eq!(&per_rank[12..], ["p50_duration", "p95_duration", "p99_duration"]);
    assert_eq!(summary_table_columns(&empty, false).len(), 22);
    assert_eq!(summary_table_columns(&empty, false)[1], "num_ranks");
    // await and held columns for a run with await times
    let with_await = summary_table_columns(&r, false);
    assert_eq!(with_await.len(), 24);
    assert_eq!(&with_await[22..], ["await_duration", "held_duration"]);
}

fn main_thread() -> ThreadRow {
    ThreadRow {
        ready_wait_ns: -1,
        rank: 0,
        index: 0,
        ident: 1,
        native_id: 1,
        daemon: false,
        start_ns: 0,
        end_ns: -1,
        cpu_ns: 0,
        cpu_start_ns: -1,
        name: "MainThread".into(),
    }
}
