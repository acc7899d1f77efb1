//! HTML report: the region, thread and task tables hold the reference's values (counts,
//! totals, exclusive and await times from the datasets' expected.json), the timeline and the
//! flame graph are inline, and the file needs no network.
mod export_support;

use base64::Engine as _;
use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::html_report::{html_report, write_html_report, HtmlReport};
use scope_profiler_formats::Selection;

/// The body rows of `<table class="{class}">`, each a list of cell texts (entities decoded).
fn table_rows(html: &str, class: &str) -> Vec<Vec<String>> {
    let open = format!("<table class=\"{class}\">");
    let Some(at) = html.find(&open) else { return Vec::new() };
    let t = &html[at..at + html[at..].find("</table>").unwrap()];
    let body = &t[t.find("<tbody>").unwrap()..];
    body.split("<tr>")
        .skip(1)
        .map(|tr| {
            tr.split("<td")
                .skip(1)
                .map(|td| {
                    let inner = &td[td.find('>').unwrap() + 1..td.find("</td>").unwrap()];
                    inner.replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'").replace("&amp;", "&")
                })
                .collect()
        })
        .collect()
}

fn headers(html: &str, class: &str) -> Vec<String> {
    let open = format!("<table class=\"{class}\">");
    let at = html.find(&open).unwrap();
    let t = &html[at..at + html[at..].find("</thead>").unwrap()];
    t.split("<th>").skip(1).map(|h| h.split("</th>").next().unwrap().to_string()).collect()
}

fn s6(v: f64) -> String {
    format!("{v:.6}")
}

#[test]
fn async_report_tables_hold_the_reference_values() {
    let run = reference("async");
    let exp = expected("async");
    let html = html_report(&run, &Selection::new(vec![0], "async")).unwrap();
    std::fs::write(out_dir().join("async.report.html"), &html).unwrap();

    // regions: one row per region, count / total / min / max / exclusive as the reference
    // computed them, held + await = total, await = Σ await_ns of the calls
    assert_eq!(
        headers(&html, "regions"),
        ["region", "calls", "total s", "mean ms", "min ms", "max ms", "exclusive s", "held s", "await s"]
    );
    let rows = table_rows(&html, "regions");
    let names = exp["region_names"].as_array().unwrap();
    assert_eq!(rows.len(), names.len());
    for row in &rows {
        let e = &exp["regions"][&row[0]]["0"];
        assert_eq!(row[1], e["num_calls"].to_string(), "{row:?}");
        assert_eq!(row[2], s6(e["total_duration"].as_f64().unwrap()), "{row:?}");
        assert_eq!(row[4], format!("{:.3}", e["min_duration"].as_f64().unwrap() * 1e3), "{row:?}");
        assert_eq!(row[5], format!("{:.3}", e["max_duration"].as_f64().unwrap() * 1e3), "{row:?}");
        assert_eq!(row[6], s6(e["exclusive_duration"].as_f64().unwrap()), "{row:?}");
        let durations: i64 = e["durations_ns"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum();
        let awaited: i64 = e["await_ns"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum();
        assert_eq!(row[7], s6((durations - awaited) as f64 / 1e9), "held {row:?}");
        assert_eq!(row[8], s6(awaited as f64 / 1e9), "await {row:?}");
    }
    let fetch = rows.iter().find(|r| r[0] == "fetch").unwrap();
    assert_eq!((fetch[1].as_str(), fetch[2].as_str(), fetch[8].as_str()), ("6", "0.031934", "0.028102"));

    // threads: the values thread_summary gives (the table only formats them)
    let threads = table_rows(&html, "threads");
    let want = thread_summary(&run, 0).unwrap();
    assert_eq!(threads.len(), want.len());
    for (row, t) in threads.iter().zip(&want) {
        assert_eq!(row[0], t.index.to_string());
        assert_eq!(row[1], t.name);
        assert_eq!(row[5], t.num_calls.to_string());
        assert_eq!(row[6], s6(t.region_time));
        assert_eq!(row[7], s6(t.held_time.unwrap()));
        assert_eq!(row[8], s6(t.await_time.unwrap()));
    }
    assert_eq!(headers(&html, "threads")[7..], ["held s", "await s"]);
    assert_eq!(threads[0][1], "MainThread");
    assert_eq!(threads[0][5], "14");

    // tasks: one row per task with the reference's steps, running and awaiting time
    let tasks = table_rows(&html, "tasks");
    let exp_tasks = exp["tasks"]["0"].as_array().unwrap();
    assert_eq!(tasks.len(), exp_tasks.len());
    for (row, t) in tasks.iter().zip(exp_tasks) {
        assert_eq!(row[0], t["index"].to_string());
        assert!(row[1].starts_with(t["name"].as_str().unwrap()), "{row:?}");
        assert_eq!(row[2], t["steps"].to_string());
        assert_eq!(row[8], s6(t["running_time"].as_f64().unwrap()));
        assert_eq!(row[9], s6(t["awaiting_time"].as_f64().unwrap()));
    }
    // and the per-task lane numbers of task_summary, held + await = region time
    assert_eq!(
        headers(&html, "tasks"),
        ["index", "lane", "steps", "wall s", "calls", "region s", "held s", "await s", "running s", "awaiting s"]
    );
    for (row, t) in tasks.iter().zip(task_summary(&run, 0).unwrap()) {
        assert_eq!(row[4], t.num_calls.to_string());
        assert_eq!(row[5], s6(t.region_time));
        assert_eq!(row[6], s6(t.held_time.unwrap()));
        assert_eq!(row[7], s6(t.await_time.unwrap()));
    }
    // fetch task 1: one fetch (4.429089 ms, 2.135347 awaited) and its parse inside it
    assert_eq!(&tasks[1][4..8], ["2", "0.004429", "0.002294", "0.002135"]);

    // the timeline inline (one row per lane), the flame graph as an SVG data: URL with every
    // region as a frame
    assert_eq!(html.matches("<g class=\"lane\"").count(), exp["call_arrays"]["lanes"].as_array().unwrap().len());
    assert!(!html.contains("<?xml"), "no XML prolog inside HTML");
    let src = html.split("src=\"data:image/svg+xml;base64,").nth(1).unwrap().split('"').next().unwrap();
    let svg = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(src).unwrap()).unwrap();
    assert!(svg.contains("<svg") && svg.contains("function init(evt)"), "inferno's interactive SVG");
    for name in ["crawl", "fetch", "parse"] {
        assert!(svg.contains(&format!("<title>{name} (")), "{name} in the flame graph");
    }
    // self-contained: nothing is loaded from elsewhere
    for bad in ["<link", "src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(bad), "{bad}");
    }
}

#[test]
fn untracked_run_has_no_await_or_thread_columns_and_several_runs_stack() {
    let run = reference("single");
    let html = html_report(&run, &Selection::new(vec![0], "single")).unwrap();
    assert_eq!(headers(&html, "regions"), ["region", "calls", "total s", "mean ms", "min ms", "max ms", "exclusive s"]);
    assert!(!html.contains("<table class=\"threads\">") && !html.contains("<table class=\"tasks\">"));
    let exp = expected("single");
    for row in table_rows(&html, "regions") {
        assert_eq!(row[1], exp["regions"][&row[0]]["0"]["num_calls"].to_string());
    }
    // two runs in one report: two sections, each with its own tables
    let threads = reference("threads");
    let mut r = HtmlReport::new("two runs");
    r.add(&run, &Selection::new(vec![0], "single")).unwrap();
    r.add(&threads, &Selection::new(vec![0], "threads")).unwrap();
    let both = r.html();
    assert_eq!(both.matches("<section class=\"run\">").count(), 2);
    assert!(both.contains("<h2>single</h2>") && both.contains("<h2>threads</h2>"));
    let names: Vec<String> = table_rows(&both, "threads").iter().map(|r| r[1].clone()).collect();
    let want: Vec<String> = expected("threads")["threads"]["0"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().into())
        .collect();
    assert_eq!(names, want);
}

#[test]
fn region_filter_no_calls_and_atomic_write() {
    let run = reference("async");
    let sel = Selection::new(vec![0], "async").with_regions(vec!["fetch".into()]);
    let html = html_report(&run, &sel).unwrap();
    let rows = table_rows(&html, "regions");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], "fetch");
    // a selection without calls gets a report that says so (as 0.7.5 writes one)
    let empty =
        Run { region_names: vec!["a".into()], num_ranks: 1, regions: vec![row(0, &[], &[])], ..Default::default() };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/r.html");
    write_html_report(&empty, &Selection::new(vec![0], "e"), &path).unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().contains("The run has no calls"));
    write_html_report(&run, &Selection::new(vec![0], "async"), &path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>") && text.ends_with("</html>\n"));
    assert!(text.contains("<title>scope-profiler report: async</title>"));
    // names are escaped
    let mut odd = reference("single");
    odd.region_names[1] = "<b>&x</b>".into();
    let html = html_report(&odd, &Selection::new(vec![0], "single")).unwrap();
    assert!(html.contains("&lt;b&gt;&amp;x&lt;/b&gt;") && !html.contains("<b>&x</b>"));
}

/// An empty run (setup then finalize, no calls) gets an HTML report, planned and written,
/// saying so, as 0.7.5 writes one; the other formats refuse it.
#[test]
fn a_run_without_calls_gets_a_report_saying_so() {
    use scope_profiler_formats::export_plan::{plan, PlanError, Request, RunInput};
    use scope_profiler_formats::Format;
    let empty = RunInput {
        label: "empty".into(),
        num_ranks: 0,
        regions: vec![],
        ranks_with_calls: vec![],
        file_stem: "empty".into(),
    };
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("e.html");
    let req = |format, ranks: Option<Vec<i64>>, filtered| Request { format, path: &target, ranks, filtered };
    for ranks in [None, Some(vec![])] {
        let files = plan(std::slice::from_ref(&empty), &req(Format::HtmlReport, ranks.clone(), false)).unwrap();
        assert_eq!(files.len(), 1, "{ranks:?}");
        assert_eq!(files[0].path, target);
        assert!(files[0].selection.ranks.is_empty());
    }
    // other formats, and a filter, still refuse it
    assert_eq!(
        plan(std::slice::from_ref(&empty), &req(Format::Speedscope, None, false)).unwrap_err(),
        PlanError::NoRegions
    );
    assert_eq!(
        plan(std::slice::from_ref(&empty), &req(Format::HtmlReport, None, true)).unwrap_err(),
        PlanError::NoRegions
    );
    let run = Run { metadata: vec![("mpi_size".into(), MetaValue::Int(1))], ..Default::default() };
    let html = html_report(&run, &Selection::new(vec![0], "empty")).unwrap();
    assert!(
        html.contains("<p class=\"note\">The run has no calls: no region was entered between setup and finalize.</p>")
    );
    assert!(html.contains("<dt>calls</dt><dd>0</dd>"), "overview");
    assert!(html.contains("<dt>recorded</dt><dd>unknown (no calls)</dd>"));
    assert!(!html.contains("Flame graph"));
    assert!(html.trim_end().ends_with("</html>"));
}

/// A run with loop blocks gets an "Event loop blocked" table (the blocks of 10 ms or more,
/// longest first, with lane, region and delayed tasks) and the tasks' ready wait; the
/// reference's run has neither.
#[test]
fn loop_blocks_and_ready_wait_are_in_the_report() {
    let mut run = reference("async");
    let plain = html_report(&run, &Selection::new(vec![0], "async")).unwrap();
    assert!(table_rows(&plain, "loop-blocks").is_empty());
    assert!(!headers(&plain, "tasks").contains(&"ready wait s".to_string()));
    let task = run.tasks[0].index;
    let start = run.regions[0].start_ns.value(0);
    run.tasks[0].ready_wait_ns = 42_000_000;
    let block = |task, from: i64, ms: i64, delayed| LoopBlockRow {
        rank: 0,
        thread: 0,
        task,
        start_ns: start + from,
        end_ns: start + from + ms * 1_000_000,
        delayed_tasks: delayed,
    };
    run.loop_blocks = vec![block(-1, 0, 12, 1), block(task, 1_000, 80, 5), block(-1, 2_000, 3, 0)];
    let html = html_report(&run, &Selection::new(vec![0], "async")).unwrap();
    let rows = table_rows(&html, "loop-blocks");
    assert_eq!(rows.len(), 2, "the 3 ms block is not shown");
    assert_eq!((rows[0][0].as_str(), rows[0][4].as_str()), ("80.000", "5"));
    assert_eq!(rows[0][2], lane_label(&run, task, 0));
    assert!(rows[1][2].starts_with("callback on "), "{:?}", rows[1]);
    let h = headers(&html, "tasks");
    assert_eq!(h.last().map(String::as_str), Some("ready wait s"));
    assert_eq!(table_rows(&html, "tasks")[0].last().map(String::as_str), Some("0.042000"));
}
