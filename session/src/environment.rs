//! What the environment asks of a run: `setup_from_env()`'s variables, the opt-in tags
//! `SCOPE_PROFILER_ENABLE_TAGS` enables, and whether the process is an MPI rank (the
//! reference's `mpi_launch`). Read from the process environment, which Python's
//! `os.environ` writes through to.

/// `setup_from_env()`: the TOML settings file (`config_path`).
pub const ENV_CONFIG: &str = "SCOPE_PROFILER_CONFIG";
/// `setup_from_env()`: `output=`.
pub const ENV_OUTPUT: &str = "SCOPE_PROFILER_OUTPUT";
/// `setup_from_env()`: `recursive_profile` (a boolean variable).
pub const ENV_RECURSIVE: &str = "SCOPE_PROFILER_RECURSIVE";
/// `setup_from_env()`: `auto_finalize` (a boolean variable).
pub const ENV_AUTO_FINALIZE: &str = "SCOPE_PROFILER_AUTO_FINALIZE";
/// Opt-in tags every run enables (comma-separated; `*`: all).
pub const ENABLE_TAGS_ENV: &str = "SCOPE_PROFILER_ENABLE_TAGS";
/// Per-process variables set by the common MPI launchers (the reference's
/// `LAUNCHER_ENV_VARS`).
pub const LAUNCHER_ENV_VARS: [&str; 7] = [
    "OMPI_COMM_WORLD_RANK", // Open MPI
    "PMI_RANK",             // MPICH, Intel MPI, Cray, srun (pmi2)
    "PMIX_RANK",            // PMIx (srun --mpi=pmix, Open MPI 5)
    "MV2_COMM_WORLD_RANK",  // MVAPICH2
    "MPI_LOCALRANKID",      // Hydra
    "ALPS_APP_PE",          // Cray ALPS
    "PALS_RANKID",          // Cray PALS
];
/// `SCOPE_PROFILER_MPI=0/1` (also false/true, no/yes, off/on) decides over the launchers.
pub const MPI_OVERRIDE_ENV: &str = "SCOPE_PROFILER_MPI";

use crate::settings::is_py_space;

fn var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// A `setup_from_env()` boolean: true for 1/true/yes/on (any case), false for any other
/// value, None when unset.
pub fn env_bool(value: Option<&str>) -> Option<bool> {
    value.map(|v| ["1", "true", "yes", "on"].contains(&v.to_lowercase().as_str()))
}

/// A `setup()` keyword `setup_from_env()` takes from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSetting {
    /// A path or file name.
    Text(String),
    /// A boolean variable.
    Flag(bool),
}

/// `setup_from_env()`'s keywords from the environment, in this order (each used unless
/// given as a keyword): `output` (`SCOPE_PROFILER_OUTPUT`), `recursive_profile`
/// (`SCOPE_PROFILER_RECURSIVE`), `auto_finalize` (`SCOPE_PROFILER_AUTO_FINALIZE`),
/// `config_path` (`SCOPE_PROFILER_CONFIG`); unset variables are left out.
pub fn setup_from_env(get: impl Fn(&str) -> Option<String>) -> Vec<(&'static str, EnvSetting)> {
    let mut out = Vec::new();
    if let Some(output) = get(ENV_OUTPUT) {
        out.push(("output", EnvSetting::Text(output)));
    }
    if let Some(on) = env_bool(get(ENV_RECURSIVE).as_deref()) {
        out.push(("recursive_profile", EnvSetting::Flag(on)));
    }
    if let Some(on) = env_bool(get(ENV_AUTO_FINALIZE).as_deref()) {
        out.push(("auto_finalize", EnvSetting::Flag(on)));
    }
    if let Some(path) = get(ENV_CONFIG) {
        out.push(("config_path", EnvSetting::Text(path)));
    }
    out
}

/// [`setup_from_env`] of this process's environment.
pub fn setup_from_process_env() -> Vec<(&'static str, EnvSetting)> {
    setup_from_env(var)
}

/// The tags `SCOPE_PROFILER_ENABLE_TAGS` enables: its comma-separated entries, stripped,
/// empty ones left out.
pub fn enabled_tags(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or("")
        .split(',')
        .map(|t| t.trim_matches(is_py_space))
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

/// [`enabled_tags`] of this process's environment.
pub fn enabled_tags_from_process_env() -> Vec<String> {
    enabled_tags(var(ENABLE_TAGS_ENV).as_deref())
}

/// Whether the environment makes this process an MPI rank: `SCOPE_PROFILER_MPI` when it
/// says yes or no (`1`/`true`/`yes`/`on`, `0`/`false`/`no`/`off`, any case and blanks
/// around; other values are ignored), else true when a launcher variable is set; None when
/// neither (the caller asks whether `mpi4py.MPI` is initialised).
pub fn mpi_launch(get: impl Fn(&str) -> Option<String>) -> Option<bool> {
    if let Some(value) = get(MPI_OVERRIDE_ENV) {
        let value = value.trim_matches(is_py_space).to_lowercase();
        if ["1", "true", "yes", "on"].contains(&value.as_str()) {
            return Some(true);
        }
        if ["0", "false", "no", "off"].contains(&value.as_str()) {
            return Some(false);
        }
    }
    LAUNCHER_ENV_VARS.iter().any(|name| get(name).is_some()).then_some(true)
}

/// [`mpi_launch`] of this process's environment.
pub fn mpi_launch_from_process_env() -> Option<bool> {
    mpi_launch(var)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name: &str| map.get(name).cloned()
    }

    #[test]
    fn setup_from_env_reads_the_references_variables() {
        assert_eq!(setup_from_env(env(&[])), []);
        let got = setup_from_env(env(&[
            (ENV_CONFIG, "p.toml"),
            (ENV_RECURSIVE, "No"),
            (ENV_AUTO_FINALIZE, "YES"),
            (ENV_OUTPUT, "o.h5"),
        ]));
        assert_eq!(
            got,
            [
                ("output", EnvSetting::Text("o.h5".into())),
                ("recursive_profile", EnvSetting::Flag(false)),
                ("auto_finalize", EnvSetting::Flag(true)),
                ("config_path", EnvSetting::Text("p.toml".into())),
            ]
        );
        assert_eq!(env_bool(Some("")), Some(false));
        assert_eq!(env_bool(Some("On")), Some(true));
    }

    #[test]
    fn enable_tags_list() {
        assert_eq!(enabled_tags(Some(" a, ,b,")), ["a", "b"]);
        assert!(enabled_tags(None).is_empty());
    }

    #[test]
    fn mpi_detection_as_the_reference() {
        assert_eq!(mpi_launch(env(&[])), None);
        assert_eq!(mpi_launch(env(&[("PMI_RANK", "0")])), Some(true));
        assert_eq!(mpi_launch(env(&[("PMI_RANK", "0"), (MPI_OVERRIDE_ENV, " Off ")])), Some(false));
        assert_eq!(mpi_launch(env(&[(MPI_OVERRIDE_ENV, "yes")])), Some(true));
        assert_eq!(mpi_launch(env(&[(MPI_OVERRIDE_ENV, "maybe")])), None);
        assert_eq!(mpi_launch(env(&[(MPI_OVERRIDE_ENV, "maybe"), ("PALS_RANKID", "")])), Some(true));
    }
}
