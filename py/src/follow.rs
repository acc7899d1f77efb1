//! Backs `scope_profiler._follow` (`run` following the script's Python processes): how a
//! followed process is described and which processes are multiprocessing's own servers
//! ([`scope_profiler_finalize::run_session`]).
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_finalize::run_session::{self, ProcessFacts};

/// `describe_process(pid, parent_pid, multiprocessing_name, multiprocessing_child, forked,
/// argv, orig_argv) -> str`: the process as the merged run's `processes` metadata names it,
/// `pid N (child of P): WHAT` (`pid N: WHAT` without `parent_pid`), `WHAT` being a
/// multiprocessing process's name, `fork: ARGV` for a forked process, else its command line
/// (`orig_argv`), one line of at most 200 characters.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn describe_process(
    pid: u32,
    parent_pid: Option<u32>,
    multiprocessing_name: Option<String>,
    multiprocessing_child: bool,
    forked: bool,
    argv: Vec<String>,
    orig_argv: Vec<String>,
) -> String {
    run_session::describe_process(&ProcessFacts {
        pid,
        parent_pid,
        multiprocessing_name,
        multiprocessing_child,
        forked,
        argv,
        orig_argv,
    })
}

/// `multiprocessing_helper(argv) -> bool`: whether `argv` (`sys.orig_argv`) starts one of
/// multiprocessing's own server processes (the forkserver, the resource tracker: `python -c
/// 'from multiprocessing. ...'`), not a process of the program.
#[pyfunction]
fn multiprocessing_helper(argv: Vec<String>) -> bool {
    run_session::multiprocessing_helper(&argv)
}

/// `private_directory(output, pid) -> str`: the directory the processes `run` (process
/// `pid`) follows record into, `<output>.procs-<pid>`.
#[pyfunction]
fn private_directory(output: &str, pid: u32) -> String {
    run_session::private_directory(output, pid)
}

/// `followed_recording(directory, pid) -> str`: the file a followed process records into,
/// `<directory>/<start ns, 20 digits>-<pid>.h5` (now on the wall clock, `time.time_ns()`).
#[pyfunction]
fn followed_recording(directory: &str, pid: u32) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    run_session::followed_recording(directory, now.as_nanos(), pid)
}

/// `started_marker(recording) -> str`: the `.started` marker beside a followed process's
/// recording (its extension replaced).
#[pyfunction]
fn started_marker(recording: &str) -> String {
    run_session::started_marker(recording)
}

/// `describe_current_process(parent, forked) -> str`: `describe_process` of this process
/// (`os.getpid()`; its parent `os.getppid()` unless `parent`; the `multiprocessing`
/// process's name when that module is loaded; `sys.argv`, `sys.orig_argv`); `forked`:
/// forked from a followed process.
#[pyfunction]
fn describe_current_process(py: Python<'_>, parent: bool, forked: bool) -> PyResult<String> {
    let os = py.import("os")?;
    let sys = py.import("sys")?;
    let mp_process = sys.getattr("modules")?.call_method1("get", ("multiprocessing.process",))?;
    let (name, child) = if mp_process.is_none() {
        (None, false)
    } else {
        let name = mp_process.call_method0("current_process")?.getattr("name")?.extract()?;
        (Some(name), !mp_process.call_method0("parent_process")?.is_none())
    };
    let argv: Vec<String> = sys.getattr("argv")?.extract()?;
    let orig_argv = match sys.getattr("orig_argv") {
        Ok(orig) => orig.extract()?,
        Err(_) => argv.clone(),
    };
    let parent_pid = if parent { None } else { Some(os.call_method0("getppid")?.extract()?) };
    Ok(describe_process(os.call_method0("getpid")?.extract()?, parent_pid, name, child, forked, argv, orig_argv))
}

/// `os._exit` wrapped by `write_before_os_exit`: in the process that wrapped it, `finish`
/// runs first; then the exit goes ahead through the `os._exit` it replaced.
#[pyclass(frozen, module = "scope_profiler._follow")]
pub struct ExitHook {
    finish: Py<PyAny>,
    previous: Py<PyAny>,
    pid: u32,
}

#[pymethods]
impl ExitHook {
    /// `os._exit(status)`: `finish(status)` first (in the wrapping process; whatever it
    /// raises is one line on stderr), then the replaced `os._exit(status)`.
    fn __call__(&self, py: Python<'_>, status: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if std::process::id() == self.pid {
            if let Err(e) = self.finish.bind(py).call1((&status,)) {
                let text = run_session::exit_write_failure(&e.value(py).str()?.to_string());
                crate::cli::print_to_stderr(py, &text)?;
            }
        }
        Ok(self.previous.bind(py).call1((status,))?.unbind())
    }

    /// Put back the `os._exit` this hook replaced, if it is still `os._exit`.
    fn undo(slf: &Bound<'_, Self>) -> PyResult<()> {
        let os = slf.py().import("os")?;
        if os.getattr("_exit")?.is(slf) {
            os.setattr("_exit", slf.get().previous.bind(slf.py()))?;
        }
        Ok(())
    }
}

/// `write_before_os_exit(finish) -> undo`: wrap `os._exit`, which runs no cleanup (no
/// `atexit`, no `finally`), so that in this process `finish(status)` runs first - writing
/// the profile - and the exit goes ahead whatever happened ([`ExitHook`]). A forked child
/// inherits the wrapper and passes through it. Returns the callable that takes it out
/// again. Used by `run` for its own process and by every followed process.
#[pyfunction]
fn write_before_os_exit<'py>(py: Python<'py>, finish: Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let os = py.import("os")?;
    let previous = os.getattr("_exit")?.unbind();
    let hook = Bound::new(py, ExitHook { finish, previous, pid: std::process::id() })?;
    os.setattr("_exit", &hook)?;
    hook.getattr("undo")
}

/// `finish_followed(session, describe) -> bool`: write the file of a followed process's own
/// recording (`session`, entered at its start): nothing when the program replaced or
/// finalized the run itself; the run dropped (no file) when it recorded nothing but the
/// session or the run that started it is over; else its metadata `process` set to
/// `describe()` and the session ended (it writes the file). False when that write failed
/// (one line on stderr; the program's exit status stands), True otherwise.
#[pyfunction]
fn finish_followed(py: Python<'_>, session: &Bound<'_, PyAny>, describe: &Bound<'_, PyAny>) -> PyResult<bool> {
    let module = py.import("scope_profiler._manager")?;
    let manager = module.getattr("ProfileManager")?;
    let config = manager.getattr("_config")?;
    if config.is_none()
        || !manager.getattr("_host_config")?.is(&config)
        || !manager.getattr("_configured")?.is_truthy()?
    {
        return Ok(true); // the program replaced or finalized the run itself
    }
    crate::cli::end_hosting(&manager)?;
    let file_path = config.getattr("file_path")?;
    let os_path = py.import("os.path")?;
    let directory = os_path.call_method1("dirname", (&file_path,))?;
    let native = config.getattr("_native")?;
    let empty = !native.is_none()
        && native.getattr("sidecar_path")?.is_none()
        && !native.call_method0("has_completed_calls")?.is_truthy()?
        && native.call_method0("open_region_names")?.eq(vec![session.getattr("ROOT_REGION_NAME")?])?;
    if empty || !os_path.call_method1("isdir", (directory,))?.is_truthy()? {
        let kwargs = PyDict::new(py);
        kwargs.set_item("discard", true)?;
        module.getattr("_stop_streaming")?.call((&config,), Some(&kwargs))?;
        manager.call_method0("reset")?;
        return Ok(true);
    }
    config.getattr("metadata")?.set_item("process", describe.call0()?)?;
    match session.call_method1("__exit__", (py.None(), py.None(), py.None())) {
        Ok(_) => Ok(true),
        Err(e) if e.is_instance_of::<PyException>(py) => {
            let text = run_session::followed_write_failure(std::process::id(), &e.value(py).str()?.to_string());
            crate::cli::print_to_stderr(py, &text)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(private_directory, m)?)?;
    m.add_function(wrap_pyfunction!(followed_recording, m)?)?;
    m.add_function(wrap_pyfunction!(started_marker, m)?)?;
    m.add_function(wrap_pyfunction!(describe_process, m)?)?;
    m.add_function(wrap_pyfunction!(multiprocessing_helper, m)?)?;
    m.add_function(wrap_pyfunction!(describe_current_process, m)?)?;
    m.add_class::<ExitHook>()?;
    m.add_function(wrap_pyfunction!(write_before_os_exit, m)?)?;
    m.add_function(wrap_pyfunction!(finish_followed, m)?)?;
    Ok(())
}
