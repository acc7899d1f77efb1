//! Lane timeline SVG: golden file, one row per lane labelled like the reference, one bar
//! (or dense strip) per call, await hatching only on task calls that awaited, sub-pixel
//! calls merged so size stays bounded, deterministic bytes.
mod export_support;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::timeline::{parse_window, timeline_svg, write_timeline_svg, TimelineOptions, MAX_SVG_PX};
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

// ---- the timeline SVG stays within what browsers draw ----

/// `height` of the root element, px.
fn svg_height(svg: &str) -> f64 {
    let h = svg.split("height=\"").nth(1).unwrap().split('"').next().unwrap();
    h.parse().unwrap()
}

/// The lanes drawn as rows (`data-lane`), in row order.
fn drawn_lanes(svg: &str) -> Vec<i64> {
    svg.split("<g class=\"lane\" data-rank=\"")
        .skip(1)
        .map(|t| t.split("data-lane=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
        .collect()
}

/// The caption lines (what was left out).
fn caption(svg: &str) -> Vec<String> {
    svg.split("<text class=\"caption\"")
        .skip(1)
        .map(|t| t.split("<title>").nth(1).unwrap().split("</title>").next().unwrap().to_string())
        .collect()
}

fn timeline(run: &Run, opt: TimelineOptions) -> String {
    timeline_svg(run, &Selection::new(vec![0], "t"), &opt).unwrap()
}

/// `n` threads, thread k running 3 calls of `work` of `500 + k` ns (the busiest last).
fn many_threads(n: i64) -> Run {
    let (mut s, mut e, mut t) = (vec![], vec![], vec![]);
    for k in 0..n {
        for j in 0..3 {
            s.push(2000 * j + k);
            e.push(2000 * j + k + 500 + k);
            t.push(k);
        }
    }
    Run {
        region_names: vec!["work".into()],
        regions: vec![lane_row(0, &s, &e, &t, None, None)],
        threads: (0..n).map(|k| thread(k, &format!("w{k}"))).collect(),
        num_ranks: 1,
        ..Default::default()
    }
}

/// `n` tasks on thread 0, task k one `fetch` call `[100 k, 100 k + 50 us + (k % 7) us]`.
fn many_tasks(n: i64) -> Run {
    let s: Vec<i64> = (0..n).map(|k| 100 * k).collect();
    let e: Vec<i64> = (0..n).map(|k| 100 * k + 50_000 + (k % 7) * 1000).collect();
    let t: Vec<i64> = (0..n).collect();
    Run {
        region_names: vec!["fetch".into()],
        regions: vec![lane_row(0, &s, &e, &vec![0; n as usize], Some(&t), None)],
        num_ranks: 1,
        ..Default::default()
    }
}

/// A 3,000-deep recursion is not a 51,158 px tall drawing: 32 levels are drawn by default, the 2,968 deeper calls are one marker, the caption says
/// so; with every level (`max_depth: 0`) all 3,000 bars are drawn, lower, within 32,767 px.
#[test]
fn a_deep_recursion_draws_32_levels_and_marks_the_deeper_calls() {
    let run = deep_recursion(3000);
    let svg = timeline(&run, TimelineOptions::default());
    assert!(svg_height(&svg) <= 1000.0, "height {}", svg_height(&svg));
    assert_eq!(svg.matches("<g><title>rec\n").count(), 32, "32 levels of bars");
    assert_eq!(svg.matches("<rect class=\"deeper\"").count(), 1, "one marker for the deeper calls");
    assert!(svg.contains("2968 call(s) deeper than 32 levels not drawn (levels 33–3000)"));
    assert_eq!(
        caption(&svg),
        ["2,968 call(s) deeper than 32 levels drawn as dark markers under their callers (--max-depth / max_depth=, 0: all)"]
    );
    let all = timeline(&run, TimelineOptions { max_depth: 0, ..TimelineOptions::default() });
    let h = svg_height(&all);
    assert!(h <= MAX_SVG_PX && h > 30_000.0, "height {h}");
    // every level drawn: a bar each, the two innermost (< 1 px wide) as dense strips
    assert_eq!(all.matches("<g><title>rec\n").count(), 2998);
    assert_eq!(all.matches("<title>1 short call(s) of rec").count(), 2);
    assert!(!all.contains("class=\"deeper\""));
    assert_eq!(caption(&all), ["Rows drawn at 64% of their height to stay within 32767 px"]);
    // a depth limit of 2 on a > b > c: c becomes the marker
    let abc = Run {
        region_names: vec!["a".into(), "b".into(), "c".into()],
        regions: vec![row(0, &[0], &[100]), row(1, &[10], &[90]), row(2, &[20], &[80])],
        num_ranks: 1,
        ..Default::default()
    };
    let two = timeline(&abc, TimelineOptions { max_depth: 2, ..TimelineOptions::default() });
    assert_eq!(two.matches("<g><title>").count(), 2);
    assert!(two.contains("1 call(s) deeper than 2 levels not drawn (levels 3–3)"));
}

/// 1,000 threads are not 44,141 px of rows: 64 rows by default, the busiest (here
/// the last 64 threads), plus a summary row naming the 936 left out; every lane with
/// `lanes: 0` (27,114 px, under the limit).
#[test]
fn of_1000_threads_the_64_busiest_are_drawn_and_the_rest_summed_up() {
    let run = many_threads(1000);
    let svg = timeline(&run, TimelineOptions::default());
    assert!(svg_height(&svg) <= 2000.0, "height {}", svg_height(&svg));
    let lanes = drawn_lanes(&svg);
    assert_eq!(lanes, (936..1000).map(|k| -2 - k).collect::<Vec<i64>>(), "the 64 busiest, in row order");
    assert!(svg.contains(">+ 936 more lane(s)</text>"), "the summary row");
    assert!(svg.contains("936 lane(s) not drawn: 2808 call(s)"));
    assert_eq!(
        caption(&svg),
        ["936 of 1,000 lanes not drawn, summed up in the last row: the 64 busiest by top-level call time are drawn (--lanes 64 / lanes=64, 0: all)"]
    );
    let ten = timeline(&run, TimelineOptions { lanes: 10, ..TimelineOptions::default() });
    assert_eq!(drawn_lanes(&ten), (990..1000).map(|k| -2 - k).collect::<Vec<i64>>());
    assert!(ten.contains(">+ 990 more lane(s)</text>"));
    let all = timeline(&run, TimelineOptions { lanes: 0, ..TimelineOptions::default() });
    assert_eq!(drawn_lanes(&all).len(), 1000);
    assert!(svg_height(&all) <= MAX_SVG_PX);
    assert!(caption(&all).is_empty() && !all.contains("more lane(s)"));
}

/// 20k tasks are not 65 MB: 64 rows and a summary row by default (tens of KB); with `lanes: 0` the rows that fit in 32,767 px at 2 px a level (10,240), the others
/// in the summary row, a few MB.
#[test]
fn of_20k_tasks_stays_small_and_within_the_svg_height_limit() {
    let run = many_tasks(20_000);
    let svg = timeline(&run, TimelineOptions::default());
    assert!(svg.len() < 100_000, "{} bytes", svg.len());
    assert!(svg_height(&svg) <= 2000.0);
    assert_eq!(drawn_lanes(&svg).len(), 64);
    assert!(svg.contains(">+ 19,936 more lane(s)</text>"));
    assert!(svg.contains("<path d=\"M"), "the summary row's strip of the lanes left out");
    let all = timeline(&run, TimelineOptions { lanes: 0, ..TimelineOptions::default() });
    let h = svg_height(&all);
    assert!(h <= MAX_SVG_PX, "height {h}");
    assert!(all.len() < 6_000_000, "{} bytes", all.len());
    assert_eq!(drawn_lanes(&all).len(), 10_240);
    assert!(all.contains(">+ 9,760 more lane(s)</text>"));
    assert_eq!(
        caption(&all),
        [
            "9,760 of 20,000 lanes not drawn, summed up in the last row: the 10,240 busiest by top-level call time are drawn (only 10,240 rows fit in 32767 px)",
            "Rows drawn at 12% of their height to stay within 32767 px",
        ]
    );
}

/// A window (`--window START:END`): only the calls overlapping it, clipped to
/// it; lanes without a call in it are not rows; the axis keeps ms since the run start.
#[test]
fn a_window_draws_the_calls_overlapping_it_clipped() {
    // thread 0: a [0, 1000] > b [100, 200]; thread 1: a [3000, 4000]; thread 2: a [500, 2500]
    let run = Run {
        region_names: vec!["a".into(), "b".into()],
        regions: vec![
            lane_row(0, &[0, 3000, 500], &[1000, 4000, 2500], &[0, 1, 2], None, None),
            lane_row(1, &[100], &[200], &[0], None, None),
        ],
        threads: vec![thread(0, "t0"), thread(1, "t1"), thread(2, "t2")],
        num_ranks: 1,
        ..Default::default()
    };
    let w = TimelineOptions { window: Some((0.0000009, 0.000002)), ..TimelineOptions::default() };
    let svg = timeline(&run, w);
    assert_eq!(drawn_lanes(&svg), [-2, -4], "t1 has no call in 900..2000 ns");
    assert_eq!(svg.matches("<g><title>").count(), 2, "t0's a and t2's a; b ends before the window");
    // clipped: t0's a drawn from the plot's left edge, t2's a to its right edge
    assert!(svg.contains("<g><title>a\nstart 0.0000 ms\nduration 0.0010 ms"));
    let xs: Vec<(f64, f64)> = svg
        .split("<g><title>")
        .skip(1)
        .map(|t| {
            let r = t.split("<rect x=\"").nth(1).unwrap();
            let x: f64 = r.split('"').next().unwrap().parse().unwrap();
            let w: f64 = r.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            (x, x + w)
        })
        .collect();
    assert_eq!(xs[0].0, 260.0);
    assert!((xs[1].1 - 1380.0).abs() < 0.01, "{xs:?}");
    assert_eq!(
        caption(&svg)[0],
        "Window 0.0009 ms – 0.0020 ms from run start: 2 call(s) outside it not drawn (1 lane(s) without a call in it); calls across its edges clipped"
    );
    // an open end: to the run's end
    let open =
        timeline(&run, TimelineOptions { window: Some((0.0000035, f64::INFINITY)), ..TimelineOptions::default() });
    assert_eq!(drawn_lanes(&open), [-3]);
    assert_eq!(parse_window("0.5:"), Ok((0.5, f64::INFINITY)));
    assert_eq!(parse_window(":2"), Ok((0.0, 2.0)));
    assert!(parse_window("3:1").unwrap_err().contains("0 <= START < END"));
    assert!(parse_window("1-2").is_err() && parse_window("a:b").is_err() && parse_window("-1:2").is_err());
    assert!(TimelineOptions { width: 40_000.0, ..TimelineOptions::default() }.check().unwrap_err().contains("32767"));
}

/// A window starting at or after the end of the run's last call is refused
/// (`ExportError::Request`, naming the window and the run's extent); one that overlaps the
/// run only in part is drawn, clipped.
#[test]
fn a_window_past_the_end_of_the_run_is_refused() {
    // one thread: a [0, 4000] ns (the run's origin is its first call)
    let run = Run {
        region_names: vec!["a".into()],
        regions: vec![lane_row(0, &[0], &[4000], &[0], None, None)],
        threads: vec![thread(0, "t0")],
        num_ranks: 1,
        ..Default::default()
    };
    let draw = |w: (f64, f64)| {
        timeline_svg(&run, &Selection::new(vec![0], "w"), &TimelineOptions { window: Some(w), ..Default::default() })
    };
    assert_eq!(
        draw((0.05, f64::INFINITY)).unwrap_err(),
        ExportError::Request(
            "window 0.05: starts after the end of the run: its calls span 0 to 0.000004 s from the run start; \
             give a window starting before 0.000004 s"
                .into()
        )
    );
    assert_eq!(
        draw((0.000004, 1.0)).unwrap_err().to_string(),
        "window 0.000004:1 starts after the end of the run: its calls span 0 to 0.000004 s from the run start; \
         give a window starting before 0.000004 s",
        "a window starting at the very end holds nothing either"
    );
    // partly in the run: drawn, clipped
    let svg = draw((0.000003, 0.000005)).unwrap();
    assert_eq!(drawn_lanes(&svg), [-2]);
    // clipped: 3000..4000 ns of the window 3000..5000 ns, half of the 1120 px plot
    assert!(svg.contains("<rect x=\"260.00\" y=\"105.0\" width=\"560.00\""), "{svg}");
}
