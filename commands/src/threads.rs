//! `scope-profiler threads`: the threads and tasks of a run, with their times
//! ([`text_summary::threads_text`] per rank).
use std::path::Path;

use scope_profiler_formats::text_summary;

use crate::failure::read_input;

/// `scope-profiler threads [--all-tasks] FILE`: the busiest tasks unless `all_tasks`. The
/// exit code: 0, or the failure's.
pub fn execute(file: &Path, all_tasks: bool) -> i32 {
    let opts = text_summary::SummaryOptions { all_tasks, ..Default::default() }.with_cli_hints();
    match read_input(file) {
        Ok(run) => {
            if run.threads.is_empty() && run.regions.iter().all(|r| r.is_empty()) {
                // a run without calls has no thread table whether or not it tracked
                // threads: the file cannot tell
                outln!("{}: no thread recorded (the run has no calls)", file.display());
            } else if run.threads.is_empty() {
                outln!("{}: no thread table (the run was not recorded with track_threads)", file.display());
            } else {
                // each rank's table starts with a blank line (it follows the regions in
                // `summary`); the first one here has nothing above it
                let mut first = true;
                for rank in 0..run.num_ranks {
                    if run.rank_threads(rank).next().is_some() {
                        let text = text_summary::threads_text(&run, rank, &file.display().to_string(), &opts);
                        out!("{}", if first { text.trim_start_matches('\n') } else { &text });
                        first = false;
                    }
                }
            }
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.code()
        }
    }
}
