//! Backs `scope_profiler.native_trace`: the `.spt` region traces of the reference's C and
//! Fortran region APIs ([`scope_profiler_formats::native_trace`]).
use numpy::PyArray1;
use pyo3::prelude::*;
use std::path::PathBuf;

use arrow_array::Int64Array;
use pyo3::exceptions::PyFileNotFoundError;
use pyo3::types::{PyDict, PyIterator, PyList, PyString, PyTuple};
use scope_profiler_analysis::{RegionCalls, RowView};
use scope_profiler_formats::native_trace;

use crate::region::Region;

use crate::errors::TraceFormatError;

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

/// `read_trace(path) -> (rank, {name: RegionTrace})`: one `.spt` trace, regions in file
/// order. Raises `TraceFormatError` (a `ValueError` naming the file; not a trace, truncated,
/// unknown version, trailing bytes, a region twice) or `OSError` (unreadable file).
#[pyfunction]
fn read_trace<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<(i32, Bound<'py, PyDict>)> {
    let trace = py
        .detach(|| scope_profiler_formats::native_trace::read_trace(&path))?
        .map_err(|e| TraceFormatError::new_err(e.0))?;
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

/// `read_trace_regions(path) -> {rank: {name: Region}}`: one `.spt` trace as
/// `read_native_ranks` gives it: its one rank, each region (file order) a standalone `Region`
/// of its calls (int64 ns) and source location, as `Region(starts, ends, source_file=...,
/// source_lineno=...)` makes it. Raises as `read_trace`.
#[pyfunction]
fn read_trace_regions<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let trace = py
        .detach(|| scope_profiler_formats::native_trace::read_trace(&path))?
        .map_err(|e| TraceFormatError::new_err(e.0))?;
    let regions = PyDict::new(py);
    for r in trace.regions {
        let mut calls = RegionCalls::new(0, 0, Int64Array::from(r.start_ns), Int64Array::from(r.end_ns));
        calls.source_file = r.source_file;
        calls.source_line = r.source_line;
        regions.set_item(r.name, Bound::new(py, Region::of(RowView::detached("", calls), true))?)?;
    }
    let ranks = PyDict::new(py);
    ranks.set_item(trace.rank, regions)?;
    Ok(ranks)
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

/// `find_traces(inputs) -> list[str]`: the native output files among `inputs` (a path or
/// an iterable of paths; directories searched non-recursively for `*.spt` and
/// `*_rank<N>.h5`), sorted, without duplicates. `FileNotFoundError` for an input that does
/// not exist or a directory with neither.
#[pyfunction]
#[pyo3(name = "find_traces")]
fn find_traces_py(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    Ok(found(inputs)?.into_iter().map(|p| p.to_string_lossy().into_owned()).collect())
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
        let regions = if path.extension().is_some_and(|e| e == "h5") {
            scope_profiler_finalize::native_regions::of_run(&crate::h5reader::read_run(py, &path)?, rank)
        } else {
            let trace = py.detach(|| native_trace::read_trace(&path))?.map_err(|e| TraceFormatError::new_err(e.0))?;
            scope_profiler_finalize::native_regions::of_trace(&trace, rank)
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
    m.add_function(wrap_pyfunction!(read_trace_regions, m)?)?;
    m.add_function(wrap_pyfunction!(find_traces_py, m)?)?;
    m.add_function(wrap_pyfunction!(native_regions, m)?)?;
    Ok(())
}
