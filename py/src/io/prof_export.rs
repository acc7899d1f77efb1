//! `scope_profiler.prof_export`'s functions beside `export_prof` (`crate::io::exports`): the
//! pstats tables without files, and run labels made unique.
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use scope_profiler_formats::pstats::{marshal_stats, prof_stats, ProfOptions};
use scope_profiler_formats::Format;

use crate::io::export_call::{export_err, warn_set_aside_ranks, ExportArgs};
use crate::native_run::NativeRun;

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
    let planned = args.plan(Format::Prof)?;
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
    m.add_function(wrap_pyfunction!(unique_labels, m)?)
}
