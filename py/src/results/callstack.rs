//! `build_call_arrays` for Python: numpy columns in, reconstructed `CallArrays` columns out.
use std::borrow::Cow;

use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use scope_profiler_analysis::{CallArrays, RegionInput};

use super::arrays::{owned_i64, slice_of};
use crate::errors::nesting_err;

type RegionArg<'py> = (
    String,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    Option<PyReadonlyArray1<'py, i64>>,
    Option<PyReadonlyArray1<'py, i64>>,
);

/// The columns of a [`CallArrays`] as a tuple of numpy arrays (moved, not copied):
/// `(region_index, call_index, start_ns, end_ns, depth, parent, exclusive_ns, lane)`.
pub fn call_arrays_to_py(py: Python<'_>, calls: CallArrays) -> PyResult<Bound<'_, PyTuple>> {
    let CallArrays { region_index, call_index, start_ns, end_ns, depth, parent, exclusive_ns, lane } = calls;
    PyTuple::new(
        py,
        [
            owned_i64(py, region_index),
            owned_i64(py, call_index),
            owned_i64(py, start_ns),
            owned_i64(py, end_ns),
            owned_i64(py, depth),
            owned_i64(py, parent),
            owned_i64(py, exclusive_ns),
            owned_i64(py, lane),
        ],
    )
}

/// `build_call_arrays(regions)`: `regions` is a list of
/// `(name, start_ns, end_ns, thread_ids | None, task_ids | None)` with int64 arrays (borrowed,
/// read-only). Returns the reconstructed columns (see [`call_arrays_to_py`]).
/// Raises `NestingError` when the calls cannot form a tree, `ValueError` on ragged columns.
#[pyfunction]
pub fn build_call_arrays<'py>(py: Python<'py>, regions: Vec<RegionArg<'py>>) -> PyResult<Bound<'py, PyTuple>> {
    let mut cols: Vec<(&str, Cow<[i64]>, Cow<[i64]>, Option<Cow<[i64]>>, Option<Cow<[i64]>>)> =
        Vec::with_capacity(regions.len());
    for (name, starts, ends, threads, tasks) in &regions {
        let s = slice_of(starts);
        let e = slice_of(ends);
        let t = threads.as_ref().map(slice_of);
        let k = tasks.as_ref().map(slice_of);
        let n = s.len();
        if e.len() != n || t.as_ref().is_some_and(|t| t.len() != n) || k.as_ref().is_some_and(|k| k.len() != n) {
            return Err(PyValueError::new_err(format!(
                "region {name:?}: start, end and lane columns must have the same length"
            )));
        }
        cols.push((name.as_str(), s, e, t, k));
    }
    let inputs: Vec<RegionInput<'_>> = cols
        .iter()
        .map(|(name, s, e, t, k)| RegionInput {
            name,
            start_ns: s,
            end_ns: e,
            thread_ids: t.as_deref(),
            task_ids: k.as_deref(),
        })
        .collect();
    let calls = py
        .detach(|| scope_profiler_analysis::build_call_arrays(&inputs))
        .map_err(nesting_err)?;
    call_arrays_to_py(py, calls)
}
