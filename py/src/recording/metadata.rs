//! Backs `scope_profiler._metadata`: the `ProfileManager.metadata()` block (`MetadataScope`)
//! and the call wrapper of `@profile(metadata=..., record_outcome=...)` and of
//! `@manager.metadata(...)` on a function (`MetadataCall`). An exited block is handed to the
//! recorder as one scope ([`NativeRecorder::add_metadata_scope`]); `finalize()` gives its
//! values to the calls inside its time ([`scope_profiler_finalize::metadata_scopes`]).
use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMapping, PyString, PyTuple};

use crate::errors::raised_while_handling;
use crate::recording::{bind_as_method, NativeRecorder, ProfiledFunction};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MetadataScope>()?;
    m.add_class::<MetadataCall>()?;
    Ok(())
}

/// What `__enter__` left for `__exit__`.
struct Entered {
    merged: Py<PyDict>,
    token: Py<PyAny>,
    start_ns: i64,
}

/// One `manager.metadata(**values)` block: a context manager yielding the merged dict, and a
/// decorator (each call of the decorated function a block of its own).
///
/// `__enter__` merges `values` into the dict of the blocks around it (the manager class's
/// `_metadata_context` variable), sets the variable to the result and reads the clock;
/// `__exit__` reads the clock, resets the variable (tolerating a `ValueError`: exited in
/// another context) and, when the dict is not empty and `manager.is_active()`, hands
/// `(entry ns, exit ns, json.dumps(dict))` to the recorder (`perf_counter_ns` clock).
#[pyclass(frozen, module = "scope_profiler._metadata")]
pub struct MetadataScope {
    manager: Py<PyAny>,
    values: Py<PyDict>,
    entered: Mutex<Option<Entered>>,
}

impl MetadataScope {
    fn create(manager: Py<PyAny>, values: Py<PyDict>) -> Self {
        MetadataScope { manager, values, entered: Mutex::new(None) }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Entered>> {
        self.entered.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn enter<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.slot().is_some() {
            return Err(PyRuntimeError::new_err("a metadata() block can be entered only once; call metadata() again"));
        }
        let context = self.manager.bind(py).getattr(intern!(py, "_metadata_context"))?;
        let outer = context.call_method0(intern!(py, "get"))?;
        let merged = PyDict::new(py);
        if outer.is_truthy()? {
            merged.update(outer.cast::<PyMapping>()?)?;
        }
        merged.update(self.values.bind(py).as_mapping())?;
        let token = context.call_method1(intern!(py, "set"), (&merged,))?.unbind();
        let start_ns = scope_profiler_recorder::now_ns();
        *self.slot() = Some(Entered { merged: merged.clone().unbind(), token, start_ns });
        Ok(merged)
    }

    fn exit(&self, py: Python<'_>) -> PyResult<()> {
        let end_ns = scope_profiler_recorder::now_ns();
        let (merged, token, start_ns) = match self.slot().as_ref() {
            Some(e) => (e.merged.clone_ref(py), e.token.clone_ref(py), e.start_ns),
            None => return Err(PyRuntimeError::new_err("a metadata() block exited without being entered")),
        };
        let manager = self.manager.bind(py);
        let context = manager.getattr(intern!(py, "_metadata_context"))?;
        match context.call_method1(intern!(py, "reset"), (token,)) {
            Err(e) if !e.is_instance_of::<PyValueError>(py) => return Err(e),
            _ => {} // ValueError: exited in another context (a generator advanced elsewhere)
        }
        let merged = merged.bind(py);
        if merged.is_empty() || !manager.call_method0(intern!(py, "is_active"))?.is_truthy()? {
            return Ok(());
        }
        let config = manager.getattr(intern!(py, "_config"))?;
        if config.is_none() {
            return Ok(());
        }
        let native = config.getattr(intern!(py, "_native"))?;
        if native.is_none() {
            return Ok(());
        }
        let values = dumps(merged)?;
        match native.cast::<NativeRecorder>() {
            Ok(recorder) => recorder.get().add_metadata_scope(start_ns, end_ns, &values),
            Err(_) => native.call_method1(intern!(py, "add_metadata_scope"), (start_ns, end_ns, values)).map(drop),
        }
    }
}

/// `json.dumps(values)` (Python's, imported at the first use: NaN/inf allowed, tuples as lists, key order kept); its
/// `TypeError`/`ValueError` become `TypeError("per-call metadata must be JSON values ...")`.
fn dumps(values: &Bound<'_, PyDict>) -> PyResult<String> {
    static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = values.py();
    match DUMPS.import(py, "json", "dumps")?.call1((values,)) {
        Ok(text) => text.extract(),
        Err(e) if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py) => {
            let error = PyTypeError::new_err(format!(
                "per-call metadata must be JSON values (str, int, float, bool, None, lists, dicts): {}",
                e.value(py)
            ));
            error.set_cause(py, Some(e));
            Err(error)
        }
        Err(e) => Err(e),
    }
}

#[pymethods]
impl MetadataScope {
    /// The block of `manager` (the `ProfileManager` class or an instance's class) adding
    /// `values` (kept, not copied).
    #[new]
    fn new(manager: Py<PyAny>, values: Py<PyDict>) -> Self {
        MetadataScope::create(manager, values)
    }

    /// Enter the block; returns the merged dict (changes to it are recorded). `RuntimeError`
    /// when this block was entered before.
    fn __enter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.enter(py)
    }

    /// Exit the block (never suppresses the exception). `TypeError` ("per-call metadata must
    /// be JSON values ...") when a value is not JSON.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Bound<'_, PyAny>,
        _exc_value: Bound<'_, PyAny>,
        _traceback: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.exit(py)
    }

    /// As a decorator: `func` wrapped so that each call runs in a fresh block of these values
    /// (`functools.update_wrapper` applied).
    fn __call__(&self, py: Python<'_>, func: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let call = MetadataCall {
            manager: self.manager.clone_ref(py),
            func: func.clone().unbind(),
            metadata: self.values.clone_ref(py).into_any(),
            record_outcome: false,
            profiled: false,
        };
        let call = Bound::new(py, call)?.into_any();
        py.import(intern!(py, "functools"))?.call_method1(intern!(py, "update_wrapper"), (&call, func))?;
        Ok(call.unbind())
    }
}

/// `dict(**values)`: a new dict of a mapping's items, `TypeError` as Python's for a
/// non-mapping or a key that is not a `str`.
fn keyword_dict<'py>(values: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let py = values.py();
    let out = PyDict::new(py);
    let check = |key: &Bound<'py, PyAny>| match key.is_instance_of::<PyString>() {
        true => Ok(()),
        false => Err(PyTypeError::new_err("keywords must be strings")),
    };
    if let Ok(dict) = values.cast::<PyDict>() {
        for (key, value) in dict.iter() {
            check(&key)?;
            out.set_item(key, value)?;
        }
        return Ok(out);
    }
    let Ok(keys) = values.getattr(intern!(py, "keys")) else {
        let kind = values.get_type().name()?;
        return Err(PyTypeError::new_err(format!("dict() argument after ** must be a mapping, not {kind}")));
    };
    for key in keys.call0()?.try_iter()? {
        let key = key?;
        check(&key)?;
        out.set_item(&key, values.get_item(&key)?)?;
    }
    Ok(out)
}

/// A function whose every call runs inside a metadata block: the `@profile(metadata=...,
/// record_outcome=...)` wrapper of a `ProfiledFunction`, or `@manager.metadata(**values)`
/// on a function. Binds as a method (`__get__`); has a `__dict__` for `functools.wraps`.
#[pyclass(frozen, dict, module = "scope_profiler._metadata")]
pub struct MetadataCall {
    manager: Py<PyAny>,
    /// What a call runs.
    func: Py<PyAny>,
    /// The values: a mapping, or (`profiled`) a callable given the call's arguments.
    metadata: Py<PyAny>,
    record_outcome: bool,
    /// `@profile`'s wrapper: `func` called directly while its region is unbound, and without
    /// a block when there are no values and no outcome to record.
    profiled: bool,
}

impl MetadataCall {
    /// Whether a call of `func` goes straight through (`@profile` before `setup()`, or with
    /// an opt-in tag that is off).
    fn unbound(&self, py: Python<'_>) -> PyResult<bool> {
        let func = self.func.bind(py);
        Ok(match func.cast::<ProfiledFunction>() {
            Ok(profiled) => !profiled.get().is_bound(py),
            Err(_) => func.getattr(intern!(py, "_region"))?.is_none(),
        })
    }

    /// This call's values: `metadata(*args, **kwargs)` when callable, else `metadata`; `{}`
    /// when falsy, else `dict(**values)`.
    fn values<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let metadata = self.metadata.bind(py);
        if !self.profiled {
            return Ok(metadata.cast::<PyDict>()?.clone());
        }
        let values = if metadata.is_callable() { metadata.call(args, kwargs)? } else { metadata.clone() };
        if values.is_truthy()? {
            keyword_dict(&values)
        } else {
            Ok(PyDict::new(py))
        }
    }
}

#[pymethods]
impl MetadataCall {
    /// `@profile`'s wrapper of `profiled` (a `ProfiledFunction`): each call in a block of
    /// `metadata` (a mapping, or a callable given the call's arguments returning one;
    /// `TypeError` as `dict(**values)` for other values) and, with `record_outcome`,
    /// `status` (`"ok"`/`"error"`) and `exception` (the exception type's name).
    #[new]
    fn new(manager: Py<PyAny>, profiled: Py<PyAny>, metadata: Py<PyAny>, record_outcome: bool) -> Self {
        MetadataCall { manager, func: profiled, metadata, record_outcome, profiled: true }
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let func = self.func.bind(py);
        if self.profiled && self.unbound(py)? {
            return Ok(func.call(args, kwargs)?.unbind());
        }
        let values = self.values(py, args, kwargs)?;
        if self.profiled && !self.record_outcome && values.is_empty() {
            return Ok(func.call(args, kwargs)?.unbind());
        }
        let scope = MetadataScope::create(self.manager.clone_ref(py), values.unbind());
        let merged = scope.enter(py)?;
        let out = func.call(args, kwargs);
        if self.record_outcome {
            match &out {
                Ok(_) => merged.set_item(intern!(py, "status"), intern!(py, "ok"))?,
                Err(e) => {
                    merged.set_item(intern!(py, "status"), intern!(py, "error"))?;
                    merged.set_item(intern!(py, "exception"), e.get_type(py).name()?)?;
                }
            }
        }
        match (out, scope.exit(py)) {
            (out, Ok(())) => Ok(out?.unbind()),
            (Ok(_), Err(later)) => Err(later),
            (Err(e), Err(later)) => Err(raised_while_handling(py, later, e)),
        }
    }

    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        bind_as_method(slf.as_any(), obj)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("<metadata call of {}>", self.func.bind(py).repr()?))
    }

    /// Pickle by reference (the module and `__qualname__` that `functools.wraps` copied), as
    /// plain functions are.
    fn __reduce__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(slf.getattr("__qualname__")?.unbind())
    }
}
