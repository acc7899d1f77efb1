//! Backs `scope_profiler._manager_api` and the manager: region handles and factories
//! (`RegionHandle`, `RegionFactory`: each `with` is a recorded call), which functions
//! `instrument()` decorates ([`scope_profiler_recorder::instrument`]), when `pause()` is
//! refused and which timesteps `sample_every()` records ([`scope_profiler_session::pausing`]).
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple};

use crate::errors::raised_while_handling;

/// `None` for `None`, else `tuple(value)` (its errors: `TypeError` for a non-iterable).
fn tuple_of(value: Option<Bound<'_, PyAny>>) -> PyResult<Option<Py<PyTuple>>> {
    match value {
        Some(v) if !v.is_none() => {
            let tuple = v.py().get_type::<PyTuple>().call1((v,))?;
            Ok(Some(tuple.cast_into::<PyTuple>()?.unbind()))
        }
        _ => Ok(None),
    }
}

/// `repr()` of an optional tuple (`None` when absent).
fn repr_of(py: Python<'_>, value: &Option<Py<PyTuple>>) -> PyResult<String> {
    Ok(match value {
        Some(t) => t.bind(py).repr()?.to_string(),
        None => "None".to_string(),
    })
}

/// Numbers the handles' context variables (their names only).
static HANDLES: AtomicU64 = AtomicU64::new(0);

/// A region definition that survives `setup()` (`ProfileManager.define_region`).
///
/// `with handle:` enters the region of that name in the manager's *current* run (looked up
/// at entry: `manager.region(name, functions=..., tags=...)`, so a handle made before
/// `setup()` records once profiling is set up) and exits the same region object even if a
/// `setup(replace=True)` came in between. Usable from any thread or task: the entered
/// regions are kept per context (a `contextvars.ContextVar` per handle). `__exit__` raises
/// `RuntimeError` when this context entered nothing.
#[pyclass(frozen, subclass, module = "scope_profiler._manager_api")]
pub struct RegionHandle {
    manager: Py<PyAny>,
    /// The region's name.
    #[pyo3(get)]
    name: Py<PyAny>,
    functions: Option<Py<PyTuple>>,
    tags: Option<Py<PyTuple>>,
    /// The regions this handle entered and has not exited, per context: a tuple, innermost last.
    stack: Py<PyAny>,
}

impl RegionHandle {
    fn create(
        py: Python<'_>,
        manager: Py<PyAny>,
        name: Py<PyAny>,
        functions: Option<Py<PyTuple>>,
        tags: Option<Py<PyTuple>>,
    ) -> PyResult<Self> {
        let var_name = format!("scope_profiler_region_{}", HANDLES.fetch_add(1, Ordering::Relaxed));
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "default"), PyTuple::empty(py))?;
        let stack = py.import("contextvars")?.getattr("ContextVar")?.call((var_name,), Some(&kwargs))?;
        Ok(RegionHandle { manager, name, functions, tags, stack: stack.unbind() })
    }

    fn entered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        Ok(self.stack.bind(py).call_method0(intern!(py, "get"))?.cast_into::<PyTuple>()?)
    }
}

#[pymethods]
impl RegionHandle {
    /// A handle of region `name` of `manager` (the `ProfileManager` class or an instance);
    /// `functions` and `tags` are kept as tuples (`TypeError` when not iterable).
    #[new]
    #[pyo3(signature = (manager, name, functions=None, tags=None))]
    fn new(
        py: Python<'_>,
        manager: Py<PyAny>,
        name: Py<PyAny>,
        functions: Option<Bound<'_, PyAny>>,
        tags: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        RegionHandle::create(py, manager, name, tuple_of(functions)?, tuple_of(tags)?)
    }

    /// Enter the region (as its `__enter__`); returns what that returns.
    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        // only the arguments given: `region(name)` alone is the lookup's native path
        let kwargs = PyDict::new(py);
        if let Some(functions) = &self.functions {
            kwargs.set_item(intern!(py, "functions"), functions)?;
        }
        if let Some(tags) = &self.tags {
            kwargs.set_item(intern!(py, "tags"), tags)?;
        }
        let kwargs = Some(&kwargs).filter(|k| !k.is_empty());
        let region = self.manager.bind(py).call_method(intern!(py, "region"), (self.name.bind(py),), kwargs)?;
        let entered = region.call_method0(intern!(py, "__enter__"))?;
        let stack: Vec<Bound<'_, PyAny>> = self.entered(py)?.iter().chain([region]).collect();
        let stack = PyTuple::new(py, stack)?;
        self.stack.bind(py).call_method1(intern!(py, "set"), (stack,))?;
        Ok(entered.unbind())
    }

    /// Exit the region this context entered last (its `__exit__`'s value). `RuntimeError`
    /// ("region handle 'name' exited without being entered") when there is none.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Bound<'_, PyAny>,
        exc_value: Bound<'_, PyAny>,
        traceback: Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let stack = self.entered(py)?;
        let Some(last) = stack.len().checked_sub(1) else {
            let name = self.name.bind(py).repr()?;
            return Err(PyRuntimeError::new_err(format!("region handle {name} exited without being entered")));
        };
        self.stack.bind(py).call_method1(intern!(py, "set"), (stack.get_slice(0, last),))?;
        Ok(stack.get_item(last)?.call_method1(intern!(py, "__exit__"), (exc_type, exc_value, traceback))?.unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("RegionHandle({}, tags={})", self.name.bind(py).repr()?, repr_of(py, &self.tags)?))
    }
}

/// A reusable region definition (`ProfileManager.region_factory`): calling it returns a
/// context manager for one call of the region.
///
/// `factory()` is a new `RegionHandle`; `factory(**metadata)` runs the call inside
/// `manager.metadata(**metadata)` (the block entered first, the region inside it), so the
/// call carries those values.
#[pyclass(frozen, subclass, module = "scope_profiler._manager_api")]
pub struct RegionFactory {
    manager: Py<PyAny>,
    /// The region's name.
    #[pyo3(get)]
    name: Py<PyAny>,
    tags: Option<Py<PyTuple>>,
}

#[pymethods]
impl RegionFactory {
    /// A factory of region `name` of `manager`; `tags` kept as a tuple (`TypeError` when
    /// not iterable).
    #[new]
    #[pyo3(signature = (manager, name, tags=None))]
    fn new(manager: Py<PyAny>, name: Py<PyAny>, tags: Option<Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(RegionFactory { manager, name, tags: tuple_of(tags)? })
    }

    /// One call of the region: a `RegionHandle`, or with `metadata` a `_FactoryCall` (the
    /// `manager.metadata(**metadata)` block, made first, and the handle inside it).
    #[pyo3(signature = (**metadata))]
    fn __call__(&self, py: Python<'_>, metadata: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
        let scope = match metadata.filter(|m| !m.is_empty()) {
            Some(values) => Some(self.manager.bind(py).call_method(intern!(py, "metadata"), (), Some(values))?),
            None => None,
        };
        let tags = self.tags.as_ref().map(|t| t.clone_ref(py));
        let handle = RegionHandle::create(py, self.manager.clone_ref(py), self.name.clone_ref(py), None, tags)?;
        let handle = Bound::new(py, handle)?.into_any();
        Ok(match scope {
            Some(scope) => {
                Bound::new(py, FactoryCall { scope: scope.unbind(), handle: handle.unbind() })?.into_any().unbind()
            }
            None => handle.unbind(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("RegionFactory({}, tags={})", self.name.bind(py).repr()?, repr_of(py, &self.tags)?))
    }
}

/// `factory(**metadata)`: the metadata block, and the region inside it.
#[pyclass(frozen, name = "_FactoryCall", module = "scope_profiler._manager_api")]
pub struct FactoryCall {
    scope: Py<PyAny>,
    handle: Py<PyAny>,
}

#[pymethods]
impl FactoryCall {
    /// `handle` entered inside `scope` (both context managers).
    #[new]
    fn new(scope: Py<PyAny>, handle: Py<PyAny>) -> Self {
        FactoryCall { scope, handle }
    }

    /// Enter the block, then the region (the block is exited again, `(None, None, None)`,
    /// when entering the region raises); returns the region's `__enter__` value.
    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.scope.bind(py).call_method0(intern!(py, "__enter__"))?;
        match self.handle.bind(py).call_method0(intern!(py, "__enter__")) {
            Ok(entered) => Ok(entered.unbind()),
            Err(e) => {
                match self.scope.bind(py).call_method1(intern!(py, "__exit__"), (py.None(), py.None(), py.None())) {
                    Ok(_) => Err(e),
                    Err(later) => Err(raised_while_handling(py, later, e)),
                }
            }
        }
    }

    /// Exit the region (its value is returned), then the block, even when the region's
    /// exit raises (the block's error, if any, wins).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Bound<'_, PyAny>,
        exc_value: Bound<'_, PyAny>,
        traceback: Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let exited = self.handle.bind(py).call_method1(intern!(py, "__exit__"), (&exc_type, &exc_value, &traceback));
        match (exited, self.scope.bind(py).call_method1(intern!(py, "__exit__"), (exc_type, exc_value, traceback))) {
            (exited, Ok(_)) => exited.map(Bound::unbind),
            (Ok(_), Err(later)) => Err(later),
            (Err(e), Err(later)) => Err(raised_while_handling(py, later, e)),
        }
    }
}

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
    m.add_class::<RegionHandle>()?;
    m.add_class::<RegionFactory>()?;
    m.add_class::<FactoryCall>()?;
    m.add_function(wrap_pyfunction!(instrument_plan, m)?)?;
    m.add_function(wrap_pyfunction!(check_pause, m)?)?;
    m.add_function(wrap_pyfunction!(check_sampling, m)?)?;
    m.add_function(wrap_pyfunction!(sampled_step, m)?)?;
    Ok(())
}
