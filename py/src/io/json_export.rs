//! `scope_profiler.json_export`: `export_json`, `write_json`, `read_json` (spec-exports §5).
//! The document is written and read by `formats::json_profile`; this is argument glue.
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::json_profile::{self, JsonError};
use scope_profiler_formats::Selection;

use crate::errors::JSONProfileError;
use crate::io::export_call::{
    export_err, plan_err, requested_ranks, root_sets, run_name, selected_regions, target_path,
};
use crate::native_run::NativeRun;
use crate::results::profiling_results::ProfilingResults;

fn json_err(e: JsonError) -> PyErr {
    match e {
        JsonError::NotFound(_) => PyFileNotFoundError::new_err(e.to_string()),
        JsonError::Invalid(m) => JSONProfileError::new_err(m),
        JsonError::Io(m) => PyOSError::new_err(m),
    }
}

/// Write one result set to `path` (resolved already); returns the `pathlib.Path` written.
fn write_one<'py>(
    results: &Bound<'py, PyAny>,
    path: PathBuf,
    include: Option<&Bound<'py, PyAny>>,
    exclude: Option<&Bound<'py, PyAny>>,
    ranks: Option<&Bound<'py, PyAny>>,
    indent: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = results.py();
    let native = results.call_method0("_native_run")?;
    let run = Arc::clone(&native.cast::<NativeRun>()?.get().run);
    let ranks: Vec<u32> = match ranks.filter(|r| !r.is_none()) {
        None => (0..run.num_ranks).collect(),
        Some(r) => requested_ranks(r)?.into_iter().filter_map(|r| u32::try_from(r).ok()).collect(),
    };
    let mut sel = Selection::new(ranks, "");
    if include.is_some_and(|i| !i.is_none()) || exclude.is_some_and(|e| !e.is_none()) {
        let selected = selected_regions(results, include, exclude)?;
        let names = selected.iter().map(|r| r.getattr("name")?.extract()).collect::<PyResult<Vec<String>>>()?;
        sel = sel.with_regions(names);
    }
    let pathlib_path = py.import("pathlib")?.getattr("Path")?;
    py.detach(|| json_profile::write_json(&run, &sel, indent, &path)).map_err(export_err)?;
    pathlib_path.call1((path,))
}

/// Write one run to `filepath` as a JSON profile and return the `pathlib.Path` written
/// (exactly that name; a directory gets `<file stem>.json` inside).
///
/// `ranks`: an int or a list (default: every rank); `include`/`exclude`: region filters
/// as `get_regions` takes them (rows keep the run's region order); `indent`: as
/// `json.dumps`. A name ending in `.gz` is gzip-compressed (mtime 0, no file name).
/// Raises `OSError` when writing fails.
#[pyfunction]
#[pyo3(signature = (results, filepath, *, include=None, exclude=None, ranks=None, indent=None))]
pub fn write_json<'py>(
    results: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    ranks: Option<Bound<'py, PyAny>>,
    indent: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let given = target_path(&filepath)?;
    // a file name is used exactly (the reference's write_json); a directory gets the default name
    let path = if scope_profiler_formats::export_plan::names_directory(&given) {
        let runs = [run_name(&results)?];
        json_profile::json_paths(&given, &runs).map_err(plan_err)?.remove(0)
    } else {
        given
    };
    write_one(&results, path, include.as_ref(), exclude.as_ref(), ranks.as_ref(), indent)
}

/// Write one JSON profile per root run; returns the paths written (`list[pathlib.Path]`).
///
/// Naming like `export_speedscope`: the file name split at its first dot keeps the tail
/// (`profile.json.gz`), default suffix `.json`; with several runs the stem gets
/// `_<label slug>`; a directory gets `<file stem>.json` per run inside. Default ranks: every rank. Prints `Wrote <path>` when `verbose`.
/// Raises `TypeError` for anything but results, `ValueError` for an empty list,
/// `OSError` when writing fails.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true, indent=None))]
#[allow(clippy::too_many_arguments)]
pub fn export_json<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
    indent: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let py = profiling_data.py();
    let roots = root_sets(&profiling_data)?;
    let written = PyList::empty(py);
    if roots.is_empty() {
        return Ok(written);
    }
    let names = roots.iter().map(run_name).collect::<PyResult<Vec<(String, String)>>>()?;
    let targets = json_profile::json_paths(&target_path(&filepath)?, &names).map_err(plan_err)?;
    let print = py.import("builtins")?.getattr("print")?;
    for (run, target) in roots.iter().zip(targets) {
        let p = write_one(run, target, include.as_ref(), exclude.as_ref(), ranks.as_ref(), indent)?;
        if verbose {
            print.call1((format!("Wrote {}", p.str()?),))?;
        }
        written.append(p)?;
    }
    Ok(written)
}

/// Read a JSON profile (plain or gzip-compressed) into `ProfilingResults`.
///
/// Raises `FileNotFoundError` for a missing file, `JSONProfileError` (a `ValueError`) when
/// the file is not a scope-profiler JSON profile, has `format_version > 1` or is
/// malformed (the message names the file), `OSError` when it cannot be read.
#[pyfunction]
#[pyo3(signature = (file_path, verbose=false))]
pub fn read_json(py: Python<'_>, file_path: PathBuf, verbose: bool) -> PyResult<ProfilingResults> {
    let _ = verbose;
    let run = py.detach(|| json_profile::read_json(&file_path)).map_err(json_err)?;
    ProfilingResults::from_run(py, run, file_path.to_string_lossy().into_owned(), true)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_json, m)?)?;
    m.add_function(wrap_pyfunction!(write_json, m)?)?;
    m.add_function(wrap_pyfunction!(read_json, m)?)
}
