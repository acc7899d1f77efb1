//! `build_call_arrays` for Python: numpy columns in, reconstructed `CallArrays` columns out.
use std::borrow::Cow;

use numpy::{PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

use scope_profiler_analysis::{CallArrays, LaneSplit, Reconstruction, RegionInput};

use super::arrays::{owned, owned_i64, slice_of, view};
use crate::errors::nesting_err;

type RegionArg<'py> = (
    String,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
    Option<PyReadonlyArray1<'py, i64>>,
    Option<PyReadonlyArray1<'py, i64>>,
);

/// The columns of a [`CallArrays`] as a tuple of numpy arrays (moved, not copied):
/// `(region_index, call_index, start_ns, end_ns, depth, parent, exclusive_ns, lane)`;
/// int32 index columns (`region_index`, `call_index`, `depth`, `parent`, `lane`), int64 ns.
pub fn call_arrays_to_py(py: Python<'_>, calls: CallArrays) -> PyResult<Bound<'_, PyTuple>> {
    let CallArrays { region_index, call_index, start_ns, end_ns, depth, parent, exclusive_ns, lane } = calls;
    PyTuple::new(
        py,
        [
            owned(py, region_index).into_any(),
            owned(py, call_index).into_any(),
            owned(py, start_ns).into_any(),
            owned(py, end_ns).into_any(),
            owned(py, depth).into_any(),
            owned(py, parent).into_any(),
            owned(py, exclusive_ns).into_any(),
            owned(py, lane).into_any(),
        ],
    )
}

/// The columns of a cached [`Reconstruction`] as read-only numpy views kept alive by
/// `container` (the `NativeRun` whose cache holds `rec`), same order as [`call_arrays_to_py`].
pub fn cached_call_arrays_to_py<'py>(
    container: &Bound<'py, PyAny>,
    rec: Arc<Reconstruction>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = container.py();
    // The views must keep the reconstruction alive, not just the NativeRun (whose cache
    // holds it, but a view may outlive a cache entry): wrap the Arc in a Python object.
    let keeper = keeper(py, &rec)?;
    let c = &rec.calls;
    // SAFETY: the vectors live in `rec`, owned by `keeper` and never mutated.
    let v32 = |x: &Vec<i32>| unsafe { view(x, &keeper) }.into_any();
    let v64 = |x: &Vec<i64>| unsafe { view(x, &keeper) }.into_any();
    let _ = container;
    PyTuple::new(
        py,
        [
            v32(&c.region_index),
            v32(&c.call_index),
            v64(&c.start_ns),
            v64(&c.end_ns),
            v32(&c.depth),
            v32(&c.parent),
            v64(&c.exclusive_ns),
            v32(&c.lane),
        ],
    )
}

/// A Python object owning a reference to `rec`: the base object of numpy views into it.
pub fn keeper<'py>(py: Python<'py>, rec: &Arc<Reconstruction>) -> PyResult<Bound<'py, PyAny>> {
    Ok(Bound::new(py, Keeper { _rec: Arc::clone(rec) })?.into_any())
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

/// `group_lanes(lane)`: `(lanes, offsets, order)` for an int32 lane column - lane
/// `lanes[k]` (ascending, int64) holds positions `order[offsets[k]:offsets[k+1]]`
/// (ascending; offsets int64, order uint32). The reconstruction's own counting sort
/// ([`scope_profiler_analysis::group_lanes`]): O(n) for dense lane values.
#[pyfunction]
pub fn group_lanes<'py>(py: Python<'py>, lane: PyReadonlyArray1<'py, i32>) -> PyResult<Bound<'py, PyTuple>> {
    // The whole lane column of a cached reconstruction (a view whose base is its Keeper):
    // hand out the split the reconstruction already made.
    if let Ok(base) = lane.as_any().getattr("base") {
        if let Ok(keeper) = base.cast::<Keeper>() {
            let rec = Arc::clone(&keeper.get()._rec);
            let own = &rec.calls.lane;
            if let Ok(view) = lane.as_slice() {
                if !own.is_empty() && view.as_ptr() == own.as_ptr() && view.len() == own.len() {
                    return cached_lane_split_to_py(py, rec);
                }
            }
        }
    }
    let values: Cow<'_, [i32]> = match lane.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(lane.as_array().iter().copied().collect()),
    };
    let split = py.detach(|| scope_profiler_analysis::group_lanes(&values));
    lane_split_to_py(py, split)
}

/// The (cached) lane split of `rec` as `(lanes int64, offsets int64, order uint32)`:
/// `order` a read-only view into the reconstruction (no copy). Lane-less calls give the
/// one lane `-1` with an empty `order` (the lane is every call, in order).
pub fn cached_lane_split_to_py(py: Python<'_>, rec: Arc<Reconstruction>) -> PyResult<Bound<'_, PyTuple>> {
    if rec.calls.lane.is_empty() {
        let n = rec.calls.len();
        let split = LaneSplit {
            lanes: if n == 0 { vec![] } else { vec![-1] },
            offsets: if n == 0 { vec![0] } else { vec![0, n] },
            order: vec![],
        };
        return lane_split_to_py(py, split);
    }
    py.detach(|| {
        rec.lanes();
    });
    let split = rec.lanes();
    let keeper = keeper(py, &rec)?;
    // SAFETY: the split lives in `rec` (kept alive by `keeper`) and is never mutated.
    let order = unsafe { view(&split.order, &keeper) };
    split_tuple(py, &split.lanes, &split.offsets, order.into_any())
}

/// A [`LaneSplit`] as `(lanes int64, offsets int64, order uint32)` numpy arrays (order moved).
pub fn lane_split_to_py(py: Python<'_>, split: LaneSplit) -> PyResult<Bound<'_, PyTuple>> {
    let LaneSplit { lanes, offsets, order } = split;
    split_tuple(py, &lanes, &offsets, owned(py, order).into_any())
}

/// `(lanes, offsets, order)` with `order` given.
fn split_tuple<'py>(
    py: Python<'py>,
    lanes: &[i32],
    offsets: &[usize],
    order: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let lanes: Vec<i64> = lanes.iter().map(|&l| i64::from(l)).collect();
    let offsets: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
    PyTuple::new(py, [owned_i64(py, lanes).into_any(), owned_i64(py, offsets).into_any(), order])
}
