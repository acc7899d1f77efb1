//! Regression tests of the file formats and exports, each headed by where the problem was
//! reported (an issue of this project, or a peer tool's public bug report).
mod export_support;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::pstats::{marshal_stats, prof_stats, ProfOptions, StatEntry};
use scope_profiler_formats::Selection;

/// A `depth`-deep recursion of one region (with a source location): call k spans
/// `[10 k, 10 (2 depth - k) + 5]` ns, so every call is 20 ns longer than the one inside it.
fn deep_recursion(depth: i64) -> Run {
    let s: Vec<i64> = (0..depth).map(|k| 10 * k).collect();
    let e: Vec<i64> = (0..depth).map(|k| 10 * (2 * depth - k) + 5).collect();
    let mut r = row(0, &s, &e);
    r.source_file = Some("rec.py".into());
    r.source_line = Some(3);
    Run { region_names: vec!["rec".into()], regions: vec![r], num_ranks: 1, ..Default::default() }
}

fn entry<'a>(entries: &'a [StatEntry], name: &str) -> &'a StatEntry {
    entries.iter().find(|e| e.key.2 == name).unwrap_or_else(|| panic!("no entry {name}"))
}

/// issue 13 item 15: "`.prof` of a 3,000-deep recursion is 52 MB (every depth a distinct
/// call path; collapse recursion as cProfile does)". Both modes now give one entry with a
/// self-edge, counted as cProfile counts: nc 3000, cc 1, ct the outermost call only; the
/// self-edge `(nc, cc, tt, ct)` = (2999, 1, ..., the second call's duration).
#[test]
fn issue_13_item_15_deep_recursion_prof_is_one_entry() {
    let depth = 3000;
    let run = deep_recursion(depth);
    let outer_ns = 10 * 2 * depth + 5; // [0, 60005]
    let second_ns = outer_ns - 20;
    for call_paths in [true, false] {
        let files =
            prof_stats(&run, &Selection::new(vec![0], "deep"), ProfOptions { call_paths, per_lane: false }).unwrap();
        let entries = &files[0].entries;
        assert_eq!(entries.len(), 2, "one entry and the root (call_paths={call_paths})");
        let rec = entry(entries, "rec");
        assert_eq!(rec.key, ("rec.py".to_string(), 3, "rec".to_string()));
        assert_eq!((rec.cc, rec.nc), (1, depth));
        assert!((rec.ct - outer_ns as f64 / 1e9).abs() < 1e-15, "ct = the outermost call: {}", rec.ct);
        // self time: 10 + 10 ns around each inner call, the innermost 25 ns
        assert!((rec.tt - outer_ns as f64 / 1e9).abs() < 1e-15, "tt = every call's self time: {}", rec.tt);
        let callers: Vec<(&str, (i64, i64))> = rec.callers.iter().map(|(k, v)| (k.2.as_str(), (v.0, v.1))).collect();
        assert_eq!(callers, [("<deep rank 0>", (1, 1)), ("rec", (depth - 1, 1))]);
        let self_edge = &rec.callers[1].1;
        assert!((self_edge.3 - second_ns as f64 / 1e9).abs() < 1e-15, "edge ct: the outermost rec -> rec call");
        let bytes = marshal_stats(entries).len();
        assert!(bytes < 1024, "{bytes} bytes (was 54,342,082 with call paths)");
    }
}

/// issue 13 item 15: recursion through another region collapses too, and the paths keep
/// their context: `a > b > a > b > c` is the entries `a`, `a > b` and `a > b > c`, the inner
/// `a` a call of `a` from `a > b` (a cycle, as cProfile shows mutual recursion).
#[test]
fn issue_13_item_15_mutual_recursion_paths_collapse() {
    // a [0,100] > b [10,90] > a [20,80] > b [30,70] > c [40,60]
    let run = Run {
        region_names: vec!["a".into(), "b".into(), "c".into()],
        regions: vec![row(0, &[0, 20], &[100, 80]), row(1, &[10, 30], &[90, 70]), row(2, &[40], &[60])],
        num_ranks: 1,
        ..Default::default()
    };
    let files = prof_stats(&run, &Selection::new(vec![0], "m"), ProfOptions::default()).unwrap();
    let names: Vec<&str> = files[0].entries.iter().map(|e| e.key.2.as_str()).collect();
    assert_eq!(names, ["a", "a > b", "a > b > c", "<m rank 0>"]);
    let e = &files[0].entries;
    let (a, ab, abc) = (entry(e, "a"), entry(e, "a > b"), entry(e, "a > b > c"));
    assert_eq!((a.cc, a.nc, ab.cc, ab.nc, abc.cc, abc.nc), (1, 2, 1, 2, 1, 1));
    assert!((a.ct - 100e-9).abs() < 1e-15 && (ab.ct - 80e-9).abs() < 1e-15);
    let callers = |x: &StatEntry| x.callers.iter().map(|(k, v)| (k.2.clone(), v.0, v.1)).collect::<Vec<_>>();
    assert_eq!(callers(a), [("<m rank 0>".to_string(), 1, 1), ("a > b".to_string(), 1, 1)]);
    assert_eq!(callers(ab), [("a".to_string(), 2, 1)]);
    assert_eq!(callers(abc), [("a > b".to_string(), 1, 1)]);
}
