//! Folded stacks: golden files of the reference runs, per-frame self totals against the
//! reconstruction and the reference's own exclusive durations, lane labels as roots,
//! sanitizing, region filtering, units, ranks, errors.
mod export_support;

use std::collections::BTreeMap;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::folded::{folded_stacks, write_folded, write_folded_to, FoldedUnit};
use scope_profiler_formats::{ExportError, Selection};

fn text(run: &Run, sel: &Selection) -> String {
    let mut buf = Vec::new();
    write_folded_to(run, sel, FoldedUnit::Nanoseconds, &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

/// (root, leaf) -> Σ count, from the text.
fn by_root_leaf(folded: &str) -> BTreeMap<(String, String), u64> {
    let mut m = BTreeMap::new();
    for line in folded.lines() {
        let (path, count) = line.rsplit_once(' ').unwrap();
        let frames: Vec<&str> = path.split(';').collect();
        assert!(frames.len() >= 2, "every line has a lane root and a region: {line}");
        *m.entry((frames[0].to_string(), frames.last().unwrap().to_string())).or_default() +=
            count.parse::<u64>().unwrap();
    }
    m
}

#[test]
fn reference_runs_golden_and_totals() {
    for name in ["threads", "async", "pool", "single"] {
        let run = reference(name);
        let folded = text(&run, &Selection::new(vec![0], name));
        insta::assert_snapshot!(format!("{name}_folded"), folded);
        let exp = expected(name);
        // roots: exactly the lane labels the reference gives (untracked: "rank 0")
        let lanes = exp["call_arrays"]["lanes"].as_array().unwrap();
        let mut roots: Vec<String> = folded.lines().map(|l| l.split(';').next().unwrap().to_string()).collect();
        roots.sort();
        roots.dedup();
        let mut want: Vec<String> =
            lanes
                .iter()
                .map(|l| {
                    if l[0].as_i64().unwrap() == -1 {
                        "rank 0".to_string()
                    } else {
                        l[2].as_str().unwrap().to_string()
                    }
                })
                .collect();
        want.sort();
        assert_eq!(roots, want, "{name}: one root per lane");
        // per lane and region: Σ counts of lines ending in the region = Σ exclusive ns (reconstruction)
        let totals = lane_totals(&run, 0);
        let labels = LaneLabels::new(&run, 0);
        let got = by_root_leaf(&folded);
        for (lane, regions) in &totals.by_name {
            let root = if *lane == -1 { "rank 0".to_string() } else { labels.label(*lane) };
            for (region, (_, _, excl)) in regions {
                let g = got.get(&(root.clone(), region.clone())).copied().unwrap_or(0);
                assert_eq!(g as i64, *excl, "{name}: {root};…;{region}");
            }
        }
        // per region over all lanes = the reference's exclusive_duration
        let mut per_region: BTreeMap<String, u64> = BTreeMap::new();
        for ((_, leaf), c) in &got {
            *per_region.entry(leaf.clone()).or_default() += c;
        }
        for (region, ranks) in exp["regions"].as_object().unwrap() {
            let want = ranks["0"]["exclusive_duration"].as_f64().unwrap();
            let g = per_region.get(region).copied().unwrap_or(0) as f64 / 1e9;
            assert!((g - want).abs() < 1e-12, "{name}/{region}: {g} vs {want}");
        }
        // the whole file: Σ counts = Σ durations of lane roots
        let total: u64 = got.values().sum();
        assert_eq!(total as i64, totals.roots.values().sum::<i64>(), "{name}");
    }
}

#[test]
fn frame_names_are_sanitized_and_lines_aggregate_per_path() {
    let mut run =
        Run { region_names: vec!["a;b".into(), "line\nbreak".into(), "".into()], num_ranks: 1, ..Default::default() };
    // a;b [0,100] ⊃ line\nbreak [10,20], [30,50]; "" [60,70] inside a;b
    run.regions.push(row(0, &[0], &[100]));
    run.regions.push(row(1, &[10, 30], &[20, 50]));
    run.regions.push(row(2, &[60], &[70]));
    let t = text(&run, &Selection::new(vec![0], "x"));
    assert_eq!(t, "rank 0;a:b 60\nrank 0;a:b;? 10\nrank 0;a:b;line break 30\n");
}

#[test]
fn filtered_region_hands_its_time_to_the_nearest_kept_ancestor() {
    let mut run =
        Run { region_names: vec!["outer".into(), "mid".into(), "leaf".into()], num_ranks: 1, ..Default::default() };
    run.regions.push(row(0, &[0], &[100]));
    run.regions.push(row(1, &[10], &[90]));
    run.regions.push(row(2, &[20], &[30]));
    let sel = Selection::new(vec![0], "x").with_regions(vec!["outer".into(), "leaf".into()]);
    assert_eq!(text(&run, &sel), "rank 0;outer 90\nrank 0;outer;leaf 10\n");
}

#[test]
fn microseconds_round_per_path_and_drop_zero_lines() {
    let mut run = Run { region_names: vec!["a".into(), "b".into()], num_ranks: 1, ..Default::default() };
    run.regions.push(row(0, &[0], &[10_000]));
    run.regions.push(row(1, &[100, 9_000], &[400, 9_999]));
    let lines = folded_stacks(&run, &Selection::new(vec![0], "x"), FoldedUnit::Microseconds).unwrap();
    // a: 10000 - 300 - 999 = 8701 ns -> 9 us; b: 1299 ns -> 1 us
    assert_eq!(lines, vec![("rank 0;a".to_string(), 9), ("rank 0;a;b".to_string(), 1)]);
    let mut tiny = Run { region_names: vec!["t".into()], num_ranks: 1, ..Default::default() };
    tiny.regions.push(row(0, &[0], &[400]));
    assert!(folded_stacks(&tiny, &Selection::new(vec![0], "x"), FoldedUnit::Microseconds).unwrap().is_empty());
}

#[test]
fn several_ranks_prefix_the_lane_and_threads_are_separate_roots() {
    let mut run = Run { region_names: vec!["w".into()], num_ranks: 2, ..Default::default() };
    run.regions.push(lane_row(0, &[0, 5], &[10, 8], &[0, 1], None, None));
    let mut r1 = lane_row(0, &[0], &[7], &[0], None, None);
    r1.rank = 1;
    run.regions.push(r1);
    run.threads = vec![thread(0, "MainThread"), thread(1, "worker")];
    let mut t1 = thread(0, "MainThread");
    t1.rank = 1;
    run.threads.push(t1);
    let one = text(&run, &Selection::new(vec![0], "x"));
    assert_eq!(one, "MainThread;w 10\nworker;w 3\n");
    let both = text(&run, &Selection::new(vec![0, 1], "x"));
    assert_eq!(both, "rank 0 - MainThread;w 10\nrank 0 - worker;w 3\nrank 1 - MainThread;w 7\n");
    // two lanes with one label stay apart
    run.threads[1].name = "MainThread".into();
    let dup = text(&run, &Selection::new(vec![0], "x"));
    assert_eq!(dup, "MainThread [lane -2];w 10\nMainThread [lane -3];w 3\n");
}

#[test]
fn errors_and_atomic_write() {
    let mut run = Run { region_names: vec!["a".into(), "b".into()], num_ranks: 1, ..Default::default() };
    run.regions.push(row(0, &[0], &[10]));
    run.regions.push(row(1, &[5], &[15]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/out.folded");
    match write_folded(&run, &Selection::new(vec![0], "x"), &path) {
        Err(ExportError::Nesting(m)) => assert!(m.contains("not properly nested"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(!path.exists());
    let empty = Run { region_names: vec!["a".into()], num_ranks: 1, ..Default::default() };
    assert_eq!(write_folded(&empty, &Selection::new(vec![0], "x"), &path), Err(ExportError::NoCalls));
    let ok = reference("threads");
    write_folded(&ok, &Selection::new(vec![0], "threads"), &path).unwrap();
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["out.folded".to_string()], "no temp file left");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text(&ok, &Selection::new(vec![0], "threads")));
}

/// The size `folded_stacks_within` measures before making a line is the text's size to the
/// byte (both units, every reference run); over the limit, no line is made and the size is
/// returned.
#[test]
fn the_text_size_is_known_before_the_lines_are_made() {
    use scope_profiler_formats::folded::folded_stacks_within;
    for name in ["threads", "async", "pool", "single"] {
        let run = reference(name);
        let sel = Selection::new(vec![0], name);
        for unit in [FoldedUnit::Nanoseconds, FoldedUnit::Microseconds] {
            let mut buf = Vec::new();
            write_folded_to(&run, &sel, unit, &mut buf).unwrap();
            let size = buf.len() as u64;
            let lines = folded_stacks_within(&run, &sel, unit, size).unwrap().expect("within its own size");
            assert_eq!(lines, folded_stacks(&run, &sel, unit).unwrap(), "{name}");
            assert_eq!(folded_stacks_within(&run, &sel, unit, size - 1).unwrap(), Err(size), "{name}");
        }
    }
}
