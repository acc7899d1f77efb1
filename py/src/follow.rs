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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(describe_process, m)?)?;
    m.add_function(wrap_pyfunction!(multiprocessing_helper, m)?)?;
    Ok(())
}
