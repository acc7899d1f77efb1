//! `scope_profiler._native`: the Rust side of the `scope_profiler` Python package.
//! Recording (`recording`, owned by the recorder glue) and results (`results`, views over
//! a [`run::NativeRun`]) and the `export_*` functions (`export` and one file per Python
//! module) register their classes and functions here.
use pyo3::prelude::*;

mod chrome_trace_export;
mod cli;
mod errors;
mod export;
mod graphics_exports;
mod prof_export;
mod ranks;
mod recording;
mod results;
mod run;
mod speedscope_export;
mod trace_exports;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<run::NativeRun>()?;
    cli::register(m)?;
    recording::register(m)?;
    results::register(m)?;
    ranks::register(m)?;
    speedscope_export::register(m)?;
    prof_export::register(m)?;
    chrome_trace_export::register(m)?;
    trace_exports::register(m)?;
    graphics_exports::register(m)?;
    Ok(())
}
