//! Task lanes on the Python side: [`TaskHandle`] (a task-table row the Python hooks hold)
//! and [`TimedCoroutine`], the wrapper the task factory puts around each task's coroutine.
//!
//! The wrapper is what `asyncio.Task` (C or Python) drives: every `send()`/`__next__`/
//! `throw()`/`close()` makes the task the current lane of the calling thread, counts a
//! step and forwards to the user's coroutine (`PyIter_Send` for `send`, so a plain
//! coroutine is resumed without a method call). It is a `collections.abc.Coroutine`
//! (`send`, `throw`, `close`, `__await__`), so `asyncio.iscoroutine` accepts it, and it
//! forwards every other attribute (`cr_frame`, `cr_code`, `cr_await`, `cr_running`,
//! `__name__`, `__qualname__`, ...) to the user's coroutine, so `task.get_stack()`,
//! `print_stack()` and task reprs keep working.
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_recorder::hub_steps::HubSteps;
use scope_profiler_recorder::{event_loop, now_ns, TaskRecord, TaskStep, UNKNOWN};

use super::{recorded_name, Shared};

/// The reference's name of a coroutine or callable: a non-empty `__qualname__` or
/// `__name__` (a `str`), else the code object's (`cr_code`/`gi_code`) `co_qualname` (or
/// `co_name`), else the type name.
pub(crate) fn qualname(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    for attr in ["__qualname__", "__name__"] {
        if let Ok(name) = obj.getattr(attr) {
            if let Ok(s) = name.cast::<pyo3::types::PyString>() {
                if !s.to_str()?.is_empty() {
                    return Ok(s.to_string());
                }
            }
        }
    }
    for attr in ["cr_code", "gi_code"] {
        if let Ok(code) = obj.getattr(attr) {
            if code.is_truthy()? {
                let q = code.getattr("co_qualname").ok().filter(|q| q.is_truthy().unwrap_or(false));
                return Ok(match q {
                    Some(q) => q.str()?.to_string(),
                    None => code.getattr("co_name")?.str()?.to_string(),
                });
            }
        }
    }
    Ok(obj.get_type().name()?.to_string())
}

/// The greenlet rows of one recorder: greenlet -> `TaskHandle`, and the greenlets whose
/// target name is still unknown (resolved at their next switch away). Both are
/// `weakref.WeakKeyDictionary`s, so a finished greenlet is not kept alive.
pub(crate) struct GreenletLanes {
    records: Py<PyAny>,
    unnamed: Py<PyAny>,
    /// The lanes that are gevent hubs and the steps they resumed (loop blocks).
    pub(crate) hubs: HubSteps,
}

impl GreenletLanes {
    pub(crate) fn new(py: Python<'_>) -> PyResult<Self> {
        let make = py.import(pyo3::intern!(py, "weakref"))?.getattr("WeakKeyDictionary")?;
        Ok(GreenletLanes {
            records: make.call0()?.unbind(),
            unnamed: make.call0()?.unbind(),
            hubs: HubSteps::default(),
        })
    }

    /// The row of greenlet `g`, if it has one.
    pub(crate) fn record<'py>(
        &self,
        py: Python<'py>,
        g: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, TaskHandle>>> {
        let found = self.records.bind(py).call_method1(pyo3::intern!(py, "get"), (g,))?;
        Ok(if found.is_none() { None } else { Some(found.cast_into::<TaskHandle>()?) })
    }

    /// Note `record` as `g`'s row (`unnamed`: its target name is not known yet).
    pub(crate) fn add(
        &self,
        py: Python<'_>,
        g: &Bound<'_, PyAny>,
        record: &Bound<'_, TaskHandle>,
        unnamed: bool,
    ) -> PyResult<()> {
        self.records.bind(py).set_item(g, record)?;
        if unnamed {
            self.unnamed.bind(py).set_item(g, true)?;
        }
        Ok(())
    }

    /// `origin` is switched away from: finish its row if it is dead, else name it from its
    /// outermost frame if its target name was unknown. Returns its row's task index.
    pub(crate) fn leave(&self, py: Python<'_>, origin: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let Some(record) = self.record(py, origin)? else { return Ok(None) };
        let index = Some(record.get().task.index);
        if origin.getattr(pyo3::intern!(py, "dead"))?.is_truthy()? {
            record.get().finish(py, None)?;
            return Ok(index);
        }
        let unnamed = self.unnamed.bind(py);
        if unnamed.contains(origin)? {
            if let Some(name) = outermost_frame_name(origin)? {
                record.get().set_coro_name(py, name)?;
                unnamed.del_item(origin)?;
            }
        }
        Ok(index)
    }
}

/// Whether greenlet `g` is a gevent hub (an instance of `gevent.hub.Hub`, which gevent's
/// configurable hub classes subclass). gevent is not imported: without `gevent.hub` in
/// `sys.modules` there is no hub.
pub(crate) fn is_gevent_hub(py: Python<'_>, g: &Bound<'_, PyAny>) -> PyResult<bool> {
    let modules = py.import(pyo3::intern!(py, "sys"))?.getattr(pyo3::intern!(py, "modules"))?;
    let module = modules.call_method1(pyo3::intern!(py, "get"), ("gevent.hub",))?;
    if module.is_none() {
        return Ok(false);
    }
    match module.getattr_opt(pyo3::intern!(py, "Hub"))? {
        Some(hub) => g.is_instance(&hub),
        None => Ok(false),
    }
}

/// A new greenlet's row names: its `name` attribute when a non-empty `str`, else
/// `greenlet-<id in hex>`; and its target's qualified name if it can be known now
/// (gevent's `_run`, else `run`; see [`qualname`]).
pub(crate) fn greenlet_names(g: &Bound<'_, PyAny>) -> PyResult<(String, Option<String>)> {
    let name = match g.getattr("name").ok().and_then(|n| n.cast_into::<pyo3::types::PyString>().ok()) {
        Some(n) if !n.to_str()?.is_empty() => n.to_string(),
        _ => format!("greenlet-{:x}", g.as_ptr() as usize),
    };
    for attr in ["_run", "run"] {
        if let Ok(f) = g.getattr(attr) {
            if !f.is_none() && f.is_callable() {
                return Ok((name, Some(qualname(&f)?)));
            }
        }
    }
    Ok((name, None))
}

/// The `co_qualname` (or `co_name`) of a suspended greenlet's outermost frame (its
/// target), None without a frame or when that name is empty.
fn outermost_frame_name(g: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let Ok(mut frame) = g.getattr("gr_frame") else { return Ok(None) };
    if frame.is_none() {
        return Ok(None);
    }
    loop {
        let back = frame.getattr("f_back")?;
        if back.is_none() {
            break;
        }
        frame = back;
    }
    let code = frame.getattr("f_code")?;
    let q = code.getattr("co_qualname").ok().filter(|q| q.is_truthy().unwrap_or(false));
    let name = match q {
        Some(q) => q.str()?.to_string(),
        None => code.getattr("co_name")?.str()?.to_string(),
    };
    Ok((!name.is_empty()).then_some(name))
}

/// One task-table row (an asyncio task or a greenlet), shared with the recorder.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct TaskHandle {
    pub(crate) task: Arc<TaskRecord>,
    /// The recorder's state (for the one warning about names with NUL).
    pub(crate) shared: Arc<Shared>,
}

#[pymethods]
impl TaskHandle {
    #[getter]
    fn index(&self) -> usize {
        self.task.index
    }
    #[getter]
    fn kind(&self) -> &'static str {
        self.task.kind.as_str()
    }
    #[getter]
    fn name(&self) -> String {
        self.task.name()
    }
    /// A NUL in the name is recorded as `\x00` ([`super::recorded_name`]).
    #[setter]
    pub(crate) fn set_name(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.task.set_name(recorded_name(py, "task", name, &self.shared.nul_warned)?);
        Ok(())
    }
    #[getter]
    fn coro_name(&self) -> String {
        self.task.coro_name()
    }
    #[setter]
    pub(crate) fn set_coro_name(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.task.set_coro_name(recorded_name(py, "task", name, &self.shared.nul_warned)?);
        Ok(())
    }
    #[getter]
    fn thread_index(&self) -> i64 {
        self.task.thread_index()
    }
    #[getter]
    fn steps(&self) -> i64 {
        self.task.steps()
    }
    #[getter]
    fn running_ns(&self) -> i64 {
        self.task.running_ns()
    }
    #[getter]
    fn suspended_ns(&self) -> i64 {
        self.task.suspended_ns()
    }
    #[getter]
    fn created_ns(&self) -> i64 {
        self.task.created_ns
    }
    /// Absolute done time, `-1` while not done.
    #[getter]
    fn done_ns(&self) -> i64 {
        self.task.done_ns()
    }
    /// Calls open on this lane.
    #[getter]
    fn open_calls(&self) -> usize {
        self.task.open_calls()
    }
    /// `task`'s done callback: mark done now with `task.get_name()` as the final name.
    fn finish_task(&self, py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let name: String = task.call_method0("get_name")?.extract()?;
        self.finish(py, Some(name))
    }
    /// Mark done now (first call wins); optionally record the final name.
    #[pyo3(signature = (name=None))]
    pub(crate) fn finish(&self, py: Python<'_>, name: Option<String>) -> PyResult<()> {
        if let Some(n) = name {
            self.task.set_name(recorded_name(py, "task", n, &self.shared.nul_warned)?);
        }
        self.task.finish();
        Ok(())
    }
    fn __repr__(&self) -> String {
        format!(
            "<TaskHandle {} {} {:?} ({})>",
            self.task.kind.as_str(),
            self.task.index,
            self.task.name(),
            self.task.coro_name()
        )
    }
}

/// Greenlet switch on the calling thread: the lane running so far (if a task) ends its
/// step, `target` (None = the thread's bare lane, i.e. its main greenlet) starts one.
/// Returns the thread's index and the moment of the switch.
pub(crate) fn switch_lane(shared: &Shared, py: Python<'_>, target: Option<&TaskHandle>) -> PyResult<(usize, i64)> {
    let st = shared.state(py)?;
    // SAFETY: the calling thread's own state.
    let st = unsafe { &*st };
    let now = now_ns();
    let prev = st.current();
    if !prev.is_null() {
        // SAFETY: current tasks are kept alive by the recorder's registry.
        unsafe { &*prev }.leave_step(now);
        st.end_step(now);
    }
    match target {
        Some(h) => {
            // a greenlet hub tells no ready moments: its lanes' ready wait is unknown
            h.task.ready_since(now, None);
            h.task.enter_step(now, st.index() as i64);
            st.begin_step(now);
            st.set_current(Arc::as_ptr(&h.task));
        }
        None => {
            st.set_current(ptr::null());
        }
    }
    Ok((st.index(), now))
}

/// A plain callback of an instrumented loop held the calling thread `[start_ns, end_ns)`:
/// a loop block of `recorder` if that thread records for it.
pub(crate) fn record_callback_block(
    recorder: &super::NativeRecorder,
    _py: Python<'_>,
    start_ns: i64,
    end_ns: i64,
) -> PyResult<()> {
    let shared = &recorder.shared;
    if let Some(st) = shared.rec.local() {
        // SAFETY: the calling thread's own state.
        let index = unsafe { &*st }.index();
        shared.rec.loop_blocks().record(index, -1, start_ns, end_ns);
    }
    Ok(())
}

/// An instrumented event loop on the calling thread waited `idle_ns` with nothing ready
/// (0: it runs, and has not waited since the last call): added to the thread's idle time
/// for `recorder`, if that thread records for it.
pub(crate) fn record_loop_idle(recorder: &super::NativeRecorder, idle_ns: i64) {
    record_loop_idle_in(&recorder.shared, idle_ns)
}

/// [`record_loop_idle`] for the recorder of `shared`.
pub(crate) fn record_loop_idle_in(shared: &Shared, idle_ns: i64) {
    if let Some(st) = shared.rec.local() {
        // SAFETY: the calling thread's own state.
        if let Some(thread) = unsafe { &*st }.record() {
            thread.loop_idled(idle_ns);
        }
    }
}

/// Index of the task running on the calling thread, if any.
pub(crate) fn current_task(shared: &Shared) -> Option<usize> {
    let st = shared.rec.local()?;
    // SAFETY: the calling thread's own state; current tasks are kept alive by the registry.
    let cur = unsafe { &*st }.current();
    (!cur.is_null()).then(|| unsafe { &*cur }.index)
}

/// The coroutine wrapper behind each instrumented task (see the module docs).
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct TimedCoroutine {
    /// The user's coroutine; `None` once the garbage collector broke a cycle through us.
    /// Read and written only with the GIL held.
    coro: UnsafeCell<Option<Py<PyAny>>>,
    task: Arc<TaskRecord>,
    shared: Arc<Shared>,
}

// SAFETY: `coro` is only touched with the GIL held (GIL build; see the module docs).
unsafe impl Sync for TimedCoroutine {}

impl TimedCoroutine {
    pub(crate) fn new(coro: Py<PyAny>, handle: &TaskHandle, shared: Arc<Shared>) -> Self {
        TimedCoroutine { coro: UnsafeCell::new(Some(coro)), task: Arc::clone(&handle.task), shared }
    }

    /// A new reference to the user's coroutine (kept for the duration of the call).
    #[inline(always)]
    fn coro<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: GIL held.
        match unsafe { &*self.coro.get() } {
            Some(c) => Ok(c.bind(py).clone()),
            None => Err(PyRuntimeError::new_err("coroutine wrapper was cleared")),
        }
    }

    /// Run `f` as one step of the task on the calling thread. The step's ready wait comes
    /// from the loop's handle running it (unknown without one); a step that is the
    /// thread's outermost on this recorder counts toward the loop blocks it waited for and
    /// is recorded as a block itself when it held the loop for the floor or more.
    #[inline(always)]
    fn step<R>(&self, py: Python<'_>, f: impl FnOnce() -> R) -> PyResult<R> {
        let st = self.shared.state(py)?;
        // SAFETY: the calling thread's own state.
        let st = unsafe { &*st };
        let start = event_loop::step_begins();
        let now = match start {
            // the handle that resumes the task (its wakeup or step callback) just started:
            // its start is the step's. Not a first step, which may be an eager task's run by
            // a callback that did other work first.
            event_loop::StepStart::Handle { start_ns: Some(at), .. } if self.task.steps() > 0 => at,
            _ => now_ns(),
        };
        let blocks = self.shared.rec.loop_blocks();
        // without a timed ready queue (uvloop) no task's ready moment is known
        let loop_tells = !matches!(start, event_loop::StepStart::NoHandle);
        let step = TaskStep::begin(st, &self.task, now, start.ready_ns(), loop_tells, blocks);
        let out = f();
        let end = now_ns();
        step.end(st, &self.task, end, blocks);
        event_loop::step_ends(end);
        Ok(out)
    }

    /// Run `f` with the task as the calling thread's lane, without step accounting.
    fn on_lane<R>(&self, py: Python<'_>, f: impl FnOnce() -> R) -> PyResult<R> {
        let st = self.shared.state(py)?;
        // SAFETY: the calling thread's own state.
        let st = unsafe { &*st };
        let prev = st.set_current(Arc::as_ptr(&self.task));
        let out = f();
        st.set_current(prev);
        Ok(out)
    }

    #[inline(always)]
    fn send_impl(&self, py: Python<'_>, value: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
        let coro = self.coro(py)?;
        let mut result: *mut ffi::PyObject = ptr::null_mut();
        // SAFETY: `coro` and `value` are valid references; PyIter_Send returns a new
        // reference in `result` for NEXT/RETURN and sets an exception for ERROR.
        let status = self.step(py, || unsafe { ffi::PyIter_Send(coro.as_ptr(), value, &mut result) })?;
        match status {
            ffi::PySendResult::PYGEN_NEXT => Ok(unsafe { Bound::from_owned_ptr(py, result) }.unbind()),
            ffi::PySendResult::PYGEN_RETURN => {
                self.task.finish();
                let value = unsafe { Bound::from_owned_ptr(py, result) };
                Err(PyStopIteration::new_err((value.unbind(),)))
            }
            ffi::PySendResult::PYGEN_ERROR => {
                self.task.finish();
                Err(PyErr::fetch(py))
            }
        }
    }
}

#[pymethods]
impl TimedCoroutine {
    /// `send(None)` as the C `Task` does it (`PyIter_Send` with None uses `tp_iternext`).
    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.send_impl(py, unsafe { ffi::Py_None() })
    }

    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.send_impl(py, value.as_ptr())
    }

    #[pyo3(signature = (*args))]
    fn throw(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let coro = self.coro(py)?;
        let out = self.step(py, || coro.call_method1("throw", args.clone()))?;
        match out {
            Ok(v) => Ok(v.unbind()),
            Err(e) => {
                self.task.finish();
                Err(e)
            }
        }
    }

    /// Forwarded on the task's lane (its `with` exits close its own calls), not counted
    /// as a step; marks the task done.
    fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let coro = self.coro(py)?;
        let out = self.on_lane(py, || coro.call_method0("close"))?;
        self.task.finish();
        Ok(out?.unbind())
    }

    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The user's coroutine.
    #[getter]
    fn __wrapped__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.coro(py)?.unbind())
    }

    /// Task-table index of the task this wrapper times.
    #[getter]
    fn _task_index(&self) -> usize {
        self.task.index
    }

    /// Everything else (`cr_frame`, `cr_code`, `cr_await`, `__qualname__`, ...) is the
    /// user's coroutine's.
    fn __getattr__(&self, py: Python<'_>, name: &Bound<'_, pyo3::types::PyString>) -> PyResult<Py<PyAny>> {
        Ok(self.coro(py)?.getattr(name)?.unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<timed {}>", self.coro(py)?.repr()?))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the collector runs with the GIL held.
        if let Some(c) = unsafe { &*self.coro.get() } {
            visit.call(c)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: the collector runs with the GIL held.
        let old = unsafe { (*self.coro.get()).take() };
        drop(old);
    }
}

impl Drop for TimedCoroutine {
    /// A task dropped while suspended inside its coroutine (e.g. a pending task garbage
    /// collected) closes the coroutine: do it here, on the task's own lane, so its `with`
    /// exits close its own calls instead of popping the thread's bare lane.
    fn drop(&mut self) {
        if self.task.steps() == 0 || self.task.done_ns() != UNKNOWN {
            return;
        }
        Python::attach(|py| {
            let Ok(coro) = self.coro(py) else { return };
            if let Ok(Err(e)) = self.on_lane(py, || coro.call_method0("close")) {
                e.write_unraisable(py, Some(&coro));
            }
            self.task.finish();
        });
    }
}
