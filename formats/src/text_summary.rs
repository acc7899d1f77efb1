//! Plain-text reports of a run: the region summary and the thread table. Shared by the
//! CLI and by `ProfilingResults.print_summary()` in Python, so both print the same thing.
use std::fmt::Write as _;

use scope_profiler_analysis::{
    rank_summary, secs, task_summary, thread_summary, thread_table_note, LaneLabels, NestingError, Run, TaskSummaryRow,
    ThreadSummaryRow,
};
use unicode_width::UnicodeWidthStr;

/// `name` for one cell of a text table: control characters escaped as Python's `repr` does
/// (`\n`, `\t`, `\r`, `\x1b`, `\u2028`), so a name stays on its row (a newline would split
/// it in two, a tab would print raw).
pub fn cell_text(name: &str) -> String {
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

/// Region summary of every rank: one line per region with calls (count, total s,
/// mean/min/max ms, exclusive s; await s and held s = total − await when the run recorded
/// await times). Exclusive time comes from the stored per-row totals
/// or, when absent, from reconstruction; a run whose calls cannot be nested prints `-`
/// and says why. `title` heads the report (usually the file path).
pub fn summary_text(run: &Run, title: &str) -> String {
    summary_text_filtered(run, title, None)
}

/// [`summary_text`] of a run already restricted to a selection (`print_summary(include=...)`):
/// `filter` (e.g. `include=['outer']`) is said in the header, whose region count is then the
/// regions with calls in the selection, and above each thread table, whose calls count only
/// the selected regions.
pub fn summary_text_filtered(run: &Run, title: &str, filter: Option<&str>) -> String {
    let mut out = String::new();
    let total_calls: usize = run.regions.iter().map(|r| r.len()).sum();
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
        (Some(s), Some(f)) if f >= s && !merged => format!(", run {:.6} s", secs(f - s)),
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
        let names: Vec<String> = sum.rows.iter().map(|r| cell_text(&r.name)).collect();
        let name_w = names.iter().map(|n| display_width(n)).max().unwrap_or(6).max(6);
        let with_await = sum.has_await();
        let _ = writeln!(out, "\n{}: regions", run.rank_label(rank));
        let _ = write!(
            out,
            "  {} {:>9} {:>12} {:>11} {:>11} {:>11} {:>12}",
            pad("region", name_w),
            "calls",
            "total s",
            "mean ms",
            "min ms",
            "max ms",
            "exclusive s"
        );
        let _ = writeln!(
            out,
            "{}",
            if with_await { format!(" {:>12} {:>12}", "await s", "held s") } else { String::new() }
        );
        for (r, name) in sum.rows.iter().zip(&names) {
            let ex = r.exclusive_ns.map(|v| format!("{:.6}", secs(v))).unwrap_or_else(|| "-".into());
            let _ = write!(
                out,
                "  {} {:>9} {:>12.6} {:>11.3} {:>11.3} {:>11.3} {:>12}",
                pad(name, name_w),
                r.calls,
                secs(r.total_ns),
                r.mean_ns / 1e6,
                r.min_ns as f64 / 1e6,
                r.max_ns as f64 / 1e6,
                ex
            );
            let _ = writeln!(
                out,
                "{}",
                if with_await {
                    format!(" {:>12} {:>12}", opt_s(r.await_ns.map(secs)), opt_s(r.held_ns().map(secs)))
                } else {
                    String::new()
                }
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
        if let Some(summary) = sum.threads {
            let tables = threads_text_with(run, rank, summary, sum.tasks.unwrap_or_else(|| Ok(Vec::new())));
            match filter {
                // the lane tables count the selected regions' calls only: say so under each heading
                Some(f) => out.push_str(&tables.replace(
                    ": threads\n",
                    &format!(": threads (calls and region s of the selected regions only, {f})\n"),
                )),
                None => out.push_str(&tables),
            }
        }
        if let Some(msg) = &sum.thread_table_note {
            let _ = writeln!(out, "  note: {title}: {msg}");
        }
        out.push_str(&loop_blocks_text(run, rank));
    }
    out
}

/// Loop blocks the summary shows: at least this long (ns).
pub const SHOWN_BLOCK_NS: i64 = 10_000_000;
/// At most this many, the longest.
pub const SHOWN_BLOCKS: usize = 10;

/// The "event loop blocked" section of `rank`: its loop blocks of [`SHOWN_BLOCK_NS`] or
/// more, longest first (at most [`SHOWN_BLOCKS`]), each with its lane, region and the tasks
/// it delayed; empty when there is none.
pub fn loop_blocks_text(run: &Run, rank: u32) -> String {
    let Ok(blocks) = scope_profiler_analysis::loop_blocks(run, rank, SHOWN_BLOCK_NS) else {
        return String::new();
    };
    if blocks.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let shown = if blocks.len() > SHOWN_BLOCKS { format!(", the {SHOWN_BLOCKS} longest shown") } else { String::new() };
    let _ = writeln!(
        out,
        "\n{}: event loop blocked ({} time(s) for 10 ms or more{shown})",
        run.rank_label(rank),
        blocks.len()
    );
    let labels = LaneLabels::new(run, rank);
    let lane = |b: &scope_profiler_analysis::LoopBlock| {
        if b.task >= 0 {
            cell_text(&labels.label(b.task))
        } else {
            format!("callback on {}", cell_text(&labels.thread_label(b.thread)))
        }
    };
    let rows = &blocks[..blocks.len().min(SHOWN_BLOCKS)];
    let lanes: Vec<String> = rows.iter().map(lane).collect();
    let regions: Vec<String> = rows.iter().map(|b| b.region.as_deref().map_or("-".into(), cell_text)).collect();
    let lane_w = lanes.iter().map(|l| display_width(l)).max().unwrap_or(4).clamp(4, 60);
    let region_w = regions.iter().map(|r| display_width(r)).max().unwrap_or(6).max(6);
    let _ = writeln!(
        out,
        "  {:>11} {:>10} {} {} {:>8}",
        "blocked ms",
        "at s",
        pad("lane", lane_w),
        pad("region", region_w),
        "delayed"
    );
    for ((b, lane), region) in rows.iter().zip(&lanes).zip(&regions) {
        let _ = writeln!(
            out,
            "  {:>11.3} {:>10.6} {} {} {:>8}",
            b.duration * 1e3,
            b.start,
            pad(lane, lane_w),
            pad(region, region_w),
            b.delayed_tasks
        );
    }
    out
}

/// `{:.6}` of a value in s, `-` when unknown.
fn opt_s(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.6}")).unwrap_or_else(|| "-".into())
}

/// The thread table of `rank` with `thread_summary` columns (wall s, CPU s in the run,
/// calls, region s; held s and await s when the run recorded await times), then the
/// `task_summary` table when tasks were tracked. Unsound times print as `-`, followed by a
/// note (`thread_table_note`) naming `source` (the file), the rows and the problem.
pub fn threads_text(run: &Run, rank: u32, source: &str) -> String {
    let summary = thread_summary(run, rank);
    let note = summary.as_ref().ok().and_then(|rows| thread_table_note(run, rank, rows));
    let mut out = threads_text_with(run, rank, summary, task_summary(run, rank));
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
) -> String {
    let mut out = String::new();
    let threads: Vec<_> = run.rank_threads(rank).collect();
    let _ = writeln!(out, "\n{}: threads", run.rank_label(rank));
    let name_w = threads.iter().map(|t| display_width(&cell_text(&t.name))).max().unwrap_or(4).max(4);
    match summary {
        Ok(rows) => {
            // rows of thread ids without a table row (`thread 7`) too
            let name_w = rows.iter().map(|r| display_width(&cell_text(&r.name))).fold(name_w, usize::max);
            let with_await = rows.iter().any(|r| r.await_time.is_some());
            let _ = writeln!(
                out,
                "  {:>5} {} {:>6} {:>10} {:>10} {:>9} {:>10}{}",
                "index",
                pad("name", name_w),
                "alive",
                "wall s",
                "cpu s",
                "calls",
                "region s",
                if with_await { format!(" {:>10} {:>10}", "held s", "await s") } else { String::new() }
            );
            for row in rows {
                let _ = writeln!(
                    out,
                    "  {:>5} {} {:>6} {:>10} {:>10} {:>9} {:>10.6}{}",
                    row.index,
                    pad(&cell_text(&row.name), name_w),
                    if !row.listed {
                        "-"
                    } else if row.alive {
                        "yes"
                    } else {
                        "no"
                    },
                    opt_s(row.wall_time),
                    opt_s(row.cpu_time),
                    row.num_calls,
                    row.region_time,
                    if with_await {
                        format!(" {:>10} {:>10}", opt_s(row.held_time), opt_s(row.await_time))
                    } else {
                        String::new()
                    }
                );
            }
        }
        Err(e) => {
            let _ = writeln!(out, "  thread summary not available: {}", e.0);
            for t in &threads {
                let _ =
                    writeln!(out, "  {:>5} {} cpu {:.6} s", t.index, pad(&cell_text(&t.name), name_w), secs(t.cpu_ns));
            }
        }
    }
    match tasks {
        Ok(rows) if rows.is_empty() => {}
        Ok(rows) => {
            let _ = writeln!(out, "\n{}: tasks", run.rank_label(rank));
            let labels = LaneLabels::new(run, rank);
            let label_w =
                rows.iter().map(|t| display_width(&cell_text(&labels.label(t.index)))).max().unwrap_or(4).clamp(4, 60);
            let _ = writeln!(
                out,
                "  {:>5} {} {:>10} {:>9} {:>10} {:>10} {:>10}",
                "index",
                pad("lane", label_w),
                "wall s",
                "calls",
                "region s",
                "held s",
                "await s"
            );
            for t in rows {
                let _ = writeln!(
                    out,
                    "  {:>5} {} {:>10} {:>9} {:>10.6} {:>10} {:>10}",
                    t.index,
                    pad(&cell_text(&labels.label(t.index)), label_w),
                    opt_s(t.wall_time),
                    t.num_calls,
                    t.region_time,
                    opt_s(t.held_time),
                    opt_s(t.await_time)
                );
            }
        }
        Err(e) => {
            let _ = writeln!(out, "\n{}: tasks\n  task summary not available: {}", run.rank_label(rank), e.0);
        }
    }
    out
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

    /// The "event loop blocked" section lists the blocks of 10 ms or more, longest first, with
    /// lane, region and delayed tasks; a run without any has no such section.
    #[test]
    fn blocks_of_ten_ms_or_more_get_an_event_loop_blocked_section() {
        use scope_profiler_analysis::{LoopBlockRow, TaskRow};
        let ms = 1_000_000;
        let mut run = run_of(&["hold"]);
        assert!(!summary_text(&run, "r.h5").contains("event loop blocked"));
        run.regions[0] = RegionCalls::new(0, 0, Int64Array::from(vec![5 * ms]), Int64Array::from(vec![85 * ms]));
        run.regions[0].task_ids = Some(Int64Array::from(vec![2]));
        run.regions[0].thread_ids = Some(Int64Array::from(vec![0]));
        run.tasks = vec![TaskRow::new(0, 2, "task", "Task-3", "app.blocker").on_thread(0)];
        let block = |task, start, end, delayed| LoopBlockRow {
            rank: 0,
            thread: 0,
            task,
            start_ns: start * ms,
            end_ns: end * ms,
            delayed_tasks: delayed,
        };
        run.loop_blocks = vec![block(-1, 100, 112, 1), block(2, 4, 85, 5), block(-1, 200, 205, 0)];
        let text = loop_blocks_text(&run, 0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "rank 0: event loop blocked (2 time(s) for 10 ms or more)", "{text}");
        assert!(lines[3].contains("81.000") && lines[3].contains("(blocker)") && lines[3].contains("hold"), "{text}");
        assert!(lines[3].trim_end().ends_with(" 5"), "{text}");
        assert!(lines[4].contains("12.000") && lines[4].contains("callback on thread 0"), "{text}");
        assert_eq!(lines.len(), 5, "the 5 ms block is not shown:\n{text}");
        assert!(summary_text(&run, "r.h5").ends_with(&text));
    }
}
