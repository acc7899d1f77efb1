//! The `export_<format>` functions of `scope_profiler` (`speedscope_export`, `prof_export`,
//! `chrome_trace_export`, `exports`), one per format of the registry (`formats::registry`),
//! made by [`export_functions!`]; `create_html_report`, the reference's entry point of the
//! HTML report. The JSON profile's functions are `json_export`.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ProfNaming;
use scope_profiler_formats::folded::{write_folded_unit, FoldedUnit};
use scope_profiler_formats::pstats::{write_prof_named, ProfOptions};
use scope_profiler_formats::registry::only;
use scope_profiler_formats::timeline::{parse_window, write_timeline_svg_with, TimelineOptions};
use scope_profiler_formats::Format;

use crate::io::export_call::export_functions;

export_functions! {
    /// Write speedscope JSON files; returns the paths written (`list[pathlib.Path]`).
    ///
    /// One file per run (`name.partition(".")` keeps a `.speedscope.json` tail, default
    /// `.speedscope.json`; with several runs the file stem gets `_<label slug>`), one evented
    /// profile per lane of each requested rank (default ranks: `[0]`), regions in
    /// `get_regions` order (it decides exact ties). Raises `TypeError` for anything but
    /// results, `ValueError` for no data, an invalid rank, a filter matching nothing or no
    /// calls, `NestingError` when a rank cannot be reconstructed, `OSError` on I/O failure.
    export_speedscope => Format::Speedscope;

    /// Write pstats `.prof` files (`marshal` of the pstats dict), one per (run, rank with
    /// calls); returns the paths written.
    ///
    /// Names: `f"{Path(filepath).stem}[_{label slug}]_rank{r}{suffix}"`, suffix =
    /// `Path(filepath).suffix or ".prof"`; `per_lane=True` writes one file per lane instead,
    /// `..._rank{r}_{lane slug}{suffix}`, whose root is `<label rank R - lane>`.
    /// `call_paths=True` keeps one entry per call path (`"a > b"`), `False` one per region.
    /// Recursion (primitive calls) is judged per lane. Errors as `export_speedscope`.
    export_prof => Format::Prof,
        before verbose (call_paths: bool = true, per_lane: bool = false),
        write {
            let opts = ProfOptions { call_paths, per_lane };
            move |run, sel, p| write_prof_named(run, sel, p, opts, ProfNaming::Reference)
        };

    /// Write one flame graph SVG per (run, rank with calls), rendered by inferno from the
    /// folded stacks: a tower per thread / task, widths in ns of self + children time,
    /// interactive (search, zoom) in a browser. Names like `.prof`:
    /// `<stem>[_<slug>]_rank<R><suffix or .svg>`. Returns the paths written; errors as
    /// `export_speedscope`.
    export_flamegraph_svg => Format::FlamegraphSvg;

    /// Write Chrome Trace Event JSON, one file per run (speedscope's naming rule, default
    /// suffix `.trace.json`): one track per lane (threads, then tasks, each named), complete
    /// events in µs from the run start, identical calls with identical name and args so viewers
    /// aggregate them. Returns the paths written; errors as `export_speedscope`.
    export_chrome_trace => Format::ChromeTrace;

    /// Write Perfetto protobuf traces, one file per run (speedscope's naming rule, default
    /// suffix `.pftrace`): a process track per rank, a thread track per thread, a task track
    /// (under its thread) per task, nested slices per call and `"awaiting"` child slices for a
    /// task's await time. Returns the paths written; errors as `export_speedscope`.
    export_perfetto => Format::Perfetto;

    /// Write pprof profiles, one file per run (speedscope's naming rule, default suffix
    /// `.pb.gz`; a name not ending in `.gz` is written uncompressed): sample type
    /// wall/nanoseconds holding the self time per call stack, each stack rooted at its lane
    /// (thread / task) name. Returns the paths written; errors as `export_speedscope`.
    export_pprof => Format::Pprof;

    /// Write folded stacks, one file per run (default suffix `.folded`): `lane;region;child
    /// <self time>` per distinct call path per lane, integer counts in `unit` (`"ns"`, exact,
    /// or `"us"`). The lane label is the root frame (`"rank R - "` prefixed when several ranks
    /// are exported). Returns the paths written; `ValueError` for another unit, other errors
    /// as `export_speedscope`.
    export_folded => Format::Folded,
        after verbose (unit: &str = "ns"),
        write {
            let unit = folded_unit(unit)?;
            move |run, sel, p| only(p, write_folded_unit(run, sel, unit, p))
        };

    /// Write the lane timeline SVG of each run (default suffix `.timeline.svg`, `width` in
    /// px): one row per thread and task, calls as nested bars on a time axis in ms since the
    /// run start, await share hatched, a tooltip per bar. Never more than 32,767 px in either
    /// direction: at most `lanes` rows (the busiest by top-level call time; 0: all) plus one
    /// summary row for the others, at most `max_depth` levels per row (0: all; deeper calls
    /// become markers), only the calls overlapping `window` (`(start, end)` seconds from the
    /// run start, either `None`, or `"START:END"`) when given, clipped to it. A caption says
    /// what was left out. Returns the paths written; `ValueError` for a bad `width`,
    /// `lanes`, `max_depth` or `window`, other errors as `export_speedscope`.
    export_timeline_svg => Format::TimelineSvg,
        after verbose (width: f64 = 1400.0),
        keyword (lanes: i64 = 64, window: Option<Bound<'py, PyAny>> = None, max_depth: i64 = 32),
        write {
            let opts = timeline_options(width, lanes, window.as_ref(), max_depth)?;
            move |run, sel, p| only(p, write_timeline_svg_with(run, sel, &opts, p))
        };

    /// Write Parquet files per run (default suffix `.parquet`): the events (one row per call:
    /// rank, region, call_index, start/end/duration ns, call_id, parent_id, thread, task,
    /// await_ns, depth, lane, exclusive_ns) and, beside it, the lanes (`x.lanes.parquet`:
    /// thread and task tables, join on `(rank, lane)`). Returns events and lanes paths in
    /// order; errors as `export_speedscope`.
    export_parquet => Format::Parquet;

    /// Write a self-contained HTML report per run (default suffix `.html`; no server or network
    /// needed to open it): the region summary (calls, total/mean/min/max, exclusive time; held
    /// and await time when the run has await times), thread and task tables, the lane timeline
    /// and the flame graph. Returns the paths written; errors as `export_speedscope`.
    export_html => Format::HtmlReport;
}

/// `unit=` of `export_folded`: `"ns"`, or `"us"` / `"µs"`; `ValueError` for another.
fn folded_unit(unit: &str) -> PyResult<FoldedUnit> {
    match unit {
        "ns" => Ok(FoldedUnit::Nanoseconds),
        "us" | "µs" => Ok(FoldedUnit::Microseconds),
        other => Err(PyValueError::new_err(format!("unit must be 'ns' or 'us', not {other:?}"))),
    }
}

/// The layout `export_timeline_svg` asks for: `width` px, at most `lanes` rows and
/// `max_depth` levels (0: all), `window` ([`timeline_window`]). `ValueError` for a negative
/// count or a layout [`TimelineOptions::check`] refuses.
fn timeline_options(
    width: f64,
    lanes: i64,
    window: Option<&Bound<'_, PyAny>>,
    max_depth: i64,
) -> PyResult<TimelineOptions> {
    let count = |what: &str, v: i64| {
        usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{what} must be 0 (all) or more, not {v}")))
    };
    let opts = TimelineOptions {
        width,
        lanes: count("lanes", lanes)?,
        max_depth: count("max_depth", max_depth)?,
        window: window.map(timeline_window).transpose()?,
        ..TimelineOptions::default()
    };
    opts.check().map_err(PyValueError::new_err)?;
    Ok(opts)
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
            Bound::new(py, crate::io::h5reader::read(py, profiling_data.extract()?, false)?)?.into_any()
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
    add_export_functions(m)?;
    m.add_function(wrap_pyfunction!(create_html_report, m)?)
}
