//! Graphics and table exports for Python: folded stacks, flame graph SVG (inferno), lane
//! timeline SVG, Parquet (`formats::{folded, flamegraph, timeline, parquet_export}`).
//!
//! Module functions taking the `NativeRun`, all of one shape:
//! `_native.write_folded / write_flamegraph_svg / write_timeline_svg / write_parquet(native,
//! ranks, label, path, names=None, ...) -> list[str]` (the paths written). `names` (optional)
//! are the region names to keep (`get_regions` result). The GIL is released while writing.
//! Errors: `NestingError`, `ValueError` (no calls), `OSError`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use scope_profiler_analysis::Run;
use scope_profiler_formats::folded::FoldedUnit;
use scope_profiler_formats::timeline::TimelineOptions;
use scope_profiler_formats::{ExportError, Selection};

use crate::run::NativeRun;

fn to_py(e: ExportError) -> PyErr {
    match e {
        ExportError::Nesting(m) => crate::errors::NestingError::new_err(m),
        ExportError::NoCalls => PyValueError::new_err(ExportError::NoCalls.to_string()),
        ExportError::Io(m) => PyOSError::new_err(m),
    }
}

fn run_writer(
    py: Python<'_>,
    native: &NativeRun,
    ranks: Vec<u32>,
    label: String,
    path: PathBuf,
    names: Option<Vec<String>>,
    write: impl FnOnce(&Run, &Selection, &Path) -> Result<Vec<PathBuf>, ExportError> + Send,
) -> PyResult<Vec<PathBuf>> {
    let run = Arc::clone(&native.run);
    let sel = Selection { ranks, regions: names, label };
    py.detach(move || write(&run, &sel, &path)).map_err(to_py)
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
        scope_profiler_formats::folded::write_folded_unit(run, sel, unit, p).map(|()| vec![p.to_path_buf()])
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
        scope_profiler_formats::flamegraph::write_flamegraph_svg(run, sel, p).map(|()| vec![p.to_path_buf()])
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
        scope_profiler_formats::timeline::write_timeline_svg_with(run, sel, &opts, p).map(|()| vec![p.to_path_buf()])
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
    run_writer(py, &native, ranks, label, path, names, scope_profiler_formats::parquet_export::write_parquet)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_folded, m)?)?;
    m.add_function(wrap_pyfunction!(write_flamegraph_svg, m)?)?;
    m.add_function(wrap_pyfunction!(write_timeline_svg, m)?)?;
    m.add_function(wrap_pyfunction!(write_parquet, m)?)?;
    Ok(())
}
