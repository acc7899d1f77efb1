//! The rows `thread_summary()` and `task_summary()` return: a `dict` per row (in a `list`,
//! whose repr is its rows'), whose values are exact, and whose repr rounds its floats to
//! three significant digits
//! ([`scope_profiler_analysis::figures::float_repr`]), so printing a summary in a REPL or a
//! notebook shows `0.000759`, not `0.0007586649999999995`.
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyTuple};
use scope_profiler_analysis::figures::float_repr;

/// A summary row: a `dict` whose repr rounds its floats.
#[pyclass(extends = PyDict, module = "scope_profiler._native")]
pub struct SummaryRow;

#[pymethods]
impl SummaryRow {
    /// `SummaryRow(...)` takes what `dict(...)` takes (the dict fills itself).
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        SummaryRow
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        rounded_repr(slf.as_any())
    }
}

/// Python's repr of `v` with every float in it (in dicts, lists and tuples) written by
/// [`float_repr`].
pub fn rounded_repr(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(float_repr(f.value()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut parts = Vec::with_capacity(d.len());
        for (k, x) in d.iter() {
            parts.push(format!("{}: {}", k.repr()?, rounded_repr(&x)?));
        }
        return Ok(format!("{{{}}}", parts.join(", ")));
    }
    if let Ok(l) = v.cast::<PyList>() {
        let parts: Vec<String> = l.iter().map(|x| rounded_repr(&x)).collect::<PyResult<_>>()?;
        return Ok(format!("[{}]", parts.join(", ")));
    }
    Ok(v.repr()?.to_string())
}

/// An empty [`SummaryRow`] dict.
pub fn row_dict(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let row = Bound::new(py, SummaryRow)?;
    Ok(row.into_any().cast_into::<PyDict>()?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SummaryRow>()?;
    Ok(())
}
