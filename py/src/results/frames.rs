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
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_arrow::PyTable;
use scope_profiler_analysis::{secs, Run, TaskSummaryRow, ThreadSummaryRow, UNKNOWN};

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
/// null while alive) - the fields of `ThreadInfo`, `cpu_time` the whole life (the
/// reference's) - then `cpu_time_total` (= `cpu_time`) and `cpu_time_run` (CPU during the
/// run, null when not recorded): `thread_summary()`'s names for its two CPU figures.
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
        // the names of thread_summary's two CPU figures (`cpu_time` here is the whole life,
        // there the run's): the same values, one name each
        ("cpu_time_total", floats(t.iter().map(|x| secs(x.cpu_ns)))),
        ("cpu_time_run", opt_floats(t.iter().map(|x| x.cpu_run_ns().map(secs)))),
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

/// `thread_summary(rank)` as a table: `index, name, alive, wall_time, cpu_time,
/// cpu_time_total, num_calls, region_time, held_time, await_time, ready_wait_time` (one row
/// per thread-table row; s; held/await null without an await column, ready wait null for a
/// thread that ran no task step or whose loop could not tell).
pub fn thread_summary_table(rows: &[ThreadSummaryRow]) -> PyResult<PyTable> {
    table(vec![
        ("index", ints(rows.iter().map(|r| r.index))),
        ("name", strs(rows.iter().map(|r| r.name.as_str()))),
        ("alive", bools(rows.iter().map(|r| r.alive))),
        ("wall_time", opt_floats(rows.iter().map(|r| r.wall_time))),
        ("cpu_time", opt_floats(rows.iter().map(|r| r.cpu_time))),
        ("cpu_time_total", opt_floats(rows.iter().map(|r| r.cpu_time_total))),
        ("num_calls", ints(rows.iter().map(|r| r.num_calls))),
        ("region_time", floats(rows.iter().map(|r| r.region_time))),
        ("held_time", opt_floats(rows.iter().map(|r| r.held_time))),
        ("await_time", opt_floats(rows.iter().map(|r| r.await_time))),
        ("ready_wait_time", opt_floats(rows.iter().map(|r| r.ready_wait_time))),
    ])
}

/// `task_summary(rank)` as a table: `index, kind, name, coro_name, thread_index, thread,
/// done, wall_time, num_calls, region_time, held_time, await_time, ready_wait_time` (one row
/// per task/greenlet).
pub fn task_summary_table(rows: &[TaskSummaryRow]) -> PyResult<PyTable> {
    table(vec![
        ("index", ints(rows.iter().map(|r| r.index))),
        ("kind", strs(rows.iter().map(|r| r.kind.as_str()))),
        ("name", strs(rows.iter().map(|r| r.name.as_str()))),
        ("coro_name", strs(rows.iter().map(|r| r.coro_name.as_str()))),
        ("thread_index", ints(rows.iter().map(|r| r.thread_index))),
        ("thread", strs(rows.iter().map(|r| r.thread.as_str()))),
        ("done", bools(rows.iter().map(|r| r.done))),
        ("wall_time", opt_floats(rows.iter().map(|r| r.wall_time))),
        ("num_calls", ints(rows.iter().map(|r| r.num_calls))),
        ("region_time", floats(rows.iter().map(|r| r.region_time))),
        ("held_time", opt_floats(rows.iter().map(|r| r.held_time))),
        ("await_time", opt_floats(rows.iter().map(|r| r.await_time))),
        ("ready_wait_time", opt_floats(rows.iter().map(|r| r.ready_wait_time))),
    ])
}

/// `analysis::events::events_batch` of region rows `rows` (in this order) as a table.
pub fn events_table(py: Python<'_>, run: &Run, rows: &[usize], origin: f64) -> PyResult<PyTable> {
    let batch = py
        .detach(|| scope_profiler_analysis::events_batch_with(run, rows, origin, false))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let schema = batch.schema();
    PyTable::try_new(vec![batch], schema)
}

/// The events table as numpy columns (for pandas without pyarrow): int columns with nulls
/// become float64 with NaN, `name` an object array; the `metadata` column is left out.
pub fn events_numpy<'py>(py: Python<'py>, run: &Run, rows: &[usize], origin: f64) -> PyResult<Bound<'py, PyDict>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    let batch = py
        .detach(|| scope_profiler_analysis::events_batch_with(run, rows, origin, false))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let np = py.import("numpy")?;
    let out = PyDict::new(py);
    for (field, col) in batch.schema().fields().iter().zip(batch.columns()) {
        let name = field.name().as_str();
        let value: Bound<'py, PyAny> = match col.data_type() {
            arrow_schema::DataType::Int64 if col.null_count() == 0 => {
                numpy::PyArray1::from_slice(py, col.as_primitive::<Int64Type>().values()).into_any()
            }
            arrow_schema::DataType::Int64 => {
                let a = col.as_primitive::<Int64Type>();
                let v: Vec<f64> =
                    (0..a.len()).map(|i| if a.is_null(i) { f64::NAN } else { a.value(i) as f64 }).collect();
                numpy::PyArray1::from_vec(py, v).into_any()
            }
            arrow_schema::DataType::Float64 => {
                let a = col.as_primitive::<Float64Type>();
                let v: Vec<f64> = (0..a.len()).map(|i| if a.is_null(i) { f64::NAN } else { a.value(i) }).collect();
                numpy::PyArray1::from_vec(py, v).into_any()
            }
            arrow_schema::DataType::Utf8 if name == "name" => {
                let a = col.as_string::<i32>();
                let list = pyo3::types::PyList::new(py, (0..a.len()).map(|i| a.value(i)))?;
                np.call_method1("array", (list, "object"))?
            }
            _ => continue,
        };
        out.set_item(name, value)?;
    }
    Ok(out)
}

/// `thread_summary` rows as dicts (keys as [`thread_summary_table`]'s columns).
pub fn thread_summary_dicts<'py>(
    py: Python<'py>,
    rows: &[ThreadSummaryRow],
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let out = pyo3::types::PyList::empty(py);
    for r in rows {
        let d = PyDict::new(py);
        d.set_item("index", r.index)?;
        d.set_item("name", &r.name)?;
        d.set_item("alive", r.alive)?;
        d.set_item("wall_time", r.wall_time)?;
        d.set_item("cpu_time", r.cpu_time)?;
        d.set_item("cpu_time_total", r.cpu_time_total)?;
        d.set_item("num_calls", r.num_calls)?;
        d.set_item("region_time", r.region_time)?;
        d.set_item("held_time", r.held_time)?;
        d.set_item("await_time", r.await_time)?;
        d.set_item("ready_wait_time", r.ready_wait_time)?;
        out.append(d)?;
    }
    Ok(out)
}

/// `task_summary` rows as dicts (keys as [`task_summary_table`]'s columns).
pub fn task_summary_dicts<'py>(py: Python<'py>, rows: &[TaskSummaryRow]) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let out = pyo3::types::PyList::empty(py);
    for r in rows {
        let d = PyDict::new(py);
        d.set_item("index", r.index)?;
        d.set_item("kind", &r.kind)?;
        d.set_item("name", &r.name)?;
        d.set_item("coro_name", &r.coro_name)?;
        d.set_item("thread_index", r.thread_index)?;
        d.set_item("thread", &r.thread)?;
        d.set_item("done", r.done)?;
        d.set_item("wall_time", r.wall_time)?;
        d.set_item("num_calls", r.num_calls)?;
        d.set_item("region_time", r.region_time)?;
        d.set_item("held_time", r.held_time)?;
        d.set_item("await_time", r.await_time)?;
        d.set_item("ready_wait_time", r.ready_wait_time)?;
        out.append(d)?;
    }
    Ok(out)
}

/// `loop_blocks` rows as dicts: `thread, task, start, duration, region, delayed_tasks`.
pub fn loop_block_dicts<'py>(
    py: Python<'py>,
    rows: &[scope_profiler_analysis::LoopBlock],
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let out = pyo3::types::PyList::empty(py);
    for b in rows {
        let d = PyDict::new(py);
        d.set_item("thread", b.thread)?;
        d.set_item("task", b.task)?;
        d.set_item("start", b.start)?;
        d.set_item("duration", b.duration)?;
        d.set_item("region", &b.region)?;
        d.set_item("delayed_tasks", b.delayed_tasks)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Column kinds of the summary tables: fixed for the keys below, else bool when every value
/// is None/bool (and one is not None), else float.
fn column_kind(key: &str, values: &[Bound<'_, PyAny>]) -> &'static str {
    match key {
        "name" => "str",
        "num_ranks" | "rank" | "num_calls" => "int",
        "tags" => "str_list",
        _ if values.iter().all(|v| v.is_none() || v.is_instance_of::<pyo3::types::PyBool>())
            && values.iter().any(|v| !v.is_none()) =>
        {
            "bool"
        }
        _ => "float",
    }
}

/// A table from dict rows with the columns `columns` (in this order; a key a row lacks is
/// null), then any other key of the rows (first-seen order). `columns` comes from
/// `analysis::summary_table_columns`, so an empty result keeps the schema.
pub fn dict_rows_table(py: Python<'_>, rows: &[Bound<'_, PyDict>], columns: &[&str]) -> PyResult<PyTable> {
    let mut keys: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    for row in rows {
        for k in row.keys() {
            let k: String = k.extract()?;
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut columns: Vec<(String, ArrayRef)> = Vec::with_capacity(keys.len());
    for key in keys {
        let values: Vec<Bound<'_, PyAny>> = rows
            .iter()
            .map(|r| r.get_item(&key).map(|v| v.unwrap_or_else(|| py.None().into_bound(py))))
            .collect::<PyResult<_>>()?;
        let opt = |v: &Bound<'_, PyAny>| !v.is_none();
        let array: ArrayRef = match column_kind(&key, &values) {
            "int" => Arc::new(Int64Array::from(
                values.iter().map(|v| opt(v).then(|| v.extract::<i64>()).transpose()).collect::<PyResult<Vec<_>>>()?,
            )),
            "bool" => Arc::new(BooleanArray::from(
                values.iter().map(|v| opt(v).then(|| v.extract::<bool>()).transpose()).collect::<PyResult<Vec<_>>>()?,
            )),
            "str" => Arc::new(StringArray::from(
                values
                    .iter()
                    .map(|v| opt(v).then(|| v.extract::<String>()).transpose())
                    .collect::<PyResult<Vec<_>>>()?,
            )),
            "str_list" => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for v in &values {
                    if v.is_none() {
                        b.append(false);
                        continue;
                    }
                    for s in v.try_iter()? {
                        b.values().append_value(s?.extract::<String>()?);
                    }
                    b.append(true);
                }
                Arc::new(b.finish())
            }
            _ => Arc::new(Float64Array::from(
                values.iter().map(|v| opt(v).then(|| v.extract::<f64>()).transpose()).collect::<PyResult<Vec<_>>>()?,
            )),
        };
        columns.push((key, array));
    }
    table(columns.iter().map(|(n, a)| (n.as_str(), Arc::clone(a))).collect())
}
