//! Arrow tables of a run for data-frame libraries, exported through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, via `pyo3-arrow`): `polars.DataFrame(t)`,
//! `pyarrow.table(t)` and `pandas` (through pyarrow) take them without copying.
//!
//! Tables are built in Rust from the run: the lane tables (`threads`, `tasks`), the thread
//! summary of one rank (from the cached reconstruction), the per-call events of a list of
//! region rows with the lane columns kept, and any small table given as Python columns
//! (`table_from_columns`, used for the region summaries computed in Python).
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::PyTable;
use scope_profiler_analysis::{Run, ThreadSummaryRow, UNKNOWN};

/// `ns / 1e9` as Python computes `float(ns) / 1e9`.
#[inline]
fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// A one-batch table from named columns (a column is nullable iff it has nulls).
pub fn table(columns: Vec<(&str, ArrayRef)>) -> PyResult<PyTable> {
    let fields: Vec<Field> =
        columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0)).collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays: Vec<ArrayRef> = columns.into_iter().map(|(_, a)| a).collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyTable::try_new(vec![batch], schema)
}

fn ints(v: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(v))
}
fn floats(v: impl IntoIterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(v))
}
fn opt_floats(v: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(v))
}
fn bools(v: impl IntoIterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(v.into_iter().map(Some)))
}
fn strs<'a>(v: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(v))
}

/// The thread table (all ranks): `rank, index, name, ident, native_id, daemon, start_time,
/// end_time, cpu_time, alive, wall_time` (s since the run start; `end_time`/`wall_time`
/// null while alive) - the fields of `ThreadInfo`.
pub fn threads_table(run: &Run) -> PyResult<PyTable> {
    let t = &run.threads;
    let end = |x: &scope_profiler_analysis::ThreadRow| (x.end_ns != UNKNOWN).then(|| secs(x.end_ns));
    table(vec![
        ("rank", ints(t.iter().map(|x| x.rank as i64))),
        ("index", ints(t.iter().map(|x| x.index))),
        ("name", strs(t.iter().map(|x| x.name.as_str()))),
        ("ident", ints(t.iter().map(|x| x.ident))),
        ("native_id", ints(t.iter().map(|x| x.native_id))),
        ("daemon", bools(t.iter().map(|x| x.daemon))),
        ("start_time", floats(t.iter().map(|x| secs(x.start_ns)))),
        ("end_time", opt_floats(t.iter().map(end))),
        ("cpu_time", floats(t.iter().map(|x| secs(x.cpu_ns)))),
        ("alive", bools(t.iter().map(|x| x.end_ns == UNKNOWN))),
        ("wall_time", opt_floats(t.iter().map(|x| end(x).map(|e| e - secs(x.start_ns))))),
    ])
}

/// The task table (all ranks): `rank, index, kind, name, coro_name, thread_index,
/// created_time, done_time, steps, running_time, awaiting_time, done, wall_time` - the
/// fields of `TaskInfo` (`done_time`/`wall_time` null when not done).
pub fn tasks_table(run: &Run) -> PyResult<PyTable> {
    let t = &run.tasks;
    let done = |x: &scope_profiler_analysis::TaskRow| (x.done_ns != UNKNOWN).then(|| secs(x.done_ns));
    table(vec![
        ("rank", ints(t.iter().map(|x| x.rank as i64))),
        ("index", ints(t.iter().map(|x| x.index))),
        ("kind", strs(t.iter().map(|x| x.kind.as_str()))),
        ("name", strs(t.iter().map(|x| x.name.as_str()))),
        ("coro_name", strs(t.iter().map(|x| x.coro_name.as_str()))),
        ("thread_index", ints(t.iter().map(|x| x.thread_index))),
        ("created_time", floats(t.iter().map(|x| secs(x.created_ns)))),
        ("done_time", opt_floats(t.iter().map(done))),
        ("steps", ints(t.iter().map(|x| x.steps))),
        ("running_time", floats(t.iter().map(|x| secs(x.running_ns)))),
        ("awaiting_time", floats(t.iter().map(|x| secs(x.suspended_ns)))),
        ("done", bools(t.iter().map(|x| x.done_ns != UNKNOWN))),
        ("wall_time", opt_floats(t.iter().map(|x| done(x).map(|d| d - secs(x.created_ns))))),
    ])
}

/// `thread_summary(rank)` as a table: `index, name, alive, wall_time, cpu_time, num_calls,
/// region_time` (one row per thread-table row).
pub fn thread_summary_table(rows: &[ThreadSummaryRow]) -> PyResult<PyTable> {
    table(vec![
        ("index", ints(rows.iter().map(|r| r.index))),
        ("name", strs(rows.iter().map(|r| r.name.as_str()))),
        ("alive", bools(rows.iter().map(|r| r.alive))),
        ("wall_time", opt_floats(rows.iter().map(|r| r.wall_time))),
        ("cpu_time", floats(rows.iter().map(|r| r.cpu_time))),
        ("num_calls", ints(rows.iter().map(|r| r.num_calls))),
        ("region_time", floats(rows.iter().map(|r| r.region_time))),
    ])
}

/// One call per row for the region rows `rows` (positions in `run.regions`, in this order),
/// each row's calls in recorded order: `name, rank, call_index, start, end, duration`
/// (s, starts/ends minus `origin`), then when any selected row has them: `gpu_duration`
/// (rows whose GPU column holds no value >= 0 count as none), `call_id` + `parent_id`,
/// `thread`, `task` + `await_duration` (s) - the keys of `ProfilingResults.events()`;
/// rows lacking a column give nulls there.
pub fn events_table(run: &Run, rows: &[usize], origin: f64) -> PyResult<PyTable> {
    for &r in rows {
        if r >= run.regions.len() {
            return Err(PyIndexError::new_err(format!("row {r} out of range")));
        }
    }
    let sel: Vec<&scope_profiler_analysis::RegionCalls> = rows.iter().map(|&r| &run.regions[r]).collect();
    let n: usize = sel.iter().map(|r| r.len()).sum();
    let gpu_of = |r: &scope_profiler_analysis::RegionCalls| {
        r.gpu_ns.as_ref().filter(|g| g.values().iter().any(|&v| v >= 0)).cloned()
    };
    let ids_of = |r: &scope_profiler_analysis::RegionCalls| match (&r.call_ids, &r.parent_ids) {
        (Some(c), Some(p)) => Some((c.to_array(), p.to_array())),
        _ => None,
    };
    let tasks_of = |r: &scope_profiler_analysis::RegionCalls| match (&r.task_ids, &r.await_ns) {
        (Some(t), Some(a)) => Some((t.clone(), a.clone())),
        _ => None,
    };
    let mut name = StringBuilder::with_capacity(n, n * 8);
    let mut rank = Vec::with_capacity(n);
    let mut call_index = Vec::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut end = Vec::with_capacity(n);
    let mut duration = Vec::with_capacity(n);
    let any_gpu = sel.iter().any(|r| gpu_of(r).is_some());
    let any_ids = sel.iter().any(|r| ids_of(r).is_some());
    let any_thread = sel.iter().any(|r| r.thread_ids.is_some());
    let any_task = sel.iter().any(|r| tasks_of(r).is_some());
    let mut gpu: Vec<Option<f64>> = Vec::with_capacity(if any_gpu { n } else { 0 });
    let mut call_id: Vec<Option<i64>> = Vec::with_capacity(if any_ids { n } else { 0 });
    let mut parent_id: Vec<Option<i64>> = Vec::with_capacity(if any_ids { n } else { 0 });
    let mut thread: Vec<Option<i64>> = Vec::with_capacity(if any_thread { n } else { 0 });
    let mut task: Vec<Option<i64>> = Vec::with_capacity(if any_task { n } else { 0 });
    let mut await_s: Vec<Option<f64>> = Vec::with_capacity(if any_task { n } else { 0 });
    for r in &sel {
        let m = r.len();
        let nm = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("");
        for _ in 0..m {
            name.append_value(nm);
        }
        rank.extend(std::iter::repeat_n(r.rank as i64, m));
        call_index.extend(0..m as i64);
        for (&s, &e) in r.start_ns.values().iter().zip(r.end_ns.values().iter()) {
            let (a, b) = (secs(s) - origin, secs(e) - origin);
            start.push(a);
            end.push(b);
            duration.push(b - a);
        }
        if any_gpu {
            match gpu_of(r) {
                Some(g) => gpu.extend(g.values().iter().map(|&v| Some(secs(v)))),
                None => gpu.extend(std::iter::repeat_n(None, m)),
            }
        }
        if any_ids {
            match ids_of(r) {
                Some((c, p)) => {
                    call_id.extend(c.values().iter().map(|&v| Some(v)));
                    parent_id.extend(p.values().iter().map(|&v| Some(v)));
                }
                None => {
                    call_id.extend(std::iter::repeat_n(None, m));
                    parent_id.extend(std::iter::repeat_n(None, m));
                }
            }
        }
        if any_thread {
            match &r.thread_ids {
                Some(t) => thread.extend(t.values().iter().map(|&v| Some(v))),
                None => thread.extend(std::iter::repeat_n(None, m)),
            }
        }
        if any_task {
            match tasks_of(r) {
                Some((t, a)) => {
                    task.extend(t.values().iter().map(|&v| Some(v)));
                    await_s.extend(a.values().iter().map(|&v| Some(secs(v))));
                }
                None => {
                    task.extend(std::iter::repeat_n(None, m));
                    await_s.extend(std::iter::repeat_n(None, m));
                }
            }
        }
    }
    let mut cols: Vec<(&str, ArrayRef)> = vec![
        ("name", Arc::new(name.finish())),
        ("rank", Arc::new(Int64Array::from(rank))),
        ("call_index", Arc::new(Int64Array::from(call_index))),
        ("start", Arc::new(Float64Array::from(start))),
        ("end", Arc::new(Float64Array::from(end))),
        ("duration", Arc::new(Float64Array::from(duration))),
    ];
    if any_gpu {
        cols.push(("gpu_duration", Arc::new(Float64Array::from(gpu))));
    }
    if any_ids {
        cols.push(("call_id", Arc::new(Int64Array::from(call_id))));
        cols.push(("parent_id", Arc::new(Int64Array::from(parent_id))));
    }
    if any_thread {
        cols.push(("thread", Arc::new(Int64Array::from(thread))));
    }
    if any_task {
        cols.push(("task", Arc::new(Int64Array::from(task))));
        cols.push(("await_duration", Arc::new(Float64Array::from(await_s))));
    }
    table(cols)
}

/// A small table from Python columns: `[(name, kind, values)]` with `kind` one of `"int"`,
/// `"float"`, `"bool"`, `"str"`, `"str_list"` and `values` a sequence (None = null).
#[pyfunction]
pub fn table_from_columns(columns: Vec<(String, String, Bound<'_, PyAny>)>) -> PyResult<PyTable> {
    let mut built: Vec<(String, ArrayRef)> = Vec::with_capacity(columns.len());
    for (name, kind, values) in columns {
        let array: ArrayRef = match kind.as_str() {
            "int" => Arc::new(Int64Array::from(values.extract::<Vec<Option<i64>>>()?)),
            "float" => Arc::new(Float64Array::from(values.extract::<Vec<Option<f64>>>()?)),
            "bool" => Arc::new(BooleanArray::from(values.extract::<Vec<Option<bool>>>()?)),
            "str" => Arc::new(StringArray::from(values.extract::<Vec<Option<String>>>()?)),
            "str_list" => {
                let lists = values.extract::<Vec<Option<Vec<String>>>>()?;
                let mut b = ListBuilder::new(StringBuilder::new());
                for l in lists {
                    match l {
                        Some(items) => {
                            for s in items {
                                b.values().append_value(s);
                            }
                            b.append(true);
                        }
                        None => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            other => return Err(PyValueError::new_err(format!("unknown column kind {other:?}"))),
        };
        built.push((name, array));
    }
    table(built.iter().map(|(n, a)| (n.as_str(), Arc::clone(a))).collect())
}
