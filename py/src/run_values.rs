//! Conversions between a [`Run`] and Python values.
//!
//! Thread rows travel as `(rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns,
//! name)` (the CPU clock at registration is not known then: `cpu_start_ns = -1`), task rows as `(rank, index, thread_index, created_ns, done_ns, steps, running_ns,
//! suspended_ns, kind, name, coro_name)`, region rows as dicts (see [`row_dict`]).
use arrow_array::Int64Array;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use scope_profiler_analysis::{MetaValue, RegionCalls, Run, TaskRow, ThreadRow};

use crate::numpy_arrays::slice_of;

pub type ThreadTuple = (u32, i64, i64, i64, bool, i64, i64, i64, String);
pub type TaskTuple = (u32, i64, i64, i64, i64, i64, i64, i64, String, String, String);

pub fn thread_from_tuple(t: ThreadTuple) -> ThreadRow {
    let (rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns, name) = t;
    ThreadRow { ident, native_id, daemon, start_ns, end_ns, cpu_ns, ..ThreadRow::new(rank, index, &name) }
}

pub fn task_from_tuple(t: TaskTuple) -> TaskRow {
    let (rank, index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns, kind, name, coro_name) = t;
    TaskRow::new(rank, index, kind, name, coro_name).on_thread(thread_index).lifetime(created_ns, done_ns).timing(
        steps,
        running_ns,
        suspended_ns,
    )
}

pub fn meta_to_py<'py>(py: Python<'py>, v: &MetaValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        MetaValue::Int(i) => i.into_pyobject(py)?.into_any(),
        MetaValue::Float(f) => f.into_pyobject(py)?.into_any(),
        MetaValue::Str(s) => PyString::new(py, s).into_any(),
        MetaValue::StrList(l) => PyList::new(py, l)?.into_any(),
    })
}

/// A Python metadata value as a [`MetaValue`]: bool/int, float, str, list of str; anything
/// else is stored as its `str()`.
pub fn meta_from_py(v: &Bound<'_, PyAny>) -> PyResult<MetaValue> {
    if let Ok(i) = v.extract::<i64>() {
        if !v.is_instance_of::<pyo3::types::PyFloat>() {
            return Ok(MetaValue::Int(i));
        }
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(MetaValue::Float(f));
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(MetaValue::Str(s));
    }
    if let Ok(l) = v.extract::<Vec<String>>() {
        return Ok(MetaValue::StrList(l));
    }
    Ok(MetaValue::Str(v.str()?.to_string()))
}

pub fn metadata_dict<'py>(py: Python<'py>, run: &Run) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in &run.metadata {
        d.set_item(k, meta_to_py(py, v)?)?;
    }
    Ok(d)
}

fn req_array(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Int64Array> {
    let v = d.get_item(key)?.ok_or_else(|| PyKeyError::new_err(key.to_string()))?;
    let a: PyReadonlyArray1<'_, i64> = v.extract()?;
    Ok(Int64Array::from(slice_of(&a).into_owned()))
}

fn opt_array(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<Int64Array>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => {
            let a: PyReadonlyArray1<'_, i64> = v.extract()?;
            Ok(Some(Int64Array::from(slice_of(&a).into_owned())))
        }
        _ => Ok(None),
    }
}

fn opt_item<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py, Error = PyErr>,
{
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract::<T>()?)),
        _ => Ok(None),
    }
}

/// Build a [`Run`] from Python columns (copies the arrays). Used for result sets that do not
/// come from one `NativeRun` (merged or hand-built results).
pub fn run_from_py(
    region_names: Vec<String>,
    rows: &Bound<'_, PyList>,
    threads: Vec<ThreadTuple>,
    tasks: Vec<TaskTuple>,
    metadata: &Bound<'_, PyDict>,
    num_ranks: Option<u32>,
) -> PyResult<Run> {
    let mut regions = Vec::with_capacity(rows.len());
    for row in rows.iter() {
        let d = row.cast::<PyDict>()?;
        let name: String = d.get_item("name")?.ok_or_else(|| PyKeyError::new_err("name"))?.extract()?;
        let region = region_names
            .iter()
            .position(|n| *n == name)
            .ok_or_else(|| PyValueError::new_err(format!("row names unknown region {name:?}")))?
            as u32;
        let rank: u32 = d.get_item("rank")?.ok_or_else(|| PyKeyError::new_err("rank"))?.extract()?;
        let start_ns = req_array(d, "start_ns")?;
        let end_ns = req_array(d, "end_ns")?;
        if start_ns.len() != end_ns.len() {
            return Err(PyValueError::new_err(format!("region {name:?}: start and end columns differ in length")));
        }
        let rc = RegionCalls {
            region,
            rank,
            start_ns,
            end_ns,
            gpu_ns: opt_array(d, "gpu_ns")?,
            call_ids: opt_array(d, "call_ids")?.map(Into::into),
            parent_ids: opt_array(d, "parent_ids")?.map(Into::into),
            thread_ids: opt_array(d, "thread_ids")?,
            task_ids: opt_array(d, "task_ids")?,
            await_ns: opt_array(d, "await_ns")?,
            ready_wait_ns: opt_array(d, "ready_wait_ns")?,
            task_step_ns: opt_array(d, "task_step_ns")?,
            source_file: opt_item(d, "source_file")?,
            source_line: opt_item(d, "source_line")?,
            source_text: opt_item(d, "source_text")?,
            tags: opt_item::<Vec<String>>(d, "tags")?.unwrap_or_default(),
            event_metadata: opt_item(d, "event_metadata")?,
            exclusive_total_ns: opt_item(d, "exclusive_total_ns")?,
            stored: None,
        };
        regions.push(rc);
    }
    let mut md = Vec::new();
    for (k, v) in metadata.iter() {
        md.push((k.extract::<String>()?, meta_from_py(&v)?));
    }
    let max_rank = regions.iter().map(|r| r.rank + 1).max().unwrap_or(0);
    let mut run = Run {
        region_names,
        regions,
        threads: threads.into_iter().map(thread_from_tuple).collect(),
        tasks: tasks.into_iter().map(task_from_tuple).collect(),
        metadata: md,
        num_ranks: num_ranks.unwrap_or(max_rank).max(max_rank),
        loop_blocks: Vec::new(),
    };
    run.order_rows_by_rank();
    Ok(run)
}

/// A metadata dict as run metadata (values converted by [`meta_from_py`]; None values dropped).
pub fn meta_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, MetaValue)>> {
    let mut out = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        if v.is_none() {
            continue;
        }
        out.push((k.str()?.to_string(), meta_from_py(&v)?));
    }
    Ok(out)
}

/// Python's `repr()` of a list of str (`['a', 'b']`).
pub fn py_list_repr(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| scope_profiler_analysis::py_repr(s)).collect();
    format!("[{}]", parts.join(", "))
}
