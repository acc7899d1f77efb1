//! Plain-text reports of a run: the region summary and the thread table. Shared by the
//! CLI and by `ProfilingResults.print_summary()` in Python, so both print the same thing.
use std::fmt::Write as _;

use scope_profiler_analysis::figures::{duration_text, duration_text_ns};
use scope_profiler_analysis::summary_order::{
    busiest, sort_region_rows, split_at_limit, task_busy_time, RUN_PRINTOUT_TOP, TASK_ROWS,
};
use scope_profiler_analysis::{
    loop_blocks, own_lane_holder, rank_summary, secs, summary_only_note, task_summary, thread_summary,
    thread_table_note, LaneLabels, LoopBlock, NestingError, RankSummary, Run, SortKey, TaskSummaryRow,
    ThreadSummaryRow,
};
use unicode_width::UnicodeWidthStr;

/// Terminal columns a name may take in a text table; a longer one keeps its start and its
/// end around `…` (the frames and the report keep every name whole).
pub const CELL_MAX_WIDTH: usize = 80;

/// `name` for one cell of a text table: control characters escaped as Python's `repr` does
/// (`\n`, `\t`, `\r`, `\x1b`, `\u2028`), so a name stays on its row (a newline would split
/// it in two, a tab would print raw), and at most [`CELL_MAX_WIDTH`] columns wide, so one
/// long name does not widen every row of its table.
pub fn cell_text(name: &str) -> String {
    shortened(escaped(name), CELL_MAX_WIDTH)
}

/// `text` when it fits `width` columns; else its first and last columns around `…`, the
/// start a little longer (where names differ least is their common prefix).
fn shortened(text: String, width: usize) -> String {
    if display_width(&text) <= width {
        return text;
    }
    let head_w = width / 2;
    let tail_w = width - head_w - 1;
    let mut head = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = UnicodeWidthStr::width(c.encode_utf8(&mut [0u8; 4]) as &str);
        if used + w > head_w {
            break;
        }
        head.push(c);
        used += w;
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in text.chars().rev() {
        let w = UnicodeWidthStr::width(c.encode_utf8(&mut [0u8; 4]) as &str);
        if used + w > tail_w {
            break;
        }
        tail.push(c);
        used += w;
    }
    head.push('…');
    head.extend(tail.into_iter().rev());
    head
}

/// `name` with control characters escaped (see [`cell_text`]).
fn escaped(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Columns `text` takes on a terminal (CJK and emoji count 2, combining marks 0).
pub fn display_width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// `text` left-aligned in `width` terminal columns (padded by display width, not chars).
fn pad(text: &str, width: usize) -> String {
    let mut out = text.to_string();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(display_width(text))));
    out
}

/// The title of the summary `finalize(verbose=True)` prints: the output the run asked for
/// (`requested`, `setup(output=)`; `None`: the results' own title) when the file was written,
/// else `label` (the results' display label) and `(in memory, N rank[s])` for a run of
/// `ranks` ranks kept only in memory (`deactivate_file_output`, `run --no-output`).
pub fn finalize_summary_title(requested: Option<&str>, written: bool, label: &str, ranks: u32) -> Option<String> {
    if written {
        return requested.map(str::to_string);
    }
    let unit = if ranks == 1 { "rank" } else { "ranks" };
    Some(format!("{label} (in memory, {ranks} {unit})"))
}

/// What the text summary shows of a run: the order of the region rows, how many of them,
/// and whether every task gets a row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryOptions {
    /// The order of the region rows ([`SortKey`]; inclusive time by default).
    pub sort: SortKey,
    /// Show only the first N region rows of each rank (the rest are counted); `None`: all.
    pub top: Option<usize>,
    /// One row per task; by default the [`TASK_ROWS`] busiest (by held time), the rest counted.
    pub all_tasks: bool,
    /// The selection the run was restricted to (`print_summary(include=...)`), said in the
    /// header; `None`: the whole run.
    pub filter: Option<String>,
    /// How to see what the bounds leave out (`--top 0`, `--all-tasks` on the command line,
    /// `top=None`, `all_tasks=True` in Python), said after the count of what was left out.
    pub hints: Option<(String, String)>,
}

impl SummaryOptions {
    /// What `scope-profiler run` prints after a run: the [`RUN_PRINTOUT_TOP`] regions with
    /// the most inclusive time, the busiest tasks.
    pub fn run_printout() -> Self {
        SummaryOptions { top: Some(RUN_PRINTOUT_TOP), ..SummaryOptions::default() }
    }

    /// The hints the command line gives for what is left out.
    pub fn with_cli_hints(mut self) -> Self {
        self.hints = Some(("--top 0 lists every one".into(), "--all-tasks lists every one".into()));
        self
    }
}

/// Region summary of every rank: one line per region with calls (count, total, mean/min/max,
/// exclusive; await and held = total − await when the run recorded await times), each time
/// in the unit that shows it ([`duration_text`]), regions by inclusive time. Exclusive time
/// comes from the stored per-row totals or, when absent, from reconstruction; a run whose
/// calls cannot be nested prints `-` and says why. `title` heads the report (usually the
/// file path).
pub fn summary_text(run: &Run, title: &str) -> String {
    summary_text_with(run, title, &SummaryOptions::default())
}

/// [`summary_text`] of a run already restricted to a selection (`print_summary(include=...)`):
/// `filter` (e.g. `include=['outer']`) is said in the header, whose region count is then the
/// regions with calls in the selection, and above each thread table, whose calls count only
/// the selected regions.
pub fn summary_text_filtered(run: &Run, title: &str, filter: Option<&str>) -> String {
    summary_text_with(run, title, &SummaryOptions { filter: filter.map(str::to_string), ..SummaryOptions::default() })
}

/// [`summary_text`] as `opts` asks: sorted, bounded, of a selection.
pub fn summary_text_with(run: &Run, title: &str, opts: &SummaryOptions) -> String {
    summary_report(run, title, opts).text
}

/// A printed summary and what its notes said.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryReport {
    pub text: String,
    /// A note said the run looks like an event loop's tasks recorded without
    /// `--track-async` (and how to record it): no other line needs to say it again.
    pub advised_track_async: bool,
}

/// [`summary_text_with`] and whether it advised `--track-async`.
pub fn summary_report(run: &Run, title: &str, opts: &SummaryOptions) -> SummaryReport {
    let mut out = String::new();
    let mut advised_track_async = false;
    let filter = opts.filter.as_deref();
    let total_calls: usize = run.regions.iter().map(|r| r.num_calls()).sum();
    let num_regions = match filter {
        None => run.region_names.len(),
        Some(_) => {
            let mut ids: Vec<u32> = run.regions.iter().map(|r| r.region).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        }
    };
    let filtered = filter.map(|f| format!(" (filtered: {f})")).unwrap_or_default();
    // a run stacked from several files keeps the first file's metadata: its span would be
    // that file's alone (the header would change with the order of the files), so a merged
    // run's header gives none
    let merged = run.meta("merged_from").is_some();
    let span = match (run.meta_int("start_time_ns"), run.meta_int("finalize_time_ns")) {
        (Some(s), Some(f)) if f >= s && !merged => format!(", run {}", duration_text_ns((f - s) as f64)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{title}: {num_regions} region(s), {total_calls} call(s), {} rank(s){span}{filtered}",
        run.num_ranks
    );
    for rank in 0..run.num_ranks {
        let Some(sum) = rank_summary(run, rank) else {
            continue;
        };
        region_table(&mut out, run, &sum, opts);
        advised_track_async |= sum.untracked_tasks_note.is_some();
        if let Some(summary) = sum.threads {
            let tasks = sum.tasks.unwrap_or_else(|| Ok(Vec::new()));
            let tables = threads_text_with(run, rank, summary, tasks, opts);
            match filter {
                // the lane tables count the selected regions' calls only: say so under each heading
                Some(f) => out.push_str(&tables.replace(
                    ": threads\n",
                    &format!(": threads (calls and region time of the selected regions only, {f})\n"),
                )),
                None => out.push_str(&tables),
            }
        }
        if let Some(msg) = &sum.thread_table_note {
            let _ = writeln!(out, "  note: {title}: {msg}");
        }
        loop_blocks_section(&mut out, run, rank);
    }
    SummaryReport { text: out, advised_track_async }
}

/// Loop blocks the summary lists: at least this long (ns)...
pub const SUMMARY_BLOCK_NS: i64 = 10_000_000;
/// ...and at most this many, the longest (the rest are counted).
pub const SUMMARY_BLOCKS: usize = 10;

/// The "event loop blocked" section of one rank, when it has loop blocks of at least
/// [`SUMMARY_BLOCK_NS`]: the [`SUMMARY_BLOCKS`] longest, each with its start (s from the
/// run's start), the lane that held the loop, the region it ran in and how many tasks were
/// ready and kept waiting by it (`?`: not known, a gevent hub's block).
fn loop_blocks_section(out: &mut String, run: &Run, rank: u32) {
    let Ok(blocks) = loop_blocks(run, rank, SUMMARY_BLOCK_NS) else { return };
    if blocks.is_empty() {
        return;
    }
    let labels = LaneLabels::new(run, rank);
    let lane = |b: &LoopBlock| {
        if b.task >= 0 {
            labels.label(b.task)
        } else {
            format!("{} ({})", labels.thread_label(b.thread), own_lane_holder(run, rank, b.thread))
        }
    };
    let shown = &blocks[..blocks.len().min(SUMMARY_BLOCKS)];
    let lanes: Vec<String> = shown.iter().map(|b| cell_text(&lane(b))).collect();
    let regions: Vec<String> = shown.iter().map(|b| cell_text(b.region.as_deref().unwrap_or("-"))).collect();
    let lane_w = lanes.iter().map(|l| display_width(l)).max().unwrap_or(4).clamp(4, 60);
    let region_w = regions.iter().map(|r| display_width(r)).max().unwrap_or(6).max(6);
    let _ = writeln!(
        out,
        "\n{}: event loop blocked ({} block(s) of {} or more)",
        run.rank_label(rank),
        blocks.len(),
        duration_text_ns(SUMMARY_BLOCK_NS as f64)
    );
    let _ = writeln!(
        out,
        "  {:>W$} {:>9} {} {} {:>7}",
        "blocked",
        "at s",
        pad("lane", lane_w),
        pad("region", region_w),
        "delayed",
        W = TIME_W
    );
    for ((b, lane), region) in shown.iter().zip(&lanes).zip(&regions) {
        let _ = writeln!(
            out,
            "  {:>W$} {:>9.3} {} {} {:>7}",
            duration_text_ns(b.duration * 1e9),
            b.start,
            pad(lane, lane_w),
            pad(region, region_w),
            b.delayed_tasks.map_or_else(|| "?".to_string(), |n| n.to_string()),
            W = TIME_W
        );
    }
    if blocks.len() > shown.len() {
        let rest = &blocks[shown.len()..];
        let total: f64 = rest.iter().map(|b| b.duration).sum();
        let _ = writeln!(out, "  ... and {} more block(s), {} blocked", rest.len(), duration_text_ns(total * 1e9));
    }
}

/// The region table of one rank (`sum`), sorted and bounded as `opts` asks, then its notes.
fn region_table(out: &mut String, run: &Run, sum: &RankSummary, opts: &SummaryOptions) {
    let rows = sort_region_rows(sum.rows.clone(), opts.sort);
    let (rows, rest) = split_at_limit(rows, opts.top.filter(|&n| n > 0));
    let names: Vec<String> = rows.iter().map(|r| cell_text(&r.name)).collect();
    let name_w = names.iter().map(|n| display_width(n)).max().unwrap_or(6).max(6);
    let with_await = sum.has_await();
    let _ = writeln!(out, "\n{}: regions", run.rank_label(sum.rank));
    let _ = write!(
        out,
        "  {} {:>9} {:>W$} {:>W$} {:>W$} {:>W$} {:>W$}",
        pad("region", name_w),
        "calls",
        "total",
        "mean",
        "min",
        "max",
        "exclusive",
        W = TIME_W
    );
    let _ = writeln!(
        out,
        "{}",
        if with_await { format!(" {:>W$} {:>W$}", "await", "held", W = TIME_W) } else { String::new() }
    );
    for (r, name) in rows.iter().zip(&names) {
        let ns = |v: i64| duration_text_ns(v as f64);
        let _ = write!(
            out,
            "  {} {:>9} {:>W$} {:>W$} {:>W$} {:>W$} {:>W$}",
            pad(name, name_w),
            r.calls,
            ns(r.total_ns),
            duration_text_ns(r.mean_ns),
            ns(r.min_ns),
            ns(r.max_ns),
            r.exclusive_ns.map(ns).unwrap_or_else(|| "-".into()),
            W = TIME_W
        );
        let _ = writeln!(
            out,
            "{}",
            if with_await {
                format!(" {:>W$} {:>W$}", opt_ns(r.await_ns), opt_ns(r.held_ns()), W = TIME_W)
            } else {
                String::new()
            }
        );
    }
    if !rest.is_empty() {
        let total: i64 = rest.iter().map(|r| r.total_ns).sum();
        let hint = opts.hints.as_ref().map(|(h, _)| format!("; {h}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  ... and {} more region(s), {} call(s), {} total{hint}",
            rest.len(),
            rest.iter().map(|r| r.calls).sum::<usize>(),
            duration_text_ns(total as f64)
        );
    }
    if let Some(msg) = &sum.nesting_note {
        let _ = writeln!(out, "  exclusive time not available: {msg}");
    }
    if let Some(msg) = &sum.set_aside_note {
        let _ = writeln!(out, "  note: {msg}");
    }
    if let Some(msg) = &sum.untracked_tasks_note {
        let _ = writeln!(out, "  note: {msg}");
    }
}

/// Width of a time column (`-1.23 ms`, `1234 s`).
const TIME_W: usize = 10;

/// [`duration_text_ns`] of a value in ns, `-` when unknown.
fn opt_ns(v: Option<i64>) -> String {
    v.map(|v| duration_text_ns(v as f64)).unwrap_or_else(|| "-".into())
}

/// `text`, or `-` when not `known`.
fn known(known: bool, text: String) -> String {
    if known {
        text
    } else {
        "-".into()
    }
}

/// [`duration_text`] of a value in s, `-` when unknown.
fn opt_s(v: Option<f64>) -> String {
    v.map(duration_text).unwrap_or_else(|| "-".into())
}

/// The thread table of `rank` with `thread_summary` columns (wall, CPU in the run, calls,
/// region time; held and await when the run recorded await times), then the
/// `task_summary` table when tasks were tracked (the busiest tasks unless `opts.all_tasks`).
/// Unsound times print as `-`, followed by a note (`thread_table_note`) naming `source`
/// (the file), the rows and the problem.
pub fn threads_text(run: &Run, rank: u32, source: &str, opts: &SummaryOptions) -> String {
    let summary = thread_summary(run, rank);
    let note = summary.as_ref().ok().and_then(|rows| thread_table_note(run, rank, rows));
    let mut out = threads_text_with(run, rank, summary, task_summary(run, rank), opts);
    if let Some(msg) = note {
        let _ = writeln!(out, "  note: {source}: {msg}");
    }
    out
}

/// [`threads_text`] given the rank's thread and task summaries (or why there are none).
fn threads_text_with(
    run: &Run,
    rank: u32,
    summary: Result<Vec<ThreadSummaryRow>, NestingError>,
    tasks: Result<Vec<TaskSummaryRow>, NestingError>,
    opts: &SummaryOptions,
) -> String {
    let mut out = String::new();
    let threads: Vec<_> = run.rank_threads(rank).collect();
    let _ = writeln!(out, "\n{}: threads", run.rank_label(rank));
    let name_w = threads.iter().map(|t| display_width(&cell_text(&t.name))).max().unwrap_or(4).max(4);
    let unknown = summary_only_note(run, rank);
    if let Some(note) = unknown {
        let _ = writeln!(out, "  {note}");
    }
    let calls_known = unknown.is_none();
    match summary {
        Ok(rows) => thread_rows(&mut out, &rows, name_w, calls_known),
        Err(e) => {
            let _ = writeln!(out, "  thread summary not available: {}", e.0);
            for t in &threads {
                let _ = writeln!(
                    out,
                    "  {:>5} {} cpu {}",
                    t.index,
                    pad(&cell_text(&t.name), name_w),
                    duration_text(secs(t.cpu_ns))
                );
            }
        }
    }
    match tasks {
        Ok(rows) if rows.is_empty() => {}
        Ok(rows) => task_rows(&mut out, run, rank, &rows, opts, calls_known),
        Err(e) => {
            let _ = writeln!(out, "\n{}: tasks\n  task summary not available: {}", run.rank_label(rank), e.0);
        }
    }
    out
}

/// The rows of the thread table (index order).
/// Without the calls (`calls_known` false: a summary-only read) the lanes' calls and times
/// print as `-`. With task steps recorded, two columns more: the time in task steps and
/// the tasks' summed awaits (a per-task sum, not a time of the thread), then a line saying so;
/// with an instrumented event loop, two more: its tasks' ready wait and its idle time.
fn thread_rows(out: &mut String, rows: &[ThreadSummaryRow], name_w: usize, calls_known: bool) {
    // rows of thread ids without a table row (`thread 7`) too
    let name_w = rows.iter().map(|r| display_width(&cell_text(&r.name))).fold(name_w, usize::max);
    let with_await = rows.iter().any(|r| r.await_time.is_some());
    let with_steps = with_await && rows.iter().any(|r| r.task_step_time.is_some());
    let with_loop = rows.iter().any(|r| r.ready_wait_time.is_some() || r.idle_time.is_some());
    let loop_cells = |ready: &str, idle: &str| {
        if with_loop {
            format!(" {ready:>W$} {idle:>W$}", W = TIME_W)
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        out,
        "  {:>5} {} {:>6} {:>W$} {:>W$} {:>9} {:>W$}{}{}{}",
        "index",
        pad("name", name_w),
        "alive",
        "wall",
        "cpu",
        "calls",
        "region",
        if with_await { format!(" {:>W$} {:>W$}", "held", "await", W = TIME_W) } else { String::new() },
        if with_steps { format!(" {:>W$} {:>W$}", "task steps", "Σ awaits", W = TIME_W) } else { String::new() },
        loop_cells("ready wait", "idle"),
        W = TIME_W
    );
    for row in rows {
        let alive = if !row.listed {
            "-"
        } else if row.alive {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(
            out,
            "  {:>5} {} {:>6} {:>W$} {:>W$} {:>9} {:>W$}{}{}{}",
            row.index,
            pad(&cell_text(&row.name), name_w),
            alive,
            opt_s(row.wall_time),
            opt_s(row.cpu_time),
            known(calls_known, row.num_calls.to_string()),
            known(calls_known, duration_text(row.region_time)),
            if with_await {
                format!(" {:>W$} {:>W$}", opt_s(row.held_time), opt_s(row.await_time), W = TIME_W)
            } else {
                String::new()
            },
            if with_steps {
                format!(" {:>W$} {:>W$}", opt_s(row.task_step_time), opt_s(row.task_await_time_sum), W = TIME_W)
            } else {
                String::new()
            },
            loop_cells(&opt_s(row.ready_wait_time), &opt_s(row.idle_time)),
            W = TIME_W
        );
    }
    if with_steps {
        let _ = writeln!(
            out,
            "  (held: the thread's own calls outside task steps, and the task steps; await: its tasks'\n  \
             calls open with none running; Σ awaits: the tasks' awaits summed, not a time of the thread)"
        );
    }
    if with_loop {
        let _ = writeln!(
            out,
            "  (ready wait: some task on the thread was ready to run but waited for it; idle: its event\n  \
             loop waited with nothing ready)"
        );
    }
}

/// The rows of the task table: the [`TASK_ROWS`] busiest tasks by held time (every task
/// with `opts.all_tasks`), busiest first, then how many more and their totals. A ready-wait
/// column when an instrumented event loop recorded it.
fn task_rows(
    out: &mut String,
    run: &Run,
    rank: u32,
    rows: &[TaskSummaryRow],
    opts: &SummaryOptions,
    calls_known: bool,
) {
    let _ = writeln!(out, "\n{}: tasks", run.rank_label(rank));
    let labels = LaneLabels::new(run, rank);
    let times: Vec<f64> = rows.iter().map(task_busy_time).collect();
    let (shown, rest) = busiest(&times, (!opts.all_tasks).then_some(TASK_ROWS));
    let label_of = |k: usize| cell_text(&labels.label(rows[k].index));
    let label_w = shown.iter().map(|&k| display_width(&label_of(k))).max().unwrap_or(4).clamp(4, 60);
    // recorded by instrumented event loops
    let with_ready = rows.iter().any(|t| t.ready_wait_time.is_some());
    let ready_cell = |v: &str| if with_ready { format!(" {v:>W$}", W = TIME_W) } else { String::new() };
    let _ = writeln!(
        out,
        "  {:>5} {} {:>W$} {:>9} {:>W$} {:>W$} {:>W$}{}",
        "index",
        pad("lane", label_w),
        "wall",
        "calls",
        "region",
        "held",
        "await",
        ready_cell("ready wait"),
        W = TIME_W
    );
    for &k in &shown {
        let t = &rows[k];
        let _ = writeln!(
            out,
            "  {:>5} {} {:>W$} {:>9} {:>W$} {:>W$} {:>W$}{}",
            t.index,
            pad(&label_of(k), label_w),
            opt_s(t.wall_time),
            known(calls_known, t.num_calls.to_string()),
            known(calls_known, duration_text(t.region_time)),
            opt_s(t.held_time),
            opt_s(t.await_time),
            ready_cell(&opt_s(t.ready_wait_time)),
            W = TIME_W
        );
    }
    if !rest.is_empty() {
        let calls: i64 = rest.iter().map(|&k| rows[k].num_calls).sum();
        let held: f64 = rest.iter().map(|&k| times[k]).sum();
        let hint = opts.hints.as_ref().map(|(_, h)| format!("; {h}")).unwrap_or_default();
        let _ =
            writeln!(out, "  ... and {} more tasks, {calls} call(s), {} held{hint}", rest.len(), duration_text(held));
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn finalize_title_says_in_memory_with_the_rank_count() {
        assert_eq!(finalize_summary_title(Some("out.json"), true, "run", 1).as_deref(), Some("out.json"));
        assert_eq!(finalize_summary_title(None, true, "run", 1), None);
        assert_eq!(finalize_summary_title(None, false, "run", 1).as_deref(), Some("run (in memory, 1 rank)"));
        assert_eq!(finalize_summary_title(Some("x"), false, "p.h5", 4).as_deref(), Some("p.h5 (in memory, 4 ranks)"));
    }

    use super::*;
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;

    fn run_of(names: &[&str]) -> Run {
        Run {
            region_names: names.iter().map(|n| n.to_string()).collect(),
            regions: (0..names.len() as u32)
                .map(|k| {
                    let s = 100 * k as i64;
                    RegionCalls::new(k, 0, Int64Array::from(vec![s]), Int64Array::from(vec![s + 50]))
                })
                .collect(),
            num_ranks: 1,
            ..Run::default()
        }
    }

    /// A region name with a newline stays on its row, a tab is not printed raw, CJK and emoji
    /// names stay aligned: control characters are escaped as Python's repr does; padding
    /// counts terminal columns, so every row's `calls` column ends at the same column.
    #[test]
    fn names_are_escaped_and_padded_by_display_width() {
        assert_eq!(cell_text("a\nb\tc\rd\u{1b}e\u{2028}"), "a\\nb\\tc\\rd\\x1be\\u2028");
        assert_eq!(cell_text("計算 🚀"), "計算 🚀");
        // a long name keeps its start and end, within the cell's width
        let long = format!("GET /api/{}/item/7", "x".repeat(5000));
        let cell = cell_text(&long);
        assert_eq!(display_width(&cell), CELL_MAX_WIDTH);
        assert!(cell.starts_with("GET /api/xxx") && cell.ends_with("xxx/item/7") && cell.contains('…'), "{cell}");
        let wide = "計".repeat(100);
        assert!(display_width(&cell_text(&wide)) <= CELL_MAX_WIDTH);
        assert_eq!(cell_text(&"y".repeat(CELL_MAX_WIDTH)), "y".repeat(CELL_MAX_WIDTH), "a name that fits is whole");
        assert_eq!(display_width("計算"), 4);
        let text = summary_text(&run_of(&["main\nline", "tab\there", "計算", "🚀x", "plain"]), "t.h5");
        let lines: Vec<&str> = text.lines().collect();
        let rows: Vec<&str> = lines.iter().skip_while(|l| !l.ends_with(": regions")).skip(1).take(6).copied().collect();
        assert!(rows[1].starts_with("  main\\nline "), "{text}");
        assert!(rows[2].starts_with("  tab\\there "), "{text}");
        // the header and each row: `calls` right-aligned at the same terminal column
        let end_of_calls = |l: &str| {
            let i = l.find(" 1 ").map(|i| i + 2).unwrap_or_else(|| l.find("calls").unwrap() + 5);
            display_width(&l[..i])
        };
        let want = end_of_calls(rows[0]);
        for row in &rows[1..] {
            assert_eq!(end_of_calls(row), want, "{row:?} in\n{text}");
        }
        assert_eq!(text.lines().count(), 9, "title, blank, heading, header, one line per region row:\n{text}");
    }

    /// `print_summary(include=['outer'])`'s header counts the selection's regions and calls
    /// (not the run's regions and the selection's calls) and names the filter.
    #[test]
    fn a_filtered_summary_says_so_and_counts_the_selection() {
        let mut run = run_of(&["outer", "inner", "other"]);
        run.regions.truncate(1);
        let text = summary_text_filtered(&run, "mine.h5", Some("include=['outer']"));
        assert!(
            text.starts_with("mine.h5: 1 region(s), 1 call(s), 1 rank(s) (filtered: include=['outer'])\n"),
            "{text}"
        );
        assert!(summary_text(&run, "mine.h5").starts_with("mine.h5: 3 region(s), 1 call(s), 1 rank(s)\n"));
    }

    /// Regions print by inclusive time, the hot spot first, each time in the unit that
    /// shows it; `top` shows the first N and says how many more there are.
    #[test]
    fn regions_print_by_inclusive_time_and_top_counts_the_rest() {
        let mut run = run_of(&["small", "hot", "mid"]);
        // one after the other: small, hot, mid
        for (r, (s, d)) in
            run.regions.iter_mut().zip([(0i64, 758i64), (1_000, 2_500_000_000), (3_000_000_000, 1_500_000)])
        {
            r.start_ns = Int64Array::from(vec![s]);
            r.end_ns = Int64Array::from(vec![s + d]);
        }
        let text = summary_text(&run, "t.h5");
        let names: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.ends_with(": regions"))
            .skip(2)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(names, ["hot", "mid", "small"], "{text}");
        assert!(text.contains(" 758 ns "), "{text}");
        assert!(text.contains(" 2.50 s "), "{text}");
        assert!(text.contains(" 1.50 ms "), "{text}");
        let opts = SummaryOptions { sort: SortKey::Name, top: Some(2), ..SummaryOptions::default() }.with_cli_hints();
        let text = summary_text_with(&run, "t.h5", &opts);
        let rows: Vec<&str> = text.lines().skip_while(|l| !l.ends_with(": regions")).skip(2).collect();
        assert!(rows[0].starts_with("  hot ") && rows[1].starts_with("  mid "), "{text}");
        assert_eq!(rows[2], "  ... and 1 more region(s), 1 call(s), 758 ns total; --top 0 lists every one");
        assert_eq!(rows.len(), 3, "{text}");
    }

    /// A run of many tasks prints the 20 that held their thread longest and counts the
    /// others; `all_tasks` prints every one.
    #[test]
    fn task_rows_are_capped_at_the_busiest_twenty() {
        use scope_profiler_analysis::{TaskRow, ThreadRow};
        let n = 30i64;
        let ids: Vec<i64> = (0..n).collect();
        let mut r = RegionCalls::new(
            0,
            0,
            Int64Array::from(ids.iter().map(|k| k * 1000).collect::<Vec<_>>()),
            Int64Array::from(ids.iter().map(|k| k * 1000 + 10 + k).collect::<Vec<_>>()),
        );
        r.thread_ids = Some(Int64Array::from(vec![0; n as usize]));
        r.task_ids = Some(Int64Array::from(ids.clone()));
        r.await_ns = Some(Int64Array::from(vec![0; n as usize]));
        let run = Run {
            region_names: vec!["fetch".into()],
            regions: vec![r],
            threads: vec![ThreadRow { ident: 1, native_id: 1, ..ThreadRow::new(0, 0, "MainThread") }],
            tasks: ids
                .iter()
                .map(|&k| TaskRow::new(0, k, "task", format!("Task-{k}"), "m.fetch").on_thread(0))
                .collect(),
            num_ranks: 1,
            ..Run::default()
        };
        let text = summary_text(&run, "t.h5");
        let rows: Vec<&str> = text.lines().skip_while(|l| !l.ends_with(": tasks")).skip(2).collect();
        assert_eq!(rows.len(), 21, "{text}");
        assert!(rows[0].trim_start().starts_with("29 Task-29 "), "the busiest first: {text}");
        assert!(rows[19].trim_start().starts_with("10 Task-10 "), "{text}");
        assert_eq!(rows[20], "  ... and 10 more tasks, 10 call(s), 145 ns held");
        let all = summary_text_with(&run, "t.h5", &SummaryOptions { all_tasks: true, ..SummaryOptions::default() });
        assert_eq!(all.lines().skip_while(|l| !l.ends_with(": tasks")).skip(2).count(), 30, "{all}");
    }

    /// A run with event-loop blocks of 10 ms or more lists the longest under "event loop
    /// blocked": duration, start, the lane that held the loop, the region the block ran in
    /// and the tasks it delayed; shorter blocks are left out, and more than ten are counted.
    #[test]
    fn the_summary_lists_the_longest_loop_blocks_with_their_region() {
        use scope_profiler_analysis::{LoopBlockRow, TaskRow, ThreadRow};
        const MS: i64 = 1_000_000;
        // task 0 holds the loop 80 ms inside `blocking` (100..180 ms); a callback 12 ms; a 5 ms block
        let mut r = RegionCalls::new(0, 0, Int64Array::from(vec![100 * MS]), Int64Array::from(vec![180 * MS]));
        r.thread_ids = Some(Int64Array::from(vec![0]));
        r.task_ids = Some(Int64Array::from(vec![0]));
        r.await_ns = Some(Int64Array::from(vec![0]));
        let block = |task: i64, start: i64, end: i64, delayed: i64| LoopBlockRow {
            rank: 0,
            thread: 0,
            task,
            start_ns: start * MS,
            end_ns: end * MS,
            delayed_tasks: delayed,
        };
        let mut run = Run {
            region_names: vec!["blocking".into()],
            regions: vec![r],
            threads: vec![ThreadRow { ident: 1, native_id: 1, ..ThreadRow::new(0, 0, "MainThread") }],
            tasks: vec![TaskRow::new(0, 0, "task", "Task-1", "m.blocker").on_thread(0)],
            metadata: vec![("start_time_ns".into(), scope_profiler_analysis::MetaValue::Int(0))],
            num_ranks: 1,
            loop_blocks: vec![block(0, 100, 180, 5), block(-1, 300, 312, 2), block(0, 400, 405, 1)],
        };
        let text = summary_text(&run, "t.h5");
        let section: Vec<&str> = text.lines().skip_while(|l| !l.contains(": event loop blocked")).collect();
        assert_eq!(section[0], "rank 0: event loop blocked (2 block(s) of 10.0 ms or more)", "{text}");
        let first: Vec<&str> = section[2].split_whitespace().collect();
        assert_eq!(
            first,
            ["80.0", "ms", "0.100", "Task-1", "(blocker)", "on", "MainThread", "blocking", "5"],
            "{text}"
        );
        let second: Vec<&str> = section[3].split_whitespace().collect();
        assert_eq!(second, ["12.0", "ms", "0.300", "MainThread", "(a", "callback)", "-", "2"], "{text}");
        assert_eq!(section.len(), 4, "{text}");
        // eleven blocks of 10 ms or more: ten rows and a count
        run.loop_blocks = (0..11).map(|k| block(-1, 1000 + 100 * k, 1000 + 100 * k + 20 + k, 0)).collect();
        let text = summary_text(&run, "t.h5");
        let section: Vec<&str> = text.lines().skip_while(|l| !l.contains(": event loop blocked")).collect();
        assert_eq!(section.len(), 13, "{text}");
        assert!(section[2].trim_start().starts_with("30.0 ms"), "the longest first: {text}");
        assert_eq!(section[12], "  ... and 1 more block(s), 20.0 ms blocked");
        // none of 10 ms or more: no section
        run.loop_blocks = vec![block(0, 400, 405, 1)];
        assert!(!summary_text(&run, "t.h5").contains("event loop blocked"));
    }

    /// A gevent hub's blocks: a spawned greenlet's lane, or the main greenlet (the thread's
    /// own lane, on a thread whose greenlets are lanes); the tasks they delayed are not known.
    #[test]
    fn a_gevent_hubs_blocks_show_the_main_greenlet_and_unknown_delays() {
        use scope_profiler_analysis::{LoopBlockRow, TaskRow, ThreadRow};
        const MS: i64 = 1_000_000;
        let block = |task: i64, start: i64, end: i64| LoopBlockRow {
            rank: 0,
            thread: 0,
            task,
            start_ns: start * MS,
            end_ns: end * MS,
            delayed_tasks: -1,
        };
        let mut r = RegionCalls::new(0, 0, Int64Array::from(vec![100 * MS]), Int64Array::from(vec![160 * MS]));
        r.thread_ids = Some(Int64Array::from(vec![0]));
        r.task_ids = Some(Int64Array::from(vec![1]));
        r.await_ns = Some(Int64Array::from(vec![0]));
        let run = Run {
            region_names: vec!["blocking".into()],
            regions: vec![r],
            threads: vec![ThreadRow::new(0, 0, "MainThread")],
            tasks: vec![
                TaskRow::new(0, 0, "greenlet", "greenlet-a0", "Hub.run").on_thread(0),
                TaskRow::new(0, 1, "greenlet", "Greenlet-1", "m.blocker").on_thread(0),
            ],
            metadata: vec![("start_time_ns".into(), scope_profiler_analysis::MetaValue::Int(0))],
            num_ranks: 1,
            loop_blocks: vec![block(1, 100, 160), block(-1, 200, 220)],
        };
        let text = summary_text(&run, "t.h5");
        let section: Vec<&str> = text.lines().skip_while(|l| !l.contains(": event loop blocked")).collect();
        let rows: Vec<Vec<&str>> = section[2..].iter().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            rows,
            [
                vec!["60.0", "ms", "0.100", "Greenlet-1", "(blocker)", "on", "MainThread", "blocking", "?"],
                vec!["20.0", "ms", "0.200", "MainThread", "(main", "greenlet)", "-", "?"],
            ],
            "{text}"
        );
    }

    /// With task steps recorded, the thread table says how long the thread ran task steps
    /// and, under its own name, the tasks' summed awaits (more than the thread's wall time
    /// here: two tasks awaiting at once), then what each column is.
    #[test]
    fn the_thread_table_names_the_per_task_sum() {
        use scope_profiler_analysis::{TaskRow, ThreadRow};
        let mut body = RegionCalls::new(0, 0, Int64Array::from(vec![0]), Int64Array::from(vec![1_000_000]));
        body.thread_ids = Some(Int64Array::from(vec![0]));
        body.task_ids = Some(Int64Array::from(vec![-1]));
        body.await_ns = Some(Int64Array::from(vec![0]));
        body.task_step_ns = Some(Int64Array::from(vec![200_000]));
        let mut wait = RegionCalls::new(1, 0, Int64Array::from(vec![0, 0]), Int64Array::from(vec![900_000, 900_000]));
        wait.thread_ids = Some(Int64Array::from(vec![0, 0]));
        wait.task_ids = Some(Int64Array::from(vec![0, 1]));
        wait.await_ns = Some(Int64Array::from(vec![800_000, 800_000]));
        let main = ThreadRow { task_step_ns: 200_000, end_ns: 1_000_000, ..ThreadRow::new(0, 0, "MainThread") };
        let run = Run {
            region_names: vec!["__main__.<module>".into(), "wait".into()],
            regions: vec![body, wait],
            threads: vec![main],
            tasks: (0..2).map(|k| TaskRow::new(0, k, "task", format!("Task-{k}"), "m.w").on_thread(0)).collect(),
            num_ranks: 1,
            ..Run::default()
        };
        let text = summary_text(&run, "t.h5");
        let header = text.lines().find(|l| l.trim_start().starts_with("index name")).unwrap();
        assert!(header.ends_with("held      await task steps   Σ awaits"), "{text}");
        let row = text.lines().find(|l| l.contains("MainThread")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // held: the body outside the steps (0.8 ms) + the steps (0.2 ms); await: the union of
        // the task calls (0.9 ms) less their held time (2 x 0.1 ms); Σ awaits 2 x 0.8 ms
        assert_eq!(&cells[cells.len() - 8..], ["1.00", "ms", "700", "µs", "200", "µs", "1.60", "ms"], "{text}");
        assert!(text.contains("Σ awaits: the tasks' awaits summed, not a time of the thread)"), "{text}");
    }

    /// Calls of an event loop's tasks recorded without `track_async` cross on their thread's
    /// lane: the summary lists the calls set aside and says once, in its own note, to record
    /// with --track-async, and reports that it did (so `run` adds no note of its own).
    #[test]
    fn the_track_async_advice_is_said_once() {
        use scope_profiler_analysis::ThreadRow;
        let mut r = RegionCalls::new(0, 0, Int64Array::from(vec![0, 50]), Int64Array::from(vec![100, 150]));
        r.thread_ids = Some(Int64Array::from(vec![0, 0]));
        let run = Run {
            region_names: vec!["request".into()],
            regions: vec![r],
            threads: vec![ThreadRow { ident: 1, native_id: 1, ..ThreadRow::new(0, 0, "MainThread") }],
            num_ranks: 1,
            ..Run::default()
        };
        let report = summary_report(&run, "t.h5", &SummaryOptions::default());
        assert!(report.advised_track_async, "{}", report.text);
        assert_eq!(report.text.matches("--track-async").count(), 1, "{}", report.text);
        assert!(report.text.contains("were set aside"), "{}", report.text);
        assert!(report.text.contains(" (see below).\n"), "{}", report.text);
        let quiet = summary_report(&run_of(&["a"]), "t.h5", &SummaryOptions::default());
        assert!(!quiet.advised_track_async);
    }

    /// A run read without its calls (`read_h5_summary`) prints its stored statistics: the
    /// calls and times of each region as the file stores them, and `-` (with a note) for the
    /// threads' calls and region times, which need the calls.
    #[test]
    fn a_summary_only_read_prints_the_stored_statistics() {
        use scope_profiler_analysis::{StoredStats, ThreadRow};
        let mut r = RegionCalls::new(0, 0, Int64Array::from(Vec::<i64>::new()), Int64Array::from(Vec::<i64>::new()));
        r.thread_ids = Some(Int64Array::from(Vec::<i64>::new()));
        r.stored = Some(StoredStats::of_calls(&[0, 100, 1_000], &[2_000_000, 1_100_100, 4_001_000], None));
        r.exclusive_total_ns = Some(5_000_000);
        let run = Run {
            region_names: vec!["job".into()],
            regions: vec![r],
            threads: vec![ThreadRow { cpu_ns: 7_000_000, cpu_start_ns: 0, ..ThreadRow::new(0, 0, "MainThread") }],
            num_ranks: 1,
            ..Run::default()
        };
        let text = summary_text(&run, "s.h5");
        assert!(text.starts_with("s.h5: 1 region(s), 3 call(s), 1 rank(s)\n"), "{text}");
        let row = text.lines().find(|l| l.trim_start().starts_with("job ")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // durations 2, 1.1 and 4 ms: total 7.1 ms, mean 2.37 ms, min 1.1 ms, max 4 ms; exclusive 5 ms
        assert_eq!(&cells[1..], ["3", "7.10", "ms", "2.37", "ms", "1.10", "ms", "4.00", "ms", "5.00", "ms"], "{text}");
        assert!(text.contains(summary_only_note(&run, 0).unwrap()), "{text}");
        let thread = text.lines().find(|l| l.contains("MainThread")).unwrap();
        let cells: Vec<&str> = thread.split_whitespace().collect();
        assert_eq!(&cells[2..], ["yes", "-", "7.00", "ms", "-", "-"], "{thread:?}");
    }
}
