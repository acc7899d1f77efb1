//! `scope_profiler.prof_export`: `export_prof` and `export_flamegraph_svg` (the reference
//! keeps both in this module).
use pyo3::prelude::*;
use pyo3::types::PyList;
use scope_profiler_formats::export_plan::ExportFormat;
use scope_profiler_formats::flamegraph::write_flamegraph_svg;
use scope_profiler_formats::pstats::{write_prof, ProfOptions};

use pyo3::types::{PyBytes, PyString};
use scope_profiler_formats::pstats::{marshal_stats, prof_stats};

use crate::export::{export_err, only, warn_set_aside_ranks, ExportArgs};
use crate::run::NativeRun;

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

/// `pstats_tables(profiling_data, ranks=None, include=None, exclude=None, call_paths=True)
/// -> list[(label, rank, bytes)]`: what `export_prof` would write, one `marshal`led pstats
/// dict per (run, rank with calls) in its order, without writing a file; `label` is the
/// run's label made unique (the root entry is `("~", 0, "<label rank R>")`), times in s of
/// the recording clock. Errors as `export_prof` (`ValueError`: no profiling data, a rank
/// the run does not have, no region matching the filters, no calls on any rank asked for).
#[pyfunction]
#[pyo3(signature = (profiling_data, ranks=None, include=None, exclude=None, call_paths=true))]
fn pstats_tables<'py>(
    profiling_data: Bound<'py, PyAny>,
    ranks: Option<Bound<'py, PyAny>>,
    include: Option<Bound<'py, PyAny>>,
    exclude: Option<Bound<'py, PyAny>>,
    call_paths: bool,
) -> PyResult<Vec<(String, u32, Bound<'py, PyBytes>)>> {
    let py = profiling_data.py();
    // planned, never written: a file name in a directory that does not exist
    let nowhere = std::env::temp_dir().join(format!("scope-profiler-pstats-{}", std::process::id())).join("run.prof");
    let filepath = PyString::new(py, &nowhere.to_string_lossy()).into_any();
    let args = ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose: false };
    let planned = args.plan(ExportFormat::Prof)?;
    let opts = ProfOptions { call_paths, per_lane: false };
    let mut out = Vec::new();
    for file in planned.files {
        let native = planned.roots[file.run].call_method0("_native_run")?;
        let native = native.cast::<NativeRun>()?.get();
        let run = std::sync::Arc::clone(&native.run);
        let tables = py.detach(|| prof_stats(&run, &file.selection, opts)).map_err(export_err)?;
        warn_set_aside_ranks(native, planned.ranks.as_deref())?;
        for table in tables {
            out.push((file.selection.label.clone(), table.rank, PyBytes::new(py, &marshal_stats(&table.entries))));
        }
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pstats_tables, m)?)?;
    m.add_function(wrap_pyfunction!(unique_labels, m)?)?;
    m.add_function(wrap_pyfunction!(export_prof, m)?)?;
    m.add_function(wrap_pyfunction!(export_flamegraph_svg, m)?)
}
