//! `read_h5_summary` for Python: a file's statistics and lane tables without its events.
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert;
use crate::errors::h5_err;

/// Read the summary of a schema-2/3 file (`formats::read_h5_summary`, `/events` untouched).
/// Returns None when the file has no fixed-size summary (the caller falls back to
/// `read_h5`), else a dict: `region_names`, `rows` (dicts: `name, rank, count` and the
/// `summary_statistics` fields `total, minimum, maximum, first, last, start_minimum,
/// end_maximum, gpu_count, gpu_total, mean, m2`, plus `exclusive_total_ns, source_file,
/// source_line, source_text, tags`), `threads`/`tasks` (tuples as `NativeRun.threads()` /
/// `tasks()`), `metadata` (dict), `num_ranks`.
#[pyfunction]
pub fn read_h5_summary(py: Python<'_>, path: PathBuf) -> PyResult<Option<Bound<'_, PyDict>>> {
    let Some(summary) = py.detach(|| scope_profiler_formats::read_h5_summary(&path)).map_err(h5_err)? else {
        return Ok(None);
    };
    let out = PyDict::new(py);
    out.set_item("region_names", &summary.region_names)?;
    let rows = PyList::empty(py);
    for r in &summary.rows {
        let d = PyDict::new(py);
        d.set_item("name", summary.region_names.get(r.region as usize).map(String::as_str).unwrap_or(""))?;
        d.set_item("rank", r.rank)?;
        d.set_item("count", r.count)?;
        let s = &r.stats;
        d.set_item("total", s.total)?;
        d.set_item("minimum", s.minimum)?;
        d.set_item("maximum", s.maximum)?;
        d.set_item("first", s.first)?;
        d.set_item("last", s.last)?;
        d.set_item("start_minimum", s.start_minimum)?;
        d.set_item("end_maximum", s.end_maximum)?;
        d.set_item("gpu_count", s.gpu_count)?;
        d.set_item("gpu_total", s.gpu_total)?;
        d.set_item("mean", s.mean)?;
        d.set_item("m2", s.m2)?;
        d.set_item("exclusive_total_ns", r.exclusive_total_ns)?;
        d.set_item("source_file", r.source_file.as_deref())?;
        d.set_item("source_line", r.source_line)?;
        d.set_item("source_text", r.source_text.as_deref())?;
        d.set_item("tags", PyList::new(py, &r.tags)?)?;
        rows.append(d)?;
    }
    out.set_item("rows", rows)?;
    out.set_item("threads", summary.threads.iter().map(convert::thread_tuple).collect::<Vec<_>>())?;
    out.set_item("tasks", summary.tasks.iter().map(convert::task_tuple).collect::<Vec<_>>())?;
    let md = PyDict::new(py);
    for (k, v) in &summary.metadata {
        md.set_item(k, convert::meta_to_py(py, v)?)?;
    }
    out.set_item("metadata", md)?;
    out.set_item("num_ranks", summary.num_ranks)?;
    Ok(Some(out))
}
