//! `scope-profiler dataset RUNS... -o DIR [--append] [-j N]`: many run files as one Parquet
//! dataset (`scope_profiler_formats::dataset`, `docs/datasets.md`), converted in parallel
//! with a progress bar (indicatif, hidden when stderr is not a terminal). A file that cannot
//! be read gets one error line and the others are written; the exit code is then 1.
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use scope_profiler_formats::dataset::{build, find_runs};

/// Build (or with `append`, extend) the dataset `dir` from the run files and directories
/// `inputs`, `jobs` files at a time (default: one per core). Returns the exit code: 0, or 1
/// when a file failed, no run file was given, or the dataset could not be written.
pub fn execute(inputs: &[PathBuf], dir: &Path, append: bool, jobs: Option<usize>) -> i32 {
    let (files, missing) = find_runs(inputs);
    for (_, message) in &missing {
        eprintln!("error: {message}");
    }
    if files.is_empty() {
        eprintln!("error: no run file (.h5, .hdf5, .json, .json.gz) in {}", shown(inputs));
        return 1;
    }
    let bar = ProgressBar::with_draw_target(Some(files.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed_precise} eta {eta}")
            .expect("static progress template is valid"),
    );
    // more workers than files only costs thread start-up
    let jobs = jobs.map(|n| n.clamp(1, files.len().clamp(1, 1024)));
    let outcome = build(&files, dir, append, jobs, &|n| bar.inc(n as u64));
    bar.finish_and_clear();
    let out = match outcome {
        Ok(out) => out,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    for (path, run) in &out.present {
        eprintln!("note: {}: run {run} is already in the dataset; skipped", path.display());
    }
    for (_, message) in &out.failed {
        eprintln!("error: {message}");
    }
    let calls: i64 = out.added.iter().map(|r| r.num_calls).sum();
    eprintln!("added {} run(s), {calls} call(s), to {}", out.added.len(), dir.display());
    if out.failed.is_empty() && missing.is_empty() {
        0
    } else {
        eprintln!("{} file(s) failed", out.failed.len() + missing.len());
        1
    }
}

fn shown(inputs: &[PathBuf]) -> String {
    inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use crate::{dispatch, Outcome};
    use scope_profiler_formats::dataset::{read_runs, RUNS_FILE};

    fn exit(argv: &[&str]) -> i32 {
        match dispatch(argv.iter().copied()) {
            Outcome::Exit(code) => code,
            Outcome::Run(_) => panic!("not a run"),
        }
    }

    #[test]
    fn a_bad_file_fails_alone_and_append_skips_runs_present() {
        let tmp = tempfile::tempdir().unwrap();
        let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/reference");
        let bad = tmp.path().join("bad.h5");
        std::fs::write(&bad, b"not hdf5").unwrap();
        let out = tmp.path().join("ds");
        let (bad, out_s) = (bad.to_str().unwrap(), out.to_str().unwrap());
        assert_eq!(exit(&["sp", "dataset", reference, bad, "-o", out_s, "-j", "2"]), 1);
        assert_eq!(read_runs(&out.join(RUNS_FILE)).unwrap().len(), 4, "every other run is written");
        assert_eq!(exit(&["sp", "dataset", reference, "-o", out_s]), 1, "an existing dataset needs --append");
        assert_eq!(exit(&["sp", "dataset", reference, "-o", out_s, "--append"]), 0);
        assert_eq!(read_runs(&out.join(RUNS_FILE)).unwrap().len(), 4, "runs present are skipped");
        assert_eq!(exit(&["sp", "dataset", tmp.path().join("empty").to_str().unwrap(), "-o", out_s]), 1);
    }
}
