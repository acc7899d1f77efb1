//! Backs `scope_profiler._follow` (`run` following the script's Python processes): how a
//! followed process is described and which processes are multiprocessing's own servers
//! ([`scope_profiler_cli::run_session`]).
use pyo3::prelude::*;
use scope_profiler_cli::run_session::{self, ProcessFacts};

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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(private_directory, m)?)?;
    m.add_function(wrap_pyfunction!(followed_recording, m)?)?;
    m.add_function(wrap_pyfunction!(started_marker, m)?)?;
    m.add_function(wrap_pyfunction!(describe_process, m)?)?;
    m.add_function(wrap_pyfunction!(multiprocessing_helper, m)?)?;
    Ok(())
}
