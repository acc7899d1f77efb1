//! Export writers for Python (`formats::{pstats, chrome_trace, perfetto, pprof, folded,
//! flamegraph, timeline, parquet_export}`), and the mapping of [`ExportError`] to Python
//! exceptions shared with the speedscope writer.
//!
//! The writers are module functions taking the `NativeRun` (a second `#[pymethods]` block
//! on `NativeRun` would need pyo3's `multiple-pymethods` feature), all of one shape
//! `(native, ranks, label, path, names=None, ...)`; `names` (optional) are the region names
//! to keep (`get_regions` result). The GIL is released while writing.
//!
//! - `_native.write_prof(..., call_paths=True, per_lane=False) -> list[str]`
//! - `_native.write_chrome_trace / write_perfetto / write_pprof(...) -> None`
//! - `_native.write_folded(..., unit="ns") / write_flamegraph_svg(...) /
//!   write_timeline_svg(..., width=1400.0) / write_parquet(...) -> list[str]` (the paths written)
//!
//! Errors: `NestingError`, `ValueError` (no calls), `OSError`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use scope_profiler_analysis::Run;
use scope_profiler_formats::folded::FoldedUnit;
use scope_profiler_formats::pstats::ProfOptions;
use scope_profiler_formats::timeline::TimelineOptions;
use scope_profiler_formats::{chrome_trace, flamegraph, folded, parquet_export, perfetto, pprof, pstats, timeline};
use scope_profiler_formats::{ExportError, Selection};

use crate::run::NativeRun;

/// `Nesting` → `NestingError`, `NoCalls` → `ValueError`, `Io` → `OSError`.
pub fn export_err(e: ExportError) -> PyErr {
    match e {
        ExportError::Nesting(m) => crate::errors::NestingError::new_err(m),
        ExportError::NoCalls => PyValueError::new_err(ExportError::NoCalls.to_string()),
        ExportError::Io(m) => PyOSError::new_err(m),
    }
}

/// The common part of every writer: build the [`Selection`], run `write` on the run with the
/// GIL released, map its error with [`export_err`].
fn run_writer<T: Send>(
    py: Python<'_>,
    native: &NativeRun,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
    write: impl FnOnce(&Run, &Selection, &Path) -> Result<T, ExportError> + Send,
) -> PyResult<T> {
    let run = Arc::clone(&native.run);
    let sel = Selection { ranks, regions: names, label };
    py.detach(move || write(&run, &sel, &path)).map_err(export_err)
}

/// `[path]`: the result of the single-file writers that return the paths written.
fn only(p: &Path) -> Vec<PathBuf> {
    vec![p.to_path_buf()]
}

/// Write one `.prof` per rank (or per lane) next to `path` (`stem_rank{R}[_{lane}].ext`);
/// returns the paths written.
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None, call_paths=true, per_lane=false))]
#[allow(clippy::too_many_arguments)]
pub fn write_prof(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
    call_paths: bool,
    per_lane: bool,
) -> PyResult<Vec<PathBuf>> {
    run_writer(py, &native, ranks, label, path, names, move |run, sel, p| {
        pstats::write_prof(run, sel, p, ProfOptions { call_paths, per_lane })
    })
}

/// Write the Chrome trace JSON of `ranks` to `path`.
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None))]
pub fn write_chrome_trace(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
) -> PyResult<()> {
    run_writer(py, &native, ranks, label, path, names, chrome_trace::write_chrome_trace)
}

/// Write the Perfetto protobuf trace of `ranks` to `path`.
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None))]
pub fn write_perfetto(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
) -> PyResult<()> {
    run_writer(py, &native, ranks, label, path, names, perfetto::write_perfetto)
}

/// Write the pprof profile of `ranks` to `path` (gzip-compressed when it ends in `.gz`).
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None))]
pub fn write_pprof(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
) -> PyResult<()> {
    run_writer(py, &native, ranks, label, path, names, pprof::write_pprof)
}

/// Folded stacks `lane;a;b COUNT` (self time per path) to `path`; `unit` "ns" or "us".
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None, unit="ns"))]
pub fn write_folded(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
    unit: &str,
) -> PyResult<Vec<PathBuf>> {
    let unit = match unit {
        "ns" => FoldedUnit::Nanoseconds,
        "us" | "µs" => FoldedUnit::Microseconds,
        other => return Err(PyValueError::new_err(format!("unit must be 'ns' or 'us', not {other:?}"))),
    };
    run_writer(py, &native, ranks, label, path, names, move |run, sel, p| {
        folded::write_folded_unit(run, sel, unit, p).map(|()| only(p))
    })
}

/// Flame graph SVG (inferno) of the folded stacks to `path`.
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None))]
pub fn write_flamegraph_svg(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
) -> PyResult<Vec<PathBuf>> {
    run_writer(py, &native, ranks, label, path, names, |run, sel, p| {
        flamegraph::write_flamegraph_svg(run, sel, p).map(|()| only(p))
    })
}

/// Lane timeline SVG to `path` (`width` in px).
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None, width=1400.0))]
pub fn write_timeline_svg(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
    width: f64,
) -> PyResult<Vec<PathBuf>> {
    let opts = TimelineOptions { width, ..TimelineOptions::default() };
    run_writer(py, &native, ranks, label, path, names, move |run, sel, p| {
        timeline::write_timeline_svg_with(run, sel, &opts, p).map(|()| only(p))
    })
}

/// Parquet events file at `path` and lanes file beside it; returns both paths.
#[pyfunction]
#[pyo3(signature = (native, ranks, label, path, names=None))]
pub fn write_parquet(
    py: Python<'_>,
    native: PyRef<'_, NativeRun>,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
) -> PyResult<Vec<PathBuf>> {
    run_writer(py, &native, ranks, label, path, names, parquet_export::write_parquet)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_prof, m)?)?;
    m.add_function(wrap_pyfunction!(write_chrome_trace, m)?)?;
    m.add_function(wrap_pyfunction!(write_perfetto, m)?)?;
    m.add_function(wrap_pyfunction!(write_pprof, m)?)?;
    m.add_function(wrap_pyfunction!(write_folded, m)?)?;
    m.add_function(wrap_pyfunction!(write_flamegraph_svg, m)?)?;
    m.add_function(wrap_pyfunction!(write_timeline_svg, m)?)?;
    m.add_function(wrap_pyfunction!(write_parquet, m)?)?;
    Ok(())
}
