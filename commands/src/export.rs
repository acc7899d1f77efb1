//! `scope-profiler export`: many files × one or more formats in parallel (rayon), a
//! progress bar (indicatif, hidden when stderr is not a terminal), one error line per
//! failed file and format, never stopping the batch at the first bad file.
//!
//! Every format is one entry of `scope_profiler_formats::registry`: its name, the suffix of
//! its files (`scope_profiler_formats::export_plan` names them, the rules the Python exports
//! follow too) and its writer, `(run, selection, path) -> paths written`.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use scope_profiler_analysis::{rank_call_arrays, set_aside_report, Run};
use scope_profiler_formats::export_plan::{self, display_label, path_stem};
use scope_profiler_formats::{ExportError, Format, Selection};

use crate::failure::{read_input, Failure};

/// `scope-profiler export`: every file of `files` into every format of `formats` in
/// `output_dir` ([`export_many`]), then the totals on stderr. The exit code: 0, or 2 when a
/// file failed for a usage error, else 1.
pub fn execute(formats: &[Format], files: &[PathBuf], output_dir: &Path, ranks: &[u32], jobs: Option<usize>) -> i32 {
    match export_many(files, output_dir, formats, ranks, jobs) {
        Ok(done) => {
            if done.set_aside > 0 {
                eprintln!(
                    "{} call(s) in {} file(s) were set aside (they do not nest in their lane) and left out of the exports",
                    done.set_aside, done.files_with_set_aside
                );
            }
            if done.failed_files == 0 {
                eprintln!("exported {} file(s) to {}", files.len(), output_dir.display());
                0
            } else {
                eprintln!("{} of {} file(s) failed", done.failed_files, files.len());
                if done.usage_failures > 0 {
                    2
                } else {
                    1
                }
            }
        }
        Err(msg) => {
            eprintln!("error: {msg}");
            1
        }
    }
}

/// Output path for `input` in `dir`: the input's stem plus the format's suffix.
pub fn output_path(input: &Path, dir: &Path, format: Format) -> PathBuf {
    export_plan::default_file(dir, &path_stem(input), format)
}

/// The selection the CLI exports: `ranks` (all ranks of the run when empty), every region.
/// Errors: a rank the run does not have (a usage error).
pub fn cli_selection(run: &Run, ranks: &[u32], label: String) -> Result<Selection, Failure> {
    let ranks: Vec<u32> = if ranks.is_empty() { (0..run.num_ranks.max(1)).collect() } else { ranks.to_vec() };
    if let Some(bad) = ranks.iter().find(|&&r| r >= run.num_ranks.max(1)) {
        return Err(Failure::usage(format!(
            "Invalid rank requested: {bad} (the run has {} rank(s))",
            run.num_ranks.max(1)
        )));
    }
    Ok(Selection::new(ranks, label))
}

/// What exporting one input produced.
#[derive(Debug, Default)]
pub struct FileOutcome {
    /// One message per failed format (a file that could not be read: one message).
    pub errors: Vec<String>,
    /// Whether the file failed for a usage error (of another kind, a rank it does not
    /// have): the batch then exits 2.
    pub usage: bool,
    /// Calls set aside by the reconstruction (they do not nest in their lane, so every
    /// export leaves them out), summed over the selected ranks.
    pub set_aside: usize,
    /// One note per rank with set-aside calls ([`set_aside_report`]: count, region, lane,
    /// times), prefixed with the input's path.
    pub notes: Vec<String>,
}

/// Convert one input into every format of `formats` under the output stem `out_stem`.
pub fn export_one(input: &Path, dir: &Path, out_stem: &str, formats: &[Format], ranks: &[u32]) -> FileOutcome {
    let failed = |e: Failure| FileOutcome { usage: e.usage, errors: vec![e.message], ..FileOutcome::default() };
    let run = match read_input(input) {
        Ok(r) => r,
        Err(e) => return failed(e),
    };
    let sel = match cli_selection(&run, ranks, display_label(&run, &path_stem(input))) {
        Ok(s) => s,
        Err(e) => return failed(e.context(input.display())),
    };
    let errors: Vec<String> = formats
        .par_iter()
        .filter_map(|&fmt| {
            let out = export_plan::default_file(dir, out_stem, fmt);
            if same_file(input, &out) {
                // `export json runs/a.json -o runs/`: the output is the input itself
                return Some(format!(
                    "{}: {}: the output {} is the input file; choose another -o directory",
                    input.display(),
                    fmt.name(),
                    out.display()
                ));
            }
            fmt.write(&run, &sel, &out)
                .err()
                .map(|e| format!("{}: {}: {}", input.display(), fmt.name(), no_calls_text(&run, e)))
        })
        .collect();
    let mut outcome = FileOutcome { errors, ..FileOutcome::default() };
    set_aside_notes(&run, &sel.ranks, input, &mut outcome);
    outcome
}

/// Whether `a` and `b` name one existing file (same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The message of a writer's error; "no calls" of a run that has none at all says so
/// (rather than "No calls recorded for the requested ranks" where no rank was requested).
pub fn no_calls_text(run: &Run, e: ExportError) -> String {
    match e {
        ExportError::NoCalls if run.regions.iter().all(|r| r.is_empty()) => {
            "the run has no calls (nothing was recorded between setup and finalize): nothing to draw or export".into()
        }
        e => e.to_string(),
    }
}

/// Count and describe the calls the writers set aside on `ranks`. Calls are set aside only
/// on ranks with lanes (a thread table), so only those ranks are reconstructed again.
fn set_aside_notes(run: &Run, ranks: &[u32], input: &Path, outcome: &mut FileOutcome) {
    for &rank in ranks {
        if run.rank_threads(rank).next().is_none() {
            continue;
        }
        if let Ok((rows, calls)) = rank_call_arrays(run, rank) {
            outcome.set_aside += calls.set_aside.len();
            if let Some(msg) = set_aside_report(run, rank, &rows, &calls) {
                outcome.notes.push(format!("{}: {msg}", input.display()));
            }
        }
    }
}

/// Output stems, one per input: the input's stem, `_2`, `_3`, ... on a repeat (two inputs
/// named `a/run.h5` and `b/run.h5` must not overwrite each other; [`export_plan::unique_stems`]).
pub fn output_stems(files: &[PathBuf]) -> Vec<String> {
    export_plan::unique_stems(&files.iter().map(|f| path_stem(f)).collect::<Vec<_>>())
}

/// What a batch export did, over all its files.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Files with at least one failed format.
    pub failed_files: usize,
    /// Of those, files that failed for a usage error ([`FileOutcome::usage`]).
    pub usage_failures: usize,
    /// Calls set aside (left out of every export because they do not nest in their lane),
    /// summed over all files and selected ranks.
    pub set_aside: usize,
    /// Files with at least one set-aside call.
    pub files_with_set_aside: usize,
}

/// Export every file into every format. Each failure is reported on stderr as
/// `error: FILE: FORMAT: message`, each rank with set-aside calls as `note: FILE: ...`.
pub fn export_many(
    files: &[PathBuf],
    dir: &Path,
    formats: &[Format],
    ranks: &[u32],
    jobs: Option<usize>,
) -> Result<BatchOutcome, String> {
    let created =
        dir.ancestors().take_while(|a| !a.as_os_str().is_empty() && !a.exists()).last().map(Path::to_path_buf);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create output directory {}: {e}", dir.display()))?;
    let mut formats = formats.to_vec();
    formats.sort();
    formats.dedup();
    let stems = output_stems(files);
    let bar = ProgressBar::with_draw_target(Some(files.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed_precise} eta {eta}")
            .expect("static progress template is valid"),
    );
    let failures = AtomicUsize::new(0);
    let usage_failures = AtomicUsize::new(0);
    let set_aside = AtomicUsize::new(0);
    let files_with_set_aside = AtomicUsize::new(0);
    let work = || {
        files.par_iter().zip(stems.par_iter()).for_each(|(input, out_stem)| {
            let outcome = export_one(input, dir, out_stem, &formats, ranks);
            if !outcome.errors.is_empty() {
                failures.fetch_add(1, Ordering::Relaxed);
                if outcome.usage {
                    usage_failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            if outcome.set_aside > 0 {
                set_aside.fetch_add(outcome.set_aside, Ordering::Relaxed);
                files_with_set_aside.fetch_add(1, Ordering::Relaxed);
            }
            if !outcome.errors.is_empty() || !outcome.notes.is_empty() {
                bar.suspend(|| {
                    for msg in &outcome.errors {
                        eprintln!("error: {msg}");
                    }
                    for msg in &outcome.notes {
                        eprintln!("note: {msg}");
                    }
                });
            }
            bar.inc(1);
        })
    };
    match jobs {
        // more workers than files only costs thread start-up (and -j 100000 would start
        // 100000 threads): at most one per file, and never more than 1024
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.clamp(1, files.len().clamp(1, 1024)))
            .build()
            .map_err(|e| format!("cannot start {n} workers: {e}"))?
            .install(work),
        None => work(),
    }
    bar.finish_and_clear();
    if let Some(top) = created {
        remove_empty(dir, &top);
    }
    Ok(BatchOutcome {
        failed_files: failures.into_inner(),
        usage_failures: usage_failures.into_inner(),
        set_aside: set_aside.into_inner(),
        files_with_set_aside: files_with_set_aside.into_inner(),
    })
}

/// Remove `dir` and its ancestors up to `top` while they are empty: the output directories
/// a batch created and then wrote nothing into (every file failed: `export prof run.h5
/// --rank 9 -o e4` leaves no empty `e4/`).
fn remove_empty(dir: &Path, top: &Path) {
    for a in dir.ancestors() {
        if std::fs::remove_dir(a).is_err() || a == top {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse_formats;

    /// A batch whose every file failed leaves no output directory it created; a directory
    /// that existed, or got a file, stays.
    #[test]
    fn a_batch_that_wrote_nothing_leaves_no_directory_it_created() {
        let base = std::env::temp_dir().join(format!("sp-export-empty-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let bad = base.join("notes.txt");
        std::fs::write(&bad, b"not a profile").unwrap();
        let out = base.join("new/deeper");
        let outcome = export_many(std::slice::from_ref(&bad), &out, &[Format::Folded], &[], None).unwrap();
        assert_eq!(outcome.failed_files, 1);
        assert!(!base.join("new").exists(), "the created directories are removed");
        let existing = base.join("existing");
        std::fs::create_dir_all(&existing).unwrap();
        export_many(&[bad], &existing, &[Format::Folded], &[], None).unwrap();
        assert!(existing.is_dir(), "a directory that existed stays");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn every_format_has_a_writer_with_its_own_suffix() {
        let mut suffixes: Vec<&str> = Format::cli_formats().map(Format::file_suffix).collect();
        let n = suffixes.len();
        suffixes.sort();
        suffixes.dedup();
        assert_eq!(suffixes.len(), n);
        for f in Format::cli_formats() {
            assert!(f.writer().is_some(), "{f:?}");
            assert_eq!(parse_formats(f.name()).unwrap().0, vec![f]);
        }
    }

    #[test]
    fn format_lists_parse_and_unknown_names_list_the_valid_ones() {
        assert_eq!(
            parse_formats("folded, Timeline,parquet").unwrap().0,
            vec![Format::Folded, Format::TimelineSvg, Format::Parquet]
        );
        let e = parse_formats("folded,gif").unwrap_err();
        assert!(e.contains("unknown format 'gif'") && e.contains("speedscope") && e.contains("pprof"), "{e}");
        assert!(parse_formats(",").is_err());
    }

    #[test]
    fn repeated_stems_get_a_number() {
        let files: Vec<PathBuf> =
            ["a/run.h5", "b/run.h5", "c/other.h5", "d/run.h5"].iter().map(PathBuf::from).collect();
        assert_eq!(output_stems(&files), vec!["run", "run_2", "other", "run_3"]);
    }
}
