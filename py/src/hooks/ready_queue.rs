//! `ReadyQueue`: the ready queue (`loop._ready`) of a standard asyncio loop under
//! `track_async`, a `collections.deque` replacement that stamps each handle with the moment
//! it became ready and tells the recorders which handle runs (see
//! `scope_profiler_recorder::event_loop`).
//!
//! asyncio's `BaseEventLoop` uses its `_ready` deque through `append` (`call_soon`,
//! `_add_callback`, due timers in `_run_once`), `popleft` (`_run_once`), `len` and truth
//! (`_run_once`) and `clear` (`close`); the queue also offers `appendleft`, `pop`,
//! `remove` and iteration, as a deque does. A timer moved to the queue by `_run_once` is
//! ready at its deadline (`handle._when`, loop time = `time.monotonic()`, the recording
//! clock: the hooks instrument only loops whose `time()` is asyncio's); every other handle
//! as `LoopTimes::push` says. `popleft` starts the next handle's run (its ready moment
//! published for the step timer of the task it resumes) and ends the previous one; so does
//! the truth test at the top of each `_run_once`. A run of a plain callback that held the
//! loop for at least the block floor is recorded as a loop block of every recorder timing
//! the loop (a task step's block is recorded by its step timer).
//!
//! The hot path (`append`, `popleft`) makes no Python call except reading `_when` of timer
//! handles, and `popleft` after a handle that ran a task step takes the thread's latest clock
//! reading since the step's end as the moment instead of reading the clock
//! (`LoopTimes::next_start`: a few hundred ns early, the asyncio bookkeeping after a step). Frozen pyclass with an `UnsafeCell`: touched only with the GIL held, by the
//! loop's thread (asyncio's own contract for `_ready`; `call_soon_threadsafe` from another
//! thread appends under the GIL too).
use std::cell::UnsafeCell;
use std::collections::VecDeque;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use scope_profiler_recorder::event_loop::{HandleRun, LoopTimes};
use scope_profiler_recorder::now_ns;

use crate::recording::{record_callback_block, record_loop_idle, NativeRecorder};

struct Inner {
    handles: VecDeque<Py<PyAny>>,
    times: LoopTimes,
    recorders: Vec<Py<NativeRecorder>>,
}

/// A `collections.deque` of an asyncio loop's ready handles that times them (module docs).
#[pyclass(module = "scope_profiler._native", frozen, sequence)]
pub struct ReadyQueue {
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is only touched with the GIL held (GIL build; see the module docs).
unsafe impl Sync for ReadyQueue {}

/// `asyncio.Handle` and `asyncio.TimerHandle`.
fn handle_types(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    static TYPES: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();
    TYPES.get_or_try_init(py, || {
        let asyncio = py.import("asyncio")?;
        Ok((asyncio.getattr("Handle")?.unbind(), asyncio.getattr("TimerHandle")?.unbind()))
    })
}

/// The deadline of `handle` in ns when it is a timer handle. A plain `asyncio.Handle` (most
/// of them) is told by its type's address alone.
#[inline(always)]
fn deadline_ns(handle: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let py = handle.py();
    let (plain, timer) = handle_types(py)?;
    // SAFETY: `handle` is a live object; its type pointer is only compared.
    let ty = unsafe { pyo3::ffi::Py_TYPE(handle.as_ptr()) };
    if ty.cast() == plain.as_ptr() {
        return Ok(None);
    }
    if ty.cast() != timer.as_ptr() && !handle.get_type().is_subclass(timer.bind(py))? {
        return Ok(None);
    }
    let when: f64 = handle.getattr(intern!(py, "_when"))?.extract()?;
    Ok(when.is_finite().then(|| (when * 1e9).round() as i64))
}

impl ReadyQueue {
    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    fn inner(&self, _py: Python<'_>) -> &mut Inner {
        // SAFETY: GIL held (the `py` token), no other borrow lives across a Python call.
        unsafe { &mut *self.inner.get() }
    }

    /// A handle run ended: a plain callback that held the loop long enough is a block of
    /// every recorder timing the loop.
    fn ended(&self, py: Python<'_>, run: Option<HandleRun>) -> PyResult<()> {
        let Some(run) = run else { return Ok(()) };
        if run.task_step || run.end_ns - run.start_ns < scope_profiler_recorder::event_loop::BLOCK_FLOOR_NS {
            return Ok(());
        }
        let recorders: Vec<Py<NativeRecorder>> = self.inner(py).recorders.iter().map(|r| r.clone_ref(py)).collect();
        for r in recorders {
            record_callback_block(r.get(), py, run.start_ns, run.end_ns)?;
        }
        Ok(())
    }

    fn push(&self, py: Python<'_>, handle: Bound<'_, PyAny>, front: bool) -> PyResult<()> {
        let due = deadline_ns(&handle)?;
        let inner = self.inner(py);
        inner.times.push(now_ns(), due, front);
        if front {
            inner.handles.push_front(handle.unbind());
        } else {
            inner.handles.push_back(handle.unbind());
        }
        Ok(())
    }
}

#[pymethods]
impl ReadyQueue {
    /// A queue holding `handles` (the loop's deque, in order: ready from now) timed for
    /// `recorder`.
    #[new]
    fn new(py: Python<'_>, handles: &Bound<'_, PyAny>, recorder: Py<NativeRecorder>) -> PyResult<Self> {
        let mut times = LoopTimes::new();
        times.run_started(now_ns());
        let mut q = Inner { handles: VecDeque::new(), times, recorders: vec![recorder] };
        let now = now_ns();
        for h in handles.try_iter()? {
            q.times.push(now, None, false);
            q.handles.push_back(h?.unbind());
        }
        let _ = py;
        Ok(ReadyQueue { inner: UnsafeCell::new(q) })
    }

    fn append(&self, py: Python<'_>, handle: Bound<'_, PyAny>) -> PyResult<()> {
        self.push(py, handle, false)
    }

    fn appendleft(&self, py: Python<'_>, handle: Bound<'_, PyAny>) -> PyResult<()> {
        self.push(py, handle, true)
    }

    /// The next handle; its run starts now and the previous one's ends.
    fn popleft(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let inner = self.inner(py);
        let Some(handle) = inner.handles.pop_front() else {
            return Err(PyIndexError::new_err("pop from an empty deque"));
        };
        let now = inner.times.next_start().unwrap_or_else(now_ns);
        let ended = inner.times.pop_front(now);
        self.ended(py, ended)?;
        Ok(handle)
    }

    fn pop(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let inner = self.inner(py);
        let Some(handle) = inner.handles.pop_back() else {
            return Err(PyIndexError::new_err("pop from an empty deque"));
        };
        inner.times.pop_back();
        Ok(handle)
    }

    fn remove(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let inner = self.inner(py);
        let mut found = None;
        for (i, h) in inner.handles.iter().enumerate() {
            if h.bind(py).is(value) || h.bind(py).eq(value)? {
                found = Some(i);
                break;
            }
        }
        let Some(i) = found else {
            return Err(PyValueError::new_err("deque.remove(x): x not in deque"));
        };
        let inner = self.inner(py);
        inner.handles.remove(i);
        inner.times.remove_at(i);
        Ok(())
    }

    fn clear(&self, py: Python<'_>) {
        let inner = self.inner(py);
        inner.handles.clear();
        inner.times.clear();
    }

    /// The top of an iteration of the loop asks whether anything is ready: the handle that
    /// ran last ends.
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        let inner = self.inner(py);
        let ended = inner.times.poll(now_ns());
        let ready = !inner.handles.is_empty();
        self.ended(py, ended)?;
        Ok(ready)
    }

    /// The loop counts the queue to run a batch: the handle that ran last ends, and so does
    /// the wait with nothing ready that the truth test began, if any (the thread's idle time).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let inner = self.inner(py);
        let now = now_ns();
        let ended = inner.times.poll(now);
        let idle = inner.times.batch(now);
        for r in &inner.recorders {
            record_loop_idle(r.get(), idle);
        }
        let n = inner.handles.len();
        self.ended(py, ended)?;
        Ok(n)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let items: Vec<Py<PyAny>> = self.inner(py).handles.iter().map(|h| h.clone_ref(py)).collect();
        PyList::new(py, items)?.try_iter().map(Bound::into_any)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let items: Vec<Py<PyAny>> = self.inner(py).handles.iter().map(|h| h.clone_ref(py)).collect();
        Ok(format!("ReadyQueue({})", PyList::new(py, items)?.repr()?))
    }

    /// The loop starts running on the calling thread.
    fn run_started(&self, py: Python<'_>) {
        self.inner(py).times.run_started(now_ns());
    }

    /// The loop stopped running: the handle running (if any) ends.
    fn run_stopped(&self, py: Python<'_>) -> PyResult<()> {
        let ended = self.inner(py).times.run_stopped(now_ns());
        self.ended(py, ended)
    }

    /// Time the loop for `recorder` too (idempotent).
    fn add_recorder(&self, py: Python<'_>, recorder: Bound<'_, NativeRecorder>) {
        let inner = self.inner(py);
        if !inner.recorders.iter().any(|r| r.is(&recorder)) {
            inner.recorders.push(recorder.unbind());
        }
    }

    /// Stop timing the loop for `recorder`; returns how many recorders are left.
    fn remove_recorder(&self, py: Python<'_>, recorder: &Bound<'_, NativeRecorder>) -> usize {
        let inner = self.inner(py);
        inner.recorders.retain(|r| !r.is(recorder));
        inner.recorders.len()
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        // SAFETY: the collector runs with the GIL held.
        let inner = unsafe { &*self.inner.get() };
        for h in &inner.handles {
            visit.call(h)?;
        }
        for r in &inner.recorders {
            visit.call(r)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: the collector runs with the GIL held.
        let inner = unsafe { &mut *self.inner.get() };
        let handles = std::mem::take(&mut inner.handles);
        let recorders = std::mem::take(&mut inner.recorders);
        inner.times.clear();
        // released after the borrow: a finalizer they run may use the queue
        drop((handles, recorders));
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ReadyQueue>()
}
