//! A self-contained HTML report of a run (`scope-profiler report`, `run -o x.html`,
//! `export_html`): one file that opens in any browser without a server or a network.
//!
//! Per selected rank: the region summary ([`rank_summary`]: calls, total, mean/min/max,
//! exclusive time, and await/held time when the run recorded await times), the thread table
//! ([`ThreadSummaryRow`]) and the task table; then, for the selection, the lane timeline
//! ([`crate::timeline`], inline SVG) and the flame graph ([`crate::flamegraph`], inferno's
//! interactive SVG in an `<iframe>` from a `data:` URL: its script looks up its own elements
//! by id and would clash with the page's). Tables sort by a click on a column header.
//!
//! All times are wall time on the recording clock (`time.perf_counter_ns()`), printed in
//! seconds (`s`) or milliseconds (`ms`); CPU time comes from each thread's own CPU clock.
use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use scope_profiler_analysis::figures::duration_text;
use scope_profiler_analysis::summary_order::{
    busiest, sort_region_rows, split_at_limit, task_busy_time, thread_busy_time, REPORT_ROWS,
};
use scope_profiler_analysis::{
    loop_blocks, rank_summary, secs, LaneLabels, MetaValue, RankSummary, RegionSummaryRow, Run, SortKey,
    TaskSummaryRow, ThreadSummaryRow,
};

use crate::export_output::{io_err, markup_escape as esc, write_atomic};
use crate::flamegraph::write_flamegraph_svg_fixed_to;
use crate::text_summary::SUMMARY_BLOCK_NS;
use crate::timeline::{timeline_svg, TimelineOptions};
use crate::{ExportError, Selection};

/// An HTML report being assembled: [`HtmlReport::add`] one run (or several, one section
/// each), then [`HtmlReport::write`] or [`HtmlReport::html`].
#[derive(Debug, Clone)]
pub struct HtmlReport {
    title: String,
    body: String,
}

/// One table cell: the text shown and, for numbers, the value the column sorts by.
struct Cell {
    text: String,
    sort: Option<f64>,
}

fn text(s: impl Into<String>) -> Cell {
    Cell { text: s.into(), sort: None }
}

/// A duration of `v` s in the unit that shows it ([`duration_text`]), sorted by value.
fn s6(v: f64) -> Cell {
    Cell { text: duration_text(v), sort: Some(v) }
}

/// A duration of `ns` nanoseconds.
fn ns_s(ns: i64) -> Cell {
    s6(secs(ns))
}

/// A duration of `ns` nanoseconds (a mean: not a whole number).
fn ns_ms(ns: f64) -> Cell {
    s6(ns / 1e9)
}

/// Optional seconds, `-` when unknown.
fn opt_s(v: Option<f64>) -> Cell {
    v.map(s6).unwrap_or_else(|| text("-"))
}

fn int(n: i64) -> Cell {
    Cell { text: n.to_string(), sort: Some(n as f64) }
}

/// A sortable table; `class` names it for styling and tests (`regions`, `threads`, `tasks`).
/// `rest`: the row that sums up what the table leaves out, in a `<tfoot>` (it stays last when
/// the table is sorted).
fn table(out: &mut String, class: &str, headers: &[&str], rows: Vec<Vec<Cell>>, rest: Option<Vec<Cell>>) {
    let _ = write!(out, "<table class=\"{class}\"><thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        table_row(out, row);
    }
    out.push_str("</tbody>");
    if let Some(row) = rest {
        out.push_str("<tfoot class=\"rest\">");
        table_row(out, row);
        out.push_str("</tfoot>");
    }
    out.push_str("</table>\n");
}

fn table_row(out: &mut String, row: Vec<Cell>) {
    out.push_str("<tr>");
    for c in row {
        match c.sort {
            Some(v) => {
                let _ = write!(out, "<td class=\"num\" data-v=\"{v}\">{}</td>", esc(&c.text));
            }
            None => {
                let _ = write!(out, "<td>{}</td>", esc(&c.text));
            }
        }
    }
    out.push_str("</tr>\n");
}

fn note(out: &mut String, msg: &str) {
    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(msg));
}

impl HtmlReport {
    /// An empty report titled `title` (the page title and its first heading).
    pub fn new(title: impl Into<String>) -> Self {
        HtmlReport { title: title.into(), body: String::new() }
    }

    /// Add the section of `run` restricted to `sel` (its ranks, in order; its regions; its
    /// label heads the section): overview, per-rank region, thread and task tables, the lane
    /// timeline and the flame graph. A timeline or flame graph that cannot be drawn (calls that
    /// do not nest) leaves a note in its place.
    ///
    /// A selection without calls (a run that recorded none: setup then finalize) gets a
    /// section that says so, with the overview and metadata and no tables or figures, as
    /// 0.7.5's `create_html_report` writes a report of it.
    pub fn add(&mut self, run: &Run, sel: &Selection) -> Result<&mut Self, ExportError> {
        let applied = sel.apply(run);
        let run: &Run = &applied;
        let summaries: Vec<RankSummary> = sel.ranks.iter().filter_map(|&r| rank_summary(run, r)).collect();
        let mut out = String::new();
        let _ = writeln!(out, "<section class=\"run\"><h2>{}</h2>", esc(&sel.label));
        if summaries.iter().all(|s| s.rows.iter().all(|r| r.calls == 0)) {
            overview(&mut out, run, &summaries);
            let shown: Vec<String> = sel.ranks.iter().map(u32::to_string).collect();
            if run.regions.iter().all(|r| r.is_empty()) {
                note(&mut out, "The run has no calls: no region was entered between setup and finalize.");
            } else {
                note(&mut out, &format!("No calls on the selected rank(s) {}.", shown.join(", ")));
            }
            out.push_str("</section>\n");
            self.body.push_str(&out);
            return Ok(self);
        }
        overview(&mut out, run, &summaries);
        let multi = summaries.len() > 1;
        for s in &summaries {
            rank_tables(&mut out, run, s, multi);
        }
        out.push_str("<h3>Timeline</h3>\n");
        out.push_str(
            "<p class=\"help\">One row per thread and per task or greenlet (a lane); bars are calls, \
             nested calls below their caller; the hatched part of a task's call is await time. \
             Hover a bar for its times.</p>\n",
        );
        match timeline_svg(run, sel, &TimelineOptions { width: TIMELINE_WIDTH, ..TimelineOptions::default() }) {
            Ok(svg) => {
                let _ = writeln!(out, "<div class=\"figure timeline\">{}</div>", strip_xml_prolog(&svg));
            }
            Err(e) => note(&mut out, &format!("timeline not available: {e}")),
        }
        out.push_str("<h3>Flame graph</h3>\n");
        out.push_str(
            "<p class=\"help\">Wall time per region path, one tower per lane (the 50 busiest; the others merged into one); width = the path's \
             inclusive time. Click a frame to zoom, Ctrl+F to search.</p>\n",
        );
        let mut fg = Vec::new();
        match write_flamegraph_svg_fixed_to(run, sel, FLAME_WIDTH, FLAME_LANES, &mut fg) {
            Ok(()) => {
                let svg = String::from_utf8_lossy(&fg);
                let height = svg_height(&svg).unwrap_or(600.0);
                let data = base64::engine::general_purpose::STANDARD.encode(with_history_shim(&svg));
                let _ = writeln!(
                    out,
                    "<iframe class=\"figure flamegraph\" title=\"flame graph\" style=\"width:{}px;height:{:.0}px\" src=\"data:image/svg+xml;base64,{data}\"></iframe>",
                    FLAME_WIDTH + 4,
                    height + 4.0
                );
            }
            Err(e) => note(&mut out, &format!("flame graph not available: {e}")),
        }
        out.push_str("</section>\n");
        self.body.push_str(&out);
        Ok(self)
    }

    /// The whole document.
    pub fn html(&self) -> String {
        let mut out = String::with_capacity(self.body.len() + 4096);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
             <meta name=\"generator\" content=\"scope-profiler {}\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n\
             <body>\n<h1>{}</h1>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&self.title),
            esc(&self.title)
        );
        out.push_str(&self.body);
        let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
        out
    }

    /// Write the document to `path` (atomically, parent directories created).
    /// Errors: [`ExportError::Io`] naming the path.
    pub fn write(&self, path: &Path) -> Result<(), ExportError> {
        let html = self.html();
        write_atomic(path, |f| f.write_all(html.as_bytes()).map_err(io_err(path)))
    }
}

/// The report of `sel` as a string, titled with its label. Errors as [`HtmlReport::add`].
pub fn html_report(run: &Run, sel: &Selection) -> Result<String, ExportError> {
    let mut r = HtmlReport::new(format!("scope-profiler report: {}", sel.label));
    r.add(run, sel)?;
    Ok(r.html())
}

/// Write the report of `sel` to `path` (the uniform writer signature of this crate).
/// Errors as [`HtmlReport::write`]; nothing is written on error.
pub fn write_html_report(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    let mut r = HtmlReport::new(format!("scope-profiler report: {}", sel.label));
    r.add(run, sel)?;
    r.write(path)
}

/// Run-level facts: ranks, regions, calls, the run's span, what was tracked, metadata.
fn overview(out: &mut String, run: &Run, summaries: &[RankSummary]) {
    let calls: usize = summaries.iter().flat_map(|s| &s.rows).map(|r| r.calls).sum();
    let regions: usize = summaries.iter().flat_map(|s| &s.rows).filter(|r| r.calls > 0).count();
    let mut facts: Vec<(String, String)> = vec![
        ("calls".into(), calls.to_string()),
        ("region rows with calls".into(), regions.to_string()),
        ("ranks".into(), format!("{} of {}", summaries.len(), run.num_ranks)),
    ];
    if let (Some(s), Some(f)) = (run.meta_int("start_time_ns"), run.meta_int("finalize_time_ns")) {
        if f >= s {
            facts.push(("run (setup to finalize)".into(), duration_text(secs(f - s))));
        }
    }
    let tracked = if calls == 0 && run.threads.is_empty() {
        // nothing tells a run without calls recorded with track_threads from one without
        "unknown (no calls)"
    } else if !run.tasks.is_empty() {
        "threads and tasks/greenlets (track_async)"
    } else if run.has_thread_ids() {
        "threads (track_threads)"
    } else {
        "no lanes (calls of all threads share one stack)"
    };
    facts.push(("recorded".into(), tracked.into()));
    out.push_str("<dl class=\"facts\">");
    for (k, v) in &facts {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>\n");
    if !run.metadata.is_empty() {
        out.push_str("<details><summary>metadata</summary><table class=\"metadata\"><tbody>\n");
        for (k, v) in &run.metadata {
            let _ = writeln!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&meta_text(v)));
        }
        out.push_str("</tbody></table></details>\n");
    }
}

fn meta_text(v: &MetaValue) -> String {
    match v {
        MetaValue::Int(i) => i.to_string(),
        MetaValue::Float(f) => f.to_string(),
        MetaValue::Str(s) => s.clone(),
        MetaValue::StrList(l) => l.join(", "),
    }
}

/// The region, thread and task tables of one rank: regions by inclusive time, the
/// busiest threads and tasks, at most [`REPORT_ROWS`] rows each (the rest summed in a last
/// row), so the report of a run with 20,000 tasks or region names stays small.
fn rank_tables(out: &mut String, run: &Run, s: &RankSummary, multi: bool) {
    let heading = |what: &str| {
        if multi {
            // `Rank R` and its process when the run stacks processes (`rank_label`)
            format!("{}: {what}", run.rank_label(s.rank).replacen("rank", "Rank", 1))
        } else {
            what.to_string()
        }
    };
    let _ = writeln!(out, "<h3>{}</h3>", esc(&heading("Regions")));
    region_table(out, s);
    if let Some(msg) = &s.nesting_note {
        note(out, &format!("exclusive time not available: {msg}"));
    }
    if let Some(msg) = &s.set_aside_note {
        note(out, msg);
    }
    if let Some(msg) = &s.untracked_tasks_note {
        note(out, msg);
    }
    match &s.threads {
        None => {}
        Some(Err(e)) => {
            let _ = writeln!(out, "<h3>{}</h3>", esc(&heading("Threads")));
            note(out, &format!("thread summary not available: {}", e.0));
        }
        Some(Ok(threads)) => {
            let _ = writeln!(out, "<h3>{}</h3>", esc(&heading("Threads")));
            thread_table(out, threads);
            if let Some(msg) = &s.thread_table_note {
                note(out, msg);
            }
        }
    }
    match &s.tasks {
        None => {}
        Some(Err(e)) => {
            let _ = writeln!(out, "<h3>{}</h3>", esc(&heading("Tasks and greenlets")));
            note(out, &format!("task summary not available: {}", e.0));
        }
        Some(Ok(tasks)) => {
            let _ = writeln!(out, "<h3>{}</h3>", esc(&heading("Tasks and greenlets")));
            task_table(out, run, s.rank, tasks);
        }
    }
    loop_blocks_table(out, run, s.rank, &heading("Event loop blocked"));
}

/// The loop blocks of one rank of [`SUMMARY_BLOCK_NS`] or more, the longest first (at most
/// [`REPORT_ROWS`]; the rest summed in a last row), as the text summary lists them: start,
/// the lane that held the loop, the region it ran in, the ready tasks it kept waiting.
fn loop_blocks_table(out: &mut String, run: &Run, rank: u32, heading: &str) {
    let Ok(blocks) = loop_blocks(run, rank, SUMMARY_BLOCK_NS) else { return };
    if blocks.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h3>{}</h3>", esc(heading));
    let labels = LaneLabels::new(run, rank);
    let shown = &blocks[..blocks.len().min(REPORT_ROWS)];
    let rows = shown
        .iter()
        .map(|b| {
            let lane = if b.task >= 0 {
                labels.label(b.task)
            } else {
                format!(
                    "{} ({})",
                    labels.thread_label(b.thread),
                    scope_profiler_analysis::own_lane_holder(run, rank, b.thread)
                )
            };
            vec![
                s6(b.duration),
                s6(b.start),
                text(lane),
                text(b.region.clone().unwrap_or_else(|| "-".into())),
                b.delayed_tasks.map_or_else(|| text("?"), int),
            ]
        })
        .collect();
    let rest = (blocks.len() > shown.len()).then(|| {
        let others = &blocks[shown.len()..];
        let total: f64 = others.iter().map(|b| b.duration).sum();
        vec![s6(total), text(""), text(format!("… {} more blocks", others.len())), text(""), text("")]
    });
    table(out, "loop-blocks", &["blocked", "at", "lane", "region", "tasks delayed"], rows, rest);
    out.push_str(
        "<p class=\"help\">Stretches in which one task step or callback held the event loop's thread for \
         10 ms or more, the longest first (red bands on the timeline): at = from the run's start; region = the \
         innermost region that covers most of the block; tasks delayed = tasks that were ready to resume and \
         waited for it (? = not known: a gevent hub, or uvloop, does not tell when its tasks became ready).</p>\n",
    );
}

/// `N more <what>` and the sums of the rows left out, as the last row of a table whose
/// first cell is a text and whose next cells are given.
fn rest_row(lead: usize, label: String, cells: Vec<Cell>) -> Vec<Cell> {
    let mut row: Vec<Cell> = (0..lead).map(|_| text("")).collect();
    row.push(text(label));
    row.extend(cells);
    row
}

/// The region table: regions by inclusive time ([`SortKey::Total`]).
fn region_table(out: &mut String, s: &RankSummary) {
    let with_await = s.has_await();
    let mut headers = vec!["region", "calls", "total", "mean", "min", "max", "exclusive"];
    if with_await {
        headers.extend(["held", "await"]);
    }
    let (shown, rest) = split_at_limit(sort_region_rows(s.rows.clone(), SortKey::Total), Some(REPORT_ROWS));
    let cells = |r: &RegionSummaryRow| {
        let mut row = vec![
            text(&r.name),
            int(r.calls as i64),
            ns_s(r.total_ns),
            ns_ms(r.mean_ns),
            ns_ms(r.min_ns as f64),
            ns_ms(r.max_ns as f64),
            r.exclusive_ns.map(ns_s).unwrap_or_else(|| text("-")),
        ];
        if with_await {
            row.push(r.held_ns().map(ns_s).unwrap_or_else(|| text("-")));
            row.push(r.await_ns.map(ns_s).unwrap_or_else(|| text("-")));
        }
        row
    };
    let rest = (!rest.is_empty()).then(|| {
        let calls: usize = rest.iter().map(|r| r.calls).sum();
        let total: i64 = rest.iter().map(|r| r.total_ns).sum();
        rest_row(0, format!("… {} more regions", rest.len()), vec![int(calls as i64), ns_s(total)])
    });
    table(out, "regions", &headers, shown.iter().map(cells).collect(), rest);
    if with_await {
        out.push_str(
            "<p class=\"help\">held = total − await: the time the calls were not suspended in an <code>await</code> \
             (running, or blocking their thread).</p>\n",
        );
    }
}

/// The thread table: the busiest threads (by held, else region time).
fn thread_table(out: &mut String, threads: &[ThreadSummaryRow]) {
    let held = threads.iter().any(|t| t.held_time.is_some());
    // recorded by runs that time task steps (track_async)
    let steps = held && threads.iter().any(|t| t.task_step_time.is_some());
    let mut headers = vec!["index", "name", "alive", "wall", "cpu", "calls", "region"];
    if held {
        headers.extend(["held", "await"]);
    }
    if steps {
        headers.extend(["task steps", "Σ task awaits"]);
    }
    // recorded for the threads of instrumented event loops
    let loops = threads.iter().any(|t| t.ready_wait_time.is_some() || t.idle_time.is_some());
    if loops {
        headers.extend(["ready wait", "idle"]);
    }
    let times: Vec<f64> = threads.iter().map(thread_busy_time).collect();
    let (mut shown, rest) = busiest(&times, Some(REPORT_ROWS));
    shown.sort_unstable(); // the threads shown, in table order
    let rows = shown
        .iter()
        .map(|&k| {
            let t = &threads[k];
            let alive = if !t.listed {
                "-"
            } else if t.alive {
                "yes"
            } else {
                "no"
            };
            let mut row = vec![
                int(t.index),
                text(&t.name),
                text(alive),
                opt_s(t.wall_time),
                opt_s(t.cpu_time),
                int(t.num_calls),
                s6(t.region_time),
            ];
            if held {
                row.extend([opt_s(t.held_time), opt_s(t.await_time)]);
            }
            if steps {
                row.extend([opt_s(t.task_step_time), opt_s(t.task_await_time_sum)]);
            }
            if loops {
                row.extend([opt_s(t.ready_wait_time), opt_s(t.idle_time)]);
            }
            row
        })
        .collect();
    let rest = (!rest.is_empty()).then(|| {
        let calls: i64 = rest.iter().map(|&k| threads[k].num_calls).sum();
        let region: f64 = rest.iter().map(|&k| threads[k].region_time).sum();
        let label = format!("… {} more threads", rest.len());
        rest_row(1, label, vec![text(""), text(""), text(""), int(calls), s6(region)])
    });
    table(out, "threads", &headers, rows, rest);
    out.push_str(
        "<p class=\"help\">wall: the thread's start to its end (or the run's end); cpu: CPU the thread \
         burned during the run; region: wall-clock time covered by the top-level calls of the thread and \
         of the tasks that ran on it (overlaps counted once)",
    );
    if steps {
        out.push_str(
            "; held: the thread's own calls outside the task steps it ran, plus those steps (task steps); \
             await: time its tasks' calls were open with none of them running; Σ task awaits: the tasks' \
             awaits summed (a per-task sum, not a time of the thread)",
        );
    } else if held {
        out.push_str("; held / await: those calls' time not suspended / suspended in an <code>await</code>");
    }
    if loops {
        out.push_str(
            "; ready wait: time in which some task on the thread was ready to run but waited for it; \
             idle: time its event loop waited with nothing ready",
        );
    }
    out.push_str(".</p>\n");
}

/// The task table: the busiest tasks (by held time, else region time), busiest first.
fn task_table(out: &mut String, run: &Run, rank: u32, tasks: &[TaskSummaryRow]) {
    let steps: std::collections::HashMap<i64, &scope_profiler_analysis::TaskRow> =
        run.rank_tasks(rank).map(|r| (r.index, r)).collect();
    let labels = LaneLabels::new(run, rank);
    let held = tasks.iter().any(|t| t.held_time.is_some());
    let ready = tasks.iter().any(|t| t.ready_wait_time.is_some());
    let mut headers = vec!["index", "lane", "steps", "wall", "calls", "region"];
    if held {
        headers.extend(["held", "await"]);
    }
    headers.extend(["running", "awaiting"]);
    if ready {
        headers.push("ready wait");
    }
    let times: Vec<f64> = tasks.iter().map(task_busy_time).collect();
    let (shown, rest) = busiest(&times, Some(REPORT_ROWS));
    let rows = shown
        .iter()
        .map(|&k| {
            let t = &tasks[k];
            let row_of = steps.get(&t.index);
            let mut row = vec![
                int(t.index),
                text(labels.label(t.index)),
                row_of.map(|r| int(r.steps)).unwrap_or_else(|| text("-")),
                opt_s(t.wall_time),
                int(t.num_calls),
                s6(t.region_time),
            ];
            if held {
                row.extend([opt_s(t.held_time), opt_s(t.await_time)]);
            }
            row.push(row_of.map(|r| ns_s(r.running_ns)).unwrap_or_else(|| text("-")));
            row.push(row_of.map(|r| ns_s(r.suspended_ns)).unwrap_or_else(|| text("-")));
            if ready {
                row.push(opt_s(t.ready_wait_time));
            }
            row
        })
        .collect();
    let rest = (!rest.is_empty()).then(|| {
        let calls: i64 = rest.iter().map(|&k| tasks[k].num_calls).sum();
        let region: f64 = rest.iter().map(|&k| tasks[k].region_time).sum();
        let label = format!("… {} more tasks", rest.len());
        rest_row(1, label, vec![text(""), text(""), int(calls), s6(region)])
    });
    table(out, "tasks", &headers, rows, rest);
    out.push_str(
        "<p class=\"help\">The busiest tasks first (by held time); wall: creation to completion (or the run's \
         end); region / held / await: the task's top-level calls; ready wait: the part of the task's waits in \
         which it was ready to resume but its event loop ran other code; running / awaiting: all the task's \
         steps, inside regions or not.</p>\n",
    );
}

/// `svg` without a leading `<?xml ...?>` declaration and `<!DOCTYPE ...>` (not valid inside HTML).
fn strip_xml_prolog(svg: &str) -> &str {
    let mut s = svg.trim_start();
    for open in ["<?xml", "<!DOCTYPE"] {
        if s.starts_with(open) {
            if let Some(end) = s.find('>') {
                s = s[end + 1..].trim_start();
            }
        }
    }
    s
}

/// The `height` attribute of the outermost `<svg>` element, px.
fn svg_height(svg: &str) -> Option<f64> {
    let tag = &svg[svg.find("<svg")?..];
    let tag = &tag[..tag.find('>')?];
    let at = tag.find(" height=\"")? + " height=\"".len();
    tag[at..].split('"').next()?.parse().ok()
}

/// inferno's script records the zoom and search in the URL with `history.replaceState`,
/// which a `data:` document may not do (a `SecurityError` on every click): a script placed
/// before it turns such a refusal into a no-op.
fn with_history_shim(svg: &str) -> String {
    const SHIM: &str = "<script type=\"text/ecmascript\"><![CDATA[(function(){var r=history.replaceState;\
history.replaceState=function(){try{return r.apply(history,arguments)}catch(e){}};})();]]></script>";
    match svg.find("<svg").and_then(|at| svg[at..].find('>').map(|e| at + e + 1)) {
        Some(end) => format!("{}{SHIM}{}", &svg[..end], &svg[end..]),
        None => svg.to_string(),
    }
}

/// Width of the embedded timeline, px (it fits a 1400 px window beside the page's margins).
const TIMELINE_WIDTH: f64 = 1300.0;

/// Width of the embedded flame graph, px.
const FLAME_WIDTH: usize = 1200;

/// Towers of the embedded flame graph: the busiest lanes, the others merged into one.
const FLAME_LANES: usize = 50;

/// The page's style (shared by the comparison page, `diff_html`).
pub(crate) const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1f2328;max-width:1500px}
h1{font-size:22px;margin:0 0 12px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:22px 0 6px}
table{border-collapse:collapse;margin:4px 0 8px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left}
thead th{background:#f6f8fa;cursor:pointer;user-select:none;white-space:nowrap}
thead th.asc::after{content:' \\25B2'}thead th.desc::after{content:' \\25BC'}
td.num{text-align:right}tbody tr:nth-child(even){background:#fafbfc}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:8px 0}
dl.facts dt{color:#57606a}dl.facts dd{margin:0}
.note{color:#9a3412}.help{color:#57606a;margin:2px 0 6px;font-size:13px}
.figure{border:1px solid #d0d7de;overflow:auto;max-width:100%}
iframe.flamegraph{display:block}
details{margin:6px 0}table.metadata th{background:#f6f8fa;font-weight:normal}
";

/// Click a header to sort its table (numbers by value, text by name); again to reverse.
/// Shared by the comparison page.
pub(crate) const SCRIPT: &str = "
document.querySelectorAll('table:not(.metadata)').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(th,col){
    th.addEventListener('click',function(){
      var asc=!th.classList.contains('asc');
      t.querySelectorAll('thead th').forEach(function(h){h.classList.remove('asc','desc')});
      th.classList.add(asc?'asc':'desc');
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=a.cells[col],y=b.cells[col],vx=x.dataset.v,vy=y.dataset.v,c;
        if(vx!==undefined&&vy!==undefined){c=parseFloat(vx)-parseFloat(vy)}
        else{c=x.textContent.localeCompare(y.textContent)}
        return asc?c:-c});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
";
