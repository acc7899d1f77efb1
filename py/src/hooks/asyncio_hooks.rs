//! `scope_profiler._asyncio_hooks`: the task factory every instrumented event loop shares,
//! and the record of which recorders time each loop's tasks. Patching
//! `asyncio.BaseEventLoop` (`run_forever`, `create_task`) stays in the Python module: those
//! are hooks, installed and restored by the trackers.
//!
//! One [`TaskFactory`] per process. Each loop it instruments keeps a chain of the factories
//! that make its tasks, and the recorders of the `track_async` trackers that instrumented
//! the loop, each wrapping the coroutine once (a `TimedCoroutine`). Release is
//! order-independent: a recorder leaving takes itself out of every loop, and a loop nobody
//! times any more gets back the factory it had before ours.
//!
//! The chain: the factory the loop had when first instrumented, and above it each factory
//! the application set over ours afterwards (found when the loop is instrumented again,
//! at the next `create_task` or `run_forever`; ours is then set again, so that a factory
//! that *replaces* ours without calling it still has its tasks timed). A factory that
//! *chains* to ours (reads `get_task_factory()`, sets its own and calls the one it read)
//! calls back into ours while ours is calling it: that call is recognised (same loop, a
//! chain call in progress, the same task current) and goes on down the chain, so every
//! factory runs once, the task is made once, and ours wraps and describes it once. A task
//! created from inside an eagerly started task's first step has a different current task,
//! so it is a new task, not a call back.
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use crate::recording::NativeRecorder;

/// One instrumented loop: the factories that make its tasks (top first; the last is the one
/// the loop had before ours, `None` for asyncio's default), the chain calls in progress,
/// and the recorders timing its tasks, in install order.
#[pyclass(module = "scope_profiler._native")]
pub struct LoopState {
    chain: Vec<Py<PyAny>>,
    /// `(chain index, task current when the call began)` of each chain call in progress.
    calls: Vec<(usize, Py<PyAny>)>,
    recorders: Vec<Py<NativeRecorder>>,
}

/// Where a call that is not a call back starts in `state`'s chain: at the top when ours is
/// the loop's factory; below the loop's factory when that one is in the chain (ours was
/// released and the application's factory, which chains to ours, put back); else at the
/// top (an application factory set over ours since the loop was last instrumented calls
/// ours as the one below it). No borrow of `state` is held while the loop is asked.
fn chain_start(
    state: &Bound<'_, LoopState>,
    factory: &Bound<'_, TaskFactory>,
    event_loop: &Bound<'_, PyAny>,
) -> PyResult<usize> {
    if state.borrow().chain.len() < 2 {
        return Ok(0);
    }
    let current = event_loop.call_method0("get_task_factory")?;
    if current.is(factory) {
        return Ok(0);
    }
    Ok(state.borrow().chain.iter().position(|f| f.is(&current)).map_or(0, |i| i + 1))
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

fn asyncio_function<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || py.import("asyncio")?.getattr(name).map(Bound::unbind)).map(|f| f.bind(py))
}

fn is_coroutine(coro: &Bound<'_, PyAny>) -> PyResult<bool> {
    static ISCOROUTINE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    asyncio_function(coro.py(), &ISCOROUTINE, "iscoroutine")?.call1((coro,))?.is_truthy()
}

/// `asyncio.current_task(event_loop)` (`None` outside a task step).
fn current_task<'py>(event_loop: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    static CURRENT_TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    asyncio_function(event_loop.py(), &CURRENT_TASK, "current_task")?.call1((event_loop,))
}

/// `asyncio.Task(coro, loop=event_loop, **kwargs)`: what a loop without a factory makes.
fn default_task<'py>(
    event_loop: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    static TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = event_loop.py();
    let all = PyDict::new(py);
    all.set_item("loop", event_loop)?;
    if let Some(kwargs) = kwargs {
        all.update(kwargs.as_mapping())?;
    }
    asyncio_function(py, &TASK, "Task")?.call(PyTuple::new(py, [coro])?, Some(&all))
}

/// The chain index a call continues at when it is a call back from the chain factory in
/// progress (same current task as when that call began), else `None` (a new task).
fn call_back_index(state: &Bound<'_, LoopState>, event_loop: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let py = event_loop.py();
    let Some((index, began_in)) = state.borrow().calls.last().map(|(i, t)| (*i, t.clone_ref(py))) else {
        return Ok(None);
    };
    Ok(current_task(event_loop)?.is(&began_in).then_some(index + 1))
}

/// Make the task with chain entry `index` (asyncio's default below the chain or for a
/// `None` entry), the call marked in progress so that a factory calling back into ours is
/// recognised.
fn make_with<'py>(
    state: &Bound<'py, LoopState>,
    index: usize,
    event_loop: &Bound<'py, PyAny>,
    coro: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = event_loop.py();
    let factory = state.borrow().chain.get(index).map(|f| f.clone_ref(py)).filter(|f| !f.is_none(py));
    let Some(factory) = factory else {
        return default_task(event_loop, coro, kwargs);
    };
    let began_in = current_task(event_loop)?.unbind();
    state.borrow_mut().calls.push((index, began_in));
    let made = factory.bind(py).call((event_loop, coro), kwargs);
    state.borrow_mut().calls.pop();
    made
}

#[pymethods]
impl TaskFactory {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let loops = py.import("weakref")?.getattr("WeakKeyDictionary")?.call0()?.unbind();
        Ok(Self { loops, strong: PyDict::new(py).unbind() })
    }

    /// Make the task for `coro` on `event_loop`: the coroutine wrapped once per recorder
    /// timing the loop (so the task is a lane of each), the task made by the loop's factory
    /// chain (or `asyncio.Task(..., loop=event_loop, **kwargs)`), then adopted by each
    /// recorder (its name followed). Not a coroutine: the task is made unwrapped. A call
    /// back from a chained factory only continues down the chain.
    #[pyo3(signature = (event_loop, coro, **kwargs))]
    fn __call__<'py>(
        slf: &Bound<'py, Self>,
        event_loop: &Bound<'py, PyAny>,
        coro: Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = event_loop.py();
        let Some(state) = slf.get().state(event_loop)? else {
            return default_task(event_loop, &coro, kwargs);
        };
        if let Some(next) = call_back_index(&state, event_loop)? {
            return make_with(&state, next, event_loop, &coro, kwargs);
        }
        let recorders: Vec<Py<NativeRecorder>> = state.borrow().recorders.iter().map(|r| r.clone_ref(py)).collect();
        let start = chain_start(&state, slf, event_loop)?;
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
        let task = make_with(&state, start, event_loop, &wrapped, kwargs)?;
        for (recorder, handle) in handles {
            recorder.bind(py).call_method1("adopt_task", (handle, &task))?;
        }
        Ok(task)
    }

    /// Route `event_loop`'s task creation through this factory for `recorder`
    /// (idempotent). The loop's current factory is kept in the chain; when the application
    /// set its own over ours, that one goes on top of the chain and ours is set again.
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
                    {
                        let mut state = state.borrow_mut();
                        state.chain.retain(|f| !f.is(&current));
                        state.chain.insert(0, current.unbind());
                    }
                    event_loop.call_method1("set_task_factory", (slf,))?;
                }
                state
            }
            None => {
                let state = LoopState { chain: vec![current.unbind()], calls: Vec::new(), recorders: Vec::new() };
                let state = Bound::new(py, state)?;
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

    /// Whether some recorder times `event_loop`'s new tasks.
    fn instruments(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.state(event_loop)?.is_some_and(|s| !s.borrow().recorders.is_empty()))
    }

    /// Take `recorder` out of every loop; a loop no recorder times any more gets the top
    /// of its chain back (if ours is still set). Its state is forgotten unless the chain
    /// holds a factory set over ours, which may still call ours: ours then passes its calls
    /// on down the chain, timing nothing.
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
                    let top = state.borrow().chain[0].clone_ref(slf.py());
                    event_loop.call_method1("set_task_factory", (top,))?;
                }
                if state.borrow().chain.len() < 2 {
                    slf.get().drop_state(&event_loop)?;
                }
            }
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LoopState>()?;
    m.add_class::<TaskFactory>()
}
