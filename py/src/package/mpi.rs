//! Backs `scope_profiler._mpi`: the decisions and texts of a collective `finalize()` under
//! MPI ([`scope_profiler_session::mpi_job`]). The sequence itself - mpi4py's `allgather`,
//! `Send`/`Recv`, `bcast`, the manager's state - is Python (`_mpi.finalize`).
use pyo3::prelude::*;
use scope_profiler_session::mpi_job::{self, CHUNK, RUN_TAG};

/// `mpi_message_ranges(length) -> [(start, end), ...]`: the byte ranges a rank's encoded run
/// of `length` bytes crosses to rank 0 in (`MPI.BYTE` messages of at most 1 GiB, in order;
/// none for an empty run).
#[pyfunction]
fn mpi_message_ranges(length: usize) -> Vec<(usize, usize)> {
    mpi_job::message_ranges(length, CHUNK)
}

/// `mpi_has_work(write_file, return_results, verbose) -> bool`: whether a collective
/// finalize has anything to do (a file to write or results to return).
#[pyfunction]
fn mpi_has_work(write_file: bool, return_results: bool, verbose: bool) -> bool {
    mpi_job::has_work(write_file, return_results, verbose)
}

/// `mpi_refused(write_file, output_mode, track_threads) -> str | None`: the `RuntimeError`
/// text when the collective finalize is refused before any buffer is touched
/// (`output_mode="parallel"` with `track_threads`), else None.
#[pyfunction]
fn mpi_refused(write_file: bool, output_mode: &str, track_threads: bool) -> Option<&'static str> {
    mpi_job::refused(write_file, output_mode, track_threads)
}

/// `mpi_nesting_warning(rank, error) -> str`: the warning of a rank whose calls did not nest.
#[pyfunction]
fn mpi_nesting_warning(rank: i64, error: &str) -> String {
    mpi_job::nesting_warning(rank, error)
}

/// `mpi_failure_broadcast(type_name, message) -> str`: what rank 0 broadcasts when it could
/// not write the job's file (`"{Type}: {message}"`).
#[pyfunction]
fn mpi_failure_broadcast(type_name: &str, message: &str) -> String {
    mpi_job::failure_broadcast(type_name, message)
}

/// `mpi_rank0_failure(message) -> str`: the `RuntimeError` text of the other ranks when rank 0
/// could not write the job's file (`message`: what it broadcast).
#[pyfunction]
fn mpi_rank0_failure(message: &str) -> String {
    mpi_job::rank0_failure(message)
}

/// `mpi_without_mpi4py(reason) -> str`: the `RuntimeWarning` of a process that looks like an
/// MPI rank but cannot import mpi4py (`reason`: the `ImportError`'s text).
#[pyfunction]
fn mpi_without_mpi4py(reason: &str) -> String {
    mpi_job::without_mpi4py(reason)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mpi_message_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_has_work, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_refused, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_nesting_warning, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_failure_broadcast, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_rank0_failure, m)?)?;
    m.add_function(wrap_pyfunction!(mpi_without_mpi4py, m)?)?;
    m.add("MPI_PARALLEL_WITH_THREADS", mpi_job::PARALLEL_WITH_THREADS)?;
    m.add("MPI_RUN_TAG", RUN_TAG)?;
    Ok(())
}
