//! `scope_profiler._native`: the Rust side of the `scope_profiler` Python package. One Rust
//! module per Python module it backs: `region` (Region), `mpi_region` (MPIRegion), `results`
//! (ProfilingResults), `merge` (merge_results), `concurrency` (ThreadInfo, TaskInfo), `call_stack`,
//! `h5reader`, `native_trace`, `metadata`, the exporters (`exports`, one function per format of the
//! registry, with `prof_export` and `json_export`, sharing `export`), and the recording glue behind
//! `profile_manager` (`recording`).
use pyo3::prelude::*;

mod arrays;
mod asyncio_hooks;
mod call_stack;
mod cli;
mod concurrency;
mod convert;
mod dataset;
mod display;
mod environment;
mod errors;
mod events;
mod export;
mod exports;
mod follow;
mod fork;
mod frames;
mod greenlet_hooks;
mod h5reader;
mod json_export;
mod manager;
mod manager_api;
mod merge;
mod metadata;
mod mpi;
mod mpi_region;
mod native_trace;
mod options;
mod package;
mod prof_export;
mod profile_io;
mod ranks;
mod recording;
mod region;
mod results;
mod run;
mod settings;
mod sigterm_guard;
mod tracking;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // the wheel's version is this crate's (maturin takes it from Cargo.toml): known without
    // importlib.metadata, whose import alone took ~0.1 s of every setup()
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<run::NativeRun>()?;
    m.add_class::<region::Region>()?;
    m.add_class::<mpi_region::MPIRegion>()?;
    m.add_class::<results::ProfilingResults>()?;
    m.add_class::<concurrency::ThreadInfo>()?;
    m.add_class::<concurrency::TaskInfo>()?;
    m.add_function(wrap_pyfunction!(merge::merge_results, m)?)?;
    asyncio_hooks::register(m)?;
    tracking::register(m)?;
    fork::register(m)?;
    greenlet_hooks::register(m)?;
    call_stack::register(m)?;
    h5reader::register(m)?;
    json_export::register(m)?;
    native_trace::register(m)?;
    package::register(m)?;
    profile_io::register(m)?;
    cli::register(m)?;
    manager::register(m)?;
    manager_api::register(m)?;
    mpi::register(m)?;
    metadata::register(m)?;
    environment::register(m)?;
    follow::register(m)?;
    recording::register(m)?;
    settings::register(m)?;
    sigterm_guard::register(m)?;
    options::register(m)?;
    ranks::register(m)?;
    prof_export::register(m)?;
    exports::register(m)?;
    dataset::register(m)?;
    Ok(())
}
