//! The glue every `export_*` function shares: Python arguments -> [`export_plan`] -> the
//! `formats` writer of each planned file (GIL released) -> `list[pathlib.Path]`, with one
//! `Wrote <path> (<viewer>)` line per path through Python's `print` when `verbose` (the
//! format's [`Format::viewer`] hint). [`export_functions!`] makes the `export_<format>`
//! functions from the format registry (`formats::registry`).
//!
//! A result set is anything with a `_native_run` attribute; only this contract is used
//! (attribute access): `is_root`, `display_label`, `num_ranks`, `file_path`,
//! `get_regions(include=, exclude=)` (objects with `.name` and `.regions`, a mapping
//! rank -> object with `.num_calls`) and `_native_run()` -> [`NativeRun`].
//!
//! Errors: `TypeError` for anything else than result sets, `ValueError` for the
//! [`PlanError`]s and "no calls", `IsADirectoryError` / `NotADirectoryError` when a path
//! is in the way, `NestingError` when a rank cannot be reconstructed, `OSError` when
//! writing fails. Where the files go: `export_plan` (a directory gets default names inside).
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyList, PyString};
use scope_profiler_analysis::Run;
use scope_profiler_formats::export_plan::{self, PlanError, Request, RunInput};
use scope_profiler_formats::{ExportError, Format, Selection};

use crate::native_run::NativeRun;

/// A writer of `formats`: `(run, selection, path) -> every path written`.
pub type Write<'a> = &'a (dyn Fn(&Run, &Selection, &Path) -> Result<Vec<PathBuf>, ExportError> + Sync);

/// The `export_<format>` functions, one per registry format, all with the arguments
/// `(profiling_data, filepath, ranks=None, include=None, exclude=None, verbose=True)` and
/// returning the paths written (`list[pathlib.Path]`; errors as [`ExportArgs::export`]).
///
/// Each item is `/// doc` lines, then `name => Format`, then optionally, in this order, the
/// format's extra arguments `before verbose (name: type = default, ...)`, `after verbose
/// (...)`, `keyword (...)` (keyword-only, after `*`), and `write { ... }`: a block that
/// checks the extra arguments (raising before anything is read) and evaluates to the writer
/// used instead of the registry's. Makes `add_export_functions(m)` adding every function
/// to `m`.
macro_rules! export_functions {
    (@writer $format:ident $write:block) => { $write };
    (@writer $format:ident) => {
        |run: &::scope_profiler_analysis::Run, sel: &::scope_profiler_formats::Selection, p: &::std::path::Path| {
            $format.write(run, sel, p)
        }
    };
    ($(
        $(#[doc = $doc:literal])*
        $name:ident => $format:expr
        $(, before verbose ($($b:ident: $bt:ty = $bd:tt),+))?
        $(, after verbose ($($a:ident: $at:ty = $ad:tt),+))?
        $(, keyword ($($k:ident: $kt:ty = $kd:tt),+))?
        $(, write $write:block)?
        ;
    )+) => {
        $(
            $(#[doc = $doc])*
            #[::pyo3::pyfunction]
            #[pyo3(signature = (
                profiling_data, filepath, ranks=None, include=None, exclude=None,
                $($($b = $bd,)+)? verbose=true $($(, $a = $ad)+)? $(, * $(, $k = $kd)+)?
            ))]
            #[allow(clippy::too_many_arguments)]
            pub fn $name<'py>(
                profiling_data: ::pyo3::Bound<'py, ::pyo3::PyAny>,
                filepath: ::pyo3::Bound<'py, ::pyo3::PyAny>,
                ranks: Option<::pyo3::Bound<'py, ::pyo3::PyAny>>,
                include: Option<::pyo3::Bound<'py, ::pyo3::PyAny>>,
                exclude: Option<::pyo3::Bound<'py, ::pyo3::PyAny>>,
                $($($b: $bt,)+)?
                verbose: bool,
                $($($a: $at,)+)?
                $($($k: $kt,)+)?
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::types::PyList>> {
                let format: ::scope_profiler_formats::Format = $format;
                let write: $crate::io::export_call::Write<'_> = &$crate::io::export_call::export_functions!(@writer format $($write)?);
                let args = $crate::io::export_call::ExportArgs { profiling_data, filepath, ranks, include, exclude, verbose };
                args.export(format, write)
            }
        )+

        /// Add every function above to `m`.
        pub fn add_export_functions(m: &::pyo3::Bound<'_, ::pyo3::types::PyModule>) -> ::pyo3::PyResult<()> {
            $(m.add_function(::pyo3::wrap_pyfunction!($name, m)?)?;)+
            Ok(())
        }
    };
}
pub(crate) use export_functions;

/// `Nesting` -> `NestingError`, `NoCalls` and `Request` -> `ValueError`, `Io` -> `OSError`, `File` -> the
/// `OSError` subclass of its errno (`OSError(errno, message, path)` picks it), `filename` set.
pub fn export_err(e: ExportError) -> PyErr {
    match e {
        ExportError::Nesting(m) => crate::errors::NestingError::new_err(m),
        ExportError::NoCalls => PyValueError::new_err(ExportError::NoCalls.to_string()),
        ExportError::Request(m) => PyValueError::new_err(m),
        ExportError::Io(m) => PyOSError::new_err(m),
        ExportError::File { message, errno, path } => {
            PyOSError::new_err((errno, message, path.to_string_lossy().into_owned()))
        }
    }
}

/// `IsADirectoryError` / `NotADirectoryError` (errno and filename set) for a path in the
/// way, `ValueError` for the rest.
pub(crate) fn plan_err(e: PlanError) -> PyErr {
    match e.errno() {
        Some((errno, strerror, path)) => PyOSError::new_err((errno, strerror, path.to_string_lossy().into_owned())),
        None => PyValueError::new_err(e.to_string()),
    }
}

/// The `filepath` argument as given (`os.fspath`: a trailing separator, which
/// `pathlib.Path` drops, still says "a directory").
pub(crate) fn target_path(filepath: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    filepath.extract()
}

/// `Path(r.file_path).stem` of a result set (`""` without a file or a `file_path`).
pub(crate) fn file_stem(r: &Bound<'_, PyAny>) -> PyResult<String> {
    if !r.hasattr("file_path")? {
        return Ok(String::new());
    }
    let path = r.getattr("file_path")?;
    if path.is_none() {
        return Ok(String::new());
    }
    let path: PathBuf = path.extract().or_else(|_| path.str()?.extract::<String>().map(PathBuf::from))?;
    Ok(path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
}

/// The arguments every `export_*` function takes, as Python gave them.
pub struct ExportArgs<'py> {
    pub profiling_data: Bound<'py, PyAny>,
    pub filepath: Bound<'py, PyAny>,
    pub ranks: Option<Bound<'py, PyAny>>,
    pub include: Option<Bound<'py, PyAny>>,
    pub exclude: Option<Bound<'py, PyAny>>,
    pub verbose: bool,
}

/// What [`ExportArgs::plan`] decided: the root result sets and the files to write.
pub struct Planned<'py> {
    pub roots: Vec<Bound<'py, PyAny>>,
    pub files: Vec<export_plan::PlannedFile>,
    /// The `ranks` argument (`None`: rank 0).
    pub ranks: Option<Vec<i64>>,
}

impl<'py> ExportArgs<'py> {
    /// Validate the arguments and plan the files of `format` (errors as [`Self::export`]);
    /// no root result set plans nothing.
    pub fn plan(&self, format: Format) -> PyResult<Planned<'py>> {
        let roots = root_sets(&self.profiling_data)?;
        if roots.is_empty() {
            return Ok(Planned { roots, files: Vec::new(), ranks: None });
        }
        let ranks = self.ranks.as_ref().map(requested_ranks).transpose()?;
        let inputs = roots
            .iter()
            .map(|r| run_input(r, self.include.as_ref(), self.exclude.as_ref(), ranks.as_deref().unwrap_or(&[0])))
            .collect::<PyResult<Vec<_>>>()?;
        let path = target_path(&self.filepath)?;
        let req = Request { format, path: &path, ranks, filtered: self.include.is_some() || self.exclude.is_some() };
        let files = export_plan::plan(&inputs, &req).map_err(plan_err)?;
        Ok(Planned { roots, files, ranks: req.ranks })
    }

    /// Validate, plan and write `format` with `write`; returns the paths written, in order.
    /// `verbose` prints `Wrote <path> (<viewer hint>)` per path.
    pub fn export(self, format: Format, write: Write<'_>) -> PyResult<Bound<'py, PyList>> {
        let py = self.profiling_data.py();
        let planned = self.plan(format)?;
        let written = PyList::empty(py);
        let pathlib_path = py.import("pathlib")?.getattr("Path")?;
        let print = py.import("builtins")?.getattr("print")?;
        for file in planned.files {
            let native = planned.roots[file.run].call_method0("_native_run")?;
            let native = native.cast::<NativeRun>()?.get();
            let run = Arc::clone(&native.run);
            let paths = py.detach(|| write(&run, &file.selection, &file.path)).map_err(export_err)?;
            warn_set_aside_ranks(native, planned.ranks.as_deref())?;
            for p in paths {
                let p = pathlib_path.call1((p,))?;
                if self.verbose {
                    let shown = p.str()?.to_string();
                    print.call1((format!("Wrote {shown} ({})", format.viewer(&shown)),))?;
                }
                written.append(p)?;
            }
        }
        Ok(written)
    }
}

/// The exporters leave calls that do not nest out: say so once per rank of `native` among
/// `ranks` (`None`: every rank), as a `RuntimeWarning`.
pub(crate) fn warn_set_aside_ranks(native: &NativeRun, ranks: Option<&[i64]>) -> PyResult<()> {
    Python::attach(|py| {
        let analysis = Arc::clone(&native.analysis);
        let exported: Vec<u32> =
            analysis.ranks().into_iter().filter(|r| ranks.is_none_or(|want| want.contains(&(*r as i64)))).collect();
        let a = Arc::clone(&analysis);
        let reconstructed = exported.clone();
        py.detach(move || reconstructed.iter().for_each(|&r| drop(a.rank(r))));
        for r in exported {
            crate::errors::warn_set_aside(py, &analysis, r)?;
        }
        Ok(())
    })
}

/// Whether `obj` is a result set (it has `_native_run`).
fn is_result_set(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    obj.hasattr("_native_run")
}

/// `profiling_data` as a list of result sets (one result set or a sequence of them).
/// `TypeError` for a path or string, a non-sequence, or a sequence holding anything else.
pub(crate) fn result_sets<'py>(data: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if is_result_set(data)? {
        return Ok(vec![data.clone()]);
    }
    let path_like = data.py().import("os")?.getattr("PathLike")?;
    if data.is_instance_of::<PyString>()
        || data.is_instance_of::<PyBytes>()
        || data.is_instance(&path_like)?
        || !data.hasattr("__iter__")?
    {
        return Err(PyTypeError::new_err(format!(
            "exporters take ProfilingResults (or a sequence of them), got {}; load a file first with \
             scope_profiler.read_h5(path)",
            data.get_type().name()?
        )));
    }
    let sets = data.try_iter()?.collect::<PyResult<Vec<_>>>()?;
    for s in &sets {
        if !is_result_set(s)? {
            return Err(PyTypeError::new_err(format!(
                "exporters take ProfilingResults, got a sequence containing {}",
                s.get_type().name()?
            )));
        }
    }
    Ok(sets)
}

/// The root result sets of `data` ([`result_sets`], those whose `is_root` is true), in
/// order. Errors as [`result_sets`]; `ValueError` for an empty sequence.
pub(crate) fn root_sets<'py>(data: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let sets = result_sets(data)?;
    let is_root = sets.iter().map(|r| r.getattr("is_root")?.is_truthy()).collect::<PyResult<Vec<bool>>>()?;
    Ok(export_plan::root_runs(&is_root).map_err(plan_err)?.into_iter().map(|i| sets[i].clone()).collect())
}

/// `(display_label, file stem)` of result set `r`: what its files are named after.
pub(crate) fn run_name(r: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    Ok((r.getattr("display_label")?.extract()?, file_stem(r)?))
}

/// The `ranks` argument: an int, or an iterable of values passed through `int()`.
pub(crate) fn requested_ranks(ranks: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if ranks.is_instance_of::<PyInt>() {
        return Ok(vec![ranks.extract()?]);
    }
    let int = ranks.py().get_type::<PyInt>();
    ranks.try_iter()?.map(|r| int.call1((r?,))?.extract()).collect()
}

/// `r.get_regions(include=include, exclude=exclude)`: the regions of result set `r` the
/// filters select, in its order.
pub(crate) fn selected_regions<'py>(
    r: &Bound<'py, PyAny>,
    include: Option<&Bound<'py, PyAny>>,
    exclude: Option<&Bound<'py, PyAny>>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let kwargs = PyDict::new(r.py());
    kwargs.set_item("include", include)?;
    kwargs.set_item("exclude", exclude)?;
    r.call_method("get_regions", (), Some(&kwargs))?.try_iter()?.collect()
}

/// What the plan needs of root result set `r`: its label, rank count, the names of the
/// regions `get_regions` selects and which of `ranks` have a call in them.
fn run_input(
    r: &Bound<'_, PyAny>,
    include: Option<&Bound<'_, PyAny>>,
    exclude: Option<&Bound<'_, PyAny>>,
    ranks: &[i64],
) -> PyResult<RunInput> {
    let mut regions = Vec::new();
    let mut per_rank = Vec::new();
    for region in selected_regions(r, include, exclude)? {
        regions.push(region.getattr("name")?.extract::<String>()?);
        per_rank.push(region.getattr("regions")?);
    }
    let mut ranks_with_calls = Vec::new();
    for &rank in ranks {
        let Ok(r32) = u32::try_from(rank) else { continue };
        if ranks_with_calls.contains(&r32) {
            continue;
        }
        for m in &per_rank {
            if m.contains(rank)? && m.get_item(rank)?.getattr("num_calls")?.is_truthy()? {
                ranks_with_calls.push(r32);
                break;
            }
        }
    }
    Ok(RunInput {
        label: r.getattr("display_label")?.extract()?,
        num_ranks: r.getattr("num_ranks")?.extract()?,
        regions,
        ranks_with_calls,
        file_stem: file_stem(r)?,
    })
}
