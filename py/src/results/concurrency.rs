//! `scope_profiler.concurrency`: `ThreadInfo` and `TaskInfo`, rows of a run's lane tables.
//!
//! Each object is a view of one row of a run held in Rust (`Arc<Run>` + position); times are
//! float seconds relative to the run start (`metadata["start_time_ns"]`, recording clock).
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use scope_profiler_analysis::{Run, TaskRow, ThreadRow, UNKNOWN};

use crate::numpy_arrays::secs;

/// A `ThreadInfo`'s constructor arguments (its pickled form).
type ThreadFields = (i64, u32, String, i64, i64, bool, i64, i64, i64, i64);
/// A `TaskInfo`'s constructor arguments (its pickled form).
type TaskFields = (i64, u32, String, String, String, i64, i64, i64, i64, i64, i64);

fn opt_secs(ns: i64) -> Option<f64> {
    (ns != UNKNOWN).then(|| secs(ns))
}

/// One row of a run's thread table: a thread the tracker registered.
///
/// `index` is the value `Region.thread_ids` holds; `start_time`/`end_time` are s since the
/// run start (`end_time` None while alive); `cpu_time` is the CPU the thread burned during
/// the run in s (`CLOCK_THREAD_CPUTIME_ID`), `cpu_time_total` its whole life (CPU spent
/// before `setup()` included), `cpu_start_time` the CPU clock when the run started counting
/// the thread.
#[pyclass(module = "scope_profiler.concurrency", frozen)]
pub struct ThreadInfo {
    run: Arc<Run>,
    at: usize,
}

impl ThreadInfo {
    /// Row `at` of `run.threads`.
    pub fn of(run: &Arc<Run>, at: usize) -> Self {
        ThreadInfo { run: Arc::clone(run), at }
    }
    /// The table row.
    pub fn row(&self) -> &ThreadRow {
        &self.run.threads[self.at]
    }
}

#[pymethods]
impl ThreadInfo {
    /// A thread-table row from its stored fields (times in ns since the run start, `end_ns`
    /// -1 while alive, `cpu_ns` the thread's whole-life CPU ns, `cpu_start_ns` its CPU ns at
    /// registration, -1 = not known).
    #[new]
    #[pyo3(signature = (index, rank, name, ident, native_id, daemon, start_ns, end_ns, cpu_ns, cpu_start_ns=-1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        index: i64,
        rank: u32,
        name: String,
        ident: i64,
        native_id: i64,
        daemon: bool,
        start_ns: i64,
        end_ns: i64,
        cpu_ns: i64,
        cpu_start_ns: i64,
    ) -> Self {
        let row = ThreadRow {
            ident,
            native_id,
            daemon,
            start_ns,
            end_ns,
            cpu_ns,
            cpu_start_ns,
            ..ThreadRow::new(rank, index, &name)
        };
        ThreadInfo { run: Arc::new(Run { threads: vec![row], ..Run::default() }), at: 0 }
    }
    #[getter]
    fn index(&self) -> i64 {
        self.row().index
    }
    #[getter]
    fn rank(&self) -> u32 {
        self.row().rank
    }
    #[getter]
    fn name(&self) -> &str {
        &self.row().name
    }
    #[getter]
    fn ident(&self) -> i64 {
        self.row().ident
    }
    #[getter]
    fn native_id(&self) -> i64 {
        self.row().native_id
    }
    #[getter]
    fn daemon(&self) -> bool {
        self.row().daemon
    }
    /// Registration time, s since the run start.
    #[getter]
    fn start_time(&self) -> f64 {
        secs(self.row().start_ns)
    }
    /// End time, s since the run start; None while the thread is alive.
    #[getter]
    fn end_time(&self) -> Option<f64> {
        opt_secs(self.row().end_ns)
    }
    /// CPU the thread burned during the run, s (`CLOCK_THREAD_CPUTIME_ID` from when the run
    /// started counting it): the meaning `cpu_time` has everywhere (`thread_summary()`,
    /// `threads_frame()`, the CLI and the HTML report). The whole-life figure for files that
    /// do not record where the run started counting (files of scope-profiler 0.7.5).
    #[getter]
    fn cpu_time(&self) -> f64 {
        let t = self.row();
        secs(t.cpu_run_ns().unwrap_or(t.cpu_ns))
    }
    /// Total CPU time of the OS thread, s: its whole life, CPU spent before `setup()`
    /// included (0.7.5's `cpu_time`).
    #[getter]
    fn cpu_time_total(&self) -> f64 {
        secs(self.row().cpu_ns)
    }
    /// The thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) when the run started counting it,
    /// s: at registration, or at `setup()` for the thread that called it. None when the
    /// file does not record it (files of scope-profiler 0.7.5).
    #[getter]
    fn cpu_start_time(&self) -> Option<f64> {
        opt_secs(self.row().cpu_start_ns)
    }
    /// Whether the thread was still running when the run was collected.
    #[getter]
    fn alive(&self) -> bool {
        self.row().end_ns == UNKNOWN
    }
    /// `end_time - start_time` in s, or None while alive.
    #[getter]
    fn wall_time(&self) -> Option<f64> {
        self.end_time().map(|e| e - self.start_time())
    }
    /// Pickle support: the row's stored fields (the constructor's arguments).
    fn __reduce__<'py>(&self, py: Python<'py>) -> (Bound<'py, pyo3::types::PyType>, ThreadFields) {
        let t = self.row();
        let fields = (
            t.index,
            t.rank,
            t.name.clone(),
            t.ident,
            t.native_id,
            t.daemon,
            t.start_ns,
            t.end_ns,
            t.cpu_ns,
            t.cpu_start_ns,
        );
        (py.get_type::<ThreadInfo>(), fields)
    }
    fn __repr__(&self) -> String {
        let t = self.row();
        format!(
            "ThreadInfo(rank={}, index={}, name={}, cpu_time={:.6}s, alive={})",
            t.rank,
            t.index,
            scope_profiler_analysis::py_repr(&t.name),
            self.cpu_time(),
            if self.alive() { "True" } else { "False" }
        )
    }
}

/// One row of a run's task table: an asyncio task (`kind == "task"`) or a greenlet.
///
/// `index` is the value `Region.task_ids` holds; `thread_index` the thread that ran its
/// latest step; `created_time`/`done_time` s since the run start (`done_time` None if it
/// never finished); `running_time`/`awaiting_time` s it ran / was suspended (step timer,
/// monotonic clock).
#[pyclass(module = "scope_profiler.concurrency", frozen)]
pub struct TaskInfo {
    run: Arc<Run>,
    at: usize,
}

impl TaskInfo {
    /// Row `at` of `run.tasks`.
    pub fn of(run: &Arc<Run>, at: usize) -> Self {
        TaskInfo { run: Arc::clone(run), at }
    }
    /// The table row.
    pub fn row(&self) -> &TaskRow {
        &self.run.tasks[self.at]
    }
}

#[pymethods]
impl TaskInfo {
    /// A task-table row from its stored fields (ns since the run start, `done_ns` -1 when not done).
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        index: i64,
        rank: u32,
        kind: String,
        name: String,
        coro_name: String,
        thread_index: i64,
        created_ns: i64,
        done_ns: i64,
        steps: i64,
        running_ns: i64,
        suspended_ns: i64,
    ) -> Self {
        let row = TaskRow::new(rank, index, kind, name, coro_name)
            .on_thread(thread_index)
            .lifetime(created_ns, done_ns)
            .timing(steps, running_ns, suspended_ns);
        TaskInfo { run: Arc::new(Run { tasks: vec![row], ..Run::default() }), at: 0 }
    }
    #[getter]
    fn index(&self) -> i64 {
        self.row().index
    }
    #[getter]
    fn rank(&self) -> u32 {
        self.row().rank
    }
    /// `"task"` or `"greenlet"`.
    #[getter]
    fn kind(&self) -> &str {
        &self.row().kind
    }
    #[getter]
    fn name(&self) -> &str {
        &self.row().name
    }
    /// The coroutine's `__qualname__` (greenlets: their run function's).
    #[getter]
    fn coro_name(&self) -> &str {
        &self.row().coro_name
    }
    #[getter]
    fn thread_index(&self) -> i64 {
        self.row().thread_index
    }
    #[getter]
    fn created_time(&self) -> f64 {
        secs(self.row().created_ns)
    }
    #[getter]
    fn done_time(&self) -> Option<f64> {
        opt_secs(self.row().done_ns)
    }
    #[getter]
    fn steps(&self) -> i64 {
        self.row().steps
    }
    #[getter]
    fn running_time(&self) -> f64 {
        secs(self.row().running_ns)
    }
    #[getter]
    fn awaiting_time(&self) -> f64 {
        secs(self.row().suspended_ns)
    }
    /// Whether the task finished before the run was collected.
    #[getter]
    fn done(&self) -> bool {
        self.row().done_ns != UNKNOWN
    }
    /// `done_time - created_time` in s, or None if it never finished.
    #[getter]
    fn wall_time(&self) -> Option<f64> {
        self.done_time().map(|d| d - self.created_time())
    }
    /// Pickle support: the row's stored fields (the constructor's arguments).
    fn __reduce__<'py>(&self, py: Python<'py>) -> (Bound<'py, pyo3::types::PyType>, TaskFields) {
        let t = self.row();
        let fields = (
            t.index,
            t.rank,
            t.kind.clone(),
            t.name.clone(),
            t.coro_name.clone(),
            t.thread_index,
            t.created_ns,
            t.done_ns,
            t.steps,
            t.running_ns,
            t.suspended_ns,
        );
        (py.get_type::<TaskInfo>(), fields)
    }
    fn __repr__(&self) -> String {
        let t = self.row();
        format!(
            "TaskInfo(rank={}, index={}, kind={}, name={}, running_time={:.6}s, awaiting_time={:.6}s)",
            t.rank,
            t.index,
            scope_profiler_analysis::py_repr(&t.kind),
            scope_profiler_analysis::py_repr(&t.name),
            self.running_time(),
            self.awaiting_time()
        )
    }
}

/// `{rank: [ThreadInfo, ...]}` and `{rank: [TaskInfo, ...]}` of `run` (rows in table order;
/// ranks without rows absent).
pub fn lane_tables<'py>(py: Python<'py>, run: &Arc<Run>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let threads = by_rank(py, run.threads.iter().map(|t| t.rank), |at| ThreadInfo::of(run, at))?;
    let tasks = by_rank(py, run.tasks.iter().map(|t| t.rank), |at| TaskInfo::of(run, at))?;
    Ok((threads, tasks))
}

/// `{rank: [row view, ...]}` of table rows whose ranks are `ranks` (in table order).
fn by_rank<'py, T: pyo3::PyClass + Into<PyClassInitializer<T>>>(
    py: Python<'py>,
    ranks: impl Iterator<Item = u32>,
    view: impl Fn(usize) -> T,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (at, rank) in ranks.enumerate() {
        match out.get_item(rank)? {
            Some(list) => list.cast_into::<PyList>()?.append(Bound::new(py, view(at))?)?,
            None => out.set_item(rank, PyList::new(py, [Bound::new(py, view(at))?])?)?,
        }
    }
    Ok(out)
}
