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
//! The picture stays usable whatever the run (drawn whole, a 3,000-deep recursion would be a
//! 51,158 px tall file, 1,000 threads 44,141 px, 20k tasks 65 MB; browsers and rsvg refuse
//! more than 32,767 px): at most [`TimelineOptions::lanes`] rows (default 64, the busiest by
//! top-level call time) plus one summary row for the rest, at most
//! [`TimelineOptions::max_depth`] levels per row (default 32; deeper calls become markers
//! under their callers), optionally only a time [`TimelineOptions::window`], and never more
//! than [`MAX_SVG_PX`] px in either direction: when the rows would be taller, they are drawn
//! lower (down to 2 px a level), and when even that does not fit, the least busy lanes join
//! the summary row. A caption under the title says what was left out.
//!
//! The output is deterministic (no timestamps, fixed number formatting, colours assigned
//! by sorted region name), so it can be compared byte for byte.
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use scope_profiler_analysis::{lane_id, LaneLabels, Run, TaskRow, ThreadRow};

use crate::export_lanes::{origin_ns, reconstruct, RankCalls};
use crate::export_output::{io_err, markup_escape as esc, write_atomic};
use crate::{ExportError, Selection};

/// Neither dimension of the picture exceeds this many px (browsers and rsvg refuse larger
/// SVG images; it is also cairo's limit).
pub const MAX_SVG_PX: f64 = 32_767.0;

/// Layout knobs of the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelineOptions {
    /// Total width of the picture, px (at most [`MAX_SVG_PX`]).
    pub width: f64,
    /// Calls narrower than this (px) are merged into dense strips.
    pub min_bar_px: f64,
    /// Rows drawn at most: the busiest lanes by top-level call time (in the window); the
    /// others are summed up in one summary row. `0`: every lane (still within
    /// [`MAX_SVG_PX`]: rows get lower, then the least busy lanes join the summary row).
    pub lanes: usize,
    /// Depth levels drawn per row; calls deeper are summarized in a marker under their
    /// caller. `0`: every level (within [`MAX_SVG_PX`]).
    pub max_depth: usize,
    /// Only this span, `(start, end)` in seconds from the run start (the time axis' zero;
    /// `end` may be infinite: to the end): calls overlapping it are drawn, clipped to it.
    pub window: Option<(f64, f64)>,
}

impl TimelineOptions {
    /// Default [`TimelineOptions::lanes`].
    pub const DEFAULT_LANES: usize = 64;
    /// Default [`TimelineOptions::max_depth`].
    pub const DEFAULT_MAX_DEPTH: usize = 32;

    /// Whether the options can be drawn: a finite width of at most [`MAX_SVG_PX`], a
    /// window with `0 <= start < end`. The message names the bad value (for a
    /// `ValueError` / a command-line error).
    pub fn check(&self) -> Result<(), String> {
        if !self.width.is_finite() || self.width <= 0.0 || self.width > MAX_SVG_PX {
            return Err(format!(
                "width must be a number of px above 0 and at most {MAX_SVG_PX:.0} (browsers refuse wider SVG images), not {}",
                self.width
            ));
        }
        if let Some((a, b)) = self.window {
            if !(a.is_finite() && a >= 0.0 && b > a) {
                return Err(format!(
                    "window must be START:END seconds from the run start with 0 <= START < END, not {a}:{b}"
                ));
            }
        }
        Ok(())
    }
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            width: 1400.0,
            min_bar_px: 1.0,
            lanes: Self::DEFAULT_LANES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
            window: None,
        }
    }
}

/// `"START:END"` (seconds from the run start; either may be empty: from the start / to the
/// end) as a window for [`TimelineOptions::window`].
pub fn parse_window(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("window must be START:END in seconds from the run start (e.g. 1.5:3, 2:, :0.5), not {s:?}");
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let num = |t: &str, empty: f64| -> Result<f64, String> {
        let t = t.trim();
        if t.is_empty() {
            Ok(empty)
        } else {
            t.parse::<f64>().ok().filter(|v| !v.is_nan()).ok_or_else(bad)
        }
    };
    let w = (num(a, 0.0)?, num(b, f64::INFINITY)?);
    TimelineOptions { window: Some(w), ..TimelineOptions::default() }.check()?;
    Ok(w)
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
    /// The lane's calls in the window (all of them without one), sorted call order.
    ids: Cow<'a, [usize]>,
    label: String,
    detail: String,
    is_task: bool,
    /// Deepest call drawn as a bar (0-based, below the depth limit).
    depth: i64,
    /// Calls at the depth limit or deeper: summarized in markers on the level under `depth`.
    deeper: usize,
    life: Option<(i64, i64)>,
    /// Top-level call time in the window, ns: the busiest rows are drawn.
    busy_ns: i64,
}

impl Row<'_> {
    /// Levels of the row: its bars' and, with deeper calls, their markers'.
    fn levels(&self) -> i64 {
        self.depth + 1 + i64::from(self.deeper > 0)
    }
}

/// The time span drawn, ns on the recording clock: the run's, or the window's.
#[derive(Debug, Clone, Copy)]
struct View {
    v0: i64,
    v1: i64,
    windowed: bool,
}

impl View {
    /// `origin`..`end` of the run, or the window (s from `origin`) of `opt`.
    fn new(origin: i64, end: i64, window: Option<(f64, f64)>) -> View {
        match window {
            None => View { v0: origin, v1: end, windowed: false },
            Some((a, b)) => {
                let at = |s: f64| origin.saturating_add((s * 1e9).round().min(i64::MAX as f64) as i64);
                let v0 = at(a);
                let v1 = if b.is_finite() { at(b) } else { end };
                View { v0, v1: v1.max(v0.saturating_add(1)), windowed: true }
            }
        }
    }

    /// Whether a call `a..b` is drawn: it overlaps the window (an instant call: lies in it).
    fn keeps(&self, a: i64, b: i64) -> bool {
        !self.windowed || (a < self.v1 && b > self.v0) || (a == b && a >= self.v0 && a <= self.v1)
    }

    /// `a..b` clipped to the view (unchanged without a window: the run holds every call).
    fn clip(&self, a: i64, b: i64) -> (i64, i64) {
        if self.windowed {
            (a.max(self.v0), b.min(self.v1).max(a.max(self.v0)))
        } else {
            (a, b)
        }
    }
}

/// Rows of one rank: each thread (ascending index) followed by the tasks that ran on it,
/// then the unknown lane, then tasks of threads without a row. Only lanes with calls in
/// `view`; calls of depth `max_levels` or deeper are counted in [`Row::deeper`].
fn rank_rows<'a>(run: &Run, r: &'a RankCalls, end_ns: i64, view: View, max_levels: i64) -> Vec<Row<'a>> {
    let info = LaneInfo::new(run, r.rank, end_ns);
    let c = &r.calls;
    let mut rows: Vec<Row<'a>> = r
        .lanes
        .iter()
        .filter_map(|(lane, all_ids)| {
            let ids: Cow<'a, [usize]> = if view.windowed {
                Cow::Owned(all_ids.iter().copied().filter(|&i| view.keeps(c.start_ns[i], c.end_ns[i])).collect())
            } else {
                Cow::Borrowed(all_ids.as_slice())
            };
            if ids.is_empty() {
                return None;
            }
            let (mut depth, mut deeper, mut busy_ns) = (0i64, 0usize, 0i64);
            for &i in ids.iter() {
                let d = c.depth[i] as i64;
                if d >= max_levels {
                    deeper += 1;
                } else {
                    depth = depth.max(d);
                }
                if d == 0 {
                    let (a, b) = view.clip(c.start_ns[i], c.end_ns[i]);
                    busy_ns += b - a;
                }
            }
            let (label, detail, life) = info.describe(*lane);
            Some(Row { r, lane: *lane, ids, label, detail, is_task: *lane >= 0, depth, deeper, life, busy_ns })
        })
        .collect();
    // order: thread k, its tasks, thread k+1, ...; then lane -1; then orphan tasks
    let thread_of_task = |lane: i64| info.tasks.get(&lane).map(|t| t.thread_index).unwrap_or(-1);
    let has_thread_row: BTreeSet<i64> = r.lanes.iter().filter(|x| x.0 <= -2).map(|x| -2 - x.0).collect();
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

/// A run of calls below the depth limit being merged into one marker (per row).
struct Deep {
    x0: f64,
    x1: f64,
    count: u64,
    /// Shallowest and deepest depth merged (0-based).
    lo: i64,
    hi: i64,
}

/// Whether the picture used the await hatching / dense strips / depth markers (legend).
#[derive(Default)]
struct Used {
    await_: bool,
    dense: bool,
    deep: bool,
}

/// Vertical sizes of the rows, px: [`LEVEL`], [`BAR_H`], [`ROW_PAD`] times a factor `<= 1`
/// that keeps the picture within [`MAX_SVG_PX`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Geom {
    scale: f64,
    level: f64,
    bar_h: f64,
    row_pad: f64,
}

impl Geom {
    fn new(scale: f64) -> Geom {
        if scale >= 1.0 {
            return Geom { scale: 1.0, level: LEVEL, bar_h: BAR_H, row_pad: ROW_PAD };
        }
        Geom { scale, level: LEVEL * scale, bar_h: BAR_H * scale, row_pad: ROW_PAD * scale }
    }

    /// Height of a row of `levels` levels, px.
    fn row_h(&self, levels: i64) -> f64 {
        levels as f64 * self.level + 2.0 * self.row_pad
    }
}

/// Lowest scale of the rows: 2 px a level.
const MIN_SCALE: f64 = 2.0 / LEVEL;
/// Height of a rank heading (several ranks), px.
const HEADING_H: f64 = 20.0;
/// Height of a caption line, px (the caption says what was left out).
const CAPTION_H: f64 = 16.0;
/// Caption lines at most: lanes, depth, window, regions, scale.
const MAX_CAPTION: usize = 5;
/// Height of the summary row of the lanes not drawn, px.
const SUMMARY_H: f64 = 2.0 * LEVEL + 2.0 * ROW_PAD;
/// Space under the rows (footer), px.
const BOTTOM: f64 = 30.0;
/// Height of everything but the rows and headings, at most, px.
const FIXED_MAX: f64 = TOP + CAPTION_H * MAX_CAPTION as f64 + SUMMARY_H + BOTTOM;

/// Depth levels drawn per row for `max_depth` (0: all): at most as many as one row can
/// hold within [`MAX_SVG_PX`] at the lowest scale, a heading and its marker level included.
fn depth_limit(max_depth: usize) -> i64 {
    let fit = ((MAX_SVG_PX - FIXED_MAX - HEADING_H) / MIN_SCALE - 2.0 * ROW_PAD) / LEVEL;
    let ceiling = fit.floor() as i64 - 1;
    if max_depth == 0 {
        ceiling
    } else {
        (max_depth.min(i64::MAX as usize) as i64).min(ceiling)
    }
}

/// The rows of the picture per rank with rows drawn: (heading rank when several ranks, rows).
type RankRows<'a> = Vec<(Option<u32>, Vec<Row<'a>>)>;

/// The lanes not drawn, summed up in the last row.
#[derive(Default)]
struct Omitted {
    lanes: usize,
    calls: usize,
    busy_ns: i64,
    /// The busiest of them: (label, top-level time ns).
    busiest: Option<(String, i64)>,
    /// Their top-level calls clipped to the view: starts and ends, each sorted.
    starts: Vec<i64>,
    ends: Vec<i64>,
}

impl Omitted {
    fn add(&mut self, row: &Row<'_>, view: View) {
        self.lanes += 1;
        self.calls += row.ids.len();
        self.busy_ns += row.busy_ns;
        if self.busiest.is_none() {
            self.busiest = Some((row.label.clone(), row.busy_ns));
        }
        let c = &row.r.calls;
        for &i in row.ids.iter().filter(|&&i| c.depth[i] == 0) {
            let (a, b) = view.clip(c.start_ns[i], c.end_ns[i]);
            self.starts.push(a);
            self.ends.push(b);
        }
    }

    /// Mean number of these lanes in a top-level call over each of `n` equal spans of
    /// `v0..v1`: `∫ busy(t) dt` from the sorted starts and ends, exactly.
    fn busy_profile(&mut self, v0: i64, v1: i64, n: usize) -> Vec<f64> {
        self.starts.sort_unstable();
        self.ends.sort_unstable();
        // F(t) = Σ_{s < t} (t - s) - Σ_{e < t} (t - e): the busy time before t
        let (mut si, mut ei, mut ssum, mut esum) = (0usize, 0usize, 0i128, 0i128);
        let mut integral = |t: i64| -> i128 {
            while si < self.starts.len() && self.starts[si] < t {
                ssum += self.starts[si] as i128;
                si += 1;
            }
            while ei < self.ends.len() && self.ends[ei] < t {
                esum += self.ends[ei] as i128;
                ei += 1;
            }
            (si as i128 * t as i128 - ssum) - (ei as i128 * t as i128 - esum)
        };
        let span = (v1 - v0) as i128;
        let edge = |j: usize| (v0 as i128 + span * j as i128 / n as i128) as i64;
        let mut prev = integral(edge(0));
        (0..n)
            .map(|j| {
                let (a, b) = (edge(j), edge(j + 1));
                let next = integral(b);
                let mean = if b > a { (next - prev) as f64 / (b - a) as f64 } else { 0.0 };
                prev = next;
                mean
            })
            .collect()
    }
}

/// What the picture leaves out, for the caption.
struct Caption {
    lines: Vec<String>,
}

/// Layout of one timeline picture: the time axis in px and the region colours. Drawn in
/// steps, each appending to the SVG text: header, row backgrounds, axis, bars, legend.
struct Timeline<'a> {
    run: &'a Run,
    opt: TimelineOptions,
    /// Time origin (run start) and end of the run's calls, ns on the recording clock.
    origin: i64,
    end: i64,
    /// The span drawn.
    view: View,
    /// `view.v1 - view.v0` (at least 1), ns.
    span: f64,
    width: f64,
    height: f64,
    /// Top of the rows (under the header, caption and legend), px.
    top: f64,
    /// Row sizes.
    g: Geom,
    /// Depth levels drawn as bars.
    max_levels: i64,
    /// Left edge and width of the plot area, px.
    x0: f64,
    plot_w: f64,
    /// Region names with calls, sorted; a name's position is its colour.
    names: Vec<&'a str>,
    color_of: HashMap<&'a str, usize>,
    caption: Caption,
}

/// Height of a row, px.
fn row_height(row: &Row<'_>, g: &Geom) -> f64 {
    g.row_h(row.levels())
}

impl<'a> Timeline<'a> {
    /// Colours of the region names of `all` and the layout around `rows`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        run: &'a Run,
        all: &[RankCalls],
        (origin, end, view): (i64, i64, View),
        rows: &RankRows<'_>,
        omitted: bool,
        g: Geom,
        caption: Caption,
        opt: &TimelineOptions,
    ) -> Self {
        let width = opt.width.clamp(LABEL_W + RIGHT_PAD + 200.0, MAX_SVG_PX);
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
        let top = TOP + CAPTION_H * caption.lines.len() as f64;
        let heads = rows.iter().filter(|(head, _)| head.is_some()).count() as f64 * HEADING_H;
        let summary = if omitted { SUMMARY_H } else { 0.0 };
        let rows_h: f64 = rows.iter().flat_map(|(_, v)| v).map(|r| row_height(r, &g)).sum();
        let height = (top + heads + rows_h + summary + BOTTOM).min(MAX_SVG_PX);
        Timeline {
            run,
            opt: *opt,
            origin,
            end,
            view,
            span: (view.v1 - view.v0).max(1) as f64,
            width,
            height,
            top,
            g,
            max_levels: depth_limit(opt.max_depth),
            x0,
            plot_w: width - x0 - RIGHT_PAD,
            names,
            color_of,
            caption,
        }
    }

    /// x of time `ns`, px.
    fn px(&self, ns: i64) -> f64 {
        self.x0 + (ns - self.view.v0) as f64 / self.span * self.plot_w
    }

    fn color(i: usize) -> &'static str {
        PALETTE[i % PALETTE.len()]
    }

    /// The document to the end of the header: root element, hatching pattern, title,
    /// summary, caption.
    fn header(&self, s: &mut String, sel: &Selection, n_lanes: usize, n_calls: usize) {
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
                n_lanes,
                n_calls,
                ms(self.end - self.origin)
            ))
        );
        let max_chars = ((self.width - 20.0) / CHAR_W) as usize;
        for (k, line) in self.caption.lines.iter().enumerate() {
            let _ = writeln!(
                s,
                r##"<text class="caption" x="10" y="{:.1}" fill="#9a3412"><title>{}</title>{}</text>"##,
                40.0 + CAPTION_H * (k + 1) as f64,
                esc(line),
                esc(&fit(line, max_chars).unwrap_or_default())
            );
        }
    }

    /// Pass 1: rank headings, row backgrounds, lifetime bands, labels (grid lines go over
    /// them, bars last); the summary row last. Returns the top y of each row per rank, the
    /// top of the summary row and the bottom of the last row.
    fn backgrounds(&self, s: &mut String, rows: &RankRows<'_>, omitted: Option<&Omitted>) -> (Vec<Vec<f64>>, f64, f64) {
        let mut row_y: Vec<Vec<f64>> = Vec::with_capacity(rows.len());
        let mut y = self.top;
        let mut stripe = false;
        for (head, v) in rows {
            if let Some(rank) = head {
                let _ = writeln!(
                    s,
                    r#"<text x="10" y="{:.1}" font-weight="bold">{}</text>"#,
                    y + 14.0,
                    esc(&self.run.rank_label(*rank))
                );
                y += HEADING_H;
            }
            let mut ys = Vec::with_capacity(v.len());
            for row in v {
                ys.push(y);
                self.row_background(s, row, y, stripe);
                stripe = !stripe;
                y += row_height(row, &self.g);
            }
            row_y.push(ys);
        }
        let summary_y = y;
        if let Some(o) = omitted {
            self.summary_background(s, o, y, stripe);
            y += SUMMARY_H;
        }
        (row_y, summary_y, y)
    }

    fn row_background(&self, s: &mut String, row: &Row<'_>, y: f64, stripe: bool) {
        let (width, origin, x0) = (self.width, self.origin, self.x0);
        let h = row_height(row, &self.g);
        if stripe {
            let _ = writeln!(s, r##"<rect x="0" y="{y:.1}" width="{width:.0}" height="{h:.1}" fill="#f3f5f8"/>"##);
        }
        // lifetime of the thread / task: a light band behind its calls
        if let Some((a, b)) = row.life {
            let (v0, v1) = (self.view.v0, self.view.v1);
            let (xa, xb) = (self.px(a.max(v0)).max(x0), self.px(b.min(v1)).min(x0 + self.plot_w));
            if b >= a && xb >= xa {
                let _ = writeln!(
                    s,
                    r##"<rect x="{xa:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="#dbe4ef" fill-opacity="0.55"><title>{}</title></rect>"##,
                    y + 1.0_f64.min(h / 8.0),
                    (xb - xa).max(0.5),
                    h - 2.0_f64.min(h / 4.0),
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
        // rows drawn lower than the text: a smaller font, the full label in the tooltip
        let size = if self.g.scale < 1.0 && h < BAR_H + 2.0 * ROW_PAD {
            format!(r#" font-size="{:.1}""#, (h * 0.8).clamp(1.0, FONT_SIZE))
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            r#"<text x="{indent:.1}" y="{:.1}" font-weight="{weight}" fill="{fill}"{size}><title>{}</title>{}</text>"#,
            y + self.g.row_pad + (self.g.bar_h - 3.5 * self.g.scale).min(h * 0.85),
            esc(&format!("{}\n{}", row.label, row.detail)),
            esc(&label)
        );
    }

    /// Event-loop blocks of [`LOOP_BLOCK_MARK_NS`] or more, as red bands behind the calls of
    /// the loop's thread row and of the task row that held the loop (rows drawn only), the
    /// longest [`LOOP_BLOCK_MARKS`] per rank; each band's tooltip gives the block.
    fn loop_block_marks(&self, s: &mut String, rows: &RankRows<'_>, row_y: &[Vec<f64>]) {
        for (v, ys) in rows.iter().map(|(_, v)| v).zip(row_y) {
            let Some(rank) = v.first().map(|row| row.r.rank) else { continue };
            let mut blocks: Vec<_> = self
                .run
                .loop_blocks
                .iter()
                .filter(|b| b.rank == rank && b.end_ns - b.start_ns >= LOOP_BLOCK_MARK_NS)
                .filter(|b| self.view.keeps(b.start_ns, b.end_ns))
                .collect();
            blocks.sort_by_key(|b| std::cmp::Reverse(b.end_ns - b.start_ns));
            blocks.truncate(LOOP_BLOCK_MARKS);
            for b in blocks {
                let (a, e) = self.view.clip(b.start_ns, b.end_ns);
                let (xa, xb) = (self.px(a).max(self.x0), self.px(e).min(self.x0 + self.plot_w));
                let what = match self.run.rank_tasks(rank).find(|t| t.index == b.task) {
                    Some(t) => format!("task {}", t.name),
                    None if b.task >= 0 => format!("task {}", b.task),
                    None => scope_profiler_analysis::own_lane_holder(self.run, rank, b.thread).to_string(),
                };
                let delayed = match b.delayed_tasks {
                    d if d >= 0 => format!("{d} task(s) ready and waiting"),
                    _ => "tasks delayed not known".to_string(),
                };
                let title = format!(
                    "event loop blocked {} by {what} at {} ({delayed})",
                    ms(b.end_ns - b.start_ns),
                    ms(b.start_ns - self.origin),
                );
                let lanes = [lane_id(b.thread, -1), lane_id(b.thread, b.task)];
                for (row, &y) in v.iter().zip(ys).filter(|(row, _)| lanes.contains(&row.lane)) {
                    let _ = writeln!(
                        s,
                        r##"<rect class="loop-block" x="{xa:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="#dc2626" fill-opacity="0.18"><title>{}</title></rect>"##,
                        (xb - xa).max(1.0),
                        row_height(row, &self.g),
                        esc(&title)
                    );
                }
            }
        }
    }

    /// The summary row's background and label: how many lanes were left out.
    fn summary_background(&self, s: &mut String, o: &Omitted, y: f64, stripe: bool) {
        if stripe {
            let _ = writeln!(
                s,
                r##"<rect x="0" y="{y:.1}" width="{:.0}" height="{SUMMARY_H:.1}" fill="#f3f5f8"/>"##,
                self.width
            );
        }
        let mut detail =
            format!("{} lane(s) not drawn: {} call(s), top-level call time {}", o.lanes, o.calls, ms(o.busy_ns));
        if let Some((label, ns)) = &o.busiest {
            let _ = write!(detail, "\nthe busiest of them: {label} ({})", ms(*ns));
        }
        detail.push_str("\nthe strip: how many of them were in a top-level call (mean per 2 px)");
        detail.push_str("\ndraw them with --lanes 0 (Python: lanes=0), or pick with --window / --include / --exclude");
        let _ = writeln!(
            s,
            r##"<text class="summary" x="8.0" y="{:.1}" font-weight="bold" fill="#555555"><title>{}</title>{}</text>"##,
            y + ROW_PAD + BAR_H - 3.5,
            esc(&detail),
            esc(&format!("+ {} more lane(s)", count(o.lanes)))
        );
    }

    /// Time axis down to `axis_bottom`: grid lines, tick labels (ms since the run start),
    /// axis title and line.
    fn axis(&self, s: &mut String, axis_bottom: f64) {
        let (x0, plot_w) = (self.x0, self.plot_w);
        let span_ms = self.span / 1e6;
        let start_ms = (self.view.v0 - self.origin) as f64 / 1e6;
        let step = nice_step(span_ms / 10.0);
        let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
        let axis_y = self.top - 6.0;
        let first = (start_ms / step - 1e-9).ceil() as i64;
        let last = ((start_ms + span_ms) / step + 1e-9).floor() as i64;
        let tick_x = |k: i64| x0 + (k as f64 * step - start_ms) / span_ms * plot_w;
        let _ = writeln!(s, r##"<g stroke="#d9d9d9" stroke-width="1">"##);
        for k in first..=last {
            let x = tick_x(k);
            let _ = writeln!(s, r#"<line x1="{x:.2}" y1="{axis_y:.1}" x2="{x:.2}" y2="{axis_bottom:.1}"/>"#);
        }
        let _ = writeln!(s, "</g>");
        let _ = writeln!(s, r##"<g fill="#333333" text-anchor="middle">"##);
        for k in first..=last {
            let v = k as f64 * step;
            let x = tick_x(k);
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

    /// Pass 2: the bars of one row whose top is `y`; sub-pixel calls merged per depth,
    /// calls below the depth limit merged into markers.
    fn row_bars(&self, s: &mut String, row: &Row<'_>, y: f64, used: &mut Used) {
        let _ = writeln!(s, r#"<g class="lane" data-rank="{}" data-lane="{}">"#, row.r.rank, row.lane);
        let c = &row.r.calls;
        let mut dense: Vec<Option<Dense>> = (0..=row.depth).map(|_| None).collect();
        let mut deep: Option<Deep> = None;
        for id in row.ids.iter().copied() {
            let depth = c.depth[id] as i64;
            let (a, b) = self.view.clip(c.start_ns[id], c.end_ns[id]);
            let (xa, xb) = (self.px(a), self.px(b));
            if depth >= self.max_levels {
                used.deep = true;
                match &mut deep {
                    Some(d) if xa <= d.x1 + 1.0 => {
                        d.x1 = d.x1.max(xb);
                        d.count += 1;
                        d.lo = d.lo.min(depth);
                        d.hi = d.hi.max(depth);
                    }
                    _ => {
                        self.deep_marker(s, row, y, deep.take());
                        deep = Some(Deep { x0: xa, x1: xb, count: 1, lo: depth, hi: depth });
                    }
                }
                continue;
            }
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
            self.bar(s, row, id, y + self.g.row_pad + depth as f64 * self.g.level, ci, used);
        }
        for (depth, slot) in dense.iter_mut().enumerate() {
            self.dense_strip(s, row, y, slot.take(), depth as i64);
        }
        self.deep_marker(s, row, y, deep.take());
        s.push_str("</g>\n");
    }

    /// A merged strip of sub-pixel calls at `depth` of the row whose top is `y`.
    fn dense_strip(&self, s: &mut String, row: &Row<'_>, y: f64, d: Option<Dense>, depth: i64) {
        let Some(dn) = d else { return };
        let by = y + self.g.row_pad + depth as f64 * self.g.level;
        // one region: its colour, lighter; several: grey
        let (what, fill, opacity) = match (dn.mixed, dn.name) {
            (false, Some(i)) => (self.names[i].to_string(), Self::color(i), "0.6"),
            _ => ("several regions".to_string(), DENSE_COLOR, "1"),
        };
        let _ = writeln!(
            s,
            r#"<rect x="{:.2}" y="{by:.1}" width="{:.2}" height="{:.1}" fill="{fill}" fill-opacity="{opacity}"><title>{}</title></rect>"#,
            dn.x0,
            (dn.x1 - dn.x0).max(1.0),
            self.g.bar_h,
            esc(&format!("{} short call(s) of {what}\ntotal {}\n{}", dn.count, ms(dn.ns), row.label))
        );
    }

    /// A marker of calls below the depth limit, on the level under the row's deepest bars.
    fn deep_marker(&self, s: &mut String, row: &Row<'_>, y: f64, d: Option<Deep>) {
        let Some(d) = d else { return };
        let by = y + self.g.row_pad + (row.depth + 1) as f64 * self.g.level;
        let _ = writeln!(
            s,
            r##"<rect class="deeper" x="{:.2}" y="{by:.1}" width="{:.2}" height="{:.1}" fill="#3b3b3b" fill-opacity="0.85"><title>{}</title></rect>"##,
            d.x0,
            (d.x1 - d.x0).max(1.0),
            self.g.bar_h,
            esc(&format!(
                "{} call(s) deeper than {} levels not drawn (levels {}–{})\n--max-depth 0 (Python: max_depth=0) draws all\n{}",
                d.count,
                self.max_levels,
                d.lo + 1,
                d.hi + 1,
                row.label
            ))
        );
    }

    /// The bar of call `id` with top `by`: tooltip, rectangle, await hatching, name.
    fn bar(&self, s: &mut String, row: &Row<'_>, id: usize, by: f64, ci: Option<usize>, used: &mut Used) {
        let (r, c) = (row.r, &row.r.calls);
        let (a, b) = (c.start_ns[id], c.end_ns[id]);
        let (ca, cb) = self.view.clip(a, b);
        let (xa, xb) = (self.px(ca), self.px(cb));
        let w = xb - xa;
        let bar_h = self.g.bar_h;
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
            r##"<g><title>{}</title><rect x="{xa:.2}" y="{by:.1}" width="{w:.2}" height="{bar_h:.1}" fill="{fill}" stroke="#ffffff" stroke-width="0.5"/>"##,
            esc(&self.tooltip(row, id, name, await_ns))
        );
        if let Some(aw) = await_ns {
            // the share at the end of the whole call, cut to the part drawn
            let full_w = self.px(b) - self.px(a);
            let aw_w = full_w * aw as f64 / (b - a) as f64;
            let (hx, hw) = if (ca, cb) == (a, b) {
                (xb - aw_w, aw_w)
            } else {
                let h0 = (self.px(b) - aw_w).max(xa);
                (h0, xb - h0)
            };
            if hw >= 0.5 {
                used.await_ = true;
                let _ = write!(
                    s,
                    r#"<rect x="{hx:.2}" y="{by:.1}" width="{hw:.2}" height="{bar_h:.1}" fill="url(#await)"/>"#
                );
            }
        }
        if let Some(t) = bar_text(name, w).filter(|_| bar_h >= 10.0) {
            // halo in the bar's colour keeps the text legible over the hatching
            let _ = write!(
                s,
                r#"<text x="{:.2}" y="{:.1}" fill="{ink}" stroke="{fill}" stroke-width="3" paint-order="stroke" pointer-events="none">{}</text>"#,
                xa + 3.0,
                by + bar_h - 4.0 * self.g.scale,
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

    /// The summary row's strip: the mean number of the lanes not drawn that were in a
    /// top-level call, per 2 px, as one filled outline scaled to the row.
    fn summary_bars(&self, s: &mut String, o: &mut Omitted, y: f64) {
        let n = ((self.plot_w / 2.0).floor() as usize).max(1);
        let profile = o.busy_profile(self.view.v0, self.view.v1, n);
        let peak = profile.iter().copied().fold(0.0f64, f64::max);
        let _ = writeln!(s, r#"<g class="summary">"#);
        if peak > 0.0 {
            let (base, h) = (y + ROW_PAD + 2.0 * LEVEL - 2.0, 2.0 * LEVEL - 2.0);
            let dx = self.plot_w / n as f64;
            let mut d = format!("M{:.1},{base:.1}", self.x0);
            for (j, v) in profile.iter().enumerate() {
                let yv = base - v / peak * h;
                let _ = write!(d, "H{:.1}V{yv:.1}H{:.1}", self.x0 + j as f64 * dx, self.x0 + (j + 1) as f64 * dx);
            }
            let _ = write!(d, "V{base:.1}Z");
            let _ = writeln!(
                s,
                r##"<path d="{d}" fill="#9e9e9e" fill-opacity="0.8"><title>{}</title></path>"##,
                esc(&format!(
                    "lanes not drawn that were in a top-level call: at most {peak:.1} at once (mean per 2 px) of {}",
                    o.lanes
                ))
            );
        }
        s.push_str("</g>\n");
    }

    /// Legend (drawn last, at the top): regions, then await, dense and depth markers when
    /// used.
    fn legend(&self, s: &mut String, used: &Used) {
        let mut lx = 10.0;
        let ly = 50.0 + CAPTION_H * self.caption.lines.len() as f64;
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
            (used.deep, "deep", "calls deeper than the depth limit, merged"),
        ];
        for (_, kind, text) in extra.into_iter().filter(|e| e.0) {
            let w = 16.0 + text.chars().count() as f64 * CHAR_W + 14.0;
            if lx + w > right {
                break;
            }
            match kind {
                "await" => {
                    let _ = writeln!(
                        s,
                        r##"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="#4e79a7"/><rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="url(#await)"/>"##
                    );
                }
                "dense" => {
                    let _ =
                        writeln!(s, r#"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="{DENSE_COLOR}"/>"#);
                }
                _ => {
                    let _ = writeln!(
                        s,
                        r##"<rect x="{lx:.1}" y="{ly:.1}" width="11" height="11" fill="#3b3b3b" fill-opacity="0.85"/>"##
                    );
                }
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

/// `n` with thousands separators (`20,000`).
fn count(n: usize) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (k, ch) in d.chars().enumerate() {
        if k > 0 && (d.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Which rows are drawn: at most `opt.lanes` (the busiest by top-level time in the view,
/// ties in row order) and no more than fit in [`MAX_SVG_PX`] at [`MIN_SCALE`]. Returns the
/// rows drawn (row order kept), the lanes left out (busiest first), the row scale and
/// whether the height (not `opt.lanes`) left lanes out.
fn choose_rows<'a>(
    per_rank: Vec<(u32, Vec<Row<'a>>)>,
    multi: bool,
    opt: &TimelineOptions,
) -> (RankRows<'a>, Vec<Row<'a>>, Geom, bool) {
    let mut by_busy: Vec<(usize, usize, i64, i64)> = Vec::new(); // (rank pos, row pos, busy, levels)
    for (k, (_, rows)) in per_rank.iter().enumerate() {
        by_busy.extend(rows.iter().enumerate().map(|(j, r)| (k, j, r.busy_ns, r.levels())));
    }
    by_busy.sort_by_key(|&(k, j, busy, _)| (std::cmp::Reverse(busy), k, j));
    let cap = if opt.lanes == 0 { usize::MAX } else { opt.lanes };
    let mut n = by_busy.len().min(cap);
    // each row may be the first of its rank: its heading counted with it
    let head = if multi { HEADING_H } else { 0.0 };
    let avail = MAX_SVG_PX - FIXED_MAX;
    let unscaled: f64 = by_busy[..n].iter().map(|&(.., l)| Geom::new(1.0).row_h(l)).sum();
    let heads = head * n as f64;
    let mut by_height = false;
    let scale = if unscaled + heads <= avail {
        1.0
    } else {
        let s = (avail - heads) / unscaled;
        if s >= MIN_SCALE {
            s
        } else {
            // the busiest rows that fit at the lowest scale (at least one: depth_limit)
            let g = Geom::new(MIN_SCALE);
            let mut used = 0.0;
            let mut fit = 0;
            for &(.., l) in &by_busy[..n] {
                used += g.row_h(l) + head;
                if used > avail {
                    break;
                }
                fit += 1;
            }
            by_height = fit < n;
            n = fit.max(1);
            MIN_SCALE
        }
    };
    let mut keep: Vec<Vec<bool>> = per_rank.iter().map(|(_, v)| vec![false; v.len()]).collect();
    for &(k, j, ..) in &by_busy[..n] {
        keep[k][j] = true;
    }
    let mut slots: Vec<Vec<Option<Row<'a>>>> = Vec::with_capacity(per_rank.len());
    let mut ranks = Vec::with_capacity(per_rank.len());
    for (rank, rows) in per_rank {
        ranks.push(rank);
        slots.push(rows.into_iter().map(Some).collect());
    }
    let left_out: Vec<Row<'a>> = by_busy[n..].iter().filter_map(|&(k, j, ..)| slots[k][j].take()).collect();
    let drawn: RankRows<'a> = ranks
        .into_iter()
        .zip(slots)
        .map(|(rank, v)| (multi.then_some(rank), v.into_iter().flatten().collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    (drawn, left_out, Geom::new(scale), by_height)
}

/// `Ok` unless the window `w` (its `view`) starts at or after `end`, the end of the run's
/// last selected call, while the run lasts (`end > origin`): nothing of the run is in it, and
/// an empty picture would look like a run without calls. A window that only
/// partly overlaps the run is drawn, clipped.
///
/// Errors: [`ExportError::Request`] naming the window and the run's extent in s.
fn window_in_run(w: (f64, f64), view: View, origin: i64, end: i64) -> Result<(), ExportError> {
    if view.v0 < end || end <= origin {
        return Ok(());
    }
    let shown = if w.1.is_finite() { format!("{}:{}", w.0, w.1) } else { format!("{}:", w.0) };
    let extent = (end - origin) as f64 / 1e9;
    Err(ExportError::Request(format!(
        "window {shown} starts after the end of the run: its calls span 0 to {extent:.6} s from the run start; \
         give a window starting before {extent:.6} s"
    )))
}

/// Loop blocks marked on the timeline: at least this long (ns)...
pub const LOOP_BLOCK_MARK_NS: i64 = 10_000_000;
/// ...and at most this many per rank, the longest.
pub const LOOP_BLOCK_MARKS: usize = 200;

/// Render the timeline of `sel` as an SVG document (see the module text for its limits).
///
/// Errors: [`ExportError::Nesting`], [`ExportError::NoCalls`], [`ExportError::Request`] for
/// a window that starts after the run's end.
pub fn timeline_svg(run: &Run, sel: &Selection, opt: &TimelineOptions) -> Result<String, ExportError> {
    let whole = run;
    let applied = sel.apply(run);
    let run: &Run = &applied;
    let all = reconstruct(run, &sel.ranks)?;
    let origin = origin_ns(run, &all);
    let end = picture_end(run, &all);
    let view = View::new(origin, end, opt.window);
    if let Some(w) = opt.window {
        window_in_run(w, view, origin, end)?;
    }
    let max_levels = depth_limit(opt.max_depth);
    let multi = all.len() > 1;
    let per_rank: Vec<(u32, Vec<Row<'_>>)> = all
        .iter()
        .filter(|r| !r.lanes.is_empty())
        .map(|r| (r.rank, rank_rows(run, r, end, view, max_levels)))
        .collect();
    let n_lanes: usize = all.iter().map(|r| r.lanes.len()).sum();
    let n_calls: usize = all.iter().map(|r| r.calls.len()).sum();
    let lane_calls: usize = all.iter().flat_map(|r| &r.lanes).map(|(_, ids)| ids.len()).sum();
    let in_view_lanes: usize = per_rank.iter().map(|(_, v)| v.len()).sum();
    let in_view_calls: usize = per_rank.iter().flat_map(|(_, v)| v).map(|r| r.ids.len()).sum();
    let (rows, left_out, g, by_height) = choose_rows(per_rank, multi, opt);
    let deeper: usize = rows.iter().flat_map(|(_, v)| v).map(|r| r.deeper).sum();
    let mut omitted = Omitted::default();
    for r in &left_out {
        omitted.add(r, view);
    }

    let mut lines = Vec::new();
    if sel.regions.is_some() {
        let with_calls = |r: &Run| {
            let mut ids: Vec<u32> =
                r.regions.iter().filter(|x| sel.ranks.contains(&x.rank) && !x.is_empty()).map(|x| x.region).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        lines.push(format!(
            "Regions: {} of {} drawn (include/exclude); calls inside a region left out hang from its caller",
            count(with_calls(run)),
            count(with_calls(whole))
        ));
    }
    if view.windowed {
        // "N call(s) outside it not drawn", then how many lanes have no call in it at all ("4
        // call(s) of 0 lane(s) outside it" would read as nonsense)
        let empty_lanes = n_lanes - in_view_lanes;
        lines.push(format!(
            "Window {} – {} from run start: {} call(s) outside it not drawn{}; calls across its edges clipped",
            ms(view.v0 - origin),
            ms(view.v1 - origin),
            count(lane_calls - in_view_calls),
            if empty_lanes > 0 {
                format!(" ({} lane(s) without a call in it)", count(empty_lanes))
            } else {
                String::new()
            }
        ));
    }
    if omitted.lanes > 0 {
        let why = if by_height {
            format!("only {} rows fit in {MAX_SVG_PX:.0} px", count(in_view_lanes - omitted.lanes))
        } else {
            format!("--lanes {} / lanes={}, 0: all", opt.lanes, opt.lanes)
        };
        lines.push(format!(
            "{} of {} lanes not drawn, summed up in the last row: the {} busiest by top-level call time are drawn ({why})",
            count(omitted.lanes),
            count(in_view_lanes),
            count(in_view_lanes - omitted.lanes)
        ));
    }
    if deeper > 0 {
        lines.push(format!(
            "{} call(s) deeper than {} levels drawn as dark markers under their callers (--max-depth / max_depth=, 0: all)",
            count(deeper),
            max_levels
        ));
    }
    if g.scale < 1.0 {
        lines.push(format!("Rows drawn at {:.0}% of their height to stay within {MAX_SVG_PX:.0} px", g.scale * 100.0));
    }
    let caption = Caption { lines };
    let has_summary = omitted.lanes > 0;
    let t = Timeline::new(run, &all, (origin, end, view), &rows, has_summary, g, caption, opt);
    let mut s = String::with_capacity(64 * 1024);
    t.header(&mut s, sel, n_lanes, n_calls);
    let (row_y, summary_y, axis_bottom) = t.backgrounds(&mut s, &rows, has_summary.then_some(&omitted));
    t.loop_block_marks(&mut s, &rows, &row_y);
    t.axis(&mut s, axis_bottom);
    let mut used = Used::default();
    for ((_, v), ys) in rows.iter().zip(&row_y) {
        for (row, &y) in v.iter().zip(ys) {
            t.row_bars(&mut s, row, y, &mut used);
        }
    }
    if has_summary {
        t.summary_bars(&mut s, &mut omitted, summary_y);
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
