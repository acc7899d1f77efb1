//! `merge_results`: several result sets as one run (`analysis::merge_sets`: stacked as rank
//! blocks when a region name appears in several sets, else united rank by rank).
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use scope_profiler_analysis::{merge_sets, MergeSet};

use crate::results::profiling_results::ProfilingResults;

/// `merge_results(*result_sets, label=None, file_path=None, stack=None)`: several result
/// sets as one (see `analysis::merge_sets` for the rules). Non-root sets are ignored; with
/// none left the first set is returned. `file_path` defaults to the first root set's.
/// ValueError when none is given or (not stacking) a region name appears in two sets;
/// TypeError for anything but `ProfilingResults`.
#[pyfunction]
#[pyo3(signature = (*result_sets, label=None, file_path=None, stack=None))]
pub fn merge_results<'py>(
    py: Python<'py>,
    result_sets: &Bound<'py, PyTuple>,
    label: Option<String>,
    file_path: Option<Bound<'py, PyAny>>,
    stack: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    if result_sets.is_empty() {
        return Err(PyValueError::new_err("merge_results() needs at least one result set"));
    }
    let mut sets: Vec<MergeSet> = Vec::new();
    for r in result_sets.iter() {
        let r = r.cast_into::<ProfilingResults>()?;
        let r = r.get();
        if r.is_root_set() {
            sets.push(MergeSet { run: (**r.run()).clone(), names: r.names(py), path: r.file_path_string() });
        }
    }
    let Some(first_path) = sets.first().map(|s| s.path.clone()) else {
        return result_sets.get_item(0);
    };
    let run = py.detach(|| merge_sets(sets, stack, label)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let path = match file_path {
        Some(p) if !p.is_none() => p.str()?.to_string(),
        _ => first_path,
    };
    Ok(Bound::new(py, ProfilingResults::from_run(py, run, path, true)?)?.into_any())
}
