//! `scope-profiler summary`: the region and thread summary of each file
//! ([`text_summary::summary_text_with`]: regions by inclusive time unless `--sort`), or with `--merge` of the files as one run, each file
//! its own block of ranks ([`read_merged`]).
use std::path::PathBuf;

use scope_profiler_analysis::{merge_runs, MergeOptions, Run};
use scope_profiler_formats::text_summary;

use crate::failure::{read_input, Failure};

/// `scope-profiler summary [--merge] [--sort KEY] [--top N] [--all-tasks] FILES`, printed as
/// `opts` asks. The exit code: 0, or the worst failure's (a
/// file that cannot be read does not stop the others).
pub fn execute(files: &[PathBuf], merge: bool, opts: &text_summary::SummaryOptions) -> i32 {
    if merge {
        return match read_merged(files) {
            Ok(run) => {
                let title = format!("{} file(s), merged", files.len());
                out!("{}", text_summary::summary_text_with(&run, &title, opts));
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                e.code()
            }
        };
    }
    let mut code = 0;
    for (k, f) in files.iter().enumerate() {
        match read_input(f) {
            Ok(run) => {
                if k > 0 {
                    outln!();
                }
                out!("{}", text_summary::summary_text_with(&run, &f.display().to_string(), opts));
            }
            Err(e) => {
                eprintln!("error: {e}");
                code = code.max(e.code());
            }
        }
    }
    code
}

/// Read `files` and stack them ([`merge_runs`]): file k's rank r becomes `offset_k + r`,
/// `offset_k` = the previous files' `max(num_ranks, 1)` summed (as `merge_results` in
/// Python). Metadata: [`merge_runs`]'s rule (every file's keys, earlier files winning), plus
/// `merged_from` (the paths, in rank-block order).
/// Errors name the file that could not be read ([`read_input`]: exit 2 for a file of
/// another kind).
pub fn read_merged(files: &[PathBuf]) -> Result<Run, Failure> {
    let mut parts = Vec::with_capacity(files.len());
    let mut offset = 0u32;
    for f in files {
        let run = read_input(f)?;
        let span = run.num_ranks.max(1);
        parts.push((offset, run));
        offset += span;
    }
    let options = MergeOptions {
        num_ranks: Some(offset),
        merged_from: Some(files.iter().map(|f| f.display().to_string()).collect()),
        ..Default::default()
    };
    merge_runs(parts, &options).map_err(|e| Failure::runtime(e.to_string()))
}
