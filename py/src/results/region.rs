//! `scope_profiler.region.Region`: one region's calls on one rank, a view over a row of a
//! run held in Rust ([`RowView`]).
//!
//! Per-call arrays are int64 ns on the recording clock (`CLOCK_MONOTONIC`, the clock of
//! `time.perf_counter_ns`), read-only numpy views of the run's Arrow buffers (no copy);
//! `*_times`/`*durations` without `_ns` are new float64 arrays in s. Statistics are
//! `analysis::region_stats` (numpy's algorithms, so equal to the reference's bit for bit).
use std::sync::{Arc, RwLock};

use arrow_array::Int64Array;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use scope_profiler_analysis::region_stats::{secs, RowStats};
use scope_profiler_analysis::row_view::{picks_bytes, picks_of};
use scope_profiler_analysis::{py_float_repr, LaneFilter, RegionCalls, RowView, StoredStats, ViewPath};

use crate::errors::{nesting_err, EventDataUnavailableError};
use crate::numpy_arrays::{i64_view, run_view, secs_array, slice_of};
use crate::results::pickling::{pickled_run, PickledRun, Reduced};

/// A `Region`'s pickled arguments: its run, row, exclusive-time rule, slices and whether it
/// has events (`Region._from_pickle`).
type RegionPickle<'py> = (Bound<'py, PickledRun>, usize, bool, Bound<'py, PyList>, bool);

/// Timing data of one region on one rank. Arrays in recorded order: for a tracked run,
/// grouped by thread (ascending index), each thread in entry order, so `start_times_ns` is
/// not monotonic across threads.
#[pyclass(module = "scope_profiler.region", frozen, weakref)]
pub struct Region {
    view: RwLock<RowView>,
    /// False for a summary-only region (`read_h5_summary`, `event_data_available=False`).
    event_data: bool,
    /// `exclusive_durations_ns`, built once per view (reset when re-pointed).
    exclusive: std::sync::Mutex<Option<Py<PyArray1<i64>>>>,
}

impl Region {
    /// A region over `view`.
    pub fn of(view: RowView, event_data: bool) -> Self {
        Region { view: RwLock::new(view), event_data, exclusive: std::sync::Mutex::new(None) }
    }
    /// The current view (cheap clone: an `Arc` and the exclusive rule).
    pub fn view(&self) -> RowView {
        self.view.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
    /// Re-point this region at `view` (a result set built from it takes it over).
    pub fn attach(&self, view: RowView) {
        *self.view.write().unwrap_or_else(|e| e.into_inner()) = view;
        *self.exclusive.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
    fn with<T>(&self, f: impl FnOnce(&RowView) -> T) -> T {
        f(&self.view.read().unwrap_or_else(|e| e.into_inner()))
    }
    fn stats<T>(&self, f: impl FnOnce(&RowStats) -> T) -> T {
        self.with(|v| f(&RowStats::new(v.calls())))
    }
    /// A view of a column of the row (base: the run's `NativeRun` handle).
    fn column<'py>(
        &self,
        py: Python<'py>,
        col: impl Fn(&RegionCalls) -> Option<&Int64Array>,
    ) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.with(|v| col(v.calls()).map(|a| run_view(py, &v.analysis, a.values())).transpose())
    }
    fn opt_view<'py>(py: Python<'py>, a: &Option<Int64Array>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        a.as_ref().map(|a| i64_view(py, a)).transpose()
    }
    fn exclusive_ns(&self) -> PyResult<Int64Array> {
        let values = self.with(|v| v.exclusive_ns()).map_err(nesting_err)?;
        self.warn_set_aside()?;
        Ok(values)
    }
    /// The exclusive total in s (stored total until per-call values exist, see `RowView`).
    pub fn exclusive_total(&self) -> PyResult<f64> {
        let total = self.with(|v| v.exclusive_total_ns()).map(secs).map_err(nesting_err)?;
        self.warn_set_aside()?;
        Ok(total)
    }
    /// The warning about set-aside calls of this row's rank, once per rank (see
    /// `errors::warn_set_aside`).
    fn warn_set_aside(&self) -> PyResult<()> {
        let (analysis, rank) = self.with(|v| (Arc::clone(&v.analysis), v.calls().rank));
        Python::attach(|py| crate::errors::warn_set_aside(py, &analysis, rank))
    }
    fn slice(&self, filter: LaneFilter, missing: &str) -> PyResult<Region> {
        let view = self.view();
        let picks = view.picks(filter).ok_or_else(|| PyValueError::new_err(missing.to_string()))?;
        Ok(Region::of(view.select(picks), self.event_data))
    }
    /// `get_summary()` as a dict.
    pub fn summary_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let exclusive = self.exclusive_total()?;
        self.stats(|s| -> PyResult<()> {
            d.set_item("num_calls", s.num_calls())?;
            d.set_item("total_duration", s.total())?;
            d.set_item("inclusive_duration", s.total())?;
            d.set_item("exclusive_duration", exclusive)?;
            d.set_item("average_duration", s.mean())?;
            d.set_item("min_duration", s.min())?;
            d.set_item("max_duration", s.max())?;
            d.set_item("first_duration", s.first())?;
            d.set_item("last_duration", s.last())?;
            d.set_item("std_duration", s.std())?;
            if s.has_gpu_timing() {
                d.set_item("gpu_total_duration", s.gpu_total())?;
                d.set_item("gpu_average_duration", s.gpu_mean())?;
            }
            Ok(())
        })?;
        Ok(d)
    }
    fn require_events(&self) -> PyResult<()> {
        if self.event_data && self.with(|v| v.calls().stored.is_none()) {
            Ok(())
        } else {
            Err(EventDataUnavailableError::new_err(
                "per-call events are unavailable on summary-only results; load the profile with read_h5()",
            ))
        }
    }
    /// `events(origin)` dicts (keys `call_index, start, end, duration` [...]).
    pub fn event_dicts<'py>(&self, py: Python<'py>, origin: f64, name_rank: bool) -> PyResult<Bound<'py, PyList>> {
        self.require_events()?;
        let view = self.view();
        crate::results::events::event_dicts(py, &view.analysis.run, &[view.row], origin, name_rank)
    }
}

fn opt_i64_array(a: Option<PyReadonlyArray1<'_, i64>>) -> Option<Int64Array> {
    a.map(|a| Int64Array::from(slice_of(&a).into_owned()))
}

/// The reference's `aggregate` dict (`count` + the stored statistics, `exclusive`).
fn stored_from_dict(d: &Bound<'_, PyDict>) -> PyResult<(StoredStats, Option<i64>)> {
    let int = |k: &str| -> PyResult<i64> { Ok(d.get_item(k)?.map(|v| v.extract()).transpose()?.unwrap_or(0)) };
    let float = |k: &str| -> PyResult<f64> { Ok(d.get_item(k)?.map(|v| v.extract()).transpose()?.unwrap_or(0.0)) };
    let stats = StoredStats {
        count: int("count")?,
        total: int("total")?,
        minimum: int("minimum")?,
        maximum: int("maximum")?,
        first: int("first")?,
        last: int("last")?,
        start_minimum: int("start_minimum")?,
        end_maximum: int("end_maximum")?,
        gpu_count: int("gpu_count")?.max(0) as u64,
        gpu_total: int("gpu_total")?,
        mean: float("mean")?,
        m2: float("m2")?,
    };
    let exclusive = d.get_item("exclusive")?.map(|v| v.extract()).transpose()?;
    Ok((stats, exclusive))
}

/// The stored statistics as the reference's `aggregate` dict.
fn stored_dict<'py>(py: Python<'py>, s: &StoredStats, exclusive: i64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("count", s.count)?;
    for (k, v) in [
        ("total", s.total),
        ("minimum", s.minimum),
        ("maximum", s.maximum),
        ("first", s.first),
        ("last", s.last),
        ("start_minimum", s.start_minimum),
        ("end_maximum", s.end_maximum),
    ] {
        d.set_item(k, v)?;
    }
    d.set_item("gpu_count", s.gpu_count)?;
    d.set_item("gpu_total", s.gpu_total)?;
    d.set_item("mean", s.mean)?;
    d.set_item("m2", s.m2)?;
    d.set_item("exclusive", exclusive)?;
    Ok(d)
}

#[pymethods]
impl Region {
    /// A region from int64 ns arrays (copied). Lane columns (`thread_ids`, `task_ids`,
    /// `await_times` in ns) must match the call count; `event_metadata` is one dict per call;
    /// `aggregate` (the stored-statistics dict of a summary-only region) with
    /// `event_data_available=False` gives a region without events. Alone, a region's
    /// exclusive time is its inclusive time; a `ProfilingResults` built from it computes it.
    ///
    /// Raises ValueError when array lengths differ.
    #[new]
    #[pyo3(signature = (start_times, end_times, gpu_durations=None, call_ids=None, parent_ids=None,
        thread_ids=None, task_ids=None, await_times=None, event_metadata=None, source_file=None,
        source_lineno=None, source_text=None, tags=Vec::new(), aggregate=None, event_data_available=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        start_times: PyReadonlyArray1<'_, i64>,
        end_times: PyReadonlyArray1<'_, i64>,
        gpu_durations: Option<PyReadonlyArray1<'_, i64>>,
        call_ids: Option<PyReadonlyArray1<'_, i64>>,
        parent_ids: Option<PyReadonlyArray1<'_, i64>>,
        thread_ids: Option<PyReadonlyArray1<'_, i64>>,
        task_ids: Option<PyReadonlyArray1<'_, i64>>,
        await_times: Option<PyReadonlyArray1<'_, i64>>,
        event_metadata: Option<Bound<'_, PyAny>>,
        source_file: Option<String>,
        source_lineno: Option<i64>,
        source_text: Option<String>,
        tags: Vec<String>,
        aggregate: Option<Bound<'_, PyDict>>,
        event_data_available: bool,
    ) -> PyResult<Self> {
        let start = Int64Array::from(slice_of(&start_times).into_owned());
        let end = Int64Array::from(slice_of(&end_times).into_owned());
        if start.len() != end.len() {
            return Err(PyValueError::new_err("start and end times must have the same length"));
        }
        let n = start.len();
        let mut calls = RegionCalls::new(0, 0, start, end);
        calls.gpu_ns = opt_i64_array(gpu_durations);
        calls.call_ids = opt_i64_array(call_ids).map(Into::into);
        calls.parent_ids = opt_i64_array(parent_ids).map(Into::into);
        calls.thread_ids = opt_i64_array(thread_ids);
        calls.task_ids = opt_i64_array(task_ids);
        calls.await_ns = opt_i64_array(await_times);
        for (what, len) in [
            ("thread ids", calls.thread_ids.as_ref().map(|a| a.len())),
            ("task ids", calls.task_ids.as_ref().map(|a| a.len())),
            ("await times", calls.await_ns.as_ref().map(|a| a.len())),
        ] {
            if len.is_some_and(|l| l != n) {
                return Err(PyValueError::new_err(format!("{what} must match the call count")));
            }
        }
        if let Some(meta) = event_metadata {
            let items: Vec<Bound<'_, PyAny>> = meta.try_iter()?.collect::<PyResult<_>>()?;
            if items.len() != n {
                return Err(PyValueError::new_err("event metadata must match the call count"));
            }
            let dicts = PyList::empty(py);
            for item in items {
                dicts.append(py.get_type::<PyDict>().call1((item,))?)?;
            }
            let json: String = py.import("json")?.call_method1("dumps", (dicts,))?.extract()?;
            calls.event_metadata = Some(json);
        }
        calls.source_file = source_file;
        calls.source_line = source_lineno;
        calls.source_text = source_text;
        calls.tags = tags;
        let mut event_data = event_data_available;
        if let Some(agg) = aggregate {
            let (stats, exclusive) = stored_from_dict(&agg)?;
            calls.stored = Some(stats);
            calls.exclusive_total_ns = exclusive;
            event_data = false;
        }
        Ok(Region::of(RowView::detached("", calls), event_data))
    }

    // -- per-call arrays (ns: read-only views; s: new arrays) --------------------------

    /// Call starts, int64 ns (absolute, recording clock).
    #[getter]
    fn start_times_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(self.column(py, |c| Some(&c.start_ns))?.expect("a start column"))
    }
    #[getter]
    fn end_times_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(self.column(py, |c| Some(&c.end_ns))?.expect("an end column"))
    }
    /// `end - start` per call, int64 ns (new array).
    #[getter]
    fn durations_ns<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_vec(py, self.with(RowView::durations_ns))
    }
    /// Same as `durations_ns`.
    #[getter]
    fn inclusive_durations_ns<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.durations_ns(py)
    }
    /// Duration minus the direct children on the same lane, int64 ns per call (the owning
    /// result set's reconstruction of this rank, computed once). Raises NestingError.
    #[getter]
    fn exclusive_durations_ns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        if let Some(a) = self.exclusive.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            return Ok(a.bind(py).clone());
        }
        let array = i64_view(py, &self.exclusive_ns()?)?;
        *self.exclusive.lock().unwrap_or_else(|e| e.into_inner()) = Some(array.clone().unbind());
        Ok(array)
    }
    /// Call starts, float64 s (absolute).
    #[getter]
    fn start_times<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.with(|v| secs_array(py, v.calls().start_ns.values()))
    }
    #[getter]
    fn end_times<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.with(|v| secs_array(py, v.calls().end_ns.values()))
    }
    #[getter]
    fn durations<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        secs_array(py, &self.with(RowView::durations_ns))
    }
    #[getter]
    fn inclusive_durations<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.durations(py)
    }
    /// Exclusive durations, float64 s. Raises NestingError.
    #[getter]
    fn exclusive_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(secs_array(py, self.exclusive_ns()?.values()))
    }
    /// GPU duration per call, int64 ns, or None without GPU timing.
    #[getter]
    fn gpu_durations_ns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.with(|v| {
            let s = RowStats::new(v.calls());
            match s.gpu_ns() {
                Some(_) => v.calls().gpu_ns.as_ref().map(|a| run_view(py, &v.analysis, a.values())).transpose(),
                None => Ok(None),
            }
        })
    }
    #[getter]
    fn gpu_durations<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.stats(|s| s.gpu_ns().map(|g| secs_array(py, g)))
    }
    /// Thread-table index per call (int64), or None when threads were not tracked.
    #[getter]
    fn thread_ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.column(py, |c| c.thread_ids.as_ref())
    }
    /// Task-table index per call (int64, -1 outside any task), or None without `track_async`.
    #[getter]
    fn task_ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.column(py, |c| c.task_ids.as_ref())
    }
    /// ns each call's task was suspended between entry and exit (0 outside tasks), or None.
    #[getter]
    fn await_times_ns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.column(py, |c| c.await_ns.as_ref())
    }
    /// `await_times_ns / 1e9` (s), or None.
    #[getter]
    fn await_times<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.with(|v| v.calls().await_ns.as_ref().map(|a| secs_array(py, a.values())))
    }
    /// ns of each call's await time during which its task was ready to resume but its event
    /// loop ran other code (0 outside tasks, -1 where the loop could not tell: uvloop and
    /// other loops without an asyncio ready queue, greenlets), or None without `track_async`.
    #[getter]
    fn ready_wait_times_ns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.column(py, |c| c.ready_wait_ns.as_ref())
    }
    /// `ready_wait_times_ns / 1e9` (s; NaN where not known), or None.
    #[getter]
    fn ready_wait_times<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.with(|v| {
            v.calls().ready_wait_ns.as_ref().map(|a| {
                let s: Vec<f64> = a.values().iter().map(|&x| if x < 0 { f64::NAN } else { secs(x) }).collect();
                numpy::PyArray1::from_vec(py, s)
            })
        })
    }
    /// ns each call's thread spent running task steps between entry and exit, for calls on
    /// the thread's own lane (0 in a task): time that is the task lanes', not the call's
    /// exclusive or held time. None when not recorded (no `track_async`, older files).
    #[getter]
    fn task_step_times_ns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        self.column(py, |c| c.task_step_ns.as_ref())
    }
    /// Σ await time in s (a negative await, found only in damaged data, counts as 0, as in
    /// every summary), or None without `track_async`.
    #[getter]
    fn total_await_duration(&self) -> Option<f64> {
        self.with(|v| v.await_total_ns().map(secs))
    }
    /// Call id per call (int64, unique per rank), or None without a call graph.
    #[getter]
    fn call_ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        let ids = self.with(|v| v.calls().call_ids.as_ref().map(|c| c.to_array()));
        Self::opt_view(py, &ids)
    }
    /// Call id of each call's enclosing call on its lane (-1 for a root), or None.
    #[getter]
    fn parent_ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        let ids = self.with(|v| v.calls().parent_ids.as_ref().map(|c| c.to_array()));
        Self::opt_view(py, &ids)
    }
    /// Per-call metadata, one dict per call (empty dicts when none was recorded).
    #[getter]
    fn event_metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let (json, n) = self.with(|v| (v.calls().event_metadata.clone(), v.calls().len()));
        match json {
            Some(text) => {
                let list = py.import("json")?.call_method1("loads", (text,))?;
                PyTuple::new(py, list.try_iter()?.collect::<PyResult<Vec<_>>>()?)
            }
            None => PyTuple::new(py, (0..n).map(|_| PyDict::new(py))),
        }
    }

    // -- lanes ----------------------------------------------------------------------------

    #[getter]
    fn has_thread_data(&self) -> bool {
        self.with(|v| v.calls().thread_ids.is_some())
    }
    /// Sorted thread-table indices this region has calls on (`[]` when not tracked).
    #[getter]
    fn threads(&self) -> Vec<i64> {
        self.with(|v| {
            let mut ids: Vec<i64> = v.calls().thread_ids.as_ref().map(|a| a.values().to_vec()).unwrap_or_default();
            ids.sort_unstable();
            ids.dedup();
            ids
        })
    }
    /// The calls of thread `thread_index` as a new Region (every column sliced, per-call
    /// metadata kept; exclusive time = this region's, sliced). Unknown index: an empty Region.
    /// Raises ValueError when the run recorded no thread ids.
    fn for_thread(&self, thread_index: i64) -> PyResult<Region> {
        self.slice(
            LaneFilter::Thread(thread_index),
            "this run did not record thread ids; profile with track_threads=True",
        )
    }
    /// The calls made inside task `task_index` (a new Region, as `for_thread`).
    /// Raises ValueError when the run recorded no task ids.
    fn for_task(&self, task_index: i64) -> PyResult<Region> {
        self.slice(LaneFilter::Task(task_index), "this run did not record task ids; profile with track_async=True")
    }
    /// The calls on lane `lane` (task index >= 0, `-2 - thread index`, -1 unknown).
    /// Raises ValueError when the run recorded no thread ids.
    fn for_lane(&self, lane: i64) -> PyResult<Region> {
        self.slice(LaneFilter::Lane(lane), "this run did not record thread ids; profile with track_threads=True")
    }

    // -- statistics (s) -------------------------------------------------------------------

    #[getter]
    fn num_calls(&self) -> i64 {
        self.stats(|s| s.num_calls())
    }
    fn __len__(&self) -> usize {
        self.num_calls().max(0) as usize
    }
    #[getter]
    fn has_timing(&self) -> bool {
        self.stats(|s| s.has_timing())
    }
    #[getter]
    fn total_duration(&self) -> f64 {
        self.stats(|s| s.total())
    }
    #[getter]
    fn inclusive_duration(&self) -> f64 {
        self.total_duration()
    }
    /// Σ exclusive s (the stored total while per-call values were not built). Raises NestingError.
    #[getter]
    fn exclusive_duration(&self) -> PyResult<f64> {
        self.exclusive_total()
    }
    #[getter]
    fn total_exclusive_duration(&self) -> PyResult<f64> {
        self.exclusive_total()
    }
    #[getter]
    fn average_duration(&self) -> f64 {
        self.stats(|s| s.mean())
    }
    #[getter]
    fn min_duration(&self) -> f64 {
        self.stats(|s| s.min())
    }
    #[getter]
    fn max_duration(&self) -> f64 {
        self.stats(|s| s.max())
    }
    #[getter]
    fn first_duration(&self) -> f64 {
        self.stats(|s| s.first())
    }
    #[getter]
    fn last_duration(&self) -> f64 {
        self.stats(|s| s.last())
    }
    /// Population standard deviation of the durations, s.
    #[getter]
    fn std_duration(&self) -> f64 {
        self.stats(|s| s.std())
    }
    /// Duration percentile `percentile` (0-100, numpy linear) in s; None for a summary-only
    /// region. Raises ValueError outside 0..100.
    fn percentile_duration(&self, percentile: f64) -> PyResult<Option<f64>> {
        self.stats(|s| s.percentile(percentile))
            .map_err(|_| PyValueError::new_err("percentile must be between 0 and 100"))
    }
    #[getter]
    fn p50_duration(&self) -> PyResult<Option<f64>> {
        self.percentile_duration(50.0)
    }
    #[getter]
    fn p95_duration(&self) -> PyResult<Option<f64>> {
        self.percentile_duration(95.0)
    }
    #[getter]
    fn p99_duration(&self) -> PyResult<Option<f64>> {
        self.percentile_duration(99.0)
    }
    /// Earliest start, s (absolute); 0.0 without calls.
    #[getter]
    fn first_start_time(&self) -> f64 {
        self.stats(|s| s.first_start())
    }
    /// Latest end, s (absolute); 0.0 without calls.
    #[getter]
    fn last_end_time(&self) -> f64 {
        self.stats(|s| s.last_end())
    }
    #[getter]
    fn has_gpu_timing(&self) -> bool {
        self.stats(|s| s.has_gpu_timing())
    }
    #[getter]
    fn gpu_total_duration(&self) -> Option<f64> {
        self.stats(|s| s.gpu_total())
    }
    #[getter]
    fn gpu_average_duration(&self) -> Option<f64> {
        self.stats(|s| s.gpu_mean())
    }

    // -- flags, source ----------------------------------------------------------------------

    #[getter]
    fn has_event_data(&self) -> bool {
        self.event_data && self.with(|v| v.calls().stored.is_none())
    }
    #[getter]
    fn has_source(&self) -> bool {
        self.with(|v| v.calls().source_file.is_some())
    }
    #[getter]
    fn source_file(&self) -> Option<String> {
        self.with(|v| v.calls().source_file.clone())
    }
    #[getter]
    fn source_lineno(&self) -> Option<i64> {
        self.with(|v| v.calls().source_line)
    }
    #[getter]
    fn source_text(&self) -> Option<String> {
        self.with(|v| v.calls().source_text.clone())
    }
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.with(|v| v.calls().tags.clone()))
    }
    /// The stored-statistics dict of a summary-only region, else None.
    #[getter]
    fn stored_summary<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let (stored, exclusive) = self.with(|v| (v.calls().stored, v.calls().exclusive_total_ns));
        stored.map(|s| stored_dict(py, &s, exclusive.unwrap_or(s.total))).transpose()
    }

    // -- summaries ----------------------------------------------------------------------------

    /// One dict per call in recorded order: `call_index, start, end, duration` (s minus
    /// `origin`) [+ `gpu_duration`][+ `call_id`, `parent_id`][+ `thread`][+ `task`,
    /// `await_duration`][+ `metadata`]. Raises EventDataUnavailableError on a summary-only region.
    #[pyo3(signature = (origin=0.0))]
    fn events<'py>(&self, py: Python<'py>, origin: f64) -> PyResult<Bound<'py, PyList>> {
        self.event_dicts(py, origin, false)
    }
    /// `num_calls, total_duration, inclusive_duration, exclusive_duration, average_duration,
    /// min_duration, max_duration, first_duration, last_duration, std_duration` (s)
    /// [+ `gpu_total_duration`, `gpu_average_duration`].
    fn get_summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.summary_dict(py)
    }
    /// Pickle support: the region's run (the one object for every region of that run pickled
    /// with it) and where in it the region is (its row, then the calls of each slice taken).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py, RegionPickle<'py>>> {
        let path = ViewPath::of(&self.view());
        let run = pickled_run(py, &path.analysis)?;
        let slices = PyList::new(py, path.slices.iter().map(|p| PyBytes::new(py, &picks_bytes(p))))?;
        let from = py.get_type::<Region>().getattr("_from_pickle")?;
        Ok((from, (run, path.row, path.inclusive, slices, self.event_data)))
    }
    /// The region `__reduce__` describes. Raises ValueError when the row or a slice is not
    /// in the run.
    #[staticmethod]
    fn _from_pickle(
        run: PyRef<'_, PickledRun>,
        row: usize,
        inclusive: bool,
        slices: Vec<Bound<'_, PyBytes>>,
        event_data: bool,
    ) -> PyResult<Region> {
        let slices = slices.iter().map(|b| picks_of(b.as_bytes())).collect::<Result<_, _>>();
        let slices = slices.map_err(PyValueError::new_err)?;
        let path = ViewPath { analysis: Arc::clone(run.analysis()), row, inclusive, slices };
        Ok(Region::of(path.view().map_err(PyValueError::new_err)?, event_data))
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut out = "-".repeat(60) + "\n";
        for (key, value) in self.summary_dict(py)?.iter() {
            let key: String = key.extract()?;
            let text = match value.extract::<f64>() {
                Ok(x) if !value.is_instance_of::<pyo3::types::PyInt>() => py_float_repr(x),
                _ => value.str()?.to_string(),
            };
            let unit = if key == "num_calls" { "" } else { " s" };
            out.push_str(&format!("  {key:>18}: {text}{unit}\n"));
        }
        out.push_str(&"-".repeat(60));
        out.push_str("\n\n");
        Ok(out)
    }
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        crate::results::html_tables::summary_html(py, "Region", &[self.summary_dict(py)?], None, None)
    }
}
