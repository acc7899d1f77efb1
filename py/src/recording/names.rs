//! Names of regions, threads and tasks as Python gives them: a region name must be a
//! `str` a profile file can hold unchanged; a thread or task name with NUL is recorded
//! escaped.
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyString;

/// `check_region_name(name)` for Python: [`region_name_text`] without keeping the text.
#[pyfunction]
#[pyo3(name = "check_region_name")]
pub(super) fn check_region_name_py(name: &Bound<'_, PyAny>) -> PyResult<()> {
    region_name_text(region_name_str(name)?).map(drop)
}

/// A region name given by Python as the `str` it must be: `TypeError` naming the type and
/// value otherwise (not just "'int' object is not an instance of 'str'", which does not say
/// which argument).
pub(crate) fn region_name_str<'a, 'py>(name: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    name.cast::<PyString>().map_err(|_| {
        let kind = name.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        let shown = name.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        let hint = if name.is_instance_of::<pyo3::types::PyBytes>() { "; decode it first" } else { "" };
        pyo3::exceptions::PyTypeError::new_err(format!("region name must be a str, not {kind} ({shown}){hint}"))
    })
}

/// The text of a region name given by Python, refused ([`check_region_name`]) when a
/// profile file cannot hold it unchanged. A name that is not valid Unicode text - a lone
/// surrogate, as `os.fsdecode` gives for undecodable bytes - has no UTF-8 form:
/// `ValueError` naming the region (its `repr`), the character and its position, caused by
/// the `UnicodeEncodeError` (which names neither the region nor what to do).
pub(crate) fn region_name_text<'a>(name: &'a Bound<'_, PyString>) -> PyResult<std::borrow::Cow<'a, str>> {
    let text = name.to_cow().map_err(|e| {
        let py = name.py();
        let value = e.value(py);
        let at = value.getattr("start").and_then(|s| s.extract::<usize>()).ok();
        let what = at
            .and_then(|i| name.get_item(i).ok())
            .and_then(|c| c.repr().ok())
            .map(|c| format!("the lone surrogate {c} at position {}", at.unwrap_or(0)))
            .unwrap_or_else(|| "a lone surrogate".to_string());
        let shown = name.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        let err = pyo3::exceptions::PyValueError::new_err(format!(
            "region name {shown} contains {what}, which is not valid Unicode text: a profile \
             file (UTF-8) cannot hold it; choose a name without it (decode the bytes it comes \
             from with errors='replace', or name the region yourself)"
        ));
        err.set_cause(py, Some(e));
        err
    })?;
    check_region_name(&text)?;
    Ok(text)
}

/// Refuse a region name the profile file cannot hold unchanged: HDF5 strings end at NUL,
/// so a name with `\0` would come back altered. `ValueError` naming
/// the name and why.
pub(crate) fn check_region_name(name: &str) -> PyResult<()> {
    if name.contains('\0') {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "region name {} contains a NUL character (\\x00), which a profile file cannot hold \
             (HDF5 strings end at NUL); choose a name without it",
            scope_profiler_analysis::py_repr(name)
        )));
    }
    Ok(())
}

/// A thread or task name as recorded. The name comes from the program (`threading`,
/// `asyncio`, greenlet), so it is not refused; a NUL, which the profile file cannot hold,
/// is recorded as the four visible characters `\x00` (which round-trip), with one
/// `RuntimeWarning` per recorder (`warned`).
pub(crate) fn recorded_name(py: Python<'_>, what: &str, name: String, warned: &AtomicBool) -> PyResult<String> {
    if !name.contains('\0') {
        return Ok(name);
    }
    let escaped = name.replace('\0', "\\x00");
    if !warned.swap(true, Ordering::Relaxed) {
        let message = format!(
            "{what} name {} contains a NUL character, which a profile file cannot hold; it is recorded \
             as {} (further such names are escaped without a warning)",
            scope_profiler_analysis::py_repr(&name),
            scope_profiler_analysis::py_repr(&escaped)
        );
        let message = std::ffi::CString::new(message).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, 1)?;
    }
    Ok(escaped)
}
