//! The dataset directory on disk: writing a run's partitions (staged, then renamed into
//! place), making a directory ready for a build ([`prepare`]) and committing the runs table
//! ([`commit`]). See the module documentation of [`super`] for the layout.
use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::runs_table::{read_runs, runs_batch, RunRow};
use super::tables::{RunTables, Table};
use super::{DatasetError, RUNS_FILE};
use crate::export_output::write_atomic;

/// Where partitions are written before they are renamed into place.
const STAGING: &str = ".staging";
/// The file of a partition.
const PART: &str = "part-0.parquet";

fn io<'a>(what: &str, path: &'a Path) -> impl Fn(std::io::Error) -> DatasetError + 'a {
    let what = what.to_string();
    move |e| DatasetError::new(format!("could not {what} {}: {e}", path.display()))
}

/// The partition directory of run `id` in `table`.
pub fn partition_dir(dir: &Path, table: Table, id: &str) -> PathBuf {
    dir.join(table.name()).join(format!("run={id}"))
}

fn props(table: Table) -> WriterProperties {
    // dictionary pages where values repeat (names, ranks, lanes, depths); the other int64
    // columns are mostly distinct and a dictionary attempt there only costs time
    let mut b = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false);
    let repeated: &[&str] = match table {
        Table::Calls => &["rank", "lane", "thread", "task", "depth"],
        Table::Regions | Table::Threads | Table::Tasks => &["rank"],
    };
    for c in table.dictionary_columns().iter().chain(repeated) {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), true);
    }
    b.build()
}

fn write_parquet(path: &Path, table: Table, batch: &RecordBatch) -> Result<(), DatasetError> {
    let err = |e: parquet::errors::ParquetError| DatasetError::new(format!("could not write {}: {e}", path.display()));
    let file = fs::File::create(path).map_err(io("create", path))?;
    let mut w =
        ArrowWriter::try_new(std::io::BufWriter::with_capacity(1 << 16, file), batch.schema(), Some(props(table)))
            .map_err(err)?;
    w.write(batch).map_err(err)?;
    w.close().map_err(err)?;
    Ok(())
}

/// Write one partition: staged in `DIR/.staging/`, then the directory renamed to
/// `DIR/<table>/run=<id>/` (replacing a partition of the same run left by a killed build).
/// Directories are created when a step finds them missing: on a file system where each
/// metadata operation is slow, a conversion makes no more of them than it needs.
fn write_partition(dir: &Path, table: Table, id: &str, batch: &RecordBatch) -> Result<(), DatasetError> {
    let staging = dir.join(STAGING);
    let make = || tempfile::Builder::new().prefix(&format!("{}-{id}-", table.name())).tempdir_in(&staging);
    let tmp = match make() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(&staging).map_err(io("create", &staging))?;
            make()
        }
        r => r,
    }
    .map_err(io("create a directory in", &staging))?;
    write_parquet(&tmp.path().join(PART), table, batch)?;
    let target = partition_dir(dir, table, id);
    if fs::rename(tmp.path(), &target).is_err() {
        // the table's directory is new, or a partition of this run is there already
        let parent = dir.join(table.name());
        fs::create_dir_all(&parent).map_err(io("create", &parent))?;
        if target.exists() {
            fs::remove_dir_all(&target).map_err(io("replace", &target))?;
        }
        match fs::rename(tmp.path(), &target) {
            Ok(()) => {}
            // the same run written at once by another worker (an input given twice): its
            // partition is this one; the staged copy goes with `tmp`
            Err(_) if target.join(PART).exists() => return Ok(()),
            Err(e) => return Err(io("rename a partition to", &target)(e)),
        }
    }
    let _ = tmp.keep();
    Ok(())
}

/// Write the tables of run `id` that have rows into `dir`.
pub fn write_run(dir: &Path, id: &str, tables: &RunTables) -> Result<(), DatasetError> {
    for (table, batch) in tables.present() {
        write_partition(dir, table, id, batch)?;
    }
    Ok(())
}

/// Whether `name` is an entry a dataset directory holds.
fn is_dataset_entry(name: &str) -> bool {
    name == RUNS_FILE || name == STAGING || Table::from_name(name).is_some() || is_temp_runs_file(name)
}

/// A temp file of [`commit`] (`.runs.parquet.XXXX.tmp`), left by a killed build.
fn is_temp_runs_file(name: &str) -> bool {
    name.starts_with(&format!(".{RUNS_FILE}.")) && name.ends_with(".tmp")
}

/// Make `dir` ready for a build and return the runs already in it. Without `append`, `dir`
/// must be new, empty, or hold only what a killed first build left (an existing dataset is
/// an error: its runs would be replaced). With `append`, the runs of its `runs.parquet` are
/// kept. Then what a killed build left is removed: staged partitions, a temp runs table,
/// and partitions of runs that are not in the runs table.
pub fn prepare(dir: &Path, append: bool) -> Result<Vec<RunRow>, DatasetError> {
    if dir.exists() && !dir.is_dir() {
        return Err(DatasetError::new(format!("{} is a file, not a dataset directory", dir.display())));
    }
    fs::create_dir_all(dir).map_err(io("create", dir))?;
    let runs_file = dir.join(RUNS_FILE);
    let rows = if runs_file.exists() {
        if !append {
            return Err(DatasetError::new(format!(
                "{} already holds a dataset: add runs to it with --append (append=True), or choose a new directory",
                dir.display()
            )));
        }
        read_runs(&runs_file)?
    } else {
        Vec::new()
    };
    let mut foreign = Vec::new();
    for entry in fs::read_dir(dir).map_err(io("list", dir))? {
        let name = entry.map_err(io("list", dir))?.file_name().to_string_lossy().into_owned();
        if !is_dataset_entry(&name) {
            foreign.push(name);
        }
    }
    if !foreign.is_empty() && rows.is_empty() {
        foreign.sort();
        return Err(DatasetError::new(format!(
            "{} is not empty and holds no dataset ({}{}): choose a new or empty directory",
            dir.display(),
            foreign[..foreign.len().min(3)].join(", "),
            if foreign.len() > 3 { ", ..." } else { "" }
        )));
    }
    remove_leftovers(dir, &rows)?;
    Ok(rows)
}

/// Remove what a killed build left in `dir` (see [`prepare`]).
fn remove_leftovers(dir: &Path, rows: &[RunRow]) -> Result<(), DatasetError> {
    let staging = dir.join(STAGING);
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(io("remove", &staging))?;
    }
    let known: HashSet<String> = rows.iter().map(|r| format!("run={}", r.run)).collect();
    for entry in fs::read_dir(dir).map_err(io("list", dir))?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_temp_runs_file(&name) {
            fs::remove_file(entry.path()).map_err(io("remove", &entry.path()))?;
        }
    }
    for table in Table::ALL {
        let t = dir.join(table.name());
        let Ok(entries) = fs::read_dir(&t) else { continue };
        for entry in entries.flatten() {
            if !known.contains(entry.file_name().to_string_lossy().as_ref()) {
                let p = entry.path();
                if p.is_dir() {
                    fs::remove_dir_all(&p).map_err(io("remove", &p))?;
                } else {
                    fs::remove_file(&p).map_err(io("remove", &p))?;
                }
            }
        }
    }
    Ok(())
}

/// Write `rows` as the runs table of `dir` (replacing it atomically), then remove the
/// staging directory.
pub fn commit(dir: &Path, rows: &[RunRow]) -> Result<(), DatasetError> {
    let batch = runs_batch(rows)?;
    let path = dir.join(RUNS_FILE);
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    write_atomic(&path, |f| {
        let err = |e: parquet::errors::ParquetError| {
            crate::ExportError::Io(format!("could not write {}: {e}", path.display()))
        };
        let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).map_err(err)?;
        w.write(&batch).map_err(err)?;
        w.close().map_err(err)?;
        Ok(())
    })
    .map_err(|e| DatasetError::new(e.to_string()))?;
    let _ = fs::remove_dir_all(dir.join(STAGING));
    Ok(())
}
