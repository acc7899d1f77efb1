//! Backs `scope_profiler.native_trace`: the `.spt` region traces and per-rank HDF5 profiles
//! of the reference's C and Fortran region APIs ([`scope_profiler_formats::native_trace`]),
//! read into results ([`scope_profiler_finalize::native_regions`]).
use std::path::{Path, PathBuf};
use std::sync::Arc;

use numpy::PyArray1;
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyIterator, PyList, PyString, PyTuple};
use scope_profiler_analysis::{RowView, RunAnalysis};
use scope_profiler_finalize::native_regions::{self as foreign, LoadError, NativeOutput};
use scope_profiler_formats::native_trace;

use crate::errors::TraceFormatError;
use crate::results::profiling_results::ProfilingResults;
use crate::results::region::Region;

/// One region of a `.spt` trace: unpacks as `(start_times, end_times)` (int64 ns arrays,
/// the clock of `time.perf_counter_ns`), with the region's source location as `source_file`
/// / `source_lineno` (`None` when the trace has none, version 1).
#[pyclass(frozen, name = "RegionTrace", module = "scope_profiler._native")]
pub struct RegionTrace {
    /// Call start times, int64 ns.
    #[pyo3(get)]
    start_times: Py<PyAny>,
    /// Call end times, int64 ns.
    #[pyo3(get)]
    end_times: Py<PyAny>,
    /// The region's source file, or `None`.
    #[pyo3(get)]
    source_file: Option<String>,
    /// The region's source line, or `None`.
    #[pyo3(get)]
    source_lineno: Option<i64>,
}

impl RegionTrace {
    fn pair<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, [self.start_times.bind(py), self.end_times.bind(py)])
    }
}

#[pymethods]
impl RegionTrace {
    /// `(start_times, end_times)[index]` (ints, negative ints and slices, as a tuple).
    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.pair(py)?.as_any().get_item(index)
    }

    /// Iterates `start_times`, then `end_times`.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        self.pair(py)?.as_any().try_iter()
    }

    /// Always 2.
    fn __len__(&self) -> usize {
        2
    }
}

/// `read_trace(path) -> (rank, {name: RegionTrace})`: one rank's `.spt` trace, `{region
/// name: (start_times, end_times)}` (int64 ns arrays, file order), each value also with the
/// region's source location as `source_file` / `source_lineno` (`None` when the trace has
/// none). Raises `TraceFormatError` (a `ValueError`, naming the file) when the file is not
/// a trace, is truncated, has trailing bytes, holds a region twice or uses an unknown
/// version; `OSError` when it cannot be read.
#[pyfunction]
fn read_trace<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<(i32, Bound<'py, PyDict>)> {
    let trace = trace_at(py, &path)?;
    let regions = PyDict::new(py);
    for r in trace.regions {
        let region = RegionTrace {
            start_times: PyArray1::from_vec(py, r.start_ns).into_any().unbind(),
            end_times: PyArray1::from_vec(py, r.end_ns).into_any().unbind(),
            source_file: r.source_file,
            source_lineno: r.source_line,
        };
        regions.set_item(r.name, Bound::new(py, region)?)?;
    }
    Ok((trace.rank, regions))
}

fn trace_at(py: Python<'_>, path: &Path) -> PyResult<native_trace::Trace> {
    py.detach(|| native_trace::read_trace(path))?.map_err(|e| TraceFormatError::new_err(e.0))
}

/// The native output file at `path`: a per-rank HDF5 profile (`.h5`) or a `.spt` trace.
fn output_at(py: Python<'_>, path: &Path) -> PyResult<NativeOutput> {
    Ok(if path.extension().is_some_and(|e| e == "h5") {
        NativeOutput::Profile(crate::io::h5reader::read_run(py, path)?)
    } else {
        NativeOutput::Trace(trace_at(py, path)?)
    })
}

/// `read_native_h5(path) -> ({rank: {name: Region}}, metadata)`: a per-rank HDF5 profile of
/// an `SP_USE_HDF5` C build (any profile works), ranks in the order they first appear over
/// the regions in `get_regions()` order (earliest start first), each rank's regions in that
/// order; times int64 ns / float s as `Region` gives them. Raises as `read_h5`.
#[pyfunction]
fn read_native_h5<'py>(py: Python<'py>, path: PathBuf) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let run = crate::io::h5reader::read_run(py, &path)?;
    let listing = foreign::profile_ranks(&run);
    let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
    let ranks = PyDict::new(py);
    for (rank, rows) in listing {
        let regions = PyDict::new(py);
        for pos in rows {
            let name = &analysis.run.region_names[analysis.run.regions[pos].region as usize];
            regions.set_item(name, Region::of(RowView::of_run(&analysis, pos), true))?;
        }
        ranks.set_item(rank, regions)?;
    }
    Ok((ranks, crate::run_values::metadata_dict(py, &analysis.run)?))
}

/// `read_native_ranks(path) -> ({rank: {name: Region}}, metadata)`: one native output file,
/// either format: a `.h5` name as `read_native_h5`; anything else a `.spt` trace: its one
/// rank, each region (file order) a standalone `Region` of its calls (int64 ns) and source
/// location, and no metadata (`{}`). Raises as `read_native_h5` / `read_trace`.
#[pyfunction]
fn read_native_ranks<'py>(py: Python<'py>, path: PathBuf) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    if path.extension().is_some_and(|e| e == "h5") {
        return read_native_h5(py, path);
    }
    let ranks = PyDict::new(py);
    for (rank, named) in NativeOutput::Trace(trace_at(py, &path)?).ranks() {
        let regions = PyDict::new(py);
        for (name, calls) in named {
            regions.set_item(name, Region::of(RowView::detached("", calls), true))?;
        }
        ranks.set_item(rank, regions)?;
    }
    Ok((ranks, PyDict::new(py)))
}

/// `load_traces(inputs, label=None) -> ProfilingResults`: native output (`.spt` traces and
/// per-rank `.h5` profiles, mixed freely; `inputs` as `find_traces`) as one result, every
/// rank in it (`num_ranks`: the ranks the files claim); metadata: the file of the lowest
/// rank with metadata, then `source="native"`, `trace_format_version`, `start_time_ns` (the
/// earliest first call start, ns) and `label`; `file_path` = `label or "native_trace"`.
/// Raises `TraceFormatError` when two files claim the same rank, `ValueError` for a
/// negative rank with regions, and as `find_traces` / `read_native_ranks`.
#[pyfunction]
#[pyo3(signature = (inputs, label=None))]
fn load_traces(py: Python<'_>, inputs: &Bound<'_, PyAny>, label: Option<String>) -> PyResult<ProfilingResults> {
    let mut loader = foreign::TraceLoader::default();
    for path in found_paths(inputs)? {
        let shown = path.str()?.to_string();
        let file = output_at(py, &path.extract::<PathBuf>()?)?;
        loader.add(&shown, file).map_err(load_err)?;
    }
    let loaded = loader.finish(label.as_deref()).map_err(load_err)?;
    let file_path = label.filter(|l| !l.is_empty()).unwrap_or_else(|| "native_trace".into());
    Ok(ProfilingResults::from_run(py, loaded.run, file_path, true)?.with_num_ranks(loaded.num_ranks))
}

fn load_err(e: LoadError) -> PyErr {
    match e {
        LoadError::RankTwice(..) => TraceFormatError::new_err(e.to_string()),
        LoadError::InvalidRank(_) => PyValueError::new_err(e.to_string()),
    }
}

/// The paths `inputs` names: one `str` or `os.PathLike`, or an iterable of them.
fn input_paths(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let path_like = inputs.py().import("os")?.getattr("PathLike")?;
    if inputs.is_instance_of::<PyString>() || inputs.is_instance(&path_like)? {
        return Ok(vec![inputs.extract()?]);
    }
    inputs.try_iter()?.map(|p| p?.extract::<PathBuf>()).collect()
}

fn found(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let paths = input_paths(inputs)?;
    native_trace::find_traces(&paths).map_err(PyFileNotFoundError::new_err)
}

/// [`found`] as `pathlib.Path`s.
fn found_paths<'py>(inputs: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let path_type = inputs.py().import("pathlib")?.getattr("Path")?;
    found(inputs)?.into_iter().map(|p| path_type.call1((p,))).collect()
}

/// `find_traces(inputs) -> list[pathlib.Path]`: the native output files among `inputs` (a
/// path or an iterable of paths; directories searched non-recursively for `*.spt` and
/// `*_rank<N>.h5`), sorted, without duplicates. Raises `FileNotFoundError` for an input
/// that does not exist or a directory with neither.
#[pyfunction]
#[pyo3(name = "find_traces")]
fn find_traces_py<'py>(inputs: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    found_paths(inputs)
}

/// `native_regions(inputs, rank) -> [(name, starts, ends, source_file, source_line), ...]`:
/// the regions rank `rank` recorded in the native output `inputs` (as `find_traces`;
/// `.spt` traces and per-rank `.h5` profiles), files in `find_traces` order, the regions of
/// each in its order (a trace's file order; a profile's `get_regions()` order); `starts` /
/// `ends` int64 ns arrays, the form `NativeRecorder.finalize(native=...)` takes. Raises
/// `FileNotFoundError` (as `find_traces`), `TraceFormatError`, `OSError`, and as `read_h5`.
#[pyfunction]
fn native_regions<'py>(py: Python<'py>, inputs: &Bound<'py, PyAny>, rank: i64) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for path in found(inputs)? {
        let regions = match output_at(py, &path)? {
            NativeOutput::Profile(run) => foreign::of_run(&run, rank),
            NativeOutput::Trace(trace) => foreign::of_trace(&trace, rank),
        };
        for r in regions {
            out.append((
                r.name,
                PyArray1::from_vec(py, r.start_ns),
                PyArray1::from_vec(py, r.end_ns),
                r.source_file,
                r.source_line,
            ))?;
        }
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RegionTrace>()?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(read_native_h5, m)?)?;
    m.add_function(wrap_pyfunction!(read_native_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(load_traces, m)?)?;
    m.add_function(wrap_pyfunction!(find_traces_py, m)?)?;
    m.add_function(wrap_pyfunction!(native_regions, m)?)?;
    Ok(())
}
