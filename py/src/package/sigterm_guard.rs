//! `guard_sigterm` and `sigterm_taken` for `_cli.py` and `_follow.py`: the guard of
//! [`scope_profiler_session::sigterm_guard`] in front of the profiler's SIGTERM handler.
use pyo3::prelude::*;
use scope_profiler_session::sigterm_guard::{install, taken};

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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(guard_sigterm, m)?)?;
    m.add_function(wrap_pyfunction!(sigterm_taken, m)?)?;
    Ok(())
}
