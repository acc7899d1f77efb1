//! Results glue: `NativeRun` accessors (in `crate::run`), HDF5 read and reconstruction
//! for Python (exports: `crate::export`).
use pyo3::prelude::*;

pub mod arrays;
pub mod callstack;
pub mod convert;
pub mod frames;
pub mod summary;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(callstack::build_call_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(callstack::exclusive_by_region, m)?)?;
    m.add_function(wrap_pyfunction!(callstack::group_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(frames::table_from_columns, m)?)?;
    m.add_function(wrap_pyfunction!(summary::read_h5_summary, m)?)?;
    Ok(())
}
