//! `scope_profiler.compare()`'s Rust side: the comparison of `analysis::compare` (the one
//! `scope-profiler diff` prints) on runs given as paths (files or directories of run files)
//! or as `ProfilingResults`, and the `Comparison` object it returns.
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use scope_profiler_analysis::compare::{compare, runs_call_stats, CompareBy, Comparison, DiffRow, Group};
use scope_profiler_analysis::{record_batch, RunAnalysis};
use scope_profiler_formats::run_group::run_files;

use crate::results::events::{batch_dicts, batch_of, RowDicts};
use crate::results::profiling_results::ProfilingResults;

/// Rows a notebook shows ([`Comparison::_repr_html_`]).
const NOTEBOOK_ROWS: usize = 50;

/// The result of `compare()`: the rows, largest change of time per run first.
#[pyclass(module = "scope_profiler._native", name = "Comparison", frozen)]
pub struct PyComparison {
    inner: Comparison,
}

/// `rows` (of `c`) as dicts, the keys of `scope-profiler diff --json`.
fn row_dicts<'py>(py: Python<'py>, c: &Comparison, rows: Vec<DiffRow>) -> PyResult<Bound<'py, PyList>> {
    let batch = batch_of(record_batch::comparison_table(&Comparison { rows, ..c.clone() }))?;
    batch_dicts(py, &batch, RowDicts { skip: &[], keep_nulls: true, summary_rows: false })
}

#[pymethods]
impl PyComparison {
    /// The rows as dicts: `name` (`path` too, by call path), `base_calls`, `new_calls` (mean
    /// calls per run), `base_time`, `new_time` (mean inclusive s per run), `change`
    /// (`new_time / base_time - 1`, None when a side has no call), `ci_low`, `ci_high` (its
    /// interval, None when unknown), `verdict` and `note`.
    #[getter]
    fn rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        row_dicts(py, &self.inner, self.inner.rows.clone())
    }
    /// `{"label": ..., "runs": [...]}` of the base side.
    #[getter(base)]
    fn base_side<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        side_dict(py, &self.inner.base)
    }
    /// `{"label": ..., "runs": [...]}` of the new side.
    #[getter(new)]
    fn new_side<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        side_dict(py, &self.inner.new)
    }
    /// `"region"` or `"path"`.
    #[getter]
    fn by(&self) -> &'static str {
        self.inner.by.name()
    }
    /// The verdict threshold (a fraction).
    #[getter]
    fn threshold(&self) -> f64 {
        self.inner.threshold
    }
    /// The level of each row's interval (the intervals hold together at 95 %).
    #[getter]
    fn row_level(&self) -> f64 {
        self.inner.row_level
    }
    /// The rows "slower" with `ci_low` above `pct` percent (default: the threshold), as dicts:
    /// what `scope-profiler diff --fail-on-regression PCT` fails on.
    #[pyo3(signature = (pct=None))]
    fn regressions<'py>(&self, py: Python<'py>, pct: Option<f64>) -> PyResult<Bound<'py, PyList>> {
        let limit = match pct {
            Some(p) if !(p.is_finite() && p >= 0.0) => {
                return Err(PyValueError::new_err(format!("pct must be a percentage >= 0, not {p}")))
            }
            Some(p) => p / 100.0,
            None => self.inner.threshold,
        };
        row_dicts(py, &self.inner, self.inner.regressions(limit).into_iter().cloned().collect())
    }
    /// The comparison as `scope-profiler diff --json` prints it.
    fn to_json(&self) -> String {
        format!("{:#}", self.inner.to_json())
    }
    /// The rows as an Arrow table (columns as the dicts of `rows`).
    fn to_arrow(&self) -> PyResult<pyo3_arrow::PyTable> {
        crate::results::frames::batch_table(record_batch::comparison_table(&self.inner))
    }
    /// The rows as a `polars.DataFrame`.
    fn to_polars<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::results::frames::polars_frame(Bound::new(py, self.to_arrow()?)?.into_any())
    }
    /// The rows as a `pandas.DataFrame` (through pyarrow).
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let why = "to_pandas() converts an Arrow table with pyarrow (pip install pyarrow)";
        crate::results::frames::pandas_frame(Bound::new(py, self.to_arrow()?)?.into_any(), why)
    }
    /// The table a notebook shows: at most 50 rows, and how many more there are.
    fn _repr_html_(&self) -> String {
        scope_profiler_formats::diff_html::diff_table_html(&self.inner, NOTEBOOK_ROWS)
    }
    fn __len__(&self) -> usize {
        self.inner.rows.len()
    }
    fn __repr__(&self) -> String {
        let count = |v: &str| self.inner.rows.iter().filter(|r| r.verdict.name() == v).count();
        format!(
            "<Comparison {} -> {} by {}: {} rows ({} slower, {} faster, {} new, {} gone)>",
            self.inner.base.label,
            self.inner.new.label,
            self.inner.by.name(),
            self.inner.rows.len(),
            count("slower"),
            count("faster"),
            count("new"),
            count("gone")
        )
    }
}

fn side_dict<'py>(py: Python<'py>, s: &scope_profiler_analysis::compare::SideInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("label", &s.label)?;
    d.set_item("runs", &s.runs)?;
    Ok(d)
}

/// One run of a side: its analysis and its name.
type Source = (Arc<RunAnalysis>, String);

/// The runs `items` stand for: each a `ProfilingResults`, a run file, or a directory of run
/// files (read with `load`). Errors: a path that cannot be read (as `load` raises), a
/// directory without run file (`ValueError`), another kind of item (`TypeError`), results
/// read without their calls (`read_h5_summary`) compared by call path
/// (`EventDataUnavailableError`).
fn sources(py: Python<'_>, items: &[Bound<'_, PyAny>], by: CompareBy) -> PyResult<Vec<Source>> {
    let mut out = Vec::new();
    for item in items {
        if let Ok(r) = item.cast::<ProfilingResults>() {
            let r = r.borrow();
            if by == CompareBy::Path {
                r.require_event_data("compare(by='path')")?;
            }
            out.push((Arc::clone(r.analysis()), r.file_path_string()));
            continue;
        }
        let path: PathBuf = item.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "compare() takes paths (files or directories of runs) and ProfilingResults, not {}",
                item.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })?;
        for file in run_files(&path).map_err(|e| PyValueError::new_err(e.to_string()))? {
            let results = crate::io::profile_io::load(py, &file.clone().into_pyobject(py)?.into_any(), false)?;
            out.push((Arc::clone(results.analysis()), file.display().to_string()));
        }
    }
    Ok(out)
}

/// What a side is called: the one path or file given, else `N runs`.
fn side_label(items: &[Bound<'_, PyAny>], sources: &[Source]) -> String {
    match (items, sources) {
        ([one], _) if one.extract::<PathBuf>().is_ok() => {
            one.extract::<PathBuf>().unwrap_or_default().display().to_string()
        }
        (_, [(_, name)]) if !name.is_empty() => name.clone(),
        (_, [_]) => "1 run".into(),
        (_, s) => format!("{} runs", s.len()),
    }
}

/// A side's group: every run reduced to its call statistics (in parallel, without the GIL).
fn group(py: Python<'_>, label: String, sources: &[Source], by: CompareBy) -> PyResult<Group> {
    let runs = py.detach(|| runs_call_stats(sources, by));
    Ok(Group { label, runs: runs.map_err(crate::errors::nesting_err)? })
}

/// `compare_runs(base, new, threshold, by)`: the comparison of the runs `new` with the runs
/// `base` (lists of paths, directories and `ProfilingResults`). Raises `ValueError` for an
/// empty side, a bad threshold or `by`; as `load` for a path that cannot be read;
/// `NestingError` when `by="path"` and calls do not nest.
#[pyfunction]
#[pyo3(signature = (base, new, threshold=0.05, by="region"))]
fn compare_runs(
    py: Python<'_>,
    base: Vec<Bound<'_, PyAny>>,
    new: Vec<Bound<'_, PyAny>>,
    threshold: f64,
    by: &str,
) -> PyResult<PyComparison> {
    let by = CompareBy::from_name(by)
        .ok_or_else(|| PyValueError::new_err(format!("by must be 'region' or 'path', not {by:?}")))?;
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(PyValueError::new_err(format!("threshold must be a fraction >= 0 (0.05 = 5 %), not {threshold}")));
    }
    for (what, items) in [("base", &base), ("new", &new)] {
        if items.is_empty() {
            return Err(PyValueError::new_err(format!("compare(): no run given for {what}")));
        }
    }
    let (bs, ns) = (sources(py, &base, by)?, sources(py, &new, by)?);
    let base_group = group(py, side_label(&base, &bs), &bs, by)?;
    let new_group = group(py, side_label(&new, &ns), &ns, by)?;
    let inner = py
        .detach(|| compare(&base_group, &new_group, by, threshold))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyComparison { inner })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyComparison>()?;
    m.add_function(wrap_pyfunction!(compare_runs, m)?)
}
