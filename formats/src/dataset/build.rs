//! Converting run files into a dataset: which files a list of paths names ([`find_runs`]),
//! the conversion of one file ([`convert_file`]: read, identify, write its partitions), and
//! a local build over many files in parallel ([`build`], [`convert_files`]).
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use scope_profiler_analysis::{MetaValue, Run};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::layout::{commit, prepare, write_run};
use super::run_id::run_id;
use super::runs_table::{meta_json, parse_iso_timestamp, RunRow};
use super::tables::{run_tables, RunTables, Table};
use super::DatasetError;
use crate::export_plan::{display_label, path_stem};
use crate::json_profile::{read_json, FORMAT_NAME};
use crate::{read_h5, Format};

/// What converting one file gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Converted {
    /// The run was written; its row for the runs table.
    Added(RunRow),
    /// The run is already in the dataset (or given twice): nothing written.
    Present { path: PathBuf, run: String },
    /// The file could not be read or converted: why, naming it.
    Failed { path: PathBuf, message: String },
}

/// Whether a file found in a directory is a run file: `.h5`, `.hdf5`, `.json`, `.json.gz`,
/// but not an export's file (`.speedscope.json`, `.trace.json`, ...).
fn is_run_file(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let profile = [".h5", ".hdf5", ".json", ".json.gz"].iter().any(|s| name.ends_with(s));
    let export = Format::exports().any(|f| f != Format::Json && name.ends_with(f.file_suffix()));
    profile && !export && !name.starts_with('.')
}

/// Whether a plain `.json` file found in a directory is some other JSON document: its head
/// does not name the profile format (a directory of runs often holds other JSON files).
fn foreign_json(path: &Path, name: &str) -> bool {
    use std::io::Read;
    if !name.to_ascii_lowercase().ends_with(".json") {
        return false;
    }
    let mut head = Vec::with_capacity(4096);
    match std::fs::File::open(path).and_then(|f| f.take(4096).read_to_end(&mut head)) {
        Ok(_) => memchr::memmem::find(&head, FORMAT_NAME.as_bytes()).is_none(),
        Err(_) => false,
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, failed: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(e) => e.flatten().map(|e| e.path()).collect(),
        Err(e) => return failed.push((dir.to_path_buf(), format!("could not list {}: {e}", dir.display()))),
    };
    entries.sort();
    for p in entries {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if p.is_dir() {
            if !name.starts_with('.') {
                walk(&p, out, failed);
            }
        } else if is_run_file(&name) && !foreign_json(&p, &name) {
            out.push(p);
        }
    }
}

/// The run files `inputs` name: each file as given, each directory's run files (searched
/// recursively, hidden entries skipped, sorted by path; a `.json` file there only when it
/// is a JSON profile). A path named twice counts once.
/// Also the inputs that do not exist, with why.
pub fn find_runs(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let (mut files, mut failed) = (Vec::new(), Vec::new());
    for input in inputs {
        if input.is_dir() {
            walk(input, &mut files, &mut failed);
        } else if input.exists() {
            files.push(input.clone());
        } else {
            failed.push((input.clone(), format!("{}: no such file or directory", input.display())));
        }
    }
    let mut seen = HashSet::new();
    files.retain(|f| seen.insert(std::path::absolute(f).unwrap_or_else(|_| f.clone())));
    (files, failed)
}

/// Read a run file: an HDF5 file or a JSON profile, by its contents.
fn read_run(path: &Path) -> Result<Run, String> {
    let named = |m: String| {
        let shown = path.display().to_string();
        if m.contains(&shown) {
            m
        } else {
            format!("{shown}: {m}")
        }
    };
    match Format::sniff_profile(path).map_err(|e| named(e.to_string()))? {
        Format::Json => read_json(path).map_err(|e| named(e.to_string())),
        Format::HtmlReport => Err(named("an HTML report, not a profile: give the .h5 or JSON file".into())),
        _ => read_h5(path).map_err(|e| named(e.to_string())),
    }
}

/// The runs-table row of `run`, read from `path`, written as `id`.
fn run_row(run: &Run, path: &Path, id: String, tables: &RunTables) -> RunRow {
    let text = |k: &str| match run.meta(k) {
        Some(MetaValue::Str(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    RunRow {
        run: id,
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string(),
        label: display_label(run, &path_stem(path)),
        host: text("hostname"),
        start_time: text("timestamp").as_deref().and_then(parse_iso_timestamp),
        num_ranks: run.num_ranks as i64,
        num_calls: tables.rows(Table::Calls) as i64,
        num_threads: tables.rows(Table::Threads) as i64,
        num_tasks: tables.rows(Table::Tasks) as i64,
        metadata: run.metadata.iter().filter(|(k, _)| k != "label").map(|(k, v)| (k.clone(), meta_json(v))).collect(),
    }
}

/// Convert the run file `path` into the dataset `dir`, unless its run is in `present`.
pub fn convert_file(path: &Path, dir: &Path, present: &HashSet<String>) -> Converted {
    let failed = |message: String| Converted::Failed { path: path.to_path_buf(), message };
    let run = match read_run(path) {
        Ok(r) => r,
        Err(m) => return failed(m),
    };
    let id = run_id(&run);
    if present.contains(&id) {
        return Converted::Present { path: path.to_path_buf(), run: id };
    }
    let tables = match run_tables(&run) {
        Ok(t) => t,
        Err(e) => return failed(format!("{}: {e}", path.display())),
    };
    if let Err(e) = write_run(dir, &id, &tables) {
        return failed(e.to_string());
    }
    Converted::Added(run_row(&run, path, id, &tables))
}

/// Convert `files` ([`convert_file`]) on `jobs` threads (`None`: one per core), each
/// taking the next file when done with one; `tick` is called once per file done. Returns
/// the conversions in the order of `files`.
///
/// Plain threads rather than rayon over the files: a file's conversion runs its own
/// parallel steps (reading, reconstruction) on the analyses' pool, which a conversion
/// inside a rayon worker runs inline. Measured on 300 runs of 4,000 calls with 2 shared
/// cores, interleaved: rayon over the files (its own pool or the analyses') took 2.8-7.0 s
/// where these threads took 2.0-3.7 s (`benches/bench_dataset.py`).
pub fn convert_files(
    files: &[PathBuf],
    dir: &Path,
    present: &HashSet<String>,
    jobs: Option<usize>,
    tick: &(dyn Fn(usize) + Sync),
) -> Vec<Converted> {
    let threads = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map(usize::from).unwrap_or(1))
        .clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<Converted>>> = files.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else { break };
                let c = convert_file(file, dir, present);
                *done[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                tick(1);
            });
        }
    });
    done.into_iter()
        .zip(files)
        .map(|(slot, file)| {
            slot.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(|| Converted::Failed {
                path: file.clone(),
                message: format!("{}: the conversion did not finish", file.display()),
            })
        })
        .collect()
}

/// What a build did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BuildOutcome {
    /// Rows of the runs written by this build, in input order.
    pub added: Vec<RunRow>,
    /// Files whose run was already in the dataset or given before: (path, run id).
    pub present: Vec<(PathBuf, String)>,
    /// Files that could not be converted: (path, message naming it).
    pub failed: Vec<(PathBuf, String)>,
}

impl BuildOutcome {
    /// Sort `converted` (in input order) into an outcome: a run added twice (two copies of
    /// one run) or already among `existing` counts as present.
    pub fn collect(existing: &[RunRow], converted: Vec<Converted>) -> Self {
        let mut seen: HashSet<String> = existing.iter().map(|r| r.run.clone()).collect();
        let mut out = BuildOutcome::default();
        for c in converted {
            match c {
                Converted::Added(row) if seen.contains(&row.run) => {
                    out.present.push((PathBuf::from(&row.path), row.run));
                }
                Converted::Added(row) => {
                    seen.insert(row.run.clone());
                    out.added.push(row);
                }
                Converted::Present { path, run } => out.present.push((path, run)),
                Converted::Failed { path, message } => out.failed.push((path, message)),
            }
        }
        out
    }
}

/// Build (or with `append`, extend) the dataset `dir` from the run files `files` (see
/// [`find_runs`]), converting `jobs` files at a time ([`convert_files`]); `tick` is
/// called once per file done. A file that fails is reported in the outcome and the others
/// are written. Errors: the directory cannot be used or the runs table not written.
pub fn build(
    files: &[PathBuf],
    dir: &Path,
    append: bool,
    jobs: Option<usize>,
    tick: &(dyn Fn(usize) + Sync),
) -> Result<BuildOutcome, DatasetError> {
    let existing = prepare(dir, append)?;
    let present: HashSet<String> = existing.iter().map(|r| r.run.clone()).collect();
    let converted = convert_files(files, dir, &present, jobs, tick);
    let outcome = BuildOutcome::collect(&existing, converted);
    let mut rows = existing;
    rows.extend(outcome.added.iter().cloned());
    commit(dir, &rows)?;
    Ok(outcome)
}
