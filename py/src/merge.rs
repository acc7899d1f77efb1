//! `merge_results`: several result sets as one run (`analysis::merge_runs`: stacked as rank
//! blocks when a region name appears in several sets, else united rank by rank).
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use scope_profiler_analysis::{merge_runs, MergeOptions, MetaValue, Run};

use crate::results::ProfilingResults;

/// See `results::merge_results`.
pub fn merge_results<'py>(
    py: Python<'py>,
    result_sets: &Bound<'py, PyTuple>,
    label: Option<String>,
    file_path: Option<Bound<'py, PyAny>>,
    stack: Option<bool>,
) -> PyResult<Bound<'py, PyAny>> {
    if result_sets.is_empty() {
        return Err(PyValueError::new_err("merge_results() needs at least one result set"));
    }
    let mut roots: Vec<Bound<'py, ProfilingResults>> = Vec::new();
    for r in result_sets.iter() {
        let r = r.cast_into::<ProfilingResults>()?;
        if r.get().is_root_set() {
            roots.push(r);
        }
    }
    if roots.is_empty() {
        return result_sets.get_item(0);
    }
    let mut shared: Option<String> = None;
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (k, r) in roots.iter().enumerate() {
        for name in r.get().names(py) {
            if let Some(&first) = seen.get(&name) {
                if first != k && shared.is_none() {
                    shared = Some(name.clone());
                }
            }
            seen.entry(name).or_insert(k);
        }
    }
    let stack = stack.unwrap_or(shared.is_some());
    if let (false, Some(name)) = (stack, &shared) {
        return Err(PyValueError::new_err(format!(
            "region {} appears in more than one result set; merging them would double-count it. Give the regions distinct names (a 'fortran:' prefix, say) before merging, or stack them as separate ranks (stack=True).",
            scope_profiler_analysis::py_repr(name)
        )));
    }
    let paths: Vec<String> = roots.iter().map(|r| r.get().file_path_string()).collect();
    // Stacked: set k's rank r becomes offset_k + r, offset_k = Σ previous max(num_ranks, 1).
    let mut parts: Vec<(u32, Run)> = Vec::with_capacity(roots.len());
    let mut offset = 0u32;
    for r in &roots {
        let run = (**r.get().run()).clone();
        let span = run.num_ranks.max(1);
        parts.push((if stack { offset } else { 0 }, run));
        offset += span;
    }
    let options =
        MergeOptions { num_ranks: stack.then_some(offset), union: !stack, merged_from: stack.then(|| paths.clone()) };
    let mut run = py.detach(|| merge_runs(parts, &options)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(label) = label {
        run.metadata.retain(|(k, _)| k != "label");
        run.metadata.push(("label".into(), MetaValue::Str(label)));
    }
    let path = match file_path {
        Some(p) if !p.is_none() => p.str()?.to_string(),
        _ => paths[0].clone(),
    };
    Ok(Bound::new(py, ProfilingResults::from_run(py, run, path, true)?)?.into_any())
}
