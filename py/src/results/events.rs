//! Arrow rows as Python dicts: the rows of the one events table (`analysis::events`), in the
//! key order of `ProfilingResults.events()` / `Region.events()`, and of the tables of
//! `analysis::record_batch` (lane summaries, comparison rows).
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
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
    let skip: &[&str] = if name_rank { &[] } else { &["name", "rank"] };
    batch_dicts(py, &batch, RowDicts { skip, keep_nulls: false, summary_rows: false })
}

/// How [`batch_dicts`] makes a batch's rows into dicts.
pub struct RowDicts<'a> {
    /// Columns left out.
    pub skip: &'a [&'a str],
    /// A null cell is `None` in its row's dict (else the key is left out).
    pub keep_nulls: bool,
    /// Rows are `SummaryRow` dicts (whose repr rounds), else plain dicts.
    pub summary_rows: bool,
}

/// `Arc<RecordBatch>` errors of `analysis::record_batch` as `ValueError`.
pub fn batch_of(batch: Result<RecordBatch, arrow_schema::ArrowError>) -> PyResult<RecordBatch> {
    batch.map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The rows of `batch` as dicts, keys in column order. Cells: int64, float64, bool, str,
/// lists of str (a list); a `metadata` str column holds JSON, kept only as a non-empty dict.
pub fn batch_dicts<'py>(py: Python<'py>, batch: &RecordBatch, how: RowDicts<'_>) -> PyResult<Bound<'py, PyList>> {
    let json_loads = py.import("json")?.getattr("loads")?;
    let schema = batch.schema();
    let keys: Vec<(usize, Bound<'py, PyString>)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !how.skip.contains(&f.name().as_str()))
        .map(|(i, f)| (i, PyString::intern(py, f.name())))
        .collect();
    let out = PyList::empty(py);
    for row in 0..batch.num_rows() {
        let d = if how.summary_rows { crate::results::summary_rows::row_dict(py)? } else { PyDict::new(py) };
        for (i, key) in &keys {
            let col = batch.column(*i);
            if col.is_null(row) {
                if how.keep_nulls {
                    d.set_item(key, py.None())?;
                }
                continue;
            }
            if key.to_str()? == "metadata" {
                let value = json_loads.call1((col.as_string::<i32>().value(row),))?;
                if value.cast::<PyDict>().is_ok_and(|m| !m.is_empty()) {
                    d.set_item(key, value)?;
                }
                continue;
            }
            d.set_item(key, cell(py, col, row)?)?;
        }
        out.append(d)?;
    }
    Ok(out)
}

/// Cell `row` of `col` (not null) as a Python value.
fn cell<'py>(py: Python<'py>, col: &ArrayRef, row: usize) -> PyResult<Bound<'py, PyAny>> {
    Ok(match col.data_type() {
        DataType::Int64 => col.as_primitive::<Int64Type>().value(row).into_pyobject(py)?.into_any(),
        DataType::Float64 => col.as_primitive::<Float64Type>().value(row).into_pyobject(py)?.into_any(),
        DataType::Boolean => col.as_boolean().value(row).into_pyobject(py)?.to_owned().into_any(),
        DataType::Utf8 => PyString::new(py, col.as_string::<i32>().value(row)).into_any(),
        DataType::List(_) => {
            let items = col.as_list::<i32>().value(row);
            PyList::new(py, items.as_string::<i32>().iter().map(|s| s.unwrap_or_default()))?.into_any()
        }
        other => return Err(PyValueError::new_err(format!("a table column of type {other}"))),
    })
}
