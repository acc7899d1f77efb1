//! Export writers for Python: pstats `.prof`, Chrome trace JSON, Perfetto protobuf, pprof
//! (`formats::{pstats, chrome_trace, perfetto, pprof}`), and the mapping of
//! [`ExportError`] to Python exceptions shared with the speedscope writer.
//!
//! The writers are module functions taking the `NativeRun` (a second `#[pymethods]` block
//! on `NativeRun` would need pyo3's `multiple-pymethods` feature):
//! `_native.write_prof(native, ranks, label, path, names=None, call_paths=True,
//! per_lane=False) -> list[str]`, `_native.write_chrome_trace / write_perfetto /
//! write_pprof(native, ranks, label, path, names=None) -> None`. `names` (optional) are
//! the region names to keep (`get_regions` result). The GIL is released while writing.
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use scope_profiler_formats::pstats::ProfOptions;
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

fn selection(ranks: Vec<u32>, label: String, names: Option<Vec<String>>) -> Selection {
    Selection { ranks, regions: names, label }
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
    let run = Arc::clone(&native.run);
    let sel = selection(ranks, label, names);
    py.detach(move || scope_profiler_formats::pstats::write_prof(&run, &sel, &path, ProfOptions { call_paths, per_lane }))
        .map_err(export_err)
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
    let run = Arc::clone(&native.run);
    let sel = selection(ranks, label, names);
    py.detach(move || scope_profiler_formats::chrome_trace::write_chrome_trace(&run, &sel, &path)).map_err(export_err)
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
    let run = Arc::clone(&native.run);
    let sel = selection(ranks, label, names);
    py.detach(move || scope_profiler_formats::perfetto::write_perfetto(&run, &sel, &path)).map_err(export_err)
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
    let run = Arc::clone(&native.run);
    let sel = selection(ranks, label, names);
    py.detach(move || scope_profiler_formats::pprof::write_pprof(&run, &sel, &path)).map_err(export_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_prof, m)?)?;
    m.add_function(wrap_pyfunction!(write_chrome_trace, m)?)?;
    m.add_function(wrap_pyfunction!(write_perfetto, m)?)?;
    m.add_function(wrap_pyfunction!(write_pprof, m)?)?;
    Ok(())
}
