//! trio tasks as lanes: [`TrioLanes`], the `trio.abc.Instrument` one recorder adds to a
//! trio run (`_trio_hooks.py` adds it; trio calls it on the run's thread).
//!
//! trio drives each task's coroutine itself, so there is no coroutine to wrap as for asyncio;
//! its instrumentation API reports what the step timer needs instead, which makes trio
//! tasks lanes the way greenlet switches do:
//! * `task_spawned`: a new row (kind `"task"`, trio's task name, the coroutine's name);
//! * `task_scheduled`: the task is runnable from now (its ready moment);
//! * `before_task_step` / `after_task_step`: the task is the thread's current lane during
//!   the step, which is counted and timed (await time: the gaps between steps; ready wait:
//!   the part of each gap after the task was scheduled);
//! * `task_exited`: the row is done (trio reports it inside the task's last step, before
//!   `after_task_step`, so the lane stays current until that step ends);
//! * `before_io_wait` / `after_io_wait`: an I/O wait with a timeout (trio waits with a zero
//!   timeout while tasks are runnable) is the run's thread idle, with nothing ready.
//!
//! trio's own tasks are not lanes: the run's root task `<init>` (no parent nursery) and
//! `<TrioToken.run_sync_soon task>`. Tasks already running when the instrument was added
//! (a `setup()` inside a run) are not lanes either: their steps are not reported.
//!
//! Each hook must not raise (trio would remove the instrument and leave a step open): an
//! error is reported as unraisable.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::prelude::*;
use scope_profiler_recorder::{event_loop, now_ns, TaskKind, TaskRecord, TaskStep};

use super::{recorded_name, tasks, Shared};

/// The name trio gives the system task that runs `TrioToken.run_sync_soon` callbacks.
const RUN_SYNC_SOON_TASK: &str = "<TrioToken.run_sync_soon task>";

/// One trio task followed as a lane.
struct Lane {
    record: Arc<TaskRecord>,
    /// When trio last scheduled the task (recording clock, ns); 0 before the first time.
    scheduled_ns: i64,
    /// The step running now, if any.
    step: Option<TaskStep>,
    /// trio reported the task exited (its row is done).
    exited: bool,
}

/// No root task known yet.
const NO_ROOT: usize = 0;

/// The instrument of one recorder in one trio run (see the module docs). Tasks are keyed by
/// the address of trio's `Task`: trio keeps a task alive from `task_spawned` until after its
/// last step, when its lane is dropped here.
///
/// The hooks run on the run's thread; `detach` may come from any thread. The lane map's lock
/// is never held while Python code runs (which could switch threads).
#[pyclass(module = "scope_profiler._native", frozen, weakref)]
pub struct TrioLanes {
    shared: Arc<Shared>,
    lanes: Mutex<HashMap<usize, Lane>>,
    /// Address of the run's root task, once known (the run this instrument follows).
    root: AtomicUsize,
    /// The recorder stopped following this run: no new lanes, no new steps (a step
    /// running still ends).
    detached: AtomicBool,
    /// The run ended (`after_run`).
    ended: AtomicBool,
    /// When the I/O wait under way began, if it has a timeout (recording clock, ns; 0: none).
    idle_since: AtomicI64,
}

impl TrioLanes {
    pub(crate) fn new(shared: Arc<Shared>, root: Option<&Bound<'_, PyAny>>) -> Self {
        TrioLanes {
            shared,
            lanes: Mutex::new(HashMap::new()),
            root: AtomicUsize::new(root.map_or(NO_ROOT, |r| r.as_ptr() as usize)),
            detached: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            idle_since: AtomicI64::new(0),
        }
    }

    fn lanes(&self) -> MutexGuard<'_, HashMap<usize, Lane>> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn detached(&self) -> bool {
        self.detached.load(Ordering::Relaxed)
    }

    /// `(name, coroutine name)` of a new task, None for trio's own tasks (noting the root).
    fn describe(&self, task: &Bound<'_, PyAny>) -> PyResult<Option<(String, String)>> {
        let py = task.py();
        if task.getattr(pyo3::intern!(py, "parent_nursery"))?.is_none() {
            self.root.store(task.as_ptr() as usize, Ordering::Relaxed);
            return Ok(None);
        }
        let name: String = task.getattr(pyo3::intern!(py, "name"))?.str()?.extract()?;
        if name == RUN_SYNC_SOON_TASK {
            return Ok(None);
        }
        let coro_name = tasks::qualname(&task.getattr(pyo3::intern!(py, "coro"))?)?;
        Ok(Some((name, coro_name)))
    }

    fn spawned(&self, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = task.py();
        let Some((name, coro_name)) = self.describe(task)? else { return Ok(()) };
        let name = recorded_name(py, "task", name, &self.shared.nul_warned)?;
        let coro_name = recorded_name(py, "task", coro_name, &self.shared.nul_warned)?;
        let st = self.shared.state(py)?;
        // SAFETY: the calling thread's own state.
        let thread = unsafe { &*st }.index() as i64;
        let record = self.shared.rec.new_task(TaskKind::Task, name, coro_name, thread);
        let lane = Lane { record, scheduled_ns: 0, step: None, exited: false };
        self.lanes().insert(task.as_ptr() as usize, lane);
        Ok(())
    }

    fn step_begins(&self, py: Python<'_>, key: usize) -> PyResult<()> {
        let idle = matches!(self.lanes().get(&key), Some(lane) if lane.step.is_none());
        if !idle {
            return Ok(());
        }
        let st = self.shared.state(py)?;
        // SAFETY: the calling thread's own state.
        let st = unsafe { &*st };
        let mut lanes = self.lanes();
        let Some(lane) = lanes.get_mut(&key) else { return Ok(()) };
        // the ready moment is trio's scheduling of the task, not a loop handle's
        let _ = event_loop::step_begins();
        let now = now_ns();
        // trio schedules every task before its step; 0 = none seen (the first step)
        let ready = (lane.scheduled_ns != 0).then_some(lane.scheduled_ns);
        lane.step = Some(TaskStep::begin(st, &lane.record, now, ready, true, self.shared.rec.loop_blocks()));
        Ok(())
    }

    fn step_ends(&self, py: Python<'_>, key: usize) -> PyResult<()> {
        let st = match self.lanes().get(&key) {
            Some(lane) if lane.step.is_some() => Some(self.shared.state(py)?),
            Some(_) => None,
            None => return Ok(()),
        };
        let mut lanes = self.lanes();
        let Some(lane) = lanes.get_mut(&key) else { return Ok(()) };
        if let (Some(step), Some(st)) = (lane.step.take(), st) {
            // SAFETY: the calling thread's own state, which began the step.
            let st = unsafe { &*st };
            let end = now_ns();
            step.end(st, &lane.record, end, self.shared.rec.loop_blocks());
            event_loop::step_ends(end);
        }
        if lane.exited {
            lanes.remove(&key);
        }
        Ok(())
    }
}

/// Report a hook's error as unraisable (trio would disable an instrument that raised).
fn report(py: Python<'_>, result: PyResult<()>) {
    if let Err(e) = result {
        e.write_unraisable(py, None);
    }
}

#[pymethods]
impl TrioLanes {
    /// trio: a task was created (a new lane unless it is one of trio's own).
    fn task_spawned(&self, task: &Bound<'_, PyAny>) {
        if !self.detached() {
            report(task.py(), self.spawned(task));
        }
    }

    /// trio: the task became runnable now.
    fn task_scheduled(&self, task: &Bound<'_, PyAny>) {
        if let Some(lane) = self.lanes().get_mut(&(task.as_ptr() as usize)) {
            lane.scheduled_ns = now_ns();
        }
    }

    /// trio: the task's step starts (it becomes the thread's lane).
    fn before_task_step(&self, py: Python<'_>, task: &Bound<'_, PyAny>) {
        if !self.detached() {
            report(py, self.step_begins(py, task.as_ptr() as usize));
        }
    }

    /// trio: the task's step ended (the thread's previous lane is current again).
    fn after_task_step(&self, py: Python<'_>, task: &Bound<'_, PyAny>) {
        report(py, self.step_ends(py, task.as_ptr() as usize));
    }

    /// trio: the task exited (inside its last step): its row is done.
    fn task_exited(&self, task: &Bound<'_, PyAny>) {
        let key = task.as_ptr() as usize;
        let mut lanes = self.lanes();
        if let Some(lane) = lanes.get_mut(&key) {
            lane.record.finish();
            lane.exited = true;
            if lane.step.is_none() {
                lanes.remove(&key);
            }
        }
    }

    /// trio: the run waits for I/O for at most `timeout` s; with a timeout, nothing is ready
    /// (the run's thread is idle until `after_io_wait`).
    fn before_io_wait(&self, timeout: f64) {
        if !self.detached() {
            self.idle_since.store(if timeout > 0.0 { now_ns() } else { 0 }, Ordering::Relaxed);
        }
    }

    /// trio: the I/O wait is over; one with a timeout adds to the thread's idle time (the
    /// timeout itself was noted by `before_io_wait`).
    fn after_io_wait(&self, timeout: f64) {
        let _ = timeout;
        let since = self.idle_since.swap(0, Ordering::Relaxed);
        if !self.detached() {
            tasks::record_loop_idle_in(&self.shared, if since > 0 { now_ns() - since } else { 0 });
        }
    }

    /// trio: the run ended.
    fn after_run(&self) {
        self.ended.store(true, Ordering::Relaxed);
        self.lanes().retain(|_, lane| lane.step.is_some());
    }

    /// Stop following the run (the recorder's tracker left): no new lanes or steps; a step
    /// running now still ends at `after_task_step`.
    fn detach(&self) {
        self.detached.store(true, Ordering::Relaxed);
    }

    /// Whether this instrument follows the run whose root task is `root` (not detached, the
    /// run not over).
    fn follows(&self, root: &Bound<'_, PyAny>) -> bool {
        !self.detached()
            && !self.ended.load(Ordering::Relaxed)
            && self.root.load(Ordering::Relaxed) == root.as_ptr() as usize
    }

    /// Whether a step of one of its lanes runs now.
    #[getter]
    fn stepping(&self) -> bool {
        self.lanes().values().any(|lane| lane.step.is_some())
    }

    /// Lanes followed now (tasks spawned and not yet exited).
    #[getter(lanes)]
    fn lane_count(&self) -> usize {
        self.lanes().len()
    }
}
