//! Backs `scope_profiler._follow` (`run` following the script's Python processes): the
//! names of their files, how a followed process is described, which processes are
//! multiprocessing's own servers, and the lines a failed write prints
//! ([`scope_profiler_session::run_command`]).
use pyo3::prelude::*;
use scope_profiler_session::run_command::{self, ProcessFacts};

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
    run_command::describe_process(&ProcessFacts {
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
/// 'from multiprocessing. ...'`) or loky's resource tracker, not a process of the program.
#[pyfunction]
fn multiprocessing_helper(argv: Vec<String>) -> bool {
    run_command::multiprocessing_helper(&argv)
}

/// `private_directory(output, pid) -> str`: the directory the processes `run` (process
/// `pid`) follows record into, `<output>.procs-<pid>`.
#[pyfunction]
fn private_directory(output: &str, pid: u32) -> String {
    run_command::private_directory(output, pid)
}

/// `followed_recording(directory, pid) -> str`: the file a followed process records into,
/// `<directory>/<start ns, 20 digits>-<pid>.h5` (now on the wall clock, `time.time_ns()`).
#[pyfunction]
fn followed_recording(directory: &str, pid: u32) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    run_command::followed_recording(directory, now.as_nanos(), pid)
}

/// `started_marker(recording) -> str`: the `.started` marker beside a followed process's
/// recording (its extension replaced).
#[pyfunction]
fn started_marker(recording: &str) -> String {
    run_command::started_marker(recording)
}

/// `exit_write_failure(error) -> str`: the line on stderr when writing the profile before
/// `os._exit` failed (the exit goes ahead).
#[pyfunction]
fn exit_write_failure(error: &str) -> String {
    run_command::exit_write_failure(error)
}

/// `followed_write_failure(pid, error) -> str`: the line on stderr of a followed process
/// (`pid`) whose file could not be written (its exit status stands).
#[pyfunction]
fn followed_write_failure(pid: u32, error: &str) -> String {
    run_command::followed_write_failure(pid, error)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(private_directory, m)?)?;
    m.add_function(wrap_pyfunction!(followed_recording, m)?)?;
    m.add_function(wrap_pyfunction!(started_marker, m)?)?;
    m.add_function(wrap_pyfunction!(describe_process, m)?)?;
    m.add_function(wrap_pyfunction!(multiprocessing_helper, m)?)?;
    m.add_function(wrap_pyfunction!(exit_write_failure, m)?)?;
    m.add_function(wrap_pyfunction!(followed_write_failure, m)?)?;
    Ok(())
}
