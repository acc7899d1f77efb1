//! Merging runs (`merge_runs`): stacking ranks and uniting regions, and what the merged run's
//! metadata keeps.
mod support;

use arrow_array::Int64Array;
use scope_profiler_analysis::{merge_runs, MergeOptions, MetaValue, RegionCalls};
use support::run;

/// One metadata rule for stacking and union: the first part's values, every part's keys.
#[test]
fn one_metadata_rule_for_stacking_and_union() {
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

/// Stacking runs of `scope-profiler run` (each with a `processes` label per rank) gives one
/// label per rank: each part's own, a part without labels named by its `merged_from` path
/// (the first run's list alone would be shorter than the ranks, and the summary would drop
/// every label).
#[test]
fn stacked_runs_keep_one_process_label_per_rank() {
    let labelled = |labels: &[&str]| {
        let mut r = run("x", vec![("processes", MetaValue::StrList(labels.iter().map(|s| s.to_string()).collect()))]);
        r.num_ranks = labels.len() as u32;
        r.regions.push(RegionCalls::new(
            0,
            labels.len() as u32 - 1,
            Int64Array::from(vec![0]),
            Int64Array::from(vec![1]),
        ));
        r
    };
    let options = MergeOptions {
        num_ranks: Some(5),
        merged_from: Some(vec!["a.h5".into(), "b.h5".into(), "c.h5".into()]),
        ..MergeOptions::default()
    };
    let parts = vec![(0, labelled(&["pid 1", "pid 2"])), (2, run("y", vec![])), (3, labelled(&["pid 7", "pid 8"]))];
    let merged = merge_runs(parts, &options).unwrap();
    assert_eq!(
        merged.meta("processes"),
        Some(&MetaValue::StrList(vec!["pid 1".into(), "pid 2".into(), "b.h5".into(), "pid 7".into(), "pid 8".into()]))
    );
    // no part with labels: no `processes` key
    let plain = merge_runs(vec![(0, run("x", vec![])), (1, run("y", vec![]))], &MergeOptions::default()).unwrap();
    assert_eq!(merged.num_ranks, 5);
    assert!(plain.meta("processes").is_none());
}
