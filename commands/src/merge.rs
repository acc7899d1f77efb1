//! `summary --merge`: several files as one run, each file its own block of ranks.
use std::path::PathBuf;

use scope_profiler_analysis::{merge_runs, MergeOptions, Run};

use crate::failure::{read_input, Failure};

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
