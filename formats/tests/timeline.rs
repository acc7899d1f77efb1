//! Lane timeline SVG: golden file, one row per lane labelled like the reference, one bar
//! (or dense strip) per call, await hatching only on task calls that awaited, sub-pixel
//! calls merged so size stays bounded, deterministic bytes.
mod export_support;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::timeline::{timeline_svg, write_timeline_svg, TimelineOptions};
use scope_profiler_formats::{ExportError, Selection};

fn render(run: &Run, name: &str) -> String {
    timeline_svg(run, &Selection::new(vec![0], name), &TimelineOptions::default()).unwrap()
}

/// The lane labels in row order (the bold/normal text right after each row's title).
fn row_labels(svg: &str) -> Vec<String> {
    svg.lines()
        .filter(|l| l.starts_with("<text x=\"8.0\"") || l.starts_with("<text x=\"20.0\""))
        .map(|l| {
            let full = l.split("<title>").nth(1).unwrap().split("</title>").next().unwrap();
            full.split('\n').next().unwrap().to_string()
        })
        .collect()
}

#[test]
fn reference_runs_rows_bars_and_golden() {
    for name in ["threads", "async", "pool", "single"] {
        let run = reference(name);
        let s = render(&run, name);
        assert_eq!(s, render(&run, name), "deterministic");
        let exp = expected(name);
        let lanes = exp["call_arrays"]["lanes"].as_array().unwrap();
        // one row per lane
        assert_eq!(s.matches("<g class=\"lane\"").count(), lanes.len(), "{name}");
        let mut got = row_labels(&s);
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
        assert_eq!(got.len(), want.len());
        // main thread first
        if lanes.len() > 1 {
            assert_eq!(got[0], "MainThread", "{name}");
        }
        got.sort();
        want.sort();
        assert_eq!(got, want, "{name}");
        // one bar per call (these runs have no sub-pixel calls at the default width)
        let n_calls = exp["call_arrays"]["num_calls"].as_u64().unwrap() as usize;
        assert_eq!(s.matches("<g><title>").count(), n_calls, "{name}");
        // hatching: one overlay per call that awaited (legend sample aside)
        let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
        let awaited = (0..calls.len())
            .filter(|&i| {
                let r = &run.regions[rows[calls.region_index[i] as usize]];
                r.await_ns.as_ref().map(|a| a.value(calls.call_index[i] as usize) > 0).unwrap_or(false)
            })
            .count();
        let overlays = s.matches("fill=\"url(#await)\"").count();
        assert_eq!(overlays, if awaited > 0 { awaited + 1 } else { 0 }, "{name}");
        if name == "async" {
            assert!(s.contains("await 2.135 ms (48%)"), "tooltip with the await share");
        }
    }
    insta::assert_snapshot!("async_timeline", render(&reference("async"), "async"));
    insta::assert_snapshot!("threads_timeline", render(&reference("threads"), "threads"));
}

#[test]
fn sub_pixel_calls_merge_into_dense_strips() {
    let n = 100_000i64;
    let mut run = Run { region_names: vec!["outer".into(), "tiny".into()], num_ranks: 1, ..Default::default() };
    run.regions.push(row(0, &[0], &[n * 100]));
    let starts: Vec<i64> = (0..n).map(|i| i * 100 + 10).collect();
    let ends: Vec<i64> = starts.iter().map(|s| s + 50).collect();
    run.regions.push(row(1, &starts, &ends));
    let s = render(&run, "dense");
    assert!(s.len() < 50_000, "size bounded by the picture: {} bytes", s.len());
    let mut merged = 0u64;
    for t in s.split("<title>").skip(1) {
        let t = t.split("</title>").next().unwrap();
        if let Some(k) = t.split(" short call(s)").next().filter(|_| t.contains(" short call(s)")) {
            merged += k.parse::<u64>().unwrap();
        }
    }
    assert_eq!(merged, n as u64, "every tiny call is counted once");
    assert!(s.contains("calls &lt; 1 px, merged"), "legend explains the grey strips");
}

#[test]
fn errors_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.svg");
    let empty = Run { region_names: vec!["a".into()], num_ranks: 1, ..Default::default() };
    assert_eq!(write_timeline_svg(&empty, &Selection::new(vec![0], "x"), &p), Err(ExportError::NoCalls));
    assert!(!p.exists());
    write_timeline_svg(&reference("pool"), &Selection::new(vec![0], "pool"), &p).unwrap();
    assert!(std::fs::read_to_string(&p).unwrap().ends_with("</svg>\n"));
}
