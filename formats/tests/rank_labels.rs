//! Each rank's process, as metadata `processes` names it, labels that rank in every export
//! that shows ranks (Chrome and Perfetto traces, the timeline, the HTML report), as the
//! summary does (`Run::rank_label`).
mod export_support;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::timeline::{timeline_svg, TimelineOptions};
use scope_profiler_formats::Selection;

/// A run of `scope-profiler run` following processes: the Chrome and Perfetto traces, the
/// timeline and the HTML report name each rank's process as the summary does
/// (`Run::rank_label`), not just `rank N`.
#[test]
fn followed_processes_are_named_in_every_export() {
    let mut second = row(0, &[5], &[9]);
    second.rank = 1;
    let labels = ["pid 10: app.py", "pid 11 (child of 10): python -c 'x<y'"];
    let run = Run {
        region_names: vec!["work".into()],
        regions: vec![row(0, &[0], &[8]), second],
        metadata: vec![("processes".into(), MetaValue::StrList(labels.iter().map(|s| s.to_string()).collect()))],
        num_ranks: 2,
        ..Default::default()
    };
    assert_eq!(run.rank_label(1), "rank 1 (pid 11 (child of 10): python -c 'x<y')");
    let sel = Selection::new(vec![0, 1], "p");
    let mut chrome = Vec::new();
    scope_profiler_formats::chrome_trace::write_chrome_trace_to(&run, &sel, &mut chrome).unwrap();
    let chrome = String::from_utf8(chrome).unwrap();
    assert!(chrome.contains(r#""args":{"name":"rank 0 (pid 10: app.py)"}"#), "{chrome}");
    assert!(chrome.contains(r#""args":{"name":"rank 1 (pid 11 (child of 10): python -c 'x<y')"}"#), "{chrome}");
    let perfetto = scope_profiler_formats::perfetto::perfetto_trace(&run, &sel).unwrap();
    let names: Vec<String> = perfetto
        .packet
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref()?.process.as_ref()?.process_name.clone())
        .collect();
    assert_eq!(names, ["rank 0 (pid 10: app.py)", "rank 1 (pid 11 (child of 10): python -c 'x<y')"]);
    let svg = timeline_svg(&run, &sel, &TimelineOptions::default()).unwrap();
    assert!(svg.contains("rank 1 (pid 11 (child of 10): python -c 'x&lt;y')</text>"), "{svg}");
    let html = scope_profiler_formats::html_report::html_report(&run, &sel).unwrap();
    assert!(html.contains("<h3>Rank 1 (pid 11 (child of 10): python -c 'x&lt;y'): Regions</h3>"));
    // without `processes`: `rank N`
    let plain = Run { metadata: vec![], ..run };
    assert_eq!(plain.rank_label(1), "rank 1");
}
