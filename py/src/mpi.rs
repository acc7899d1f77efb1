//! Backs `scope_profiler._mpi`: whether this process is an MPI rank, the MPI part of a new
//! configuration, and the collective `finalize()` of a job (its decisions and texts:
//! [`scope_profiler_finalize::mpi_job`]; the calls are mpi4py's, made here).
//!
//! `finalize()` under MPI is collective (every rank calls it, with the same arguments):
//! `num_nodes` is the number of distinct host names (one `allgather`); each rank snapshots
//! its own calls (call ids per rank, nothing retired yet); its run crosses to rank 0 as one
//! pickle-free byte buffer (`MPI.BYTE` messages of at most 1 GiB, ranks received in rank
//! order); rank 0 stacks the ranks into one run (rank r's rows carry rank r) and writes it
//! with the serial run's atomic schema-3 writer; rank 0's outcome is broadcast, so a failed
//! write raises on every rank (the calls stay buffered) instead of leaving the others
//! waiting. Rank 0 returns the job's results, other ranks an empty result set flagged
//! `is_root=False`. `output_mode="parallel"` with `track_threads` is refused first.
use pyo3::exceptions::{PyException, PyImportError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PySet, PySlice};
use scope_profiler_finalize::environment as env;
use scope_profiler_finalize::mpi_job::{self, CHUNK, RUN_TAG};
use scope_profiler_finalize::transport::encode_run;
use scope_profiler_formats::text_summary;

use crate::ranks::stack_runs;
use crate::run::NativeRun;

/// `mpi_launched() -> bool`: whether this process is an MPI rank: the environment says so
/// (`mpi_launch_from_env`), else `mpi4py.MPI` is loaded and initialised.
#[pyfunction]
fn mpi_launched(py: Python<'_>) -> PyResult<bool> {
    if let Some(decided) = env::mpi_launch_from_process_env() {
        return Ok(decided);
    }
    let Some(module) = py.import("sys")?.getattr("modules")?.call_method1("get", ("mpi4py.MPI",)).ok() else {
        return Ok(false);
    };
    if module.is_none() {
        return Ok(false);
    }
    match module.getattr("Is_initialized") {
        Ok(is_initialized) => is_initialized.call0()?.is_truthy(),
        Err(_) => Ok(false),
    }
}

/// `mpi_comm() -> MPI.Comm | None`: `MPI.COMM_WORLD` for an MPI rank (importing mpi4py,
/// which initialises MPI), else None (also when mpi4py cannot be imported: then a
/// `RuntimeWarning` says every rank records a serial run into the same file).
#[pyfunction]
fn mpi_comm(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    if !mpi_launched(py)? {
        return Ok(None);
    }
    match py.import("mpi4py.MPI") {
        Ok(mpi) => Ok(Some(mpi.getattr("COMM_WORLD")?)),
        Err(e) if e.is_instance_of::<PyImportError>(py) => {
            // a serial run per rank, all writing one file: say so, at the user's setup() line
            let level = crate::manager::stacklevel_outside(
                py,
                &["scope_profiler._mpi".to_string(), "scope_profiler._settings".to_string()],
            )?;
            crate::manager::warn(py, &mpi_job::without_mpi4py(&e.value(py).to_string()), level)?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `dict(value)`.
fn dict_of<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    Ok(value.py().get_type::<PyDict>().call1((value,))?.cast_into::<PyDict>()?)
}

/// `[view[a:b], MPI.BYTE]`: one message of a buffer.
fn message<'py>(
    view: &Bound<'py, PyAny>,
    range: (usize, usize),
    byte: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let part = view.get_item(PySlice::new(view.py(), range.0 as isize, range.1 as isize, 1))?;
    PyList::new(view.py(), [part, byte.clone()])
}

/// Rank 0: every rank's encoded run in rank order (its own slot None); other ranks send
/// theirs (`payload`) and get None.
fn gather_runs<'py>(
    comm: &Bound<'py, PyAny>,
    payload: &Bound<'py, PyBytes>,
) -> PyResult<Option<Vec<Option<Bound<'py, PyAny>>>>> {
    let py = comm.py();
    let byte = py.import("mpi4py.MPI")?.getattr("BYTE")?;
    let len = payload.as_bytes().len();
    let kwargs = PyDict::new(py);
    kwargs.set_item("root", 0)?;
    let sizes = comm.call_method("gather", (len,), Some(&kwargs))?;
    if comm.call_method0("Get_rank")?.extract::<i64>()? != 0 {
        let view = PyMemoryView::from(payload.as_any())?.into_any();
        let kwargs = PyDict::new(py);
        kwargs.set_item("dest", 0)?;
        kwargs.set_item("tag", RUN_TAG)?;
        for range in mpi_job::message_ranges(len, CHUNK) {
            comm.call_method("Send", (message(&view, range, &byte)?,), Some(&kwargs))?;
        }
        return Ok(None);
    }
    let size: usize = comm.call_method0("Get_size")?.extract()?;
    let mut parts: Vec<Option<Bound<'py, PyAny>>> = vec![None; size];
    for (source, part) in parts.iter_mut().enumerate().skip(1) {
        let n: usize = sizes.get_item(source)?.extract()?;
        let buffer = PyByteArray::new_with(py, n, |_| Ok(()))?.into_any();
        let view = PyMemoryView::from(&buffer)?.into_any();
        let kwargs = PyDict::new(py);
        kwargs.set_item("source", source)?;
        kwargs.set_item("tag", RUN_TAG)?;
        for range in mpi_job::message_ranges(n, CHUNK) {
            comm.call_method("Recv", (message(&view, range, &byte)?,), Some(&kwargs))?;
        }
        *part = Some(buffer);
    }
    Ok(Some(parts))
}

/// `warnings.warn(text, RuntimeWarning)` naming the user's line (the first frame outside
/// the manager's modules).
fn warn_at_user_line(py: Python<'_>, text: String) -> PyResult<()> {
    let level = py.import("scope_profiler._manager")?.getattr("_user_stacklevel")?.call1(("scope_profiler._mpi",))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("stacklevel", level)?;
    let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
    py.import("warnings")?.call_method("warn", (text, category), Some(&kwargs))?;
    Ok(())
}

/// `_results_from_native(run)` of the manager's module: the `ProfilingResults` over a run.
fn results_of<'py>(py: Python<'py>, run: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    py.import("scope_profiler._manager")?.getattr("_results_from_native")?.call1((run,))
}

/// `mpi_finalize(manager, config, *, verbose, return_results, native=()) -> ProfilingResults
/// | None`: the MPI branch of `ProfileManager.finalize` (collective; see the module docs).
/// `native`: this rank's regions from C/Fortran traces. Returns rank 0's results, an empty
/// non-root result set elsewhere, or None when no results were asked for. Raises
/// `RuntimeError` for `output_mode="parallel"` with `track_threads` (before anything is
/// touched) and on the other ranks when rank 0 could not write the file (rank 0 raises its
/// own error, e.g. `OSError`); then every call stays buffered and `last_results()` holds
/// the rank's own run. Warns (`RuntimeWarning`, at the user's line) when the rank's calls
/// did not nest.
#[pyfunction]
#[pyo3(signature = (manager, config, *, verbose, return_results, native=None))]
fn mpi_finalize<'py>(
    py: Python<'py>,
    manager: &Bound<'py, PyAny>,
    config: &Bound<'py, PyAny>,
    verbose: &Bound<'py, PyAny>,
    return_results: &Bound<'py, PyAny>,
    native: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let comm = config.getattr("comm")?;
    let rank: i64 = config.getattr("_rank")?.extract()?;
    let size: u32 = config.getattr("_size")?.extract()?;
    let verbose = verbose.is_truthy()?;
    let write_file = !config.getattr("deactivate_file_output")?.is_truthy()?;
    let need_results = return_results.is_truthy()? || verbose;
    if !mpi_job::has_work(write_file, need_results, false) {
        return Ok(None);
    }
    if write_file {
        let mode = if config.getattr("output_mode")?.eq("parallel")? { "parallel" } else { "" };
        if let Some(refusal) = mpi_job::refused(write_file, mode, config.getattr("track_threads")?.is_truthy()?) {
            return Err(PyRuntimeError::new_err(refusal));
        }
    }
    let metadata = config.getattr("metadata")?;
    let hosts = comm.call_method1("allgather", (py.import("socket")?.call_method0("gethostname")?,))?;
    metadata.set_item("num_nodes", py.get_type::<PySet>().call1((hosts,))?.len()?)?;
    let tracker = config.getattr("tracker")?;
    if !tracker.is_none() && tracker.hasattr("_refresh_task_names")? {
        tracker.call_method0("_refresh_task_names")?;
    }
    // No file here (rank 0 writes every rank's calls) and nothing retired yet: the calls are
    // retired only once rank 0 reports the file written, so a failed write loses nothing.
    let kwargs = PyDict::new(py);
    kwargs.set_item("rewind", false)?;
    let native = match native {
        Some(native) => py.get_type::<PyList>().call1((native,))?,
        None => PyList::empty(py).into_any(),
    };
    kwargs.set_item("native", native)?;
    let recorder = config.getattr("_native")?;
    let args = (
        dict_of(&metadata)?,
        config.getattr("start_time_ns")?,
        false,
        config.getattr("file_path")?,
        manager.getattr("_next_call_id")?,
    );
    let (native_run, next_id, nesting_error, _): (
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
        Bound<'py, PyAny>,
    ) = recorder.call_method("finalize", args, Some(&kwargs))?.extract()?;
    manager.setattr("_last_native_run", &native_run)?;
    manager.setattr("_last_written_run", py.None())?; // rank 0 writes the stacked run
    if !nesting_error.is_none() {
        warn_at_user_line(py, mpi_job::nesting_warning(rank, &nesting_error.str()?.to_string()))?;
    }
    let payload = PyBytes::new(py, &encode_run(&native_run.cast::<NativeRun>()?.get().run));
    let parts = gather_runs(&comm, &payload)?;
    let file_path: String = config.getattr("file_path")?.extract()?;
    let mut failure = None;
    let mut stacked = None;
    if let Some(mut parts) = parts {
        parts[0] = Some(native_run.clone());
        let parts = parts.into_iter().enumerate().filter_map(|(r, p)| p.map(|p| (r as u32, p))).collect();
        match stack_runs(py, parts, Some(&dict_of(&metadata)?), Some(size), file_path.clone(), write_file) {
            Ok(run) => stacked = Some(Bound::new(py, run)?.into_any()),
            Err(e) if e.is_instance_of::<PyException>(py) => failure = Some(e),
            Err(e) => return Err(e),
        }
    }
    let told = match &failure {
        Some(e) => {
            let name = e.get_type(py).getattr("__name__")?.to_string();
            Some(mpi_job::failure_broadcast(&name, &e.value(py).str()?.to_string()))
        }
        None => None,
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("root", 0)?;
    let message = comm.call_method("bcast", (told,), Some(&kwargs))?;
    if failure.is_some() || !message.is_none() {
        // every call stays buffered (the call ids are given again): finalize() once the path
        // is writable writes them all; the rank's own run is in last_results()
        manager.setattr("_last_results", results_of(py, &native_run)?)?;
        return Err(match failure {
            Some(e) => e,
            None => PyRuntimeError::new_err(mpi_job::rank0_failure(&message.str()?.to_string())),
        });
    }
    manager.setattr("_next_call_id", next_id)?;
    if write_file {
        recorder.call_method0("retire_taken")?;
    }
    let Some(stacked) = stacked else {
        if !need_results {
            return Ok(None);
        }
        let kwargs = PyDict::new(py);
        kwargs.set_item("metadata", dict_of(&metadata)?)?;
        kwargs.set_item("num_ranks", size)?;
        kwargs.set_item("file_path", &file_path)?;
        kwargs.set_item("is_root", false)?;
        let results = py.import("scope_profiler.results")?.getattr("ProfilingResults")?;
        return Ok(Some(results.call((PyDict::new(py),), Some(&kwargs))?));
    };
    manager.setattr("_last_native_run", &stacked)?;
    let requested: Option<String> = manager.getattr("_requested_output")?.extract()?;
    if write_file {
        let render = py.import("scope_profiler._manager")?.getattr("_render_output")?;
        render.call1((&requested, &file_path, &stacked))?;
    }
    if !need_results {
        return Ok(None);
    }
    let results = results_of(py, &stacked)?;
    if verbose && !results.is_none() && results.hasattr("print_summary")? {
        let label: String = match results.getattr("display_label") {
            Ok(label) => label.extract()?,
            Err(_) => file_path.clone(),
        };
        let title = text_summary::finalize_summary_title(requested.as_deref(), write_file, &label, size);
        let kwargs = PyDict::new(py);
        kwargs.set_item("title", title)?;
        results.call_method("print_summary", (), Some(&kwargs))?;
    }
    Ok(Some(results))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mpi_launched, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_comm, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_finalize, m)?)?;
    m.add("MPI_PARALLEL_WITH_THREADS", mpi_job::PARALLEL_WITH_THREADS)?;
    Ok(())
}
