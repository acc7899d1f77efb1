//! The check behind a region opened on a thread's own lane under `track_async`: is a task of
//! an event loop we do not instrument running here? uvloop never reaches the
//! `asyncio.BaseEventLoop` patches (its tasks get lanes only after `instrument_loop`), and
//! trio has no task factory at all; calls in their tasks would land on the thread's own
//! lane with no await time, concurrent ones nested, and no word said. What to do about it
//! (instrument the loop, warn once) is decided in `_untracked_loops.py`; this is the
//! trigger, on the region-entry path: one C call while no loop runs, and a look in
//! `sys.modules` for trio until trio was dealt with.
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// Set once `_untracked_loops` said trio needs no more checks (warned, or never asked).
static TRIO_SETTLED: AtomicBool = AtomicBool::new(false);

fn cached<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || py.import(module)?.getattr(name).map(Bound::unbind)).map(|f| f.bind(py))
}

/// Called on a region's entry when its recorder tracks tasks and no task lane is current on
/// this thread. Errors of the check are reported as unraisable, never raised into the
/// program's `with`.
pub(crate) fn region_outside_task(py: Python<'_>) {
    if let Err(e) = check(py) {
        e.write_unraisable(py, None);
    }
}

fn check(py: Python<'_>) -> PyResult<()> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static CHECK_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static CHECK_TRIO: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    static MODULES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let running = cached(py, &GET_RUNNING_LOOP, "asyncio", "_get_running_loop")?.call0()?;
    if !running.is_none() {
        cached(py, &CHECK_LOOP, "scope_profiler._untracked_loops", "check_loop")?.call1((running,))?;
        return Ok(());
    }
    if TRIO_SETTLED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let modules = cached(py, &MODULES, "sys", "modules")?;
    if modules.cast::<PyDict>().map_or(Ok(false), |m| m.contains(pyo3::intern!(py, "trio")))? {
        let settled = cached(py, &CHECK_TRIO, "scope_profiler._untracked_loops", "check_trio")?.call0()?;
        TRIO_SETTLED.store(settled.is_truthy()?, Ordering::Relaxed);
    }
    Ok(())
}
