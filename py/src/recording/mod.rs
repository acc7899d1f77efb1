//! Recording glue: region objects, the `@profile` wrapper, the manager's native state and
//! the thread-exit hook. The hot paths (`with region:`, calling a decorated function) are
//! PyO3 methods that go straight into [`scope_profiler_recorder`]: one clock read at entry,
//! one at exit, per-thread buffers found through a thread-local, no lock, no allocation in
//! the steady state.
//!
//! # Threading and the GIL
//! The recorder's readers (snapshot, rewind, `num_calls`) require that no thread is inside
//! `enter`/`exit` of the same recorder at the same time (see the recorder crate docs). Here
//! that is the GIL: every `enter`/`exit` and every reader runs while holding it and never
//! releases it in between. The rebindable slot of a [`ProfiledFunction`] is likewise only
//! read and written with the GIL held. This module therefore assumes a GIL build of CPython
//! (not free-threaded 3.13t).
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

mod lookup;
mod stream;
mod tasks;
mod tracer;
pub use tasks::{TaskHandle, TimedCoroutine};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_finalize::{checkpoint_with_prior, CheckpointError, CheckpointRequest, ForeignRegion};
use scope_profiler_recorder::{Recorder, RegionMeta, RegionTable, TaskKind, ThreadInfo, ThreadRecord, ThreadState};

use crate::errors::write_failure_err;
use crate::run::NativeRun;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeRecorder>()?;
    m.add_class::<ProfileRegion>()?;
    lookup::install_region_methods(m.py())?;
    m.add_class::<lookup::RegionCache>()?;
    m.add_class::<ProfiledFunction>()?;
    m.add_class::<ThreadExitSentinel>()?;
    m.add_class::<TaskHandle>()?;
    m.add_class::<TimedCoroutine>()?;
    m.add_function(wrap_pyfunction!(perf_counter_ns, m)?)?;
    m.add_function(wrap_pyfunction!(thread_time_ns, m)?)?;
    m.add_function(wrap_pyfunction!(check_region_name_py, m)?)?;
    tracer::register(m)?;
    Ok(())
}

/// The recorder clock (`CLOCK_MONOTONIC`, ns); equal to `time.perf_counter_ns()` on Linux.
#[pyfunction]
fn perf_counter_ns() -> i64 {
    scope_profiler_recorder::now_ns()
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`, ns).
#[pyfunction]
fn thread_time_ns() -> i64 {
    scope_profiler_recorder::thread_cpu_ns()
}

/// `check_region_name(name)` for Python: [`region_name_text`] without keeping the text.
#[pyfunction]
#[pyo3(name = "check_region_name")]
fn check_region_name_py(name: &Bound<'_, PyAny>) -> PyResult<()> {
    region_name_text(region_name_str(name)?).map(drop)
}

/// A region name given by Python as the `str` it must be: `TypeError` naming the type and
/// value otherwise (not just "'int' object is not an instance of 'str'", which does not say
/// which argument).
pub(crate) fn region_name_str<'a, 'py>(name: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    name.cast::<PyString>().map_err(|_| {
        let kind = name.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        let shown = name.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        let hint = if name.is_instance_of::<pyo3::types::PyBytes>() { "; decode it first" } else { "" };
        pyo3::exceptions::PyTypeError::new_err(format!("region name must be a str, not {kind} ({shown}){hint}"))
    })
}

/// The text of a region name given by Python, refused ([`check_region_name`]) when a
/// profile file cannot hold it unchanged. A name that is not valid Unicode text - a lone
/// surrogate, as `os.fsdecode` gives for undecodable bytes - has no UTF-8 form:
/// `ValueError` naming the region (its `repr`), the character and its position, caused by
/// the `UnicodeEncodeError` (which names neither the region nor what to do).
pub(crate) fn region_name_text<'a>(name: &'a Bound<'_, PyString>) -> PyResult<std::borrow::Cow<'a, str>> {
    let text = name.to_cow().map_err(|e| {
        let py = name.py();
        let value = e.value(py);
        let at = value.getattr("start").and_then(|s| s.extract::<usize>()).ok();
        let what = at
            .and_then(|i| name.get_item(i).ok())
            .and_then(|c| c.repr().ok())
            .map(|c| format!("the lone surrogate {c} at position {}", at.unwrap_or(0)))
            .unwrap_or_else(|| "a lone surrogate".to_string());
        let shown = name.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        let err = pyo3::exceptions::PyValueError::new_err(format!(
            "region name {shown} contains {what}, which is not valid Unicode text: a profile \
             file (UTF-8) cannot hold it; choose a name without it (decode the bytes it comes \
             from with errors='replace', or name the region yourself)"
        ));
        err.set_cause(py, Some(e));
        err
    })?;
    check_region_name(&text)?;
    Ok(text)
}

/// Refuse a region name the profile file cannot hold unchanged: HDF5 strings end at NUL,
/// so a name with `\0` would come back altered. `ValueError` naming
/// the name and why.
pub(crate) fn check_region_name(name: &str) -> PyResult<()> {
    if name.contains('\0') {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "region name {} contains a NUL character (\\x00), which a profile file cannot hold \
             (HDF5 strings end at NUL); choose a name without it",
            scope_profiler_analysis::py_repr(name)
        )));
    }
    Ok(())
}

/// A thread or task name as recorded. The name comes from the program (`threading`,
/// `asyncio`, greenlet), so it is not refused; a NUL, which the profile file cannot hold,
/// is recorded as the four visible characters `\x00` (which round-trip), with one
/// `RuntimeWarning` per recorder (`warned`).
pub(crate) fn recorded_name(py: Python<'_>, what: &str, name: String, warned: &AtomicBool) -> PyResult<String> {
    if !name.contains('\0') {
        return Ok(name);
    }
    let escaped = name.replace('\0', "\\x00");
    if !warned.swap(true, Ordering::Relaxed) {
        let message = format!(
            "{what} name {} contains a NUL character, which a profile file cannot hold; it is recorded \
             as {} (further such names are escaped without a warning)",
            scope_profiler_analysis::py_repr(&name),
            scope_profiler_analysis::py_repr(&escaped)
        );
        let message = std::ffi::CString::new(message).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, 1)?;
    }
    Ok(escaped)
}

/// What a [`NativeRecorder`] and its regions share.
/// A native region handed to `finalize`: `(name, starts, ends, source_file, source_line)`.
type NativeRegionArg<'py> =
    (String, numpy::PyReadonlyArray1<'py, i64>, numpy::PyReadonlyArray1<'py, i64>, Option<String>, Option<i64>);

pub(crate) struct Shared {
    rec: Recorder,
    regions: RegionTable,
    /// A `threading.local()`: holds each registered thread's [`ThreadExitSentinel`].
    local: Py<PyAny>,
    /// Called (no arguments) on a thread right after it registered lazily (the greenlet
    /// hooks use it to follow that thread's switches too).
    on_register: Mutex<Option<Py<PyAny>>>,
    /// A checkpoint is running (set and cleared with the GIL held; see [`Shared::checkpoint_turn`]).
    checkpointing: AtomicBool,
    /// A thread or task name with NUL was escaped and warned about ([`recorded_name`]).
    pub(crate) nul_warned: AtomicBool,
    /// `flush_interval`: the sidecar and its flusher thread ([`stream`]).
    stream: stream::Stream,
    /// The calls the last checkpoint took without retiring them (`rewind=False`), for
    /// [`NativeRecorder::retire_taken`] once they are written elsewhere.
    taken: Mutex<Option<(scope_profiler_recorder::Watermark, usize)>>,
    /// Exited `ProfileManager.metadata()` scopes, applied to the calls at each checkpoint.
    metadata_scopes: scope_profiler_finalize::MetadataScopes,
}

/// Held while a checkpoint runs; clears [`Shared::checkpointing`] when dropped.
struct CheckpointTurn<'a>(&'a AtomicBool);

impl Drop for CheckpointTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Shared {
    /// The calling thread's state, registering the thread on first use (slow path: with
    /// tracking it reads `threading.current_thread()` and parks the exit sentinel).
    #[inline]
    fn state(&self, py: Python<'_>) -> PyResult<*const ThreadState> {
        match self.rec.local() {
            Some(p) => Ok(p),
            None => self.register_current(py),
        }
    }

    #[cold]
    fn register_current(&self, py: Python<'_>) -> PyResult<*const ThreadState> {
        if !self.rec.tracking() {
            let (state, _) = self.rec.register_current_thread(ThreadInfo::default());
            // The thread-local list keeps an Arc, so the pointer outlives this call.
            return Ok(Arc::as_ptr(&state));
        }
        let threading = py.import("threading")?;
        let t = threading.call_method0("current_thread")?;
        let int_attr = |name: &str| -> i64 {
            t.getattr(name).ok().and_then(|v| v.extract::<Option<i64>>().ok()).flatten().unwrap_or(0)
        };
        // The OS's id of this thread, not the Thread object's: a thread made outside
        // `threading` (`_thread.start_new_thread`, C code) whose ident the OS reused gets
        // the stale `_DummyThread` of the thread that had it before, whose name
        // then says which thread this is. (A real Thread's native_id can also be stale for
        // a moment - in a forked child before threading's own fork handler runs - but its
        // name is right.)
        let native_id: i64 = threading.call_method0("get_native_id")?.extract()?;
        let mut name = t.getattr("name")?.str()?.to_string();
        let object_native_id = int_attr("native_id");
        let dummy = t.is_instance(&threading.getattr("_DummyThread")?)?;
        if dummy && object_native_id != 0 && object_native_id != native_id {
            name = format!("{name} (native id {native_id})");
        }
        let info = ThreadInfo {
            ident: int_attr("ident"),
            native_id,
            name: recorded_name(py, "thread", name, &self.nul_warned)?,
            daemon: t.getattr("daemon")?.is_truthy()?,
        };
        let (state, created) = self.rec.register_current_thread(info);
        if created {
            if let Some(record) = state.record() {
                let sentinel = Py::new(py, ThreadExitSentinel { record: Arc::clone(record) })?;
                self.local.bind(py).setattr("sentinel", sentinel)?;
            }
            let callback = self.on_register.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|c| c.clone_ref(py));
            if let Some(cb) = callback {
                if let Err(e) = cb.call0(py) {
                    e.write_unraisable(py, Some(cb.bind(py)));
                }
            }
        }
        Ok(Arc::as_ptr(&state))
    }

    /// Wait (GIL released) until no other thread runs a checkpoint of this recorder, then
    /// take the turn. The flag only changes with the GIL held, so check-and-set is atomic.
    fn checkpoint_turn(&self, py: Python<'_>) -> CheckpointTurn<'_> {
        while self.checkpointing.swap(true, Ordering::AcqRel) {
            py.detach(|| {
                while self.checkpointing.load(Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            });
        }
        CheckpointTurn(&self.checkpointing)
    }

    fn meta(&self) -> std::sync::MutexGuard<'_, Vec<RegionMeta>> {
        self.regions.lock()
    }
}

/// Parked in a `threading.local` of the tracker; CPython drops it on the dying thread
/// when that thread's state is cleared (before `join()` returns), which is the only place
/// the thread's own CPU clock can be read. `Drop` stamps the exact CPU total and the end.
/// The clocks are Rust functions, so this also works during interpreter shutdown.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct ThreadExitSentinel {
    record: Arc<ThreadRecord>,
}

impl Drop for ThreadExitSentinel {
    fn drop(&mut self) {
        self.record.mark_exited();
    }
}

#[pymethods]
impl ThreadExitSentinel {
    #[getter]
    fn index(&self) -> usize {
        self.record.index
    }
}

/// An adopted asyncio task: its row's handle and a weak reference to the `Task`.
type LiveTask = (Py<TaskHandle>, Py<PyAny>);

/// The native state of one profiling configuration: the recorder (buffers, thread table)
/// and the region table. Created by `ProfilingConfig`; regions come from [`Self::region`].
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct NativeRecorder {
    shared: Arc<Shared>,
    /// asyncio tasks still referenced: task index -> (handle, weak reference to the Task),
    /// so [`NativeRecorder::refresh_task_names`] reports `get_name()` as of now.
    live_tasks: Mutex<std::collections::BTreeMap<usize, LiveTask>>,
    /// Greenlet lanes ([`tasks::GreenletLanes`]), made at the first switch.
    greenlets: pyo3::sync::PyOnceLock<tasks::GreenletLanes>,
}

fn to_meta_value(v: &Bound<'_, PyAny>) -> PyResult<MetaValue> {
    if v.is_instance_of::<PyString>() {
        return Ok(MetaValue::Str(v.extract()?));
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(MetaValue::Int(v.is_truthy()? as i64));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(MetaValue::Int(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(MetaValue::Float(v.extract()?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for item in v.try_iter()? {
            out.push(item?.str()?.to_string());
        }
        return Ok(MetaValue::StrList(out));
    }
    Ok(MetaValue::Str(v.str()?.to_string()))
}

#[pymethods]
impl NativeRecorder {
    #[new]
    #[pyo3(signature = (buffer_limit=1024, track_threads=false, track_async=false))]
    fn new(py: Python<'_>, buffer_limit: i64, track_threads: bool, track_async: bool) -> PyResult<Self> {
        let local = py.import("threading")?.getattr("local")?.call0()?.unbind();
        let rec = Recorder::with_tasks(buffer_limit.max(1) as usize, track_threads, track_async);
        // the creating thread (setup()'s) counts its wall and CPU time from now
        rec.mark_start_thread();
        Ok(NativeRecorder {
            shared: Arc::new(Shared {
                rec,
                regions: RegionTable::new(),
                local,
                on_register: Mutex::new(None),
                checkpointing: AtomicBool::new(false),
                nul_warned: AtomicBool::new(false),
                stream: Default::default(),
                taken: Mutex::new(None),
                metadata_scopes: Default::default(),
            }),
            live_tasks: Mutex::new(Default::default()),
            greenlets: pyo3::sync::PyOnceLock::new(),
        })
    }

    /// Mark now as the run's start for the calling thread (`setup()`'s): its row starts here
    /// when it registers. Returns the moment, ns on the recording clock (`CLOCK_MONOTONIC`,
    /// `time.perf_counter_ns()`'s on Linux): the run's `start_time_ns`.
    pub(crate) fn mark_start(&self) -> i64 {
        self.shared.rec.mark_start_thread()
    }

    #[getter]
    fn track_threads(&self) -> bool {
        self.shared.rec.tracking()
    }

    /// Whether calls carry task ids and await times.
    #[getter]
    fn track_async(&self) -> bool {
        self.shared.rec.async_columns()
    }

    /// Callable run (no arguments) on each thread right after it registers lazily
    /// (first region entry / step / switch); None removes it.
    #[pyo3(signature = (callback=None))]
    fn set_register_callback(&self, callback: Option<Py<PyAny>>) {
        *self.shared.on_register.lock().unwrap_or_else(|e| e.into_inner()) = callback;
    }

    /// Register a task lane (`kind` "task" or "greenlet"); its thread is the calling one.
    #[pyo3(signature = (kind, name, coro_name))]
    fn new_task(&self, py: Python<'_>, kind: &str, name: String, coro_name: String) -> PyResult<TaskHandle> {
        let kind = match kind {
            "task" => TaskKind::Task,
            "greenlet" => TaskKind::Greenlet,
            other => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown task kind {other:?}"))),
        };
        let name = recorded_name(py, "task", name, &self.shared.nul_warned)?;
        let coro_name = recorded_name(py, "task", coro_name, &self.shared.nul_warned)?;
        let st = self.shared.state(py)?;
        // SAFETY: the calling thread's own state.
        let thread = unsafe { &*st }.index() as i64;
        Ok(TaskHandle {
            task: self.shared.rec.new_task(kind, name, coro_name, thread),
            shared: Arc::clone(&self.shared),
        })
    }

    /// A task lane for an asyncio task about to run `coro` (its `coro_name` is
    /// [`tasks::qualname`] of `coro`, the name is set by [`Self::adopt_task`]) and `wrapped`
    /// (the object the task will step) timed on it: `(handle, timed coroutine)`.
    fn wrap_task_coroutine(
        &self,
        py: Python<'_>,
        wrapped: Py<PyAny>,
        coro: &Bound<'_, PyAny>,
    ) -> PyResult<(TaskHandle, TimedCoroutine)> {
        let handle = self.new_task(py, "task", String::new(), tasks::qualname(coro)?)?;
        let timed = TimedCoroutine::new(wrapped, &handle, Arc::clone(&self.shared));
        Ok((handle, timed))
    }

    /// Follow `task` (an `asyncio.Task`) on `handle`'s row: its name now, at each
    /// [`Self::refresh_task_names`] while it is referenced, and when it is done (a done
    /// callback, which also marks the row done).
    fn adopt_task(&self, py: Python<'_>, handle: Bound<'_, TaskHandle>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        handle.get().set_name(py, task.call_method0("get_name")?.extract()?)?;
        let weak = py.import(pyo3::intern!(py, "weakref"))?.getattr("ref")?.call1((task,))?;
        let index = handle.get().task.index;
        let done = handle.getattr("finish_task")?;
        self.live_tasks.lock().unwrap_or_else(|e| e.into_inner()).insert(index, (handle.unbind(), weak.unbind()));
        task.call_method1("add_done_callback", (done,))?;
        Ok(())
    }

    /// Names of the adopted tasks as `Task.get_name()` answers now (`set_name` after
    /// creation); tasks no longer referenced are dropped from the follow list.
    fn refresh_task_names(&self, py: Python<'_>) -> PyResult<()> {
        let live: Vec<(usize, Py<TaskHandle>, Py<PyAny>)> = {
            let guard = self.live_tasks.lock().unwrap_or_else(|e| e.into_inner());
            guard.iter().map(|(i, (h, w))| (*i, h.clone_ref(py), w.clone_ref(py))).collect()
        };
        for (index, handle, weak) in live {
            let task = weak.bind(py).call0()?;
            if task.is_none() {
                self.live_tasks.lock().unwrap_or_else(|e| e.into_inner()).remove(&index);
            } else {
                handle.get().set_name(py, task.call_method0("get_name")?.extract()?)?;
            }
        }
        Ok(())
    }

    /// Wrap `coro` so each step of the task runs on `handle`'s lane and is timed.
    fn timed_coroutine(&self, coro: Py<PyAny>, handle: &TaskHandle) -> TimedCoroutine {
        TimedCoroutine::new(coro, handle, Arc::clone(&self.shared))
    }

    /// A `greenlet` switch (or throw) on the calling thread from `origin` to `target`: the
    /// origin's row is finished if it is dead (or gets its target's name from its outermost
    /// frame if that was unknown), then the thread's lane becomes the target's (a new row,
    /// kind `"greenlet"`, on its first switch in) or, for a main greenlet (no `parent`), the
    /// thread's bare lane.
    pub(crate) fn greenlet_switch(
        &self,
        py: Python<'_>,
        origin: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let lanes = self.greenlets.get_or_try_init(py, || tasks::GreenletLanes::new(py))?;
        lanes.leave(py, origin)?;
        if target.getattr(pyo3::intern!(py, "parent"))?.is_none() {
            return tasks::switch_lane(&self.shared, py, None);
        }
        let record = match lanes.record(py, target)? {
            Some(record) => record,
            None => {
                let (name, coro_name) = tasks::greenlet_names(target)?;
                let unnamed = coro_name.is_none();
                let coro_name = match coro_name {
                    Some(n) => n,
                    None => target.get_type().qualname()?.to_string(),
                };
                let record = Bound::new(py, self.new_task(py, "greenlet", name, coro_name)?)?;
                lanes.add(py, target, &record, unnamed)?;
                record
            }
        };
        tasks::switch_lane(&self.shared, py, Some(record.get()))
    }

    /// Greenlet switch on the calling thread to `target` (None = its main greenlet, the
    /// thread's bare lane).
    #[pyo3(signature = (target=None))]
    fn switch_lane(&self, py: Python<'_>, target: Option<&TaskHandle>) -> PyResult<()> {
        tasks::switch_lane(&self.shared, py, target)
    }

    /// Index of the task running on the calling thread, or None.
    fn current_task(&self) -> Option<usize> {
        tasks::current_task(&self.shared)
    }

    /// The task table as `TaskInfo` rows (times relative to `origin_ns`, -1 kept).
    #[pyo3(signature = (origin_ns=0))]
    fn task_table(&self, origin_ns: i64) -> Vec<crate::concurrency::TaskInfo> {
        let tasks = self.shared.rec.task_rows(origin_ns).into_iter().map(scope_profiler_finalize::snapshot::task_row);
        let run = std::sync::Arc::new(Run { tasks: tasks.collect(), ..Run::default() });
        (0..run.tasks.len()).map(|i| crate::concurrency::TaskInfo::of(&run, i)).collect()
    }

    #[getter]
    fn buffer_limit(&self) -> usize {
        self.shared.rec.buffer_limit()
    }

    /// The region named `name` (created with a new id on first use; a later call with the
    /// same name returns an object with the same id and the first call's tags). Callers
    /// cache the object by name. `enabled=False` gives a region whose `with`/decorator
    /// paths do nothing. `cache`: the manager's `RegionCache`, through which the region
    /// records into a later `setup()`'s run.
    #[pyo3(signature = (name, tags=Vec::new(), enabled=true, cache=None))]
    fn region(
        &self,
        name: &Bound<'_, PyAny>,
        tags: Vec<String>,
        enabled: bool,
        cache: Option<Py<lookup::RegionCache>>,
    ) -> PyResult<ProfileRegion> {
        let name = region_name_text(region_name_str(name)?)?;
        // Get-or-create by name under the table's lock: two threads creating the same
        // region at once (the Python-level cache is not atomic) still share one id.
        let (id, _) = self.shared.regions.get_or_create(&name, tags);
        Ok(ProfileRegion::of(&self.shared, id, enabled, cache))
    }

    /// Register the calling thread now (the `threading.setprofile` bootstrap hook calls
    /// this at the thread's first bytecode). Idempotent. Returns its index.
    fn register_thread(&self, py: Python<'_>) -> PyResult<usize> {
        let p = self.shared.state(py)?;
        // SAFETY: pointer from `state`, valid on this thread.
        Ok(unsafe { &*p }.index())
    }

    /// Whether the calling thread has registered with this recorder.
    fn is_registered(&self) -> bool {
        self.shared.rec.local().is_some()
    }

    /// Pause/resume: while paused, entries push a placeholder and record nothing.
    fn set_paused(&self, paused: bool) {
        self.shared.rec.set_paused(paused)
    }

    #[getter]
    pub(crate) fn paused(&self) -> bool {
        self.shared.rec.paused()
    }

    /// Names of regions with an open (non-paused) call on any thread, registration order.
    fn open_region_names(&self) -> Vec<String> {
        // SAFETY: GIL held (module contract).
        let mut open = unsafe { self.shared.rec.open_regions() };
        open.sort();
        open.dedup_by_key(|(r, _)| *r);
        let meta = self.shared.meta();
        open.into_iter().map(|(r, _)| meta[r as usize].name.to_string()).collect()
    }

    /// The thread table as `ThreadInfo` rows (times relative to `origin_ns`, -1 kept).
    /// Re-samples the calling thread's CPU. Empty without tracking.
    #[pyo3(signature = (origin_ns=0))]
    fn thread_table(&self, origin_ns: i64) -> Vec<crate::concurrency::ThreadInfo> {
        let threads =
            self.shared.rec.thread_rows(origin_ns).into_iter().map(scope_profiler_finalize::snapshot::thread_row);
        let run = std::sync::Arc::new(Run { threads: threads.collect(), ..Run::default() });
        (0..run.threads.len()).map(|i| crate::concurrency::ThreadInfo::of(&run, i)).collect()
    }

    /// Completed calls per region, without side effects (diagnostics and tests):
    /// list of `(name, starts, ends, thread_ids)`.
    #[allow(clippy::type_complexity)]
    fn snapshot(&self) -> Vec<(String, Vec<i64>, Vec<i64>, Vec<i64>)> {
        let meta = self.shared.meta();
        // SAFETY: GIL held (module contract).
        let snap = unsafe { self.shared.rec.snapshot(meta.len()) };
        snap.into_iter().map(|c| (meta[c.region as usize].name.to_string(), c.starts, c.ends, c.thread_ids)).collect()
    }

    /// Whether any completed call is held (not yet written or flushed): `snapshot()` is
    /// non-empty, without copying the calls.
    fn has_completed_calls(&self) -> bool {
        // SAFETY: GIL held (module contract).
        unsafe { self.shared.rec.has_completed_calls() }
    }

    /// `flush_interval`: from now on, every `interval` seconds a background
    /// thread appends the calls completed since the last flush, with the thread and task
    /// tables and `metadata`, to a sidecar beside `file_path` (`.NAME.<tag>-<pid>.partial`),
    /// fsynced, and retires them; `finalize()` writes them into the file and removes the
    /// sidecar. Returns the sidecar's path.
    fn start_flush(
        &self,
        py: Python<'_>,
        file_path: std::path::PathBuf,
        interval: f64,
        metadata: &Bound<'_, PyDict>,
        start_time_ns: i64,
    ) -> PyResult<String> {
        let path = stream::start(&self.shared, py, file_path, interval, metadata, start_time_ns)?;
        Ok(path.to_string_lossy().into_owned())
    }

    /// Retire the calls the last `finalize(rewind=False)` took (they were written by another
    /// process: under MPI, rank 0): the next finalize no longer reports them. Nothing when
    /// that finalize retired its calls itself or a later one ran. Call it only once the
    /// calls are safely written - until then a failed write loses nothing.
    fn retire_taken(&self, py: Python<'_>) {
        let _turn = self.shared.checkpoint_turn(py);
        if let Some((mark, scopes)) = self.shared.taken.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: GIL held (module contract); `_turn` keeps checkpoints out.
            unsafe { self.shared.rec.retire(&mark) };
            self.shared.metadata_scopes.retire(scopes);
        }
    }

    /// Record an exited `ProfileManager.metadata()` block: entered at `start_ns`, exited at
    /// `end_ns` (this clock, `perf_counter_ns`), with `values` = `json.dumps` of its merged
    /// dict. The next checkpoint gives its values to every call wholly inside that time, on
    /// any thread ([`scope_profiler_finalize::metadata_scopes`]). ValueError when `values`
    /// is not a JSON object.
    pub(crate) fn add_metadata_scope(&self, start_ns: i64, end_ns: i64, values: &str) -> PyResult<()> {
        let scope = scope_profiler_finalize::MetadataScope::new(start_ns, end_ns, values)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        self.shared.metadata_scopes.push(scope);
        Ok(())
    }

    /// Flush now (what the flush thread does every interval); returns the calls flushed.
    fn flush_now(&self, py: Python<'_>) -> PyResult<usize> {
        stream::flush_now(&self.shared, py)
    }

    /// End the flush thread; the sidecar stays for the next `finalize()`.
    fn stop_flush(&self, py: Python<'_>) {
        stream::stop(&self.shared, py)
    }

    /// End the flush thread and remove the sidecar (the run is discarded).
    fn discard_flush(&self, py: Python<'_>) {
        stream::discard(&self.shared, py)
    }

    /// The sidecar's path while this process streams (`flush_interval`), else None.
    #[getter]
    fn sidecar_path(&self) -> Option<String> {
        stream::path(&self.shared)
    }

    /// `os.register_at_fork(before=...)` (`scope_profiler._fork`): sample the forking
    /// thread's CPU so a forked child can continue its row.
    fn _before_fork(&self) {
        self.shared.rec.before_fork()
    }

    /// In a forked child (`scope_profiler._fork`): threads gone with the fork end now,
    /// the forking thread's row carries on with `native_id`. Returns the rows closed.
    fn _after_fork_in_child(&self, native_id: i64) -> usize {
        // a checkpoint running on another thread of the parent does not exist here
        self.shared.checkpointing.store(false, Ordering::Release);
        self.shared.rec.after_fork_in_child(native_id)
    }

    /// Finalize (checkpoint, [`scope_profiler_finalize::checkpoint`]): snapshot completed
    /// calls and the thread table into a `Run` (rank 0), number calls from `call_id_base`
    /// (on a nesting failure: no call graph, the message is returned as the third
    /// element), write `file_path` as HDF5 (atomically) when `write_file`, then rewind the
    /// buffers (only the calls written; calls recorded during the write stay).
    /// Returns `(NativeRun, next_call_id, nesting_error_message_or_None, write_error_or_None)`.
    ///
    /// A failed write raises nothing here: the fourth element is the exception to raise
    /// (the `OSError` subclass of its errno, `filename` = `file_path`), the run is returned
    /// all the same, nothing is rewound and `next_call_id` is `call_id_base` (a retry
    /// numbers the same calls again).
    ///
    /// `rewind` (default: `write_file`) rewinds the buffers even though this call writes
    /// no file: under MPI rank 0 writes every rank's calls (`scope_profiler._mpi`).
    ///
    /// `close_open` (the end of a recording: a session's end, the exit-time finalize): calls
    /// still open go into the run as calls ending now, flagged `{"open_at_finalize": true}`
    /// in their per-call metadata. Either way a `RuntimeWarning` names the calls that were
    /// open (region, lane, how long).
    /// `expected_open` names regions whose open calls are normal at a checkpoint (a
    /// session's root region) and not warned about.
    /// `native`: regions recorded outside the recorder for this rank (C/Fortran traces),
    /// `(name, starts, ends, source_file, source_line)` with int64 ns arrays: rows without
    /// thread or task (lane -1); `ValueError` for a name also recorded here.
    /// `stacklevel`: of the open-calls `RuntimeWarning`, as `warnings.warn`'s from the
    /// calling Python frame (the manager passes the user's frame, not its own).
    #[pyo3(signature = (metadata, start_time_ns, write_file, file_path, call_id_base=0, rewind=None, close_open=false, expected_open=Vec::new(), native=Vec::new(), stacklevel=1))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn finalize(
        &self,
        py: Python<'_>,
        metadata: &Bound<'_, PyDict>,
        start_time_ns: i64,
        write_file: bool,
        file_path: String,
        call_id_base: i64,
        rewind: Option<bool>,
        close_open: bool,
        expected_open: Vec<String>,
        native: Vec<NativeRegionArg<'_>>,
        stacklevel: i32,
    ) -> PyResult<(Py<NativeRun>, i64, Option<String>, Option<Py<pyo3::exceptions::PyBaseException>>)> {
        let mut meta_vals = Vec::with_capacity(metadata.len());
        for (k, v) in metadata.iter() {
            meta_vals.push((k.str()?.to_string(), to_meta_value(&v)?));
        }
        let path = std::path::PathBuf::from(&file_path);
        // the snapshot's moment: open calls end there, and the warning measures to it
        let now = scope_profiler_recorder::now_ns();
        let close_open_at = close_open.then_some(now);
        let req = CheckpointRequest {
            metadata: meta_vals,
            start_time_ns,
            rewind: rewind.unwrap_or(write_file),
            call_id_base,
            write_to: write_file.then_some(path.as_path()),
            close_open_at,
            foreign: native
                .into_iter()
                .map(|(name, starts, ends, source_file, source_line)| ForeignRegion {
                    name,
                    start_ns: starts.as_array().to_vec(),
                    end_ns: ends.as_array().to_vec(),
                    source_file,
                    source_line,
                })
                .collect(),
            metadata_scopes: Some(&self.shared.metadata_scopes),
        };
        // One checkpoint at a time: the write runs with the GIL released and the buffers
        // are rewound after it, so another thread's finalize must wait (GIL released).
        let _turn = self.shared.checkpoint_turn(py);
        // flush_interval: the calls flushed to the sidecar since the last checkpoint
        let prior = if write_file { stream::prior(&self.shared, py)? } else { Vec::new() };
        // SAFETY: GIL held for the snapshot and the rewind (module contract); it is released
        // only for the HDF5 write, which does not touch the recorder; `_turn` keeps other
        // checkpoints out meanwhile.
        let outcome = unsafe {
            checkpoint_with_prior(&self.shared.rec, &self.shared.regions, req, prior, |write| py.detach(write))
        };
        let (done, error) = match outcome {
            Ok(done) => {
                if write_file {
                    stream::published(&self.shared); // its calls are in the file now
                }
                (done, None)
            }
            Err(CheckpointError::Write { failure, mut unwritten }) => {
                unwritten.next_call_id = call_id_base;
                (*unwritten, Some(write_failure_err(failure, &file_path).into_value(py)))
            }
            Err(CheckpointError::Snapshot(e)) => return Err(pyo3::exceptions::PyRuntimeError::new_err(e.to_string())),
            Err(CheckpointError::Foreign(m)) => return Err(pyo3::exceptions::PyValueError::new_err(m)),
        };
        let mut done = done;
        *self.shared.taken.lock().unwrap_or_else(|e| e.into_inner()) =
            done.taken.take().map(|m| (m, done.scopes_taken));
        done.open.retain(|(name, _)| !expected_open.contains(name));
        if let Some(message) = done.open_calls_warning(now, close_open) {
            let message = std::ffi::CString::new(message.replace('\0', "\\x00")).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, stacklevel)?;
        }
        let native = Py::new(py, NativeRun::new(done.run, file_path))?;
        Ok((native, done.next_call_id, done.warning, error))
    }
}

/// A region as returned by `ProfileManager.region(name)`: a re-entrant context manager
/// usable from any thread. `__enter__`/`__exit__` are the recorder's hot path.
#[pyclass(module = "scope_profiler._native", frozen)]
///
/// Small (one per region name): the name, tags and source live in the recorder's
/// region table, read through `id`; only a region made without a recorder (`disabled()`)
/// carries its own name and tags.
pub struct ProfileRegion {
    /// What the region records into; replaced when it is re-resolved after a `setup()` or
    /// `reset()` (see [`ProfileRegion::resolve`]). Read and written with the GIL held.
    binding: UnsafeCell<RegionBinding>,
    /// The manager's region lookup this region came from (None: made without a manager):
    /// through it a region object kept across `setup()` calls records into the current run.
    cache: Option<Py<lookup::RegionCache>>,
    /// This region's bound `__enter__` and `__exit__`, made on first use and handed out by
    /// `with` from then on ([`lookup::RegionMethod`]); read and written with the GIL held.
    bound: UnsafeCell<[Option<Py<PyAny>>; 2]>,
    /// Bit `k`: `bound[k]` was looked up once (it is cached at the second lookup, so a name
    /// used once keeps no bound method: 100,000 dynamic names stay small).
    looked_up: std::cell::Cell<u8>,
    /// Made by the native lookup and not in the manager's dict (a name used once so far):
    /// its drop removes it from the lookup's unlisted map (`lookup::Binding::unlisted`).
    unlisted: std::cell::Cell<bool>,
}

impl Drop for ProfileRegion {
    fn drop(&mut self) {
        if self.unlisted.get() {
            if let Some(cache) = &self.cache {
                // SAFETY: a Python object is dropped with the GIL held.
                let py = unsafe { Python::assume_attached() };
                cache.bind(py).get().forget_unlisted(self.b().id, self as *const ProfileRegion as usize);
            }
        }
    }
}

/// What a [`ProfileRegion`] records into, as of one [`setup_generation`].
struct RegionBinding {
    /// The recorder whose region table defines `id`; None for a disabled region.
    shared: Option<Arc<Shared>>,
    /// False = disabled (before `setup()`, `deactivate_profiling`): enter/exit do nothing.
    enabled: bool,
    id: u32,
    /// Name and tags of a region without a recorder.
    detached: Option<Box<(String, Vec<String>)>>,
    /// The [`setup_generation`] this binding was made or checked at.
    generation: u64,
}

/// Bumped by every manager's `setup()` and `reset()` (`RegionCache::bind`): a region whose
/// binding is older looks itself up again before its next call.
static SETUP_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The current setup generation (see [`SETUP_GENERATION`]).
#[inline(always)]
pub(crate) fn setup_generation() -> u64 {
    SETUP_GENERATION.load(Ordering::Relaxed)
}

/// A new setup generation: every region re-resolves before its next call.
pub(crate) fn next_setup_generation() {
    SETUP_GENERATION.fetch_add(1, Ordering::Relaxed);
}

// SAFETY: `binding` and `bound` are only accessed with the GIL held (GIL build).
unsafe impl Sync for ProfileRegion {}

impl ProfileRegion {
    /// Region `id` of `shared`'s table, looked up through `cache`.
    pub(crate) fn of(shared: &Arc<Shared>, id: u32, enabled: bool, cache: Option<Py<lookup::RegionCache>>) -> Self {
        let binding = RegionBinding {
            shared: Some(Arc::clone(shared)),
            enabled,
            id,
            detached: None,
            generation: setup_generation(),
        };
        ProfileRegion {
            binding: UnsafeCell::new(binding),
            cache,
            bound: Default::default(),
            looked_up: Default::default(),
            unlisted: Default::default(),
        }
    }

    /// Mark whether the region is outside the manager's dict (see [`ProfileRegion::drop`]).
    pub(crate) fn set_unlisted(&self, unlisted: bool) {
        self.unlisted.set(unlisted);
    }

    /// The binding as of now (GIL held: no Python code runs while it is borrowed).
    #[inline(always)]
    fn b(&self) -> &RegionBinding {
        // SAFETY: written only by `resolve`, with the GIL held and no borrow alive across it.
        unsafe { &*self.binding.get() }
    }

    /// The cache of this region's bound `__enter__` (0) and `__exit__` (1): dereference it
    /// only with the GIL held, while no other reference into it is alive.
    #[inline(always)]
    pub(crate) fn bound_methods(&self) -> *mut [Option<Py<PyAny>>; 2] {
        self.bound.get()
    }

    /// Whether bound method `which` was looked up before (and note that it is now).
    #[inline(always)]
    pub(crate) fn looked_up_before(&self, which: usize) -> bool {
        let bits = self.looked_up.get();
        self.looked_up.set(bits | (1 << which));
        bits & (1 << which) != 0
    }

    /// The recorder, when recording into it.
    #[inline(always)]
    fn active(&self) -> Option<&Arc<Shared>> {
        let b = self.b();
        b.shared.as_ref().filter(|_| b.enabled)
    }

    #[inline]
    fn enter(&self, py: Python<'_>) -> PyResult<()> {
        self.fresh(py)?;
        if let Some(sh) = self.active() {
            let st = sh.state(py)?;
            // SAFETY: the calling thread's own state.
            unsafe { &*st }.enter(self.b().id, sh.rec.paused());
        }
        Ok(())
    }

    /// After a `setup()` or `reset()` of any manager: take the binding of what the manager's
    /// lookup gives for this name now (the current run's region, or a disabled one), so a
    /// region object kept across `setup()` calls records into the current run, as a region
    /// looked up by name does (never into the finished run, whose calls no file would get).
    #[cold]
    fn resolve(&self, py: Python<'_>) -> PyResult<()> {
        let generation = setup_generation();
        let Some(cache) = self.cache.as_ref().map(|c| c.clone_ref(py)) else {
            // SAFETY: GIL held; no borrow of the binding is alive here.
            unsafe { (*self.binding.get()).generation = generation };
            return Ok(());
        };
        let cache = cache.bind(py);
        if self.b().generation >= cache.get().bound_at() {
            // made or checked since its own manager's last setup()/reset(): another manager's
            // setup bumped the generation, this binding is current
            // SAFETY: GIL held; no borrow of the binding is alive here.
            unsafe { (*self.binding.get()).generation = generation };
            return Ok(());
        }
        let (name, tags) = (self.name_string(), self.tags_vec());
        // Python may run in here (a miss creates the region): nothing of `self` is borrowed
        let mut current = lookup::RegionCache::current(cache, &name, tags.clone())?;
        if let Ok(r) = current.cast::<ProfileRegion>() {
            if std::ptr::eq(r.get(), self) {
                // itself, bound to an earlier run: another thread looked the name up while
                // setup() ran and put it in the dict (kept, the whole run would record nothing
                // under that name); the current run's region replaces it
                cache.get().evict(py, &name, &current)?;
                current = lookup::RegionCache::current(cache, &name, tags)?;
            }
        }
        // SAFETY: GIL held; no other borrow of this binding is alive (`c` is another object's).
        let binding = unsafe { &mut *self.binding.get() };
        if let Ok(r) = current.cast::<ProfileRegion>() {
            if !std::ptr::eq(r.get(), self) {
                let c = r.get().b();
                binding.shared = c.shared.clone();
                binding.enabled = c.enabled;
                binding.id = c.id;
                binding.detached = c.detached.clone();
            }
        }
        binding.generation = generation;
        Ok(())
    }

    /// Re-resolve when a `setup()`/`reset()` happened since the binding was made.
    #[inline]
    fn fresh(&self, py: Python<'_>) -> PyResult<()> {
        if self.b().generation != setup_generation() {
            self.resolve(py)?;
        }
        Ok(())
    }

    /// The region's tags (from its table row, or its own for a region without a recorder).
    fn tags_vec(&self) -> Vec<String> {
        match &self.b().detached {
            Some(d) => d.1.clone(),
            None => self.row(|m| m.tags().to_vec()).unwrap_or_default(),
        }
    }

    /// `f` of this region's table row, or None for a region without a recorder.
    fn row<T>(&self, f: impl FnOnce(&RegionMeta) -> T) -> Option<T> {
        let b = self.b();
        b.shared.as_ref().map(|sh| f(&sh.meta()[b.id as usize]))
    }

    fn name_string(&self) -> String {
        match &self.b().detached {
            Some(d) => d.0.clone(),
            None => self.row(|m| m.name.to_string()).unwrap_or_default(),
        }
    }

    #[inline]
    fn exit(&self) {
        if let Some(sh) = self.active() {
            if let Some(st) = sh.rec.local() {
                // SAFETY: the calling thread's own state.
                unsafe { &*st }.exit(self.b().id);
            }
        }
    }
}

#[pymethods]
impl ProfileRegion {
    /// A disabled region (what `region()` returns before `setup()`); with `cache` (the
    /// manager's `RegionCache`) it records once a later `setup()` records its name.
    #[staticmethod]
    #[pyo3(signature = (name, tags=Vec::new(), cache=None))]
    fn disabled(name: &Bound<'_, PyAny>, tags: Vec<String>, cache: Option<Py<lookup::RegionCache>>) -> PyResult<Self> {
        let name = region_name_text(region_name_str(name)?)?.into_owned();
        let binding = RegionBinding {
            shared: None,
            enabled: false,
            id: 0,
            detached: Some(Box::new((name, tags))),
            generation: setup_generation(),
        };
        Ok(ProfileRegion {
            binding: UnsafeCell::new(binding),
            cache,
            bound: Default::default(),
            looked_up: Default::default(),
            unlisted: Default::default(),
        })
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().enter(slf.py())?;
        Ok(slf.clone())
    }

    fn __exit__(&self, _exc_type: &Bound<'_, PyAny>, _exc: &Bound<'_, PyAny>, _tb: &Bound<'_, PyAny>) -> bool {
        self.exit();
        false
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the collector runs with the GIL held.
        for method in unsafe { &*self.bound.get() }.iter().flatten() {
            visit.call(method)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: the collector runs with the GIL held.
        let old = std::mem::take(unsafe { &mut *self.bound.get() });
        drop(old);
    }

    /// Wrap `func` so each call is recorded in this region (same path as `with`).
    fn wrap(slf: &Bound<'_, Self>, func: Py<PyAny>) -> ProfiledFunction {
        ProfiledFunction { func, binding: UnsafeCell::new(Some(slf.clone().unbind())) }
    }

    #[getter]
    fn region_name(&self) -> String {
        self.name_string()
    }

    #[getter]
    fn name(&self) -> String {
        self.name_string()
    }

    #[getter]
    fn tags(&self) -> Vec<String> {
        self.tags_vec()
    }

    /// Whether a call now would be recorded (as of the manager's current `setup()`).
    #[getter]
    fn enabled(&self, py: Python<'_>) -> PyResult<bool> {
        self.fresh(py)?;
        Ok(self.active().is_some())
    }

    /// Record the defining site; first writer wins.
    #[pyo3(signature = (filename, lineno, text=None))]
    fn set_source(&self, filename: Option<String>, lineno: Option<i64>, text: Option<String>) {
        let b = self.b();
        let (Some(sh), Some(filename)) = (&b.shared, filename) else { return };
        sh.regions.set_source(b.id, filename, lineno, text);
    }

    #[getter]
    fn source_file(&self) -> Option<String> {
        self.row(|m| m.source_file.as_deref().map(str::to_owned)).flatten()
    }

    #[getter]
    fn source_lineno(&self) -> Option<i64> {
        self.row(|m| m.source_line).flatten()
    }

    #[getter]
    fn source_text(&self) -> Option<String> {
        self.row(|m| m.source_text().map(str::to_owned)).flatten()
    }

    #[getter]
    fn has_source(&self) -> bool {
        self.source_file().is_some()
    }

    /// Calls entered in the current recording (all threads, open ones included).
    #[getter]
    fn num_calls(&self, py: Python<'_>) -> PyResult<u64> {
        self.fresh(py)?;
        Ok(match self.active() {
            // SAFETY: GIL held (module contract).
            Some(sh) => unsafe { sh.rec.num_calls(self.b().id) },
            None => 0,
        })
    }

    /// Indices of the threads that entered this region (tracking only meaningful).
    #[getter]
    fn thread_indices(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        self.fresh(py)?;
        Ok(match self.active() {
            // SAFETY: GIL held (module contract).
            Some(sh) => unsafe { sh.rec.threads_of_region(self.b().id) },
            None => Vec::new(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.fresh(py)?;
        let kind = if self.active().is_some() { "active" } else { "disabled" };
        Ok(format!("<ProfileRegion {:?} ({kind})>", self.name_string()))
    }
}

extern "C" {
    /// CPython's bound-method constructor (`types.MethodType`), not wrapped by pyo3-ffi.
    fn PyMethod_New(func: *mut pyo3::ffi::PyObject, slf: *mut pyo3::ffi::PyObject) -> *mut pyo3::ffi::PyObject;
}

/// The descriptor protocol of a callable wrapper (`__get__`): `types.MethodType(wrapper,
/// obj)` for an instance `obj`, the wrapper itself for a class access (`obj` None).
pub(crate) fn bind_as_method(wrapper: &Bound<'_, PyAny>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    match obj {
        Some(o) if !o.is_none() => {
            // SAFETY: both pointers are valid; an owned reference (or NULL) is returned.
            unsafe {
                let m = PyMethod_New(wrapper.as_ptr(), o.as_ptr());
                Ok(Bound::from_owned_ptr_or_err(wrapper.py(), m)?.unbind())
            }
        }
        _ => Ok(wrapper.clone().unbind()),
    }
}

/// What `@profile` returns: calls the function inside its bound region. The binding is
/// rebound by every `setup()` (`_bind`), so there is no per-call configuration check.
/// Implements `__get__`, so it works on methods. Has a `__dict__` for `functools.wraps`.
#[pyclass(module = "scope_profiler._native", frozen, dict)]
pub struct ProfiledFunction {
    func: Py<PyAny>,
    /// Read and written only with the GIL held (module contract).
    binding: UnsafeCell<Option<Py<ProfileRegion>>>,
}

// SAFETY: `binding` is only accessed with the GIL held (GIL build; see module docs).
unsafe impl Sync for ProfiledFunction {}

impl ProfiledFunction {
    /// Whether a region is bound (`_region is not None`); GIL held (`py`).
    pub(crate) fn is_bound(&self, _py: Python<'_>) -> bool {
        // SAFETY: GIL held (the token proves it).
        unsafe { (*self.binding.get()).is_some() }
    }
}

#[pymethods]
impl ProfiledFunction {
    #[new]
    #[pyo3(signature = (func, region=None))]
    fn new(func: Py<PyAny>, region: Option<Py<ProfileRegion>>) -> Self {
        ProfiledFunction { func, binding: UnsafeCell::new(region) }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        // SAFETY: GIL held. Clone (incref) so a rebind during the call cannot free it.
        let region = unsafe { (*self.binding.get()).as_ref().map(|r| r.clone_ref(py)) };
        let func = self.func.bind(py);
        match region {
            Some(r) if r.get().b().enabled => {
                let r = r.get();
                r.enter(py)?;
                let out = func.call(args, kwargs);
                r.exit();
                Ok(out?.unbind())
            }
            _ => Ok(func.call(args, kwargs)?.unbind()),
        }
    }

    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        bind_as_method(slf.as_any(), obj)
    }

    /// Rebind to `region` (`None` = call straight through).
    #[pyo3(signature = (region=None))]
    fn _bind(&self, region: Option<Py<ProfileRegion>>) {
        // SAFETY: GIL held (we are in a pymethod); the old value is dropped under the GIL.
        unsafe {
            *self.binding.get() = region;
        }
    }

    /// The region this wrapper currently records into, or None.
    #[getter]
    fn _region(&self, py: Python<'_>) -> Option<Py<ProfileRegion>> {
        // SAFETY: GIL held.
        unsafe { (*self.binding.get()).as_ref().map(|r| r.clone_ref(py)) }
    }

    #[getter]
    fn _func(&self, py: Python<'_>) -> Py<PyAny> {
        self.func.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<profiled {}>", self.func.bind(py).repr()?))
    }

    /// Pickle by reference (the module and `__qualname__` that `functools.wraps` copied),
    /// as plain functions are, so decorated functions can be sent to process pools.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.getattr("__qualname__")?.unbind())
    }
}
