//! pstats `.prof` export: values against an independent computation from the reconstructed
//! calls and the reference's expected values, per-lane recursion, marshal encoding, golden
//! dumps.
mod export_support;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::export_plan::ProfNaming;
use scope_profiler_formats::pstats::{
    marshal_stats, prof_path, prof_stats, write_prof, write_prof_named, ProfOptions, ProfStats, StatEntry,
};
use scope_profiler_formats::{ExportError, Selection};

fn dump(files: &[ProfStats]) -> String {
    let mut s = String::new();
    for f in files {
        s += &format!("== rank {} lane {:?} {:?}\n", f.rank, f.lane, f.lane_name);
        for e in &f.entries {
            s += &format!(
                "{}:{}({}) cc={} nc={} tt={:.9} ct={:.9}\n",
                e.key.0, e.key.1, e.key.2, e.cc, e.nc, e.tt, e.ct
            );
            for (k, v) in &e.callers {
                s += &format!(
                    "    <- {}:{}({}) {:?}\n",
                    k.0,
                    k.1,
                    k.2,
                    (v.0, v.1, format!("{:.9}", v.2), format!("{:.9}", v.3))
                );
            }
        }
    }
    s
}

fn entry<'a>(f: &'a ProfStats, name: &str) -> &'a StatEntry {
    f.entries.iter().find(|e| e.key.2 == name).unwrap_or_else(|| panic!("no entry {name}"))
}

#[test]
fn by_region_matches_reference_expected_values() {
    for name in ["threads", "async", "single", "pool"] {
        let run = reference(name);
        let exp = expected(name);
        let files =
            prof_stats(&run, &Selection::new(vec![0], name), ProfOptions { call_paths: false, per_lane: false })
                .unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        let totals = lane_totals(&run, 0);
        for (region, ranks) in exp["regions"].as_object().unwrap() {
            let r = &ranks["0"];
            let n = r["num_calls"].as_i64().unwrap();
            if n == 0 {
                continue;
            }
            let e = f.entries.iter().find(|e| e.key.2 == *region).unwrap();
            assert_eq!(e.nc, n, "{name}/{region}");
            assert!((e.tt - r["exclusive_duration"].as_f64().unwrap()).abs() < 1e-12, "{name}/{region} tt");
            // no region of these runs nests inside itself on one lane: every call is primitive
            assert_eq!(e.cc, n, "{name}/{region} cc");
            assert!((e.ct - r["total_duration"].as_f64().unwrap()).abs() < 1e-12, "{name}/{region} ct");
            let calls_from_callers: i64 = e.callers.iter().map(|(_, v)| v.1).sum();
            assert_eq!(calls_from_callers, n);
        }
        let root = f.entries.last().unwrap();
        assert_eq!(root.key, ("~".to_string(), 0, format!("<{name} rank 0>")));
        let roots: i64 = totals.roots.values().sum();
        assert!((root.ct - roots as f64 / 1e9).abs() < 1e-12);
    }
}

#[test]
fn call_paths_totals_match_the_reconstruction() {
    let run = reference("threads");
    let files = prof_stats(&run, &Selection::new(vec![0], "threads"), ProfOptions::default()).unwrap();
    let f = &files[0];
    // independent: per (path) Σ from a parent walk over the reconstructed calls
    let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
    let name = |i: usize| run.region_names[run.regions[rows[calls.region_index[i] as usize]].region as usize].clone();
    let mut want: std::collections::BTreeMap<String, (i64, i64, i64)> = Default::default();
    for i in 0..calls.len() {
        let mut path = vec![name(i)];
        let mut p = calls.parent[i];
        while p >= 0 {
            path.push(name(p as usize));
            p = calls.parent[p as usize];
        }
        path.reverse();
        let w = want.entry(path.join(" > ")).or_default();
        w.0 += 1;
        w.1 += calls.exclusive_ns[i];
        w.2 += calls.end_ns[i] - calls.start_ns[i];
    }
    assert_eq!(f.entries.len(), want.len() + 1);
    for (path, (n, excl, incl)) in want {
        let e = entry(f, &path);
        assert_eq!((e.cc, e.nc), (n, n), "{path}");
        assert!((e.tt - excl as f64 / 1e9).abs() < 1e-12);
        assert!((e.ct - incl as f64 / 1e9).abs() < 1e-12);
        assert_eq!(e.callers.len(), 1);
        let caller = &e.callers[0].0 .2;
        match path.rsplit_once(" > ") {
            Some((parent, _)) => assert_eq!(caller, parent),
            None => assert_eq!(caller, "<threads rank 0>"),
        }
    }
}

/// Thread A runs `a` [0,100]; thread B runs `a` [10,20] > `b` [12,14] while A's call is
/// open. The reference counts B's call as recursive (cc 1, ct 100 ns); per lane it is a
/// primitive call of its own thread: cc 2, ct 110 ns.
#[test]
fn same_name_on_another_thread_is_not_recursion() {
    let run = Run {
        region_names: vec!["a".into(), "b".into()],
        regions: vec![
            lane_row(0, &[0, 10], &[100, 20], &[0, 1], None, None),
            lane_row(1, &[12], &[14], &[1], None, None),
        ],
        threads: vec![thread(0, "MainThread"), thread(1, "worker")],
        num_ranks: 1,
        ..Default::default()
    };
    let files =
        prof_stats(&run, &Selection::new(vec![0], "x"), ProfOptions { call_paths: false, per_lane: false }).unwrap();
    let a = entry(&files[0], "a");
    assert_eq!((a.cc, a.nc), (2, 2));
    assert!((a.ct - 110e-9).abs() < 1e-15);
    assert_eq!(a.callers.len(), 1, "both calls of a are top-level");
    assert_eq!(a.callers[0].1 .0, 2);
    // real recursion on one lane still counts: a [0,100] > a [10,90] > {a [20,40], b [50,60]}; a [200,240]
    let run = Run {
        region_names: vec!["a".into(), "b".into()],
        regions: vec![row(0, &[0, 10, 20, 200], &[100, 90, 40, 240]), row(1, &[50], &[60])],
        num_ranks: 1,
        ..Default::default()
    };
    let files =
        prof_stats(&run, &Selection::new(vec![0], "x"), ProfOptions { call_paths: false, per_lane: false }).unwrap();
    let a = entry(&files[0], "a");
    // primitive: the two outer calls (100 + 40 ns); exclusive: 20 + 50 + 20 + 40 = 130 ns
    assert_eq!((a.cc, a.nc), (2, 4));
    assert!((a.tt - 130e-9).abs() < 1e-15 && (a.ct - 140e-9).abs() < 1e-15);
    let root = &a.callers[0];
    assert_eq!(root.0 .2, "<x rank 0>");
    assert_eq!((root.1 .0, root.1 .1), (2, 2));
    assert!((root.1 .2 - 60e-9).abs() < 1e-15 && (root.1 .3 - 140e-9).abs() < 1e-15);
    // the self-edge as cProfile writes it, (nc, cc, tt, ct): two calls a -> a, of which
    // [10,90] is primitive on the edge ([20,40] is inside another a -> a call), ct its 80 ns
    let from_a = &a.callers[1];
    assert_eq!(from_a.0 .2, "a");
    assert_eq!((from_a.1 .0, from_a.1 .1), (2, 1));
    assert!((from_a.1 .2 - 70e-9).abs() < 1e-15 && (from_a.1 .3 - 80e-9).abs() < 1e-15);
}

#[test]
fn per_lane_files_and_names() {
    let run = reference("async");
    let sel = Selection::new(vec![0], "async");
    let files = prof_stats(&run, &sel, ProfOptions { call_paths: true, per_lane: true }).unwrap();
    let totals = lane_totals(&run, 0);
    assert_eq!(files.len(), totals.by_name.len());
    assert_eq!(files[0].lane_name.as_deref(), Some("MainThread"));
    for f in &files {
        let root = f.entries.last().unwrap();
        assert_eq!(root.key.2, format!("<async rank 0 - {}>", f.lane_name.as_ref().unwrap()));
        assert!((root.ct - totals.roots[&f.lane.unwrap()] as f64 / 1e9).abs() < 1e-12);
    }
    let dir = tempfile::tempdir().unwrap();
    let written =
        write_prof(&run, &sel, &dir.path().join("out.prof"), ProfOptions { call_paths: true, per_lane: true }).unwrap();
    let names: Vec<String> = written.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names[0], "out_rank0_MainThread.prof");
    assert_eq!(names[1], "out_rank0_Task-1_main_on_MainThread.prof");
    assert_eq!(prof_path(&dir.path().join("a.b.prof"), &files[0]).file_name().unwrap(), "a.b_rank0_MainThread.prof");
    let whole = write_prof(&run, &sel, &dir.path().join("out.prof"), ProfOptions::default()).unwrap();
    // one file: the name as given
    assert_eq!(whole, vec![dir.path().join("out.prof")]);
}

/// 0.7.5's `export_prof` names every file per rank, a single one too (`profile.prof` ->
/// `profile_rank0.prof`); the command line keeps one file's name as given.
#[test]
fn reference_naming_names_a_single_file_per_rank() {
    let run = reference("async");
    let sel = Selection::new(vec![0], "async");
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("profile.prof");
    let named = write_prof_named(&run, &sel, &target, ProfOptions::default(), ProfNaming::Reference).unwrap();
    assert_eq!(named, vec![dir.path().join("profile_rank0.prof")]);
    assert!(named[0].exists() && !target.exists());
    let as_given = write_prof_named(&run, &sel, &target, ProfOptions::default(), ProfNaming::OneFileAsGiven).unwrap();
    assert_eq!(as_given, vec![target.clone()]);
    assert_eq!(std::fs::read(&named[0]).unwrap(), std::fs::read(&target).unwrap(), "the same statistics");
}

#[test]
fn errors() {
    let run = reference("single");
    let none = Selection::new(vec![0], "x").with_regions(vec!["no such region".into()]);
    assert_eq!(prof_stats(&run, &none, ProfOptions::default()), Err(ExportError::NoCalls));
    let bad = Run {
        region_names: vec!["a".into(), "b".into()],
        regions: vec![row(0, &[0], &[10]), row(1, &[5], &[15])],
        num_ranks: 1,
        ..Default::default()
    };
    let err = prof_stats(&bad, &Selection::new(vec![0], "x"), ProfOptions::default()).unwrap_err();
    assert!(matches!(err, ExportError::Nesting(_)), "{err:?}");
    let dir = tempfile::tempdir().unwrap();
    assert!(
        write_prof(&bad, &Selection::new(vec![0], "x"), &dir.path().join("o.prof"), ProfOptions::default()).is_err()
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left behind");
}

#[test]
fn region_filter_reparents_to_kept_ancestor() {
    let run = reference("async");
    let sel = Selection::new(vec![0], "async").with_regions(vec!["crawl".into(), "parse".into()]);
    let files = prof_stats(&run, &sel, ProfOptions::default()).unwrap();
    let names: Vec<&str> = files[0].entries.iter().map(|e| e.key.2.as_str()).collect();
    assert!(names.contains(&"parse") && names.contains(&"crawl"), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("fetch")));
}

#[test]
fn marshal_encoding() {
    let e = StatEntry {
        key: ("f.py".into(), 3, "g".into()),
        cc: 1,
        nc: 5_000_000_000,
        tt: 0.5,
        ct: 1.25,
        callers: vec![(("~".into(), 0, "<r>".into()), (1, 2, 0.5, 1.0))],
    };
    let b = marshal_stats(&[e]);
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    insta::assert_snapshot!("marshal_bytes", hex);
}

#[test]
fn golden_dumps() {
    let run = reference("threads");
    let sel = Selection::new(vec![0], "threads");
    insta::assert_snapshot!("threads_call_paths", dump(&prof_stats(&run, &sel, ProfOptions::default()).unwrap()));
    insta::assert_snapshot!(
        "threads_by_region",
        dump(&prof_stats(&run, &sel, ProfOptions { call_paths: false, per_lane: false }).unwrap())
    );
    let run = reference("async");
    let sel = Selection::new(vec![0], "async");
    insta::assert_snapshot!(
        "async_per_lane",
        dump(&prof_stats(&run, &sel, ProfOptions { call_paths: true, per_lane: true }).unwrap())
    );
    // files for the consumer checks (pstats_check.py)
    let out = out_dir();
    write_prof(&run, &sel, &out.join("async.prof"), ProfOptions::default()).unwrap();
    write_prof(
        &reference("threads"),
        &Selection::new(vec![0], "threads"),
        &out.join("threads.prof"),
        ProfOptions::default(),
    )
    .unwrap();
}

/// A call the reconstruction sets aside (it crosses another call on its lane) is in no
/// lane, so in no entry and not in the root's time, as in every other export.
#[test]
fn set_aside_calls_are_left_out() {
    // thread 0: a [0, 100], b [50, 150] crosses it; c [200, 210]
    let run = Run {
        region_names: vec!["a".into(), "b".into(), "c".into()],
        regions: vec![
            lane_row(0, &[0], &[100], &[0], None, None),
            lane_row(1, &[50], &[150], &[0], None, None),
            lane_row(2, &[200], &[210], &[0], None, None),
        ],
        threads: vec![thread(0, "MainThread")],
        num_ranks: 1,
        ..Default::default()
    };
    let (_, calls) = rank_call_arrays(&run, 0).unwrap();
    assert_eq!(calls.set_aside.len(), 1, "the run has a set-aside call");
    for call_paths in [true, false] {
        let files =
            prof_stats(&run, &Selection::new(vec![0], "x"), ProfOptions { call_paths, per_lane: false }).unwrap();
        let e = &files[0].entries;
        let n: i64 = e[..e.len() - 1].iter().map(|x| x.nc).sum();
        assert_eq!(n, 2, "{call_paths}");
        assert!((e.last().unwrap().ct - 110e-9).abs() < 1e-15, "root: a and c");
    }
}

/// A 3,000-deep recursion collapses as cProfile collapses it (not a distinct call path per
/// depth, 52 MB): both modes give one entry with a self-edge, counted as cProfile counts: nc 3000, cc 1, ct the outermost call only; the
/// self-edge `(nc, cc, tt, ct)` = (2999, 1, ..., the second call's duration).
#[test]
fn a_deep_recursion_is_one_entry_with_a_self_edge() {
    let depth = 3000;
    let run = deep_recursion(depth);
    let outer_ns = 10 * 2 * depth + 5; // [0, 60005]
    let second_ns = outer_ns - 20;
    for call_paths in [true, false] {
        let files =
            prof_stats(&run, &Selection::new(vec![0], "deep"), ProfOptions { call_paths, per_lane: false }).unwrap();
        let entries = &files[0].entries;
        assert_eq!(entries.len(), 2, "one entry and the root (call_paths={call_paths})");
        let rec = entry(&files[0], "rec");
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
        assert!(bytes < 1024, "{bytes} bytes (a call path per depth: 54 MB)");
    }
}

/// Recursion through another region collapses too, and the paths keep
/// their context: `a > b > a > b > c` is the entries `a`, `a > b` and `a > b > c`, the inner
/// `a` a call of `a` from `a > b` (a cycle, as cProfile shows mutual recursion).
#[test]
fn mutual_recursion_paths_collapse() {
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
    let f = &files[0];
    let (a, ab, abc) = (entry(f, "a"), entry(f, "a > b"), entry(f, "a > b > c"));
    assert_eq!((a.cc, a.nc, ab.cc, ab.nc, abc.cc, abc.nc), (1, 2, 1, 2, 1, 1));
    assert!((a.ct - 100e-9).abs() < 1e-15 && (ab.ct - 80e-9).abs() < 1e-15);
    let callers = |x: &StatEntry| x.callers.iter().map(|(k, v)| (k.2.clone(), v.0, v.1)).collect::<Vec<_>>();
    assert_eq!(callers(a), [("<m rank 0>".to_string(), 1, 1), ("a > b".to_string(), 1, 1)]);
    assert_eq!(callers(ab), [("a".to_string(), 2, 1)]);
    assert_eq!(callers(abc), [("a > b".to_string(), 1, 1)]);
}
