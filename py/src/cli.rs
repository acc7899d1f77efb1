//! The command line for the console script, and the text reports for `print_summary`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_cli::{dispatch, Outcome, RunRequest};
use scope_profiler_finalize::end_of_run::{after_run, RunOutputs};
use scope_profiler_finalize::run_session::{self, SessionValue};
use scope_profiler_finalize::settings::recording_path;
use scope_profiler_formats::text_summary;

use pyo3::exceptions::{PyImportError, PyOSError, PyValueError};

use crate::manager_api::within;
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
    let outputs = RunOutputs { output, quiet, speedscope: flag("speedscope")?, track_threads: flag("track_threads")? };
    let dir = processes.as_deref().map(|dir| (dir, process_label.as_str()));
    let mut code = code;
    if let Err(e) = py.detach(|| after_run(&outputs, &h5, dir, recorded.as_deref())) {
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

/// `join_non_daemon_threads()`: wait for the script's non-daemon threads (other than the
/// main thread), as interpreter shutdown would, so their calls are recorded before the
/// session finalizes. An exception raised while waiting (a signal handler's) propagates.
#[pyfunction]
fn join_non_daemon_threads(py: Python<'_>) -> PyResult<()> {
    let threading = py.import("threading")?;
    let main = threading.call_method0("main_thread")?;
    for thread in threading.call_method0("enumerate")?.try_iter()? {
        let thread = thread?;
        if !thread.is(&main)
            && !thread.getattr("daemon")?.is_truthy()?
            && thread.call_method0("is_alive")?.is_truthy()?
        {
            thread.call_method0("join")?;
        }
    }
    Ok(())
}

/// `os.path.dirname(os.path.abspath(path))`.
fn directory_of(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<String> {
    let os_path = py.import("os.path")?;
    os_path.call_method1("dirname", (os_path.call_method1("abspath", (path,))?,))?.extract()
}

/// The `warnings.showwarning` of `run` and of the processes it follows: a warning raised
/// from the package's own files is one plain line ([`run_session::plain_warning`]: in a
/// followed process naming it, `_follow.describe_process()`); any other goes to the
/// `showwarning` it replaced.
#[pyclass(frozen, module = "scope_profiler._cli")]
pub struct PlainWarnings {
    shown: Py<PyAny>,
    package_dir: String,
}

#[pymethods]
impl PlainWarnings {
    /// Show one warning (`warnings.showwarning`'s arguments); a write to a closed stream
    /// (`OSError`, `ValueError`) loses the warning, as `warnings`' own does.
    #[pyo3(signature = (message, category, filename, lineno, file=None, line=None))]
    #[allow(clippy::too_many_arguments)]
    fn __call__(
        &self,
        py: Python<'_>,
        message: Bound<'_, PyAny>,
        category: Bound<'_, PyAny>,
        filename: Bound<'_, PyAny>,
        lineno: Bound<'_, PyAny>,
        file: Option<Bound<'_, PyAny>>,
        line: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if directory_of(py, &filename)? != self.package_dir {
            self.shown.bind(py).call1((message, category, filename, lineno, file, line))?;
            return Ok(());
        }
        let out = match file.filter(|f| !f.is_none()) {
            Some(file) => file,
            None => py.import("sys")?.getattr("stderr")?,
        };
        // in a process `run` follows, which one (stop 25 new-user trial)
        let follow = py.import("sys")?.getattr("modules")?.call_method1("get", ("scope_profiler._follow",))?;
        let mut who = None;
        if !follow.is_none() && follow.getattr("followed_pid")?.eq(std::process::id())? {
            who = Some(follow.call_method0("describe_process")?.extract::<String>()?);
        }
        let category: String = category.getattr("__name__")?.extract()?;
        let text = run_session::plain_warning(who.as_deref(), &category, &message.str()?.to_string());
        match out.call_method1("write", (text,)) {
            Err(e) if e.is_instance_of::<PyOSError>(py) || e.is_instance_of::<PyValueError>(py) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Ok(()),
        }
    }
}

/// `show_profiler_warnings_plainly()`: under `run` (and in the processes it follows) a
/// warning the profiler raises from its own code is printed as `scope-profiler:
/// RuntimeWarning: ...`, without the profiler's file and line (installs [`PlainWarnings`]
/// as `warnings.showwarning`, once). Every other warning is shown as before.
#[pyfunction]
fn show_profiler_warnings_plainly(py: Python<'_>) -> PyResult<()> {
    let warnings = py.import("warnings")?;
    let shown = warnings.getattr("showwarning")?;
    if shown.is_instance_of::<PlainWarnings>() {
        return Ok(());
    }
    let package_dir = directory_of(py, &py.import("scope_profiler")?.getattr("__file__")?)?;
    warnings.setattr("showwarning", PlainWarnings { shown: shown.unbind(), package_dir })
}

/// `print_script_error(exc, runner)`: print the script's traceback on stderr without the
/// frames of `runner` (the file that ran it) and runpy's.
#[pyfunction]
fn print_script_error(py: Python<'_>, exc: &Bound<'_, PyAny>, runner: &str) -> PyResult<()> {
    let runpy: String = py.import("runpy")?.getattr("__file__")?.extract()?;
    // runpy's frames are "<frozen runpy>" where the module is frozen (3.11+ builds)
    let ours = [runner, runpy.as_str(), "<frozen runpy>"];
    let mut tb = exc.getattr("__traceback__")?;
    while !tb.is_none() {
        let file: String = tb.getattr("tb_frame")?.getattr("f_code")?.getattr("co_filename")?.extract()?;
        if !ours.contains(&file.as_str()) {
            break;
        }
        tb = tb.getattr("tb_next")?;
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("file", py.import("sys")?.getattr("stderr")?)?;
    py.import("traceback")?.call_method("print_exception", (exc.get_type(), exc, tb), Some(&kwargs))?;
    Ok(())
}

/// `run_as_main(script, traced, module)`: run `script` as `__main__` (`module`: that module,
/// as `python -m` does: `runpy.run_module(alter_sys=True)`); `traced`, inside the
/// manager's region named after the script's file name (the reference's root region of
/// `run --recursive`) or the module's name. The script's exceptions propagate.
#[pyfunction]
fn run_as_main(py: Python<'_>, script: &str, traced: bool, module: Option<&str>) -> PyResult<()> {
    let run = |_: Bound<'_, PyAny>| -> PyResult<()> {
        let runpy = py.import("runpy")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("run_name", "__main__")?;
        match module {
            Some(module) => {
                kwargs.set_item("alter_sys", true)?;
                runpy.call_method("run_module", (module,), Some(&kwargs))?
            }
            None => runpy.call_method("run_path", (script,), Some(&kwargs))?,
        };
        Ok(())
    };
    if !traced {
        return run(py.None().into_bound(py));
    }
    let name = match module {
        Some(module) => module.to_string(),
        None => py.import("os.path")?.call_method1("basename", (script,))?.extract()?,
    };
    let manager = py.import("scope_profiler._manager")?.getattr("ProfileManager")?;
    within(&manager.call_method1("region", (name,))?, run).map(drop)
}

/// `module_not_found(module) -> bool`: whether `python -m module` would say "No module
/// named": looked up as it does, the working directory first on `sys.path` (the console
/// script's `sys.path[0]` is its bin directory; issue 14, second new-user trial).
#[pyfunction]
fn module_not_found(py: Python<'_>, module: &str) -> PyResult<bool> {
    let path = py.import("sys")?.getattr("path")?;
    path.call_method1("insert", (0, py.import("os")?.call_method0("getcwd")?))?;
    let found = py.import("importlib.util").and_then(|util| util.call_method1("find_spec", (module,)));
    path.call_method1("pop", (0,))?;
    match found {
        Ok(spec) => Ok(spec.is_none()),
        Err(e) if e.is_instance_of::<PyImportError>(py) || e.is_instance_of::<PyValueError>(py) => Ok(true),
        Err(e) => Err(e),
    }
}

/// `end_hosting(manager)`: the script's own `setup()`/`session()` no longer join `run`'s
/// session (`_host_config` None, `_joined` emptied): ending it now finalizes the run.
#[pyfunction]
pub(crate) fn end_hosting(manager: &Bound<'_, PyAny>) -> PyResult<()> {
    manager.setattr("_host_config", manager.py().None())?;
    manager.getattr("_joined")?.call_method0("clear")?;
    Ok(())
}

/// `cli_end_of_run(request, output, recording, processes, pid, argv, code) -> int`: the end of
/// `run` once the session wrote `recording`: nothing more with `--no-output` (the session
/// printed its summary); else `cli_after_run` with the run the session just wrote
/// (`ProfileManager._last_written_run`) and the event-loop modules loaded (`asyncio`,
/// `gevent`). The exit code: `code`, or 1 instead of 0 when that failed.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cli_end_of_run(
    py: Python<'_>,
    request: &Bound<'_, PyDict>,
    output: PathBuf,
    recording: PathBuf,
    processes: Option<PathBuf>,
    pid: u32,
    argv: Vec<String>,
    code: i32,
) -> PyResult<i32> {
    if request.get_item("no_output")?.map(|v| v.is_truthy()).transpose()?.unwrap_or(false) {
        return Ok(code);
    }
    let manager = py.import("scope_profiler._manager")?.getattr("ProfileManager")?;
    let recorded = manager.getattr("_last_written_run")?;
    let recorded = recorded.extract::<Option<PyRef<'_, NativeRun>>>()?;
    let modules = py.import("sys")?.getattr("modules")?;
    let mut event_loops = Vec::new();
    for name in ["asyncio", "gevent"] {
        if modules.contains(name)? {
            event_loops.push(name.to_string());
        }
    }
    cli_after_run(py, request, output, recording, code, pid, argv, processes, recorded, event_loops)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PlainWarnings>()?;
    m.add_function(wrap_pyfunction!(join_non_daemon_threads, m)?)?;
    m.add_function(wrap_pyfunction!(show_profiler_warnings_plainly, m)?)?;
    m.add_function(wrap_pyfunction!(print_script_error, m)?)?;
    m.add_function(wrap_pyfunction!(run_as_main, m)?)?;
    m.add_function(wrap_pyfunction!(module_not_found, m)?)?;
    m.add_function(wrap_pyfunction!(end_hosting, m)?)?;
    m.add_function(wrap_pyfunction!(cli_end_of_run, m)?)?;
    m.add_function(wrap_pyfunction!(tracking_upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(profile_command_argv, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(cli_after_run, m)?)?;
    m.add_function(wrap_pyfunction!(summary_text, m)?)?;
    m.add_function(wrap_pyfunction!(finalize_summary_title, m)?)?;
    Ok(())
}
