//! The command line for the console script, and the text reports for `print_summary`.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_cli::{after_run, dispatch, recording_path, report, Outcome, RunRequest, RunSettings};

use crate::run::NativeRun;

/// Parse and carry out `argv` (program name first). Returns `(exit_code, None)` when done,
/// or `(0, request)` for `run`, where `request` is a dict (`script`, `module` (None or the
/// `-m` module, then `script` is empty), `args`,
/// `track_threads`, `track_async`, `output`, `recording`, `speedscope`, `quiet`,
/// `flush_interval`, `follow`, `no_output`, `settings`: the `session(...)` keywords of the
/// reference's other `run` options) that Python must carry out, then pass to `cli_after_run`. `recording` is
/// the HDF5 file the run writes: `output` itself, or `<output>.scope-profiler.h5` when
/// `output` names a JSON profile (rendered from it afterwards). The GIL is released while files are read and exported.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<(i32, Option<Bound<'_, PyDict>>)> {
    match py.detach(|| dispatch(argv)) {
        Outcome::Exit(code) => Ok((code, None)),
        Outcome::Run(req) => {
            let d = PyDict::new(py);
            d.set_item("script", req.script.to_string_lossy().into_owned())?;
            d.set_item("module", req.module)?;
            d.set_item("args", req.args)?;
            d.set_item("track_threads", req.track_threads)?;
            d.set_item("track_async", req.track_async)?;
            d.set_item("output", req.output.to_string_lossy().into_owned())?;
            d.set_item("recording", recording_path(&req.output).to_string_lossy().into_owned())?;
            d.set_item("speedscope", req.speedscope)?;
            d.set_item("quiet", req.quiet)?;
            d.set_item("flush_interval", req.flush_interval)?;
            d.set_item("follow", req.follow)?;
            if let Some(t) = req.tracing {
                let tracing = PyDict::new(py);
                tracing.set_item("all", t.all)?;
                tracing.set_item("include", t.include)?;
                tracing.set_item("exclude", t.exclude)?;
                tracing.set_item("entrypoint", t.entrypoint)?;
                d.set_item("tracing", tracing)?;
            }
            d.set_item("no_output", req.settings.no_output)?;
            d.set_item("settings", run_settings(py, &req.settings)?)?;
            Ok((0, Some(d)))
        }
    }
}

/// The reference's `run` options given, as `session(...)` keywords (only those given).
fn run_settings<'py>(py: Python<'py>, s: &RunSettings) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if s.no_output {
        d.set_item("deactivate_file_output", true)?;
    }
    if let Some(path) = &s.config {
        d.set_item("config_path", path.to_string_lossy().into_owned())?;
    }
    if s.no_recursive {
        d.set_item("recursive_profile", false)?;
    }
    if let Some(label) = &s.label {
        d.set_item("label", label)?;
    }
    if !s.region_tags.is_empty() {
        d.set_item("region_tags", s.region_tags.clone())?;
    }
    if !s.enable_tags.is_empty() {
        d.set_item("enable_tags", s.enable_tags.clone())?;
    }
    if let Some(limit) = s.buffer_limit {
        d.set_item("buffer_limit", limit)?;
    }
    Ok(d)
}

/// After a `run` that wrote `h5`: render `output` from it when that names another format
/// (then remove `h5`), print the summary (unless quiet) and write the speedscope file named
/// after `output`. Returns the speedscope path or None. Raises `OSError` naming the file on
/// failure (a failed rendering keeps `h5`).
///
/// `processes` (the directory the followed processes of `run` wrote into) and
/// `process_label` (this process's description): their recordings are first stacked after
/// `h5`'s run, one rank block per process, and written over `h5` (metadata `processes`);
/// the directory is removed once everything succeeded (kept on an error).
///
/// `recorded`: the run this process just wrote to `h5` (the last finalize's); used instead
/// of reading `h5` back when its `file_path` is `h5`.
#[pyfunction]
#[pyo3(signature = (output, h5, track_threads, speedscope, quiet, processes=None, process_label=None, recorded=None))]
#[allow(clippy::too_many_arguments)]
fn cli_after_run(
    py: Python<'_>,
    output: PathBuf,
    h5: PathBuf,
    track_threads: bool,
    speedscope: bool,
    quiet: bool,
    processes: Option<PathBuf>,
    process_label: Option<String>,
    recorded: Option<PyRef<'_, NativeRun>>,
) -> PyResult<Option<String>> {
    let recorded = recorded.filter(|r| Path::new(&r.file_path) == h5).map(|r| Arc::clone(&r.run));
    let process_label = process_label.unwrap_or_default();
    let req = RunRequest {
        script: PathBuf::new(),
        module: None,
        args: vec![],
        track_threads,
        track_async: false,
        output,
        speedscope,
        quiet,
        flush_interval: None,
        tracing: None,
        follow: processes.is_some(),
        settings: Default::default(),
    };
    let processes = processes.as_deref().map(|dir| (dir, process_label.as_str()));
    py.detach(|| after_run(&req, &h5, processes, recorded.as_deref()))
        .map(|p| p.map(|p| p.to_string_lossy().into_owned()))
        .map_err(PyOSError::new_err)
}

/// The summary report of a run as text (same as `scope-profiler summary`).
#[pyfunction]
fn summary_text(run: &NativeRun, title: &str) -> String {
    report::summary_text(&run.run, title)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(cli_after_run, m)?)?;
    m.add_function(wrap_pyfunction!(summary_text, m)?)?;
    Ok(())
}
