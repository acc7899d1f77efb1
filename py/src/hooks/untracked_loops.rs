//! The check behind a region opened on a thread's own lane under `track_async`: is a task of
//! an event loop we do not instrument running here? uvloop never reaches the
//! `asyncio.BaseEventLoop` patches (its tasks get lanes only after `instrument_loop`), and
//! trio has no task factory at all; calls in their tasks would land on the thread's own
//! lane with no await time, concurrent ones nested, and no word said. What to do about it
//! (instrument the loop, warn once) is decided in `_untracked_loops.py`; this is the
//! trigger, on the region-entry path: one C call while no loop runs, and a look in
//! `sys.modules` for trio until trio was dealt with. A loop found instrumented is
//! remembered per thread, and the next [`RECHECK_EVERY`] regions of the thread skip the
//! check: the regions of a task created before tracking began (the common `setup()` inside
//! the main coroutine) would otherwise each pay `asyncio._get_running_loop()`, which on
//! CPython 3.11 makes a `getpid` system call whenever a loop runs (~250 ns here). A loop
//! that starts later on the same thread is found within that many regions, or at the
//! first region after the next `setup()`.
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyWeakrefMethods, PyWeakrefReference};

use scope_profiler_session::untracked_loops as texts;

use crate::recording::setup_generation;

/// Set once `_untracked_loops` said trio needs no more checks (warned, or never asked).
static TRIO_SETTLED: AtomicBool = AtomicBool::new(false);

/// Regions of a thread that skip the check after it found the running loop settled.
const RECHECK_EVERY: u32 = 1024;

thread_local! {
    /// The loop this thread last found needing no more checks, weakly held (a loop that
    /// cannot be weakly referenced is asked about each time).
    static SETTLED_LOOP: RefCell<Option<Py<PyWeakrefReference>>> = const { RefCell::new(None) };
    /// Regions left to skip before this thread checks again, and the setup generation
    /// they were counted in (a new `setup()` checks afresh).
    static SKIP: Cell<(u32, u64)> = const { Cell::new((0, 0)) };
}

/// Whether `running` is the loop this thread last found settled.
fn settled_here(py: Python<'_>, running: &Bound<'_, PyAny>) -> bool {
    SETTLED_LOOP.with_borrow(|w| w.as_ref().and_then(|w| w.bind(py).upgrade()).is_some_and(|l| l.is(running)))
}

fn cached<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || py.import(module)?.getattr(name).map(Bound::unbind)).map(|f| f.bind(py))
}

/// `untracked_loop_warning(kind) -> str`: the warning for the running event loop of type
/// `kind` (`module.qualname`) found uninstrumented while one of its tasks ran
/// ([`texts::loop_warning`]).
#[pyfunction]
fn untracked_loop_warning(kind: &str) -> String {
    texts::loop_warning(kind)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(untracked_loop_warning, m)?)?;
    m.add("UNTRACKED_TRIO_WARNING", texts::TRIO_WARNING)
}

/// Called on a region's entry when its recorder tracks tasks and no task lane is current on
/// this thread. Errors of the check are reported as unraisable, never raised into the
/// program's `with`.
pub(crate) fn region_outside_task(py: Python<'_>) {
    let (skip, generation) = SKIP.get();
    if skip > 0 && generation == setup_generation() {
        SKIP.set((skip - 1, generation));
        return;
    }
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
        if settled_here(py, &running) {
            SKIP.set((RECHECK_EVERY, setup_generation()));
            return Ok(());
        }
        let settled = cached(py, &CHECK_LOOP, "scope_profiler._untracked_loops", "check_loop")?.call1((&running,))?;
        if settled.is_truthy()? {
            if let Ok(weak) = PyWeakrefReference::new(&running) {
                SETTLED_LOOP.with_borrow_mut(|w| *w = Some(weak.unbind()));
                SKIP.set((RECHECK_EVERY, setup_generation()));
            }
        }
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
