//! Backs `scope_profiler._settings`: the settings of `setup()` / `session()` checked by
//! [`scope_profiler_finalize::settings`] (names, defaults, the reference's validation).
//! Here only Python values become [`Setting`]s and the results Python objects.
use pyo3::exceptions::{PyNotImplementedError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use scope_profiler_finalize::run_metadata::{self, FullDetails, HostFacts, Item, PythonFacts};
use scope_profiler_finalize::settings::{self as rules, DefaultValue, ErrorKind, Setting, SettingsError, Value};

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

/// `check_settings(settings) -> (values, hdf5_compression, flush_interval, perf_events,
/// enable_tags)`: `settings` (keyword name -> value) over the defaults (a `None` value
/// keeps the default), checked in the reference's order and words. `values`: every setting
/// (a new dict, defaults order); `hdf5_compression` normalized (lower case, None for off);
/// `flush_interval` in seconds or None; `perf_events` / `enable_tags` as tuples. Raises
/// `TypeError` for unknown names, `ValueError` for a refused value or combination,
/// `NotImplementedError` for a mode this package does not have.
#[pyfunction]
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

/// `collect_metadata(detail="minimal") -> dict`: the run's metadata as in spec-hdf5 §2 (a
/// serial run: `mpi_size = num_nodes = 1`; `timestamp` now, in UTC), `detail="full"` adding
/// `hostname`, `uname`, `working_directory`, `user`, `modules` and the job's environment
/// variables ([`scope_profiler_finalize::run_metadata`]). The process-constant part
/// (platform, CPU, versions, OpenMP threads) is read once per process by system calls.
#[pyfunction]
#[pyo3(signature = (detail = "minimal"))]
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
    m.add_function(wrap_pyfunction!(collect_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(setting_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(unknown_setting_error, m)?)?;
    m.add_function(wrap_pyfunction!(check_settings, m)?)?;
    Ok(())
}
