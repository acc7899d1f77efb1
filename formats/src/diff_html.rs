//! The page of a comparison (`scope-profiler diff BASE NEW -o diff.html`): one self-contained
//! HTML file (no server, no network) with what was compared, the table of rows (sortable by
//! a click on a header) and the differential flame graph ([`crate::diff_flamegraph`]).
//! Also the bounded table a notebook shows for a comparison ([`diff_table_html`]).
use std::fmt::Write as _;
use std::path::Path;

use scope_profiler_analysis::compare::display::{format_calls, format_change, format_interval, format_seconds};
use scope_profiler_analysis::compare::{Comparison, DiffRow, SideInfo, Verdict, TOO_FEW_CALLS};

use crate::diff_flamegraph::{diff_flamegraph_svg, ZOOM_SCRIPT};
use crate::export_output::{io_err, markup_escape as esc, write_atomic};
use crate::html_report::{SCRIPT as SORT_SCRIPT, STYLE};
use crate::ExportError;

/// Width of the flame graph, px.
const FLAME_WIDTH: f64 = 1200.0;

/// What the page draws the flame graph from: the comparison by call path, or why there is none.
pub type FlameInput<'a> = Result<&'a Comparison, String>;

/// The table's header cells.
const HEADERS: [&str; 8] =
    ["", "base calls", "new calls", "base time", "new time", "change", "95 % interval", "verdict"];

/// One row of the table: its cells, numbers with their sort value.
fn row_html(out: &mut String, r: &DiffRow) {
    let num = |text: String, v: Option<f64>| match v {
        Some(v) => format!("<td class=\"num\" data-v=\"{v}\">{}</td>", esc(&text)),
        None => format!("<td class=\"num\" data-v=\"-1e300\">{}</td>", esc(&text)),
    };
    let _ = write!(out, "<tr class=\"v-{}\"><td>{}</td>", r.verdict.name(), esc(&r.name));
    out.push_str(&num(format_calls(r.base_calls), Some(r.base_calls)));
    out.push_str(&num(format_calls(r.new_calls), Some(r.new_calls)));
    out.push_str(&num(format_seconds(r.base_time), Some(r.base_time)));
    out.push_str(&num(format_seconds(r.new_time), Some(r.new_time)));
    out.push_str(&num(r.change.map_or_else(|| "-".into(), format_change), r.change));
    let interval = match (r.ci_low, r.ci_high) {
        (Some(lo), Some(hi)) => format_interval(lo, hi),
        _ => "-".into(),
    };
    out.push_str(&num(interval, r.ci_low));
    let verdict = match r.note {
        Some(note) => format!("<td title=\"{}\">{} *</td>", esc(note), r.verdict.name()),
        None => format!("<td>{}</td>", r.verdict.name()),
    };
    out.push_str(&verdict);
    out.push_str("</tr>\n");
}

/// The table of the first `max_rows` rows of `c` (all with `usize::MAX`), and a line saying
/// how many more there are.
fn table_html(out: &mut String, c: &Comparison, max_rows: usize) {
    out.push_str("<table class=\"diff\"><thead><tr>");
    for (i, h) in HEADERS.iter().enumerate() {
        let h = if i == 0 { c.by.name() } else { h };
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for r in c.rows.iter().take(max_rows) {
        row_html(out, r);
    }
    out.push_str("</tbody></table>\n");
    if c.rows.len() > max_rows {
        let _ = writeln!(
            out,
            "<p class=\"note\">… and {} more rows (all of them: <code>.rows</code>, <code>.to_polars()</code>).</p>",
            c.rows.len() - max_rows
        );
    }
    if c.rows.iter().any(|r| r.note == Some(TOO_FEW_CALLS)) {
        let _ = writeln!(out, "<p class=\"help\">* {TOO_FEW_CALLS}: not declared changed.</p>");
    }
}

/// `label (N runs)` of a side.
fn side_text(s: &SideInfo) -> String {
    let n = s.runs.len();
    format!("{} ({n} run{})", s.label, if n == 1 { "" } else { "s" })
}

/// What the intervals mean, in one sentence.
fn method_text(c: &Comparison) -> String {
    let rows = c.rows.iter().filter(|r| r.ci_low.is_some()).count();
    format!(
        "change = new / base − 1 of the time per run (mean inclusive time); 95 % intervals for all {rows} rows \
         together (each at {:.3} %), from the spread of the calls within each run and of the runs within each side; \
         \"slower\" / \"faster\" when the whole interval is beyond ±{} %.",
        c.row_level * 100.0,
        c.threshold * 100.0
    )
}

/// The table a notebook shows for `c` (`Comparison._repr_html_`): a heading line, at most
/// `max_rows` rows, and how many more there are; names cut at 200 characters, so that its
/// size is bounded whatever the comparison.
pub fn diff_table_html(c: &Comparison, max_rows: usize) -> String {
    let mut shown = c.clone();
    shown.rows.truncate(max_rows);
    for r in &mut shown.rows {
        if r.name.chars().count() > 200 {
            r.name = r.name.chars().take(199).chain(['…']).collect();
        }
    }
    let mut out = String::from("<div class=\"scope-profiler-diff\">");
    let _ = write!(
        out,
        "<p><b>base</b> {} &nbsp; <b>new</b> {}<br><small>{}</small></p>",
        esc(&side_text(&c.base)),
        esc(&side_text(&c.new)),
        esc(&method_text(c))
    );
    table_html(&mut out, &shown, max_rows);
    if c.rows.len() > max_rows {
        let _ = write!(
            out,
            "<p class=\"note\">… and {} more rows (all of them: <code>.rows</code>, <code>.to_polars()</code>).</p>",
            c.rows.len() - max_rows
        );
    }
    out.push_str("</div>");
    out
}

/// The whole page of `c`, the flame graph drawn from `flame`.
pub fn diff_html(c: &Comparison, flame: FlameInput<'_>) -> String {
    let title = format!("scope-profiler diff: {} → {}", c.base.label, c.new.label);
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"scope-profiler {}\">\n<title>{}</title>\n<style>{STYLE}{DIFF_STYLE}</style>\n\
         </head>\n<body>\n<h1>{}</h1>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&title),
        esc(&title)
    );
    out.push_str("<dl class=\"facts\">");
    for (k, s) in [("base", &c.base), ("new", &c.new)] {
        let _ = write!(out, "<dt>{k}</dt><dd>{}", esc(&side_text(s)));
        if s.runs.len() > 1 || s.runs.first() != Some(&s.label) {
            let _ = write!(out, ": {}", esc(&s.runs.join(", ")));
        }
        out.push_str("</dd>");
    }
    let _ = writeln!(out, "<dt>rows</dt><dd>one per {}: {}</dd></dl>", c.by.name(), c.rows.len());
    let _ = writeln!(out, "<p class=\"help\">{}</p>", esc(&method_text(c)));
    let counts: Vec<String> = [Verdict::Slower, Verdict::Faster, Verdict::New, Verdict::Gone, Verdict::Unchanged]
        .iter()
        .map(|v| format!("{} {}", c.rows.iter().filter(|r| r.verdict == *v).count(), v.name()))
        .collect();
    let _ = writeln!(out, "<h3>{}s: {}</h3>", capitalised(c.by.name()), counts.join(", "));
    table_html(&mut out, c, usize::MAX);
    out.push_str("<h3>Differential flame graph</h3>\n");
    out.push_str(
        "<p class=\"help\">One frame per call path, callers below; width = the path's time per run in the new side; \
         colour = its change: <span class=\"sw v-slower\">slower</span> <span class=\"sw v-faster\">faster</span> \
         (deeper the larger, full at ±50 %) <span class=\"sw v-unchanged\">unchanged</span> \
         <span class=\"sw v-new\">new</span>. Hover a frame for its numbers, click it to zoom. \
         <button id=\"flame-reset\" type=\"button\">reset zoom</button></p>\n",
    );
    match flame.map(|f| diff_flamegraph_svg(f, FLAME_WIDTH)) {
        Ok(Some((svg, skipped))) => {
            let _ = writeln!(out, "<div class=\"figure flame\">{svg}</div>");
            if skipped > 0 {
                let _ = writeln!(out, "<p class=\"help\">{skipped} call paths narrower than 0.1 px are not drawn.</p>");
            }
        }
        Ok(None) => out.push_str("<p class=\"note\">flame graph not available: no call in the new side.</p>\n"),
        Err(why) => {
            let _ = writeln!(out, "<p class=\"note\">flame graph not available: {}</p>", esc(&why));
        }
    }
    let _ = write!(out, "<script>{SORT_SCRIPT}{ZOOM_SCRIPT}</script>\n</body></html>\n");
    out
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// Write [`diff_html`] to `path` (atomically, parent directories created). Errors:
/// [`ExportError::Io`] naming the path.
pub fn write_diff_html(c: &Comparison, flame: FlameInput<'_>, path: &Path) -> Result<(), ExportError> {
    let html = diff_html(c, flame);
    write_atomic(path, |f| f.write_all(html.as_bytes()).map_err(io_err(path)))
}

/// The page's own style: verdict colours of the table rows and flame-graph frames.
const DIFF_STYLE: &str = "
tr.v-slower td:last-child{color:#b42318;font-weight:600}tr.v-faster td:last-child{color:#1d4ed8;font-weight:600}
tr.v-new td:last-child{color:#7e22ce}tr.v-gone td:last-child{color:#57606a}
.sw{display:inline-block;padding:0 6px;border-radius:3px;color:#fff}.sw.v-unchanged{color:#1f2328}.sw.v-slower{background:hsl(4,85%,60%)}
.sw.v-faster{background:hsl(214,85%,60%)}.sw.v-unchanged{background:hsl(0,0%,82%)}.sw.v-new{background:hsl(280,55%,62%)}
.figure.flame{padding:2px}svg.diff-flame{display:block;font:11px monospace}
svg.diff-flame g.f{cursor:pointer}svg.diff-flame g.f:hover rect{stroke:#1f2328;stroke-width:0.8}
svg.diff-flame g.anc rect{opacity:0.55}svg.diff-flame text{pointer-events:none;fill:#1f2328}
";

#[cfg(test)]
mod tests {
    use super::*;
    use scope_profiler_analysis::compare::CompareBy;

    fn comparison(n: usize) -> Comparison {
        let rows = (0..n)
            .map(|i| DiffRow {
                name: format!("region_{i}_{}", "x".repeat(300)),
                key: vec![format!("region_{i}")],
                base_calls: 10.0,
                new_calls: 10.0,
                base_time: 0.01,
                new_time: 0.013,
                change: Some(0.3),
                ci_low: Some(0.28),
                ci_high: Some(0.32),
                verdict: Verdict::Slower,
                note: None,
            })
            .collect();
        let side = |l: &str| SideInfo { label: l.into(), runs: vec![l.into()] };
        Comparison {
            base: side("a.h5"),
            new: side("b.h5"),
            by: CompareBy::Region,
            threshold: 0.05,
            row_level: 0.99,
            rows,
        }
    }

    #[test]
    fn the_notebook_table_is_bounded() {
        let small = diff_table_html(&comparison(3), 50);
        assert_eq!(small.matches("<tr class=\"v-slower\">").count(), 3);
        assert!(small.contains("<td class=\"num\" data-v=\"0.3\">+30.0%</td>"));
        assert!(small.contains("[+28.0%, +32.0%]") && small.contains("13.0 ms"));
        assert!(!small.contains("more rows"));
        let big = diff_table_html(&comparison(20_000), 50);
        assert!(big.len() < 100_000, "{}", big.len());
        assert_eq!(big.matches("<tr class=").count(), 50);
        assert_eq!(big.matches("… and 19950 more rows").count(), 1, "{big}");
    }

    #[test]
    fn the_page_says_what_was_compared() {
        let page = diff_html(&comparison(2), Err("calls do not nest".into()));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>scope-profiler diff: a.h5 → b.h5</title>"));
        assert!(page.contains("<h3>Regions: 2 slower, 0 faster, 0 new, 0 gone, 0 unchanged</h3>"));
        assert!(page.contains("flame graph not available: calls do not nest"));
        assert!(!page.contains("src=") && !page.contains("href="), "self-contained");
    }
}
