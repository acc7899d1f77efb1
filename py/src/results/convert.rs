//! Conversions between a [`Run`] and Python values.
//!
//! Thread rows travel as `(rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns,
//! name)`, task rows as `(rank, index, thread_index, created_ns, done_ns, steps, running_ns,
//! suspended_ns, kind, name, coro_name)`, region rows as dicts (see [`row_dict`]).
use arrow_array::Int64Array;
use numpy::PyReadonlyArray1;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use scope_profiler_analysis::{MetaValue, RegionCalls, Run, TaskRow, ThreadRow};

use super::arrays::{slice_of, view_i64};

pub type ThreadTuple = (u32, i64, i64, i64, bool, i64, i64, i64, String);
pub type TaskTuple = (u32, i64, i64, i64, i64, i64, i64, i64, String, String, String);

pub fn thread_tuple(t: &ThreadRow) -> ThreadTuple {
    (t.rank, t.index, t.ident, t.native_id, t.daemon, t.start_ns, t.end_ns, t.cpu_ns, t.name.clone())
}

pub fn task_tuple(t: &TaskRow) -> TaskTuple {
    (
        t.rank,
        t.index,
        t.thread_index,
        t.created_ns,
        t.done_ns,
        t.steps,
        t.running_ns,
        t.suspended_ns,
        t.kind.clone(),
        t.name.clone(),
        t.coro_name.clone(),
    )
}

pub fn thread_from_tuple(t: ThreadTuple) -> ThreadRow {
    let (rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns, name) = t;
    ThreadRow { rank, index, ident, native_id, daemon, start_ns, end_ns, cpu_ns, name }
}

pub fn task_from_tuple(t: TaskTuple) -> TaskRow {
    let (rank, index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns, kind, name, coro_name) = t;
    TaskRow { rank, index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns, kind, name, coro_name }
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

/// Row `i` of `run` as a dict; int64 columns are read-only numpy views kept alive by
/// `container` (the `NativeRun` owning `run`). Keys: `name, rank, start_ns, end_ns, gpu_ns,
/// call_ids, parent_ids, thread_ids, task_ids, await_ns` (absent columns are None; ids held
/// bit-packed are None here with `ids_packed` True: `NativeRun.row_ids(i)` decodes them),
/// `source_file, source_line, source_text, tags, event_metadata` (JSON str or None),
/// `exclusive_total_ns` (int or None).
///
/// # Safety
/// `run` must be owned (immutably, for its whole life) by `container`.
pub unsafe fn row_dict<'py>(container: &Bound<'py, PyAny>, run: &Run, i: usize) -> PyResult<Bound<'py, PyDict>> {
    let py = container.py();
    let r = &run.regions[i];
    let d = PyDict::new(py);
    let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("");
    d.set_item("name", name)?;
    d.set_item("rank", r.rank)?;
    let col = |a: &Int64Array| unsafe { view_i64(a.values(), container) };
    d.set_item("start_ns", col(&r.start_ns))?;
    d.set_item("end_ns", col(&r.end_ns))?;
    let opt = |a: &Option<Int64Array>| a.as_ref().map(|a| unsafe { view_i64(a.values(), container) });
    d.set_item("gpu_ns", opt(&r.gpu_ns))?;
    // Plain ids are views; packed ids (a loaded file's) are decoded on first use through
    // `NativeRun.row_ids` (`ids_packed` tells the caller).
    let plain = |c: &Option<scope_profiler_analysis::IdColumn>| match c {
        Some(scope_profiler_analysis::IdColumn::Plain(a)) => Some(unsafe { view_i64(a.values(), container) }),
        _ => None,
    };
    d.set_item("call_ids", plain(&r.call_ids))?;
    d.set_item("parent_ids", plain(&r.parent_ids))?;
    d.set_item(
        "ids_packed",
        r.call_ids.as_ref().is_some_and(|c| c.is_packed()) || r.parent_ids.as_ref().is_some_and(|c| c.is_packed()),
    )?;
    d.set_item("thread_ids", opt(&r.thread_ids))?;
    d.set_item("task_ids", opt(&r.task_ids))?;
    d.set_item("await_ns", opt(&r.await_ns))?;
    d.set_item("source_file", r.source_file.as_deref())?;
    d.set_item("source_line", r.source_line)?;
    d.set_item("source_text", r.source_text.as_deref())?;
    d.set_item("tags", PyList::new(py, &r.tags)?)?;
    d.set_item("event_metadata", r.event_metadata.as_deref())?;
    d.set_item("exclusive_total_ns", r.exclusive_total_ns)?;
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
    // A rank's rows back to back, ranks ascending (stable: keeps the given row order).
    regions.sort_by_key(|r| r.rank);
    let mut md = Vec::new();
    for (k, v) in metadata.iter() {
        md.push((k.extract::<String>()?, meta_from_py(&v)?));
    }
    let max_rank = regions.iter().map(|r| r.rank + 1).max().unwrap_or(0);
    Ok(Run {
        region_names,
        regions,
        threads: threads.into_iter().map(thread_from_tuple).collect(),
        tasks: tasks.into_iter().map(task_from_tuple).collect(),
        metadata: md,
        num_ranks: num_ranks.unwrap_or(max_rank).max(max_rank),
    })
}
