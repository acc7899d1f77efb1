//! The rules `scope_profiler._manager` calls: where one manager class's run is in its
//! lifecycle and which of its regions record (`ManagerLifecycle`, over
//! [`scope_profiler_session::lifecycle`]) and the opt-in tags every manager shares. The
//! lifecycle itself (setup, finalize, reset, the session) is Python.
use std::collections::BTreeSet;
use std::sync::Mutex;

use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use scope_profiler_session::environment as env;
use scope_profiler_session::lifecycle::{self, Lifecycle};
use scope_profiler_session::settings::{self, Accepts};

/// Opt-in tags (`register_opt_in_tag`), shared by every manager.
static OPT_IN_TAGS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// `register_opt_in_tags(tags) -> list[str]`: make `tags` opt-in for every manager; the
/// ones that were not yet (the regions and decorators carrying one must be made again).
/// `TypeError` ("opt-in tags must be non-empty strings, got ...") for a tag that is not a
/// non-empty `str`, before any is registered.
#[pyfunction]
fn register_opt_in_tags(tags: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let mut names = Vec::with_capacity(tags.len());
    for tag in &tags {
        match tag.cast::<PyString>().ok().map(|s| s.to_string()).filter(|s| !s.is_empty()) {
            Some(name) => names.push(name),
            None => {
                return Err(PyTypeError::new_err(format!("opt-in tags must be non-empty strings, got {}", tag.repr()?)))
            }
        }
    }
    let mut opt_in = OPT_IN_TAGS.lock().map_err(|_| PyRuntimeError::new_err("opt-in tags poisoned"))?;
    Ok(lifecycle::register_opt_in(&mut opt_in, &names).into_iter().collect())
}

/// `carries_opt_in(new, tags) -> bool`: whether a region or decorator with `tags` is
/// affected by the newly opt-in tags `new` (`register_opt_in_tags`'s result).
#[pyfunction]
fn carries_opt_in(new: Vec<String>, tags: Vec<String>) -> bool {
    lifecycle::carries_any(&new.into_iter().collect(), &tags)
}

/// `check_set_up(set_up, action)`: `RuntimeError` ("ProfileManager.setup() must be called
/// before pause()") for `action` (`"pause"`, `"resume"`) unless `set_up`.
#[pyfunction]
fn check_set_up(set_up: bool, action: &str) -> PyResult<()> {
    if set_up {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(lifecycle::not_set_up(action)))
}

/// `check_run_current(current)`: `RuntimeError` ("this profiling run has been replaced")
/// unless the run is still its manager's configuration.
#[pyfunction]
fn check_run_current(current: bool) -> PyResult<()> {
    if current {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(lifecycle::RUN_REPLACED))
}

/// `check_region_tags(name, have, wanted)`: `ValueError` when region `name`, made with the
/// tags `have`, is asked for with other tags `wanted` (both tuples).
#[pyfunction]
fn check_region_tags(name: &Bound<'_, PyAny>, have: &Bound<'_, PyTuple>, wanted: &Bound<'_, PyTuple>) -> PyResult<()> {
    if have.eq(wanted)? {
        return Ok(());
    }
    let text = lifecycle::tags_conflict(name.repr()?.to_str()?, have.repr()?.to_str()?, wanted.repr()?.to_str()?);
    Err(PyValueError::new_err(text))
}

/// `check_region_definition(name, previous, definition)`: `ValueError` when `name` was
/// defined before (`previous`, None if not) as other than `definition` (`(functions, tags)`).
#[pyfunction]
fn check_region_definition(
    name: &Bound<'_, PyAny>,
    previous: &Bound<'_, PyAny>,
    definition: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if previous.is_none() || previous.eq(definition)? {
        return Ok(());
    }
    Err(PyValueError::new_err(lifecycle::defined_differently(name.repr()?.to_str()?)))
}

/// `check_script(path)`: `FileNotFoundError` ("no script at '...'") unless `path` (absolute)
/// is a file.
#[pyfunction]
fn check_script(path: &Bound<'_, PyString>) -> PyResult<()> {
    if std::path::Path::new(path.to_str()?).is_file() {
        return Ok(());
    }
    Err(PyFileNotFoundError::new_err(lifecycle::no_script(path.repr()?.to_str()?)))
}

/// `call_graph_warning(error) -> str`: the `RuntimeWarning` of a checkpoint whose calls do
/// not nest.
#[pyfunction]
fn call_graph_warning(error: &str) -> String {
    lifecycle::call_graph_not_recorded(error)
}

/// `calls_after_the_exit_finalize(calls, written) -> str | None`: the line at the
/// interpreter's exit when `calls` calls were made after the exit-time finalize (which wrote
/// `written`, or no file: None); None for none.
#[pyfunction]
#[pyo3(signature = (calls, written=None))]
fn calls_after_the_exit_finalize(calls: u64, written: Option<&str>) -> Option<String> {
    lifecycle::calls_after_the_exit_finalize(calls, written)
}

/// Where one manager class's run is (INACTIVE, ACTIVE, FINALIZED) and which of its regions
/// record: the run's enabled opt-in tags and its `setup(region_tags=...)` filter.
#[pyclass(module = "scope_profiler._native")]
#[derive(Default)]
pub struct ManagerLifecycle {
    lifecycle: Lifecycle,
    enabled_tags: BTreeSet<String>,
    region_tag_filter: Option<BTreeSet<String>>,
}

#[pymethods]
impl ManagerLifecycle {
    /// INACTIVE, no tag enabled, no filter.
    #[new]
    fn new() -> Self {
        ManagerLifecycle::default()
    }

    /// `"INACTIVE"`, `"ACTIVE"` or `"FINALIZED"`.
    #[getter]
    fn state(&self) -> &'static str {
        self.lifecycle.name()
    }

    /// Why `setup()` is refused (the `RuntimeError` message), or None: see
    /// [`lifecycle::setup_refusal`].
    fn setup_refusal(&self, hosted: bool, configured: bool, replace: bool, inherited: bool) -> Option<&'static str> {
        lifecycle::setup_refusal(hosted, configured, self.lifecycle, replace, inherited)
    }

    /// `setup(region_tags=...)` (None: no filter; else a `str` or an iterable of `str`,
    /// `TypeError` otherwise).
    fn filter_regions(&mut self, region_tags: &Bound<'_, PyAny>) -> PyResult<()> {
        self.region_tag_filter = match region_tags.is_none() {
            true => None,
            false => {
                let (tags, _) = crate::package::settings::setting_of(region_tags, Some(Accepts::Names))?;
                Some(settings::region_tags(&tags).map_err(crate::package::settings::raise)?.into_iter().collect())
            }
        };
        Ok(())
    }

    /// Whether `setup(region_tags=...)` filters the regions (untagged ones record nothing).
    #[getter]
    fn filtered(&self) -> bool {
        self.region_tag_filter.is_some()
    }

    /// A configuration is set up: ACTIVE (INACTIVE with `deactivate_profiling`); the run
    /// enables `enable_tags`, those of `SCOPE_PROFILER_ENABLE_TAGS` and the filter's.
    fn set_up(&mut self, deactivate_profiling: bool, enable_tags: Vec<String>) {
        self.lifecycle = Lifecycle::after_setup(deactivate_profiling);
        let from_env = env::enabled_tags_from_process_env();
        self.enabled_tags = lifecycle::enabled_tags(&enable_tags, &from_env, self.region_tag_filter.as_ref());
    }

    /// A finalize was done: FINALIZED.
    fn finalized(&mut self) {
        self.lifecycle = Lifecycle::Finalized;
    }

    /// `reset()`: INACTIVE, no tag enabled, no filter.
    fn reset(&mut self) {
        *self = ManagerLifecycle::default();
    }

    /// `is_active()`: `recording` (configured, profiling not deactivated) and set up.
    fn is_active(&self, recording: bool) -> bool {
        self.lifecycle.is_active(recording)
    }

    /// Whether a region with `tags` records in this run (filter, opt-in tags).
    fn records(&self, tags: Vec<String>) -> PyResult<bool> {
        let opt_in = OPT_IN_TAGS.lock().map_err(|_| PyRuntimeError::new_err("opt-in tags poisoned"))?;
        Ok(lifecycle::tags_record(self.region_tag_filter.as_ref(), &opt_in, &self.enabled_tags, &tags))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ManagerLifecycle>()?;
    m.add_function(wrap_pyfunction!(register_opt_in_tags, m)?)?;
    m.add_function(wrap_pyfunction!(carries_opt_in, m)?)?;
    for check in [
        wrap_pyfunction!(check_set_up, m)?,
        wrap_pyfunction!(check_run_current, m)?,
        wrap_pyfunction!(check_region_tags, m)?,
        wrap_pyfunction!(check_region_definition, m)?,
        wrap_pyfunction!(check_script, m)?,
        wrap_pyfunction!(call_graph_warning, m)?,
        wrap_pyfunction!(calls_after_the_exit_finalize, m)?,
    ] {
        m.add_function(check)?;
    }
    m.add("SESSION_ROOT_REGION", lifecycle::SESSION_ROOT_REGION)?;
    m.add("NO_STREAMING_UNDER_MPI", lifecycle::NO_STREAMING_UNDER_MPI)?;
    Ok(())
}
