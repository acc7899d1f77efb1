//! `scope_profiler._asyncio_hooks`: the task factory every instrumented event loop shares,
//! and the record of which recorders time each loop's tasks. Patching
//! `asyncio.BaseEventLoop` (`run_forever`, `create_task`) stays in the Python module: those
//! are hooks, installed and restored by the trackers.
//!
//! One [`TaskFactory`] per process. Each loop it instruments keeps the factory it had before
//! (chained: the task is made by it), and the recorders of the `track_async` trackers that
//! instrumented the loop, each wrapping the coroutine once (a `TimedCoroutine`). Release is
//! order-independent: a recorder leaving takes itself out of every loop, and a loop nobody
//! times any more gets its previous factory back.
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::recording::NativeRecorder;

/// One instrumented loop: the task factory it had before ours (`None`: asyncio's default)
/// and the recorders timing its tasks, in install order.
#[pyclass(module = "scope_profiler._native")]
pub struct LoopState {
    previous: Py<PyAny>,
    recorders: Vec<Py<NativeRecorder>>,
}

/// The task factory of instrumented loops (`loop.set_task_factory(factory)`); called by
/// asyncio as `factory(loop, coro, **kwargs)` on the thread running `loop`.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct TaskFactory {
    /// `weakref.WeakKeyDictionary`: loop -> [`LoopState`].
    loops: Py<PyAny>,
    /// `id(loop) -> (loop, LoopState)` for loops that do not support weak references.
    strong: Py<PyDict>,
}

fn no_weakref(py: Python<'_>, err: &PyErr) -> bool {
    err.is_instance_of::<PyTypeError>(py)
}

impl TaskFactory {
    fn state<'py>(&self, event_loop: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, LoopState>>> {
        let py = event_loop.py();
        match self.loops.bind(py).call_method1("get", (event_loop,)) {
            Ok(state) => Ok(state.cast_into::<LoopState>().ok()),
            Err(e) if no_weakref(py, &e) => {
                let Some(entry) = self.strong.bind(py).get_item(event_loop.as_ptr() as usize)? else {
                    return Ok(None);
                };
                let (held, state): (Bound<'py, PyAny>, Bound<'py, LoopState>) = entry.extract()?;
                Ok(held.is(event_loop).then_some(state))
            }
            Err(e) => Err(e),
        }
    }

    fn set_state(&self, event_loop: &Bound<'_, PyAny>, state: &Bound<'_, LoopState>) -> PyResult<()> {
        let py = event_loop.py();
        match self.loops.bind(py).set_item(event_loop, state) {
            Err(e) if no_weakref(py, &e) => {
                self.strong.bind(py).set_item(event_loop.as_ptr() as usize, (event_loop, state))
            }
            other => other,
        }
    }

    fn drop_state(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = event_loop.py();
        match self.loops.bind(py).call_method1("pop", (event_loop, py.None())) {
            Err(e) if no_weakref(py, &e) => {
                self.strong.bind(py).call_method1("pop", (event_loop.as_ptr() as usize, py.None())).map(drop)
            }
            other => other.map(drop),
        }
    }

    /// Every instrumented loop with its state.
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, LoopState>)>> {
        let mut out: Vec<(Bound<'py, PyAny>, Bound<'py, LoopState>)> = self
            .loops
            .bind(py)
            .call_method0("items")?
            .try_iter()?
            .map(|item| item?.extract())
            .collect::<PyResult<_>>()?;
        for entry in self.strong.bind(py).values() {
            out.push(entry.extract()?);
        }
        Ok(out)
    }
}

fn is_coroutine(coro: &Bound<'_, PyAny>) -> PyResult<bool> {
    static ISCOROUTINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = coro.py();
    let check = ISCOROUTINE.get_or_try_init(py, || py.import("asyncio")?.getattr("iscoroutine").map(Bound::unbind))?;
    check.bind(py).call1((coro,))?.is_truthy()
}

#[pymethods]
impl TaskFactory {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let loops = py.import("weakref")?.getattr("WeakKeyDictionary")?.call0()?.unbind();
        Ok(Self { loops, strong: PyDict::new(py).unbind() })
    }

    /// Make the task for `coro` on `event_loop`: the coroutine wrapped once per recorder
    /// timing the loop (so the task is a lane of each), the task made by the loop's
    /// previous factory (or `asyncio.Task(..., loop=event_loop, **kwargs)`), then adopted
    /// by each recorder (its name followed). Not a coroutine: the task is made unwrapped.
    #[pyo3(signature = (event_loop, coro, **kwargs))]
    fn __call__<'py>(
        &self,
        event_loop: &Bound<'py, PyAny>,
        coro: Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = event_loop.py();
        let (previous, recorders) = match self.state(event_loop)? {
            Some(state) => {
                let state = state.borrow();
                (Some(state.previous.clone_ref(py)), state.recorders.iter().map(|r| r.clone_ref(py)).collect())
            }
            None => (None, Vec::new()),
        };
        let mut handles = Vec::with_capacity(recorders.len());
        let mut wrapped = coro.clone();
        if !recorders.is_empty() && is_coroutine(&coro)? {
            for recorder in &recorders {
                let (handle, timed) = recorder
                    .bind(py)
                    .call_method1("wrap_task_coroutine", (&wrapped, &coro))?
                    .extract::<(Bound<'py, PyAny>, Bound<'py, PyAny>)>()?;
                handles.push((recorder, handle));
                wrapped = timed;
            }
        }
        let task = match previous.filter(|p| !p.is_none(py)) {
            Some(previous) => previous.bind(py).call((event_loop, &wrapped), kwargs)?,
            None => {
                let all = PyDict::new(py);
                all.set_item("loop", event_loop)?;
                if let Some(kwargs) = kwargs {
                    all.update(kwargs.as_mapping())?;
                }
                py.import("asyncio")?.getattr("Task")?.call(PyTuple::new(py, [&wrapped])?, Some(&all))?
            }
        };
        for (recorder, handle) in handles {
            recorder.bind(py).call_method1("adopt_task", (handle, &task))?;
        }
        Ok(task)
    }

    /// Route `event_loop`'s task creation through this factory for `recorder`
    /// (idempotent). The loop's current factory is kept and chained; when the application
    /// set its own after ours, that one is chained instead and ours set again.
    fn instrument(
        slf: &Bound<'_, Self>,
        event_loop: &Bound<'_, PyAny>,
        recorder: Bound<'_, NativeRecorder>,
    ) -> PyResult<()> {
        let py = slf.py();
        let current = event_loop.call_method0("get_task_factory")?;
        let state = match slf.get().state(event_loop)? {
            Some(state) => {
                if !current.is(slf) {
                    state.borrow_mut().previous = current.unbind();
                    event_loop.call_method1("set_task_factory", (slf,))?;
                }
                state
            }
            None => {
                let state = Bound::new(py, LoopState { previous: current.unbind(), recorders: Vec::new() })?;
                slf.get().set_state(event_loop, &state)?;
                event_loop.call_method1("set_task_factory", (slf,))?;
                state
            }
        };
        let mut state = state.borrow_mut();
        if !state.recorders.iter().any(|r| r.is(&recorder)) {
            state.recorders.push(recorder.unbind());
        }
        Ok(())
    }

    /// Take `recorder` out of every loop; a loop no recorder times any more gets its
    /// previous task factory back (if ours is still set) and is forgotten.
    fn release(slf: &Bound<'_, Self>, recorder: &Bound<'_, NativeRecorder>) -> PyResult<()> {
        for (event_loop, state) in slf.get().states(slf.py())? {
            let emptied = {
                let mut state = state.borrow_mut();
                let before = state.recorders.len();
                state.recorders.retain(|r| !r.is(recorder));
                before != state.recorders.len() && state.recorders.is_empty()
            };
            if emptied {
                if event_loop.call_method0("get_task_factory")?.is(slf) {
                    event_loop.call_method1("set_task_factory", (&state.borrow().previous,))?;
                }
                slf.get().drop_state(&event_loop)?;
            }
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LoopState>()?;
    m.add_class::<TaskFactory>()
}
