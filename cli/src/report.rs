//! Plain-text reports of a run: the region summary and the thread table. Shared by the
//! CLI and by `ProfilingResults.print_summary()` in Python, so both print the same thing.
use std::fmt::Write as _;

use scope_profiler_analysis::{lane_label, rank_summary, secs, thread_summary, NestingError, Run, ThreadSummaryRow};

/// Region summary of every rank: one line per region with calls (count, total s,
/// mean/min/max ms, exclusive s). Exclusive time comes from the stored per-row totals
/// or, when absent, from reconstruction; a run whose calls cannot be nested prints `-`
/// and says why. `title` heads the report (usually the file path).
pub fn summary_text(run: &Run, title: &str) -> String {
    let mut out = String::new();
    let total_calls: usize = run.regions.iter().map(|r| r.len()).sum();
    let span = match (run.meta_int("start_time_ns"), run.meta_int("finalize_time_ns")) {
        (Some(s), Some(f)) if f >= s => format!(", run {:.6} s", secs(f - s)),
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
        let _ = writeln!(out, "\nrank {rank}: regions");
        let _ = writeln!(
            out,
            "  {:<name_w$} {:>9} {:>12} {:>11} {:>11} {:>11} {:>12}",
            "region", "calls", "total s", "mean ms", "min ms", "max ms", "exclusive s"
        );
        for r in &sum.rows {
            let ex = r.exclusive_ns.map(|v| format!("{:.6}", secs(v))).unwrap_or_else(|| "-".into());
            let _ = writeln!(
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
        }
        if let Some(msg) = &sum.nesting_note {
            let _ = writeln!(out, "  exclusive time not available: {msg}");
        }
        if let Some(msg) = &sum.set_aside_note {
            let _ = writeln!(out, "  note: {msg}");
        }
        if let Some(summary) = sum.threads {
            out.push_str(&threads_text_with(run, rank, summary));
        }
    }
    out
}

/// The thread table of `rank` with `thread_summary` columns (wall s, CPU s, calls,
/// region s), then the task table when tasks were tracked.
pub fn threads_text(run: &Run, rank: u32) -> String {
    threads_text_with(run, rank, thread_summary(run, rank))
}

/// [`threads_text`] given the rank's thread summary (or why there is none).
fn threads_text_with(run: &Run, rank: u32, summary: Result<Vec<ThreadSummaryRow>, NestingError>) -> String {
    let mut out = String::new();
    let threads: Vec<_> = run.rank_threads(rank).collect();
    let _ = writeln!(out, "\nrank {rank}: threads");
    let name_w = threads.iter().map(|t| t.name.chars().count()).max().unwrap_or(4).max(4);
    match summary {
        Ok(rows) => {
            let _ = writeln!(
                out,
                "  {:>5} {:<name_w$} {:>6} {:>10} {:>10} {:>9} {:>10}",
                "index", "name", "alive", "wall s", "cpu s", "calls", "region s"
            );
            for row in rows {
                let wall = row.wall_time.map(|w| format!("{w:.6}")).unwrap_or_else(|| "-".into());
                let _ = writeln!(
                    out,
                    "  {:>5} {:<name_w$} {:>6} {:>10} {:>10.6} {:>9} {:>10.6}",
                    row.index,
                    row.name,
                    if row.alive { "yes" } else { "no" },
                    wall,
                    row.cpu_time,
                    row.num_calls,
                    row.region_time
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
    let tasks: Vec<_> = run.rank_tasks(rank).collect();
    if !tasks.is_empty() {
        let _ = writeln!(out, "\nrank {rank}: tasks");
        let _ =
            writeln!(out, "  {:>5} {:<40} {:>7} {:>11} {:>11}", "index", "lane", "steps", "running s", "awaiting s");
        for t in tasks {
            let _ = writeln!(
                out,
                "  {:>5} {:<40} {:>7} {:>11.6} {:>11.6}",
                t.index,
                lane_label(run, t.index, rank),
                t.steps,
                secs(t.running_ns),
                secs(t.suspended_ns)
            );
        }
    }
    out
}
