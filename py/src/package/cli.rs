//! Backs `scope_profiler._cli`, the console script: the command line (`cli_main`, the
//! `scope-profiler` grammar and its file-reading subcommands), the rules and texts of `run`
//! ([`scope_profiler_session::run_command`]), the end of `run`
//! ([`scope_profiler_session::end_of_run`]) and the text summary of `print_summary`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_analysis::SortKey;
use scope_profiler_commands::{dispatch, Outcome};
use scope_profiler_formats::text_summary;
use scope_profiler_session::end_of_run::{after_run, RunOutputs};
use scope_profiler_session::run_command::{self, RunRequest, SessionValue};
use scope_profiler_session::settings::recording_path;

use crate::native_run::NativeRun;

/// Parse and carry out `argv` (program name first). Returns `(exit_code, None)` when done,
/// or `(0, request)` for `run`, where `request` is a dict (`script`, `module` (None or the
/// `-m` module, then `script` is empty), `args`, `track_threads`, `track_async`, `output`,
/// `recording`, `speedscope`, `quiet`, `follow`, `no_output`, `traced` (`--recursive` or an
/// option implying it), `session`: the `session(...)` keywords of the run,
/// [`run_command::session_settings`]) that Python must carry out, then pass to
/// `cli_after_run`. `recording` is the HDF5 file the run writes: `output` itself, or
/// `<output>.scope-profiler.h5` when `output` names a JSON profile (rendered from it
/// afterwards). A script that is not a file: `error: ...` on stderr and exit code 2. The GIL
/// is released while files are read and exported.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<(i32, Option<Bound<'_, PyDict>>)> {
    match py.detach(|| dispatch(argv)) {
        Outcome::Exit(code) => Ok((code, None)),
        Outcome::Run(req) => {
            if req.module.is_none() {
                if let Some(problem) = run_command::script_problem(&req.script) {
                    eprintln!("error: {problem}");
                    return Ok((2, None));
                }
            }
            let d = PyDict::new(py);
            d.set_item("session", session_dict(py, &req)?)?;
            d.set_item("script", req.script.to_string_lossy().into_owned())?;
            d.set_item("module", req.module)?;
            d.set_item("args", req.args)?;
            d.set_item("track_threads", req.track_threads)?;
            d.set_item("track_async", req.track_async)?;
            d.set_item("output", req.output.to_string_lossy().into_owned())?;
            d.set_item("output_given", req.output_given)?;
            d.set_item("recording", recording_path(&req.output).to_string_lossy().into_owned())?;
            d.set_item("speedscope", req.speedscope)?;
            d.set_item("quiet", req.quiet)?;
            d.set_item("follow", req.follow)?;
            d.set_item("traced", req.tracing.is_some())?;
            d.set_item("no_output", req.settings.no_output)?;
            d.set_item("sort", req.summary.sort.name())?;
            d.set_item("top", req.summary.top)?;
            d.set_item("all_tasks", req.summary.all_tasks)?;
            Ok((0, Some(d)))
        }
    }
}

/// `run`'s output `output` (a --config file's `file_path`) checked as `-o` is: `(0, None,
/// recording)`, `recording` the HDF5 file the run writes (as `cli_main`'s `recording`), or
/// the exit code and the error's text.
#[pyfunction]
fn run_output_paths(output: PathBuf) -> (i32, Option<String>, String) {
    let recording = recording_path(&output);
    match scope_profiler_commands::failure::check_run_output(&output, &recording) {
        Ok(()) => (0, None, recording.to_string_lossy().into_owned()),
        Err(e) => (e.code(), Some(e.to_string()), String::new()),
    }
}

/// The run's `session(...)` keywords ([`run_command::session_settings`]) as a dict.
fn session_dict<'py>(py: Python<'py>, req: &RunRequest) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in run_command::session_settings(req) {
        match value {
            SessionValue::None => d.set_item(name, py.None())?,
            SessionValue::Bool(b) => d.set_item(name, b)?,
            SessionValue::Int(i) => d.set_item(name, i)?,
            SessionValue::Float(f) => d.set_item(name, f)?,
            SessionValue::Text(t) => d.set_item(name, t)?,
            SessionValue::Texts(t) => d.set_item(name, t)?,
        }
    }
    Ok(d)
}

/// `cli_after_run(output, h5, *, quiet, speedscope, track_threads, processes, pid, argv,
/// module, recorded, signalled=False) -> str | None`: the end of `run` once the session wrote `h5` (`output`,
/// `h5` absolute; [`after_run`]): renders `output` from `h5` when that names another format
/// (then removes `h5`), prints the summary (unless `quiet`) and writes the speedscope file
/// named after `output`. `processes` (the directory the followed processes of `run` wrote
/// into): their recordings are first stacked after `h5`'s run, one rank block per process,
/// this one described as `pid PID: ARGV` (`argv`: the script's, `-m` first for a `module`);
/// the directory is removed once they are written into `h5`. `recorded`: the run this process just
/// wrote, used instead of reading `h5` back when its `file_path` is `h5`. `signalled`: the run
/// ends by a signal; the merge first waits (boundedly) for followed processes still writing
/// their files ([`run_command::settle_time`]). Returns None, or
/// the error line to print when that failed (naming the file, and the processes' directory
/// when it stays, with the command that merges it). The GIL is released meanwhile.
#[pyfunction]
#[pyo3(signature = (output, h5, *, quiet, speedscope, track_threads, processes, pid, argv, module, recorded,
    sort="total", top=None, all_tasks=false, untracked_loops=Vec::new(), signalled=false))]
#[allow(clippy::too_many_arguments)]
fn cli_after_run(
    py: Python<'_>,
    output: PathBuf,
    h5: PathBuf,
    quiet: bool,
    speedscope: bool,
    track_threads: bool,
    processes: Option<String>,
    pid: u32,
    argv: Vec<String>,
    module: bool,
    recorded: Option<PyRef<'_, NativeRun>>,
    sort: &str,
    top: Option<usize>,
    all_tasks: bool,
    untracked_loops: Vec<String>,
    signalled: bool,
) -> PyResult<Option<String>> {
    let recorded = recorded.filter(|r| Path::new(&r.file_path) == h5).map(|r| Arc::clone(&r.run));
    let label = run_command::process_label(pid, &argv, module);
    let summary = text_summary::SummaryOptions {
        sort: SortKey::parse(sort).map_err(pyo3::exceptions::PyValueError::new_err)?,
        top,
        all_tasks,
        ..Default::default()
    }
    .with_cli_hints();
    let settle = run_command::settle_time(signalled);
    let outputs = RunOutputs { output, quiet, speedscope, track_threads, summary, untracked_loops, settle };
    let dir = processes.as_deref().map(|dir| (Path::new(dir), label.as_str()));
    let done = py.detach(|| after_run(&outputs, &h5, dir, recorded.as_deref()));
    let kept = processes.as_deref().filter(|dir| Path::new(dir).is_dir());
    Ok(done.err().map(|e| run_command::end_of_run_failure(&e, kept, &h5)))
}

/// `profile_not_written(error, kept) -> str`: the error line of a run whose session could
/// not write its file, naming the followed processes' directory when it stays (`kept`).
#[pyfunction]
#[pyo3(signature = (error, kept=None))]
fn profile_not_written(error: &str, kept: Option<&str>) -> String {
    run_command::profile_not_written(error, kept)
}

/// `terminated_line(signum) -> str`: the line of `run` when SIGTERM ends the script or its
/// end (the profile is written first, then the run ends by the signal).
#[pyfunction]
fn terminated_line(signum: i32) -> String {
    run_command::terminated_line(signum)
}

/// `signal_while_writing(signum, name) -> str`: the line of `run` when a signal arrives while
/// the profile is written or the followed processes' files are merged (that goes on; then
/// the run ends by the signal).
#[pyfunction]
fn signal_while_writing(signum: i32, name: &str) -> String {
    run_command::signal_while_writing(signum, name)
}

/// `calls_after_the_profile(calls) -> str | None`: the line at the exit of `run` when `calls`
/// calls were recorded after the profile was written (not in it); None for none.
#[pyfunction]
fn calls_after_the_profile(calls: usize) -> Option<String> {
    run_command::calls_after_the_profile(calls)
}

/// `plain_warning(process, category, message) -> str`: a warning the profiler raises from its
/// own code as `run` prints it, one line: `scope-profiler: Category: message`, in a followed
/// process `scope-profiler [<process>]: Category: message`.
#[pyfunction]
fn plain_warning(process: Option<&str>, category: &str, message: &str) -> String {
    run_command::plain_warning(process, category, message)
}

/// `finalize_summary_title(requested, written, label, ranks) -> str | None`: the title of
/// `finalize(verbose=True)`'s summary: `requested` (`setup(output=)`) when the file was
/// written, else `"<label> (in memory, N rank[s])"` ([`text_summary::finalize_summary_title`]).
#[pyfunction]
fn finalize_summary_title(requested: Option<&str>, written: bool, label: &str, ranks: u32) -> Option<String> {
    text_summary::finalize_summary_title(requested, written, label, ranks)
}

/// The summary report of a run as text (same as `scope-profiler summary`).
#[pyfunction]
fn summary_text(run: &NativeRun, title: &str) -> String {
    text_summary::summary_text(&run.run, title)
}

/// `profile_command_argv(command, executable, output, recursive, all, mpi_calls) ->
/// (argv, output_path)`: the child command line of `ProfileManager.profile_command`
/// (`executable -m scope_profiler run -q -o OUTPUT [--recursive] [--all] SCRIPT ARGS`, a
/// leading Python interpreter of `command` dropped). `ValueError` without a script,
/// `NotImplementedError` for `mpi_calls`.
#[pyfunction]
pub(crate) fn profile_command_argv(
    command: Vec<String>,
    executable: &str,
    output: Option<String>,
    recursive: bool,
    all: bool,
    mpi_calls: bool,
) -> PyResult<(Vec<String>, String)> {
    run_command::profile_command_argv(&command, executable, output.as_deref(), recursive, all, mpi_calls).map_err(|e| {
        match e {
            run_command::CommandError::NoScript => pyo3::exceptions::PyValueError::new_err(e.to_string()),
            run_command::CommandError::MpiCalls => pyo3::exceptions::PyNotImplementedError::new_err(e.to_string()),
        }
    })
}

/// `tracking_upgrade(script, host, host_file) -> (names, note) | None`: a hosted script's
/// own `setup()` asking for more tracking than `run`'s session (`script` and `host`:
/// `(track_threads, track_async)`): the settings the run restarts with (sorted) and the
/// line to print on stderr, naming `host_file`; None when it asks for nothing more.
#[pyfunction]
fn tracking_upgrade(script: (bool, bool), host: (bool, bool), host_file: &str) -> Option<(Vec<&'static str>, String)> {
    run_command::tracking_upgrade(script, host, host_file)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(run_output_paths, m)?)?;
    m.add_function(wrap_pyfunction!(cli_after_run, m)?)?;
    m.add_function(wrap_pyfunction!(profile_not_written, m)?)?;
    m.add_function(wrap_pyfunction!(plain_warning, m)?)?;
    m.add_function(wrap_pyfunction!(terminated_line, m)?)?;
    m.add_function(wrap_pyfunction!(signal_while_writing, m)?)?;
    m.add_function(wrap_pyfunction!(calls_after_the_profile, m)?)?;
    m.add_function(wrap_pyfunction!(tracking_upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(profile_command_argv, m)?)?;
    m.add_function(wrap_pyfunction!(summary_text, m)?)?;
    m.add_function(wrap_pyfunction!(finalize_summary_title, m)?)?;
    Ok(())
}
