//! `scope_profiler._native`: the Rust side of the `scope_profiler` Python package.
//! Recording (`recording`, owned by the recorder glue) and results (`results`, views over
//! a [`run::NativeRun`]) register their classes and functions here.
use pyo3::prelude::*;

mod cli;
mod errors;
mod ranks;
mod recording;
mod results;
mod run;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<run::NativeRun>()?;
    cli::register(m)?;
    recording::register(m)?;
    results::register(m)?;
    ranks::register(m)?;
    Ok(())
}
