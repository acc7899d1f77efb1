//! Which files an export writes: the argument rules and file naming shared by every
//! `export_*` function of the Python package (spec-exports, top).
//!
//! The caller (the Python glue) reads the result sets; this module decides, without any I/O:
//!
//! * validation, in the order the reference applies it: an empty list is an error
//!   ([`PlanError::NoData`]); non-root result sets are dropped ([`root_runs`]; none left
//!   means nothing to write, not an error); per run, in order: a filter matching no region
//!   ([`PlanError::NoRegions`]), a requested rank outside `0..num_ranks`
//!   ([`PlanError::InvalidRank`]); finally no run with calls on the requested ranks
//!   ([`PlanError::NoCalls`]);
//! * labels: duplicates get `" (2)"`, `" (3)"`, ... ([`unique_labels`]);
//! * file names ([`Naming`], one rule per [`Format`]); with several runs the label's
//!   [`slug`] joins the stem, so runs never overwrite each other;
//! * the [`Selection`] each file is written with (ranks, region names, label).
//!
//! # Where the files go
//! * `filepath` names a **directory** ([`names_directory`]: it ends with a path separator,
//!   has no file name such as `"."`, or is an existing directory): the files are written
//!   inside it under their default names, `<stem><suffix>` with the run's [`default_stem`]
//!   (its file's stem, e.g. `run` for `run.h5`) and the format's [`Format::file_suffix`]
//!   (`run.speedscope.json`); several runs with one stem get `_2`, `_3` ([`unique_stems`]).
//! * otherwise `filepath` names the **file**: a name with a suffix is used as given when the
//!   export writes one file for the run (`pool.flame.svg` stays `pool.flame.svg`); a name
//!   without a suffix gets the format's default suffix (`out` -> `out.speedscope.json`).
//! * several outputs keep their documented names: several runs add `_<label slug>` to the
//!   stem; a format writing one file per rank (flame graph SVG, `.prof`) adds `_rank<R>`
//!   when there are several ranks with calls (`.prof` with `per_lane` also `_<lane slug>`,
//!   [`crate::pstats::prof_path`]); Parquet writes `<stem>.lanes.parquet` beside its file.
//!   The package's `export_prof` names its files as 0.7.5 does, `_rank<R>` always
//!   ([`ProfNaming::Reference`]: `profile.prof` -> `profile_rank0.prof`, several runs
//!   `profile_<label slug>_rank0.prof`); the command line keeps one file's name as given
//!   ([`ProfNaming::OneFileAsGiven`]).
//! * a computed file path that is an existing directory is refused
//!   ([`PlanError::IsADirectory`], Python `IsADirectoryError`), and so is a directory
//!   target that exists as something else ([`PlanError::NotADirectory`]).
//!
//! These and [`names_directory`] are the module's only filesystem queries.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use scope_profiler_analysis::{MetaValue, Run};
use thiserror::Error;

use crate::export_output::slug;
use crate::registry::Format;
use crate::Selection;

/// Why an export was refused before anything was written. Python raises `ValueError`
/// with this text.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("No profiling data provided.")]
    NoData,
    #[error("No regions matched the selected filters.")]
    NoRegions,
    #[error("Invalid rank requested: {0}")]
    InvalidRank(i64),
    #[error("No calls recorded for the requested ranks.")]
    NoCalls,
    /// The target path is empty (`""`).
    #[error("{0:?} has an empty name")]
    EmptyName(PathBuf),
    /// A file to write is an existing directory. Python: `IsADirectoryError` (`EISDIR`).
    #[error("{}: is a directory, cannot write the export there", .0.display())]
    IsADirectory(PathBuf),
    /// A directory target (ends with a separator) exists and is not a directory. Python:
    /// `NotADirectoryError` (`ENOTDIR`).
    #[error("{}: not a directory, cannot write the export inside it", .0.display())]
    NotADirectory(PathBuf),
}

impl PlanError {
    /// `(errno, strerror, path)` Python raises this with (an `OSError` subclass), if any.
    pub fn errno(&self) -> Option<(i32, &'static str, &Path)> {
        match self {
            PlanError::IsADirectory(p) => Some((libc::EISDIR, "Is a directory: cannot write the export there", p)),
            PlanError::NotADirectory(p) => {
                Some((libc::ENOTDIR, "Not a directory: cannot write the export inside it", p))
            }
            _ => None,
        }
    }
}

/// How the files of one format are named from the requested path `filepath`; the suffix a
/// name without one gets is the format's [`Format::suffix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// One file per run (speedscope's rule, spec-exports §1): `name.partition(".")` splits
    /// the file name at its first dot and keeps the tail as the suffix (`out.speedscope.json`
    /// -> stem `out`, suffix `.speedscope.json`); without a dot the suffix is the default.
    /// Path: `<stem>[_<slug>]<suffix>`.
    PerRun,
    /// One target per run, `<Path.stem>[_<slug>]<Path.suffix or default suffix>` (Python's
    /// `PurePath.stem` / `.suffix`: split at the last dot); the writer derives its files from
    /// it (pstats: `_rank<R>[_<lane slug>]` before the suffix, `pstats::prof_path`).
    PerRunStem,
    /// One file per (run, rank with calls), each written with that single rank:
    /// `<Path.stem>[_<slug>]_rank<R><Path.suffix or default suffix>`, or without `_rank<R>`
    /// when the run has one rank with calls.
    PerRank,
}

impl Naming {
    /// `(stem, suffix)` of the file name `name` under this rule, `default_suffix` for a name
    /// without one.
    fn split(self, name: &str, default_suffix: &str) -> (String, String) {
        match self {
            Naming::PerRun => match name.split_once('.') {
                Some((stem, tail)) => (stem.to_string(), format!(".{tail}")),
                None => (name.to_string(), default_suffix.to_string()),
            },
            Naming::PerRunStem | Naming::PerRank => {
                let (stem, suffix) = py_stem_suffix(name);
                (stem.to_string(), if suffix.is_empty() { default_suffix } else { suffix }.to_string())
            }
        }
    }
}

/// How `.prof` files are named from their target ([`crate::pstats::write_prof_named`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfNaming {
    /// 0.7.5's `export_prof`: every file gets `_rank<R>` (and `_<lane slug>` per lane).
    Reference,
    /// `scope-profiler export prof`: a single file is the target itself; several get
    /// `_rank<R>` (and `_<lane slug>`).
    OneFileAsGiven,
}

/// What the caller knows about one root result set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInput {
    /// `display_label` (before de-duplication).
    pub label: String,
    pub num_ranks: u32,
    /// Names of the selected regions (`get_regions(include=, exclude=)`), in its order; the
    /// order decides ties in some formats. Empty: the filter matched nothing.
    pub regions: Vec<String>,
    /// Ranks on which at least one selected region has a call (any order).
    pub ranks_with_calls: Vec<u32>,
    /// The stem of the run's file (`Path(file_path).stem`; empty without a file): its
    /// default file name in a directory target ([`default_stem`]).
    pub file_stem: String,
}

/// The user's choices common to every format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub format: Format,
    /// The `filepath` argument.
    pub path: &'a Path,
    /// The `ranks` argument; `None` = `[0]`. Kept in the given order, duplicates included.
    pub ranks: Option<Vec<i64>>,
    /// Whether `include` or `exclude` was given.
    pub filtered: bool,
}

/// One write: run `run` (index into the [`plan`] input) with `selection` to `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    pub run: usize,
    pub path: PathBuf,
    pub selection: Selection,
}

/// Positions of the root result sets among `is_root` (one flag per result set given).
/// Errors: [`PlanError::NoData`] for an empty list. An empty result (no root) means nothing
/// is written and `[]` is returned.
pub fn root_runs(is_root: &[bool]) -> Result<Vec<usize>, PlanError> {
    if is_root.is_empty() {
        return Err(PlanError::NoData);
    }
    Ok(is_root.iter().enumerate().filter(|(_, &r)| r).map(|(i, _)| i).collect())
}

/// `names` with repeats made distinct: the first of each name as it is, its `n`-th repeat
/// (`n` from 2) `mark(name, n)`.
fn number_repeats(names: &[String], mark: impl Fn(&str, usize) -> String) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    names
        .iter()
        .map(|name| {
            let n = seen.entry(name.as_str()).or_default();
            *n += 1;
            if *n == 1 {
                name.clone()
            } else {
                mark(name, *n)
            }
        })
        .collect()
}

/// `labels` with repeats made distinct: the second `"run"` becomes `"run (2)"`, the third
/// `"run (3)"`.
pub fn unique_labels(labels: &[String]) -> Vec<String> {
    number_repeats(labels, |label, n| format!("{label} ({n})"))
}

/// The files to write for `runs` (the root result sets, in order) under `req`, in writing
/// order (runs in order; per-rank formats: ranks in requested order). Runs without calls
/// on the requested ranks are skipped. No runs: `Ok([])`.
///
/// Errors ([`PlanError`]): `NoRegions`, `InvalidRank` (first run first, its filter checked
/// before its ranks), `NoCalls` when no run has a call on the requested ranks,
/// `EmptyName` when `req.path` has no file name.
pub fn plan(runs: &[RunInput], req: &Request<'_>) -> Result<Vec<PlannedFile>, PlanError> {
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let requested = req.ranks.clone().unwrap_or_else(|| vec![0]);
    let labels = unique_labels(&runs.iter().map(|r| r.label.clone()).collect::<Vec<_>>());
    let mut prepared = Vec::new();
    // the HTML report of an unfiltered run without calls says so (0.7.5 wrote one too)
    let report_empty = req.format.reports_empty_runs() && !req.filtered;
    for (i, run) in runs.iter().enumerate() {
        if run.regions.is_empty() && !report_empty {
            return Err(PlanError::NoRegions);
        }
        // a run without calls has 0 ranks: the default rank 0 is then none
        let ranks = if report_empty && req.ranks.is_none() && run.num_ranks == 0 {
            Vec::new()
        } else {
            valid_ranks(&requested, run.num_ranks)?
        };
        let with_calls: Vec<u32> = ranks.iter().copied().filter(|r| run.ranks_with_calls.contains(r)).collect();
        if !with_calls.is_empty() || report_empty {
            prepared.push((i, ranks, with_calls));
        }
    }
    if prepared.is_empty() {
        return Err(PlanError::NoCalls);
    }
    let names: Vec<(String, String)> = runs.iter().map(|r| (r.label.clone(), r.file_stem.clone())).collect();
    let bases = run_bases(req.format, req.path, &names)?;
    let keep_names = req.filtered || req.format.keeps_region_order();
    let mut files = Vec::new();
    for (i, ranks, with_calls) in prepared {
        let run = &runs[i];
        let selection = |ranks: Vec<u32>| Selection {
            ranks,
            regions: keep_names.then(|| run.regions.clone()),
            label: labels[i].clone(),
        };
        let base = &bases[i];
        match req.format.naming() {
            Naming::PerRun | Naming::PerRunStem => {
                files.push(PlannedFile { run: i, path: base.path(None), selection: selection(ranks) });
            }
            Naming::PerRank => {
                let several = with_calls.len() > 1;
                for rank in with_calls {
                    let path = base.path(several.then_some(rank));
                    files.push(PlannedFile { run: i, path, selection: selection(vec![rank]) });
                }
            }
        }
    }
    // every file a writer will create, before any is written (Parquet writes its lanes
    // table beside its events file)
    for f in &files {
        let lanes = (req.format == Format::Parquet).then(|| crate::parquet_export::lanes_path(&f.path));
        if let Some(p) = std::iter::once(&f.path).chain(lanes.as_ref()).find(|p| p.is_dir()) {
            return Err(PlanError::IsADirectory(p.clone()));
        }
    }
    Ok(files)
}

/// Whether `filepath` names a directory to write into: it ends with a path separator, has
/// no file name (`"."`, `".."`, `"/"`), or is an existing directory. `""` is not one.
pub fn names_directory(filepath: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let raw = filepath.as_os_str().as_bytes();
    !raw.is_empty() && (raw.ends_with(b"/") || filepath.file_name().is_none() || filepath.is_dir())
}

/// The stem of a run's default file name: its file's stem, else its label's [`slug`],
/// else `"profile"`.
pub fn default_stem(file_stem: &str, label: &str) -> String {
    if !file_stem.is_empty() && file_stem != "." {
        return file_stem.to_string();
    }
    let s = slug(label);
    if s.is_empty() {
        "profile".to_string()
    } else {
        s
    }
}

/// File stem of `input` (`run.h5` -> `run`, `run.json.gz` -> `run` in any case;
/// [`default_stem`]).
pub fn path_stem(input: &Path) -> String {
    let name = input.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    const GZIPPED_JSON: &str = ".json.gz";
    let file_stem = if name.len() > GZIPPED_JSON.len() && name.to_ascii_lowercase().ends_with(GZIPPED_JSON) {
        // the suffix matched in ASCII: its bytes are the last ones, on a char boundary
        name[..name.len() - GZIPPED_JSON.len()].to_string()
    } else {
        input.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    };
    default_stem(&file_stem, "")
}

/// The run's display label: metadata `label`, else `fallback` (the file stem).
pub fn display_label(run: &Run, fallback: &str) -> String {
    match run.meta("label") {
        Some(MetaValue::Str(s)) if !s.is_empty() => s.clone(),
        _ => fallback.to_string(),
    }
}

/// `stems` with repeats made distinct: the second `"run"` becomes `"run_2"`, the third
/// `"run_3"` (two inputs `a/run.h5` and `b/run.h5` must not overwrite each other).
pub fn unique_stems(stems: &[String]) -> Vec<String> {
    number_repeats(stems, |stem, n| format!("{stem}_{n}"))
}

/// The default file of `format` for a run with stem `stem` in `dir`: `dir/<stem><suffix>`.
pub fn default_file(dir: &Path, stem: &str, format: Format) -> PathBuf {
    dir.join(format!("{stem}{}", format.file_suffix()))
}

/// Where one run's file(s) go: directory, stem and suffix; a rank tag goes between.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Base {
    dir: PathBuf,
    stem: String,
    suffix: String,
}

impl Base {
    fn path(&self, rank: Option<u32>) -> PathBuf {
        let mut name = self.stem.clone();
        if let Some(r) = rank {
            name.push_str(&format!("_rank{r}"));
        }
        name.push_str(&self.suffix);
        self.dir.join(name)
    }
}

/// The base of every run of `runs` (`(label, file stem)`, every root run in order: the
/// labels are de-duplicated over all of them) for `format` at `filepath`.
fn run_bases(format: Format, filepath: &Path, runs: &[(String, String)]) -> Result<Vec<Base>, PlanError> {
    if filepath.as_os_str().is_empty() {
        return Err(PlanError::EmptyName(filepath.to_path_buf()));
    }
    if names_directory(filepath) {
        // `file/` does not exist to stat(2) (ENOTDIR); `file` does
        let bare = Path::new(filepath.as_os_str().to_str().map(|p| p.trim_end_matches('/')).unwrap_or_default());
        if (filepath.exists() || (!bare.as_os_str().is_empty() && bare.exists())) && !filepath.is_dir() {
            return Err(PlanError::NotADirectory(filepath.to_path_buf()));
        }
        let stems: Vec<String> = runs.iter().map(|(label, stem)| default_stem(stem, label)).collect();
        let suffix = format.file_suffix().to_string();
        return Ok(unique_stems(&stems)
            .into_iter()
            .map(|stem| Base { dir: filepath.to_path_buf(), stem, suffix: suffix.clone() })
            .collect());
    }
    let name = filepath.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (stem, suffix) = format.naming().split(&name, format.suffix());
    let dir = filepath.parent().map(Path::to_path_buf).unwrap_or_default();
    let labels = unique_labels(&runs.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>());
    let several = runs.len() > 1;
    Ok(labels
        .iter()
        .map(|label| Base {
            dir: dir.clone(),
            stem: if several { format!("{stem}_{}", slug(label)) } else { stem.clone() },
            suffix: suffix.clone(),
        })
        .collect())
}

/// The one file of each run of `runs` (`(label, file stem)`) for a per-run format
/// (`format` other than the flame graph) at `filepath`, by this module's rules (for writers
/// outside [`plan`], e.g. the JSON profile). Errors: [`PlanError::EmptyName`],
/// [`PlanError::NotADirectory`], [`PlanError::IsADirectory`].
pub fn run_paths(format: Format, filepath: &Path, runs: &[(String, String)]) -> Result<Vec<PathBuf>, PlanError> {
    let paths: Vec<PathBuf> = run_bases(format, filepath, runs)?.iter().map(|b| b.path(None)).collect();
    if let Some(p) = paths.iter().find(|p| p.is_dir()) {
        return Err(PlanError::IsADirectory(p.clone()));
    }
    Ok(paths)
}

/// `requested` as ranks of a run with `num_ranks` ranks. Error: the first one outside
/// `0..num_ranks`.
fn valid_ranks(requested: &[i64], num_ranks: u32) -> Result<Vec<u32>, PlanError> {
    requested
        .iter()
        .map(|&r| u32::try_from(r).ok().filter(|&u| u < num_ranks).ok_or(PlanError::InvalidRank(r)))
        .collect()
}

/// Python's `PurePath(name).stem` and `.suffix`: split at the last dot unless it is the
/// first or the last character (`".prof"` and `"a."` have no suffix).
fn py_stem_suffix(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 && i + 1 < name.len() => (&name[..i], &name[i..]),
        _ => (name, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet_export::lanes_path;
    use crate::pstats::{prof_path, ProfStats};

    // `run -o out/x.json.gz` writes `out/x.speedscope.json`, not `out/x.json.speedscope.json`;
    // `-o out/x.JSON` too
    #[test]
    fn the_stem_drops_a_gzipped_json_suffix_in_any_case() {
        for (input, want) in [
            ("out/x.json.gz", "x"),
            ("out/x.JSON.GZ", "x"),
            ("out/x.JSON", "x"),
            ("run.h5", "run"),
            ("a.b.h5", "a.b"),
            (".json.gz", ".json"),
            ("données.json.gz", "données"),
        ] {
            assert_eq!(path_stem(Path::new(input)), want, "{input}");
        }
    }

    fn run(label: &str, num_ranks: u32, with_calls: &[u32]) -> RunInput {
        RunInput {
            label: label.into(),
            num_ranks,
            regions: vec!["b".into(), "a".into()],
            ranks_with_calls: with_calls.to_vec(),
            file_stem: label.into(),
        }
    }

    fn req(format: Format, path: &str) -> Request<'_> {
        Request { format, path: Path::new(path), ranks: None, filtered: false }
    }

    fn paths(files: &[PlannedFile]) -> Vec<String> {
        files.iter().map(|f| f.path.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn roots_and_empty_input() {
        assert_eq!(root_runs(&[]), Err(PlanError::NoData));
        assert_eq!(PlanError::NoData.to_string(), "No profiling data provided.");
        assert_eq!(root_runs(&[false, true, false, true]), Ok(vec![1, 3]));
        assert_eq!(root_runs(&[false]), Ok(vec![]));
        assert_eq!(plan(&[], &req(Format::Speedscope, "x")), Ok(vec![]));
    }

    #[test]
    fn labels_repeat_with_a_count() {
        let l: Vec<String> = ["run", "other", "run", "run"].iter().map(|s| s.to_string()).collect();
        assert_eq!(unique_labels(&l), vec!["run", "other", "run (2)", "run (3)"]);
    }

    #[test]
    fn speedscope_keeps_the_tail_after_the_first_dot() {
        let runs = [run("async", 1, &[0])];
        let f = plan(&runs, &req(Format::Speedscope, "out/x.speedscope.json")).unwrap();
        assert_eq!(paths(&f), vec!["out/x.speedscope.json"]);
        let f = plan(&runs, &req(Format::Speedscope, "out/x")).unwrap();
        assert_eq!(paths(&f), vec!["out/x.speedscope.json"]);
        let f = plan(&runs, &req(Format::Speedscope, "out/x.json")).unwrap();
        assert_eq!(paths(&f), vec!["out/x.json"]);
        // speedscope always carries the get_regions names (their order decides ties)
        assert_eq!(f[0].selection, Selection::new(vec![0], "async").with_regions(vec!["b".into(), "a".into()]));
    }

    #[test]
    fn several_runs_get_the_label_slug_and_repeats_a_count() {
        let runs = [run("async", 1, &[0]), run("async", 1, &[0]), run("my run/2", 1, &[0])];
        let f = plan(&runs, &req(Format::ChromeTrace, "m")).unwrap();
        assert_eq!(paths(&f), vec!["m_async.trace.json", "m_async_2.trace.json", "m_my_run_2.trace.json"]);
        assert_eq!(f[1].selection.label, "async (2)");
        assert_eq!(f.iter().map(|f| f.run).collect::<Vec<_>>(), vec![0, 1, 2]);
        let f = plan(&runs, &req(Format::Speedscope, "d/m.speedscope.json")).unwrap();
        assert_eq!(
            paths(&f),
            vec!["d/m_async.speedscope.json", "d/m_async_2.speedscope.json", "d/m_my_run_2.speedscope.json"]
        );
    }

    #[test]
    fn default_suffixes_of_the_per_run_formats() {
        let runs = [run("r", 1, &[0])];
        for (fmt, want) in [
            (Format::Perfetto, "x.pftrace"),
            (Format::Pprof, "x.pb.gz"),
            (Format::Folded, "x.folded"),
            (Format::TimelineSvg, "x.timeline.svg"),
            (Format::Parquet, "x.parquet"),
        ] {
            assert_eq!(paths(&plan(&runs, &req(fmt, "x")).unwrap()), vec![want], "{fmt:?}");
        }
        // a name with a dot keeps its whole tail, whatever the format
        assert_eq!(paths(&plan(&runs, &req(Format::Pprof, "x.pb")).unwrap()), vec!["x.pb"]);
    }

    #[test]
    fn parquet_lanes_file_sits_beside_the_events_file() {
        let runs = [run("a", 1, &[0]), run("b", 1, &[0])];
        let f = plan(&runs, &req(Format::Parquet, "t/x.parquet")).unwrap();
        assert_eq!(paths(&f), vec!["t/x_a.parquet", "t/x_b.parquet"]);
        assert_eq!(lanes_path(&f[0].path), PathBuf::from("t/x_a.lanes.parquet"));
        let f = plan(&runs[..1], &req(Format::Parquet, "t/x")).unwrap();
        assert_eq!(lanes_path(&f[0].path), PathBuf::from("t/x.lanes.parquet"));
    }

    #[test]
    fn prof_targets_use_the_last_dot_and_the_writer_adds_rank_and_lane() {
        let runs = [run("async", 2, &[0, 1])];
        let mut r = req(Format::Prof, "p/out.v1.prof");
        r.ranks = Some(vec![1, 0]);
        let f = plan(&runs, &r).unwrap();
        assert_eq!(paths(&f), vec!["p/out.v1.prof"]);
        assert_eq!(f[0].selection.ranks, vec![1, 0]);
        assert_eq!(f[0].selection.regions, Some(vec!["b".into(), "a".into()]));
        let stats = |rank, lane_name: Option<&str>| ProfStats {
            rank,
            lane: lane_name.map(|_| 3),
            lane_name: lane_name.map(String::from),
            entries: Vec::new(),
        };
        assert_eq!(prof_path(&f[0].path, &stats(1, None)), PathBuf::from("p/out.v1_rank1.prof"));
        assert_eq!(
            prof_path(&f[0].path, &stats(0, Some("Task-2 (fetch) on MainThread"))),
            PathBuf::from("p/out.v1_rank0_Task-2_fetch_on_MainThread.prof")
        );
        let f = plan(&runs, &req(Format::Prof, "p/out")).unwrap();
        assert_eq!(paths(&f), vec!["p/out.prof"]);
        let two = [run("async", 1, &[0]), run("async", 1, &[0])];
        let f = plan(&two, &req(Format::Prof, "m.prof")).unwrap();
        let names: Vec<PathBuf> = f.iter().map(|f| prof_path(&f.path, &stats(0, None))).collect();
        assert_eq!(names, vec![PathBuf::from("m_async_rank0.prof"), PathBuf::from("m_async_2_rank0.prof")]);
    }

    #[test]
    fn flamegraph_writes_one_file_per_rank_with_calls() {
        let runs = [run("a", 3, &[0, 2]), run("b", 3, &[1])];
        let mut r = req(Format::FlamegraphSvg, "g/fg.svg");
        r.ranks = Some(vec![2, 1, 0]);
        let f = plan(&runs, &r).unwrap();
        // run a has two ranks with calls: `_rank<R>`; run b one: no rank tag
        assert_eq!(paths(&f), vec!["g/fg_a_rank2.svg", "g/fg_a_rank0.svg", "g/fg_b.svg"]);
        assert_eq!(f.iter().map(|f| f.selection.ranks.clone()).collect::<Vec<_>>(), vec![vec![2], vec![0], vec![1]]);
        // unfiltered: all regions (None); filtered: the get_regions names
        assert_eq!(f[0].selection.regions, None);
        r.filtered = true;
        assert_eq!(plan(&runs, &r).unwrap()[0].selection.regions, Some(vec!["b".into(), "a".into()]));
        let mut both = req(Format::FlamegraphSvg, "g/fg");
        both.ranks = Some(vec![0, 2]);
        let f = plan(&runs[..1], &both).unwrap();
        assert_eq!(paths(&f), vec!["g/fg_rank0.svg", "g/fg_rank2.svg"]);
        let mut one = req(Format::FlamegraphSvg, "g/fg");
        one.ranks = Some(vec![1]);
        assert_eq!(paths(&plan(&runs[1..], &one).unwrap()), vec!["g/fg.svg"]);
        // one output: the name as given (`pool.flame.svg`, not `pool.flame_rank0.svg`)
        one.path = Path::new("g/pool.flame.svg");
        assert_eq!(paths(&plan(&runs[1..], &one).unwrap()), vec!["g/pool.flame.svg"]);
        both.path = Path::new("g/fg.flame.html");
        let f = plan(&runs[..1], &both).unwrap();
        assert_eq!(paths(&f), vec!["g/fg.flame_rank0.html", "g/fg.flame_rank2.html"]);
    }

    #[test]
    fn python_stem_and_suffix() {
        assert_eq!(py_stem_suffix("a.b.c"), ("a.b", ".c"));
        assert_eq!(py_stem_suffix(".prof"), (".prof", ""));
        assert_eq!(py_stem_suffix("a."), ("a.", ""));
        assert_eq!(py_stem_suffix("plain"), ("plain", ""));
    }

    #[test]
    fn validation_errors_and_their_messages() {
        let e = |runs: &[RunInput], ranks: Option<Vec<i64>>| {
            let mut r = req(Format::Pprof, "x");
            r.ranks = ranks;
            plan(runs, &r).unwrap_err()
        };
        let mut empty = run("e", 1, &[0]);
        empty.regions.clear();
        assert_eq!(e(&[empty.clone()], None).to_string(), "No regions matched the selected filters.");
        assert_eq!(e(&[run("a", 2, &[0])], Some(vec![3])).to_string(), "Invalid rank requested: 3");
        assert_eq!(e(&[run("a", 2, &[0])], Some(vec![-1])).to_string(), "Invalid rank requested: -1");
        assert_eq!(e(&[run("a", 2, &[0])], Some(vec![1])).to_string(), "No calls recorded for the requested ranks.");
        // the first run is checked completely before the second
        assert_eq!(e(&[run("a", 1, &[0]), empty.clone()], Some(vec![1])), PlanError::InvalidRank(1));
        assert_eq!(e(&[empty, run("a", 1, &[0])], Some(vec![1])), PlanError::NoRegions);
        let r = Request { format: Format::Folded, path: Path::new(""), ranks: None, filtered: false };
        assert!(matches!(plan(&[run("a", 1, &[0])], &r), Err(PlanError::EmptyName(_))));
    }

    #[test]
    fn runs_without_calls_are_skipped_but_still_count_for_the_slug() {
        let runs = [run("a", 1, &[]), run("b", 1, &[0])];
        let f = plan(&runs, &req(Format::Folded, "x.folded")).unwrap();
        assert_eq!(paths(&f), vec!["x_b.folded"]);
        assert_eq!(f[0].run, 1);
        // per-run formats pass every requested rank; the writer skips those without calls
        let mut r = req(Format::Folded, "x.folded");
        r.ranks = Some(vec![0, 0]);
        assert_eq!(plan(&runs[1..], &r).unwrap()[0].selection.ranks, vec![0, 0]);
    }

    #[test]
    fn slug_is_the_python_rule() {
        assert_eq!(slug("my run: 2/3"), "my_run_2_3");
        assert_eq!(slug("__a b__"), "a_b");
        assert_eq!(slug("!!!"), "!!!");
        assert_eq!(slug("v1.2+x-y"), "v1.2+x-y");
    }

    /// A directory target gets the files inside it: `export_speedscope(results, "/tmp")` does
    /// not write `/tmp.speedscope.json` at the filesystem root, nor `"outdir/"` beside the
    /// directory.
    #[test]
    fn directory_targets_get_default_names_inside() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_string_lossy().into_owned();
        let runs = [run("async", 1, &[0])];
        for format in Format::exports() {
            for target in [d.clone(), format!("{d}/"), format!("{d}/new/")] {
                let f = plan(&runs, &req(format, &target)).unwrap();
                let want = match format {
                    Format::FlamegraphSvg => "async.flamegraph.svg".to_string(),
                    _ => format!("async{}", format.file_suffix()),
                };
                let inside = if target.ends_with("new/") { format!("{d}/new") } else { d.clone() };
                assert_eq!(paths(&f), vec![format!("{inside}/{want}")], "{format:?} {target}");
            }
        }
        // several ranks (per-rank formats): `_rank<R>` inside the directory
        let two = [run("mpi", 2, &[0, 1])];
        let mut r = req(Format::FlamegraphSvg, &d);
        r.ranks = Some(vec![0, 1]);
        assert_eq!(
            paths(&plan(&two, &r).unwrap()),
            vec![format!("{d}/mpi_rank0.flamegraph.svg"), format!("{d}/mpi_rank1.flamegraph.svg")]
        );
        // several runs: each its own stem, repeats numbered; no file stem: the label, else "profile"
        let mut anon = run("my run", 1, &[0]);
        anon.file_stem = String::new();
        let mut nameless = run("", 1, &[0]);
        nameless.file_stem = String::new();
        let runs = [run("a", 1, &[0]), run("a", 1, &[0]), anon, nameless];
        let f = plan(&runs, &req(Format::Folded, &format!("{d}/"))).unwrap();
        let want: Vec<String> =
            ["a.folded", "a_2.folded", "my_run.folded", "profile.folded"].iter().map(|n| format!("{d}/{n}")).collect();
        assert_eq!(paths(&f), want);
        assert!(names_directory(Path::new(".")));
        assert!(!names_directory(Path::new("")));
        assert!(!names_directory(Path::new("no-such-dir-here")));
        assert!(names_directory(Path::new("no-such-dir-here/")));
    }

    #[test]
    fn a_directory_in_the_way_is_refused_with_its_errno() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_string_lossy().into_owned();
        std::fs::create_dir(dir.path().join("x.speedscope.json")).unwrap();
        let e = plan(&[run("r", 1, &[0])], &req(Format::Speedscope, &format!("{d}/x"))).unwrap_err();
        assert_eq!(e, PlanError::IsADirectory(dir.path().join("x.speedscope.json")));
        // Parquet's lanes table in the way is found before the events file is written
        std::fs::create_dir(dir.path().join("zz.lanes.parquet")).unwrap();
        let e = plan(&[run("r", 1, &[0])], &req(Format::Parquet, &format!("{d}/zz.parquet"))).unwrap_err();
        assert_eq!(e, PlanError::IsADirectory(dir.path().join("zz.lanes.parquet")));
        assert_eq!(e.errno().map(|(n, _, _)| n), Some(libc::EISDIR));
        std::fs::write(dir.path().join("file"), b"").unwrap();
        let e = plan(&[run("r", 1, &[0])], &req(Format::Speedscope, &format!("{d}/file/"))).unwrap_err();
        assert_eq!(e, PlanError::NotADirectory(PathBuf::from(format!("{d}/file/"))));
        assert_eq!(e.errno().map(|(n, _, _)| n), Some(libc::ENOTDIR));
        let runs = [("label".to_string(), "x".to_string())];
        assert_eq!(run_paths(Format::Json, dir.path(), &runs), Ok(vec![dir.path().join("x.json")]));
        assert_eq!(
            run_paths(Format::Json, &dir.path().join("p.json.gz"), &runs),
            Ok(vec![dir.path().join("p.json.gz")])
        );
        let e = run_paths(Format::Speedscope, &dir.path().join("x"), &runs);
        assert_eq!(e, Err(PlanError::IsADirectory(dir.path().join("x.speedscope.json"))));
    }
}
