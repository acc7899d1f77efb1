//! Plain-text reports of a run: the region summary and the thread table. Shared by the
//! CLI and by `ProfilingResults.print_summary()` in Python, so both print the same thing.
use std::fmt::Write as _;

use scope_profiler_analysis::{
    rank_summary, secs, task_summary, thread_summary, thread_table_note, LaneLabels, NestingError, Run, TaskSummaryRow,
    ThreadSummaryRow,
};

/// Region summary of every rank: one line per region with calls (count, total s,
/// mean/min/max ms, exclusive s; await s and held s = total − await when the run recorded
/// await times). Exclusive time comes from the stored per-row totals
/// or, when absent, from reconstruction; a run whose calls cannot be nested prints `-`
/// and says why. `title` heads the report (usually the file path).
pub fn summary_text(run: &Run, title: &str) -> String {
    let mut out = String::new();
    let total_calls: usize = run.regions.iter().map(|r| r.len()).sum();
    // a run stacked from several files keeps the first file's metadata: its span would be
    // that file's alone (issue 14, second new-user trial: the header changed with the order
    // of the files), so a merged run's header gives none
    let merged = run.meta("merged_from").is_some();
    let span = match (run.meta_int("start_time_ns"), run.meta_int("finalize_time_ns")) {
        (Some(s), Some(f)) if f >= s && !merged => format!(", run {:.6} s", secs(f - s)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{title}: {} region(s), {total_calls} call(s), {} rank(s){span}",
        run.region_names.len(),
        run.num_ranks
    );
    for rank in 0..run.num_ranks {
        let Some(sum) = rank_summary(run, rank) else {
            continue;
        };
        let name_w = sum.rows.iter().map(|r| r.name.chars().count()).max().unwrap_or(6).max(6);
        let with_await = sum.has_await();
        let _ = writeln!(out, "\n{}: regions", run.rank_label(rank));
        let _ = write!(
            out,
            "  {:<name_w$} {:>9} {:>12} {:>11} {:>11} {:>11} {:>12}",
            "region", "calls", "total s", "mean ms", "min ms", "max ms", "exclusive s"
        );
        let _ = writeln!(
            out,
            "{}",
            if with_await { format!(" {:>12} {:>12}", "await s", "held s") } else { String::new() }
        );
        for r in &sum.rows {
            let ex = r.exclusive_ns.map(|v| format!("{:.6}", secs(v))).unwrap_or_else(|| "-".into());
            let _ = write!(
                out,
                "  {:<name_w$} {:>9} {:>12.6} {:>11.3} {:>11.3} {:>11.3} {:>12}",
                r.name,
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
            out.push_str(&threads_text_with(run, rank, summary, sum.tasks.unwrap_or_else(|| Ok(Vec::new()))));
        }
        if let Some(msg) = &sum.thread_table_note {
            let _ = writeln!(out, "  note: {title}: {msg}");
        }
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
    let name_w = threads.iter().map(|t| t.name.chars().count()).max().unwrap_or(4).max(4);
    match summary {
        Ok(rows) => {
            // rows of thread ids without a table row (`thread 7`) too
            let name_w = rows.iter().map(|r| r.name.chars().count()).fold(name_w, usize::max);
            let with_await = rows.iter().any(|r| r.await_time.is_some());
            let _ = writeln!(
                out,
                "  {:>5} {:<name_w$} {:>6} {:>10} {:>10} {:>9} {:>10}{}",
                "index",
                "name",
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
                    "  {:>5} {:<name_w$} {:>6} {:>10} {:>10} {:>9} {:>10.6}{}",
                    row.index,
                    row.name,
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
                let _ = writeln!(out, "  {:>5} {:<name_w$} cpu {:.6} s", t.index, t.name, secs(t.cpu_ns));
            }
        }
    }
    match tasks {
        Ok(rows) if rows.is_empty() => {}
        Ok(rows) => {
            let _ = writeln!(out, "\n{}: tasks", run.rank_label(rank));
            let labels = LaneLabels::new(run, rank);
            let label_w = rows.iter().map(|t| labels.label(t.index).chars().count()).max().unwrap_or(4).clamp(4, 60);
            let _ = writeln!(
                out,
                "  {:>5} {:<label_w$} {:>10} {:>9} {:>10} {:>10} {:>10}",
                "index", "lane", "wall s", "calls", "region s", "held s", "await s"
            );
            for t in rows {
                let _ = writeln!(
                    out,
                    "  {:>5} {:<label_w$} {:>10} {:>9} {:>10.6} {:>10} {:>10}",
                    t.index,
                    labels.label(t.index),
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
