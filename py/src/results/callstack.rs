//! `build_call_arrays` for Python: numpy columns in, reconstructed `CallArrays` columns out.
use std::borrow::Cow;

use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

use scope_profiler_analysis::{CallArrays, Reconstruction, RegionInput};

use super::arrays::{owned_i64, slice_of, view_i64};
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

/// The columns of a cached [`Reconstruction`] as read-only numpy views kept alive by
/// `container` (the `NativeRun` whose cache holds `rec`), same order as [`call_arrays_to_py`].
pub fn cached_call_arrays_to_py<'py>(container: &Bound<'py, PyAny>, rec: Arc<Reconstruction>) -> PyResult<Bound<'py, PyTuple>> {
    let py = container.py();
    // The views must keep the reconstruction alive, not just the NativeRun (whose cache
    // holds it, but a view may outlive a cache entry): wrap the Arc in a Python object.
    let keeper = Bound::new(py, Keeper { _rec: Arc::clone(&rec) })?.into_any();
    let c = &rec.calls;
    // SAFETY: the vectors live in `rec`, owned by `keeper` and never mutated.
    let v = |x: &Vec<i64>| unsafe { view_i64(x, &keeper) };
    let _ = container;
    PyTuple::new(
        py,
        [
            v(&c.region_index),
            v(&c.call_index),
            v(&c.start_ns),
            v(&c.end_ns),
            v(&c.depth),
            v(&c.parent),
            v(&c.exclusive_ns),
            v(&c.lane),
        ],
    )
}

/// Owner of a cached reconstruction for numpy views of its columns.
#[pyclass(module = "scope_profiler._native", frozen)]
struct Keeper {
    _rec: Arc<Reconstruction>,
}

/// One region's columns borrowed from numpy (or copied when not contiguous).
type BorrowedRegion<'a> = (&'a str, Cow<'a, [i64]>, Cow<'a, [i64]>, Option<Cow<'a, [i64]>>, Option<Cow<'a, [i64]>>);

/// Borrow the Python inputs as [`RegionInput`]s (copying only non-contiguous arrays) and
/// reconstruct, with the GIL released.
fn reconstruct(py: Python<'_>, regions: &[RegionArg<'_>]) -> PyResult<CallArrays> {
    let mut cols: Vec<BorrowedRegion<'_>> = Vec::with_capacity(regions.len());
    for (name, starts, ends, threads, tasks) in regions {
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
    py.detach(|| scope_profiler_analysis::build_call_arrays(&inputs)).map_err(nesting_err)
}

/// `build_call_arrays(regions)`: `regions` is a list of
/// `(name, start_ns, end_ns, thread_ids | None, task_ids | None)` with int64 arrays (borrowed,
/// read-only). Returns the reconstructed columns (see [`call_arrays_to_py`]).
/// Raises `NestingError` when the calls cannot form a tree, `ValueError` on ragged columns.
#[pyfunction]
pub fn build_call_arrays<'py>(py: Python<'py>, regions: Vec<RegionArg<'py>>) -> PyResult<Bound<'py, PyTuple>> {
    let calls = reconstruct(py, &regions)?;
    call_arrays_to_py(py, calls)
}

/// `exclusive_by_region(regions)`: same input as [`build_call_arrays`]; returns one int64
/// array per input region with each call's exclusive ns, in the region's own call order.
#[pyfunction]
pub fn exclusive_by_region<'py>(py: Python<'py>, regions: Vec<RegionArg<'py>>) -> PyResult<Bound<'py, PyList>> {
    let calls = reconstruct(py, &regions)?;
    let mut out: Vec<Vec<i64>> = regions.iter().map(|r| vec![0; r.1.len()]).collect();
    for i in 0..calls.len() {
        out[calls.region_index[i] as usize][calls.call_index[i] as usize] = calls.exclusive_ns[i];
    }
    let list = PyList::empty(py);
    for values in out {
        list.append(owned_i64(py, values))?;
    }
    Ok(list)
}

/// `group_lanes(lane)`: `(lanes, offsets, order)` int64 arrays for a lane column - lane
/// `lanes[k]` (ascending) holds positions `order[offsets[k]:offsets[k+1]]` (ascending).
/// Counting sort when the lane values span a small range, else a stable sort: O(n) for
/// recorded data, whatever the number of lanes.
#[pyfunction]
pub fn group_lanes<'py>(py: Python<'py>, lane: PyReadonlyArray1<'py, i64>) -> PyResult<Bound<'py, PyTuple>> {
    let values = slice_of(&lane);
    let (lanes, offsets, order) = py.detach(|| {
        let v: &[i64] = &values;
        let n = v.len();
        if n == 0 {
            return (Vec::new(), vec![0i64], Vec::new());
        }
        let (min, max) = v.iter().fold((i64::MAX, i64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let span = (max as i128) - (min as i128) + 1;
        if span <= 4 * n as i128 + 4096 {
            let span = span as usize;
            let mut counts = vec![0usize; span + 1];
            for &x in v {
                counts[(x - min) as usize + 1] += 1;
            }
            let mut lanes = Vec::new();
            let mut offsets = vec![0i64];
            for (s, &c) in counts[1..].iter().enumerate() {
                if c > 0 {
                    lanes.push(min + s as i64);
                    offsets.push(offsets.last().unwrap() + c as i64);
                }
            }
            for s in 1..=span {
                counts[s] += counts[s - 1];
            }
            let mut order = vec![0i64; n];
            for (i, &x) in v.iter().enumerate() {
                let s = (x - min) as usize;
                order[counts[s]] = i as i64;
                counts[s] += 1;
            }
            (lanes, offsets, order)
        } else {
            let mut idx: Vec<(i64, i64)> = v.iter().enumerate().map(|(i, &x)| (x, i as i64)).collect();
            idx.sort_unstable();
            let mut lanes = Vec::new();
            let mut offsets = Vec::new();
            for (k, &(x, _)) in idx.iter().enumerate() {
                if k == 0 || idx[k - 1].0 != x {
                    lanes.push(x);
                    offsets.push(k as i64);
                }
            }
            offsets.push(n as i64);
            (lanes, offsets, idx.into_iter().map(|(_, i)| i).collect())
        }
    });
    PyTuple::new(py, [owned_i64(py, lanes), owned_i64(py, offsets), owned_i64(py, order)])
}
