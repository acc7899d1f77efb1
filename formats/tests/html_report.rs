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

/// A duration as the report writes it (in the unit that shows it).
fn s6(v: f64) -> String {
    scope_profiler_analysis::figures::duration_text(v)
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
        ["region", "calls", "total", "mean", "min", "max", "exclusive", "held", "await"]
    );
    let rows = table_rows(&html, "regions");
    let names = exp["region_names"].as_array().unwrap();
    assert_eq!(rows.len(), names.len());
    for row in &rows {
        let e = &exp["regions"][&row[0]]["0"];
        assert_eq!(row[1], e["num_calls"].to_string(), "{row:?}");
        assert_eq!(row[2], s6(e["total_duration"].as_f64().unwrap()), "{row:?}");
        assert_eq!(row[4], s6(e["min_duration"].as_f64().unwrap()), "{row:?}");
        assert_eq!(row[5], s6(e["max_duration"].as_f64().unwrap()), "{row:?}");
        assert_eq!(row[6], s6(e["exclusive_duration"].as_f64().unwrap()), "{row:?}");
        let durations: i64 = e["durations_ns"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum();
        let awaited: i64 = e["await_ns"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).sum();
        assert_eq!(row[7], s6((durations - awaited) as f64 / 1e9), "held {row:?}");
        assert_eq!(row[8], s6(awaited as f64 / 1e9), "await {row:?}");
    }
    let fetch = rows.iter().find(|r| r[0] == "fetch").unwrap();
    assert_eq!((fetch[1].as_str(), fetch[2].as_str(), fetch[8].as_str()), ("6", "31.9 ms", "28.1 ms"));

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
    assert_eq!(headers(&html, "threads")[7..], ["held", "await"]);
    assert_eq!(threads[0][1], "MainThread");
    assert_eq!(threads[0][5], "14");

    // tasks: one row per task with the reference's steps, running and awaiting time
    let tasks = table_rows(&html, "tasks");
    let exp_tasks = exp["tasks"]["0"].as_array().unwrap();
    assert_eq!(tasks.len(), exp_tasks.len());
    // the busiest tasks first (by held time), each row the values of its task
    let summaries = task_summary(&run, 0).unwrap();
    let held: Vec<f64> = tasks
        .iter()
        .map(|row| summaries.iter().find(|t| t.index.to_string() == row[0]).unwrap().held_time.unwrap())
        .collect();
    assert!(held.windows(2).all(|w| w[0] >= w[1]), "busiest first: {held:?}");
    for row in &tasks {
        let t = exp_tasks.iter().find(|t| t["index"].as_i64() == row[0].parse().ok()).unwrap();
        assert!(row[1].starts_with(t["name"].as_str().unwrap()), "{row:?}");
        assert_eq!(row[2], t["steps"].to_string());
        assert_eq!(row[8], s6(t["running_time"].as_f64().unwrap()));
        assert_eq!(row[9], s6(t["awaiting_time"].as_f64().unwrap()));
    }
    // and the per-task lane numbers of task_summary, held + await = region time
    assert_eq!(
        headers(&html, "tasks"),
        ["index", "lane", "steps", "wall", "calls", "region", "held", "await", "running", "awaiting"]
    );
    for row in &tasks {
        let t = summaries.iter().find(|t| t.index.to_string() == row[0]).unwrap();
        assert_eq!(row[4], t.num_calls.to_string());
        assert_eq!(row[5], s6(t.region_time));
        assert_eq!(row[6], s6(t.held_time.unwrap()));
        assert_eq!(row[7], s6(t.await_time.unwrap()));
    }
    // fetch task 1: one fetch (4.429089 ms, 2.135347 awaited) and its parse inside it
    let task1 = tasks.iter().find(|r| r[0] == "1").unwrap();
    assert_eq!(&task1[4..8], ["2", "4.43 ms", "2.29 ms", "2.14 ms"]);

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
    assert_eq!(headers(&html, "regions"), ["region", "calls", "total", "mean", "min", "max", "exclusive"]);
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

/// `tasks` asyncio tasks on MainThread, each one `fetch` call with a `parse` inside it
/// (2 calls a task), task k busier than task k-1 (its fetch 1 ns longer).
fn many_tasks(tasks: i64) -> Run {
    let (mut fs, mut fe, mut ps, mut pe, mut ids, mut aw) = (vec![], vec![], vec![], vec![], vec![], vec![]);
    for k in 0..tasks {
        let s = k * 30_000;
        fs.push(s);
        fe.push(s + 100 + k);
        ps.push(s + 10);
        pe.push(s + 50);
        ids.push(k);
        aw.push(20);
    }
    let threads = vec![0; tasks as usize];
    Run {
        region_names: vec!["fetch".into(), "parse".into()],
        regions: vec![
            lane_row(0, &fs, &fe, &threads, Some(&ids), Some(&aw)),
            lane_row(1, &ps, &pe, &threads, Some(&ids), Some(&vec![0; tasks as usize])),
        ],
        threads: vec![thread(0, "MainThread")],
        tasks: (0..tasks)
            .map(|k| {
                TaskRow::new(0, k, "task", format!("Task-{k}"), "crawler.fetch")
                    .on_thread(0)
                    .lifetime(k * 30_000, k * 30_000 + 25_000)
            })
            .collect(),
        num_ranks: 1,
        ..Default::default()
    }
}

/// `n` regions, one call each, region k taking k ns (the last the longest).
fn many_regions(n: u32) -> Run {
    Run {
        region_names: (0..n).map(|k| format!("module_{k}.function")).collect(),
        regions: (0..n).map(|k| row(k, &[k as i64 * 10_000], &[k as i64 * 10_001])).collect(),
        num_ranks: 1,
        ..Default::default()
    }
}

/// The report of a run with 20,000 tasks (40,000 calls) lists the busiest tasks, sums up the
/// rest in one row and draws the busiest lanes' towers: it stays small and quick whatever the
/// number of lanes (a row and a flame-graph tower per task made it 9 MB and 17 s).
#[test]
fn a_report_of_twenty_thousand_tasks_is_bounded_in_size_and_time() {
    let run = many_tasks(20_000);
    let t = std::time::Instant::now();
    let html = html_report(&run, &Selection::new(vec![0], "tasks")).unwrap();
    let took = t.elapsed().as_secs_f64();
    println!("20,000 tasks: {} bytes in {took:.2} s", html.len());
    assert!(html.len() < 3_000_000, "{} bytes", html.len());
    assert!(took < 10.0, "{took} s");
    let tasks = table_rows(&html, "tasks");
    assert_eq!(tasks.len(), 200 + 1, "200 busiest tasks and the summing row");
    assert_eq!(tasks[0][0], "19999", "the busiest first");
    let rest = tasks.last().unwrap();
    assert_eq!(rest[1], "… 19800 more tasks");
    assert_eq!(rest[4], (19_800 * 2).to_string(), "their calls");
    assert!(html.contains("<tfoot class=\"rest\">"), "the summing row stays out of the sort");
    let src = html.split("src=\"data:image/svg+xml;base64,").nth(1).unwrap().split('"').next().unwrap();
    let svg = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(src).unwrap()).unwrap();
    assert!(svg.contains("19950 other lanes"), "the quiet lanes in one tower");
}

/// A run with 20,000 region names: the report lists the regions with the most inclusive time
/// first and sums up the rest in one row.
#[test]
fn a_report_of_twenty_thousand_regions_lists_the_longest_first_and_counts_the_rest() {
    let run = many_regions(20_000);
    let t = std::time::Instant::now();
    let html = html_report(&run, &Selection::new(vec![0], "regions")).unwrap();
    let took = t.elapsed().as_secs_f64();
    println!("20,000 regions: {} bytes in {took:.2} s", html.len());
    assert!(html.len() < 10_000_000, "{} bytes", html.len());
    assert!(took < 20.0, "{took} s");
    let rows = table_rows(&html, "regions");
    assert_eq!(rows.len(), 201);
    assert_eq!(rows[0][0], "module_19999.function");
    assert_eq!(rows[1][0], "module_19998.function");
    assert_eq!(rows[200][0], "… 19800 more regions");
}

/// A task that held its loop 80 ms inside `blocking` (5 tasks kept waiting) and a 12 ms
/// callback, under a `main` call on the loop thread's own lane: the report lists both
/// blocks in its "Event loop blocked" table, longest first, marks them on the timeline (red
/// bands with their figures: the task's block on the thread's row and on the task's, the
/// callback's on the thread's), and the task table shows each task's ready wait.
#[test]
fn loop_blocks_are_listed_and_marked_and_ready_wait_is_in_the_task_table() {
    const MS: i64 = 1_000_000;
    let mut row = lane_row(0, &[100 * MS], &[180 * MS], &[0], Some(&[0]), Some(&[0]));
    row.ready_wait_ns = Some(arrow_array::Int64Array::from(vec![0]));
    let mut main = lane_row(1, &[0], &[500 * MS], &[0], Some(&[-1]), Some(&[0]));
    main.ready_wait_ns = Some(arrow_array::Int64Array::from(vec![0]));
    let block = |task: i64, start: i64, end: i64, delayed: i64| LoopBlockRow {
        rank: 0,
        thread: 0,
        task,
        start_ns: start * MS,
        end_ns: end * MS,
        delayed_tasks: delayed,
    };
    let run = Run {
        region_names: vec!["blocking".into(), "main".into()],
        regions: vec![row, main],
        threads: vec![thread(0, "MainThread")],
        tasks: vec![TaskRow::new(0, 0, "task", "Task-1", "m.blocker")
            .on_thread(0)
            .lifetime(90 * MS, 200 * MS)
            .ready_wait(3 * MS)],
        metadata: vec![("start_time_ns".into(), MetaValue::Int(0))],
        num_ranks: 1,
        loop_blocks: vec![block(0, 100, 180, 5), block(-1, 300, 312, 2), block(0, 400, 405, 1)],
    };
    let html = html_report(&run, &Selection::new(vec![0], "run")).unwrap();
    assert_eq!(headers(&html, "loop-blocks"), ["blocked", "at", "lane", "region", "tasks delayed"]);
    let rows = table_rows(&html, "loop-blocks");
    assert_eq!(rows.len(), 2, "the 5 ms block is left out");
    assert_eq!(rows[0], [s6(0.08), s6(0.1), "Task-1 (blocker) on MainThread".into(), "blocking".into(), "5".into()]);
    assert_eq!(rows[1], [s6(0.012), s6(0.3), "MainThread (a callback)".into(), "main".into(), "2".into()]);
    let task_headers = headers(&html, "tasks");
    let at = task_headers.iter().position(|h| h == "ready wait").expect("a ready wait column");
    assert_eq!(table_rows(&html, "tasks")[0][at], s6(0.003));
    assert_eq!(html.matches("<rect class=\"loop-block\"").count(), 3);
    assert!(
        html.contains("event loop blocked 80.000 ms by task Task-1 at 100.0 ms (5 task(s) ready and waiting)"),
        "{html}"
    );
}

/// A gevent hub's blocks: one by a spawned greenlet and one by the main greenlet (the
/// thread's own lane, on a thread whose greenlets are lanes); the tasks they delayed are not
/// known: `?` in the table, said so on the timeline.
#[test]
fn a_gevent_hubs_blocks_show_the_main_greenlet_and_unknown_delays() {
    const MS: i64 = 1_000_000;
    let row = lane_row(0, &[100 * MS], &[160 * MS], &[0], Some(&[1]), Some(&[0]));
    let main = lane_row(1, &[0], &[500 * MS], &[0], Some(&[-1]), Some(&[0]));
    let block = |task: i64, start: i64, end: i64| LoopBlockRow {
        rank: 0,
        thread: 0,
        task,
        start_ns: start * MS,
        end_ns: end * MS,
        delayed_tasks: -1,
    };
    let run = Run {
        region_names: vec!["hold".into(), "main".into()],
        regions: vec![row, main],
        threads: vec![thread(0, "MainThread")],
        tasks: vec![
            TaskRow::new(0, 0, "greenlet", "greenlet-a0", "Hub.run").on_thread(0).lifetime(0, 300 * MS),
            TaskRow::new(0, 1, "greenlet", "Greenlet-1", "m.blocker").on_thread(0).lifetime(90 * MS, 200 * MS),
        ],
        metadata: vec![("start_time_ns".into(), MetaValue::Int(0))],
        num_ranks: 1,
        loop_blocks: vec![block(1, 100, 160), block(-1, 200, 220)],
    };
    let html = html_report(&run, &Selection::new(vec![0], "run")).unwrap();
    let rows = table_rows(&html, "loop-blocks");
    assert_eq!(rows[0], [s6(0.06), s6(0.1), "Greenlet-1 (blocker) on MainThread".into(), "hold".into(), "?".into()]);
    assert_eq!(rows[1], [s6(0.02), s6(0.2), "MainThread (main greenlet)".into(), "main".into(), "?".into()]);
    assert!(
        html.contains("event loop blocked 20.000 ms by main greenlet at 200.0 ms (tasks delayed not known)"),
        "{html}"
    );
}
