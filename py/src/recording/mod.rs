//! Recording glue: regions, the manager's native state, thread tracking hooks.
use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
