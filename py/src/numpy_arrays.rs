//! numpy arrays over Rust memory: read-only views of a `NativeRun`'s Arrow buffers and
//! arrays that take ownership of a `Vec` (both without copying the data).
use std::borrow::Cow;

use numpy::ndarray::ArrayView1;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
pub use scope_profiler_analysis::secs;

/// A read-only numpy view of `values`, kept alive by `container`.
///
/// # Safety
/// `values` must stay valid and unmodified for as long as `container` is alive (it points into
/// memory `container` owns and never reallocates, e.g. an Arrow buffer of a `NativeRun`'s
/// `Arc<Run>`).
pub unsafe fn view_i64<'py>(values: &[i64], container: &Bound<'py, PyAny>) -> Bound<'py, PyArray1<i64>> {
    // SAFETY: forwarded to the caller.
    unsafe { view(values, container) }
}

/// [`view_i64`] for any numpy element type (`i32` index columns, `u32` lane orders, ...).
///
/// # Safety
/// As [`view_i64`].
pub unsafe fn view<'py, T: numpy::Element>(values: &[T], container: &Bound<'py, PyAny>) -> Bound<'py, PyArray1<T>> {
    let view = ArrayView1::from(values);
    // SAFETY: guaranteed by the caller; the array's base object is `container`.
    let array = unsafe { PyArray1::borrow_from_array(&view, container.clone()) };
    // The memory is shared and immutable: clear WRITEABLE. The array does not own its data,
    // so numpy refuses to set the flag again from Python.
    let _ = array.readwrite().make_nonwriteable();
    array
}

/// The contents of a borrowed int64 array as a slice: borrowed if contiguous, else copied.
pub fn slice_of<'a>(array: &'a PyReadonlyArray1<'_, i64>) -> Cow<'a, [i64]> {
    match array.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(array.as_array().iter().copied().collect()),
    }
}

/// Owner of an Arrow array for numpy views of its values.
#[pyclass(module = "scope_profiler._native", frozen)]
struct ArrowKeeper {
    _array: arrow_array::Int64Array,
}

/// A read-only numpy view of `a` (no copy); the array's buffer lives as long as the view.
pub fn i64_view<'py>(py: Python<'py>, a: &arrow_array::Int64Array) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let keeper = Bound::new(py, ArrowKeeper { _array: a.clone() })?.into_any();
    // SAFETY: the values live in the Arrow buffer `keeper` holds, immutable and never freed
    // before `keeper`.
    Ok(unsafe { view_i64(a.values(), &keeper) })
}

/// `values / 1e9` as a new float64 array (s).
pub fn secs_array<'py>(py: Python<'py>, values: &[i64]) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_vec(py, values.iter().map(|&v| secs(v)).collect())
}

/// A read-only numpy view of `values`, which live in the run `analysis` holds; the view's base
/// is a `NativeRun` handle of that run (no copy; the run lives as long as the view).
///
/// `values` must point into `analysis.run` (a column of one of its rows).
pub fn run_view<'py>(
    py: Python<'py>,
    analysis: &std::sync::Arc<scope_profiler_analysis::RunAnalysis>,
    values: &[i64],
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let keeper =
        Bound::new(py, crate::native_run::NativeRun::of(std::sync::Arc::clone(analysis), String::new()))?.into_any();
    // SAFETY: `values` is a column of `analysis.run` (immutable, behind the Arc `keeper` holds).
    Ok(unsafe { view_i64(values, &keeper) })
}
