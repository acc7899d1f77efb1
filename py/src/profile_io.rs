//! `scope_profiler.profile_io`: which format a profile path is in (`formats::profile_format`)
//! and the reader that follows from it (`load`, `read_profile`).
use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use scope_profiler_analysis::py_repr;
use scope_profiler_formats::profile_format::ProfileFormat;

use crate::results::ProfilingResults;

/// `"json"` for `.json`/`.json.gz` names, `"html"` for `.html`/`.htm`, else `"hdf5"`.
#[pyfunction]
pub fn profile_format(path: PathBuf) -> &'static str {
    ProfileFormat::by_name(&path).name()
}

/// The format of the file's contents (`"hdf5"`, `"json"`, `"html"`) by its first bytes
/// (HDF5 signature, gzip magic, `{`, `<`), else by its name. Raises `FileNotFoundError`
/// for a missing file, `OSError` when it cannot be read.
#[pyfunction]
pub fn sniff_profile_format(path: PathBuf) -> PyResult<&'static str> {
    ProfileFormat::sniff(&path).map(ProfileFormat::name).map_err(|e| match e.kind() {
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
fn load(py: Python<'_>, path: &Bound<'_, PyAny>, verbose: bool) -> PyResult<ProfilingResults> {
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
        "json" => crate::json_export::read_json(py, file_path, verbose),
        _ => crate::h5reader::read_h5(py, file_path, verbose),
    }
}

/// `read_profile(file_path, verbose=False)`: read a profile as JSON (`.json`, `.json.gz`)
/// or HDF5 (anything else), whichever its name says (`load` goes by contents). Raises as
/// the reader.
#[pyfunction]
#[pyo3(signature = (file_path, verbose=false))]
fn read_profile(py: Python<'_>, file_path: PathBuf, verbose: bool) -> PyResult<ProfilingResults> {
    match ProfileFormat::by_name(&file_path) {
        ProfileFormat::Json => crate::json_export::read_json(py, file_path, verbose),
        _ => crate::h5reader::read_h5(py, file_path, verbose),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(read_profile, m)?)?;
    m.add_function(wrap_pyfunction!(profile_format, m)?)?;
    m.add_function(wrap_pyfunction!(sniff_profile_format, m)?)
}
