//! Lane timeline SVG: the run as a person first wants to see a concurrent program.
//!
//! One row per thread and per task that recorded calls (labelled with `lane_label`), tasks
//! listed right under the thread they ran on; calls are bars positioned on a shared time
//! axis (ms since the run start), nested calls stacked below their parent inside the row.
//! For task calls the share of the call spent awaiting (`await_ns`, recorded as a total per
//! call, not as intervals) is drawn hatched at the end of the bar. Every bar has a
//! `<title>` tooltip (name, start, duration, await, lane). Calls narrower than one pixel are
//! merged per row and depth into grey "dense" strips (with a count), which keeps the file
//! size bounded by the picture, not by the number of calls.
//!
//! The output is deterministic (no timestamps, fixed number formatting, colours assigned
//! by sorted region name), so it can be compared byte for byte.
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use scope_profiler_analysis::{LaneLabels, Run, TaskRow, ThreadRow};

use crate::export_common::{io_err, origin_ns, reconstruct, write_atomic, RankCalls};
use crate::{ExportError, Selection};

/// Layout knobs of the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelineOptions {
    /// Total width of the picture, px.
    pub width: f64,
    /// Calls narrower than this (px) are merged into dense strips.
    pub min_bar_px: f64,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions { width: 1400.0, min_bar_px: 1.0 }
    }
}

const PALETTE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6",
    "#d37295", "#a0cbe8",
];
/// Text colour on each palette colour (white on dark, near-black on light).
const INK: [&str; 12] = [
    "#ffffff", "#1a1a1a", "#ffffff", "#ffffff", "#1a1a1a", "#1a1a1a", "#ffffff", "#1a1a1a", "#ffffff", "#1a1a1a",
    "#ffffff", "#1a1a1a",
];
const DENSE_COLOR: &str = "#8c8c8c";
const FONT: &str = "Helvetica, Arial, sans-serif";
const FONT_SIZE: f64 = 11.0;
/// Average glyph width of `FONT` at `FONT_SIZE` (px), for truncating labels.
const CHAR_W: f64 = 6.3;
const LABEL_W: f64 = 250.0;
const RIGHT_PAD: f64 = 20.0;
const BAR_H: f64 = 15.0;
const LEVEL: f64 = 17.0;
const ROW_PAD: f64 = 5.0;
const TOP: f64 = 84.0;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // characters XML 1.0 cannot carry
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max_chars` characters, with an ellipsis when cut.
fn fit(s: &str, max_chars: usize) -> Option<String> {
    let n = s.chars().count();
    if n <= max_chars {
        return Some(s.to_string());
    }
    if max_chars < 2 {
        return None;
    }
    let mut t: String = s.chars().take(max_chars - 1).collect();
    t.push('…');
    Some(t)
}

/// Milliseconds with a precision that suits `ns`.
fn ms(ns: i64) -> String {
    let v = ns as f64 / 1e6;
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.1} ms")
    } else if a >= 1.0 {
        format!("{v:.3} ms")
    } else {
        format!("{v:.4} ms")
    }
}

/// The name to print inside a bar `w` px wide: the whole name, or at least three
/// characters and an ellipsis; `None` when that does not fit.
fn bar_text(name: &str, w: f64) -> Option<String> {
    let room = ((w - 6.0) / CHAR_W).floor();
    if room < 1.0 {
        return None;
    }
    let room = room as usize;
    let n = name.chars().count();
    if n <= room {
        return Some(name.to_string());
    }
    if room < 4 {
        return None;
    }
    fit(name, room)
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let s = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    s * p
}

/// One row of the picture.
struct Row<'a> {
    r: &'a RankCalls,
    lane: i64,
    ids: &'a [usize],
    label: String,
    detail: String,
    is_task: bool,
    depth: i64,
    life: Option<(i64, i64)>,
}

/// Rows of one rank: each thread (ascending index) followed by the tasks that ran on it,
/// then the unknown lane, then tasks of threads without a row.
fn rank_rows<'a>(run: &Run, r: &'a RankCalls, end_ns: i64) -> Vec<Row<'a>> {
    let info = LaneInfo::new(run, r.rank, end_ns);
    let mut rows: Vec<Row<'a>> = r
        .lanes
        .iter()
        .map(|(lane, ids)| {
            let depth = ids.iter().map(|&c| r.calls.depth[c] as i64).max().unwrap_or(0);
            let (label, detail, life) = info.describe(*lane);
            Row { r, lane: *lane, ids, label, detail, is_task: *lane >= 0, depth, life }
        })
        .collect();
    // order: thread k, its tasks, thread k+1, ...; then lane -1; then orphan tasks
    let thread_of_task = |lane: i64| info.tasks.get(&lane).map(|t| t.thread_index).unwrap_or(-1);
    let has_thread_row: BTreeSet<i64> = rows.iter().filter(|x| x.lane <= -2).map(|x| -2 - x.lane).collect();
    rows.sort_by_key(|x| {
        if x.lane <= -2 {
            (0, -2 - x.lane, 0, 0)
        } else if x.lane >= 0 && has_thread_row.contains(&thread_of_task(x.lane)) {
            (0, thread_of_task(x.lane), 1, x.lane)
        } else if x.lane == -1 {
            (1, 0, 0, 0)
        } else {
            (2, 0, 0, x.lane)
        }
    });
    rows
}

/// The lane tables of one rank, for row labels, details and lifetimes.
struct LaneInfo<'a> {
    rank: u32,
    labels: LaneLabels<'a>,
    threads: HashMap<i64, &'a ThreadRow>,
    tasks: HashMap<i64, &'a TaskRow>,
    /// `metadata.start_time_ns`: lane-table times are relative to it (no band without it).
    t0: Option<i64>,
    /// End of the picture, ns: the lifetime end of a thread or task still alive.
    end_ns: i64,
}

impl<'a> LaneInfo<'a> {
    fn new(run: &'a Run, rank: u32, end_ns: i64) -> Self {
        LaneInfo {
            rank,
            labels: LaneLabels::new(run, rank),
            threads: run.rank_threads(rank).map(|t| (t.index, t)).collect(),
            tasks: run.rank_tasks(rank).map(|t| (t.index, t)).collect(),
            t0: run.meta_int("start_time_ns"),
            end_ns,
        }
    }

    /// Lifetime `a`..`b` (table times, `b < 0`: still alive) on the recording clock.
    fn life(&self, a: i64, b: i64) -> Option<(i64, i64)> {
        self.t0.map(|t0| (t0 + a, if b < 0 { self.end_ns } else { t0 + b }))
    }

    /// (label, detail, lifetime) of the row of `lane`.
    fn describe(&self, lane: i64) -> (String, String, Option<(i64, i64)>) {
        if lane == -1 {
            return (format!("rank {}", self.rank), "calls without a thread (untracked run)".to_string(), None);
        }
        let label = self.labels.label(lane);
        if lane <= -2 {
            let index = -2 - lane;
            return match self.threads.get(&index) {
                Some(t) => (
                    label,
                    format!(
                        "thread {} {}: ident {}, native id {}{}, CPU {}",
                        t.index,
                        t.name,
                        t.ident,
                        t.native_id,
                        if t.daemon { ", daemon" } else { "" },
                        ms(t.cpu_ns)
                    ),
                    self.life(t.start_ns, t.end_ns),
                ),
                None => (label, format!("thread {index} (not in the thread table)"), None),
            };
        }
        match self.tasks.get(&lane) {
            Some(t) => (
                label,
                format!(
                    "{} {} ({}): {} steps, running {}, awaiting {}",
                    t.kind,
                    t.name,
                    t.coro_name,
                    t.steps,
                    ms(t.running_ns),
                    ms(t.suspended_ns)
                ),
                self.life(t.created_ns, t.done_ns),
            ),
            None => (label, format!("task {lane} (not in the task table)"), None),
        }
    }
}

/// A run of sub-pixel calls being merged (per row and depth).
struct Dense {
    x0: f64,
    x1: f64,
    count: u64,
    ns: i64,
    name: Option<usize>,
    mixed: bool,
}

/// Whether the picture used the await hatching / dense strips (for the legend).
#[derive(Default)]
struct Used {
    await_: bool,
    dense: bool,
}

/// Layout of one timeline picture: the time axis in px and the region colours. Drawn in
/// steps, each appending to the SVG text: header, row backgrounds, axis, bars, legend.
struct Timeline<'a> {
    run: &'a Run,
    opt: TimelineOptions,
    /// Time origin and end of the picture, ns on the recording clock.
    origin: i64,
    end: i64,
    /// `end - origin` (at least 1), ns.
    span: f64,
    width: f64,
    height: f64,
    /// Left edge and width of the plot area, px.
    x0: f64,
    plot_w: f64,
    /// Region names with calls, sorted; a name's position is its colour.
    names: Vec<&'a str>,
    color_of: HashMap<&'a str, usize>,
}

/// Height of a row, px.
fn row_height(row: &Row<'_>) -> f64 {
    (row.depth + 1) as f64 * LEVEL + 2.0 * ROW_PAD
}

/// Height of a rank heading (several ranks), px.
const HEADING_H: f64 = 20.0;

/// The rows of the picture per rank with calls: (heading rank when several ranks, rows).
type RankRows<'a> = Vec<(Option<u32>, Vec<Row<'a>>)>;

impl<'a> Timeline<'a> {
    /// `end`: the end of the last call, ns ([`picture_end`]).
    fn new(run: &'a Run, all: &[RankCalls], end: i64, rows: &RankRows<'_>, opt: &TimelineOptions) -> Self {
        let origin = origin_ns(run, all);
        let width = opt.width.max(LABEL_W + RIGHT_PAD + 200.0);
        let x0 = LABEL_W + 10.0;
        // colours by sorted region name
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for r in all {
            for &row in &r.rows {
                let reg = &run.regions[row];
                if !reg.is_empty() {
                    names.insert(run.region_names.get(reg.region as usize).map(String::as_str).unwrap_or("?"));
                }
            }
        }
        let names: Vec<&str> = names.into_iter().collect();
        let color_of = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let heads = rows.iter().filter(|(head, _)| head.is_some()).count() as f64 * HEADING_H;
        let height = TOP + heads + rows.iter().flat_map(|(_, v)| v).map(row_height).sum::<f64>() + 30.0;
        Timeline {
            run,
            opt: *opt,
            origin,
            end,
            span: (end - origin).max(1) as f64,
            width,
            height,
            x0,
            plot_w: width - x0 - RIGHT_PAD,
            names,
            color_of,
        }
    }

    /// x of time `ns`, px.
    fn px(&self, ns: i64) -> f64 {
        self.x0 + (ns - self.origin) as f64 / self.span * self.plot_w
    }

    fn color(i: usize) -> &'static str {
        PALETTE[i % PALETTE.len()]
    }

    /// The document to the end of the header: root element, hatching pattern, title, summary.
    fn header(&self, s: &mut String, sel: &Selection, n_rows: usize, n_calls: usize) {
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}" font-family="{FONT}" font-size="{FONT_SIZE}">"#,
            w = self.width,
            h = self.height
        );
        s.push_str(concat!(
            "<defs><pattern id=\"await\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" patternTransform=\"rotate(45)\">",
            "<rect width=\"6\" height=\"6\" fill=\"#ffffff\" fill-opacity=\"0.6\"/>",
            "<rect width=\"2\" height=\"6\" fill=\"#333333\" fill-opacity=\"0.55\"/></pattern></defs>\n"
        ));
        let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
        let ranks_txt = match sel.ranks.as_slice() {
            [r] => format!(" — rank {r}"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            r#"<text x="10" y="22" font-size="16" font-weight="bold">{}</text>"#,
            esc(&format!("{}{}", sel.label, ranks_txt))
        );
        let _ = writeln!(
            s,
            r##"<text x="10" y="40" fill="#555555">{}</text>"##,
            esc(&format!(
                "{} lane(s), {} call(s), {} from run start; hover a bar for details",
                n_rows,
                n_calls,
                ms(self.end - self.origin)
            ))
        );
    }

    /// Pass 1: rank headings, row backgrounds, lifetime bands, labels (grid lines go over
    /// them, bars last). Returns the top y of each row per rank and the bottom of the last.
    fn backgrounds(&self, s: &mut String, rows: &RankRows<'_>) -> (Vec<Vec<f64>>, f64) {
        let mut row_y: Vec<Vec<f64>> = Vec::with_capacity(rows.len());
        let mut y = TOP;
        let mut stripe = false;
        for (head, v) in rows {
            if let Some(rank) = head {
                let _ = writeln!(s, r#"<text x="10" y="{:.1}" font-weight="bold">rank {rank}</text>"#, y + 14.0);
                y += HEADING_H;
            }
            let mut ys = Vec::with_capacity(v.len());
            for row in v {
                ys.push(y);
                self.row_background(s, row, y, stripe);
                stripe = !stripe;
                y += row_height(row);
            }
            row_y.push(ys);
        }
        (row_y, y)
    }

    fn row_background(&self, s: &mut String, row: &Row<'_>, y: f64, stripe: bool) {
        let (width, origin, x0) = (self.width, self.origin, self.x0);
        let h = row_height(row);
        if stripe {
            let _ = writeln!(s, r##"<rect x="0" y="{y:.1}" width="{width:.0}" height="{h:.1}" fill="#f3f5f8"/>"##);
        }
        // lifetime of the thread / task: a light band behind its calls
        if let Some((a, b)) = row.life {
            let (xa, xb) = (self.px(a.max(origin)).max(x0), self.px(b.min(self.end)).min(x0 + self.plot_w));
            if b >= a && xb >= xa {
                let _ = writeln!(
                    s,
                    r##"<rect x="{xa:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="#dbe4ef" fill-opacity="0.55"><title>{}</title></rect>"##,
                    y + 1.0,
                    (xb - xa).max(0.5),
                    h - 2.0,
                    esc(&format!(
                        "{}: {} alive {} – {}",
                        row.label,
                        if row.is_task { "task" } else { "thread" },
                        ms(a - origin),
                        ms(b - origin)
                    ))
                );
            }
        }
        let indent = if row.is_task { 20.0 } else { 8.0 };
        let max_chars = ((LABEL_W - indent - 4.0) / CHAR_W) as usize;
        let label = fit(&row.label, max_chars).unwrap_or_default();
        let (weight, fill) = if row.is_task { ("normal", "#333333") } else { ("bold", "#111111") };
        let _ = writeln!(
            s,
            r#"<text x="{indent:.1}" y="{:.1}" font-weight="{weight}" fill="{fill}"><title>{}</title>{}</text>"#,
            y + ROW_PAD + BAR_H - 3.5,
            esc(&format!("{}\n{}", row.label, row.detail)),
            esc(&label)
        );
    }

    /// Time axis down to `axis_bottom`: grid lines, tick labels (ms), axis title and line.
    fn axis(&self, s: &mut String, axis_bottom: f64) {
        let (x0, plot_w) = (self.x0, self.plot_w);
        let span_ms = self.span / 1e6;
        let step = nice_step(span_ms / 10.0);
        let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
        let axis_y = TOP - 6.0;
        let n_ticks = (span_ms / step + 1e-9).floor() as i64;
        let _ = writeln!(s, r##"<g stroke="#d9d9d9" stroke-width="1">"##);
        for k in 0..=n_ticks {
            let x = x0 + (k as f64 * step) / span_ms * plot_w;
            let _ = writeln!(s, r#"<line x1="{x:.2}" y1="{axis_y:.1}" x2="{x:.2}" y2="{axis_bottom:.1}"/>"#);
        }
        let _ = writeln!(s, "</g>");
        let _ = writeln!(s, r##"<g fill="#333333" text-anchor="middle">"##);
        for k in 0..=n_ticks {
            let v = k as f64 * step;
            let x = x0 + v / span_ms * plot_w;
            let _ = writeln!(s, r#"<text x="{x:.2}" y="{:.1}">{v:.decimals$}</text>"#, axis_y - 4.0);
        }
        let _ = writeln!(s, "</g>");
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#333333" text-anchor="end" font-weight="bold">ms since run start</text>"##,
            x0 - 12.0,
            axis_y - 4.0
        );
        let _ = writeln!(
            s,
            r##"<line x1="{x0:.1}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#888888"/>"##,
            x0 + plot_w
        );
    }

    /// Pass 2: the bars of one row whose top is `y`; sub-pixel calls merged per depth.
    fn row_bars(&self, s: &mut String, row: &Row<'_>, y: f64, used: &mut Used) {
        let _ = writeln!(s, r#"<g class="lane" data-rank="{}" data-lane="{}">"#, row.r.rank, row.lane);
        let c = &row.r.calls;
        let mut dense: Vec<Option<Dense>> = (0..=row.depth).map(|_| None).collect();
        for &id in row.ids {
            let depth = c.depth[id] as i64;
            let (a, b) = (c.start_ns[id], c.end_ns[id]);
            let (xa, xb) = (self.px(a), self.px(b));
            let ci = self.color_of.get(row.r.name(self.run, id)).copied();
            let slot = &mut dense[depth as usize];
            if xb - xa < self.opt.min_bar_px {
                used.dense = true;
                match slot {
                    Some(dn) if xa <= dn.x1 + 1.0 => {
                        dn.x1 = dn.x1.max(xb);
                        dn.count += 1;
                        dn.ns += b - a;
                        if dn.name != ci {
                            dn.mixed = true;
                        }
                    }
                    _ => {
                        self.dense_strip(s, row, y, slot.take(), depth);
                        *slot = Some(Dense { x0: xa, x1: xb, count: 1, ns: b - a, name: ci, mixed: false });
                    }
                }
                continue;
            }
            self.dense_strip(s, row, y, slot.take(), depth);
            self.bar(s, row, id, y + ROW_PAD + depth as f64 * LEVEL, ci, used);
        }
        for (depth, slot) in dense.iter_mut().enumerate() {
            self.dense_strip(s, row, y, slot.take(), depth as i64);
        }
        s.push_str("</g>\n");
    }

    /// A merged strip of sub-pixel calls at `depth` of the row whose top is `y`.
    fn dense_strip(&self, s: &mut String, row: &Row<'_>, y: f64, d: Option<Dense>, depth: i64) {
        let Some(dn) = d else { return };
        let by = y + ROW_PAD + depth as f64 * LEVEL;
        // one region: its colour, lighter; several: grey
        let (what, fill, opacity) = match (dn.mixed, dn.name) {
            (false, Some(i)) => (self.names[i].to_string(), Self::color(i), "0.6"),
            _ => ("several regions".to_string(), DENSE_COLOR, "1"),
        };
        let _ = writeln!(
            s,
            r#"<rect x="{:.2}" y="{by:.1}" width="{:.2}" height="{BAR_H:.1}" fill="{fill}" fill-opacity="{opacity}"><title>{}</title></rect>"#,
            dn.x0,
            (dn.x1 - dn.x0).max(1.0),
            esc(&format!("{} short call(s) of {what}\ntotal {}\n{}", dn.count, ms(dn.ns), row.label))
        );
    }

    /// The bar of call `id` with top `by`: tooltip, rectangle, await hatching, name.
    fn bar(&self, s: &mut String, row: &Row<'_>, id: usize, by: f64, ci: Option<usize>, used: &mut Used) {
        let (r, c) = (row.r, &row.r.calls);
        let (a, b) = (c.start_ns[id], c.end_ns[id]);
        let (xa, xb) = (self.px(a), self.px(b));
        let w = xb - xa;
        let name = r.name(self.run, id);
        let reg = &self.run.regions[r.rows[c.region_index[id] as usize]];
        let await_ns = reg
            .await_ns
            .as_ref()
            .and_then(|a| a.values().get(c.call_index[id] as usize).copied())
            .filter(|&v| v > 0)
            .map(|v| v.min(b - a));
        let (fill, ink) = match ci {
            Some(i) => (Self::color(i), INK[i % INK.len()]),
            None => (DENSE_COLOR, "#ffffff"),
        };
        let _ = write!(
            s,
            r##"<g><title>{}</title><rect x="{xa:.2}" y="{by:.1}" width="{w:.2}" height="{BAR_H:.1}" fill="{fill}" stroke="#ffffff" stroke-width="0.5"/>"##,
            esc(&self.tooltip(row, id, name, await_ns))
        );
        if let Some(aw) = await_ns {
            let aw_w = w * aw as f64 / (b - a) as f64;
            if aw_w >= 0.5 {
                used.await_ = true;
                let _ = write!(
                    s,
                    r#"<rect x="{:.2}" y="{by:.1}" width="{aw_w:.2}" height="{BAR_H:.1}" fill="url(#await)"/>"#,
                    xb - aw_w
                );
            }
        }
        if let Some(t) = bar_text(name, w) {
            // halo in the bar's colour keeps the text legible over the hatching
            let _ = write!(
                s,
                r#"<text x="{:.2}" y="{:.1}" fill="{ink}" stroke="{fill}" stroke-width="3" paint-order="stroke" pointer-events="none">{}</text>"#,
                xa + 3.0,
                by + BAR_H - 4.0,
                esc(&t)
            );
        }
        s.push_str("</g>\n");
    }

    /// Tooltip of call `id`: name, start, duration, await and running time, self time, lane.
    fn tooltip(&self, row: &Row<'_>, id: usize, name: &str, await_ns: Option<i64>) -> String {
        let c = &row.r.calls;
        let (a, b) = (c.start_ns[id], c.end_ns[id]);
        let mut tip = format!("{name}\nstart {}\nduration {}", ms(a - self.origin), ms(b - a));
        if let Some(aw) = await_ns {
            let pct = if b > a { aw as f64 / (b - a) as f64 * 100.0 } else { 0.0 };
            let _ = write!(tip, "\nawait {} ({pct:.0}%)\nrunning {}", ms(aw), ms(b - a - aw));
        }
        let _ = write!(tip, "\nself {}\n{}", ms(c.exclusive_ns[id]), row.label);
        tip
    }

    /// Legend (drawn last, at the top): regions, then await and dense when used; then the
    /// footer and the end of the document.
    fn legend(&self, s: &mut String, used: &Used) {
        let mut lx = 10.0;
        let ly = 50.0;
        let right = self.width - RIGHT_PAD;
        for (i, n) in self.names.iter().enumerate() {
            let t = fit(n, 28).unwrap_or_default();
            let w = 16.0 + t.chars().count() as f64 * CHAR_W + 14.0;
            if lx + w > right {
                break;
            }
            let _ = writeln!(
                s,
                r#"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="{}"><title>{}</title></rect><text x="{:.1}" y="{:.1}">{}</text>"#,
                Self::color(i),
                esc(n),
                lx + 15.0,
                ly + 9.5,
                esc(&t)
            );
            lx += w;
        }
        let extra = [
            (used.await_, "await", "awaiting: share of the call, drawn at its end"),
            (used.dense, "dense", "calls < 1 px, merged (lighter; grey: several regions)"),
        ];
        for (_, kind, text) in extra.into_iter().filter(|e| e.0) {
            let w = 16.0 + text.chars().count() as f64 * CHAR_W + 14.0;
            if lx + w > right {
                break;
            }
            if kind == "await" {
                let _ = writeln!(
                    s,
                    r##"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="#4e79a7"/><rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="url(#await)"/>"##
                );
            } else {
                let _ = writeln!(s, r#"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="{DENSE_COLOR}"/>"#);
            }
            let _ =
                writeln!(s, r##"<text x="{:.1}" y="{:.1}" fill="#333333">{}</text>"##, lx + 15.0, ly + 9.5, esc(text));
            lx += w;
        }
    }

    fn footer(&self, s: &mut String) {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" fill="#777777" text-anchor="end">written by scope-profiler-rs</text>"##,
            self.width - RIGHT_PAD,
            self.height - 10.0
        );
        s.push_str("</svg>\n");
    }
}

/// End of the picture: the end of the last call (the time origin without calls), ns.
fn picture_end(run: &Run, all: &[RankCalls]) -> i64 {
    all.iter().flat_map(|r| r.calls.end_ns.iter().copied()).max().unwrap_or_else(|| origin_ns(run, all))
}

/// Render the timeline of `sel` as an SVG document.
///
/// Errors: [`ExportError::Nesting`], [`ExportError::NoCalls`].
pub fn timeline_svg(run: &Run, sel: &Selection, opt: &TimelineOptions) -> Result<String, ExportError> {
    let applied = sel.apply(run);
    let run: &Run = &applied;
    let all = reconstruct(run, &sel.ranks)?;
    let end = picture_end(run, &all);
    let multi = all.len() > 1;
    let rows: RankRows<'_> =
        all.iter().filter(|r| !r.lanes.is_empty()).map(|r| (multi.then_some(r.rank), rank_rows(run, r, end))).collect();
    let t = Timeline::new(run, &all, end, &rows, opt);
    let n_rows: usize = rows.iter().map(|(_, v)| v.len()).sum();
    let mut s = String::with_capacity(64 * 1024);
    t.header(&mut s, sel, n_rows, all.iter().map(|r| r.calls.len()).sum());
    let (row_y, axis_bottom) = t.backgrounds(&mut s, &rows);
    t.axis(&mut s, axis_bottom);
    let mut used = Used::default();
    for ((_, v), ys) in rows.iter().zip(&row_y) {
        for (row, &y) in v.iter().zip(ys) {
            t.row_bars(&mut s, row, y, &mut used);
        }
    }
    t.legend(&mut s, &used);
    t.footer(&mut s);
    Ok(s)
}

/// Write the timeline of `sel` with [`TimelineOptions::default`] to `out`.
pub fn write_timeline_svg_to<W: Write>(run: &Run, sel: &Selection, mut out: W) -> Result<(), ExportError> {
    let svg = timeline_svg(run, sel, &TimelineOptions::default())?;
    out.write_all(svg.as_bytes()).map_err(|e| ExportError::Io(e.to_string()))
}

/// Write the timeline of `sel` to `path` (atomically, parent directories created).
///
/// Errors: [`ExportError::Nesting`], [`ExportError::NoCalls`], [`ExportError::Io`] naming
/// the path.
pub fn write_timeline_svg(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_timeline_svg_with(run, sel, &TimelineOptions::default(), path)
}

/// [`write_timeline_svg`] with layout options.
pub fn write_timeline_svg_with(
    run: &Run,
    sel: &Selection,
    opt: &TimelineOptions,
    path: &Path,
) -> Result<(), ExportError> {
    let svg = timeline_svg(run, sel, opt)?;
    write_atomic(path, |f| f.write_all(svg.as_bytes()).map_err(io_err(path)))
}
