//! speedscope export: one profile per lane, main thread first, balanced events, monotonic
//! time, frames with source locations; event times identical to the reference's exports.
mod consumers;
mod export_support;

use std::collections::HashMap;
use std::path::Path;

use export_support::{datasets, expected, row};
use scope_profiler_analysis::*;
use scope_profiler_formats::speedscope::{thread_tracking_would_help, write_speedscope, write_speedscope_to, EXPORTER};
use scope_profiler_formats::{read_h5, ExportError};
use serde_json::Value;

fn export(run: &Run, ranks: &[u32], label: &str) -> Value {
    let mut buf = Vec::new();
    write_speedscope_to(run, ranks, label, &mut buf).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

/// Structural checks every document must pass; returns the profile names.
fn check_document(doc: &Value) -> Vec<String> {
    assert_eq!(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
    assert_eq!(doc["exporter"], EXPORTER);
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let mut names: Vec<&str> = frames.iter().map(|f| f["name"].as_str().unwrap()).collect();
    let n_frames = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n_frames, "one frame per region name");
    let profiles = doc["profiles"].as_array().unwrap();
    assert!((doc["activeProfileIndex"].as_u64().unwrap() as usize) < profiles.len());
    let mut emitted_first = Vec::new();
    for p in profiles {
        assert_eq!(p["type"], "evented");
        assert_eq!(p["unit"], "seconds");
        let events = p["events"].as_array().unwrap();
        assert!(!events.is_empty());
        let mut stack: Vec<u64> = Vec::new();
        let mut last = f64::NEG_INFINITY;
        for e in events {
            let at = e["at"].as_f64().unwrap();
            assert!(at >= last, "at decreases in {}", p["name"]);
            last = at;
            let frame = e["frame"].as_u64().unwrap();
            assert!((frame as usize) < n_frames);
            match e["type"].as_str().unwrap() {
                "O" => {
                    if !emitted_first.contains(&frame) {
                        emitted_first.push(frame);
                    }
                    stack.push(frame)
                }
                "C" => assert_eq!(stack.pop(), Some(frame), "unbalanced close in {}", p["name"]),
                t => panic!("event type {t}"),
            }
        }
        assert!(stack.is_empty(), "unclosed events in {}", p["name"]);
        assert_eq!(p["startValue"].as_f64().unwrap(), events[0]["at"].as_f64().unwrap());
        assert_eq!(p["endValue"].as_f64().unwrap(), events.last().unwrap()["at"].as_f64().unwrap());
    }
    // frames are numbered in order of first emission
    assert_eq!(emitted_first, (0..n_frames as u64).collect::<Vec<_>>());
    profiles.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn threads_one_profile_per_lane_main_first() {
    let run = read_h5(&datasets().join("reference/threads.h5")).unwrap();
    let doc = export(&run, &[0], "threads");
    let names = check_document(&doc);
    // lanes of expected.json, in thread-index order (main thread first)
    let mut lanes: Vec<(i64, i64, String)> = expected("threads")["call_arrays"]["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l[0].as_i64().unwrap(), l[1].as_i64().unwrap(), l[2].as_str().unwrap().to_string()))
        .collect();
    lanes.sort_by_key(|l| -2 - l.0);
    let want: Vec<String> = lanes.iter().map(|l| format!("rank 0 - {}", l.2)).collect();
    assert_eq!(names, want);
    assert_eq!(names[0], "rank 0 - MainThread");
    assert_eq!(doc["activeProfileIndex"], 0);
    assert_eq!(doc["name"], "threads");
    // two events per call
    for (p, l) in doc["profiles"].as_array().unwrap().iter().zip(&lanes) {
        assert_eq!(p["events"].as_array().unwrap().len() as i64, 2 * l.1);
    }
    // the earliest call starts at 0.0
    let min_start = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["startValue"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert_eq!(min_start, 0.0);
    // frames carry the source location when the region has one
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let solve = frames.iter().find(|f| f["name"] == "solve").unwrap();
    let row = run.regions.iter().find(|r| run.region_names[r.region as usize] == "solve").unwrap();
    assert_eq!(solve["file"].as_str(), row.source_file.as_deref());
    assert_eq!(solve["line"].as_i64(), row.source_line);
    let session = frames.iter().find(|f| f["name"] == "scope_profiler.session").unwrap();
    assert!(session.get("file").is_none() && session.get("line").is_none());
}

#[test]
fn tasks_after_threads_and_single_untracked() {
    let run = read_h5(&datasets().join("reference/async.h5")).unwrap();
    let names = check_document(&export(&run, &[0], "async"));
    assert_eq!(names[0], "rank 0 - MainThread");
    assert_eq!(names[1], "rank 0 - Task-1 (main) on MainThread");
    assert_eq!(names[2], "rank 0 - Task-2 (fetch) on MainThread");
    assert_eq!(names.len(), 8);

    let run = read_h5(&datasets().join("reference/single.h5")).unwrap();
    let doc = export(&run, &[0], "single");
    assert_eq!(check_document(&doc), vec!["rank 0".to_string()]);
    assert_eq!(doc["profiles"][0]["events"].as_array().unwrap().len(), 2 * 81);
}

#[test]
fn errors() {
    let run = read_h5(&datasets().join("reference/single.h5")).unwrap();
    let mut buf = Vec::new();
    assert_eq!(write_speedscope_to(&run, &[3], "x", &mut buf).unwrap_err(), ExportError::NoCalls);
    assert_eq!(
        write_speedscope_to(&run, &[], "x", &mut buf).unwrap_err().to_string(),
        "No calls recorded for the requested ranks."
    );
    let bad = Run {
        region_names: vec!["A".into(), "B".into()],
        regions: vec![row(0, &[0], &[10]), row(1, &[5], &[15])],
        ..Default::default()
    };
    let ExportError::Nesting(e) = write_speedscope_to(&bad, &[0], "x", &mut buf).unwrap_err() else {
        panic!("not a nesting error")
    };
    assert!(
        e.starts_with(
            "recorded calls are not properly nested: 'B' call 0 [5, 15] ns starts inside 'A' call 0 [0, 10] ns"
        ),
        "{e}"
    );
    // no partial file is left behind
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad.speedscope.json");
    assert!(write_speedscope(&bad, &[0], "x", &out).is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn nested_events_depth_first() {
    // a [0,100] > b [10,20], c [30,60] > d [40,50]; zero-length z [60,60] closes after c
    let run = Run {
        region_names: vec!["a".into(), "b".into(), "c".into(), "d".into(), "z".into()],
        regions: vec![
            row(0, &[0], &[100]),
            row(1, &[10], &[20]),
            row(2, &[30], &[60]),
            row(3, &[40], &[50]),
            row(4, &[60], &[60]),
        ],
        num_ranks: 1,
        ..Default::default()
    };
    let doc = export(&run, &[0], "n");
    check_document(&doc);
    let ev: Vec<(String, u64, f64)> = doc["profiles"][0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["type"].as_str().unwrap().to_string(), e["frame"].as_u64().unwrap(), e["at"].as_f64().unwrap()))
        .collect();
    let t = |ns: f64| ns / 1e9;
    let want = vec![
        ("O", 0, t(0.0)),
        ("O", 1, t(10.0)),
        ("C", 1, t(20.0)),
        ("O", 2, t(30.0)),
        ("O", 3, t(40.0)),
        ("C", 3, t(50.0)),
        ("C", 2, t(60.0)),
        ("O", 4, t(60.0)),
        ("C", 4, t(60.0)),
        ("C", 0, t(100.0)),
    ];
    let want: Vec<(String, u64, f64)> = want.into_iter().map(|(a, b, c)| (a.to_string(), b, c)).collect();
    assert_eq!(ev, want);
}

/// Our events equal the reference's export of the same file, profile by profile (matched by
/// name; frames matched by name since the profile order differs).
fn compare_with_reference_export(h5: &Path, json: &Path) {
    let run = read_h5(h5).unwrap();
    let ours = export(&run, &[0], "x");
    let theirs: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let frame_names = |d: &Value| -> Vec<String> {
        d["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap().to_string()).collect()
    };
    let (of, tf) = (frame_names(&ours), frame_names(&theirs));
    let profiles = |d: &Value, frames: &[String]| -> HashMap<String, Vec<(String, String, f64)>> {
        d["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let ev = p["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| {
                        (
                            e["type"].as_str().unwrap().to_string(),
                            frames[e["frame"].as_u64().unwrap() as usize].clone(),
                            e["at"].as_f64().unwrap(),
                        )
                    })
                    .collect();
                (p["name"].as_str().unwrap().to_string(), ev)
            })
            .collect()
    };
    let (op, tp) = (profiles(&ours, &of), profiles(&theirs, &tf));
    assert_eq!(op.len(), tp.len(), "{}", h5.display());
    for (name, ev) in &tp {
        assert_eq!(op.get(name), Some(ev), "{}: profile {name}", h5.display());
    }
}

#[test]
fn same_events_as_reference_exports() {
    let Some(examples) = consumers::spec_examples() else { return };
    for stem in ["threads", "tasks", "untracked"] {
        compare_with_reference_export(
            &examples.join(format!("{stem}.h5")),
            &examples.join(format!("{stem}.speedscope.json")),
        );
    }
}

#[test]
fn recording_threads_is_suggested_only_for_calls_that_overlap_without_thread_data() {
    let overlapping = Run {
        region_names: vec!["A".into(), "B".into()],
        regions: vec![row(0, &[0], &[10]), row(1, &[5], &[15])],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let nesting = write_speedscope(&overlapping, &[0], "x", &dir.path().join("a.json")).unwrap_err();
    assert!(thread_tracking_would_help(&overlapping, &nesting));
    // thread data recorded: tracking is on, it would change nothing
    let mut tracked = overlapping.clone();
    tracked.regions[0].thread_ids = Some(arrow_array::Int64Array::from(vec![0]));
    tracked.regions[1].thread_ids = Some(arrow_array::Int64Array::from(vec![0]));
    assert!(!thread_tracking_would_help(&tracked, &nesting));
    // a write that fails (here: the target is a directory; ENOSPC alike) is no recording matter
    let nested = Run { region_names: vec!["A".into()], regions: vec![row(0, &[0], &[10])], ..Default::default() };
    let target = dir.path().join("taken.speedscope.json");
    std::fs::create_dir(&target).unwrap();
    let io = write_speedscope(&nested, &[0], "x", &target).unwrap_err();
    assert!(matches!(io, ExportError::Io(_) | ExportError::File { .. }), "{io:?}");
    assert!(!thread_tracking_would_help(&nested, &io));
    assert!(!thread_tracking_would_help(&overlapping, &ExportError::Io("No space left on device".into())));
    assert!(!thread_tracking_would_help(&overlapping, &ExportError::NoCalls));
}

#[test]
fn writes_file_creating_parent_dirs() {
    let run = read_h5(&datasets().join("reference/threads.h5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sub/dir/threads.speedscope.json");
    write_speedscope(&run, &[0], "threads", &out).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    check_document(&doc);
    if let Ok(keep) = std::env::var("SPEEDSCOPE_EXPORT_TO") {
        std::fs::copy(&out, keep).unwrap();
    }
}

/// speedscope's own importer and schema (`shared/clients/speedscope/speedscope_check.cjs`)
/// accept our exports.
#[test]
fn speedscope_importer_accepts_exports() {
    let Some(consumers::SpeedscopeImporter { check, node_dir }) = consumers::speedscope_importer() else { return };
    let dir = tempfile::tempdir().unwrap();
    for name in ["threads", "async", "single"] {
        let run = read_h5(&datasets().join(format!("reference/{name}.h5"))).unwrap();
        let out = dir.path().join(format!("{name}.speedscope.json"));
        write_speedscope(&run, &[0], name, &out).unwrap();
        let o = consumers::consumer_output(
            consumers::consumer_command("node")
                .arg(&check)
                .arg(&out)
                .args(["--expect", "speedscope json"])
                .env("CLIENTS_NODE_DIR", &node_dir),
        )
        .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{name}: {stdout}\n{}", String::from_utf8_lossy(&o.stderr));
        assert!(stdout.contains("schema: valid"), "{stdout}");
    }
}
