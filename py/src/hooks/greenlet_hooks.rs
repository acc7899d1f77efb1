//! `scope_profiler._greenlet_hooks`: the greenlet trace function shared by every
//! `track_async` tracker of the process.
//!
//! `greenlet.settrace` is per thread: [`GreenletTrace`] is set on every thread that should
//! be followed (the one installing the first tracker, each thread started while a tracker is
//! installed, each thread registering lazily with a recorder); the trace set before it on
//! that thread is kept in a `threading.local` and called after it. On every `switch` /
//! `throw` each acquired recorder moves the thread's lane (`NativeRecorder::greenlet_switch`).
//! When the last recorder leaves, the calling thread's previous trace is restored at once,
//! other threads' at their next switch (a trace can only be set on the thread itself).
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::recording::NativeRecorder;

/// The process-wide greenlet trace function (`greenlet.settrace(trace)`; one per process,
/// `_greenlet_hooks._trace`), called by greenlet as `trace(event, args)` on the switching
/// thread.
#[pyclass(module = "scope_profiler._native")]
pub struct GreenletTrace {
    /// Recorders following greenlet switches, in acquire order.
    recorders: Vec<Py<NativeRecorder>>,
    /// `threading.local()`: `installed` (bool) and `previous` (the thread's trace before ours).
    local: Py<PyAny>,
    /// The `greenlet` module.
    greenlet: Py<PyAny>,
}

impl GreenletTrace {
    fn installed_here(&self, py: Python<'_>) -> PyResult<bool> {
        match self.local.bind(py).getattr_opt(pyo3::intern!(py, "installed"))? {
            Some(flag) => flag.is_truthy(),
            None => Ok(false),
        }
    }

    fn previous_here<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.local.bind(py).getattr_opt(pyo3::intern!(py, "previous"))?.filter(|p| !p.is_none()))
    }

    /// Put the calling thread's previous trace back (if ours is still set) and forget it.
    fn restore_here(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.borrow();
        if !this.installed_here(py)? {
            return Ok(());
        }
        let previous = this.previous_here(py)?;
        let greenlet = this.greenlet.bind(py);
        if greenlet.call_method0("gettrace")?.is(slf) {
            greenlet.call_method1("settrace", (previous,))?;
        }
        let local = this.local.bind(py);
        local.setattr("installed", false)?;
        local.setattr("previous", py.None())
    }
}

#[pymethods]
impl GreenletTrace {
    /// A trace over `greenlet` (the imported module), following nothing yet.
    #[new]
    fn new(py: Python<'_>, greenlet: Py<PyAny>) -> PyResult<Self> {
        let local = py.import("threading")?.getattr("local")?.call0()?.unbind();
        Ok(Self { recorders: Vec::new(), local, greenlet })
    }

    /// One greenlet event on the calling thread: for `switch`/`throw` (`args` = `(origin,
    /// target)`) each recorder moves the thread's lane; then the thread's previous trace is
    /// called (its result returned). With no recorder left, ours is taken off this thread.
    fn __call__(slf: &Bound<'_, Self>, event: &str, args: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let recorders: Vec<Py<NativeRecorder>> = slf.borrow().recorders.iter().map(|r| r.clone_ref(py)).collect();
        if !recorders.is_empty() && (event == "switch" || event == "throw") {
            let pair = args.cast::<PyTuple>()?;
            let (origin, target) = (pair.get_item(0)?, pair.get_item(1)?);
            for recorder in &recorders {
                recorder.get().greenlet_switch(py, &origin, &target)?;
            }
        }
        let previous = slf.borrow().previous_here(py)?;
        if recorders.is_empty() {
            Self::restore_here(slf)?;
        }
        match previous {
            Some(previous) => Ok(previous.call1((event, args))?.unbind()),
            None => Ok(py.None()),
        }
    }

    /// Set the trace on the calling thread (idempotent; nothing while no recorder follows).
    fn follow_current_thread(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.borrow();
        if this.recorders.is_empty() || this.installed_here(py)? {
            return Ok(());
        }
        let previous = this.greenlet.bind(py).call_method1("settrace", (slf,))?;
        // already ours (a trace copied from elsewhere): nothing to chain
        let previous = if previous.is(slf) { py.None().into_bound(py) } else { previous };
        let local = this.local.bind(py);
        local.setattr("previous", previous)?;
        local.setattr("installed", true)
    }

    /// Follow switches for `recorder` (idempotent) and set the trace on the calling thread.
    fn acquire(slf: &Bound<'_, Self>, recorder: Bound<'_, NativeRecorder>) -> PyResult<()> {
        if !slf.borrow().recorders.iter().any(|r| r.is(&recorder)) {
            slf.borrow_mut().recorders.push(recorder.unbind());
        }
        Self::follow_current_thread(slf)
    }

    /// Undo [`Self::acquire`]; the last recorder leaving restores the calling thread's trace.
    fn release(slf: &Bound<'_, Self>, recorder: &Bound<'_, NativeRecorder>) -> PyResult<()> {
        slf.borrow_mut().recorders.retain(|r| !r.is(recorder));
        if slf.borrow().recorders.is_empty() {
            Self::restore_here(slf)?;
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GreenletTrace>()
}
