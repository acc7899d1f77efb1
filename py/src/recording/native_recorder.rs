//! `NativeRecorder`: the native state of one profiling configuration, as the manager
//! drives it (threads, tasks, regions, streaming, fork, `finalize`).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_finalize::{checkpoint_with_prior, CheckpointError, CheckpointRequest, ForeignRegion};
use scope_profiler_recorder::hub_steps::MAIN_LANE;
use scope_profiler_recorder::{Recorder, RegionTable, TaskKind};

use crate::errors::write_failure_err;
use crate::native_run::NativeRun;

use super::names::{recorded_name, region_name_str, region_name_text};
use super::{lookup, stream, tasks, ProfileRegion, Shared, TaskHandle, TimedCoroutine, TrioLanes};

/// A native region handed to `finalize`: `(name, starts, ends, source_file, source_line)`.
type NativeRegionArg<'py> =
    (String, numpy::PyReadonlyArray1<'py, i64>, numpy::PyReadonlyArray1<'py, i64>, Option<String>, Option<i64>);

/// An adopted asyncio task: its row's handle and a weak reference to the `Task`.
type LiveTask = (Py<TaskHandle>, Py<PyAny>);

/// The native state of one profiling configuration: the recorder (buffers, thread table)
/// and the region table. Created by `ProfilingConfig`; regions come from [`Self::region`].
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct NativeRecorder {
    pub(super) shared: Arc<Shared>,
    /// asyncio tasks still referenced: task index -> (handle, weak reference to the Task),
    /// so [`NativeRecorder::refresh_task_names`] reports `get_name()` as of now.
    live_tasks: Mutex<std::collections::BTreeMap<usize, LiveTask>>,
    /// Greenlet lanes ([`tasks::GreenletLanes`]), made at the first switch.
    greenlets: pyo3::sync::PyOnceLock<tasks::GreenletLanes>,
}

pub(super) fn to_meta_value(v: &Bound<'_, PyAny>) -> PyResult<MetaValue> {
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

    /// A trio instrument making the tasks of one trio run lanes of this recorder (see
    /// [`TrioLanes`]); `root`: the run's root task when it is added to a run already going.
    #[pyo3(signature = (root=None))]
    fn trio_lanes(&self, root: Option<&Bound<'_, PyAny>>) -> TrioLanes {
        TrioLanes::new(Arc::clone(&self.shared), root)
    }

    /// A `greenlet` switch (or throw) on the calling thread from `origin` to `target`: the
    /// origin's row is finished if it is dead (or gets its target's name from its outermost
    /// frame if that was unknown), then the thread's lane becomes the target's (a new row,
    /// kind `"greenlet"`, on its first switch in) or, for a main greenlet (no `parent`), the
    /// thread's bare lane. A step a gevent hub resumed that ends here is a loop block if it
    /// lasted the floor or more ([`HubSteps`](scope_profiler_recorder::hub_steps::HubSteps)).
    pub(crate) fn greenlet_switch(
        &self,
        py: Python<'_>,
        origin: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let lanes = self.greenlets.get_or_try_init(py, || tasks::GreenletLanes::new(py))?;
        let origin_lane = lanes.leave(py, origin)?.map_or(MAIN_LANE, |i| i as i64);
        let ((thread, now), target_lane) = if target.getattr(pyo3::intern!(py, "parent"))?.is_none() {
            (tasks::switch_lane(&self.shared, py, None)?, MAIN_LANE)
        } else {
            let record = match lanes.record(py, target)? {
                Some(record) => record,
                None => self.new_greenlet_lane(py, lanes, target)?,
            };
            (tasks::switch_lane(&self.shared, py, Some(record.get()))?, record.get().task.index as i64)
        };
        lanes.hubs.switched(self.shared.rec.loop_blocks(), thread, now, origin_lane, target_lane);
        Ok(())
    }

    /// Greenlet switch on the calling thread to `target` (None = its main greenlet, the
    /// thread's bare lane).
    #[pyo3(signature = (target=None))]
    fn switch_lane(&self, py: Python<'_>, target: Option<&TaskHandle>) -> PyResult<()> {
        tasks::switch_lane(&self.shared, py, target).map(|_| ())
    }

    /// Index of the task running on the calling thread, or None.
    fn current_task(&self) -> Option<usize> {
        tasks::current_task(&self.shared)
    }

    /// The task table as `TaskInfo` rows (times relative to `origin_ns`, -1 kept).
    #[pyo3(signature = (origin_ns=0))]
    fn task_table(&self, origin_ns: i64) -> Vec<crate::results::concurrency::TaskInfo> {
        let tasks = self.shared.rec.task_rows(origin_ns).into_iter().map(scope_profiler_finalize::snapshot::task_row);
        let run = std::sync::Arc::new(Run { tasks: tasks.collect(), ..Run::default() });
        (0..run.tasks.len()).map(|i| crate::results::concurrency::TaskInfo::of(&run, i)).collect()
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

    /// Pause/resume: while paused, entries push a placeholder and record nothing (a stopped
    /// recorder, `stop_recording`, stays paused).
    fn set_paused(&self, paused: bool) {
        self.shared.rec.set_paused(paused)
    }

    #[getter]
    pub(crate) fn paused(&self) -> bool {
        self.shared.rec.paused()
    }

    /// The end of the recording (the exit-time finalize, the end of `run`), before its
    /// checkpoint: from now on no call is recorded, on any thread (daemon threads go on
    /// without adding to the buffers), and [`calls_after_stop`](Self::calls_after_stop)
    /// counts them; calls open now still close. `resume()` does not undo it.
    fn stop_recording(&self) {
        // SAFETY: GIL held (module contract).
        unsafe { self.shared.rec.stop() }
    }

    /// Calls made on any thread since [`stop_recording`](Self::stop_recording) (none of
    /// them recorded); None before it.
    #[getter]
    fn calls_after_stop(&self) -> Option<u64> {
        // SAFETY: GIL held (module contract).
        unsafe { self.shared.rec.calls_since_stop() }
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
    fn thread_table(&self, origin_ns: i64) -> Vec<crate::results::concurrency::ThreadInfo> {
        let threads =
            self.shared.rec.thread_rows(origin_ns).into_iter().map(scope_profiler_finalize::snapshot::thread_row);
        let run = std::sync::Arc::new(Run { threads: threads.collect(), ..Run::default() });
        (0..run.threads.len()).map(|i| crate::results::concurrency::ThreadInfo::of(&run, i)).collect()
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

impl NativeRecorder {
    /// The row of greenlet `target`, switched into for the first time (noted as a hub's if
    /// it is a gevent hub).
    fn new_greenlet_lane<'py>(
        &self,
        py: Python<'py>,
        lanes: &tasks::GreenletLanes,
        target: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, TaskHandle>> {
        let (name, coro_name) = tasks::greenlet_names(target)?;
        let unnamed = coro_name.is_none();
        let coro_name = match coro_name {
            Some(n) => n,
            None => target.get_type().qualname()?.to_string(),
        };
        let record = Bound::new(py, self.new_task(py, "greenlet", name, coro_name)?)?;
        lanes.add(py, target, &record, unnamed)?;
        if tasks::is_gevent_hub(py, target)? {
            lanes.hubs.add_hub(record.get().task.index);
        }
        Ok(record)
    }
}
