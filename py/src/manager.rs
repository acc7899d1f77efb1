//! Backs `scope_profiler._manager`: the state of one manager class (`ManagerState`: its
//! configuration, lifecycle, call-id counter, last results, hosted runs, decorators, region
//! definitions, tags and regions) and what `setup()`, `finalize()`, `reset()`, `pause()`
//! and the region creation do with it; the run handle (`ProfilingRun`); the `flush_interval`
//! streaming of the configurations; the `stacklevel` naming the user's line. The decisions
//! are [`scope_profiler_finalize::lifecycle`]'s; here Python is called for the hooks
//! (tracker, tracer, fork, MPI) and the configuration object.
use std::collections::BTreeSet;
use std::ffi::CString;
use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyRuntimeWarning, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_finalize::lifecycle::{self, Lifecycle};

/// The name of a session's root region (`_ProfilingSession.ROOT_REGION_NAME`).
pub const ROOT_REGION_NAME: &str = "scope_profiler.session";

/// Modules whose frames are not user call sites for region sources.
const INTERNAL_MODULES: [&str; 4] =
    ["scope_profiler._manager", "scope_profiler._manager_api", "scope_profiler", "scope_profiler._settings"];

/// The package's modules that run the manager: a warning they raise names the first frame
/// outside them.
const MANAGER_MODULES: [&str; 2] = ["scope_profiler._manager", "scope_profiler._manager_api"];

/// Opt-in tags (`register_opt_in_tag`), shared by every manager.
static OPT_IN_TAGS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn opt_in_tags() -> BTreeSet<String> {
    OPT_IN_TAGS.lock().map(|t| t.clone()).unwrap_or_default()
}

/// `module.name` (imported on each call; the callers are not per-call paths).
fn attr<'py>(py: Python<'py>, module: &str, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import(module)?.getattr(name)
}

fn native<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    attr(py, "scope_profiler._native", name)
}

fn kwargs<'py>(py: Python<'py>, items: &[(&str, Bound<'py, PyAny>)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in items {
        d.set_item(k, v)?;
    }
    Ok(d)
}

pub(crate) fn warn(py: Python<'_>, message: &str, stacklevel: i32) -> PyResult<()> {
    let message = CString::new(message.replace('\0', "\\x00")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &message, stacklevel)
}

/// `stacklevel` of a warning raised from Rust that names the first Python frame outside the
/// manager's modules and `modules` (1: the Python frame that called into Rust).
pub(crate) fn stacklevel_outside(py: Python<'_>, modules: &[String]) -> PyResult<i32> {
    let mut level = 1;
    let mut frame = attr(py, "sys", "_getframe")?.call1((0,))?;
    while !frame.is_none() {
        let name =
            frame.getattr(intern!(py, "f_globals"))?.call_method1(intern!(py, "get"), (intern!(py, "__name__"),))?;
        let name = name.extract::<String>().unwrap_or_default();
        if !MANAGER_MODULES.contains(&name.as_str()) && !modules.contains(&name) {
            break;
        }
        frame = frame.getattr(intern!(py, "f_back"))?;
        level += 1;
    }
    Ok(level)
}

/// `_user_stacklevel(*modules) -> int`: the `stacklevel` for `warnings.warn` called by the
/// caller (in the manager's modules or one of `modules`) that names the first frame outside
/// them (the user's line).
#[pyfunction]
#[pyo3(name = "user_stacklevel", signature = (*modules))]
fn user_stacklevel(py: Python<'_>, modules: Vec<String>) -> PyResult<i32> {
    stacklevel_outside(py, &modules)
}

fn user_level(py: Python<'_>) -> PyResult<i32> {
    stacklevel_outside(py, &[])
}

fn results_from_native<'py>(native_run: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    native(native_run.py(), "ProfilingResults")?.call_method1(intern!(native_run.py(), "_from_native"), (native_run,))
}

fn empty_results<'py>(py: Python<'py>, file_path: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kw = kwargs(py, &[("file_path", file_path.clone())])?;
    native(py, "ProfilingResults")?.call((PyDict::new(py),), Some(&kw))
}

/// `render_output(requested, recorded, native_run)`: after `recorded` (the HDF5 file) was
/// written, when `setup(output=)` asked for another file, write `requested` from the run and
/// remove `recorded`. A failed rendering raises its `OSError` (a note names `recorded`, which
/// is kept).
#[pyfunction]
fn render_output(
    py: Python<'_>,
    requested: Option<Bound<'_, PyAny>>,
    recorded: Bound<'_, PyAny>,
    native_run: Bound<'_, PyAny>,
) -> PyResult<()> {
    let Some(requested) = requested.filter(|r| !r.is_none()) else { return Ok(()) };
    let path = py.import("os.path")?;
    if path.call_method1("abspath", (&requested,))?.eq(path.call_method1("abspath", (&recorded,))?)? {
        return Ok(());
    }
    let written = (|| -> PyResult<()> {
        if path.call_method1("isdir", (&requested,))?.is_truthy()? {
            let eisdir = attr(py, "errno", "EISDIR")?;
            let text = attr(py, "os", "strerror")?.call1((&eisdir,))?;
            let error = py.get_type::<pyo3::exceptions::PyIsADirectoryError>().call1((eisdir, text, &requested))?;
            return Err(PyErr::from_value(error));
        }
        native(py, "write_profile")?.call1((results_from_native(&native_run)?, &requested))?;
        Ok(())
    })();
    if let Err(err) = written {
        if err.is_instance_of::<pyo3::exceptions::PyOSError>(py) {
            err.value(py).call_method1("add_note", (format!("the recorded run is kept in {}", recorded.str()?),))?;
        }
        return Err(err);
    }
    attr(py, "os", "remove")?.call1((recorded,))?;
    Ok(())
}

/// Configurations whose recorder streams to a sidecar (`flush_interval`; a `WeakSet`).
fn streaming(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static SET: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    SET.get_or_try_init(py, || Ok::<_, PyErr>(attr(py, "weakref", "WeakSet")?.call0()?.unbind())).map(|s| s.bind(py))
}

/// `start_streaming(config)`: with `flush_interval`, start appending completed calls to the
/// sidecar of the output file (a Rust thread). Under MPI: a `RuntimeWarning` at the user's
/// line, nothing streamed.
#[pyfunction]
fn start_streaming(config: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = config.py();
    let interval = config.getattr("flush_interval")?;
    if interval.is_none()
        || config.getattr("deactivate_profiling")?.is_truthy()?
        || config.getattr("deactivate_file_output")?.is_truthy()?
    {
        return Ok(());
    }
    if !config.getattr("comm")?.is_none() {
        return warn(py, "flush_interval is not supported under MPI yet; this rank does not stream", user_level(py)?);
    }
    let path = attr(py, "os.path", "abspath")?.call1((config.getattr("file_path")?,))?;
    let metadata = PyDict::new(py);
    metadata.update(config.getattr("metadata")?.cast::<pyo3::types::PyMapping>()?)?;
    config
        .getattr("_native")?
        .call_method1("start_flush", (path, interval, metadata, config.getattr("start_time_ns")?))?;
    streaming(py)?.call_method1("add", (config,))?;
    Ok(())
}

/// `stop_streaming(config, discard=False)`: end the flush thread of `config` (None: nothing);
/// `discard` also removes its sidecar (the run is thrown away).
#[pyfunction]
#[pyo3(signature = (config, discard=false))]
pub fn stop_streaming(config: &Bound<'_, PyAny>, discard: bool) -> PyResult<()> {
    let py = config.py();
    if config.is_none() || !streaming(py)?.contains(config)? {
        return Ok(());
    }
    let native = config.getattr("_native")?;
    if native.is_none() {
        return Ok(());
    }
    if discard {
        native.call_method0("discard_flush")?;
        streaming(py)?.call_method1("discard", (config,))?;
    } else {
        native.call_method0("stop_flush")?;
    }
    Ok(())
}

/// `stop_all_streaming()`: end every flush thread (at exit, after the exit-time finalizes).
#[pyfunction]
fn stop_all_streaming(py: Python<'_>) -> PyResult<()> {
    let configs = PyList::new(py, streaming(py)?.try_iter()?.collect::<PyResult<Vec<_>>>()?)?;
    for config in configs.iter() {
        stop_streaming(&config, false)?;
    }
    Ok(())
}

/// The state of one manager class and its operations (`scope_profiler._manager`): each
/// manager class (`ProfileManager`, a subclass, the class behind `ProfileManager()`) owns one.
#[pyclass(module = "scope_profiler._native")]
pub struct ManagerState {
    owner: Py<PyAny>,
    #[pyo3(get, set)]
    config: Py<PyAny>,
    #[pyo3(get, set)]
    configured: bool,
    lifecycle: Lifecycle,
    #[pyo3(get, set)]
    next_call_id: i64,
    #[pyo3(get, set)]
    last_results: Py<PyAny>,
    #[pyo3(get, set)]
    last_native_run: Py<PyAny>,
    #[pyo3(get, set)]
    last_written_run: Py<PyAny>,
    #[pyo3(get, set)]
    requested_output: Py<PyAny>,
    #[pyo3(get, set)]
    host_config: Py<PyAny>,
    #[pyo3(get)]
    joined: Py<PyList>,
    #[pyo3(get)]
    decorators: Py<PyDict>,
    #[pyo3(get)]
    region_definitions: Py<PyDict>,
    #[pyo3(get)]
    regions: Py<PyDict>,
    #[pyo3(get)]
    region_cache: Py<PyAny>,
    #[pyo3(get)]
    metadata_context: Py<PyAny>,
    enabled_tags: BTreeSet<String>,
    region_tag_filter: Option<BTreeSet<String>>,
    auto_finalize: Py<PyAny>,
}

type State<'py> = Bound<'py, ManagerState>;

fn get<'py>(slf: &State<'py>, f: impl Fn(&ManagerState) -> &Py<PyAny>) -> Bound<'py, PyAny> {
    f(&slf.borrow()).bind(slf.py()).clone()
}

fn config_of<'py>(slf: &State<'py>) -> Bound<'py, PyAny> {
    get(slf, |s| &s.config)
}

fn tags_vec(tags: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    tags.try_iter()?.map(|t| t?.extract::<String>()).collect()
}

#[pymethods]
impl ManagerState {
    /// A fresh state for manager class `owner`: nothing configured, no regions.
    #[new]
    fn new(py: Python<'_>, owner: Py<PyAny>) -> PyResult<Self> {
        let name = format!("scope_profiler_metadata_{}", owner.bind(py).getattr("__qualname__")?);
        let kw = kwargs(py, &[("default", py.None().into_bound(py))])?;
        let context = attr(py, "contextvars", "ContextVar")?.call((name,), Some(&kw))?;
        Ok(ManagerState {
            owner,
            config: py.None(),
            configured: false,
            lifecycle: Lifecycle::Inactive,
            next_call_id: 0,
            last_results: py.None(),
            last_native_run: py.None(),
            last_written_run: py.None(),
            requested_output: py.None(),
            host_config: py.None(),
            joined: PyList::empty(py).unbind(),
            decorators: PyDict::new(py).unbind(),
            region_definitions: PyDict::new(py).unbind(),
            regions: PyDict::new(py).unbind(),
            region_cache: py.None(),
            metadata_context: context.unbind(),
            enabled_tags: BTreeSet::new(),
            region_tag_filter: None,
            auto_finalize: py.None(),
        })
    }

    /// `install()`: make the `RegionCache` over this state's regions, whose misses go to
    /// `create_region`; returns it.
    fn install<'py>(slf: &State<'py>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let regions = slf.borrow().regions.clone_ref(py);
        let cache = native(py, "RegionCache")?.call1((regions, slf.getattr("create_region")?))?;
        slf.borrow_mut().region_cache = cache.clone().unbind();
        Ok(cache)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for object in [&self.owner, &self.config, &self.last_results, &self.last_native_run, &self.last_written_run] {
            visit.call(object)?;
        }
        for object in
            [&self.requested_output, &self.host_config, &self.region_cache, &self.metadata_context, &self.auto_finalize]
        {
            visit.call(object)?;
        }
        visit.call(&self.joined)?;
        visit.call(&self.decorators)?;
        visit.call(&self.region_definitions)?;
        visit.call(&self.regions)
    }

    /// The lifecycle's name: `"INACTIVE"`, `"ACTIVE"` or `"FINALIZED"`.
    #[getter]
    fn lifecycle(&self) -> &'static str {
        self.lifecycle.name()
    }

    /// Whether the manager records: configured, profiling not deactivated.
    fn recording(slf: &State<'_>) -> PyResult<bool> {
        let config = config_of(slf);
        Ok(slf.borrow().configured && !config.is_none() && !config.getattr("deactivate_profiling")?.is_truthy()?)
    }

    /// `is_active()`: recording and set up (ACTIVE or FINALIZED).
    fn is_active(slf: &State<'_>) -> PyResult<bool> {
        let recording = Self::recording(slf)?;
        Ok(slf.borrow().lifecycle.is_active(recording))
    }

    /// Whether `scope-profiler run`'s own run is the active one (a script's setup joins it).
    fn hosting(slf: &State<'_>) -> bool {
        let host = get(slf, |s| &s.host_config);
        !host.is_none() && host.is(config_of(slf))
    }

    /// The path a source file is recorded as: relative to the cwd or `sys.path` unless the
    /// run's `metadata_detail` is not `"minimal"`.
    fn recorded_path<'py>(slf: &State<'py>, filename: Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
        let config = config_of(slf);
        if config.is_none() || config.getattr("metadata_detail")?.eq("minimal")? {
            return native(slf.py(), "relative_source_path")?.call1((filename,));
        }
        Ok(filename.into_any())
    }

    /// `get_config()`: the configuration (a default, started one made on first use).
    fn get_config<'py>(slf: &State<'py>) -> PyResult<Bound<'py, PyAny>> {
        let config = config_of(slf);
        if !config.is_none() {
            return Ok(config);
        }
        let config = attr(slf.py(), "scope_profiler._settings", "ProfilingConfig")?.call0()?;
        slf.borrow_mut().config = config.clone().unbind();
        config.call_method0("start")?;
        Ok(config)
    }

    /// Whether a region with `tags` records in this run (`region_tags` filter, opt-in tags).
    fn tags_record(&self, tags: Vec<String>) -> bool {
        lifecycle::tags_record(self.region_tag_filter.as_ref(), &opt_in_tags(), &self.enabled_tags, &tags)
    }

    fn bind_region_cache(slf: &State<'_>) -> PyResult<()> {
        let py = slf.py();
        let config = config_of(slf);
        let cache = get(slf, |s| &s.region_cache);
        let native_bound = Self::recording(slf)?
            && !config.getattr("capture_region_source")?.is_truthy()?
            && slf.borrow().region_tag_filter.is_none();
        if native_bound {
            cache.call_method1("bind", (config.getattr("_native")?, slf.getattr("recorded_path")?))?;
        } else {
            cache.call_method1("bind", (py.None(),))?;
        }
        Ok(())
    }

    /// `_create_region(region_name, functions=None, tags=None)`: the region named
    /// `region_name` when the native lookup does not make it. `ValueError` when the name
    /// exists with other non-None `tags`.
    #[pyo3(signature = (region_name, functions=None, tags=None))]
    fn create_region<'py>(
        slf: &State<'py>,
        region_name: Bound<'py, PyAny>,
        functions: Option<Bound<'py, PyAny>>,
        tags: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = functions; // accepted for compatibility (line profiling is not implemented)
        Self::region_of(slf, region_name, tags, true)
    }

    /// `define_region(region_name, functions, tags)`: the region made now and in every
    /// later `setup()`; a `RegionHandle` on it. `ValueError` when the name was defined with
    /// other `functions`/`tags`, or cannot be stored (`check_region_name`).
    fn define_region<'py>(
        slf: &State<'py>,
        region_name: Bound<'py, PyAny>,
        functions: Bound<'py, PyAny>,
        tags: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let tuple =
            |v: &Bound<'py, PyAny>| if v.is_none() { Ok(v.clone()) } else { py.get_type::<PyTuple>().call1((v,)) };
        let definition = PyTuple::new(py, [tuple(&functions)?, tuple(&tags)?])?;
        let definitions = get(slf, |s| s.region_definitions.as_any()).cast_into::<PyDict>()?;
        if let Some(previous) = definitions.get_item(&region_name)? {
            if !previous.is_none() && !previous.eq(&definition)? {
                return Err(PyValueError::new_err(format!(
                    "region {} was already defined differently",
                    region_name.repr()?
                )));
            }
        }
        native(py, "check_region_name")?.call1((&region_name,))?;
        Self::region_of(slf, region_name.clone(), Some(definition.get_item(1)?).filter(|t| !t.is_none()), false)?;
        definitions.set_item(&region_name, &definition)?;
        let kw = kwargs(py, &[("functions", definition.get_item(0)?), ("tags", definition.get_item(1)?)])?;
        native(py, "RegionHandle")?.call((get(slf, |s| &s.owner), region_name), Some(&kw))
    }

    /// `get_all_regions()`: the region dict, with every name the native lookup made (used
    /// once so far) listed in it first.
    fn all_regions<'py>(slf: &State<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cache = get(slf, |s| &s.region_cache);
        let unlisted: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = cache.call_method0("unlisted_calls")?.extract()?;
        for (name, _) in unlisted {
            cache.call_method1("get", (name,))?; // lists a name used once so far
        }
        Ok(get(slf, |s| s.regions.as_any()))
    }

    /// `recorded_regions()`: the registered names (creation order) with at least one call.
    fn recorded_regions<'py>(slf: &State<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let cache = get(slf, |s| &s.region_cache);
        let listed = get(slf, |s| s.regions.as_any()).cast_into::<PyDict>()?.items();
        let mut calls: std::collections::HashMap<String, i64> =
            cache.call_method0("unlisted_calls")?.extract::<Vec<(String, i64)>>()?.into_iter().collect();
        for item in listed.iter() {
            let (name, region): (String, Bound<'py, PyAny>) = item.extract()?;
            calls.insert(name, region.getattr("num_calls")?.extract()?);
        }
        let registered: Vec<String> = cache.call_method0("registered")?.extract()?;
        PyTuple::new(py, registered.into_iter().filter(|n| calls.get(n).is_some_and(|c| *c > 0)).collect::<Vec<_>>())
    }

    /// Bind decorator `wrapper` of `func` (region `name`, `tags`) to the current run.
    fn bind_decorated(
        slf: &State<'_>,
        name: Bound<'_, PyAny>,
        func: Bound<'_, PyAny>,
        wrapper: Bound<'_, PyAny>,
        tags: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        if !Self::recording(slf)? {
            wrapper.call_method1("_bind", (py.None(),))?;
            return Ok(());
        }
        let region = Self::region_of(slf, name, Some(tags).filter(|t| !t.is_none()), false)?;
        if let Ok(code) = func.getattr("__code__") {
            let config = config_of(slf);
            let mut text = py.None().into_bound(py);
            if !config.is_none() && config.getattr("capture_region_source")?.is_truthy()? {
                match attr(py, "inspect", "getsource")?.call1((&func,)) {
                    Ok(t) => text = t,
                    Err(e)
                        if e.is_instance_of::<pyo3::exceptions::PyOSError>(py)
                            || e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {}
                    Err(e) => return Err(e),
                }
            }
            let path = Self::recorded_path(slf, code.getattr("co_filename")?.cast_into()?)?;
            region.call_method1("set_source", (path, code.getattr("co_firstlineno")?, text))?;
        }
        let bound = if region.getattr("enabled")?.is_truthy()? { region } else { py.None().into_bound(py) };
        wrapper.call_method1("_bind", (bound,))?;
        Ok(())
    }

    /// `profile(...)(func)`: `func`'s Rust wrapper (`ProfiledFunction`) bound to region
    /// `region_name` (falsy: `func.__name__`), recorded as a decorator of this manager, then
    /// wrapped for a coroutine / generator lifetime, `metadata`/`record_outcome` and
    /// `recursive` as needed (the outermost wrapper is returned). `ValueError` for a name a
    /// profile cannot hold.
    #[allow(clippy::too_many_arguments)]
    fn decorate<'py>(
        slf: &State<'py>,
        func: Bound<'py, PyAny>,
        region_name: Bound<'py, PyAny>,
        recursive: Bound<'py, PyAny>,
        metadata: Bound<'py, PyAny>,
        record_outcome: Bound<'py, PyAny>,
        tags: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let name = if region_name.is_truthy()? { region_name } else { func.getattr("__name__")? };
        native(py, "check_region_name")?.call1((&name,))?; // refused now, not at the next setup()
        attr(py, "scope_profiler._tracer", "mark_decorated")?.call1((&func,))?; // the tracer leaves it to its region
        let wrapper = native(py, "ProfiledFunction")?.call1((&func,))?;
        attr(py, "functools", "update_wrapper")?.call1((&wrapper, &func))?;
        Self::bind_decorated(slf, name.clone(), func.clone(), wrapper.clone(), tags.clone())?;
        let decorators = get(slf, |s| s.decorators.as_any());
        let entries = decorators.call_method1("setdefault", (&name, PyList::empty(py)))?;
        entries.call_method1("append", ((&func, &wrapper, &tags),))?;
        let owner = get(slf, |s| &s.owner);
        let with_metadata = !metadata.is_none() || record_outcome.is_truthy()?;
        let lifetime = attr(py, "scope_profiler._manager", "_lifetime_wrapper")?.call1((&func, &wrapper))?;
        let mut outer = if lifetime.is_none() {
            if with_metadata {
                let call = attr(py, "scope_profiler._metadata", "MetadataCall")?.call1((
                    &owner,
                    &wrapper,
                    &metadata,
                    &record_outcome,
                ))?;
                attr(py, "functools", "wraps")?.call1((&func,))?.call1((call,))?
            } else {
                wrapper.clone()
            }
        } else {
            let mut outer = lifetime.clone();
            if with_metadata {
                let made = attr(py, "scope_profiler._metadata", "lifetime_with_metadata")?.call1((
                    &owner,
                    &wrapper,
                    &lifetime,
                    &metadata,
                    &record_outcome,
                ))?;
                if made.is_truthy()? {
                    outer = made;
                }
            }
            outer
        };
        if recursive.is_truthy()? {
            outer =
                attr(py, "scope_profiler._manager", "_recursive_wrapper")?.call1((&owner, &func, &wrapper, &outer))?;
        }
        if !outer.is(&wrapper) {
            outer.setattr("_scope_profiler_wrapper", &wrapper)?; // instrument() leaves it alone
        }
        Ok(outer)
    }

    /// `register_opt_in_tag(*tags)` (tags checked by the caller): the new opt-in tags, and
    /// this manager's regions and decorators carrying one made again.
    fn register_opt_in_tags(slf: &State<'_>, tags: Vec<String>) -> PyResult<()> {
        let new = lifecycle::register_opt_in(
            &mut *OPT_IN_TAGS.lock().map_err(|_| PyRuntimeError::new_err("opt-in tags poisoned"))?,
            &tags,
        );
        if new.is_empty() || !slf.borrow().configured {
            return Ok(());
        }
        let py = slf.py();
        let regions = slf.borrow().regions.clone_ref(py).into_bound(py);
        for (name, region) in regions.copy()?.iter() {
            if lifecycle::carries_any(&new, &tags_vec(&region.getattr("tags")?)?) {
                regions.del_item(name)?;
            }
        }
        Self::rebind_decorators(slf, Some(&new))
    }

    /// `setup()` (see `ProfileManager.setup`): merge the settings (config file < `options`
    /// < non-None overrides, `output=` ones), make the configuration, then join the host's
    /// run or replace the current one. `RuntimeError` over an active run, `TypeError` for
    /// unknown settings, the configuration's own errors.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (options, auto_finalize, output_given, output, replace, region_tags, config_path, overrides))]
    fn setup<'py>(
        slf: &State<'py>,
        options: Bound<'py, PyAny>,
        auto_finalize: bool,
        output_given: bool,
        output: Bound<'py, PyAny>,
        replace: bool,
        region_tags: Bound<'py, PyAny>,
        config_path: Bound<'py, PyAny>,
        overrides: Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let hosted = Self::hosting(slf);
        let (configured, state) = (slf.borrow().configured, slf.borrow().lifecycle);
        if let Some(message) = lifecycle::setup_refusal(hosted, configured, state, replace, false) {
            if !attr(py, "scope_profiler._fork", "inherited")?.call1((config_of(slf),))?.is_truthy()? {
                return Err(PyRuntimeError::new_err(message)); // a forked child may replace it
            }
        }
        native(py, "check_setting_names")?.call1((&overrides,))?;
        let mut requested = py.None().into_bound(py);
        if output_given {
            if !output.is_none() {
                requested = attr(py, "os", "fspath")?.call1((&output,))?;
            }
            overrides.update(native(py, "output_settings")?.call1((&requested, &overrides))?.cast()?)?;
        }
        let settings = PyDict::new(py);
        if !config_path.is_none() {
            settings
                .update(attr(py, "scope_profiler._options", "load_profiling_config")?.call1((config_path,))?.cast()?)?;
        }
        if !options.is_none() {
            settings.update(options.call_method0("to_kwargs")?.cast()?)?;
        }
        for (key, value) in overrides.iter() {
            if !value.is_none() {
                settings.set_item(key, value)?;
            }
        }
        let config = attr(py, "scope_profiler._settings", "ProfilingConfig")?.call((), Some(&settings))?;
        if hosted {
            return Self::join_host(slf, &config, &requested);
        }
        slf.borrow_mut().region_tag_filter = if region_tags.is_none() {
            None
        } else if let Ok(tag) = region_tags.extract::<String>() {
            Some(BTreeSet::from([tag]))
        } else {
            // a tag that is not a str matches no region (as in a frozenset of them)
            Some(region_tags.try_iter()?.filter_map(|t| t.and_then(|t| t.extract::<String>()).ok()).collect())
        };
        Self::configure(slf, &config)?;
        slf.borrow_mut().requested_output = requested.clone().unbind();
        if auto_finalize {
            Self::register_auto_finalize(slf)?;
        }
        let owner = get(slf, |s| &s.owner);
        Ok(Bound::new(py, ProfilingRun::new(py, owner.unbind(), config.unbind(), Some(requested.unbind())))?.into_any())
    }

    /// `_set_config(config)`: start `config` and make it the manager's run (the previous
    /// one's tracer, tracker and stream end; regions and decorators are bound again).
    fn configure(slf: &State<'_>, config: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        config.call_method0("start")?;
        Self::cancel_auto_finalize(slf)?;
        get(slf, |s| s.regions.as_any()).call_method0("clear")?;
        slf.borrow_mut().next_call_id = 0;
        let previous = config_of(slf);
        if !previous.is(config) {
            attr(py, "scope_profiler._tracer", "forget")?.call1((&previous,))?;
        }
        if !previous.is_none() {
            let tracker = previous.getattr("tracker")?;
            if !tracker.is_none() {
                tracker.call_method0("uninstall")?;
            }
        }
        if !previous.is(config) {
            stop_streaming(&previous, true)?;
        }
        {
            let mut s = slf.borrow_mut();
            s.config = config.clone().unbind();
        }
        attr(py, "scope_profiler._fork", "track")?.call1((config,))?;
        let deactivated = config.getattr("deactivate_profiling")?.is_truthy()?;
        {
            let mut s = slf.borrow_mut();
            s.last_results = py.None();
            s.last_native_run = py.None();
            s.last_written_run = py.None();
            s.requested_output = py.None();
            s.configured = true;
            s.lifecycle = Lifecycle::after_setup(deactivated);
        }
        Self::bind_region_cache(slf)?;
        let tracker = config.getattr("tracker")?;
        if !tracker.is_none() {
            tracker.call_method0("install")?;
        }
        attr(py, "scope_profiler._tracer", "start")?.call1((config, slf.getattr("recorded_path")?))?;
        config.call_method0("mark_started")?;
        start_streaming(config)?;
        let enable = config.getattr("enable_tags")?;
        let config_tags = if enable.is_truthy()? { tags_vec(&enable)? } else { Vec::new() };
        let env_tags: Vec<String> = native(py, "enabled_tags_from_env")?.call0()?.extract()?;
        {
            let mut s = slf.borrow_mut();
            s.enabled_tags = lifecycle::enabled_tags(&config_tags, &env_tags, s.region_tag_filter.as_ref());
        }
        Self::rebind_decorators(slf, None)?;
        let definitions = get(slf, |s| s.region_definitions.as_any()).cast_into::<PyDict>()?.copy()?;
        for (name, definition) in definitions.iter() {
            let tags = definition.get_item(1)?;
            Self::region_of(slf, name, Some(tags).filter(|t| !t.is_none()), false)?;
        }
        Ok(())
    }

    /// `reset()`: forget the configuration and everything recorded; decorated functions
    /// call straight through until the next `setup()`.
    fn reset(slf: &State<'_>) -> PyResult<()> {
        let py = slf.py();
        get(slf, |s| s.regions.as_any()).call_method0("clear")?;
        get(slf, |s| &s.region_cache).call_method1("bind", (py.None(),))?;
        Self::cancel_auto_finalize(slf)?;
        let config = config_of(slf);
        attr(py, "scope_profiler._tracer", "forget")?.call1((&config,))?;
        if !config.is_none() {
            let tracker = config.getattr("tracker")?;
            if !tracker.is_none() {
                tracker.call_method0("uninstall")?;
            }
        }
        stop_streaming(&config, true)?;
        {
            let mut s = slf.borrow_mut();
            s.config = py.None();
            s.last_results = py.None();
            s.last_native_run = py.None();
            s.last_written_run = py.None();
            s.requested_output = py.None();
            s.configured = false;
            s.lifecycle = Lifecycle::Inactive;
            s.next_call_id = 0;
            s.enabled_tags.clear();
            s.region_tag_filter = None;
        }
        for entries in get(slf, |s| s.decorators.as_any()).cast_into::<PyDict>()?.values().iter() {
            for entry in entries.try_iter()? {
                entry?.get_item(1)?.call_method1("_bind", (py.None(),))?;
            }
        }
        Ok(())
    }

    /// `_reset()`: `reset()` and forget every decorator and region definition too.
    fn clear(slf: &State<'_>) -> PyResult<()> {
        Self::reset(slf)?;
        get(slf, |s| s.decorators.as_any()).call_method0("clear")?;
        get(slf, |s| s.region_definitions.as_any()).call_method0("clear")?;
        Ok(())
    }

    /// `pause()`: `RuntimeError` before `setup()` or while scopes other than a session's
    /// root are open.
    fn pause(slf: &State<'_>) -> PyResult<()> {
        let config = config_of(slf);
        if config.is_none() {
            return Err(PyRuntimeError::new_err("ProfileManager.setup() must be called before pause()"));
        }
        let native_rec = config.getattr("_native")?;
        if native_rec.getattr("paused")?.is_truthy()? {
            return Ok(());
        }
        let open: Vec<String> = native_rec.call_method0("open_region_names")?.extract()?;
        crate::manager_api::check_pause(slf.py(), open, ROOT_REGION_NAME)?;
        native_rec.call_method1("set_paused", (true,))?;
        Ok(())
    }

    /// `resume()`: `RuntimeError` before `setup()`.
    fn resume(slf: &State<'_>) -> PyResult<()> {
        let config = config_of(slf);
        if config.is_none() {
            return Err(PyRuntimeError::new_err("ProfileManager.setup() must be called before resume()"));
        }
        config.getattr("_native")?.call_method1("set_paused", (false,))?;
        Ok(())
    }

    fn cancel_auto_finalize(slf: &State<'_>) -> PyResult<()> {
        let py = slf.py();
        let callback = std::mem::replace(&mut slf.borrow_mut().auto_finalize, py.None()).into_bound(py);
        if !callback.is_none() {
            attr(py, "atexit", "unregister")?.call1((callback,))?;
        }
        Ok(())
    }

    /// `setup(auto_finalize=True)`: finalize (closing open calls) at interpreter exit.
    fn register_auto_finalize(slf: &State<'_>) -> PyResult<()> {
        let py = slf.py();
        Self::cancel_auto_finalize(slf)?;
        let callback = Bound::new(py, AutoFinalize { state: slf.clone().unbind() })?;
        slf.borrow_mut().auto_finalize = callback.clone().into_any().unbind();
        attr(py, "atexit", "register")?.call1((callback,))?;
        Ok(())
    }

    /// `_join_host(config, requested_output)`: a hosted script's `setup()` joins the command
    /// line's run (restarted with more tracking when the script asks for it); returns the
    /// script's `ProfilingRun`.
    fn join_host<'py>(
        slf: &State<'py>,
        config: &Bound<'py, PyAny>,
        requested_output: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let mut host = config_of(slf);
        let tracking = |c: &Bound<'py, PyAny>| -> PyResult<(bool, bool)> {
            Ok((c.getattr("track_threads")?.is_truthy()?, c.getattr("track_async")?.is_truthy()?))
        };
        let upgrade =
            native(py, "tracking_upgrade")?.call1((tracking(config)?, tracking(&host)?, host.getattr("file_path")?))?;
        if !upgrade.is_none() {
            let (names, note): (Vec<String>, String) = upgrade.extract()?;
            let kw = kwargs(py, &[("file", attr(py, "sys", "stderr")?)])?;
            attr(py, "builtins", "print")?.call((note,), Some(&kw))?;
            let requested = get(slf, |s| &s.requested_output);
            let settings = PyDict::new(py);
            settings.update(host.getattr("_settings")?.cast()?)?;
            for name in names {
                settings.set_item(name, true)?;
            }
            host = attr(py, "scope_profiler._settings", "ProfilingConfig")?.call((), Some(&settings))?;
            Self::configure(slf, &host)?;
            let mut s = slf.borrow_mut();
            s.requested_output = requested.unbind();
            s.host_config = host.clone().unbind();
        }
        let open_now = host.getattr("_native")?.call_method0("open_region_names")?;
        let file_path = config.getattr("file_path")?;
        let entry = (&file_path, requested_output, config.getattr("deactivate_file_output")?, open_now);
        get(slf, |s| s.joined.as_any())
            .call_method1("append", (PyTuple::new(py, [entry.0.clone(), entry.1.clone(), entry.2, entry.3])?,))?;
        let shown = if requested_output.is_truthy()? { requested_output.clone() } else { file_path };
        let mut run = ProfilingRun::new(py, get(slf, |s| &s.owner).unbind(), host.unbind(), Some(shown.unbind()));
        run.joined = true;
        Ok(Bound::new(py, run)?.into_any())
    }

    /// `_finalize(...)` (see `ProfileManager._finalize`): the checkpoint; returns the results
    /// when `return_results`, else None. Raises the `OSError` of a failed write (the run is
    /// kept in `last_results`).
    #[pyo3(signature = (verbose, return_results, native_traces, close_open))]
    fn finalize<'py>(
        slf: &State<'py>,
        verbose: bool,
        return_results: bool,
        native_traces: Bound<'py, PyAny>,
        close_open: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let none = py.None().into_bound(py);
        if get(slf, |s| s.joined.as_any()).is_truthy()? && Self::hosting(slf) {
            return Self::finalize_joined(slf, verbose, return_results, &native_traces);
        }
        if close_open {
            let kw = kwargs(py, &[("stacklevel", user_level(py)?.into_pyobject(py)?.into_any())])?;
            attr(py, "scope_profiler._tracer", "stop")?.call((config_of(slf),), Some(&kw))?;
        }
        if !slf.borrow().configured {
            if !return_results {
                return Ok(none);
            }
            let config = config_of(slf);
            let path = if config.is_none() { PyString::new(py, "").into_any() } else { config.getattr("file_path")? };
            return Self::keep_results(slf, empty_results(py, &path)?, true);
        }
        let config = Self::get_config(slf)?;
        let rank = config.getattr("_rank").unwrap_or_else(|_| 0i64.into_pyobject(py).expect("int").into_any());
        let native_list = if native_traces.is_none() {
            PyList::empty(py).into_any()
        } else {
            native(py, "native_regions")?.call1((&native_traces, rank))?
        };
        config.getattr("metadata")?.set_item("finalize_time_ns", native(py, "perf_counter_ns")?.call0()?)?;
        if config.getattr("deactivate_profiling")?.is_truthy()? {
            Self::finished(slf)?;
            let results = if return_results { empty_results(py, &config.getattr("file_path")?)? } else { none };
            return Self::keep_results(slf, results, return_results);
        }
        if !config.getattr("comm")?.is_none() {
            let kw = kwargs(
                py,
                &[
                    ("verbose", verbose.into_pyobject(py)?.to_owned().into_any()),
                    ("return_results", return_results.into_pyobject(py)?.to_owned().into_any()),
                    ("native", native_list),
                ],
            )?;
            let results =
                attr(py, "scope_profiler._mpi", "finalize")?.call((get(slf, |s| &s.owner), &config), Some(&kw))?;
            Self::finished(slf)?;
            return Self::keep_results(slf, results, return_results);
        }
        let write_file = !config.getattr("deactivate_file_output")?.is_truthy()?;
        let mut results = none;
        if write_file || return_results || verbose {
            results = Self::checkpoint(
                slf,
                &config,
                write_file,
                return_results || verbose,
                verbose,
                close_open,
                native_list,
            )?;
        }
        Self::finished(slf)?;
        Self::keep_results(slf, results, return_results)
    }

    /// `_finalize_joined(...)`: a hosted script's finalize: a snapshot of every completed
    /// call so far, written to the script's own output unless it deactivated file output.
    fn finalize_joined<'py>(
        slf: &State<'py>,
        verbose: bool,
        return_results: bool,
        native_traces: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let joined = get(slf, |s| s.joined.as_any());
        let last = joined.get_item(-1)?;
        let (path, requested, no_file, open_at_join) =
            (last.get_item(0)?, last.get_item(1)?, last.get_item(2)?, last.get_item(3)?);
        let config = Self::get_config(slf)?;
        let native_list = if native_traces.is_none() {
            PyList::empty(py).into_any()
        } else {
            native(py, "native_regions")?.call1((native_traces, 0))?
        };
        Self::refresh_task_names(&config)?;
        let metadata = PyDict::new(py);
        metadata.update(config.getattr("metadata")?.cast()?)?;
        metadata.set_item("finalize_time_ns", native(py, "perf_counter_ns")?.call0()?)?;
        let expected = PyList::new(py, [ROOT_REGION_NAME])?;
        for name in open_at_join.try_iter()? {
            expected.append(name?)?;
        }
        let level = user_level(py)?;
        let kw = kwargs(
            py,
            &[
                ("close_open", false.into_pyobject(py)?.to_owned().into_any()),
                ("expected_open", expected.into_any()),
                ("native", native_list),
                ("stacklevel", level.into_pyobject(py)?.into_any()),
            ],
        )?;
        let call_id = slf.borrow().next_call_id;
        let out = config.getattr("_native")?.call_method(
            "finalize",
            (metadata, config.getattr("start_time_ns")?, false, &path, call_id),
            Some(&kw),
        )?;
        let nesting_error = out.get_item(2)?;
        if !nesting_error.is_none() {
            warn(py, &format!("call graph not recorded: {}", nesting_error.str()?), level)?;
        }
        let results = results_from_native(&out.get_item(0)?)?;
        slf.borrow_mut().last_results = results.clone().unbind();
        let target = if requested.is_truthy()? { requested } else { path };
        if !no_file.is_truthy()? {
            native(py, "write_profile")?.call1((&results, &target))?;
        }
        if verbose {
            results.call_method("print_summary", (), Some(&kwargs(py, &[("title", target)])?))?;
        }
        Ok(if return_results { results } else { py.None().into_bound(py) })
    }
}

impl ManagerState {
    /// The region `name` with `tags` (None: any), made when missing; `source`: record the
    /// calling Python line as its source (a user's call, not the manager's own).
    fn region_of<'py>(
        slf: &State<'py>,
        name: Bound<'py, PyAny>,
        tags: Option<Bound<'py, PyAny>>,
        source: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let regions = get(slf, |s| s.regions.as_any()).cast_into::<PyDict>()?;
        let cache = get(slf, |s| &s.region_cache);
        let tags = tags.map(|t| py.get_type::<PyTuple>().call1((t,))).transpose()?;
        let mut region = regions.get_item(&name)?;
        if region.is_none() {
            region = Some(cache.call_method1("adopt", (&name,))?).filter(|r| !r.is_none());
        }
        let region = match region {
            Some(region) => region,
            None => {
                let normalized = match &tags {
                    Some(t) => tags_vec(t)?,
                    None => Vec::new(),
                };
                let kw = kwargs(py, &[("cache", cache.clone())])?;
                let made = if Self::recording(slf)? && slf.borrow().tags_record(normalized.clone()) {
                    let config = config_of(slf);
                    let made = config.getattr("_native")?.call_method("region", (&name, normalized), Some(&kw))?;
                    if source {
                        Self::set_call_site(slf, &config, &made)?;
                    }
                    made
                } else {
                    native(py, "ProfileRegion")?.call_method("disabled", (&name, normalized), Some(&kw))?
                };
                // another thread may have made it meanwhile: keep the first object
                regions.call_method1("setdefault", (&name, made))?
            }
        };
        if let Some(tags) = tags {
            let have = py.get_type::<PyTuple>().call1((region.getattr("tags")?,))?;
            if !have.eq(&tags)? {
                return Err(PyValueError::new_err(format!(
                    "region {} already has tags {}; cannot reuse it with {}",
                    name.repr()?,
                    have.repr()?,
                    tags.repr()?
                )));
            }
        }
        Ok(region)
    }

    /// The calling Python line as `region`'s source, unless that frame is the package's.
    fn set_call_site(slf: &State<'_>, config: &Bound<'_, PyAny>, region: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let frame = attr(py, "sys", "_getframe")?.call1((0,))?;
        let module: String =
            frame.getattr("f_globals")?.call_method1("get", ("__name__", ""))?.extract().unwrap_or_default();
        if INTERNAL_MODULES.contains(&module.as_str()) {
            return Ok(());
        }
        let filename = frame.getattr("f_code")?.getattr("co_filename")?;
        let lineno = frame.getattr("f_lineno")?;
        let mut text = py.None().into_bound(py);
        if config.getattr("capture_region_source")?.is_truthy()? {
            let line =
                attr(py, "linecache", "getline")?.call1((&filename, &lineno))?.call_method1("rstrip", ("\n",))?;
            if line.is_truthy()? {
                text = line;
            }
        }
        region.call_method1("set_source", (Self::recorded_path(slf, filename.cast_into()?)?, lineno, text))?;
        Ok(())
    }

    /// Bind every decorator again (`new`: only those carrying one of these tags).
    fn rebind_decorators(slf: &State<'_>, new: Option<&BTreeSet<String>>) -> PyResult<()> {
        let decorators = get(slf, |s| s.decorators.as_any()).cast_into::<PyDict>()?.copy()?;
        for (name, entries) in decorators.iter() {
            for entry in PyList::new(slf.py(), entries.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.iter() {
                let tags = entry.get_item(2)?;
                if let Some(new) = new {
                    if tags.is_none() || !lifecycle::carries_any(new, &tags_vec(&tags)?) {
                        continue;
                    }
                }
                Self::bind_decorated(slf, name.clone(), entry.get_item(0)?, entry.get_item(1)?, tags)?;
            }
        }
        Ok(())
    }

    fn refresh_task_names(config: &Bound<'_, PyAny>) -> PyResult<()> {
        let tracker = config.getattr("tracker")?;
        if !tracker.is_none() {
            tracker.call_method0("_refresh_task_names")?; // Task.get_name() as of now
        }
        Ok(())
    }

    /// The checkpoint of a plain (not MPI) run: snapshot, write, render `output=`, results.
    #[allow(clippy::too_many_arguments)]
    fn checkpoint<'py>(
        slf: &State<'py>,
        config: &Bound<'py, PyAny>,
        write_file: bool,
        need_results: bool,
        verbose: bool,
        close_open: bool,
        native_list: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        Self::refresh_task_names(config)?;
        let level = user_level(py)?;
        let kw = kwargs(py, &[("stacklevel", level.into_pyobject(py)?.into_any())])?;
        attr(py, "scope_profiler._tracer", "report")?.call((config,), Some(&kw))?;
        let metadata = PyDict::new(py);
        metadata.update(config.getattr("metadata")?.cast()?)?;
        let kw = kwargs(
            py,
            &[
                ("close_open", close_open.into_pyobject(py)?.to_owned().into_any()),
                ("expected_open", PyList::new(py, [ROOT_REGION_NAME])?.into_any()),
                ("native", native_list),
                ("stacklevel", level.into_pyobject(py)?.into_any()),
            ],
        )?;
        let file_path = config.getattr("file_path")?;
        let call_id = slf.borrow().next_call_id;
        let out = config.getattr("_native")?.call_method(
            "finalize",
            (metadata, config.getattr("start_time_ns")?, write_file, &file_path, call_id),
            Some(&kw),
        )?;
        let (native_run, write_error) = (out.get_item(0)?, out.get_item(3)?);
        {
            let mut s = slf.borrow_mut();
            s.next_call_id = out.get_item(1)?.extract()?;
            s.last_native_run = native_run.clone().unbind();
            // what the file now holds, for `run` not to read it back
            s.last_written_run =
                if write_file && write_error.is_none() { native_run.clone().unbind() } else { py.None() };
        }
        let nesting_error = out.get_item(2)?;
        if !nesting_error.is_none() {
            warn(py, &format!("call graph not recorded: {}", nesting_error.str()?), level)?;
        }
        if !write_error.is_none() {
            // nothing rewound: the calls stay buffered for the next finalize(); the run is kept
            slf.borrow_mut().last_results = results_from_native(&native_run)?.unbind();
            return Err(PyErr::from_value(write_error));
        }
        let requested = get(slf, |s| &s.requested_output);
        if write_file {
            render_output(py, Some(requested.clone()), file_path.clone(), native_run.clone())?;
        }
        if !need_results {
            return Ok(py.None().into_bound(py));
        }
        let results = results_from_native(&native_run)?;
        if verbose && results.hasattr("print_summary")? {
            let label = results.getattr("display_label").unwrap_or(file_path);
            let title = native(py, "finalize_summary_title")?.call1((requested, write_file, label, 1))?;
            results.call_method("print_summary", (), Some(&kwargs(py, &[("title", title)])?))?;
        }
        Ok(results)
    }

    /// A finalize done: FINALIZED, no exit-time finalize any more.
    fn finished(slf: &State<'_>) -> PyResult<()> {
        slf.borrow_mut().lifecycle = Lifecycle::Finalized;
        Self::cancel_auto_finalize(slf)
    }

    /// `results` kept as the last results and returned when `return_results`, else None.
    fn keep_results<'py>(
        slf: &State<'py>,
        results: Bound<'py, PyAny>,
        return_results: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !return_results {
            return Ok(slf.py().None().into_bound(slf.py()));
        }
        slf.borrow_mut().last_results = results.clone().unbind();
        Ok(results)
    }
}

/// The exit-time finalize of `setup(auto_finalize=True)` (an `atexit` callback).
#[pyclass(module = "scope_profiler._native", frozen)]
struct AutoFinalize {
    state: Py<ManagerState>,
}

#[pymethods]
impl AutoFinalize {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.state)
    }

    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let state = self.state.bind(py);
        state.borrow_mut().auto_finalize = py.None();
        if state.borrow().configured {
            let owner = get(state, |s| &s.owner);
            owner.call_method(
                "_finalize",
                (),
                Some(&kwargs(py, &[("close_open", true.into_pyobject(py)?.to_owned().into_any())])?),
            )?;
        }
        Ok(())
    }
}

/// Handle returned by `ProfileManager.setup`: its file, whether it is still the manager's
/// active run, its `finalize()` and the results that finalize returned.
#[pyclass(module = "scope_profiler._native")]
pub struct ProfilingRun {
    manager: Py<PyAny>,
    config: Py<PyAny>,
    file_path: Py<PyAny>,
    /// The results of `finalize()` (None before).
    #[pyo3(get, set)]
    results: Py<PyAny>,
    /// A hosted script's run (joined to `scope-profiler run`'s).
    #[pyo3(get, set, name = "_joined")]
    joined: bool,
}

#[pymethods]
impl ProfilingRun {
    /// The run of `manager` (a manager class) with configuration `config`, writing
    /// `output` (None: the configuration's `file_path`).
    #[new]
    #[pyo3(signature = (manager, config, output=None))]
    fn new(py: Python<'_>, manager: Py<PyAny>, config: Py<PyAny>, output: Option<Py<PyAny>>) -> Self {
        let output = output.filter(|o| o.bind(py).is_truthy().unwrap_or(false));
        let file_path = output
            .unwrap_or_else(|| config.bind(py).getattr("file_path").map(Bound::unbind).unwrap_or_else(|_| py.None()));
        ProfilingRun { manager, config, file_path, results: py.None(), joined: false }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.manager)?;
        visit.call(&self.config)?;
        visit.call(&self.results)
    }

    /// The file this run writes (`output=` or the configuration's `file_path`).
    #[getter]
    fn file_path(&self, py: Python<'_>) -> Py<PyAny> {
        self.file_path.clone_ref(py)
    }

    /// Whether this run is its manager's configuration and the manager is active.
    #[getter]
    fn is_active(&self, py: Python<'_>) -> PyResult<bool> {
        let manager = self.manager.bind(py);
        Ok(manager.getattr("_config")?.is(self.config.bind(py)) && manager.call_method0("is_active")?.is_truthy()?)
    }

    /// Finalize through the owning manager and keep the results (`return_results` defaults
    /// to True). `RuntimeError` when another `setup()` replaced this run; a write's
    /// `OSError` propagates after `results` is set to the run kept in memory.
    #[pyo3(signature = (**kwargs))]
    fn finalize(&mut self, py: Python<'_>, kwargs: Option<Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
        let manager = self.manager.bind(py).clone();
        if !manager.getattr("_config")?.is(self.config.bind(py)) {
            return Err(PyRuntimeError::new_err("this profiling run has been replaced"));
        }
        let kwargs = kwargs.unwrap_or_else(|| PyDict::new(py));
        if !kwargs.contains("return_results")? {
            kwargs.set_item("return_results", true)?;
        }
        match manager.call_method("finalize", (), Some(&kwargs)) {
            Ok(results) => {
                self.results = results.unbind();
                Ok(self.results.clone_ref(py))
            }
            Err(err) => {
                if err.is_instance_of::<pyo3::exceptions::PyOSError>(py) {
                    self.results = manager.call_method0("last_results")?.unbind();
                }
                Err(err)
            }
        }
    }
}

/// The context manager (and decorator) returned by `ProfileManager.session`: `setup()` at
/// entry, a root region around the body, `finalize()` (closing open calls) at exit, then the
/// tracker's hooks removed. Under `scope-profiler run` it joins the command line's run and
/// its exit writes a snapshot to the script's own output.
#[pyclass(module = "scope_profiler._native")]
pub struct ProfilingSession {
    #[pyo3(get, name = "_manager")]
    manager: Py<PyAny>,
    setup_kwargs: Py<PyDict>,
    verbose: bool,
    verbose_line_profiler: bool,
    return_results: bool,
    native_traces: Py<PyAny>,
    /// The results of the exit's finalize (with `return_results=True`; None before).
    #[pyo3(get, set)]
    results: Py<PyAny>,
    root_region: Option<Py<PyAny>>,
    joined: bool,
}

#[pymethods]
impl ProfilingSession {
    /// The name of the session's root region.
    #[classattr]
    const ROOT_REGION_NAME: &'static str = ROOT_REGION_NAME;

    /// A session of `manager` (a manager class): `setup(**setup_kwargs)` at entry, the exit's
    /// `finalize(verbose=, verbose_line_profiler=, return_results=, native_traces=)`.
    #[new]
    fn new(
        py: Python<'_>,
        manager: Py<PyAny>,
        setup_kwargs: Py<PyDict>,
        verbose: bool,
        verbose_line_profiler: bool,
        return_results: bool,
        native_traces: Py<PyAny>,
    ) -> Self {
        ProfilingSession {
            manager,
            setup_kwargs,
            verbose,
            verbose_line_profiler,
            return_results,
            native_traces,
            results: py.None(),
            root_region: None,
            joined: false,
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.manager)?;
        visit.call(&self.setup_kwargs)?;
        visit.call(&self.native_traces)?;
        visit.call(&self.results)?;
        if let Some(root) = &self.root_region {
            visit.call(root)?;
        }
        Ok(())
    }

    /// A fresh session with the same arguments (one per call of a decorated function).
    fn _recreate_cm(&self, py: Python<'_>) -> Self {
        let native_traces = self.native_traces.clone_ref(py);
        Self::new(
            py,
            self.manager.clone_ref(py),
            self.setup_kwargs.clone_ref(py),
            self.verbose,
            self.verbose_line_profiler,
            self.return_results,
            native_traces,
        )
    }

    /// Decorate `func` so each call runs in a fresh session; for `async def` the session
    /// spans the awaited coroutine, not just the call that creates it.
    fn __call__<'py>(slf: &Bound<'py, Self>, func: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        attr(slf.py(), "scope_profiler._manager", "_decorate_with_session")?.call1((slf, func))
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        let py = slf.py();
        let manager = slf.borrow().manager.clone_ref(py).into_bound(py);
        let kwargs = slf.borrow().setup_kwargs.clone_ref(py).into_bound(py);
        let run = manager.call_method("setup", (), Some(&kwargs))?;
        let joined = run.getattr("_joined").map(|j| j.is_truthy()).unwrap_or(Ok(false))?;
        // made here, not by the lookup: the user's `with` line is not the root's source
        let state = manager.getattr("_state")?.cast_into::<ManagerState>()?;
        let root = ManagerState::region_of(&state, PyString::new(py, ROOT_REGION_NAME).into_any(), None, false)?;
        {
            let mut s = slf.borrow_mut();
            s.joined = joined;
            s.root_region = Some(root.clone().unbind());
        }
        root.call_method0("__enter__")?;
        Ok(slf.clone())
    }

    fn __exit__(
        slf: &Bound<'_, Self>,
        exc_type: Bound<'_, PyAny>,
        exc_value: Bound<'_, PyAny>,
        traceback: Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let py = slf.py();
        let manager = slf.borrow().manager.clone_ref(py).into_bound(py);
        let root = slf
            .borrow()
            .root_region
            .as_ref()
            .map(|r| r.clone_ref(py).into_bound(py))
            .unwrap_or_else(|| py.None().into_bound(py));
        let joined = slf.borrow().joined;
        let exited = root.call_method1("__exit__", (exc_type, exc_value, traceback)).map(drop);
        let mut error = exited.err();
        let keep = |error: Option<PyErr>, next: PyResult<()>| match (error, next) {
            (earlier, Ok(())) => earlier,
            (None, Err(later)) => Some(later),
            (Some(earlier), Err(later)) => Some(crate::errors::raised_while_handling(py, later, earlier)),
        };
        if joined {
            // a session joined to `scope-profiler run`'s run: write the script's file (a
            // snapshot), leave the run, its hooks and streaming to the command line
            if error.is_none() {
                error = keep(None, Self::finish(slf, &manager, false));
            }
            let joins = manager.getattr("_joined")?;
            if joins.is_truthy()? {
                error = keep(error, joins.call_method0("pop").map(drop));
            }
        } else {
            // the flush thread ends first, so nothing recorded after the finalize below
            // starts a new sidecar; finalize reads back what it flushed
            error = keep(error, manager.getattr("_config").and_then(|c| stop_streaming(&c, false)));
            error = keep(error, Self::finish(slf, &manager, true));
            let uninstalled = (|| {
                let config = manager.getattr("_config")?;
                if !config.is_none() {
                    let tracker = config.getattr("tracker")?;
                    if !tracker.is_none() {
                        tracker.call_method0("uninstall")?;
                    }
                }
                Ok(())
            })();
            error = keep(error, uninstalled);
        }
        match error {
            Some(error) => Err(error),
            None => Ok(false),
        }
    }
}

impl ProfilingSession {
    /// The exit's finalize (`close_open`: the end of the recording); its results kept, or on
    /// an `OSError` (the file could not be written) the run kept in memory.
    fn finish(slf: &Bound<'_, Self>, manager: &Bound<'_, PyAny>, close_open: bool) -> PyResult<()> {
        let py = slf.py();
        let s = slf.borrow();
        let mut items = vec![
            ("verbose", s.verbose.into_pyobject(py)?.to_owned().into_any()),
            ("return_results", s.return_results.into_pyobject(py)?.to_owned().into_any()),
            ("native_traces", s.native_traces.clone_ref(py).into_bound(py)),
        ];
        if close_open {
            items.push(("close_open", true.into_pyobject(py)?.to_owned().into_any()));
            items.push(("verbose_line_profiler", s.verbose_line_profiler.into_pyobject(py)?.to_owned().into_any()));
        }
        drop(s);
        match manager.call_method("_finalize", (), Some(&kwargs(py, &items)?)) {
            Ok(results) => {
                slf.borrow_mut().results = results.unbind();
                Ok(())
            }
            Err(err) => {
                if close_open && err.is_instance_of::<pyo3::exceptions::PyOSError>(py) {
                    slf.borrow_mut().results = manager.call_method0("last_results")?.unbind();
                }
                Err(err)
            }
        }
    }
}

/// `check_script(path)`: `FileNotFoundError` ("no script at '...'") unless `path` (absolute)
/// is a file.
#[pyfunction]
fn check_script(path: &Bound<'_, PyString>) -> PyResult<()> {
    if std::path::Path::new(path.to_str()?).is_file() {
        return Ok(());
    }
    Err(pyo3::exceptions::PyFileNotFoundError::new_err(lifecycle::no_script(path.repr()?.to_str()?)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_script, m)?)?;
    m.add_class::<ManagerState>()?;
    m.add_class::<ProfilingRun>()?;
    m.add_class::<ProfilingSession>()?;
    m.add_function(wrap_pyfunction!(user_stacklevel, m)?)?;
    m.add_function(wrap_pyfunction!(render_output, m)?)?;
    m.add_function(wrap_pyfunction!(start_streaming, m)?)?;
    m.add_function(wrap_pyfunction!(stop_streaming, m)?)?;
    m.add_function(wrap_pyfunction!(stop_all_streaming, m)?)?;
    Ok(())
}
