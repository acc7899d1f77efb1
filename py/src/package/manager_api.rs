//! Backs `scope_profiler._manager_api` and the manager: which functions
//! `instrument()` decorates ([`scope_profiler_recorder::instrument`]), when `pause()` is
//! refused and which timesteps `sample_every()` records ([`scope_profiler_session::pausing`]).
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

/// A glob or an iterable of globs as strings; `TypeError` naming `what` otherwise.
fn patterns(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(vec![s.to_string()]);
    }
    let not_globs = || -> PyResult<PyErr> {
        Ok(PyTypeError::new_err(format!("{what} must be a glob or an iterable of globs, got {}", value.repr()?)))
    };
    let items: Vec<Bound<'_, PyAny>> = match value.try_iter().and_then(|it| it.collect::<PyResult<Vec<_>>>()) {
        Ok(items) => items,
        Err(e) if e.is_instance_of::<PyTypeError>(value.py()) => return Err(not_globs()?),
        Err(e) => return Err(e),
    };
    items
        .iter()
        .map(|p| match p.cast::<PyString>() {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(PyTypeError::new_err(format!("{what} patterns must be strings, got {}", p.repr()?))),
        })
        .collect()
}

/// `instrument_plan(names, include, exclude, prefix, module_name) -> [(name, region), ...]`:
/// the functions of `names` (a module's own, in its order) that `instrument()` decorates:
/// matching a glob of `include` and none of `exclude` (`fnmatch.fnmatchcase`; each a glob
/// or an iterable of globs, else `TypeError`), with their region names
/// `"{prefix}.{name}"`, or `"{module_name}.{name}"` without a (true) prefix.
#[pyfunction]
fn instrument_plan(
    names: Vec<String>,
    include: &Bound<'_, PyAny>,
    exclude: &Bound<'_, PyAny>,
    prefix: Option<&Bound<'_, PyAny>>,
    module_name: &Bound<'_, PyAny>,
) -> PyResult<Vec<(String, String)>> {
    let include = patterns(include, "include")?;
    let exclude = patterns(exclude, "exclude")?;
    let prefix = match prefix {
        Some(p) if p.is_truthy()? => Some(p.str()?.to_string()),
        _ => None,
    };
    let module = module_name.str()?.to_string();
    Ok(scope_profiler_recorder::instrument::instrumented(&names, &include, &exclude, prefix.as_deref(), &module))
}

/// `check_pause(open_names)`: `RuntimeError` ("cannot pause while profiling scopes are
/// active: 'a', 'b', 'c'...") when calls of regions other than a session's root region are
/// open; `open_names` the open calls' region names, outermost first.
#[pyfunction]
fn check_pause(py: Python<'_>, open_names: Vec<String>) -> PyResult<()> {
    let repr = |n: &str| PyString::new(py, n).repr().map(|r| r.to_string()).unwrap_or_else(|_| format!("'{n}'"));
    let root = scope_profiler_session::lifecycle::SESSION_ROOT_REGION;
    match scope_profiler_session::pausing::pause_refusal(&open_names, root, repr) {
        Some(message) => Err(PyRuntimeError::new_err(message)),
        None => Ok(()),
    }
}

fn plain_int(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>()
}

/// `check_sampling(every, start)`: `sample_every()`'s arguments: `ValueError` unless `every`
/// is a positive int and `start` an int (`bool` is neither).
#[pyfunction]
fn check_sampling(every: &Bound<'_, PyAny>, start: &Bound<'_, PyAny>) -> PyResult<()> {
    if !plain_int(every) || every.lt(1)? {
        return Err(PyValueError::new_err("every must be a positive integer"));
    }
    if !plain_int(start) {
        return Err(PyValueError::new_err("start must be an integer"));
    }
    Ok(())
}

/// `sampled_step(timestep, every, start) -> bool`: whether `sample_every(every, start)`
/// records `timestep` ([`scope_profiler_session::pausing::step_selected`]; Python's own
/// arithmetic for ints beyond 64 bits). `TypeError` for a `timestep` that is not an int.
#[pyfunction]
fn sampled_step(timestep: &Bound<'_, PyAny>, every: &Bound<'_, PyAny>, start: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !plain_int(timestep) {
        return Err(PyTypeError::new_err("timestep must be an integer"));
    }
    if let (Ok(t), Ok(e), Ok(s)) = (timestep.extract::<i64>(), every.extract::<i64>(), start.extract::<i64>()) {
        return Ok(scope_profiler_session::pausing::step_selected(t, e, s));
    }
    Ok(timestep.ge(start)? && timestep.sub(start)?.rem(every)?.eq(0)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(instrument_plan, m)?)?;
    m.add_function(wrap_pyfunction!(check_pause, m)?)?;
    m.add_function(wrap_pyfunction!(check_sampling, m)?)?;
    m.add_function(wrap_pyfunction!(sampled_step, m)?)?;
    Ok(())
}
