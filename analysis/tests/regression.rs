//! Regression tests, each headed by where the problem was reported (an issue of this project,
//! or a peer tool's public bug report).
use arrow_array::Int64Array;
use scope_profiler_analysis::{lane_label, merge_runs, MergeOptions, MetaValue, RegionCalls, Run, TaskRow, ThreadRow};

fn run(name: &str, metadata: Vec<(&str, MetaValue)>) -> Run {
    Run {
        region_names: vec![name.into()],
        regions: vec![RegionCalls::new(0, 0, Int64Array::from(vec![0, 10]), Int64Array::from(vec![5, 30]))],
        metadata: metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        num_ranks: 1,
        ..Run::default()
    }
}

/// issue 10: "two merges with different metadata rules (`merge._stacked` unions metadata,
/// `analysis::stack_runs`/`cli merge` keep the first run's)": one rule for stacking and union.
#[test]
fn issue_10_one_metadata_rule_for_stacking_and_union() {
    let a = || run("x", vec![("label", MetaValue::Str("A".into())), ("only_a", MetaValue::Int(1))]);
    let b = run("x", vec![("label", MetaValue::Str("B".into())), ("only_b", MetaValue::Int(2))]);
    let stacked = merge_runs(vec![(0, a()), (1, b)], &MergeOptions::default()).unwrap();
    let keys: Vec<&str> = stacked.metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["label", "only_a", "only_b", "mpi_size"]);
    assert_eq!(stacked.meta("label"), Some(&MetaValue::Str("A".into())));
    assert_eq!(stacked.meta_int("mpi_size"), Some(2));
    let c = run("y", vec![("label", MetaValue::Str("C".into())), ("only_c", MetaValue::Int(3))]);
    let united = merge_runs(vec![(0, a()), (0, c)], &MergeOptions { union: true, ..MergeOptions::default() }).unwrap();
    let keys: Vec<&str> = united.metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["label", "only_a", "only_c"]);
    assert_eq!(united.meta("label"), Some(&MetaValue::Str("A".into())));
}

/// issue 10: "lane labels three ways": `lane_label` and `LaneLabels` give the same strings.
#[test]
fn issue_10_lane_label_is_one_rule() {
    let mut r = run("x", vec![]);
    r.threads = vec![ThreadRow {
        rank: 0,
        index: 0,
        ident: 1,
        native_id: 2,
        daemon: false,
        start_ns: 0,
        end_ns: -1,
        cpu_ns: 0,
        name: "MainThread".into(),
    }];
    r.tasks = vec![TaskRow {
        rank: 0,
        index: 0,
        thread_index: 0,
        created_ns: 0,
        done_ns: -1,
        steps: 1,
        running_ns: 0,
        suspended_ns: 0,
        kind: "task".into(),
        name: "Task-2".into(),
        coro_name: "main.<locals>.fetch".into(),
    }];
    let labels = scope_profiler_analysis::LaneLabels::new(&r, 0);
    for (lane, want) in
        [(0, "Task-2 (fetch) on MainThread"), (-2, "MainThread"), (-1, "unknown lane"), (-3, "thread 1"), (5, "task 5")]
    {
        assert_eq!(lane_label(&r, lane, 0), want);
        assert_eq!(labels.label(lane), want);
    }
}
