//! `guard_sigterm`, `sigterm_taken` and `sigterm_received` for `_cli.py` and `_follow.py`: the guard of
//! [`scope_profiler_session::sigterm_guard`] in front of the profiler's SIGTERM handler.
use pyo3::prelude::*;
use scope_profiler_session::sigterm_guard::{install, received, taken};

/// Put the profiler's guard in front of the SIGTERM handler just installed with
/// `signal.signal()` (call it on the main thread, right after): a forked child that
/// receives SIGTERM before it sets its own handler dies by the default action, and a
/// SIGTERM handled just before the main thread blocked is sent again to it every 20 ms
/// until the Python handler calls `sigterm_taken()` ([`install`]).
/// Returns False (nothing done) when SIGTERM's action is the default or ignore. Raises
/// `OSError` when the OS refuses the handler.
#[pyfunction]
fn guard_sigterm() -> PyResult<bool> {
    Ok(install(libc::SIGTERM)?)
}

/// The profiler's Python-level SIGTERM handler runs: stop sending SIGTERM again to the main
/// thread (see `guard_sigterm`). True when this run of the handler is owed only to a re-sent
/// SIGTERM (the handler already ran for the last one sent from outside): the handler then
/// does nothing. Harmless when nothing was sent.
#[pyfunction]
fn sigterm_taken() -> bool {
    taken(libc::SIGTERM)
}

/// Whether SIGTERM reached this process since `guard_sigterm()` - at the moment it came,
/// before its Python handler ran - or, in a child forked from it, reached the parent before
/// the fork: a child forked by a process that SIGTERM is ending (a pool replacing the workers
/// the signal ended, while `run` writes its profile) would never have been started without
/// the profiler, and ends by the signal.
#[pyfunction]
fn sigterm_received() -> bool {
    received()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(guard_sigterm, m)?)?;
    m.add_function(wrap_pyfunction!(sigterm_taken, m)?)?;
    m.add_function(wrap_pyfunction!(sigterm_received, m)?)?;
    Ok(())
}
