//! Backs `scope_profiler._manager_api` and the manager: region handles and factories
//! (`RegionHandle`, `RegionFactory`), which functions `instrument()` decorates
//! ([`scope_profiler_recorder::instrument`]), when `pause()` is refused
//! ([`scope_profiler_finalize::pausing`]).
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList, PyString, PyTuple};

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
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "functions"), &self.functions)?;
        kwargs.set_item(intern!(py, "tags"), &self.tags)?;
        let region = self.manager.bind(py).call_method(intern!(py, "region"), (self.name.bind(py),), Some(&kwargs))?;
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

/// `check_pause(open_names, root)`: `RuntimeError` ("cannot pause while profiling scopes are
/// active: 'a', 'b', 'c'...") when calls of regions other than `root` (the session's root
/// region) are open; `open_names` the open calls' region names, outermost first.
#[pyfunction]
pub(crate) fn check_pause(py: Python<'_>, open_names: Vec<String>, root: &str) -> PyResult<()> {
    let repr = |n: &str| PyString::new(py, n).repr().map(|r| r.to_string()).unwrap_or_else(|_| format!("'{n}'"));
    match scope_profiler_finalize::pausing::pause_refusal(&open_names, root, repr) {
        Some(message) => Err(PyRuntimeError::new_err(message)),
        None => Ok(()),
    }
}

/// `check_opt_in_tags(tags)`: `TypeError` ("opt-in tags must be non-empty strings, got
/// ...") for the first of `tags` that is not a non-empty `str`.
#[pyfunction]
fn check_opt_in_tags(tags: &Bound<'_, PyAny>) -> PyResult<()> {
    for tag in tags.try_iter()? {
        let tag = tag?;
        if !tag.cast::<PyString>().is_ok_and(|s| s.len().is_ok_and(|n| n > 0)) {
            return Err(PyTypeError::new_err(format!("opt-in tags must be non-empty strings, got {}", tag.repr()?)));
        }
    }
    Ok(())
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
/// records `timestep` ([`scope_profiler_finalize::pausing::step_selected`]; Python's own
/// arithmetic for ints beyond 64 bits). `TypeError` for a `timestep` that is not an int.
#[pyfunction]
fn sampled_step(timestep: &Bound<'_, PyAny>, every: &Bound<'_, PyAny>, start: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !plain_int(timestep) {
        return Err(PyTypeError::new_err("timestep must be an integer"));
    }
    if let (Ok(t), Ok(e), Ok(s)) = (timestep.extract::<i64>(), every.extract::<i64>(), start.extract::<i64>()) {
        return Ok(scope_profiler_finalize::pausing::step_selected(t, e, s));
    }
    Ok(timestep.ge(start)? && timestep.sub(start)?.rem(every)?.eq(0)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RegionHandle>()?;
    m.add_class::<RegionFactory>()?;
    m.add_class::<FactoryCall>()?;
    m.add_function(wrap_pyfunction!(instrument_plan, m)?)?;
    m.add_function(wrap_pyfunction!(check_pause, m)?)?;
    m.add_function(wrap_pyfunction!(check_opt_in_tags, m)?)?;
    m.add_function(wrap_pyfunction!(check_sampling, m)?)?;
    m.add_function(wrap_pyfunction!(sampled_step, m)?)?;
    m.add_class::<SampleEvery>()?;
    m.add_class::<SampledStep>()?;
    m.add_class::<StepScope>()?;
    m.add_function(wrap_pyfunction!(manager_instrument, m)?)?;
    m.add_function(wrap_pyfunction!(manager_run, m)?)?;
    m.add_function(wrap_pyfunction!(manager_run_script, m)?)?;
    m.add_function(wrap_pyfunction!(manager_profile_script, m)?)?;
    m.add_function(wrap_pyfunction!(manager_profile_command, m)?)?;
    m.add_function(wrap_pyfunction!(manager_setup_from_env, m)?)?;
    Ok(())
}

/// `with cm: body()` as Python runs it: `cm.__enter__()` (its value given to `body`), then
/// `cm.__exit__` with the body's exception, if any (an exception of `__exit__` itself
/// keeps the body's as its `__context__`). None when `__exit__` suppressed the exception.
pub(crate) fn within<'py, T>(
    cm: &Bound<'py, PyAny>,
    body: impl FnOnce(Bound<'py, PyAny>) -> PyResult<T>,
) -> PyResult<Option<T>> {
    let py = cm.py();
    let entered = cm.call_method0(intern!(py, "__enter__"))?;
    match body(entered) {
        Ok(value) => {
            cm.call_method1(intern!(py, "__exit__"), (py.None(), py.None(), py.None()))?;
            Ok(Some(value))
        }
        Err(e) => {
            let args = (e.get_type(py), e.value(py).clone(), e.traceback(py));
            match cm.call_method1(intern!(py, "__exit__"), args) {
                Ok(suppressed) if suppressed.is_truthy()? => Ok(None),
                Ok(_) => Err(e),
                Err(later) => Err(raised_while_handling(py, later, e)),
            }
        }
    }
}

/// `manager.<name>(*args, **kwargs)` with keywords from `(name, value)` pairs.
fn call_with<'py>(
    target: &Bound<'py, PyAny>,
    name: &str,
    args: impl pyo3::call::PyCallArgs<'py>,
    kwargs: &[(&str, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(target.py());
    for (k, v) in kwargs {
        d.set_item(k, v)?;
    }
    target.call_method(name, args, Some(&d))
}

/// `instrument(manager, module, include, exclude, prefix, tags) -> dict`: decorate
/// `module`'s own module-level functions with `manager.profile` in place (see
/// `ProfileManager.instrument`): those of `instrument_plan` among the module's plain
/// functions (`inspect.isfunction`, not already a `profile` wrapper), as regions
/// `"{prefix}.{name}"` (else `"{module.__name__}.{name}"`) with `tags`. Returns
/// `{name: wrapper}`; `TypeError` for globs that are not strings.
#[pyfunction]
fn manager_instrument<'py>(
    py: Python<'py>,
    manager: &Bound<'py, PyAny>,
    module: &Bound<'py, PyAny>,
    include: &Bound<'py, PyAny>,
    exclude: &Bound<'py, PyAny>,
    prefix: Option<&Bound<'py, PyAny>>,
    tags: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let isfunction = py.import("inspect")?.getattr("isfunction")?;
    let functions = PyDict::new(py);
    let items = py.import("builtins")?.getattr("vars")?.call1((module,))?.call_method0("items")?;
    for item in py.get_type::<PyList>().call1((items,))?.try_iter()? {
        let (name, function): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
        // not a function, or @profile's wrapper of a coroutine/generator function
        if isfunction.call1((&function,))?.is_truthy()? && !function.hasattr("_scope_profiler_wrapper")? {
            functions.set_item(name, function)?;
        }
    }
    let names: Vec<String> = functions.keys().extract()?;
    let module_name = match module.getattr("__name__") {
        Ok(name) => name,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => PyString::new(py, "module").into_any(),
        Err(e) => return Err(e),
    };
    let changed = PyDict::new(py);
    for (name, region) in instrument_plan(names, include, exclude, prefix, &module_name)? {
        let decorator = call_with(manager, "profile", (region,), &[("tags", tags.clone())])?;
        let wrapped = decorator.call1((functions.get_item(&name)?,))?;
        module.setattr(name.as_str(), &wrapped)?;
        changed.set_item(name, wrapped)?;
    }
    Ok(changed)
}

/// `manager_run(manager, func, args, output, session_kwargs)`: `func(*args)` inside
/// `manager.session(**session_kwargs)` (`verbose=False`, `return_results=True` unless
/// given; `output=` when not None); returns `func`'s value and sets the manager's
/// `_last_results` to the session's results. `func`'s exception propagates (after the
/// session ended).
#[pyfunction]
fn manager_run<'py>(
    manager: &Bound<'py, PyAny>,
    func: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    output: Option<Bound<'py, PyAny>>,
    session_kwargs: &Bound<'py, PyDict>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let options = session_kwargs.copy()?;
    if let Some(output) = output.filter(|o| !o.is_none()) {
        options.set_item("output", output)?;
    }
    options.call_method1("setdefault", ("verbose", false))?;
    options.call_method1("setdefault", ("return_results", true))?;
    let session = manager.call_method("session", (), Some(&options))?;
    let mut session_entered = None;
    let value = within(&session, |entered| {
        session_entered = Some(entered);
        func.call1(args)
    })?;
    if let Some(session) = session_entered {
        manager.setattr("_last_results", session.getattr("results")?)?;
    }
    Ok(value)
}

/// `os.fspath(value)`.
fn fspath<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    value.py().import("os")?.call_method1("fspath", (value,))
}

/// `manager_run_script(manager, script_path, script_args, region_name, recursive)`: run the
/// script at `script_path` as `__main__` (`runpy.run_path`) in the manager's current run,
/// `sys.argv` = the script (absolute) and `script_args`, its directory first on `sys.path`
/// (when not there already); both restored afterwards. With `recursive`, inside
/// `manager.region(region_name or <the script's file name>)`. `FileNotFoundError` ("no
/// script at '...'") when it is not a file; the script's exceptions propagate.
#[pyfunction]
fn manager_run_script<'py>(
    py: Python<'py>,
    manager: &Bound<'py, PyAny>,
    script_path: &Bound<'py, PyAny>,
    script_args: Option<&Bound<'py, PyAny>>,
    region_name: Option<&Bound<'py, PyAny>>,
    recursive: &Bound<'py, PyAny>,
) -> PyResult<()> {
    let os_path = py.import("os.path")?;
    let script_path = os_path.call_method1("abspath", (fspath(script_path)?,))?;
    if !os_path.call_method1("isfile", (&script_path,))?.is_truthy()? {
        let message = format!("no script at {}", script_path.repr()?);
        return Err(pyo3::exceptions::PyFileNotFoundError::new_err(message));
    }
    let sys = py.import("sys")?;
    let mut argv = vec![script_path.clone()];
    if let Some(args) = script_args.filter(|a| a.is_truthy().unwrap_or(true)) {
        for arg in args.try_iter()? {
            argv.push(fspath(&arg?)?);
        }
    }
    let saved_argv = sys.getattr("argv")?;
    sys.setattr("argv", PyList::new(py, argv)?)?;
    let script_dir = os_path.call_method1("dirname", (&script_path,))?;
    let path = sys.getattr("path")?;
    let added = !path.contains(&script_dir)?;
    if added {
        path.call_method1("insert", (0, &script_dir))?;
    }
    let run = || -> PyResult<()> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("run_name", "__main__")?;
        py.import("runpy")?.call_method("run_path", (&script_path,), Some(&kwargs))?;
        Ok(())
    };
    let outcome = if recursive.is_truthy()? {
        let name = match region_name.filter(|n| n.is_truthy().unwrap_or(true)) {
            Some(name) => name.clone(),
            None => os_path.call_method1("basename", (&script_path,))?,
        };
        manager.call_method1("region", (name,)).and_then(|region| within(&region, |_| run())).map(drop)
    } else {
        run()
    };
    let restored = sys.setattr("argv", saved_argv).and_then(|_| {
        let path = sys.getattr("path")?;
        if added && path.contains(&script_dir)? {
            path.call_method1("remove", (&script_dir,))?;
        }
        Ok(())
    });
    match (outcome, restored) {
        (Ok(()), restored) => restored,
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(later)) => Err(raised_while_handling(py, later, e)),
    }
}

/// `manager_profile_script(manager, script_path, script_args, output, setup_kwargs)`:
/// `manager.setup(**setup_kwargs)` (`output=` when not None), `manager_run_script` (traced
/// as the run's `recursive_profile` says), then `manager._finalize(close_open=True,
/// verbose=False, return_results=True)` even when the script raised (its exception,
/// `SystemExit` included, propagates after). Returns the `ProfilingResults`.
#[pyfunction]
fn manager_profile_script<'py>(
    py: Python<'py>,
    manager: &Bound<'py, PyAny>,
    script_path: &Bound<'py, PyAny>,
    script_args: Option<&Bound<'py, PyAny>>,
    output: Option<Bound<'py, PyAny>>,
    setup_kwargs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = setup_kwargs.copy()?;
    if let Some(output) = output.filter(|o| !o.is_none()) {
        options.set_item("output", output)?;
    }
    manager.call_method("setup", (), Some(&options))?;
    let recursive = manager.call_method0("get_config")?.getattr("recursive_profile")?.is_truthy()?;
    let recursive = pyo3::types::PyBool::new(py, recursive).to_owned().into_any();
    let ran = manager_run_script(py, manager, script_path, script_args, None, &recursive);
    let no = pyo3::types::PyBool::new(py, false).to_owned().into_any();
    let yes = pyo3::types::PyBool::new(py, true).to_owned().into_any();
    let kwargs = [("close_open", yes.clone()), ("verbose", no), ("return_results", yes)];
    let results = call_with(manager, "_finalize", (), &kwargs);
    match (ran, results) {
        (Ok(()), results) => results,
        (Err(e), Ok(_)) => Err(e),
        (Err(e), Err(later)) => Err(raised_while_handling(py, later, e)),
    }
}

/// `manager_profile_command(command, output, recursive, all, mpi_calls) ->
/// subprocess.CompletedProcess`: run `command` under `python -m
/// scope_profiler run -q -o OUTPUT ...` (`profile_command_argv`) in a child process and
/// wait for it; the result's `profile_results` is the profile read back (`load`) when it
/// exited 0 and wrote a file that is not HTML, else None. `ValueError` without a script,
/// `NotImplementedError` for `mpi_calls`.
#[pyfunction]
fn manager_profile_command<'py>(
    py: Python<'py>,
    command: &Bound<'py, PyAny>,
    output: Option<&Bound<'py, PyAny>>,
    recursive: &Bound<'py, PyAny>,
    all: &Bound<'py, PyAny>,
    mpi_calls: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut words = Vec::new();
    for word in command.try_iter()? {
        words.push(fspath(&word?)?.extract::<String>()?);
    }
    let output = match output.filter(|o| !o.is_none()) {
        Some(o) => Some(fspath(o)?.extract::<String>()?),
        None => None,
    };
    let executable: String = py.import("sys")?.getattr("executable")?.extract()?;
    let (argv, output_path) = crate::cli::profile_command_argv(
        words,
        &executable,
        output,
        recursive.is_truthy()?,
        all.is_truthy()?,
        mpi_calls.is_truthy()?,
    )?;
    let check = pyo3::types::PyBool::new(py, false).to_owned().into_any();
    let completed = call_with(py.import("subprocess")?.as_any(), "run", (argv,), &[("check", check)])?;
    completed.setattr("profile_results", py.None())?;
    if completed.getattr("returncode")?.eq(0)?
        && py.import("os.path")?.call_method1("exists", (&output_path,))?.is_truthy()?
    {
        let io = py.import("scope_profiler.profile_io")?;
        if !io.call_method1("profile_format", (&output_path,))?.eq(io.getattr("FORMAT_HTML")?)? {
            completed.setattr("profile_results", io.call_method1("load", (&output_path,))?)?;
        }
    }
    Ok(completed)
}

/// `ProfileManager.sample_every(every, start)`: a context manager yielding
/// `profile_step(timestep)` (a [`SampledStep`]); on entry `ValueError` unless `every` is a
/// positive int and `start` an int; on exit the manager's pause state is what it was on
/// entry (`pause()` or `resume()`).
#[pyclass(frozen, module = "scope_profiler._manager_api")]
pub struct SampleEvery {
    manager: Py<PyAny>,
    every: Py<PyAny>,
    start: Py<PyAny>,
    was_paused: std::sync::OnceLock<bool>,
}

#[pymethods]
impl SampleEvery {
    /// Sampling of `manager`'s run: timestep `start` and every `every`-th after it.
    #[new]
    fn new(manager: Py<PyAny>, every: Py<PyAny>, start: Py<PyAny>) -> Self {
        SampleEvery { manager, every, start, was_paused: std::sync::OnceLock::new() }
    }

    /// Check the arguments, note the pause state; returns the `profile_step` callable.
    fn __enter__(&self, py: Python<'_>) -> PyResult<SampledStep> {
        check_sampling(self.every.bind(py), self.start.bind(py))?;
        let paused = self.manager.bind(py).call_method0("get_config")?.getattr("paused")?.is_truthy()?;
        let _ = self.was_paused.set(paused);
        let (every, start) = (self.every.clone_ref(py), self.start.clone_ref(py));
        Ok(SampledStep { manager: self.manager.clone_ref(py), every, start })
    }

    /// Restore the pause state of entry; never suppresses an exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Bound<'_, PyAny>,
        _v: Bound<'_, PyAny>,
        _tb: Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let method = if self.was_paused.get().copied().unwrap_or(false) { "pause" } else { "resume" };
        self.manager.bind(py).call_method0(method)?;
        Ok(false)
    }
}

/// `profile_step(timestep)` of `sample_every`: a context manager that, on entry, resumes
/// recording for a sampled timestep and pauses it for the others, yielding whether the step
/// is recorded (`TypeError` for a timestep that is not an int; `pause()`'s `RuntimeError`
/// while a region is open).
#[pyclass(frozen, module = "scope_profiler._manager_api")]
pub struct SampledStep {
    manager: Py<PyAny>,
    every: Py<PyAny>,
    start: Py<PyAny>,
}

#[pymethods]
impl SampledStep {
    /// The step `timestep` (checked when entered).
    fn __call__(&self, py: Python<'_>, timestep: Py<PyAny>) -> StepScope {
        StepScope {
            manager: self.manager.clone_ref(py),
            every: self.every.clone_ref(py),
            start: self.start.clone_ref(py),
            timestep,
        }
    }
}

/// One step of `sample_every` (see [`SampledStep`]).
#[pyclass(frozen, module = "scope_profiler._manager_api")]
pub struct StepScope {
    manager: Py<PyAny>,
    every: Py<PyAny>,
    start: Py<PyAny>,
    timestep: Py<PyAny>,
}

#[pymethods]
impl StepScope {
    /// Resume (sampled) or pause (not sampled); returns whether the step is recorded.
    fn __enter__(&self, py: Python<'_>) -> PyResult<bool> {
        let selected = sampled_step(self.timestep.bind(py), self.every.bind(py), self.start.bind(py))?;
        self.manager.bind(py).call_method0(if selected { "resume" } else { "pause" })?;
        Ok(selected)
    }

    /// Nothing to undo; never suppresses an exception.
    fn __exit__(&self, _t: Bound<'_, PyAny>, _v: Bound<'_, PyAny>, _tb: Bound<'_, PyAny>) -> bool {
        false
    }
}

/// `manager_setup_from_env(manager, overrides)`: `manager.setup(**overrides)` with the
/// settings of the `SCOPE_PROFILER_*` variables (`setup_from_env_settings`) where
/// `overrides` has none. Returns the `ProfilingRun`.
#[pyfunction]
fn manager_setup_from_env<'py>(
    py: Python<'py>,
    manager: &Bound<'py, PyAny>,
    overrides: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    let options = overrides.copy()?;
    for (name, value) in crate::environment::setup_from_env_settings(py)? {
        options.call_method1("setdefault", (name, value))?;
    }
    manager.call_method("setup", (), Some(&options))
}
