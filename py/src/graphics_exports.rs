//! `scope_profiler.exports`, graphics and tables: `export_folded`, `export_timeline_svg`,
//! `export_parquet`. All follow speedscope's naming rule (`name.partition(".")` keeps the
//! tail as the suffix; with several runs `_<label slug>` joins the stem).
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::folded::{write_folded_unit, FoldedUnit};
use scope_profiler_formats::html_report::write_html_report;
use scope_profiler_formats::parquet_export::write_parquet;
use scope_profiler_formats::timeline::{parse_window, write_timeline_svg_with, TimelineOptions};

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
/// run start, await share hatched, a tooltip per bar. Never more than 32,767 px in either
/// direction: at most `lanes` rows (the busiest by top-level call time; 0: all) plus one
/// summary row for the others, at most `max_depth` levels per row (0: all; deeper calls
/// become markers), only the calls overlapping `window` (`(start, end)` seconds from the
/// run start, either `None`, or `"START:END"`) when given, clipped to it. A caption says
/// what was left out. Returns the paths written; `ValueError` for a bad `width`,
/// `lanes`, `max_depth` or `window`, other errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (
    profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true, width=1400.0,
    *, lanes=64, window=None, max_depth=32
))]
#[allow(clippy::too_many_arguments)]
pub fn export_timeline_svg<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
    width: f64,
    lanes: i64,
    window: Option<Bound<'py, PyAny>>,
    max_depth: i64,
) -> PyResult<Bound<'py, PyList>> {
    let count = |what: &str, v: i64| {
        usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} must be 0 (all) or more, not {v}")))
    };
    let opts = TimelineOptions {
        width,
        lanes: count("lanes", lanes)?,
        max_depth: count("max_depth", max_depth)?,
        window: window.as_ref().map(timeline_window).transpose()?,
        ..TimelineOptions::default()
    };
    opts.check().map_err(PyValueError::new_err)?;
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::TimelineSvg, "lane timeline, open in a browser", &|run, sel, p| {
        only(p, write_timeline_svg_with(run, sel, &opts, p))
    })
}

/// `window=`: `"START:END"` or `(start, end)` in seconds from the run start, `None` (or an
/// empty side of the string) for the run's start / end.
fn timeline_window(w: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    if let Ok(s) = w.extract::<String>() {
        return parse_window(&s).map_err(PyValueError::new_err);
    }
    let (a, b): (Option<f64>, Option<f64>) = w.extract().map_err(|_| {
        PyValueError::new_err(format!(
            "window must be (start, end) in seconds from the run start (None: from the start / to the end) or \"START:END\", not {}",
            w.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    Ok((a.unwrap_or(0.0), b.unwrap_or(f64::INFINITY)))
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

/// Write a self-contained HTML report per run (default suffix `.html`; no server or network
/// needed to open it): the region summary (calls, total/mean/min/max, exclusive time; held
/// and await time when the run has await times), thread and task tables, the lane timeline
/// and the flame graph. Returns the paths written; errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_html<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::HtmlReport, "HTML report, open in a browser", &|run, sel, p| {
        only(p, write_html_report(run, sel, p))
    })
}

/// Write the self-contained HTML report of one run to `filepath` and return its path
/// (the reference's entry point; `export_html` is the one that takes several runs).
///
/// `profiling_data` is a `ProfilingResults` or the path of a `.h5` file (read as
/// `read_h5`); `ranks` defaults to every rank of the run. The report has the region summary,
/// thread and task tables (held/await columns for `track_async` runs), the lane timeline and
/// the flame graph; a run without calls gets a page saying so (as 0.7.5). Errors: as
/// `read_h5` for a path, `ValueError` for a filter matching no region or a rank the run does
/// not have. Deviation: the reference's comparison reports (several runs), `sort=`,
/// `columns=` and its Plotly charts are not implemented.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, *, include=None, exclude=None, ranks=None))]
pub fn create_html_report<'py>(
    py: Python<'py>,
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    ranks: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let path_like = py.import("os")?.getattr("PathLike")?;
    let profiling_data =
        if profiling_data.is_instance_of::<pyo3::types::PyString>() || profiling_data.is_instance(&path_like)? {
            Bound::new(py, crate::h5reader::read(py, profiling_data.extract()?, false)?)?.into_any()
        } else {
            profiling_data
        };
    let ranks = match ranks.filter(|r| !r.is_none()) {
        Some(r) => r,
        None => {
            let n: i64 = profiling_data.getattr("num_ranks")?.extract()?;
            PyList::new(py, 0..n)?.into_any()
        }
    };
    let written = export_html(profiling_data, filepath, Some(ranks), include, exclude, false)?;
    // one run, one report (Python's unpacking errors otherwise, as before)
    match written.len() {
        1 => written.get_item(0),
        0 => Err(PyValueError::new_err("not enough values to unpack (expected 1, got 0)")),
        _ => Err(PyValueError::new_err("too many values to unpack (expected 1)")),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(create_html_report, m)?)?;
    m.add_function(wrap_pyfunction!(export_folded, m)?)?;
    m.add_function(wrap_pyfunction!(export_timeline_svg, m)?)?;
    m.add_function(wrap_pyfunction!(export_html, m)?)?;
    m.add_function(wrap_pyfunction!(export_parquet, m)?)
}
