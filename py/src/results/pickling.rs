//! Pickling of results (`pickle`, `copy.deepcopy`, `multiprocessing`, Dask moving results
//! between workers).
//!
//! A run travels in its columnar form: the run transport without its per-call columns
//! ([`encode_run_apart`]: names, rows, lane tables, metadata, stored statistics) as bytes,
//! and the columns as read-only numpy arrays over the run's own Arrow buffers. numpy hands
//! those to pickle's protocol 5 as out-of-band buffers (`PickleBuffer`): with a
//! `buffer_callback` they are not copied, and loading with `buffers=` builds the run's
//! columns on that memory without a copy ([`column_of`]). Lower protocols copy them.
//!
//! The run is one object of its own ([`PickledRun`]), the same one for every `Region`,
//! `MPIRegion` and `ProfilingResults` of a run pickled together, so pickle's memo stores
//! it once. A `Region` is a row of that run plus the slices (`for_thread`, ...) taken from
//! it (`analysis::ViewPath`); it unpickles to the same calls, exclusive times and statistics.
use std::panic::AssertUnwindSafe;
use std::ptr::NonNull;
use std::sync::Arc;

use arrow_array::Int64Array;
use arrow_buffer::{Buffer, ScalarBuffer};
use numpy::PyReadonlyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyWeakrefReference};
use scope_profiler_analysis::RunAnalysis;
use scope_profiler_finalize::transport::{decode_run_apart, encode_run_apart};

use crate::numpy_arrays::{i64_view, slice_of};

/// What `__reduce__` returns: the callable that rebuilds the object, and its arguments.
pub type Reduced<'py, Args> = (Bound<'py, PyAny>, Args);

/// A run's pickled arguments: its encoding without columns, and the columns.
type Encoded<'py> = (Bound<'py, PyBytes>, Bound<'py, PyList>);

/// A run as pickle carries it (internal to pickling: `Region`, `MPIRegion` and
/// `ProfilingResults` reduce to it).
#[pyclass(module = "scope_profiler._native", name = "_PickledRun", frozen, weakref)]
pub struct PickledRun {
    analysis: Arc<RunAnalysis>,
}

impl PickledRun {
    /// The analysed run.
    pub fn analysis(&self) -> &Arc<RunAnalysis> {
        &self.analysis
    }
}

#[pymethods]
impl PickledRun {
    /// The run of `encoding` (the transport without columns) and its `columns` (int64
    /// arrays or buffers, in encoding order; used without a copy where their memory allows).
    /// Raises ValueError when they do not make a run.
    #[new]
    fn new(encoding: &Bound<'_, PyBytes>, columns: &Bound<'_, PyList>) -> PyResult<Self> {
        let columns = columns.iter().map(|c| column_of(&c)).collect::<PyResult<Vec<_>>>()?;
        let run = decode_run_apart(encoding.as_bytes(), columns)
            .map_err(|e| PyValueError::new_err(format!("not a pickled scope-profiler run: {e}")))?;
        Ok(PickledRun { analysis: Arc::new(RunAnalysis::new(Arc::new(run))) })
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py, Encoded<'py>>> {
        let (encoding, columns) = encode_run_apart(&self.analysis.run);
        let views = columns.iter().map(|c| i64_view(py, c)).collect::<PyResult<Vec<_>>>()?;
        Ok((py.get_type::<PickledRun>().into_any(), (PyBytes::new(py, &encoding), PyList::new(py, views)?)))
    }
}

/// What keeps a column's memory alive: the Python object it lives in.
struct Keeper(#[allow(dead_code)] AssertUnwindSafe<Py<PyAny>>);

/// `obj` (a 1-d int64 array, or anything `numpy.asarray` takes as one) as an Arrow column:
/// on its memory when that is contiguous, native-endian and aligned (the array is made
/// read-only and kept alive by the column), else copied.
fn column_of(obj: &Bound<'_, PyAny>) -> PyResult<Int64Array> {
    let py = obj.py();
    let array = match obj.extract::<PyReadonlyArray1<'_, i64>>() {
        Ok(a) => a,
        Err(_) => {
            let np = py.import("numpy")?;
            let converted = np.call_method1("asarray", (obj, np.getattr("int64")?))?;
            return Ok(Int64Array::from(slice_of(&converted.extract::<PyReadonlyArray1<'_, i64>>()?).into_owned()));
        }
    };
    if let Ok(values) = array.as_slice() {
        let ptr = values.as_ptr();
        if !values.is_empty() && ptr.align_offset(std::mem::align_of::<i64>()) == 0 {
            let len = values.len();
            drop(array);
            // nobody writes to it while the run uses it (a view without its own data
            // may always be made read-only; an array owning it may refuse, then it is copied)
            let read_only = PyDict::new(py);
            read_only.set_item("write", false)?;
            if obj.call_method("setflags", (), Some(&read_only)).is_ok() {
                let owner = Arc::new(Keeper(AssertUnwindSafe(obj.clone().unbind())));
                // SAFETY: `ptr` points at `len` i64s of `obj`'s memory, aligned, which stays
                // valid and unchanged while `owner` (holding `obj`) lives: the array is
                // read-only and its buffer is kept by it.
                let buffer =
                    unsafe { Buffer::from_custom_allocation(NonNull::new_unchecked(ptr as *mut u8), len * 8, owner) };
                return Ok(Int64Array::new(ScalarBuffer::new(buffer, 0, len), None));
            }
            let array = obj.extract::<PyReadonlyArray1<'_, i64>>()?;
            return Ok(Int64Array::from(slice_of(&array).into_owned()));
        }
    }
    Ok(Int64Array::from(slice_of(&array).into_owned()))
}

/// The one [`PickledRun`] of `analysis` while something (a pickler's memo) holds it: every
/// object of a run pickled together refers to the same one, stored once.
pub fn pickled_run<'py>(py: Python<'py>, analysis: &Arc<RunAnalysis>) -> PyResult<Bound<'py, PickledRun>> {
    static LIVE: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    let live = LIVE.get_or_init(py, || PyDict::new(py).unbind()).bind(py);
    let key = Arc::as_ptr(analysis) as usize;
    if let Some(weak) = live.get_item(key)? {
        if let Ok(found) = weak.call0()?.cast_into::<PickledRun>() {
            if Arc::ptr_eq(&found.get().analysis, analysis) {
                return Ok(found);
            }
        }
    }
    if live.len() >= 64 {
        // forget the runs no pickler holds any more
        let dead: Vec<Bound<'_, PyAny>> =
            live.iter().filter(|(_, w)| w.call0().is_ok_and(|t| t.is_none())).map(|(k, _)| k).collect();
        for k in dead {
            live.del_item(k)?;
        }
    }
    let run = Bound::new(py, PickledRun { analysis: Arc::clone(analysis) })?;
    live.set_item(key, PyWeakrefReference::new(&run)?)?;
    Ok(run)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PickledRun>()
}
