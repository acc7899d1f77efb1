//! Events as Python dicts: the rows of the one events table (`analysis::events`), in the
//! key order of `ProfilingResults.events()` / `Region.events()`.
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use scope_profiler_analysis::Run;

/// One dict per call of region rows `rows` of `run` (in this order), times in s minus
/// `origin`. `name_rank` adds the `name` and `rank` keys first; `metadata` (a dict) is added
/// only where a call's metadata is a non-empty dict.
pub fn event_dicts<'py>(
    py: Python<'py>,
    run: &Run,
    rows: &[usize],
    origin: f64,
    name_rank: bool,
) -> PyResult<Bound<'py, PyList>> {
    let batch = py
        .detach(|| scope_profiler_analysis::events_batch(run, rows, origin))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    batch_dicts(py, &batch, name_rank)
}

/// The rows of an events batch as dicts (null cells are left out of their row's dict).
fn batch_dicts<'py>(py: Python<'py>, batch: &RecordBatch, name_rank: bool) -> PyResult<Bound<'py, PyList>> {
    let json_loads = py.import("json")?.getattr("loads")?;
    let schema = batch.schema();
    let keys: Vec<(usize, Bound<'py, pyo3::types::PyString>)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| name_rank || (f.name() != "name" && f.name() != "rank"))
        .map(|(i, f)| (i, pyo3::types::PyString::intern(py, f.name())))
        .collect();
    let out = PyList::empty(py);
    for row in 0..batch.num_rows() {
        let d = PyDict::new(py);
        for (i, key) in &keys {
            let col = batch.column(*i);
            if col.is_null(row) {
                continue;
            }
            match col.data_type() {
                arrow_schema::DataType::Int64 => d.set_item(key, col.as_primitive::<Int64Type>().value(row))?,
                arrow_schema::DataType::Float64 => d.set_item(key, col.as_primitive::<Float64Type>().value(row))?,
                arrow_schema::DataType::Utf8 if key.to_str()? == "metadata" => {
                    let value = json_loads.call1((col.as_string::<i32>().value(row),))?;
                    if value.cast::<PyDict>().is_ok_and(|m| !m.is_empty()) {
                        d.set_item(key, value)?;
                    }
                }
                arrow_schema::DataType::Utf8 => d.set_item(key, col.as_string::<i32>().value(row))?,
                other => return Err(PyValueError::new_err(format!("events column of type {other}"))),
            }
        }
        out.append(d)?;
    }
    Ok(out)
}
