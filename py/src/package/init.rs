//! Backs `scope_profiler/__init__.py`: the package's names loaded on first use and the
//! reference's names it cannot honour ([`scope_profiler_session::package_names`]); the
//! names `scope_profiler._settings` loads from `_options` on first use.
use pyo3::exceptions::{PyAttributeError, PyNotImplementedError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use scope_profiler_session::package_names;

/// `lazy_names() -> {name: (module, attribute)}`: the package names loaded from their
/// module (relative to the package) on first use; a new dict.
#[pyfunction]
fn lazy_names(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, module, attribute) in package_names::LAZY {
        d.set_item(name, (module, attribute))?;
    }
    Ok(d)
}

/// `unsupported_names() -> {name: reason}`: the public names of scope-profiler 0.7.5 this
/// package cannot honour, with the reason; a new dict.
#[pyfunction]
fn unsupported_names(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, reason) in package_names::UNSUPPORTED {
        d.set_item(name, reason)?;
    }
    Ok(d)
}

/// `package_attribute(name)`: the module `__getattr__` of `scope_profiler` for a name that
/// is not one of `lazy_names()` (`__init__.py` imports those): `__version__`, else
/// `NotImplementedError` saying why for a name of `unsupported_names()` and
/// `AttributeError` for any other.
#[pyfunction]
fn package_attribute<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    if name == "__version__" {
        return Ok(PyString::new(py, env!("CARGO_PKG_VERSION")).into_any());
    }
    if let Some(message) = package_names::unsupported_message(name) {
        return Err(PyNotImplementedError::new_err(message));
    }
    Err(PyAttributeError::new_err(format!("module 'scope_profiler' has no attribute '{name}'")))
}

/// `check_settings_attribute(name)`: for the module `__getattr__` of
/// `scope_profiler._settings`, `AttributeError` unless `name` is a name of `_options` it
/// answers (`ProfilingOptions`, the option groups, `load_profiling_config`).
#[pyfunction]
fn check_settings_attribute(name: &Bound<'_, PyString>) -> PyResult<()> {
    if package_names::SETTINGS_LAZY.contains(&name.to_str()?) {
        return Ok(());
    }
    Err(PyAttributeError::new_err(format!("module 'scope_profiler._settings' has no attribute {}", name.repr()?)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lazy_names, m)?)?;
    m.add_function(wrap_pyfunction!(unsupported_names, m)?)?;
    m.add_function(wrap_pyfunction!(package_attribute, m)?)?;
    m.add_function(wrap_pyfunction!(check_settings_attribute, m)?)?;
    Ok(())
}
