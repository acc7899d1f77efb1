//! Backs `scope_profiler._options`: the option bags of `setup()` / `session()`
//! (`ProfilingOptions` and its `memray` / `gpu` / `hdf5` groups, dataclasses on the Python
//! side) read as flat settings, and a settings file's table flattened, by the rules of
//! [`scope_profiler_session::settings`]. Here only Python objects are read and built.
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_session::settings as rules;

use crate::package::settings::raise;

/// `option_group_fields() -> {group: {field: setting}}`: the option groups of
/// `ProfilingOptions` (`memray`, `gpu`, `hdf5`) and of a settings file's
/// `[profiling.<group>]` tables, each field with the flat setting it sets.
#[pyfunction]
fn option_group_fields(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let groups = PyDict::new(py);
    for (name, fields) in rules::OPTION_GROUPS {
        let map = PyDict::new(py);
        for (field, setting) in fields {
            map.set_item(field, setting)?;
        }
        groups.set_item(name, map)?;
    }
    Ok(groups)
}

/// The flat settings (name -> value) of `bag`'s attributes `fields` (attribute, setting)
/// that are not None, in `fields`' order.
fn set_fields<'py>(bag: &Bound<'py, PyAny>, fields: &[(&str, &str)]) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(bag.py());
    for (field, setting) in fields {
        let value = bag.getattr(*field)?;
        if !value.is_none() {
            out.set_item(*setting, value)?;
        }
    }
    Ok(out)
}

/// `option_group_kwargs(group, bag) -> dict`: the flat settings an option group (`bag`, a
/// `MemrayOptions` / `GPUOptions` / `HDF5Options`) sets: each of `group`'s fields that is
/// not None, under its flat setting's name (`path` -> `memory_profile_path`); a new dict.
/// `KeyError` for an unknown group, `AttributeError` for a field `bag` lacks.
#[pyfunction]
fn option_group_kwargs<'py>(group: &str, bag: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let fields = rules::option_group(group).ok_or_else(|| PyKeyError::new_err(group.to_string()))?;
    set_fields(bag, fields)
}

/// `option_bag_kwargs(bag) -> dict`: the flat settings of a `ProfilingOptions`: its own
/// settings that are not None (defaults order), then each group it sets (`memray`, `gpu`,
/// `hdf5`) as that group's `to_kwargs()`; a new dict. `ValueError` for a setting given
/// twice ([`rules::option_bag_conflict`]).
#[pyfunction]
fn option_bag_kwargs<'py>(bag: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let own: Vec<(&str, &str)> = rules::all_defaults().map(|(name, _)| (name, name)).collect();
    let out = set_fields(bag, &own)?;
    let keys = |d: &Bound<'py, PyDict>| d.keys().iter().map(|k| k.extract::<String>()).collect::<PyResult<Vec<_>>>();
    let mut groups = Vec::new();
    for (name, _) in rules::OPTION_GROUPS {
        let group = bag.getattr(name)?;
        if !group.is_none() {
            let settings = group.call_method0("to_kwargs")?.cast_into::<PyDict>()?;
            groups.push((name.to_string(), keys(&settings)?, settings));
        }
    }
    let named: Vec<(String, Vec<String>)> = groups.iter().map(|(n, k, _)| (n.clone(), k.clone())).collect();
    if let Some(message) = rules::option_bag_conflict(&keys(&out)?, &named) {
        return Err(PyValueError::new_err(message));
    }
    for (_, _, settings) in &groups {
        out.update(settings.as_mapping())?;
    }
    Ok(out)
}

/// `settings_of_toml(raw) -> dict`: the flat settings of a parsed settings file (`raw`:
/// `tomllib.load`'s dict): its `[profiling]` table, or the top-level table without one, the
/// groups' keys as their flat settings. `ValueError` (naming what is wrong) for a
/// `profiling` that is not a table, a group that is not a table, an unknown key, a setting
/// given twice, unknown settings.
#[pyfunction]
fn settings_of_toml<'py>(raw: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let py = raw.py();
    let table = match raw.get_item("profiling")? {
        Some(t) => t,
        None => raw.clone().into_any(),
    };
    let table = table
        .cast::<PyDict>()
        .map_err(|_| PyValueError::new_err("Profiling config [profiling] must be a TOML table"))?;
    let keys = table.keys().iter().map(|k| k.extract::<String>()).collect::<PyResult<Vec<_>>>()?;
    let mut groups = std::collections::HashMap::new();
    for (name, _) in rules::OPTION_GROUPS {
        let entry = match table.get_item(name)? {
            None => continue,
            Some(v) if v.is_none() => continue,
            Some(v) => match v.cast::<PyDict>() {
                Ok(d) => {
                    let keys = d.keys().iter().map(|k| k.extract::<String>()).collect::<PyResult<Vec<_>>>()?;
                    (rules::GroupEntry::Table(keys), Some(d.clone()))
                }
                Err(_) => (rules::GroupEntry::NotTable, None),
            },
        };
        groups.insert(name, entry);
    }
    let flat = rules::flatten_settings_table(&keys, |name| groups.get(name).map(|(e, _)| e.clone())).map_err(raise)?;
    let out = PyDict::new(py);
    for (name, source) in flat {
        let value = match source {
            rules::FlatSource::Direct(key) => table.get_item(key)?,
            rules::FlatSource::Group { group, key } => match &groups[group].1 {
                Some(d) => d.get_item(key)?,
                None => None,
            },
        };
        out.set_item(name, value)?;
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(option_group_fields, m)?)?;
    m.add_function(wrap_pyfunction!(option_group_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(option_bag_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(settings_of_toml, m)?)?;
    Ok(())
}
