//! `scope_profiler.exports`, graphics and tables: `export_folded`, `export_timeline_svg`,
//! `export_parquet`. All follow speedscope's naming rule (`name.partition(".")` keeps the
//! tail as the suffix; with several runs `_<label slug>` joins the stem).
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::folded::{write_folded_unit, FoldedUnit};
use scope_profiler_formats::parquet_export::write_parquet;
use scope_profiler_formats::timeline::{write_timeline_svg_with, TimelineOptions};

use crate::export::{only, ExportArgs};

/// Write folded stacks, one file per run (default suffix `.folded`): `lane;region;child
/// <self time>` per distinct call path per lane, integer counts in `unit` (`"ns"`, exact,
/// or `"us"`). The lane label is the root frame (`"rank R - "` prefixed when several ranks
/// are exported). Returns the paths written; `ValueError` for another unit, other errors
/// as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true, unit="ns"))]
#[allow(clippy::too_many_arguments)]
pub fn export_folded<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
    unit: &str,
) -> PyResult<Bound<'py, PyList>> {
    let unit = match unit {
        "ns" => FoldedUnit::Nanoseconds,
        "us" | "µs" => FoldedUnit::Microseconds,
        other => return Err(PyValueError::new_err(format!("unit must be 'ns' or 'us', not {other:?}"))),
    };
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    let note = "folded stacks: inferno-flamegraph, flamegraph.pl, speedscope";
    args.export(ExportFormat::Folded, note, &move |run, sel, p| only(p, write_folded_unit(run, sel, unit, p)))
}

/// Write the lane timeline SVG of each run (default suffix `.timeline.svg`, `width` in
/// px): one row per thread and task, calls as nested bars on a time axis in ms since the
/// run start, await share hatched, a tooltip per bar. Returns the paths written; errors as
/// `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true, width=1400.0))]
#[allow(clippy::too_many_arguments)]
pub fn export_timeline_svg<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
    width: f64,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    let opts = TimelineOptions { width, ..TimelineOptions::default() };
    args.export(ExportFormat::TimelineSvg, "lane timeline, open in a browser", &|run, sel, p| {
        only(p, write_timeline_svg_with(run, sel, &opts, p))
    })
}

/// Write Parquet files per run (default suffix `.parquet`): the events (one row per call:
/// rank, region, call_index, start/end/duration ns, call_id, parent_id, thread, task,
/// await_ns, depth, lane, exclusive_ns) and, beside it, the lanes (`x.lanes.parquet`:
/// thread and task tables, join on `(rank, lane)`). Returns events and lanes paths in
/// order; errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_parquet<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::Parquet, "Parquet: DuckDB, Polars, pyarrow", &write_parquet)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(export_folded, m)?)?;
    m.add_function(wrap_pyfunction!(export_timeline_svg, m)?)?;
    m.add_function(wrap_pyfunction!(export_parquet, m)?)
}
