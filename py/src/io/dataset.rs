//! The Rust side of `scope_profiler.dataset` (`formats::dataset`): finding run files,
//! preparing a dataset directory, converting files (GIL released, on threads), committing the
//! runs table, the empty tables' schemas. The Python module schedules the conversions (on
//! this machine or on a Dask cluster) and scans the tables with Polars.
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3_arrow::PyTable;
use scope_profiler_formats::dataset::{self, BuildOutcome, Converted, RunRow, Table};

/// A converted file as Python sees it: `(kind, path, payload)` with kind `"added"` (payload:
/// the runs-table row as JSON), `"present"` (the run id) or `"failed"` (the message).
type ConvertedTuple = (String, String, String);

fn to_tuple(c: Converted) -> PyResult<ConvertedTuple> {
    Ok(match c {
        Converted::Added(row) => {
            let json = serde_json::to_string(&row).map_err(|e| PyValueError::new_err(e.to_string()))?;
            ("added".into(), row.path, json)
        }
        Converted::Present { path, run } => ("present".into(), path.display().to_string(), run),
        Converted::Failed { path, message } => ("failed".into(), path.display().to_string(), message),
    })
}

fn from_tuple((kind, path, payload): ConvertedTuple) -> PyResult<Converted> {
    Ok(match kind.as_str() {
        "added" => Converted::Added(row_of(&payload)?),
        "present" => Converted::Present { path: path.into(), run: payload },
        "failed" => Converted::Failed { path: path.into(), message: payload },
        other => return Err(PyValueError::new_err(format!("unknown conversion outcome {other:?}"))),
    })
}

fn row_of(json: &str) -> PyResult<RunRow> {
    serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("not a runs-table row: {e}")))
}

/// `dataset_find(runs) -> (files, missing)`: the run files the paths name (directories
/// searched), and `(path, message)` for the paths that do not exist.
#[pyfunction]
fn dataset_find(runs: Vec<PathBuf>) -> (Vec<String>, Vec<(String, String)>) {
    let (files, missing) = dataset::find_runs(&runs);
    (
        files.iter().map(|f| f.display().to_string()).collect(),
        missing.into_iter().map(|(p, m)| (p.display().to_string(), m)).collect(),
    )
}

/// `dataset_prepare(out_dir, append) -> [(run id, row json)]`: make the directory ready for a
/// build (`formats::dataset::prepare`) and return the runs already in it. `ValueError` for a
/// directory that cannot take the build (an existing dataset without `append`, foreign
/// files), `OSError` when it cannot be read or cleaned.
#[pyfunction]
fn dataset_prepare(py: Python<'_>, out_dir: PathBuf, append: bool) -> PyResult<Vec<(String, String)>> {
    let rows = py.detach(|| dataset::prepare(&out_dir, append)).map_err(|e| {
        if e.0.starts_with("could not") {
            PyOSError::new_err(e.0)
        } else {
            PyValueError::new_err(e.0)
        }
    })?;
    rows.into_iter()
        .map(|r| {
            let json = serde_json::to_string(&r).map_err(|e| PyValueError::new_err(e.to_string()))?;
            Ok((r.run, json))
        })
        .collect()
}

/// `dataset_convert(paths, out_dir, present, jobs=1) -> [(kind, path, payload)]`: convert each
/// file into the dataset (runs in `present` are not written), `jobs` at a time, the GIL
/// released; one tuple per path, in order (see [`ConvertedTuple`]).
#[pyfunction]
#[pyo3(signature = (paths, out_dir, present, jobs=1))]
fn dataset_convert(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    out_dir: PathBuf,
    present: HashSet<String>,
    jobs: usize,
) -> PyResult<Vec<ConvertedTuple>> {
    let converted = py.detach(|| dataset::convert_files(&paths, &out_dir, &present, Some(jobs), &|_| ()));
    converted.into_iter().map(to_tuple).collect()
}

/// `dataset_commit(out_dir, existing, converted) -> (added, present, failed)`: write the runs
/// table: the rows `existing` (JSON, as `dataset_prepare` gave them) and the runs added by
/// `converted` (as `dataset_convert` gave them, in input order; a run added twice counts
/// once). Returns the ids added, `(path, run id)` of runs skipped as present, `(path,
/// message)` of files that failed. `OSError` when the table cannot be written.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn dataset_commit(
    py: Python<'_>,
    out_dir: PathBuf,
    existing: Vec<String>,
    converted: Vec<ConvertedTuple>,
) -> PyResult<(Vec<String>, Vec<(String, String)>, Vec<(String, String)>)> {
    let mut rows: Vec<RunRow> = existing.iter().map(|j| row_of(j)).collect::<PyResult<_>>()?;
    let converted: Vec<Converted> = converted.into_iter().map(from_tuple).collect::<PyResult<_>>()?;
    let out = BuildOutcome::collect(&rows, converted);
    rows.extend(out.added.iter().cloned());
    py.detach(|| dataset::commit(&out_dir, &rows)).map_err(|e| PyOSError::new_err(e.0))?;
    let shown = |v: Vec<(PathBuf, String)>| v.into_iter().map(|(p, s)| (p.display().to_string(), s)).collect();
    Ok((out.added.into_iter().map(|r| r.run).collect(), shown(out.present), shown(out.failed)))
}

/// `dataset_empty_table(name)`: the table `name` (`calls`, `threads`, `tasks`, `regions`)
/// without rows, `run` first: what a scan gives when no run has a partition in it.
#[pyfunction]
fn dataset_empty_table(name: &str) -> PyResult<PyTable> {
    let table = Table::from_name(name).ok_or_else(|| PyValueError::new_err(format!("no dataset table {name:?}")))?;
    let mut fields = vec![Arc::new(Field::new("run", DataType::Utf8, false))];
    fields.extend(table.schema().fields().iter().cloned());
    let schema = Arc::new(Schema::new(fields));
    PyTable::try_new(vec![RecordBatch::new_empty(schema.clone())], schema)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dataset_find, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_convert, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_commit, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_empty_table, m)?)?;
    Ok(())
}
