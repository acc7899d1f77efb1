//! `scope_profiler._tracking`: the process-wide thread-start hook, shared by every
//! `track_threads`/`track_async` tracker and by 3.11's function-level tracer.
//!
//! [`ThreadStartHook`] is installed with `threading.setprofile` while it has a user: each
//! thread started by `threading` calls it at its first profile event, on that thread. It
//! registers the thread with every recorder that acquired it, lets the greenlet hooks
//! follow the thread, runs the thread-start callbacks and hands the event to the profile
//! function that was installed before it (which it chains and restores when its last user
//! leaves, unless the program replaced it meanwhile).
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::recording::NativeRecorder;

/// The thread-start hook (`threading.setprofile(hook)`); called as a profile function
/// `hook(frame, event, arg)` on each new thread. One per process (`_tracking._THREAD_HOOK`).
#[pyclass(module = "scope_profiler._native")]
pub struct ThreadStartHook {
    /// Recorders registering each new thread, in acquire order.
    recorders: Vec<Py<NativeRecorder>>,
    /// `callback(frame)` run on each new thread after the recorders registered it.
    callbacks: Vec<Py<PyAny>>,
    /// The `threading` profile function installed before this hook (chained).
    previous: Option<Py<PyAny>>,
}

fn threading(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("threading")
}

impl ThreadStartHook {
    fn unused(&self) -> bool {
        self.recorders.is_empty() && self.callbacks.is_empty()
    }

    /// Install the hook if nobody uses it yet (call before adding a user).
    fn arm(slf: &Bound<'_, Self>) -> PyResult<()> {
        if !slf.borrow().unused() {
            return Ok(());
        }
        let threading = threading(slf.py())?;
        let current = threading.call_method0("getprofile")?;
        if !current.is(slf) {
            slf.borrow_mut().previous = (!current.is_none()).then(|| current.unbind());
        }
        threading.call_method1("setprofile", (slf,)).map(drop)
    }

    /// Restore the previous profile function once nobody uses the hook (call after
    /// removing a user); a function the program installed since is left in place.
    fn disarm(slf: &Bound<'_, Self>) -> PyResult<()> {
        if !slf.borrow().unused() {
            return Ok(());
        }
        let threading = threading(slf.py())?;
        let previous = slf.borrow_mut().previous.take();
        if threading.call_method0("getprofile")?.is(slf) {
            threading.call_method1("setprofile", (previous,))?;
        }
        Ok(())
    }

    /// Register the calling thread with every recorder; the greenlet hooks (when
    /// imported) follow it.
    fn register_thread(py: Python<'_>, recorders: &[Py<NativeRecorder>]) -> PyResult<()> {
        for recorder in recorders {
            recorder.bind(py).call_method0("register_thread")?;
        }
        let modules = py.import("sys")?.getattr("modules")?;
        if let Some(greenlet_hooks) = modules.cast::<PyDict>()?.get_item("scope_profiler._greenlet_hooks")? {
            greenlet_hooks.call_method0("follow_current_thread")?;
        }
        Ok(())
    }
}

#[pymethods]
impl ThreadStartHook {
    #[new]
    fn new() -> Self {
        Self { recorders: Vec::new(), callbacks: Vec::new(), previous: None }
    }

    /// The first profile event of a new thread: unhook the thread (`sys.setprofile(None)`),
    /// register it, put the previous profile function back on it, run the callbacks, and
    /// return what the previous function returns for this event (None without one).
    fn __call__(
        slf: &Bound<'_, Self>,
        frame: &Bound<'_, PyAny>,
        event: &Bound<'_, PyAny>,
        arg: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let sys = py.import("sys")?;
        sys.call_method1("setprofile", (py.None(),))?;
        let (previous, recorders, callbacks) = {
            let hook = slf.borrow();
            (
                hook.previous.as_ref().map(|p| p.clone_ref(py)),
                hook.recorders.iter().map(|r| r.clone_ref(py)).collect::<Vec<_>>(),
                hook.callbacks.iter().map(|c| c.clone_ref(py)).collect::<Vec<_>>(),
            )
        };
        let registered = Self::register_thread(py, &recorders);
        if let Some(previous) = &previous {
            sys.call_method1("setprofile", (previous,))?;
        }
        registered?;
        for callback in callbacks {
            callback.bind(py).call1((frame,))?;
        }
        match previous {
            Some(previous) => Ok(previous.bind(py).call1((frame, event, arg))?.unbind()),
            None => Ok(py.None()),
        }
    }

    /// Register each new thread with `recorder` from now on (idempotent; installs the hook).
    fn acquire(slf: &Bound<'_, Self>, recorder: Bound<'_, NativeRecorder>) -> PyResult<()> {
        if slf.borrow().recorders.iter().any(|r| r.is(&recorder)) {
            return Ok(());
        }
        Self::arm(slf)?;
        slf.borrow_mut().recorders.push(recorder.unbind());
        Ok(())
    }

    /// Undo [`Self::acquire`] (idempotent; the last user leaving restores the previous hook).
    fn release(slf: &Bound<'_, Self>, recorder: &Bound<'_, NativeRecorder>) -> PyResult<()> {
        let before = slf.borrow().recorders.len();
        slf.borrow_mut().recorders.retain(|r| !r.is(recorder));
        if slf.borrow().recorders.len() != before {
            Self::disarm(slf)?;
        }
        Ok(())
    }

    /// Call `callback(frame)` on every thread started from now on, at its first event
    /// (after the recorders registered it). Idempotent (callbacks compared with `==`, so
    /// a bound method fetched again is the same callback).
    fn add_callback(slf: &Bound<'_, Self>, callback: Bound<'_, PyAny>) -> PyResult<()> {
        if Self::callback_index(slf, &callback)?.is_some() {
            return Ok(());
        }
        Self::arm(slf)?;
        slf.borrow_mut().callbacks.push(callback.unbind());
        Ok(())
    }

    /// Undo [`Self::add_callback`] (idempotent).
    fn remove_callback(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Some(i) = Self::callback_index(slf, callback)? {
            slf.borrow_mut().callbacks.remove(i);
            Self::disarm(slf)?;
        }
        Ok(())
    }

    /// Whether the hook has users but is no longer installed: the program called
    /// `threading.setprofile()` since, so the threads it starts are not registered.
    fn displaced(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(!slf.borrow().unused() && !threading(slf.py())?.call_method0("getprofile")?.is(slf))
    }

    /// In a forked child: forget every recorder (the parent's runs are not finalized there).
    fn forget_recorders(&mut self) {
        self.recorders.clear();
    }
}

impl ThreadStartHook {
    fn callback_index(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let callbacks: Vec<Py<PyAny>> = slf.borrow().callbacks.iter().map(|c| c.clone_ref(slf.py())).collect();
        for (i, c) in callbacks.iter().enumerate() {
            if c.bind(slf.py()).eq(callback)? {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ThreadStartHook>()
}
