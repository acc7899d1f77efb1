//! Arrow tables of a run for data-frame libraries, exported through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`, via `pyo3-arrow`): `polars.DataFrame(t)`,
//! `pyarrow.table(t)` and `pandas` (through pyarrow) take them without copying.
//!
//! Tables are built in Rust from the run (`analysis::record_batch`: the lane tables, the
//! lane summaries of one rank; `analysis::events`: the per-call events of a list of region
//! rows with the lane columns kept), and the region summaries from their dict rows
//! ([`dict_rows_table`]).
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use pyo3::exceptions::{PyImportError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_arrow::PyTable;
use scope_profiler_analysis::{record_batch, Run, TaskSummaryRow, ThreadSummaryRow};

use crate::results::events::{batch_dicts, RowDicts};

/// `batch` (an `analysis::record_batch` table) as a table.
pub fn batch_table(batch: Result<RecordBatch, arrow_schema::ArrowError>) -> PyResult<PyTable> {
    let batch = crate::results::events::batch_of(batch)?;
    let schema = batch.schema();
    PyTable::try_new(vec![batch], schema)
}

/// `polars.DataFrame(table)` (`ImportError` without polars).
pub fn polars_frame<'py>(table: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let pl = table.py().import("polars");
    let pl = pl.map_err(|_| PyImportError::new_err("to_polars() requires polars (pip install polars)"))?;
    pl.call_method1("DataFrame", (table,))
}

/// `pyarrow.table(table).to_pandas()` (`ImportError` saying `why` without pyarrow).
pub fn pandas_frame<'py>(table: Bound<'py, PyAny>, why: &str) -> PyResult<Bound<'py, PyAny>> {
    let pa = table.py().import("pyarrow").map_err(|_| PyImportError::new_err(why.to_string()))?;
    pa.call_method1("table", (table,))?.call_method0("to_pandas")
}

/// `analysis::events::events_batch` of region rows `rows` (in this order) as a table.
pub fn events_table(py: Python<'_>, run: &Run, rows: &[usize], origin: f64) -> PyResult<PyTable> {
    let batch = py
        .detach(|| scope_profiler_analysis::events_batch_with(run, rows, origin, false))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    batch_table(Ok(batch))
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
                let list = PyList::new(py, (0..a.len()).map(|i| a.value(i)))?;
                np.call_method1("array", (list, "object"))?
            }
            _ => continue,
        };
        out.set_item(name, value)?;
    }
    Ok(out)
}

/// `thread_summary` rows as `SummaryRow` dicts (keys as the columns of its table).
pub fn thread_summary_dicts<'py>(py: Python<'py>, rows: &[ThreadSummaryRow]) -> PyResult<Bound<'py, PyList>> {
    summary_dicts(py, record_batch::thread_summary_table(rows))
}

/// `task_summary` rows as `SummaryRow` dicts (keys as the columns of its table).
pub fn task_summary_dicts<'py>(py: Python<'py>, rows: &[TaskSummaryRow]) -> PyResult<Bound<'py, PyList>> {
    summary_dicts(py, record_batch::task_summary_table(rows))
}

/// `loop_blocks` rows as dicts: `thread, task, start, duration, region, delayed_tasks`.
pub fn loop_block_dicts<'py>(
    py: Python<'py>,
    rows: &[scope_profiler_analysis::LoopBlock],
) -> PyResult<Bound<'py, PyList>> {
    let how = RowDicts { skip: &[], keep_nulls: true, summary_rows: false };
    batch_dicts(py, &crate::results::events::batch_of(record_batch::loop_blocks_table(rows))?, how)
}

fn summary_dicts<'py>(
    py: Python<'py>,
    batch: Result<RecordBatch, arrow_schema::ArrowError>,
) -> PyResult<Bound<'py, PyList>> {
    let how = RowDicts { skip: &[], keep_nulls: true, summary_rows: true };
    batch_dicts(py, &crate::results::events::batch_of(batch)?, how)
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
    batch_table(record_batch::of_columns(columns.iter().map(|(n, a)| (n.as_str(), Arc::clone(a))).collect()))
}
