//! Runs that cross process boundaries, seen from Python: the run transport
//! ([`scope_profiler_finalize::transport`]: what an MPI rank sends to rank 0 at
//! `finalize()`) and the stacking of runs as blocks of ranks (the ranks of a job into one
//! run; per-process files analysed together). Python conversions and the GIL only.
use std::path::Path;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use scope_profiler_analysis::Run;
use scope_profiler_finalize::transport::{self, decode_run, encode_run, StackError};

use crate::errors::write_failure_err;
use crate::native_run::NativeRun;
use crate::run_values::meta_from_py;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_run_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_run_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(stack_runs, m)?)?;
    Ok(())
}

/// A run given as a `NativeRun` or as the bytes of [`encode_run`] (any buffer).
fn run_of(obj: &Bound<'_, PyAny>) -> PyResult<Run> {
    if let Ok(native) = obj.cast::<NativeRun>() {
        return Ok((*native.get().run).clone());
    }
    let buf = PyBuffer::<u8>::get(obj)?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err("run bytes must be a contiguous buffer"));
    }
    // SAFETY: a C-contiguous u8 buffer of `len_bytes()` bytes, alive while `buf` is held
    // (and the GIL: nothing else mutates it meanwhile).
    let bytes = unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const u8, buf.len_bytes()) };
    decode_run(bytes).map_err(|e| PyValueError::new_err(format!("cannot decode a run: {e}")))
}

/// `NativeRun` -> bytes (pickle-free transport between processes of one job).
#[pyfunction]
fn _run_to_bytes<'py>(py: Python<'py>, native: &Bound<'py, NativeRun>) -> Bound<'py, PyBytes> {
    let bytes = encode_run(&native.get().run);
    PyBytes::new(py, &bytes)
}

/// Bytes (any buffer) -> `NativeRun`.
#[pyfunction]
#[pyo3(signature = (data, file_path=String::new()))]
fn _run_from_bytes(data: &Bound<'_, PyAny>, file_path: String) -> PyResult<NativeRun> {
    Ok(NativeRun::new(run_of(data)?, file_path))
}

/// Stack runs as blocks of ranks ([`transport::stack`]): `parts` is a list of `(rank_offset,
/// run)` with `run` a `NativeRun` or encoded bytes. `metadata` (a dict) replaces the
/// first part's; `num_ranks` overrides the computed count. With `write_file` the result is
/// written to `file_path` (schema 3, atomically) before it is returned.
/// Also called by the MPI finalize of rank 0 (`_mpi.finalize`).
#[pyfunction]
#[pyo3(name = "_stack_runs", signature = (parts, metadata=None, num_ranks=None, file_path=String::new(), write_file=false))]
fn stack_runs(
    py: Python<'_>,
    parts: Vec<(u32, Bound<'_, PyAny>)>,
    metadata: Option<&Bound<'_, PyDict>>,
    num_ranks: Option<u32>,
    file_path: String,
    write_file: bool,
) -> PyResult<NativeRun> {
    let mut runs = Vec::with_capacity(parts.len());
    for (offset, obj) in &parts {
        runs.push((*offset, run_of(obj)?));
    }
    drop(parts);
    let metadata = match metadata {
        Some(meta) => {
            let mut values = Vec::with_capacity(meta.len());
            for (k, v) in meta.iter() {
                values.push((k.str()?.to_string(), meta_from_py(&v)?));
            }
            Some(values)
        }
        None => None,
    };
    let path = write_file.then(|| Path::new(&file_path));
    let run = py.detach(|| transport::stack(runs, metadata, num_ranks, path)).map_err(|e| match e {
        StackError::Stack(e) => PyValueError::new_err(e.to_string()),
        StackError::Write(e) => write_failure_err(e, &file_path),
    })?;
    Ok(NativeRun::new(run, file_path))
}
