//! `scope-profiler export`: many files in parallel (rayon), a progress bar (indicatif,
//! hidden when stderr is not a terminal), one error line per failed file, never stopping
//! the batch at the first bad file.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use scope_profiler_formats::{read_h5, speedscope::write_speedscope};

use crate::args::Format;

/// Output path for `input` in `dir`: the input's stem plus the format's suffix.
pub fn output_path(input: &Path, dir: &Path, format: Format) -> PathBuf {
    let stem = input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "profile".into());
    match format {
        Format::Speedscope => dir.join(format!("{stem}.speedscope.json")),
    }
}

/// Convert one file. The error names the file and the problem.
pub fn export_one(input: &Path, output: &Path, format: Format) -> Result<(), String> {
    let run = read_h5(input).map_err(|e| e.to_string())?;
    match format {
        Format::Speedscope => {
            let ranks: Vec<u32> = (0..run.num_ranks.max(1)).collect();
            let label = input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            write_speedscope(&run, &ranks, &label, output).map_err(|e| format!("{}: {e}", input.display()))
        }
    }
}

/// Export every file; returns the number of failures (each already reported on stderr).
pub fn export_many(files: &[PathBuf], dir: &Path, format: Format, jobs: Option<usize>) -> Result<usize, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    let bar = ProgressBar::with_draw_target(Some(files.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed_precise} eta {eta}")
            .expect("static progress template is valid"),
    );
    let failures = AtomicUsize::new(0);
    let work = || {
        files.par_iter().for_each(|input| {
            let out = output_path(input, dir, format);
            if let Err(msg) = export_one(input, &out, format) {
                failures.fetch_add(1, Ordering::Relaxed);
                bar.suspend(|| eprintln!("error: {msg}"));
            }
            bar.inc(1);
        })
    };
    match jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| format!("cannot start {n} workers: {e}"))?
            .install(work),
        None => work(),
    }
    bar.finish_and_clear();
    Ok(failures.into_inner())
}
