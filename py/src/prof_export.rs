//! `scope_profiler.prof_export`: `export_prof` and `export_flamegraph_svg` (the reference
//! keeps both in this module).
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::flamegraph::write_flamegraph_svg;
use scope_profiler_formats::pstats::{write_prof, ProfOptions};

use crate::export::{only, ExportArgs};

/// Write pstats `.prof` files (`marshal` of the pstats dict), one per (run, rank with
/// calls); returns the paths written.
///
/// Names: `f"{Path(filepath).stem}[_{label slug}]_rank{r}{suffix}"`, suffix =
/// `Path(filepath).suffix or ".prof"`; `per_lane=True` writes one file per lane instead,
/// `..._rank{r}_{lane slug}{suffix}`, whose root is `<label rank R - lane>`.
/// `call_paths=True` keeps one entry per call path (`"a > b"`), `False` one per region.
/// Recursion (primitive calls) is judged per lane. Errors as `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (
    profiling_data, filepath, ranks=None, include=None, exclude=None, call_paths=true, per_lane=false, verbose=true
))]
#[allow(clippy::too_many_arguments)]
pub fn export_prof<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    call_paths: bool,
    per_lane: bool,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    let opts = ProfOptions { call_paths, per_lane };
    args.export(ExportFormat::Prof, "view with: snakeviz {path}", &move |run, sel, p| write_prof(run, sel, p, opts))
}

/// Write one flame graph SVG per (run, rank with calls), rendered by inferno from the
/// folded stacks: a tower per thread / task, widths in ns of self + children time,
/// interactive (search, zoom) in a browser. Names like `.prof`:
/// `<stem>[_<slug>]_rank<R><suffix or .svg>`. Returns the paths written; errors as
/// `export_speedscope`.
#[pyfunction]
#[pyo3(signature = (profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=true))]
pub fn export_flamegraph_svg<'py>(
    profiling_data: Bound<'py, PyAny>,
    filepath: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    verbose: bool,
) -> PyResult<Bound<'py, PyList>> {
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
    args.export(ExportFormat::FlamegraphSvg, "flame graph, open in a browser", &|run, sel, p| {
        only(p, write_flamegraph_svg(run, sel, p))
    })
}

/// `unique_labels(labels) -> list[str]`: run labels with repeats made distinct, as every
/// exporter names runs: the second `"run"` is `"run (2)"`, the third `"run (3)"`
/// (`formats::export_plan::unique_labels`).
#[pyfunction]
fn unique_labels(labels: Vec<String>) -> Vec<String> {
    scope_profiler_formats::export_plan::unique_labels(&labels)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(unique_labels, m)?)?;
    m.add_function(wrap_pyfunction!(export_prof, m)?)?;
    m.add_function(wrap_pyfunction!(export_flamegraph_svg, m)?)
}
