//! Scale check of the pstats / Chrome trace / Perfetto / pprof writers (ignored by default):
//! `cargo test --release -p scope-profiler-formats --test trace_exports_scale -- --ignored --nocapture`
mod export_support;

use std::time::Instant;

use export_support::*;
use scope_profiler_analysis::Run;
use scope_profiler_formats::pstats::{write_prof, ProfOptions};
use scope_profiler_formats::{chrome_trace, perfetto, pprof, Selection};

/// `threads` threads, each `n` calls of `outer > inner` (2n calls per thread).
fn big(threads: i64, n: i64) -> Run {
    let (mut os, mut oe, mut ot, mut is, mut ie, mut it) = (vec![], vec![], vec![], vec![], vec![], vec![]);
    for t in 0..threads {
        for k in 0..n {
            let s = k * 100 + t;
            os.push(s);
            oe.push(s + 90);
            ot.push(t);
            is.push(s + 10);
            ie.push(s + 50);
            it.push(t);
        }
    }
    Run {
        region_names: vec!["outer".into(), "inner".into()],
        regions: vec![lane_row(0, &os, &oe, &ot, None, None), lane_row(1, &is, &ie, &it, None, None)],
        threads: (0..threads).map(|i| thread(i, &format!("t{i}"))).collect(),
        num_ranks: 1,
        ..Default::default()
    }
}

#[test]
#[ignore]
fn two_million_calls() {
    let run = big(8, 125_000);
    let sel = Selection::new(vec![0], "big");
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    write_prof(&run, &sel, &dir.path().join("b.prof"), ProfOptions::default()).unwrap();
    println!("pstats      {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    write_prof(&run, &sel, &dir.path().join("b.prof"), ProfOptions { call_paths: false, per_lane: false }).unwrap();
    println!("pstats flat {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    chrome_trace::write_chrome_trace(&run, &sel, &dir.path().join("b.trace.json")).unwrap();
    println!("chrome      {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    perfetto::write_perfetto(&run, &sel, &dir.path().join("b.pftrace")).unwrap();
    println!("perfetto    {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    pprof::write_pprof(&run, &sel, &dir.path().join("b.pb.gz")).unwrap();
    println!("pprof       {:.2} s", t.elapsed().as_secs_f64());
}
