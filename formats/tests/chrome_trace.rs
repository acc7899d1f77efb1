//! Chrome trace export: one track per lane (tasks named), metadata, exact µs timestamps,
//! identical calls share name and args; totals against the reconstruction; golden document.
mod export_support;

use std::collections::{BTreeMap, HashMap};

use export_support::*;
use scope_profiler_formats::chrome_trace::{write_chrome_trace, write_chrome_trace_to};
use scope_profiler_formats::{ExportError, Selection};
use serde_json::Value;

fn export(run: &scope_profiler_analysis::Run, sel: &Selection) -> Value {
    let mut buf = Vec::new();
    write_chrome_trace_to(run, sel, &mut buf).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

/// ns from a µs number printed with three decimals
fn ns(v: &Value) -> i64 {
    let s = v.to_string();
    let (a, b) = s.split_once('.').unwrap_or((&s, "0"));
    a.parse::<i64>().unwrap() * 1000 + format!("{b:0<3}")[..3].parse::<i64>().unwrap()
}

#[test]
fn lanes_tracks_and_totals() {
    for name in ["threads", "async", "single", "pool"] {
        let run = reference(name);
        let doc = export(&run, &Selection::new(vec![0], name));
        assert_eq!(doc["displayTimeUnit"], "ms");
        assert_eq!(doc["metadata"]["name"], name);
        let events = doc["traceEvents"].as_array().unwrap();
        let mut track_names: BTreeMap<i64, String> = BTreeMap::new();
        let mut per_track: BTreeMap<i64, BTreeMap<String, (i64, i64)>> = BTreeMap::new();
        let mut args_of: HashMap<String, Value> = HashMap::new();
        let mut last_ts: HashMap<i64, i64> = HashMap::new();
        for e in events {
            match e["ph"].as_str().unwrap() {
                "M" => {
                    if e["name"] == "thread_name" {
                        track_names.insert(e["tid"].as_i64().unwrap(), e["args"]["name"].as_str().unwrap().into());
                    }
                }
                "X" => {
                    let tid = e["tid"].as_i64().unwrap();
                    let ts = ns(&e["ts"]);
                    assert!(ts >= *last_ts.get(&tid).unwrap_or(&0), "ts decreases on a track");
                    last_ts.insert(tid, ts);
                    let n = e["name"].as_str().unwrap().to_string();
                    // identical calls: same args (no per-call values)
                    let a = e.get("args").cloned().unwrap_or(Value::Null);
                    assert_eq!(args_of.entry(n.clone()).or_insert_with(|| a.clone()), &a);
                    let t = per_track.entry(tid).or_default().entry(n).or_default();
                    t.0 += 1;
                    t.1 += ns(&e["dur"]);
                }
                p => panic!("phase {p}"),
            }
        }
        // independent totals per lane from the reconstruction, matched by lane name
        let totals = lane_totals(&run, 0);
        let labels = scope_profiler_analysis::LaneLabels::new(&run, 0);
        assert_eq!(per_track.len(), totals.by_name.len());
        for (lane, names) in &totals.by_name {
            let want_name = if *lane == -1 { "rank 0".to_string() } else { labels.label(*lane) };
            let tid = *track_names.iter().find(|(_, n)| **n == want_name).unwrap().0;
            let got: BTreeMap<String, (i64, i64)> = per_track[&tid].clone();
            let want: BTreeMap<String, (i64, i64)> = names.iter().map(|(k, v)| (k.clone(), (v.0, v.1))).collect();
            assert_eq!(got, want, "{name} lane {want_name}");
        }
        // main thread first
        if run.has_thread_ids() {
            assert_eq!(track_names[&0], "MainThread");
        }
    }
}

#[test]
fn timestamps_from_run_start() {
    let run = reference("threads");
    let doc = export(&run, &Selection::new(vec![0], "t"));
    let start = run.meta_int("start_time_ns").unwrap();
    let (rows, calls) = scope_profiler_analysis::rank_call_arrays(&run, 0).unwrap();
    let _ = rows;
    let first = calls.start_ns.iter().min().unwrap() - start;
    let min_ts =
        doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").map(|e| ns(&e["ts"])).min().unwrap();
    assert_eq!(min_ts, first);
}

#[test]
fn errors_and_atomic_write() {
    let run = reference("single");
    let none = Selection::new(vec![0], "x").with_regions(vec!["nope".into()]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sub/o.trace.json");
    assert_eq!(write_chrome_trace(&run, &none, &p), Err(ExportError::NoCalls));
    assert!(!p.exists());
    write_chrome_trace(&run, &Selection::new(vec![0], "x"), &p).unwrap();
    assert!(p.exists());
}

#[test]
fn golden_async() {
    let run = reference("async");
    let mut buf = Vec::new();
    write_chrome_trace_to(&run, &Selection::new(vec![0], "async"), &mut buf).unwrap();
    insta::assert_snapshot!("async_trace", String::from_utf8(buf).unwrap());
    // files for the consumer checks
    let out = out_dir();
    write_chrome_trace(&run, &Selection::new(vec![0], "async"), &out.join("async.trace.json")).unwrap();
    write_chrome_trace(&reference("threads"), &Selection::new(vec![0], "threads"), &out.join("threads.trace.json"))
        .unwrap();
}
