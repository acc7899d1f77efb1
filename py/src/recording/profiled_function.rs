//! `ProfiledFunction`: what `@profile` returns, calling the function inside its region
//! (and bound as a method through `__get__`).
use std::cell::UnsafeCell;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::ProfileRegion;

extern "C" {
    /// CPython's bound-method constructor (`types.MethodType`), not wrapped by pyo3-ffi.
    fn PyMethod_New(func: *mut pyo3::ffi::PyObject, slf: *mut pyo3::ffi::PyObject) -> *mut pyo3::ffi::PyObject;
}

/// The descriptor protocol of a callable wrapper (`__get__`): `types.MethodType(wrapper,
/// obj)` for an instance `obj`, the wrapper itself for a class access (`obj` None).
pub(crate) fn bind_as_method(wrapper: &Bound<'_, PyAny>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    match obj {
        Some(o) if !o.is_none() => {
            // SAFETY: both pointers are valid; an owned reference (or NULL) is returned.
            unsafe {
                let m = PyMethod_New(wrapper.as_ptr(), o.as_ptr());
                Ok(Bound::from_owned_ptr_or_err(wrapper.py(), m)?.unbind())
            }
        }
        _ => Ok(wrapper.clone().unbind()),
    }
}

/// What `@profile` returns: calls the function inside its bound region. The binding is
/// rebound by every `setup()` (`_bind`), so there is no per-call configuration check.
/// Implements `__get__`, so it works on methods. Has a `__dict__` for `functools.wraps`.
#[pyclass(module = "scope_profiler._native", frozen, dict)]
pub struct ProfiledFunction {
    pub(super) func: Py<PyAny>,
    /// Read and written only with the GIL held (module contract).
    pub(super) binding: UnsafeCell<Option<Py<ProfileRegion>>>,
}

// SAFETY: `binding` is only accessed with the GIL held (GIL build; see module docs).
unsafe impl Sync for ProfiledFunction {}

impl ProfiledFunction {
    /// Whether a region is bound (`_region is not None`); GIL held (`py`).
    pub(crate) fn is_bound(&self, _py: Python<'_>) -> bool {
        // SAFETY: GIL held (the token proves it).
        unsafe { (*self.binding.get()).is_some() }
    }
}

#[pymethods]
impl ProfiledFunction {
    #[new]
    #[pyo3(signature = (func, region=None))]
    fn new(func: Py<PyAny>, region: Option<Py<ProfileRegion>>) -> Self {
        ProfiledFunction { func, binding: UnsafeCell::new(region) }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        // SAFETY: GIL held. Clone (incref) so a rebind during the call cannot free it.
        let region = unsafe { (*self.binding.get()).as_ref().map(|r| r.clone_ref(py)) };
        let func = self.func.bind(py);
        match region {
            Some(r) if r.get().b().enabled => {
                let r = r.get();
                r.enter(py)?;
                let out = func.call(args, kwargs);
                r.exit();
                Ok(out?.unbind())
            }
            _ => Ok(func.call(args, kwargs)?.unbind()),
        }
    }

    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        bind_as_method(slf.as_any(), obj)
    }

    /// Rebind to `region` (`None` = call straight through).
    #[pyo3(signature = (region=None))]
    fn _bind(&self, region: Option<Py<ProfileRegion>>) {
        // SAFETY: GIL held (we are in a pymethod); the old value is dropped under the GIL.
        unsafe {
            *self.binding.get() = region;
        }
    }

    /// The region this wrapper currently records into, or None.
    #[getter]
    fn _region(&self, py: Python<'_>) -> Option<Py<ProfileRegion>> {
        // SAFETY: GIL held.
        unsafe { (*self.binding.get()).as_ref().map(|r| r.clone_ref(py)) }
    }

    #[getter]
    fn _func(&self, py: Python<'_>) -> Py<PyAny> {
        self.func.clone_ref(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<profiled {}>", self.func.bind(py).repr()?))
    }

    /// Pickle by reference (the module and `__qualname__` that `functools.wraps` copied),
    /// as plain functions are, so decorated functions can be sent to process pools.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.getattr("__qualname__")?.unbind())
    }
}
