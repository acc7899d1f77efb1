//! Backs `scope_profiler._settings`: the settings of `setup()` / `session()` checked by
//! [`scope_profiler_session::settings`] (names, defaults, the reference's validation), the
//! run metadata of [`scope_profiler_session::run_metadata`], and [`ProfilingConfigBase`],
//! the state and properties of `ProfilingConfig`. Here only Python values become
//! [`Setting`]s and the results Python objects.
use pyo3::exceptions::{
    PyAssertionError, PyAttributeError, PyNotImplementedError, PyOverflowError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_session::run_metadata::{self, FullDetails, HostFacts, Item, PythonFacts};
use scope_profiler_session::settings::{
    self as rules, Accepts, DefaultValue, ErrorKind, RunSettings, Setting, SettingsError, Value,
};

use crate::recording::NativeRecorder;

fn default_object(py: Python<'_>, value: DefaultValue) -> Bound<'_, PyAny> {
    match value {
        DefaultValue::None => py.None().into_bound(py),
        DefaultValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        DefaultValue::Int(i) => PyInt::new(py, i).into_any(),
        DefaultValue::Str(s) => PyString::new(py, s).into_any(),
    }
}

/// `setting_defaults() -> (defaults, own_defaults)`: the reference's settings with their
/// defaults, in its order, and this package's own; new dicts.
#[pyfunction]
fn setting_defaults(py: Python<'_>) -> PyResult<(Bound<'_, PyDict>, Bound<'_, PyDict>)> {
    let dict = |entries: &[(&str, DefaultValue)]| -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        for (name, value) in entries {
            d.set_item(name, default_object(py, *value))?;
        }
        Ok(d)
    };
    Ok((dict(&rules::DEFAULTS)?, dict(&rules::OWN_DEFAULTS)?))
}

pub(crate) fn raise(e: SettingsError) -> PyErr {
    match e.kind {
        ErrorKind::Type => PyTypeError::new_err(e.message),
        ErrorKind::Value => PyValueError::new_err(e.message),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(e.message),
        ErrorKind::Overflow => PyOverflowError::new_err(e.message),
    }
}

/// `v` as the rules read it, and the value kept for it: a path setting's `os.fspath()`
/// (`accepts` says which settings take a path, and which take names: a non-`str`
/// iterable's items are read once, and kept as a tuple).
pub(crate) fn setting_of<'py>(
    v: &Bound<'py, PyAny>,
    accepts: Option<Accepts>,
) -> PyResult<(Setting, Bound<'py, PyAny>)> {
    let repr = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unrepresentable object>".into());
    let mut kept = v.clone();
    let value = if v.is_none() {
        Value::None
    } else if let Ok(b) = v.cast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::BigInt { negative: v.lt(0)?, as_float: v.extract::<f64>().ok() },
        }
    } else if let Ok(f) = v.cast::<PyFloat>() {
        Value::Float(f.value())
    } else if let Ok(s) = v.cast::<PyString>() {
        Value::Str(s.to_string_lossy().into_owned())
    } else if accepts == Some(Accepts::Path) && v.hasattr("__fspath__")? {
        // os.fspath(): a str path is a path; bytes or anything else is refused by the rules
        let path = v.call_method0("__fspath__")?;
        match path.cast::<PyString>() {
            Ok(_) => {
                kept = path.clone();
                Value::Path(path.extract::<PathBuf>()?)
            }
            Err(_) => Value::Other,
        }
    } else if accepts == Some(Accepts::Names) && !v.is_instance_of::<PyBytes>() && v.try_iter().is_ok() {
        let items = v.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        let names = items.iter().map(|i| i.cast::<PyString>().ok().map(|s| s.to_string_lossy().into_owned()));
        let value = Value::Items(names.collect());
        kept = PyTuple::new(v.py(), items)?.into_any();
        value
    } else {
        Value::Other
    };
    Ok((Setting::new(value, repr), kept))
}

/// The settings of `settings` (keyword name -> value; `None` keeps the default) checked
/// ([`rules::validate`]), and every setting's value (a new dict, defaults order).
fn check_settings<'py>(settings: &Bound<'py, PyDict>) -> PyResult<(Bound<'py, PyDict>, RunSettings)> {
    let py = settings.py();
    let (mut given, mut kept) = (Vec::new(), Vec::new());
    for (key, v) in settings.iter() {
        let name: String = key.extract()?;
        let spec = rules::spec_of(&name);
        if v.is_none() && spec.is_some() {
            continue;
        }
        let (setting, value) = setting_of(&v, spec.map(|s| s.accepts))?;
        given.push((name.clone(), setting));
        kept.push((name, value));
    }
    let run = rules::validate(&given).map_err(raise)?;
    let values = PyDict::new(py);
    for (name, default) in rules::all_defaults() {
        values.set_item(name, default_object(py, default))?;
    }
    for (name, value) in kept {
        values.set_item(name, value)?;
    }
    Ok((values, run))
}

/// The process's host facts (system calls), read at the first configuration.
static HOST: pyo3::sync::PyOnceLock<HostFacts> = pyo3::sync::PyOnceLock::new();

fn host(py: Python<'_>) -> &'static HostFacts {
    HOST.get_or_init(py, || py.detach(HostFacts::read))
}

/// `unanswered_host_facts(full) -> list[str]`: the host facts of the run metadata that
/// system calls have no answer for, which `ProfilingConfigBase(answers, ...)` takes from
/// Python: `platform` (not glibc Linux) and `processor` (no CPU model name), and with `full`
/// (`metadata_detail="full"`) `uname`, and `user` / `hostname` when their system calls fail.
#[pyfunction]
fn unanswered_host_facts(py: Python<'_>, full: bool) -> Vec<&'static str> {
    let host = host(py);
    let mut names = Vec::new();
    names.extend(host.platform.is_none().then_some("platform"));
    names.extend(host.chip.is_none().then_some("processor"));
    if full {
        names.push("uname");
        names.extend(run_metadata::user_name().is_none().then_some("user"));
        names.extend(run_metadata::hostname().is_none().then_some("hostname"));
    }
    names
}

/// The run's metadata as in spec-hdf5 §2 (a serial run: `mpi_size = num_nodes = 1`;
/// `timestamp` now, in UTC), `detail="full"` adding `hostname`, `uname`,
/// `working_directory`, `user`, `modules` and the job's environment variables
/// ([`scope_profiler_session::run_metadata`]). The process-constant part (platform, CPU,
/// OpenMP threads) is read once per process by system calls; `answers` are Python's where
/// they have none ([`unanswered_host_facts`]; a missing answer reads `""`).
fn collect_metadata<'py>(
    py: Python<'py>,
    detail: &str,
    answers: &HashMap<String, String>,
) -> PyResult<Bound<'py, PyDict>> {
    let answer = |name: &str| answers.get(name).filter(|a| !a.is_empty()).cloned();
    let python = PythonFacts {
        // `sys.version` (`Py_GetVersion()`)'s first word
        python_version: Python::version_str().split_whitespace().next().unwrap_or("").to_string(),
        package_version: env!("CARGO_PKG_VERSION").to_string(),
        platform: answer("platform"),
        processor: answer("processor"),
    };
    let full = match detail == "full" {
        true => Some(FullDetails {
            hostname: run_metadata::hostname().or_else(|| answer("hostname")).unwrap_or_default(),
            uname: answer("uname").unwrap_or_default(),
            working_directory: std::env::current_dir()?.to_string_lossy().into_owned(),
            user: run_metadata::user_name().or_else(|| answer("user")).unwrap_or_default(),
            environment: std::env::vars_os()
                .map(|(n, v)| (n.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
                .collect(),
        }),
        false => None,
    };
    let metadata = PyDict::new(py);
    for (key, item) in run_metadata::collect(host(py), &python, full) {
        match item {
            Item::Text(s) => metadata.set_item(key, s)?,
            Item::Int(i) => metadata.set_item(key, i)?,
            Item::List(l) => metadata.set_item(key, l)?,
        }
    }
    Ok(metadata)
}

/// The state of one run's settings, the base of `scope_profiler._settings.ProfilingConfig`
/// (whose `start()` creates the recorder, the tracker and attaches MPI: Python's part).
/// `ProfilingConfigBase(answers={}, /, **settings)` checks `settings` ([`check_settings`]:
/// `TypeError`, `ValueError`, `NotImplementedError` in the reference's order and words),
/// takes the run origin (`start_time_ns`, ns on the recording clock) and collects the
/// metadata (`answers`: Python's answers to [`unanswered_host_facts`]). Settings
/// without a property of their own read as attributes (`config.recursive_profile`).
/// Subclassable (the subclass's instances take other attributes and weak references).
#[pyclass(module = "scope_profiler._native", subclass)]
pub struct ProfilingConfigBase {
    settings: Py<PyDict>,
    file_path: Py<PyAny>,
    run: RunSettings,
    start_time_ns: i64,
    metadata: Py<PyDict>,
    /// The run's recorder, once `start()` created it.
    #[pyo3(get, set, name = "_native")]
    native: Option<Py<NativeRecorder>>,
    #[pyo3(get, set, name = "_tracker")]
    tracker: Option<Py<PyAny>>,
    #[pyo3(get, set, name = "_comm")]
    comm: Option<Py<PyAny>>,
}

const NOT_STARTED: &str = "ProfilingConfig.start() was not called";

impl ProfilingConfigBase {
    fn setting<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        self.settings.bind(py).as_any().get_item(name)
    }

    fn started<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, NativeRecorder>> {
        self.native.as_ref().map(|n| n.bind(py)).ok_or_else(|| PyAssertionError::new_err(NOT_STARTED))
    }
}

#[pymethods]
impl ProfilingConfigBase {
    #[new]
    #[pyo3(signature = (answers=HashMap::new(), /, **settings))]
    fn new(py: Python<'_>, answers: HashMap<String, String>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (values, run) = check_settings(&settings.cloned().unwrap_or_else(|| PyDict::new(py)))?;
        // the run's origin, until mark_started() takes it where recording begins
        let start_time_ns = scope_profiler_recorder::now_ns();
        let detail: String = values.as_any().get_item("metadata_detail")?.extract()?;
        let metadata = collect_metadata(py, &detail, &answers)?;
        metadata.set_item("start_time_ns", start_time_ns)?;
        if let Some(label) = &run.label {
            metadata.set_item("label", label)?;
        }
        Ok(ProfilingConfigBase {
            file_path: values.as_any().get_item("file_path")?.unbind(),
            settings: values.unbind(),
            run,
            start_time_ns,
            metadata: metadata.unbind(),
            native: None,
            tracker: None,
            comm: None,
        })
    }

    /// Take the run's origin (`start_time_ns`) now, once the recorder, the metadata and the
    /// hooks are ready: the thread that called `setup()` starts at this same moment.
    /// `AssertionError` before `start()`.
    fn mark_started(&mut self, py: Python<'_>) -> PyResult<()> {
        self.start_time_ns = self.started(py)?.get().mark_start();
        self.metadata.bind(py).set_item("start_time_ns", self.start_time_ns)
    }

    /// Compatibility no-op (configurations are per manager).
    #[classmethod]
    fn reset(_cls: &Bound<'_, PyType>) {}

    /// Remaining settings read as attributes of the same name; `AttributeError` otherwise.
    fn __getattr__<'py>(slf: &Bound<'py, Self>, name: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyAny>> {
        let settings = slf.borrow().settings.clone_ref(slf.py());
        match settings.bind(slf.py()).get_item(name)? {
            Some(value) => Ok(value),
            None => Err(PyAttributeError::new_err(format!(
                "{} object has no attribute {}",
                slf.get_type().name()?.repr()?,
                name.repr()?
            ))),
        }
    }

    /// Every setting (name -> value, defaults order) as checked; the dict itself.
    #[getter(_settings)]
    fn settings_dict(&self, py: Python<'_>) -> Py<PyDict> {
        self.settings.clone_ref(py)
    }

    /// The HDF5 file recorded into (`os.fspath` of the `file_path` setting).
    #[getter]
    fn file_path(&self, py: Python<'_>) -> Py<PyAny> {
        self.file_path.clone_ref(py)
    }

    /// The run's label, None when unset or empty.
    #[getter]
    fn label(&self) -> Option<&str> {
        self.run.label.as_deref()
    }

    /// Whether threads get their own rows (`track_threads`, or `track_async`).
    #[getter]
    fn track_threads(&self) -> bool {
        self.run.track_threads
    }

    #[getter]
    fn track_async(&self) -> bool {
        self.run.track_async
    }

    /// The run's `ConcurrencyTracker`, or None when `track_threads` is off.
    #[getter]
    fn tracker(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.tracker.as_ref().map(|t| t.clone_ref(py))
    }

    /// The run's origin, ns on the recording clock (`time.perf_counter_ns()`'s).
    #[getter]
    fn start_time_ns(&self) -> i64 {
        self.start_time_ns
    }

    /// Calls kept per thread buffer before they are handed on (`buffer_limit`).
    #[getter]
    fn buffer_limit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.setting(py, "buffer_limit")
    }

    /// Seconds between appends to the sidecar (`flush_interval`), or None.
    #[getter]
    fn flush_interval(&self) -> Option<f64> {
        self.run.checked.flush_interval
    }

    #[getter]
    fn output_mode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.setting(py, "output_mode")
    }

    /// `hdf5_compression` normalized: lower case, None for off.
    #[getter]
    fn hdf5_compression(&self) -> Option<&'static str> {
        self.run.checked.hdf5_compression
    }

    #[getter]
    fn perf_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.run.perf_events)
    }

    #[getter]
    fn enable_tags<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.run.enable_tags)
    }

    #[getter]
    fn deactivate_profiling(&self, py: Python<'_>) -> PyResult<bool> {
        self.setting(py, "deactivate_profiling")?.is_truthy()
    }

    #[getter]
    fn deactivate_file_output(&self, py: Python<'_>) -> PyResult<bool> {
        self.setting(py, "deactivate_file_output")?.is_truthy()
    }

    /// Whether recording is paused. `AssertionError` before `start()`.
    #[getter]
    fn paused(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.started(py)?.get().paused())
    }

    /// The run's metadata (spec-hdf5 §2); the dict itself, which callers update in place.
    #[getter]
    fn metadata(&self, py: Python<'_>) -> Py<PyDict> {
        self.metadata.clone_ref(py)
    }

    /// MPI communicator (`MPI.COMM_WORLD`) of an MPI rank, else None.
    #[getter]
    fn comm(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.comm.as_ref().map(|c| c.clone_ref(py))
    }

    /// Always None (memray is not supported).
    #[getter]
    fn memory_profile_path(&self) -> Option<String> {
        None
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ProfilingConfig(file_path={}, track_threads={}, buffer_limit={})",
            self.file_path.bind(py).repr()?,
            if self.run.track_threads { "True" } else { "False" },
            self.setting(py, "buffer_limit")?.str()?
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.settings)?;
        visit.call(&self.file_path)?;
        visit.call(&self.metadata)?;
        visit.call(&self.native)?;
        visit.call(&self.tracker)?;
        visit.call(&self.comm)
    }

    fn __clear__(&mut self) {
        self.tracker = None;
        self.comm = None;
        self.native = None;
    }
}

/// `check_setting_names(names)`: `TypeError` naming the names of `names` (`setup()`'s
/// keywords) that are not settings.
#[pyfunction]
fn check_setting_names(names: &Bound<'_, PyAny>) -> PyResult<()> {
    let names = names.try_iter()?.map(|n| n?.extract::<String>()).collect::<PyResult<Vec<_>>>()?;
    let unknown: Vec<&String> = names.iter().filter(|n| !rules::is_setting(n)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(PyTypeError::new_err(rules::unknown_settings_message(&unknown)))
}

/// `output_settings(output, overrides) -> dict`: what `setup(output=output)` sets
/// ([`rules::output_settings`]; `output` checked by [`rules::output_path`]).
#[pyfunction]
fn output_settings<'py>(output: &Bound<'py, PyAny>, overrides: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let py = overrides.py();
    let requested = match output.is_none() {
        true => None,
        false => Some(rules::output_path(&setting_of(output, Some(Accepts::Path))?.0).map_err(raise)?),
    };
    let mut given = Vec::new();
    for name in ["file_path", "deactivate_file_output"] {
        if overrides.get_item(name)?.is_some_and(|v| !v.is_none()) {
            given.push(name);
        }
    }
    let (file_path, deactivate) = rules::output_settings(requested.as_deref(), &given).map_err(raise)?;
    let out = PyDict::new(py);
    if let Some(path) = file_path {
        out.set_item("file_path", path.into_os_string())?;
    }
    out.set_item("deactivate_file_output", deactivate)?;
    Ok(out)
}

/// `relative_source_path(filename, sys_path) -> str`: how `metadata_detail="minimal"`
/// records a source file: relative to the working directory, else to the deepest entry of
/// `sys_path` (`sys.path`; entries that are not paths are skipped) containing it, else its
/// base name ([`run_metadata::relative_source_path`]). `OSError` when the working
/// directory is gone.
#[pyfunction]
fn relative_source_path(filename: &str, sys_path: Vec<Bound<'_, PyAny>>) -> PyResult<String> {
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let entries: Vec<String> = sys_path
        .iter()
        .filter_map(|entry| entry.extract::<PathBuf>().ok())
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    Ok(run_metadata::relative_source_path(filename, &cwd, &entries))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(relative_source_path, m)?)?;
    m.add_function(wrap_pyfunction!(check_setting_names, m)?)?;
    m.add_function(wrap_pyfunction!(output_settings, m)?)?;
    m.add_function(wrap_pyfunction!(setting_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(unanswered_host_facts, m)?)?;
    m.add_class::<ProfilingConfigBase>()?;
    Ok(())
}
