//! `scope_profiler.profile_io`: which format a profile path is in (`formats::profile_format`).
use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError};
use pyo3::prelude::*;
use scope_profiler_formats::profile_format::ProfileFormat;

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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(profile_format, m)?)?;
    m.add_function(wrap_pyfunction!(sniff_profile_format, m)?)
}
