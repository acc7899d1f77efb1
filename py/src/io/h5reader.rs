//! `scope_profiler.h5reader`: `read_h5` and `read_h5_summary` (HDF5 schemas 1-3, read in
//! Rust by `formats::hdf5`).
//!
//! Errors: `FileNotFoundError` (missing file), `CorruptProfileError` (not HDF5, truncated,
//! damaged index; the message names the file), `HDF5SchemaError` (schema attribute invalid or
//! newer than this package reads).
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_analysis::Run;
use scope_profiler_formats::SummaryFilter;

use crate::errors::{h5_err, SummaryDataUnavailable};
use crate::results::profiling_results::ProfilingResults;

/// Read `path` into results (GIL released while reading). When a process that streamed
/// to `path` (`flush_interval`) died before writing it, `path` is first recovered from its
/// sidecar ([`recover_first`]; a warning names both files).
pub fn read(py: Python<'_>, path: PathBuf, verbose: bool) -> PyResult<ProfilingResults> {
    let run = read_run(py, &path)?;
    if verbose {
        let msg = format!("Read {}: {} region row(s), {} rank(s)", path.display(), run.regions.len(), run.num_ranks);
        py.import("builtins")?.getattr("print")?.call1((msg,))?;
    }
    ProfilingResults::from_run(py, run, path.to_string_lossy().into_owned(), true)
}

/// The run in the profile at `path` ([`recover_first`] from a pending sidecar, else read;
/// the GIL released meanwhile). Raises as `read_h5`.
pub(crate) fn read_run(py: Python<'_>, path: &std::path::Path) -> PyResult<Run> {
    match recover_first(py, path)? {
        Some(run) => Ok(run),
        None => read_file(py, path),
    }
}

/// The run in the HDF5 file at `path` (GIL released while reading); what the read left out
/// (a row's unreadable per-call metadata) is a `RuntimeWarning` each. Raises as `read_h5`.
pub(crate) fn read_file(py: Python<'_>, path: &std::path::Path) -> PyResult<Run> {
    let (run, notes) = py.detach(|| scope_profiler_formats::read_h5_noting(path)).map_err(h5_err)?;
    for note in notes {
        crate::errors::runtime_warning(py, &note)?;
    }
    Ok(run)
}

/// The sidecar of a streamed recording (`flush_interval`) whose process is
/// gone holds calls `path` does not, with a `RuntimeWarning` naming both files:
/// * `path` is missing (the process was killed before writing it): it is recovered (written
///   from the sidecar, [`scope_profiler_finalize::stream::recover`]) and then read; when it
///   cannot be written, the recovered run is returned (read in memory);
/// * `path` is older than the sidecar (killed after a checkpoint, or it ended without a
///   last `finalize()`, or it recorded after its exit-time finalize): `path` is read as it
///   is - a read does not change a file - and the warning says how `scope-profiler recover`
///   adds the sidecar's calls to it.
///
/// None when `path` is to be read as usual.
fn recover_first(py: Python<'_>, path: &std::path::Path) -> PyResult<Option<Run>> {
    use scope_profiler_finalize::stream::{describe, pending_sidecar, recover, recover_run, RecoverError};
    let Some(sidecar) = py.detach(|| pending_sidecar(path)) else { return Ok(None) };
    let warn = |msg: String| crate::errors::runtime_warning(py, &msg);
    if path.exists() {
        warn(format!(
            "{} is older than {}, the sidecar of a flush_interval recording whose process ended \
             without writing the calls it holds; reading {0} as it is (`scope-profiler recover {0}` \
             adds them to it when its process wrote both, and never replaces it by fewer calls than it holds)",
            path.display(),
            sidecar.display()
        ))?;
        return Ok(None);
    }
    let head = format!(
        "{} does not exist, but {} does (the sidecar of a flush_interval recording whose process \
         ended before writing the file)",
        path.display(),
        sidecar.display()
    );
    match py.detach(|| recover(path, Some(&sidecar), None)) {
        Ok((recovery, written)) => {
            warn(format!("{head}: {}", describe(&recovery, &written)))?;
            Ok(None)
        }
        Err(RecoverError::Write(failure)) => match py.detach(|| recover_run(&sidecar)) {
            Ok(recovery) => {
                let calls = recovery.calls;
                warn(format!("{head}: could not write it ({failure}); read {calls} call(s) from the sidecar instead"))?;
                Ok(Some(recovery.run))
            }
            Err(e) => {
                warn(format!("{head}: could not write it ({failure}) nor read it ({e})"))?;
                Ok(None)
            }
        },
        // say why the sidecar did not help before the missing file is reported
        Err(e) => {
            warn(format!("{head}, but nothing could be recovered from it: {e}"))?;
            Ok(None)
        }
    }
}

/// Load a profile written by `finalize()` (any schema 1-3): per-call arrays are read-only
/// numpy views of the loaded columns.
#[pyfunction]
#[pyo3(signature = (file_path, verbose=false))]
pub fn read_h5(py: Python<'_>, file_path: PathBuf, verbose: bool) -> PyResult<ProfilingResults> {
    read(py, file_path, verbose)
}

/// `None`, one value or a list as a set of wanted values.
fn wanted<T: for<'a, 'py> FromPyObject<'a, 'py, Error = PyErr>>(
    arg: Option<Bound<'_, PyAny>>,
) -> PyResult<Option<Vec<T>>> {
    match arg {
        None => Ok(None),
        Some(a) if a.is_none() => Ok(None),
        Some(a) => match a.extract::<T>() {
            Ok(one) if !a.is_instance_of::<PyList>() && !a.is_instance_of::<pyo3::types::PyTuple>() => {
                Ok(Some(vec![one]))
            }
            _ => Ok(Some(a.try_iter()?.map(|v| v?.extract::<T>()).collect::<PyResult<_>>()?)),
        },
    }
}

/// Load a profile's statistics without reading its per-call events: the stored summary
/// statistics, counts, exclusive totals, sources, tags, metadata and lane tables; `/events`
/// is never touched. Per-call APIs then raise `EventDataUnavailableError`. `regions` /
/// `ranks` restrict the rows (and the lane tables to those ranks). A file without fixed-size
/// summaries (schema 1) is read in full and restricted when `fallback`, else
/// `SummaryDataUnavailable` is raised. `include_likwid`/`include_line_profile`: accepted
/// (this edition records neither).
#[pyfunction]
#[pyo3(signature = (file_path, verbose=false, *, fallback=true, include_likwid=true, include_line_profile=true,
    regions=None, ranks=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_h5_summary(
    py: Python<'_>,
    file_path: PathBuf,
    verbose: bool,
    fallback: bool,
    include_likwid: bool,
    include_line_profile: bool,
    regions: Option<Bound<'_, PyAny>>,
    ranks: Option<Bound<'_, PyAny>>,
) -> PyResult<ProfilingResults> {
    let _ = (include_likwid, include_line_profile);
    let filter = SummaryFilter { names: wanted(regions)?, ranks: wanted(ranks)? };
    let path_str = file_path.to_string_lossy().into_owned();
    let Some(summary) = py.detach(|| scope_profiler_formats::read_h5_summary(&file_path)).map_err(h5_err)? else {
        if !fallback {
            return Err(SummaryDataUnavailable::new_err(
                "summary-only reads require a schema-2 or newer profiling file with fixed-size summary statistics",
            ));
        }
        let run = read_file(py, &file_path)?;
        return ProfilingResults::from_run(py, filter.restrict(run), path_str, true);
    };
    if verbose {
        let msg = format!("Read summary of {path_str}: {} region row(s)", summary.rows.len());
        py.import("builtins")?.getattr("print")?.call1((msg,))?;
    }
    ProfilingResults::from_run(py, summary.into_run(&filter), path_str, false)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_h5, m)?)?;
    m.add_function(wrap_pyfunction!(read_h5_summary, m)?)?;
    Ok(())
}
