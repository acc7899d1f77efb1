//! Arrow tables of a run for data-frame libraries, exported through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, via `pyo3-arrow`): `polars.DataFrame(t)`,
//! `pyarrow.table(t)` and `pandas` (through pyarrow) take them without copying.
//!
//! Tables are built in Rust from the run: the lane tables (`threads`, `tasks`), the thread
//! summary of one rank (from the cached reconstruction), the per-call events of a list of
//! region rows ([`scope_profiler_analysis::events`]), and any small table given as Python columns
//! (`table_from_columns`, used for the region summaries computed in Python).
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::PyTable;
use scope_profiler_analysis::{events_batch_with, EventsError, Run, ThreadSummaryRow, UNKNOWN};

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

/// The events of the region rows `rows` (positions in `run.regions`, in this order) as a
/// table: [`scope_profiler_analysis::events`] (the columns of `ProfilingResults.events()`,
/// starts/ends minus `origin` s; no `metadata` column). A bad row position is an `IndexError`.
pub fn events_table(run: &Run, rows: &[usize], origin: f64) -> PyResult<PyTable> {
    let batch = events_batch_with(run, rows, origin, false).map_err(|e| match e {
        EventsError::RowOutOfRange { row, .. } => PyIndexError::new_err(format!("row {row} out of range")),
        other => PyValueError::new_err(other.to_string()),
    })?;
    let schema = batch.schema();
    PyTable::try_new(vec![batch], schema)
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
