//! `scope_profiler.profile_io`: which format a profile path is in (`formats::profile_format`)
//! and the reader or writer that follows from it (`load`, `read_profile`,
//! `read_profile_summary`, `write_profile`).
use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_analysis::py_repr;
use scope_profiler_formats::Format;

use crate::results::profiling_results::ProfilingResults;

/// `"json"` for `.json`/`.json.gz` names, `"html"` for `.html`/`.htm`, else `"hdf5"`.
#[pyfunction]
pub fn profile_format(path: PathBuf) -> &'static str {
    Format::of_profile_path(&path).name()
}

/// The format of the file's contents (`"hdf5"`, `"json"`, `"html"`) by its first bytes
/// (HDF5 signature, gzip magic, `{`, `<`), else by its name. Raises `FileNotFoundError`
/// for a missing file, `OSError` when it cannot be read.
#[pyfunction]
pub fn sniff_profile_format(path: PathBuf) -> PyResult<&'static str> {
    Format::sniff_profile(&path).map(Format::name).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(format!("No profile at {:?}", path.display().to_string()))
        }
        _ => PyOSError::new_err(format!("could not read {}: {e}", path.display())),
    })
}

/// `load(path, verbose=False)`: read a profile whatever its format, chosen by the file's
/// contents (`sniff_profile_format`): `read_json` or `read_h5`. Raises `FileNotFoundError`
/// for a missing file and `ValueError` for an HTML report (write-only: it renders a run
/// rather than storing it); otherwise as the reader.
#[pyfunction]
#[pyo3(signature = (path, verbose=false))]
pub(crate) fn load(py: Python<'_>, path: &Bound<'_, PyAny>, verbose: bool) -> PyResult<ProfilingResults> {
    // the path as pathlib spells it (`a//b` -> `a/b`), in messages and in the results
    let file_path: PathBuf = py.import("pathlib")?.getattr("Path")?.call1((path,))?.extract()?;
    let shown = py_repr(&file_path.to_string_lossy());
    if !file_path.exists() {
        return Err(PyFileNotFoundError::new_err(format!("No profile at {shown}")));
    }
    match sniff_profile_format(file_path.clone())? {
        "html" => Err(PyValueError::new_err(format!(
            "{shown} is an HTML report, which is write-only: it renders a run rather than storing it. Read the \
             .h5 or .json profile it was made from."
        ))),
        "json" => crate::io::json_export::read_json(py, file_path, verbose),
        _ => crate::io::h5reader::read_h5(py, file_path, verbose),
    }
}

/// `read_profile(file_path, verbose=False)`: read a profile as JSON (`.json`, `.json.gz`)
/// or HDF5 (anything else), whichever its name says (`load` goes by contents). Raises as
/// the reader.
#[pyfunction]
#[pyo3(signature = (file_path, verbose=false))]
fn read_profile(py: Python<'_>, file_path: PathBuf, verbose: bool) -> PyResult<ProfilingResults> {
    match Format::of_profile_path(&file_path) {
        Format::Json => crate::io::json_export::read_json(py, file_path, verbose),
        _ => crate::io::h5reader::read_h5(py, file_path, verbose),
    }
}

/// `read_profile_summary(file_path, **kwargs)`: a JSON profile (`.json`, `.json.gz` name)
/// read whole (`read_json`; `kwargs` ignored), anything else `read_h5_summary(file_path,
/// **kwargs)`. Raises as the reader.
#[pyfunction]
#[pyo3(signature = (file_path, **kwargs))]
fn read_profile_summary<'py>(
    py: Python<'py>,
    file_path: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let path: PathBuf = file_path.extract()?;
    if Format::of_profile_path(&path) == Format::Json {
        return Ok(Bound::new(py, crate::io::json_export::read_json(py, path, false)?)?.into_any());
    }
    wrap_pyfunction!(crate::io::h5reader::read_h5_summary, py)?.call((file_path,), kwargs)
}

/// `write_profile(results, file_path, **kwargs) -> pathlib.Path`: write `results` in the
/// format `file_path`'s name asks for: `.json`/`.json.gz` a JSON profile (`kwargs` go to
/// `write_json`), `.html`/`.htm` the HTML report of every rank (`create_html_report`,
/// `kwargs` go to it), anything else HDF5 (`kwargs` ignored). Returns the path written;
/// raises as the writer.
#[pyfunction]
#[pyo3(signature = (results, file_path, **kwargs))]
fn write_profile<'py>(
    py: Python<'py>,
    results: &Bound<'py, PyAny>,
    file_path: &Bound<'py, PyAny>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let writer = match Format::of_profile_path(&file_path.extract::<PathBuf>()?) {
        Format::Json => wrap_pyfunction!(crate::io::json_export::write_json, py)?,
        Format::HtmlReport => wrap_pyfunction!(crate::io::exports::create_html_report, py)?,
        _ => {
            let path = py.import("pathlib")?.getattr("Path")?.call1((file_path,))?;
            results.call_method0("_native_run")?.call_method1("write_h5", (&path,))?;
            return Ok(path);
        }
    };
    writer.call((results, file_path), kwargs)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_profile_summary, m)?)?;
    m.add_function(wrap_pyfunction!(write_profile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(read_profile, m)?)?;
    m.add_function(wrap_pyfunction!(profile_format, m)?)?;
    m.add_function(wrap_pyfunction!(sniff_profile_format, m)?)
}
