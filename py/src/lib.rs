//! `scope_profiler._native`: the Rust side of the `scope_profiler` Python package. One Rust
//! module per Python module it backs: `region` (Region), `mpi_region` (MPIRegion), `results`
//! (ProfilingResults, merge_results), `concurrency` (ThreadInfo, TaskInfo), `call_stack`,
//! `h5reader`, and the recording glue behind `profile_manager` (`recording`).
use pyo3::prelude::*;

mod arrays;
mod call_stack;
mod cli;
mod concurrency;
mod convert;
mod display;
mod errors;
mod events;
mod frames;
mod h5reader;
mod merge;
mod mpi_region;
mod ranks;
mod recording;
mod region;
mod results;
mod run;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<run::NativeRun>()?;
    m.add_class::<region::Region>()?;
    m.add_class::<mpi_region::MPIRegion>()?;
    m.add_class::<results::ProfilingResults>()?;
    m.add_class::<concurrency::ThreadInfo>()?;
    m.add_class::<concurrency::TaskInfo>()?;
    m.add_function(wrap_pyfunction!(results::merge_results, m)?)?;
    call_stack::register(m)?;
    h5reader::register(m)?;
    cli::register(m)?;
    recording::register(m)?;
    results::exports::register(m)?;
    ranks::register(m)?;
    Ok(())
}
