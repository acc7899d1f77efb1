//! The end of `scope-profiler run` once the script's session wrote its recording (the
//! Python package calls it, then exits): the recordings of the processes it followed are
//! stacked after it ([`scope_profiler_finalize::followed`]), the output it asked for is
//! rendered from it when that names another format than HDF5, the text summary is printed
//! and, beside the output, its flame graph ([`crate::default_outputs`]) or the speedscope file
//! asked for (`--speedscope`). What it says is [`crate::run_command`]'s.
use std::borrow::Cow;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use scope_profiler_analysis::Run;
use scope_profiler_formats::export_plan::{default_file, display_label, path_stem};
use scope_profiler_formats::html_report::HtmlReport;
use scope_profiler_formats::json_profile::write_json;
use scope_profiler_formats::speedscope::{thread_tracking_would_help, write_speedscope};
use scope_profiler_formats::text_summary::{summary_report, SummaryOptions};
use scope_profiler_formats::{read_h5, Selection};
use scope_profiler_formats::{ExportError, Format};

use crate::default_outputs::{byte_budget, recorded_calls, write_flame_graph_beside, NoFlameGraph};
use crate::run_command::{self, Beside};
use scope_profiler_finalize::followed::{merge_processes, wait_for_running};

/// What the end of a run writes and prints (from its `RunRequest`).
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutputs {
    /// The file the run asked for (`-o`); the summary and the file beside it are named
    /// after it.
    pub output: PathBuf,
    /// `-q`: no summary and no `wrote` line.
    pub quiet: bool,
    /// `--speedscope`: write the speedscope file (the full timeline of every call) beside
    /// the output; without it, the run's flame graph ([`crate::default_outputs`]).
    pub speedscope: bool,
    /// The run tracked threads (else a speedscope file that cannot be drawn says how to
    /// record the program).
    pub track_threads: bool,
    /// What the printed summary shows.
    pub summary: SummaryOptions,
    /// The event-loop modules (asyncio, gevent) the program imported, when it was recorded
    /// without `--track-async`: the run then notes once that their tasks share a thread's
    /// lane ([`run_command::untracked_event_loop_note`]), unless the summary said so.
    pub untracked_loops: Vec<String>,
    /// How long to wait for followed processes still writing their files before the merge
    /// ([`run_command::settle_time`]).
    pub settle: std::time::Duration,
}

/// Standard output, what cannot be written dropped (a reader that closed the pipe ends the
/// output, not the run).
fn print_out(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

/// After Python ran a script into `h5`: print the summary (unless quiet) and write the
/// flame graph or, asked for, the speedscope file. When `outputs.output` names another format than HDF5 (`run -o
/// run.json`), `h5` is the temporary `<output>.scope-profiler.h5` the run wrote beside it:
/// the requested file is rendered from it ([`render_output`]) and it is removed once that
/// is published (a failed rendering keeps it, and the error names it). The summary and the
/// file beside the output are named after it; an HTML report holds its flame graph, nothing
/// is written beside it. Returns the path written beside the output, if any: a run whose
/// calls cannot be drawn (interleaved untracked threads) gets a warning on stderr instead.
///
/// `processes`: the private directory the followed processes wrote into and this process's
/// description; their recordings are first stacked after `h5`'s run as rank blocks and the
/// result written over `h5` ([`merge_processes`]). No recording there: as without. Once
/// that is written the directory is removed (what it held is in `h5`, whatever fails
/// after); when the merge fails it stays (the message the caller prints names it and the
/// command that merges it, [`run_command::end_of_run_failure`]).
///
/// `recorded`: the run as it was written to `h5`, still in memory in the process that wrote
/// it; then `h5` is not read back (reading a 1M-call file back cost ~10 % of `run
/// --recursive`). The caller guarantees it is exactly what `h5` holds.
pub fn after_run(
    outputs: &RunOutputs,
    h5: &Path,
    processes: Option<(&Path, &str)>,
    recorded: Option<&Run>,
) -> Result<Option<PathBuf>, String> {
    let merged = match processes {
        Some((dir, label)) => {
            wait_for_running(dir, outputs.settle);
            let merged = merge_processes(h5, dir, label)?;
            // what the followed processes recorded is in `h5` now
            let _ = std::fs::remove_dir_all(dir);
            merged
        }
        None => None,
    };
    finish_run(outputs, h5, merged, recorded)
}

/// [`after_run`] once the followed processes' recordings are stacked into `h5` (`merged`:
/// the result, None when there were none).
fn finish_run(
    outputs: &RunOutputs,
    h5: &Path,
    merged: Option<Run>,
    recorded: Option<&Run>,
) -> Result<Option<PathBuf>, String> {
    let written = outputs.output.as_path();
    let rendered = written != h5;
    let held: Cow<'_, Run> = match (merged, recorded) {
        (Some(run), _) => Cow::Owned(run),
        (None, Some(run)) => Cow::Borrowed(run),
        (None, None) => Cow::Owned(read_h5(h5).map_err(|e| e.to_string())?),
    };
    let run: &Run = &held;
    if rendered {
        render_output(run, h5, written)?;
    }
    // the file beside the output is drawn on a thread of its own while the summary is made
    // (both reconstruct the calls of a run with threads: on two cores, one costs no wall time)
    let beside = std::thread::scope(|scope| {
        let beside = scope.spawn(|| write_beside(run, outputs));
        if !outputs.quiet {
            print_summary(run, outputs);
        }
        beside.join().unwrap_or_else(|_| Err("the file beside the output could not be drawn".into()))
    });
    let beside = match beside {
        Ok(beside) => beside,
        Err(warning) => {
            eprintln!("{warning}");
            return Ok(None);
        }
    };
    if !outputs.quiet {
        print_out(&format!("\n{}\n", run_command::written_line(written, &beside)));
    }
    Ok(match beside {
        Beside::Timeline(path) | Beside::FlameGraph(path) => Some(path),
        Beside::OverBudget { .. } | Beside::Nothing => None,
    })
}

/// Print the summary of `run`, then the note about an event loop recorded without
/// `--track-async` unless the summary said it.
fn print_summary(run: &Run, outputs: &RunOutputs) {
    let report = summary_report(run, &outputs.output.display().to_string(), &outputs.summary);
    print_out(&report.text);
    if !report.advised_track_async {
        if let Some(note) = run_command::untracked_event_loop_note(&outputs.untracked_loops) {
            eprintln!("{note}");
        }
    }
}

/// What the run writes beside its output: the speedscope file asked for, else the flame
/// graph unless the output is the HTML report (which shows it). Err: the warning to print
/// when it could not be drawn or written (the profile is written and the script's exit code
/// stands).
fn write_beside(run: &Run, outputs: &RunOutputs) -> Result<Beside, String> {
    let written = outputs.output.as_path();
    let warning = |what: &str, e: &str, suggest: bool| {
        run_command::not_drawn_warning(written, what, e, suggest && !outputs.track_threads)
    };
    if outputs.speedscope {
        return write_speedscope_beside(run, written)
            .map(Beside::Timeline)
            .map_err(|e| warning("speedscope file", &e.to_string(), thread_tracking_would_help(run, &e)));
    }
    if Format::of_profile_path(written) == Format::HtmlReport {
        return Ok(Beside::Nothing);
    }
    match write_flame_graph_beside(run, written, byte_budget(recorded_calls(run))) {
        Ok(out) => Ok(Beside::FlameGraph(out)),
        Err(NoFlameGraph::OverBudget { bytes, budget }) => Ok(Beside::OverBudget { bytes, budget }),
        Err(NoFlameGraph::NotDrawn(e)) => {
            Err(warning("flame graph", &e.to_string(), thread_tracking_would_help(run, &e)))
        }
        Err(NoFlameGraph::NotWritten(e)) => Err(warning("flame graph", &e, false)),
    }
}

/// The speedscope file of `run` beside the output (`<stem>.speedscope.json`).
fn write_speedscope_beside(run: &Run, written: &Path) -> Result<PathBuf, ExportError> {
    let stem = path_stem(written);
    let out = default_file(written.parent().unwrap_or(Path::new("")), &stem, Format::Speedscope);
    let ranks: Vec<u32> = (0..run.num_ranks.max(1)).collect();
    write_speedscope(run, &ranks, &stem, &out).map(|()| out)
}

/// Write `run` (read from `h5`) to `output` in the format its name asks for - a JSON profile
/// (`.json`, `.json.gz`: every rank, the reference's `write_profile`) or an HTML report -
/// then remove `h5`. Nothing for an HDF5 name. Errors name `output` and say that `h5` is
/// kept.
pub fn render_output(run: &Run, h5: &Path, output: &Path) -> Result<(), String> {
    let kept = |e: String| format!("{e}; the recorded run is kept in {}", h5.display());
    let every_rank = || Selection::new((0..run.num_ranks.max(1)).collect(), display_label(run, &path_stem(output)));
    match Format::of_profile_path(output) {
        Format::Json => write_json(run, &every_rank(), None, output).map_err(|e| kept(e.to_string()))?,
        Format::HtmlReport => {
            let mut report = HtmlReport::new(format!("scope-profiler report: {}", output.display()));
            report.add(run, &every_rank()).map_err(|e| kept(format!("{}: {e}", output.display())))?;
            report.write(output).map_err(|e| kept(e.to_string()))?;
        }
        _ => return Ok(()), // HDF5: the recording itself
    }
    std::fs::remove_file(h5)
        .map_err(|e| format!("wrote {}, but could not remove {}: {e}", output.display(), h5.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `outer` [0, 50] holding `inner` [10, 40], and `outer` [100, 200], on rank 0.
    pub(crate) fn two_calls() -> Run {
        use arrow_array::Int64Array;
        use scope_profiler_analysis::RegionCalls;
        Run {
            region_names: vec!["outer".into(), "inner".into()],
            regions: vec![
                RegionCalls::new(0, 0, Int64Array::from(vec![0, 100]), Int64Array::from(vec![50, 200])),
                RegionCalls::new(1, 0, Int64Array::from(vec![10]), Int64Array::from(vec![40])),
            ],
            num_ranks: 1,
            ..Default::default()
        }
    }

    fn outputs(output: &Path, quiet: bool, speedscope: bool) -> RunOutputs {
        RunOutputs {
            output: output.to_path_buf(),
            quiet,
            speedscope,
            track_threads: false,
            summary: SummaryOptions::run_printout(),
            untracked_loops: Vec::new(),
            settle: Default::default(),
        }
    }

    /// Without `--speedscope`, the end of a quiet run writes the flame graph beside the
    /// output and no speedscope file, from the run it is given (the `.h5` is not read).
    #[test]
    fn a_run_writes_its_flame_graph_and_no_speedscope_file_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("run.h5");
        let svg = after_run(&outputs(&missing, true, false), &missing, None, Some(&two_calls())).unwrap();
        assert_eq!(svg, Some(dir.path().join("run.flamegraph.svg")));
        let text = std::fs::read_to_string(dir.path().join("run.flamegraph.svg")).unwrap();
        assert!(text.contains("<svg") && text.contains("outer") && text.contains("inner"));
        assert!(!dir.path().join("run.speedscope.json").exists() && !missing.exists());
    }

    /// An HTML report shows the run's flame graph: nothing is written beside it.
    #[test]
    fn nothing_is_written_beside_an_html_report_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let h5 = dir.path().join("r.html.scope-profiler.h5");
        std::fs::write(&h5, b"x").unwrap();
        let html = dir.path().join("r.html");
        assert_eq!(after_run(&outputs(&html, true, false), &h5, None, Some(&two_calls())), Ok(None));
        let mut names: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        assert_eq!(names, ["r.html"]);
    }

    /// Given the run it wrote, the end of `run` draws the speedscope file from it instead
    /// of reading the `.h5` back: here the file does not even exist.
    #[test]
    fn a_run_given_its_recorded_calls_does_not_read_its_file_back() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("never-written.h5");
        let run = two_calls();
        let quiet = outputs(&missing, true, true);
        assert!(after_run(&quiet, &missing, None, None).is_err(), "without the run, the file is read");
        let speedscope = after_run(&quiet, &missing, None, Some(&run)).unwrap().expect("a speedscope file");
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&speedscope).unwrap()).unwrap();
        let events = doc["profiles"][0]["events"].as_array().unwrap();
        let kinds: Vec<(&str, u64)> =
            events.iter().map(|e| (e["type"].as_str().unwrap(), e["frame"].as_u64().unwrap())).collect();
        // outer [0, 50] holds inner [10, 40]; outer [100, 200] alone (frames: outer 0, inner 1)
        assert_eq!(kinds, [("O", 0), ("O", 1), ("C", 1), ("C", 0), ("O", 0), ("C", 0)]);
        assert!(!missing.exists());
    }

    #[test]
    fn an_hdf5_output_is_not_rendered_and_its_recording_stays() {
        let dir = tempfile::tempdir().unwrap();
        let h5 = dir.path().join("run.h5");
        std::fs::write(&h5, b"x").unwrap();
        assert_eq!(render_output(&Run::default(), &h5, &dir.path().join("other.h5")), Ok(()));
        assert!(h5.exists());
    }
}
