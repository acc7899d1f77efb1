//! Results glue: `NativeRun` accessors, HDF5 read, reconstruction and exports for Python.
use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
