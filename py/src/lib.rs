//! `scope_profiler._native`: the Rust side of the `scope_profiler` Python package, in folders
//! that follow the Python modules they back (the file is named after the module, without its
//! leading underscore):
//!
//! * [`results`]: the results side, `results.py` (`ProfilingResults`, `merge_results`),
//!   `region.py`, `mpi_region.py`, `call_stack.py`, `concurrency.py`, and the frames and
//!   events of a run;
//! * [`recording`]: what `profile_manager` records through: regions, `@profile`, the
//!   recorder's native state, task lanes, streaming, `_tracer.py`, `_metadata.py`;
//! * [`hooks`]: the process-wide hooks, `_asyncio_hooks.py`, `_greenlet_hooks.py`,
//!   `_tracking.py`, `_fork.py`;
//! * [`package`]: the package's own rules, `__init__.py` (`init`), `_manager.py`,
//!   `_manager_api.py`, `_settings.py`, `_options.py`, `_mpi.py`, `_cli.py`, `_follow.py`,
//!   and the SIGTERM guard of `run`;
//! * [`io`]: files and bytes, `h5reader.py`, `profile_io.py`, `native_trace.py`, the
//!   exporters (`exports.py` and the `*_export.py` modules), runs as bytes between ranks.
//!
//! Beside them: [`errors`] (the exception types), [`native_run`] (`NativeRun`, the handle of
//! a run held in Rust), [`run_values`] (a run to and from Python values), [`numpy_arrays`]
//! (numpy arrays over Rust memory).
use pyo3::prelude::*;

mod errors;
mod hooks;
mod io;
mod native_run;
mod numpy_arrays;
mod package;
mod recording;
mod results;
mod run_values;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // the wheel's version is this crate's (maturin takes it from Cargo.toml): known without
    // importlib.metadata, whose import alone took ~0.1 s of every setup()
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<native_run::NativeRun>()?;
    results::register(m)?;
    hooks::register(m)?;
    io::register(m)?;
    package::register(m)?;
    recording::register(m)?;
    Ok(())
}
