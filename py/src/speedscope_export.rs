//! `scope_profiler.speedscope_export`: `export_speedscope`.
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::speedscope::write_speedscope;

use crate::export::{only, ExportArgs};

/// Write speedscope JSON files; returns the paths written (`list[pathlib.Path]`).
///
/// One file per run (`name.partition(".")` keeps a `.speedscope.json` tail, default
/// `.speedscope.json`; with several runs the file stem gets `_<label slug>`), one evented
/// profile per lane of each requested rank (default ranks: `[0]`), regions in
/// `get_regions` order (it decides exact ties). Raises `TypeError` for anything but
/// results, `ValueError` for no data, an invalid rank, a filter matching nothing or no
/// calls, `NestingError` when a rank cannot be reconstructed, `OSError` on I/O failure.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_speedscope<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::Speedscope, "view at https://www.speedscope.app", &|run, sel, p| {
        only(p, write_speedscope(&sel.apply_in_order(run), &sel.ranks, &sel.label, p))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_speedscope, m)?)
}
