//! The package's own rules, reached through thin functions (the decisions are
//! `scope_profiler_session`'s).
//!
//! * [`init`]: the names of `__init__.py` loaded on first use;
//! * [`manager`]: `_manager.py`'s lifecycle and opt-in tags;
//! * [`manager_api`]: `_manager_api.py` (region handles and factories, `instrument()`,
//!   `pause()`, `sample_every()`);
//! * [`settings`]: `_settings.py` (`ProfilingConfigBase`, the settings checked);
//! * [`options`]: `_options.py` (option bags and settings files as flat settings);
//! * [`environment`]: what the environment asks of a run;
//! * [`mpi`]: `_mpi.py`'s decisions and texts;
//! * [`cli`]: `_cli.py`, the console script (`cli_main`, the end of `run`);
//! * [`follow`]: `_follow.py`, the processes `run` follows;
//! * [`sigterm_guard`]: the guard in front of `run`'s SIGTERM handlers.
use pyo3::prelude::*;

pub mod cli;
pub mod environment;
pub mod follow;
pub mod init;
pub mod manager;
pub mod manager_api;
pub mod mpi;
pub mod options;
pub mod settings;
pub mod sigterm_guard;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init::register(m)?;
    cli::register(m)?;
    manager::register(m)?;
    manager_api::register(m)?;
    mpi::register(m)?;
    environment::register(m)?;
    follow::register(m)?;
    settings::register(m)?;
    sigterm_guard::register(m)?;
    options::register(m)?;
    Ok(())
}
