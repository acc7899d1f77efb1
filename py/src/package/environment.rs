//! What the environment asks of a run ([`scope_profiler_session::environment`]), for
//! `_manager_api.setup_from_env`, the opt-in tags of `_manager` and `_mpi`'s launch
//! detection.
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use scope_profiler_session::environment::{self as env, EnvSetting};

/// `setup_from_env_settings() -> [(keyword, value), ...]`: the `setup()` keywords
/// `setup_from_env()` takes from `SCOPE_PROFILER_OUTPUT` (`output`), `_RECURSIVE`
/// (`recursive_profile`), `_AUTO_FINALIZE` (`auto_finalize`; booleans: true for
/// 1/true/yes/on, any case) and `_CONFIG` (`config_path`), in that order, unset ones left out.
#[pyfunction]
pub(crate) fn setup_from_env_settings(py: Python<'_>) -> PyResult<Vec<(&'static str, Bound<'_, PyAny>)>> {
    env::setup_from_process_env()
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                EnvSetting::Text(t) => t.into_pyobject(py)?.into_any(),
                EnvSetting::Flag(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
            };
            Ok((name, value))
        })
        .collect()
}

/// `enabled_tags_from_env() -> list[str]`: the opt-in tags `SCOPE_PROFILER_ENABLE_TAGS`
/// enables (comma-separated, stripped; `"*"`: every tag).
#[pyfunction]
fn enabled_tags_from_env() -> Vec<String> {
    env::enabled_tags_from_process_env()
}

/// `mpi_launch_from_env() -> bool | None`: whether the environment makes this process an
/// MPI rank (`SCOPE_PROFILER_MPI` when it says yes or no, else a launcher's variable
/// set); None when it does not say (then `mpi4py.MPI`, if loaded, decides).
#[pyfunction]
fn mpi_launch_from_env() -> Option<bool> {
    env::mpi_launch_from_process_env()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(setup_from_env_settings, m)?)?;
    m.add_function(wrap_pyfunction!(enabled_tags_from_env, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_launch_from_env, m)?)?;
    m.add("MPI_LAUNCHER_ENV_VARS", PyTuple::new(m.py(), env::LAUNCHER_ENV_VARS)?)?;
    m.add("MPI_OVERRIDE_ENV", env::MPI_OVERRIDE_ENV)?;
    Ok(())
}
