//! Backs `scope_profiler._settings`: the settings of `setup()` / `session()` checked by
//! [`scope_profiler_session::settings`] (names, defaults, the reference's validation), the
//! run metadata of [`scope_profiler_session::run_metadata`], and [`ProfilingConfigBase`],
//! the state and properties of `ProfilingConfig`. Here only Python values become
//! [`Setting`]s and the results Python objects.
use pyo3::exceptions::{
    PyAssertionError, PyAttributeError, PyNotImplementedError, PyOverflowError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_session::run_metadata::{self, FullDetails, HostFacts, Item, PythonFacts};
use scope_profiler_session::settings::{self as rules, DefaultValue, ErrorKind, Setting, SettingsError, Value};

use crate::recording::NativeRecorder;

/// Settings whose truth value the checks use (`bool(value)` is asked of these only).
const FLAGS: [&str; 12] = [
    "gpu_sync_on_exit",
    "use_gpu_timing",
    "use_line_profiler",
    "use_likwid",
    "use_nvtx",
    "aggregation_mode",
    "track_threads",
    "track_async",
    "use_memray",
    "profile_mpi_calls",
    "deactivate_file_output",
    "deactivate_profiling",
];

/// Settings a message may show (`repr(value)` is asked of these only).
const SHOWN: [&str; 5] =
    ["hdf5_compression", "output_mode", "metadata_detail", "recursive_call_limit", "flush_interval"];

fn default_object(py: Python<'_>, value: DefaultValue) -> Bound<'_, PyAny> {
    match value {
        DefaultValue::None => py.None().into_bound(py),
        DefaultValue::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
        DefaultValue::Int(i) => PyInt::new(py, i).into_any(),
        DefaultValue::Str(s) => PyString::new(py, s).into_any(),
    }
}

/// `setting_defaults() -> (defaults, own_defaults)`: the reference's 29 settings with their
/// defaults, in its `ProfilingConfig.__init__` order, and this package's own (`flush_interval`,
/// the `recursive_*` options); new dicts.
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

/// `unknown_setting_error(names) -> str`: the reference's message for unknown setting
/// names (any iterable of str; sorted, each with the closest setting name when one is close, as
/// `difflib.get_close_matches` finds it).
#[pyfunction]
fn unknown_setting_error(names: &Bound<'_, PyAny>) -> PyResult<String> {
    let names = names.try_iter()?.map(|n| n?.extract::<String>()).collect::<PyResult<Vec<_>>>()?;
    Ok(rules::unknown_settings_message(&names))
}

pub(crate) fn raise(e: SettingsError) -> PyErr {
    match e.kind {
        ErrorKind::Type => PyTypeError::new_err(e.message),
        ErrorKind::Value => PyValueError::new_err(e.message),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(e.message),
        ErrorKind::Overflow => PyOverflowError::new_err(e.message),
    }
}

fn value_of(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    Ok(if v.is_none() {
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
    } else {
        Value::Other
    })
}

/// A str as a 1-tuple, a false value as `()`, any other iterable as a tuple.
fn as_tuple<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let py = v.py();
    if v.is_instance_of::<PyString>() {
        PyTuple::new(py, [v])
    } else if !v.is_truthy()? {
        Ok(PyTuple::empty(py))
    } else {
        PyTuple::new(py, v.try_iter()?.collect::<PyResult<Vec<_>>>()?)
    }
}

/// The settings' values as [`check`](rules::check) reads them.
type Checked<'py> = (Bound<'py, PyDict>, Option<&'static str>, Option<f64>, Bound<'py, PyTuple>, Bound<'py, PyTuple>);

/// `(values, hdf5_compression, flush_interval, perf_events, enable_tags)` of `settings`
/// (keyword name -> value) over the defaults (a `None` value keeps the default), checked in
/// the reference's order and words. `values`: every setting
/// (a new dict, defaults order); `hdf5_compression` normalized (lower case, None for off);
/// `flush_interval` in seconds or None; `perf_events` / `enable_tags` as tuples. Raises
/// `TypeError` for unknown names, `ValueError` for a refused value or combination,
/// `NotImplementedError` for a mode this package does not have.
fn check_settings<'py>(settings: &Bound<'py, PyDict>) -> PyResult<Checked<'py>> {
    let py = settings.py();
    let mut unknown = Vec::new();
    for key in settings.keys() {
        let name = key.extract::<String>()?;
        if !rules::is_setting(&name) {
            unknown.push(name);
        }
    }
    if !unknown.is_empty() {
        return Err(PyTypeError::new_err(rules::unknown_settings_message(&unknown)));
    }
    let values = PyDict::new(py);
    for (name, default) in rules::all_defaults() {
        match settings.get_item(name)? {
            Some(given) if !given.is_none() => values.set_item(name, given)?,
            _ => values.set_item(name, default_object(py, default))?,
        }
    }
    let item = |name: &str| values.get_item(name).map(|v| v.unwrap_or_else(|| py.None().into_bound(py)));
    let perf_events = as_tuple(&item("perf_events")?)?;
    let enable_tags = as_tuple(&item("enable_tags")?)?;
    let mut read = std::collections::HashMap::new();
    for (name, _) in rules::all_defaults() {
        let v = item(name)?;
        let truthy = if FLAGS.contains(&name) { v.is_truthy()? } else { false };
        let repr = if SHOWN.contains(&name) { v.repr()?.to_string() } else { String::new() };
        read.insert(name, Setting { value: value_of(&v)?, truthy, repr });
    }
    let checked = rules::check(|name| read[name].clone(), !perf_events.is_empty()).map_err(raise)?;
    Ok((values, checked.hdf5_compression, checked.flush_interval, perf_events, enable_tags))
}

/// The process's host facts, read at the first `collect_metadata()`, with Python's answers
/// where the system calls have none (`platform.platform()`, `platform.processor()`).
static HOST: pyo3::sync::PyOnceLock<(HostFacts, PythonFacts)> = pyo3::sync::PyOnceLock::new();

fn host_and_python(py: Python<'_>) -> PyResult<&'static (HostFacts, PythonFacts)> {
    HOST.get_or_try_init(py, || {
        let host = py.detach(HostFacts::read);
        let sys = py.import("sys")?;
        let version: String = sys.getattr("version")?.extract()?;
        let mut python = PythonFacts {
            python_version: version.split_whitespace().next().unwrap_or("").to_string(),
            package_version: env!("CARGO_PKG_VERSION").to_string(),
            ..PythonFacts::default()
        };
        if host.platform.is_none() {
            python.platform = Some(py.import("platform")?.call_method0("platform")?.extract()?);
        }
        if host.chip.is_none() {
            let platform = py.import("platform")?;
            let processor: String = platform.call_method0("processor")?.extract()?;
            let machine: String = platform.call_method0("machine")?.extract()?;
            python.processor = [processor, machine].into_iter().find(|s| !s.is_empty());
        }
        Ok((host, python))
    })
}

/// The run's metadata as in spec-hdf5 §2 (a serial run: `mpi_size = num_nodes = 1`;
/// `timestamp` now, in UTC), `detail="full"` adding `hostname`, `uname`,
/// `working_directory`, `user`, `modules` and the job's environment variables
/// ([`scope_profiler_session::run_metadata`]). The process-constant part
/// (platform, CPU, versions, OpenMP threads) is read once per process by system calls.
fn collect_metadata<'py>(py: Python<'py>, detail: &str) -> PyResult<Bound<'py, PyDict>> {
    let (host, python) = host_and_python(py)?;
    let full = if detail == "full" {
        let platform = py.import("platform")?;
        let uname: Vec<String> =
            platform.call_method0("uname")?.try_iter()?.map(|p| p?.extract()).collect::<PyResult<_>>()?;
        let user = match run_metadata::user_name() {
            Some(user) => user,
            None => py.import("getpass")?.call_method0("getuser")?.extract()?,
        };
        let hostname = match run_metadata::hostname() {
            Some(name) => name,
            None => py.import("socket")?.call_method0("gethostname")?.extract()?,
        };
        Some(FullDetails {
            hostname,
            uname: uname.join(" "),
            working_directory: std::env::current_dir()?.to_string_lossy().into_owned(),
            user,
            environment: std::env::vars_os()
                .map(|(n, v)| (n.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
                .collect(),
        })
    } else {
        None
    };
    let metadata = PyDict::new(py);
    for (key, item) in run_metadata::collect(host, python, full) {
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
/// `ProfilingConfigBase(**settings)` checks `settings` ([`check_settings`]: `TypeError`,
/// `ValueError`, `NotImplementedError` in the reference's order and words), takes the run
/// origin (`start_time_ns`, ns on the recording clock) and collects the metadata. Settings
/// without a property of their own read as attributes (`config.recursive_profile`).
/// Subclassable (the subclass's instances take other attributes and weak references).
#[pyclass(module = "scope_profiler._native", subclass)]
pub struct ProfilingConfigBase {
    settings: Py<PyDict>,
    file_path: Py<PyAny>,
    label: Option<Py<PyAny>>,
    hdf5_compression: Option<&'static str>,
    flush_interval: Option<f64>,
    perf_events: Py<PyTuple>,
    enable_tags: Py<PyTuple>,
    track_threads: bool,
    track_async: bool,
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
    #[pyo3(signature = (**settings))]
    fn new(py: Python<'_>, settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let given = settings.cloned().unwrap_or_else(|| PyDict::new(py));
        let (values, hdf5_compression, flush_interval, perf_events, enable_tags) = check_settings(&given)?;
        // the run's origin, until mark_started() takes it where recording begins
        let start_time_ns = scope_profiler_recorder::now_ns();
        let item = |name: &str| values.as_any().get_item(name);
        let file_path = item("file_path")?;
        // os.fspath(): a str or bytes path as is, a PathLike's __fspath__(), else TypeError.
        // SAFETY: attached to the interpreter; PyOS_FSPath returns a new reference or NULL
        // with an exception set, which from_owned_ptr_or_err takes over.
        let file_path = unsafe { Bound::from_owned_ptr_or_err(py, pyo3::ffi::PyOS_FSPath(file_path.as_ptr()))? };
        let track_async = item("track_async")?.is_truthy()?;
        let track_threads = item("track_threads")?.is_truthy()? || track_async;
        let metadata = collect_metadata(py, &item("metadata_detail")?.extract::<String>()?)?;
        metadata.set_item("start_time_ns", start_time_ns)?;
        let label = item("label")?;
        let label = if label.is_truthy()? { Some(label) } else { None };
        if let Some(label) = &label {
            metadata.set_item("label", label)?;
        }
        Ok(ProfilingConfigBase {
            settings: values.unbind(),
            file_path: file_path.unbind(),
            label: label.map(Bound::unbind),
            hdf5_compression,
            flush_interval,
            perf_events: perf_events.unbind(),
            enable_tags: enable_tags.unbind(),
            track_threads,
            track_async,
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
    fn label(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.label.as_ref().map(|l| l.clone_ref(py))
    }

    /// Whether threads get their own rows (`track_threads`, or `track_async`).
    #[getter]
    fn track_threads(&self) -> bool {
        self.track_threads
    }

    #[getter]
    fn track_async(&self) -> bool {
        self.track_async
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
        self.flush_interval
    }

    #[getter]
    fn output_mode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.setting(py, "output_mode")
    }

    /// `hdf5_compression` normalized: lower case, None for off.
    #[getter]
    fn hdf5_compression(&self) -> Option<&'static str> {
        self.hdf5_compression
    }

    #[getter]
    fn perf_events(&self, py: Python<'_>) -> Py<PyTuple> {
        self.perf_events.clone_ref(py)
    }

    #[getter]
    fn enable_tags(&self, py: Python<'_>) -> Py<PyTuple> {
        self.enable_tags.clone_ref(py)
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
            if self.track_threads { "True" } else { "False" },
            self.setting(py, "buffer_limit")?.str()?
        ))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.settings)?;
        visit.call(&self.file_path)?;
        visit.call(&self.label)?;
        visit.call(&self.perf_events)?;
        visit.call(&self.enable_tags)?;
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

/// `check_setting_names(names)`: `TypeError` with the reference's message
/// ([`rules::unknown_settings_message`]) when any of `names` (an iterable of str, e.g. the
/// keywords of `setup()`) is not a setting.
#[pyfunction]
fn check_setting_names(names: &Bound<'_, PyAny>) -> PyResult<()> {
    let names = names.try_iter()?.map(|n| n?.extract::<String>()).collect::<PyResult<Vec<_>>>()?;
    let unknown: Vec<&String> = names.iter().filter(|n| !rules::is_setting(n)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(PyTypeError::new_err(rules::unknown_settings_message(&unknown)))
}

/// `output_settings(output, overrides) -> dict`: the settings `setup(output=output)` sets
/// (`output`: a path, or None for no file): `deactivate_file_output`, and for a path
/// `file_path`, the HDF5 file recorded into (`output` itself, or
/// `<output>.scope-profiler.h5` for a JSON profile or an HTML report, rendered to `output`
/// after each finalize). `TypeError` when `overrides` also sets `file_path` or
/// `deactivate_file_output` (not to None).
#[pyfunction]
fn output_settings<'py>(
    output: Option<std::path::PathBuf>,
    overrides: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = overrides.py();
    let mut given = Vec::new();
    for name in ["file_path", "deactivate_file_output"] {
        if overrides.get_item(name)?.is_some_and(|v| !v.is_none()) {
            given.push(name);
        }
    }
    let (file_path, deactivate) = rules::output_settings(output.as_deref(), &given).map_err(raise)?;
    let out = PyDict::new(py);
    if let Some(path) = file_path {
        out.set_item("file_path", path.to_string_lossy().into_owned())?;
    }
    out.set_item("deactivate_file_output", deactivate)?;
    Ok(out)
}

/// `relative_source_path(filename) -> str`: how `metadata_detail="minimal"` records a
/// source file: relative to the working directory, else to the deepest `sys.path` entry
/// containing it, else its base name ([`run_metadata::relative_source_path`]). `OSError`
/// when the working directory is gone.
#[pyfunction]
fn relative_source_path(py: Python<'_>, filename: &str) -> PyResult<String> {
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let mut entries = Vec::new();
    for entry in py.import("sys")?.getattr("path")?.try_iter()? {
        if let Ok(path) = entry?.extract::<std::path::PathBuf>() {
            entries.push(path.to_string_lossy().into_owned());
        }
    }
    Ok(run_metadata::relative_source_path(filename, &cwd, &entries))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(relative_source_path, m)?)?;
    m.add_function(wrap_pyfunction!(check_setting_names, m)?)?;
    m.add_function(wrap_pyfunction!(output_settings, m)?)?;
    m.add_function(wrap_pyfunction!(setting_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(unknown_setting_error, m)?)?;
    m.add_class::<ProfilingConfigBase>()?;
    Ok(())
}
