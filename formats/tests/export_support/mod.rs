//! Helpers shared by the export tests (pstats, chrome_trace, perfetto, pprof).
#![allow(dead_code)]
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::Int64Array;
use scope_profiler_analysis::*;
use scope_profiler_formats::read_h5;

pub fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets")
}

pub fn reference(name: &str) -> Run {
    read_h5(&datasets().join(format!("reference/{name}.h5"))).unwrap()
}

pub fn expected(name: &str) -> serde_json::Value {
    let p = datasets().join(format!("reference/{name}.expected.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Output directory for files the consumer checks can be run on by hand.
pub fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exports");
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn row(region: u32, s: &[i64], e: &[i64]) -> RegionCalls {
    RegionCalls::new(region, 0, Int64Array::from(s.to_vec()), Int64Array::from(e.to_vec()))
}

/// A row with thread (and task / await) columns.
pub fn lane_row(
    region: u32,
    s: &[i64],
    e: &[i64],
    threads: &[i64],
    tasks: Option<&[i64]>,
    awaits: Option<&[i64]>,
) -> RegionCalls {
    let mut r = row(region, s, e);
    r.thread_ids = Some(Int64Array::from(threads.to_vec()));
    r.task_ids = tasks.map(|t| Int64Array::from(t.to_vec()));
    r.await_ns = awaits.map(|a| Int64Array::from(a.to_vec()));
    r
}

pub fn thread(index: i64, name: &str) -> ThreadRow {
    ThreadRow {
        ready_wait_ns: -1,
        rank: 0,
        index,
        ident: 100 + index,
        native_id: 1000 + index,
        daemon: false,
        start_ns: 0,
        end_ns: -1,
        cpu_ns: 0,
        cpu_start_ns: -1,
        name: name.into(),
    }
}

/// Independent per-lane totals from the reconstruction: lane -> name -> (calls, Σ inclusive
/// ns, Σ exclusive ns), plus per lane Σ of root durations and Σ of root await ns.
pub struct LaneTotals {
    pub by_name: BTreeMap<i64, BTreeMap<String, (i64, i64, i64)>>,
    pub roots: BTreeMap<i64, i64>,
    pub root_await: BTreeMap<i64, i64>,
}

pub fn lane_totals(run: &Run, rank: u32) -> LaneTotals {
    let (rows, calls) = rank_call_arrays(run, rank).unwrap();
    let mut t = LaneTotals { by_name: BTreeMap::new(), roots: BTreeMap::new(), root_await: BTreeMap::new() };
    for i in 0..calls.len() {
        let row = &run.regions[rows[calls.region_index[i] as usize]];
        let name = run.region_names[row.region as usize].clone();
        let lane = calls.lane_of(i);
        let d = calls.end_ns[i] - calls.start_ns[i];
        let e = t.by_name.entry(lane).or_default().entry(name).or_default();
        e.0 += 1;
        e.1 += d;
        e.2 += calls.exclusive_ns[i];
        if calls.parent[i] < 0 {
            *t.roots.entry(lane).or_default() += d;
            let aw = row.await_ns.as_ref().map(|a| a.value(calls.call_index[i] as usize)).unwrap_or(0);
            *t.root_await.entry(lane).or_default() += aw;
        }
    }
    t
}

/// A `depth`-deep recursion of one region (with a source location): call k spans
/// `[10 k, 10 (2 depth - k) + 5]` ns, so every call is 20 ns longer than the one inside it.
pub fn deep_recursion(depth: i64) -> Run {
    let s: Vec<i64> = (0..depth).map(|k| 10 * k).collect();
    let e: Vec<i64> = (0..depth).map(|k| 10 * (2 * depth - k) + 5).collect();
    let mut r = row(0, &s, &e);
    r.source_file = Some("rec.py".into());
    r.source_line = Some(3);
    Run { region_names: vec!["rec".into()], regions: vec![r], num_ranks: 1, ..Default::default() }
}
