//! The command line for the console script, and the text reports for `print_summary`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_cli::run_session::{self, SessionValue};
use scope_profiler_cli::sigterm_guard;
use scope_profiler_cli::{after_run, dispatch, recording_path, report, Outcome, RunRequest};

use crate::run::NativeRun;

/// Parse and carry out `argv` (program name first). Returns `(exit_code, None)` when done,
/// or `(0, request)` for `run`, where `request` is a dict (`script`, `module` (None or the
/// `-m` module, then `script` is empty), `args`, `track_threads`, `track_async`, `output`,
/// `recording`, `speedscope`, `quiet`, `follow`, `no_output`, `traced` (`--recursive` or an
/// option implying it), `session`: the `session(...)` keywords of the run,
/// [`run_session::session_settings`]) that Python must carry out, then pass to
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
                if let Some(problem) = run_session::script_problem(&req.script) {
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
            d.set_item("recording", recording_path(&req.output).to_string_lossy().into_owned())?;
            d.set_item("speedscope", req.speedscope)?;
            d.set_item("quiet", req.quiet)?;
            d.set_item("follow", req.follow)?;
            d.set_item("traced", req.tracing.is_some())?;
            d.set_item("no_output", req.settings.no_output)?;
            Ok((0, Some(d)))
        }
    }
}

/// The run's `session(...)` keywords ([`run_session::session_settings`]) as a dict.
fn session_dict<'py>(py: Python<'py>, req: &RunRequest) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in run_session::session_settings(req) {
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

/// The end of `run` once the session wrote `h5` (`request`: `cli_main`'s dict; `output`,
/// `h5` absolute). Renders `output` from `h5` when that names another format (then removes
/// `h5`), prints the summary (unless quiet) and writes the speedscope file named after
/// `output`; then, without `--track-async`, the note about `event_loops` (the event-loop
/// modules the program imported). Returns the exit code: `code`, or 1 instead of 0 when
/// that failed (the error printed on stderr, naming the file, and the followed processes'
/// directory when kept).
///
/// `processes` (the directory the followed processes of `run` wrote into): their recordings
/// are first stacked after `h5`'s run, one rank block per process, this one described as
/// `pid PID: ARGV` (`argv`: the script's, module name first for `-m`); the directory is
/// removed once everything succeeded (kept on an error).
///
/// `recorded`: the run this process just wrote to `h5` (the last finalize's); used instead
/// of reading `h5` back when its `file_path` is `h5`.
#[pyfunction]
#[pyo3(signature = (request, output, h5, code, pid, argv, processes=None, recorded=None, event_loops=Vec::new()))]
#[allow(clippy::too_many_arguments)]
fn cli_after_run(
    py: Python<'_>,
    request: &Bound<'_, PyDict>,
    output: PathBuf,
    h5: PathBuf,
    code: i32,
    pid: u32,
    argv: Vec<String>,
    processes: Option<PathBuf>,
    recorded: Option<PyRef<'_, NativeRun>>,
    event_loops: Vec<String>,
) -> PyResult<i32> {
    let flag = |name: &str| -> PyResult<bool> {
        Ok(match request.get_item(name)? {
            Some(v) => v.is_truthy()?,
            None => false,
        })
    };
    let module = request.get_item("module")?.is_some_and(|m| !m.is_none());
    let quiet = flag("quiet")?;
    let recorded = recorded.filter(|r| Path::new(&r.file_path) == h5).map(|r| Arc::clone(&r.run));
    let process_label = run_session::process_label(pid, &argv, module);
    let req = RunRequest {
        script: PathBuf::new(),
        module: None,
        args: vec![],
        track_threads: flag("track_threads")?,
        track_async: false,
        output,
        speedscope: flag("speedscope")?,
        quiet,
        flush_interval: None,
        tracing: None,
        follow: processes.is_some(),
        settings: Default::default(),
    };
    let dir = processes.as_deref().map(|dir| (dir, process_label.as_str()));
    let mut code = code;
    if let Err(e) = py.detach(|| after_run(&req, &h5, dir, recorded.as_deref())) {
        let kept = match &processes {
            Some(dir) => format!("; the other processes' profiles are kept in {}", dir.display()),
            None => String::new(),
        };
        flush_python_streams(py);
        eprintln!("error: {e}{kept}");
        code = if code == 0 { 1 } else { code };
    }
    if !flag("track_async")? && !quiet {
        if let Some(note) = run_session::untracked_event_loop_note(&event_loops) {
            flush_python_streams(py);
            eprintln!("{note}");
        }
    }
    Ok(code)
}

/// Flush `sys.stdout` and `sys.stderr`, so that what Rust writes to the descriptors comes
/// after what Python printed before.
fn flush_python_streams(py: Python<'_>) {
    if let Ok(sys) = py.import("sys") {
        for name in ["stdout", "stderr"] {
            if let Ok(stream) = sys.getattr(name) {
                let _ = stream.call_method0("flush");
            }
        }
    }
}

/// `finalize_summary_title(requested, written, label, ranks) -> str | None`: the title of
/// `finalize(verbose=True)`'s summary: `requested` (`setup(output=)`) when the file was
/// written, else `"<label> (in memory, N rank[s])"` ([`report::finalize_summary_title`]).
#[pyfunction]
fn finalize_summary_title(requested: Option<&str>, written: bool, label: &str, ranks: u32) -> Option<String> {
    report::finalize_summary_title(requested, written, label, ranks)
}

/// The summary report of a run as text (same as `scope-profiler summary`).
#[pyfunction]
fn summary_text(run: &NativeRun, title: &str) -> String {
    report::summary_text(&run.run, title)
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
    run_session::profile_command_argv(&command, executable, output.as_deref(), recursive, all, mpi_calls).map_err(|e| {
        match e {
            run_session::CommandError::NoScript => pyo3::exceptions::PyValueError::new_err(e.to_string()),
            run_session::CommandError::MpiCalls => pyo3::exceptions::PyNotImplementedError::new_err(e.to_string()),
        }
    })
}

/// `tracking_upgrade(script, host, host_file) -> (names, note) | None`: a hosted script's
/// own `setup()` asking for more tracking than `run`'s session (`script` and `host`:
/// `(track_threads, track_async)`): the settings the run restarts with (sorted) and the
/// line to print on stderr, naming `host_file`; None when it asks for nothing more.
#[pyfunction]
fn tracking_upgrade(script: (bool, bool), host: (bool, bool), host_file: &str) -> Option<(Vec<&'static str>, String)> {
    run_session::tracking_upgrade(script, host, host_file)
}

/// Put the profiler's guard in front of the SIGTERM handler just installed with
/// `signal.signal()` (call it on the main thread, right after): a forked child that
/// receives SIGTERM before it sets its own handler dies by the default action, and a
/// SIGTERM handled just before the main thread blocked is sent again to it every 20 ms
/// until the Python handler calls `sigterm_taken()` (`scope_profiler_cli::sigterm_guard`).
/// Returns False (nothing done) when SIGTERM's action is the default or ignore. Raises
/// `OSError` when the OS refuses the handler.
#[pyfunction]
fn guard_sigterm() -> PyResult<bool> {
    Ok(sigterm_guard::install(libc::SIGTERM)?)
}

/// The profiler's Python-level SIGTERM handler runs: stop sending SIGTERM again to the main
/// thread (see `guard_sigterm`). True when this run of the handler is owed only to a re-sent
/// SIGTERM (the handler already ran for the last one sent from outside): the handler then
/// does nothing. Harmless when nothing was sent.
#[pyfunction]
fn sigterm_taken() -> bool {
    sigterm_guard::taken(libc::SIGTERM)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(guard_sigterm, m)?)?;
    m.add_function(wrap_pyfunction!(sigterm_taken, m)?)?;
    m.add_function(wrap_pyfunction!(tracking_upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(profile_command_argv, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(cli_after_run, m)?)?;
    m.add_function(wrap_pyfunction!(summary_text, m)?)?;
    m.add_function(wrap_pyfunction!(finalize_summary_title, m)?)?;
    Ok(())
}
