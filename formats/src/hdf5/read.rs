//! Reading: [`read_h5`] and the file-level parts (schema version, metadata, rank groups).
use std::collections::HashMap;
use std::fs;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hdf5::types::TypeDescriptor;
use hdf5::Container;
use scope_profiler_analysis::{MetaValue, Run};

use super::columnar::{read_columnar, read_lane_tables};
use super::heap_guard::global_heap_would_hang;
use super::schema1::read_schema1;
use super::typed::*;
use super::NOT_A_PROFILE;
use super::{py_repr, H5Error, R, SCHEMA_ATTRIBUTE, SCHEMA_VERSION};

/// `scope_profiler_schema` validation, with the reference's `HDF5SchemaError` messages.
pub(crate) fn read_schema_version(file: &hdf5::File, ctx: &Ctx) -> R<i64> {
    let names = file.attr_names().map_err(ctx.h5("root attributes"))?;
    if !names.iter().any(|n| n == SCHEMA_ATTRIBUTE) {
        // Schema 1 had no attribute. A file with the columnar groups that lost it (another
        // tool rewrote the root attributes) is read as columnar: its columns' names tell
        // their encoding, so nothing of it is guessed.
        let columnar = ["region_table", "rank_region_index", "events"].iter().all(|g| has(file, g));
        return Ok(if columnar { 2 } else { 1 });
    }
    let a = file.attr(SCHEMA_ATTRIBUTE).map_err(ctx.h5(SCHEMA_ATTRIBUTE))?;
    let d = descriptor(&a, ctx, SCHEMA_ATTRIBUTE)?;
    let integral = matches!(d, TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_));
    let value = if integral && a.is_scalar() {
        read_ints(&a, ctx, SCHEMA_ATTRIBUTE).ok().and_then(|v| v.first().copied())
    } else {
        None
    };
    let version = match value {
        Some(v) => v,
        None => {
            return Err(H5Error::Schema(format!(
                "HDF5 schema version attribute '{SCHEMA_ATTRIBUTE}' must be an integer, got {}",
                attr_repr(&a, ctx)
            )))
        }
    };
    if version < 1 {
        return Err(H5Error::Schema(format!(
            "Unsupported scope-profiler HDF5 schema version {version}; versions must be positive"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(H5Error::Schema(format!(
            "Unsupported scope-profiler HDF5 schema version {version}; this package supports versions through {SCHEMA_VERSION}. Upgrade scope-profiler to read this file."
        )));
    }
    Ok(version)
}

/// One attribute as a [`MetaValue`]; `Ok(None)` for types the run model cannot hold.
///
/// Errors: an attribute of a supported type whose value cannot be read (e.g. a string whose
/// heap entry is damaged) is [`H5Error::Corrupt`], naming the file and the attribute - never
/// silently left out.
pub(crate) fn read_meta_value(a: &Container, ctx: &Ctx, name: &str) -> R<Option<MetaValue>> {
    let Ok(d) = descriptor(a, ctx, name) else { return Ok(None) };
    let scalar = a.is_scalar();
    let what = format!("metadata attribute {}", py_repr(name));
    if is_string(&d) {
        let v = read_strings(a, ctx, &what)?;
        return Ok(Some(if scalar {
            MetaValue::Str(v.into_iter().next().unwrap_or_default())
        } else {
            MetaValue::StrList(v)
        }));
    }
    Ok(match d {
        TypeDescriptor::Float(_) => {
            let v = read_floats(a, ctx, &what)?;
            if scalar {
                v.first().map(|&x| MetaValue::Float(x))
            } else {
                Some(MetaValue::StrList(v.iter().map(|x| x.to_string()).collect()))
            }
        }
        TypeDescriptor::Integer(_)
        | TypeDescriptor::Unsigned(_)
        | TypeDescriptor::Boolean
        | TypeDescriptor::Enum(_) => {
            let v = read_ints(a, ctx, &what)?;
            if scalar {
                v.first().map(|&x| MetaValue::Int(x))
            } else {
                Some(MetaValue::StrList(v.iter().map(|x| x.to_string()).collect()))
            }
        }
        _ => None,
    })
}

pub(crate) fn read_metadata(file: &hdf5::File, ctx: &Ctx) -> R<Vec<(String, MetaValue)>> {
    if !has(file, "metadata") {
        return Ok(Vec::new());
    }
    let g = file.group("metadata").map_err(ctx.h5("metadata"))?;
    let mut out = Vec::new();
    for name in g.attr_names().map_err(ctx.h5("metadata attributes"))? {
        let a = g.attr(&name).map_err(ctx.h5(&format!("metadata attribute {}", py_repr(&name))))?;
        if let Some(v) = read_meta_value(&a, ctx, &name)? {
            out.push((name, v));
        }
    }
    Ok(out)
}

pub(crate) fn mpi_size(metadata: &[(String, MetaValue)]) -> i64 {
    match metadata.iter().find(|(k, _)| k == "mpi_size").map(|(_, v)| v) {
        Some(MetaValue::Int(v)) => *v,
        Some(MetaValue::Float(v)) => *v as i64,
        Some(MetaValue::Str(s)) => s.trim().parse().unwrap_or(1),
        _ => 1,
    }
}

/// `rank<N>` group names in numeric order.
pub(crate) fn rank_groups(file: &hdf5::File, ctx: &Ctx) -> R<Vec<(u32, String)>> {
    let mut out: Vec<(u32, String)> = file
        .member_names()
        .map_err(ctx.h5("root group"))?
        .into_iter()
        .filter_map(|n| {
            let digits = n.strip_prefix("rank")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((digits.parse::<u32>().ok()?, n))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Open `path` with HDF5 (descriptor close-on-exec), mapping failures to
/// [`H5Error::Corrupt`] naming the file. Opening reads no variable-length data.
fn open_hdf5(ctx: &Ctx) -> R<hdf5::File> {
    let file = hdf5::File::open(&ctx.source).inspect(super::close_on_exec).map_err(|e| {
        H5Error::Corrupt(format!(
            "{} is not a readable HDF5 profiling file (not HDF5, empty, or truncated, e.g. by a run interrupted while writing); the underlying error was: {e}",
            ctx.path
        ))
    })?;
    if !super::same_file(&file, &ctx.file) {
        ctx.replaced.store(true, std::sync::atomic::Ordering::Relaxed);
        return Err(changing(&ctx.path));
    }
    Ok(file)
}

/// The error for a file that kept changing while it was read.
fn changing(shown: &str) -> H5Error {
    H5Error::Corrupt(format!(
        "{shown} changed while it was being read ({READ_ATTEMPTS} attempts): another process is writing it. Read it again once the writer has finished."
    ))
}

/// The error for a heap that would hang HDF5.
fn damaged_heap(ctx: &Ctx) -> H5Error {
    ctx.corrupt("has a damaged global heap (the storage of its strings). The file is truncated or damaged.")
}

/// Open `path` for reading: refuse heaps that hang HDF5 (the scan skips the raw event data,
/// which is never a heap), map open failures to [`H5Error::Corrupt`] naming the file.
pub(crate) fn open_file(ctx: &Ctx) -> R<hdf5::File> {
    let file = open_hdf5(ctx)?;
    let plans = event_plans(&file, ctx);
    if global_heap_would_hang(&ctx.file, ctx.file_len, &data_ranges(&plans)).unwrap_or(false) {
        return Err(damaged_heap(ctx));
    }
    Ok(file)
}

/// The `storage_layout` root attribute (`"columnar"` when absent).
pub(crate) fn storage_layout(file: &hdf5::File, ctx: &Ctx) -> R<String> {
    if file.attr_names().map_err(ctx.h5("root attributes"))?.iter().any(|n| n == "storage_layout") {
        let a = file.attr("storage_layout").map_err(ctx.h5("storage_layout"))?;
        Ok(read_strings(&a, ctx, "storage_layout")?.into_iter().next().unwrap_or_default())
    } else {
        Ok("columnar".to_string())
    }
}

/// The file's error for an aggregate-only layout.
pub(crate) fn aggregate_error(ctx: &Ctx) -> H5Error {
    H5Error::Schema(format!(
        "{} stores aggregate statistics only (storage_layout 'aggregate'); this version reads per-call (columnar) profiles only",
        ctx.path
    ))
}

/// Most ranks a file may claim (4M: beyond the largest MPI jobs). A damaged rank column or
/// `mpi_size` must not make readers and exporters loop over billions of empty ranks.
pub(crate) const MAX_RANKS: i64 = 1 << 22;

/// `max(metadata.mpi_size, max rank + 1)`, 0 without rows.
///
/// Errors (`Corrupt`, naming the file) when the count exceeds [`MAX_RANKS`], or when the
/// highest rank is beyond both `mpi_size` and the number of index rows (every rank at or
/// above `mpi_size` must have rows of its own, so no valid file has that).
pub(crate) fn num_ranks(ctx: &Ctx, metadata: &[(String, MetaValue)], max_rank: Option<u32>, rows: usize) -> R<u32> {
    let Some(max_rank) = max_rank else { return Ok(0) };
    let size = mpi_size(metadata);
    let claimed = size.max(max_rank as i64 + 1);
    if claimed > MAX_RANKS || (max_rank as i64 >= size && max_rank as usize >= rows) {
        return Err(ctx.corrupt(format!(
            "claims {claimed} ranks (highest rank {max_rank}, mpi_size {size}, {rows} index rows). The file is damaged."
        )));
    }
    Ok(claimed.max(0) as u32)
}

/// The per-call columns of `events/` that [`open_and_prefetch`] reads before the heap check.
const EVENT_COLUMNS: [&str; 12] = [
    "start_deltas",
    "durations",
    "start_times",
    "end_times",
    "gpu_durations",
    "call_ids",
    "parent_ids",
    "thread_ids",
    "task_ids",
    "await_ns",
    "ready_wait_ns",
    "task_step_ns",
];

/// Event columns read ahead of the rest of the file, by dataset name.
pub(crate) type Prefetched = HashMap<&'static str, Vec<i64>>;

/// [`open_file`] for a full read, overlapping the global-heap check with the bulk of the
/// I/O: while one thread scans the file for a heap that would hang HDF5, this one reads the
/// int64 event columns raw ([`raw_plan`]: chunk index and `pread` only, no variable-length
/// data). Nothing touches a string before the check has passed.
fn open_and_prefetch(ctx: &Ctx) -> R<(hdf5::File, Prefetched)> {
    let file = open_hdf5(ctx)?;
    let plans = event_plans(&file, ctx);
    let ranges = data_ranges(&plans);
    let (hang, prefetched) = std::thread::scope(|scope| {
        let guard = scope.spawn(|| global_heap_would_hang(&ctx.file, ctx.file_len, &ranges).unwrap_or(false));
        let prefetched: Prefetched =
            plans.iter().filter_map(|(name, plan)| Some((*name, fetch_raw(plan, ctx)?))).collect();
        (guard.join().unwrap_or(false), prefetched)
    });
    if hang {
        return Err(damaged_heap(ctx));
    }
    Ok((file, prefetched))
}

/// The raw-readable int64 columns of `events/` and where their bytes are (HDF5 metadata
/// only: no variable-length data is read).
fn event_plans(file: &hdf5::File, ctx: &Ctx) -> Vec<(&'static str, RawPlan)> {
    let Some(events) = has(file, "events").then(|| file.group("events").ok()).flatten() else {
        return Vec::new();
    };
    EVENT_COLUMNS
        .iter()
        .filter(|name| has(&events, name))
        .filter_map(|&name| Some((name, raw_plan(&events.dataset(name).ok()?, ctx)?)))
        .collect()
}

/// The file byte ranges `(address, length)` of the planned columns, sorted: numeric data,
/// which the heap scan skips (a heap never lies inside a dataset's storage, but int64
/// values can spell a heap signature).
fn data_ranges(plans: &[(&'static str, RawPlan)]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = plans.iter().flat_map(|(_, p)| p.file_ranges()).collect();
    ranges.sort_unstable();
    ranges
}

pub(crate) fn read_inner(ctx: &Ctx) -> R<Run> {
    let (file, mut prefetched) = open_and_prefetch(ctx)?;
    let version = read_schema_version(&file, ctx)?;
    let mut run = Run { metadata: read_metadata(&file, ctx)?, ..Default::default() };
    let groups = rank_groups(&file, ctx)?;
    if version >= 2 {
        if storage_layout(&file, ctx)? == "aggregate" {
            return Err(aggregate_error(ctx));
        }
        if !has(&file, "region_table") && groups.is_empty() {
            return Err(ctx.corrupt(format!("{NOT_A_PROFILE}: it has no region_table and no rank groups.")));
        }
        read_columnar(&file, ctx, &mut run, &mut prefetched)?;
        read_lane_tables(&file, ctx, &mut run)?;
        run.num_ranks = num_ranks(ctx, &run.metadata, run.regions.iter().map(|r| r.rank).max(), run.regions.len())?;
        if run.regions.is_empty() && !(run.threads.is_empty() && run.tasks.is_empty()) {
            // a tracked run that recorded no region: its lane tables' ranks
            let max_rank = run.threads.iter().map(|t| t.rank).chain(run.tasks.iter().map(|t| t.rank)).max();
            run.num_ranks = num_ranks(ctx, &run.metadata, max_rank, usize::MAX)?;
        }
    } else {
        if groups.is_empty() && !has(&file, "region_table") {
            return Err(ctx.corrupt(format!("{NOT_A_PROFILE}: it has no region_table and no rank groups.")));
        }
        read_schema1(&file, ctx, &mut run, &groups)?;
    }
    Ok(run)
}

/// Read a file of schema 1, 2 or 3 into a [`Run`].
///
/// Per-call columns of schema-2/3 files are zero-copy slices of one Arrow buffer per column.
///
/// Errors:
/// * [`H5Error::NotFound`] `"HDF5 file not found: <path>"` when nothing exists at `path`;
/// * [`H5Error::Corrupt`] when the file is not HDF5 / truncated (`"<path> is not a readable HDF5
///   profiling file. …"`), its event index is inconsistent (`"<path> claims N recorded events but
///   its event columns hold M. The file is truncated or damaged."`, `"<path> has overlapping
///   region rows in its event index. The file is damaged."`), a column is missing, mistyped or
///   short, or it is HDF5 but not a scope-profiler profile;
/// * [`H5Error::Schema`] for an invalid or too new `scope_profiler_schema` attribute (reference
///   messages), or an aggregate-only file.
///
/// A row's unreadable per-call metadata is no error: the row is read without it
/// ([`read_h5_noting`] says so).
pub fn read_h5(path: &Path) -> Result<Run, H5Error> {
    read_h5_noting(path).map(|(run, _)| run)
}

/// [`read_h5`], and what it left out: one line per part of the file it could not use (a
/// row's unreadable per-call metadata), naming the file, the region, the rank and the call.
pub fn read_h5_noting(path: &Path) -> Result<(Run, Vec<String>), H5Error> {
    with_ctx(path, |ctx| {
        ctx.take_notes();
        read_inner(ctx).map(|run| (run, ctx.take_notes()))
    })
}

/// Run `read` with the file's error context: [`H5Error::NotFound`] when nothing exists at
/// `path`, a panic of the HDF5 bindings becomes [`H5Error::Corrupt`].
///
/// The file is opened once ([`Ctx`]) and the raw reads go through that descriptor; HDF5's
/// own open is checked to be the same file (a path replaced in between, by rename, is read
/// again), so two files are never mixed. A file rewritten in place while it is read (its
/// size or modification time differ after the read) is read again too, up to
/// [`READ_ATTEMPTS`] times; then the read fails with
/// [`H5Error::Corrupt`] `"<path> changed while it was being read ..."`.
pub(crate) fn with_ctx<T>(path: &Path, read: impl Fn(&Ctx) -> R<T>) -> R<T> {
    let shown = path.display().to_string();
    for _ in 0..READ_ATTEMPTS {
        let ctx = open_ctx(path, &shown)?;
        let before = Identity::of(&ctx.file);
        let result = match catch_unwind(AssertUnwindSafe(|| read(&ctx))) {
            Ok(r) => r,
            Err(_) => Err(H5Error::Corrupt(format!(
                "{shown} could not be read: the HDF5 reader failed on its contents. The file is truncated or damaged."
            ))),
        };
        let replaced = ctx.replaced.load(std::sync::atomic::Ordering::Relaxed);
        if !replaced && before.is_some() && before == Identity::of(&ctx.file) {
            return result;
        }
    }
    Err(changing(&shown))
}

/// Reads of a file that keeps changing before [`with_ctx`] gives up.
const READ_ATTEMPTS: usize = 3;

/// What tells one state of a file's contents from another: size and modification time (ns).
/// (Not the change time: unlinking a replaced file changes it, not its contents.)
#[derive(PartialEq, Eq)]
struct Identity(u64, i64, i64);

impl Identity {
    fn of(file: &fs::File) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        let m = file.metadata().ok()?;
        Some(Identity(m.len(), m.mtime(), m.mtime_nsec()))
    }
}

/// The [`Ctx`] of a read of `path`, or the error for a path that is missing or not a
/// regular file.
fn open_ctx(path: &Path, shown: &str) -> R<Ctx> {
    let unreadable = |e: io::Error| {
        H5Error::Corrupt(format!(
            "{shown} is not a readable HDF5 profiling file (not HDF5, empty, or truncated, e.g. by a run interrupted while writing); the underlying error was: {e}"
        ))
    };
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(H5Error::NotFound(format!("HDF5 file not found: {shown}")))
        }
        Err(e) => return Err(unreadable(e)),
    };
    if meta.is_dir() {
        return Err(H5Error::Corrupt(format!("{shown} is a directory, not a profile file.")));
    }
    if !meta.is_file() {
        return Err(H5Error::Corrupt(format!(
            "{shown} is not a regular file (a device, pipe or socket); a profile is an HDF5 file on disk."
        )));
    }
    Ctx::open(path, shown.to_string()).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => H5Error::NotFound(format!("HDF5 file not found: {shown}")),
        _ => unreadable(e),
    })
}
