//! Writing: [`write_h5`] (schema 3, the reference's layout, atomic publication).
use std::fs;

use rayon::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use arrow_array::Int64Array;
use hdf5::types::VarLenUnicode;
use hdf5::{Group, H5Type};
use scope_profiler_analysis::{IdColumn, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow};

use super::chunks::{self, ColumnSource};
use super::summary_statistics::SummaryCompound;
use super::{py_repr, H5Error, R, SCHEMA_ATTRIBUTE, SCHEMA_VERSION};

/// `json.dumps(list_of_str)` with Python's defaults (`", "` separator, ASCII escapes).
pub fn python_json_str_list(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{08}' => out.push_str("\\b"),
                '\u{0c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{:04x}", unit));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

/// Events from which event columns are compressed (the reference's `"auto"` policy).
pub(crate) const AUTO_COMPRESSION_MIN_EVENTS: usize = 1 << 14;
/// Datasets up to this many bytes stay contiguous (the reference's repack threshold).
pub(crate) const CONTIGUOUS_MAX_BYTES: usize = 64 * 1024;
/// Chunk length (elements) of compressed datasets.
pub(crate) const COMPRESSED_CHUNK: usize = 1 << 16;
/// gzip level of compressed datasets (the reference's automatic policy uses 4; any level
/// reads back the same, and 1 deflates several times faster for a slightly larger file).
pub(crate) const DEFLATE_LEVEL: u8 = 1;

/// Whether `T` is stored as a plain native integer (its bytes are the file's bytes).
fn is_plain_integer<T: H5Type>() -> bool {
    use hdf5::types::TypeDescriptor::{Integer, Unsigned};
    matches!(T::type_descriptor(), Integer(s) | Unsigned(s) if s as usize == std::mem::size_of::<T>())
}

pub(crate) struct W<'a> {
    path: &'a str,
    /// gzip ([`DEFLATE_LEVEL`]) + shuffle for datasets above [`CONTIGUOUS_MAX_BYTES`].
    compress: bool,
    /// The OS error number of the last HDF5 failure that had one (disk full, ...).
    errno: std::cell::Cell<Option<i32>>,
    /// The chunk encoders' buffers (reused by every column of this write) and the columns
    /// encoded before it ([`encode_ahead`]).
    ahead: &'a EncodedAhead,
}

impl W<'_> {
    fn err(&self, what: &str) -> impl Fn(hdf5::Error) -> H5Error + '_ {
        let what = what.to_string();
        move |e| {
            if let Some(n) = hdf5_errno(&e) {
                self.errno.set(Some(n));
            }
            H5Error::Write(format!("could not write {} ({what}): {e}", self.path))
        }
    }
    /// Strings as HDF5 variable-length strings. HDF5 strings cannot hold NUL, yet a region,
    /// thread or task name may contain one: it is written as U+2400 (SYMBOL FOR NULL, `␀`)
    /// rather than failing the write and losing the run (h5py, and so the reference, refuse
    /// such a string at finalize).
    fn vlen(&self, v: &[String], what: &str) -> R<Vec<VarLenUnicode>> {
        v.iter()
            .map(|s| {
                let s: std::borrow::Cow<'_, str> =
                    if s.contains('\0') { s.replace('\0', "\u{2400}").into() } else { s.as_str().into() };
                s.parse::<VarLenUnicode>().map_err(|_| {
                    H5Error::Write(format!(
                        "could not write {} ({what}): the string {} is not storable",
                        self.path,
                        py_repr(&s)
                    ))
                })
            })
            .collect()
    }
    /// `Write` error for an inconsistent row: "could not write PATH: region NAME has DETAIL".
    fn region_err(&self, run: &Run, r: &RegionCalls, detail: String) -> H5Error {
        let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?");
        H5Error::Write(format!("could not write {}: region {} has {detail}", self.path, py_repr(name)))
    }
    fn ints<T: H5Type>(&self, g: &Group, name: &str, v: &[T]) -> R<()> {
        let compress = self.compress && std::mem::size_of_val(v) > CONTIGUOUS_MAX_BYTES;
        if compress && is_plain_integer::<T>() {
            return self.compressed_ints(g, name, v);
        }
        let b = g.new_dataset_builder().with_data(v);
        if compress {
            b.chunk(v.len().min(COMPRESSED_CHUNK))
                .shuffle()
                .deflate(DEFLATE_LEVEL)
                .create(name)
                .map_err(self.err(name))?;
        } else {
            b.create(name).map_err(self.err(name))?;
        }
        Ok(())
    }
    /// A chunked dataset of `len` elements declaring shuffle + gzip (what any HDF5 reader
    /// decodes, the reference's included), to be filled with [`W::write_chunks`].
    fn chunked<T: H5Type>(&self, g: &Group, name: &str, len: usize) -> R<hdf5::Dataset> {
        g.new_dataset::<T>()
            .chunk(len.min(COMPRESSED_CHUNK))
            .shuffle()
            .deflate(DEFLATE_LEVEL)
            .shape(len)
            .create(name)
            .map_err(self.err(name))
    }
    /// Write `stored` (chunk `k` = elements `k * chunk..`, already shuffled and deflated)
    /// into `ds` as they are (`H5Dwrite_chunk`).
    fn write_chunks(&self, ds: &hdf5::Dataset, name: &str, chunk: usize, stored: &[Vec<u8>]) -> R<()> {
        for (k, data) in stored.iter().enumerate() {
            let offset = [(k * chunk) as hdf5_sys::h5::hsize_t];
            // SAFETY: a dataset of this file, a one-dimensional offset, `data` alive for the call.
            let rc = hdf5::sync::sync(|| unsafe {
                hdf5_sys::h5d::H5Dwrite_chunk(
                    ds.id(),
                    hdf5_sys::h5p::H5P_DEFAULT,
                    0,
                    offset.as_ptr(),
                    data.len(),
                    data.as_ptr().cast(),
                )
            });
            if rc < 0 {
                // the OS's reason, when it gave one (a full disk must say more than "chunk 0
                // was refused")
                let os = std::io::Error::last_os_error();
                let why = match os.raw_os_error().filter(|&n| n != 0) {
                    Some(n) => {
                        self.errno.set(Some(n));
                        format!(": {os}")
                    }
                    None => String::new(),
                };
                return Err(H5Error::Write(format!(
                    "could not write {} ({name}): HDF5 refused chunk {k}{why}",
                    self.path
                )));
            }
        }
        Ok(())
    }
    /// A plain-integer dataset above [`CONTIGUOUS_MAX_BYTES`], compressed here in parallel
    /// ([`chunks`](super::chunks)) and written directly.
    fn compressed_ints<T: H5Type>(&self, g: &Group, name: &str, v: &[T]) -> R<()> {
        use rayon::prelude::*;
        let chunk = v.len().min(COMPRESSED_CHUNK);
        let ds = self.chunked::<T>(g, name, v.len())?;
        let size = std::mem::size_of::<T>();
        // SAFETY: `T` is a plain integer type (`is_plain_integer`): no padding, any bytes valid.
        let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
        let stored: Vec<Vec<u8>> = bytes
            .par_chunks(chunk * size)
            .map(|raw| chunks::deflate(&chunks::shuffle_bytes(raw, chunk, size), DEFLATE_LEVEL))
            .collect();
        self.write_chunks(&ds, name, chunk, &stored)
    }
    /// An `i64` event column: compressed as [`W::ints`] would, its chunks produced from
    /// `src` one at a time (the column is never held whole), else written contiguous.
    fn column(&self, g: &Group, name: &str, src: &dyn ColumnSource) -> R<()> {
        let len = src.len();
        if !(self.compress && len * std::mem::size_of::<i64>() > CONTIGUOUS_MAX_BYTES) {
            return self.ints(g, name, &chunks::to_vec(src));
        }
        let chunk = len.min(COMPRESSED_CHUNK);
        let ds = self.chunked::<i64>(g, name, len)?;
        if let Some(stored) = self.ahead.get(name, len) {
            return self.write_chunks(&ds, name, chunk, stored);
        }
        let stored = chunks::encode_i64_chunks(src, chunk, DEFLATE_LEVEL, &self.ahead.workers);
        self.write_chunks(&ds, name, chunk, &stored)
    }
    fn strs(&self, g: &Group, name: &str, v: &[String]) -> R<()> {
        let data = self.vlen(v, name)?;
        g.new_dataset_builder().with_data(&data).create(name).map_err(self.err(name))?;
        Ok(())
    }
}

/// Write `run`'s contents into the open `file`, in steps: root attributes, `/metadata`,
/// `/region_table`, `/events`, `/rank_region_index`, lane tables. Only rows with calls are
/// written (the reference writes only regions with completed calls).
///
/// Errors: [`H5Error::Write`] naming the file and the dataset, or the inconsistent row.
pub(crate) fn write_contents(run: &Run, file: &hdf5::File, w: &W<'_>) -> R<()> {
    let rows = written_rows(run);
    let (new_id, names) = used_names(run, &rows, w)?;
    write_root_attributes(file, w)?;
    write_metadata(run, file, w)?;
    let rt = file.create_group("region_table").map_err(w.err("region_table"))?;
    w.strs(&rt, "names", &names)?;
    let events = file.create_group("events").map_err(w.err("events"))?;
    write_events(run, &rows, &events, w)?;
    write_index(&rows, &new_id, file, w)?;
    write_lane_tables(run, &rows, file, w)
}

/// The region names `rows` use, in region-table order, and the new id of each old id
/// (`u32::MAX` for unused names).
fn used_names(run: &Run, rows: &[&RegionCalls], w: &W<'_>) -> R<(Vec<u32>, Vec<String>)> {
    let mut used = vec![false; run.region_names.len()];
    for r in rows {
        match used.get_mut(r.region as usize) {
            Some(u) => *u = true,
            None => {
                return Err(H5Error::Write(format!(
                    "could not write {}: a row refers to region id {} but the run has {} region names",
                    w.path,
                    r.region,
                    run.region_names.len()
                )))
            }
        }
    }
    let mut new_id = vec![u32::MAX; used.len()];
    let mut names = Vec::new();
    for (i, &u) in used.iter().enumerate() {
        if u {
            new_id[i] = names.len() as u32;
            names.push(run.region_names[i].clone());
        }
    }
    Ok((new_id, names))
}

/// Root attributes: `scope_profiler_schema` (int64) and `storage_layout = "columnar"`.
fn write_root_attributes(file: &hdf5::File, w: &W<'_>) -> R<()> {
    let root = file.group("/").map_err(w.err("root"))?;
    root.new_attr::<i64>()
        .create(SCHEMA_ATTRIBUTE)
        .map_err(w.err(SCHEMA_ATTRIBUTE))?
        .write_scalar(&SCHEMA_VERSION)
        .map_err(w.err(SCHEMA_ATTRIBUTE))?;
    let columnar: VarLenUnicode = "columnar".parse().unwrap();
    root.new_attr::<VarLenUnicode>()
        .create("storage_layout")
        .map_err(w.err("storage_layout"))?
        .write_scalar(&columnar)
        .map_err(w.err("storage_layout"))?;
    Ok(())
}

/// `/metadata`: one attribute per metadata key.
fn write_metadata(run: &Run, file: &hdf5::File, w: &W<'_>) -> R<()> {
    let meta = file.create_group("metadata").map_err(w.err("metadata"))?;
    for (key, value) in &run.metadata {
        let what = format!("metadata attribute {key}");
        match value {
            MetaValue::Int(v) => meta.new_attr::<i64>().create(key.as_str()).and_then(|a| a.write_scalar(v)),
            MetaValue::Float(v) => meta.new_attr::<f64>().create(key.as_str()).and_then(|a| a.write_scalar(v)),
            MetaValue::Str(s) => {
                let v = w.vlen(std::slice::from_ref(s), &what)?;
                meta.new_attr::<VarLenUnicode>().create(key.as_str()).and_then(|a| a.write_scalar(&v[0]))
            }
            MetaValue::StrList(list) => {
                let v = w.vlen(list, &what)?;
                meta.new_attr_builder().with_data(&v).create(key.as_str()).map(|_| ())
            }
        }
        .map_err(w.err(&what))?;
    }
    Ok(())
}

/// An event column: every row's values back to back, a row's values given by `row`
/// (`row(r, at, out)`: values `at..at + out.len()` of row `r`).
struct RowsColumn<'a, F> {
    rows: &'a [&'a RegionCalls],
    /// `rows.len() + 1` offsets of each row's first event.
    offsets: &'a [usize],
    row: F,
}

impl<F: Fn(&RegionCalls, usize, &mut [i64]) + Sync> ColumnSource for RowsColumn<'_, F> {
    fn len(&self) -> usize {
        *self.offsets.last().unwrap_or(&0)
    }
    fn fill(&self, at: usize, out: &mut [i64]) {
        let end = at + out.len();
        let mut r = self.offsets.partition_point(|&o| o <= at).saturating_sub(1);
        let mut pos = at;
        while pos < end {
            let hi = self.offsets[r + 1].min(end);
            (self.row)(self.rows[r], pos - self.offsets[r], &mut out[pos - at..hi - at]);
            pos = hi;
            r += 1;
        }
    }
}

/// Each row's first event in the event columns, plus the total.
fn event_offsets(rows: &[&RegionCalls]) -> Vec<usize> {
    std::iter::once(0)
        .chain(rows.iter().scan(0usize, |acc, r| {
            *acc += r.len();
            Some(*acc)
        }))
        .collect()
}

/// The rows a file holds: those with calls (the reference writes only regions with
/// completed calls), in run order.
fn written_rows(run: &Run) -> Vec<&RegionCalls> {
    run.regions.iter().filter(|r| !r.is_empty()).collect()
}

/// Whether the event columns of `run` are compressed (gzip + shuffle; the reference's
/// `"auto"` policy: from [`AUTO_COMPRESSION_MIN_EVENTS`] events on).
fn compresses(run: &Run) -> bool {
    run.regions.iter().map(|r| r.len()).sum::<usize>() >= AUTO_COMPRESSION_MIN_EVENTS
}

/// One optional event column of a row: its values, held plain or as packed ids.
enum Optional<'a> {
    Plain(&'a Int64Array),
    Ids(&'a IdColumn),
}

impl Optional<'_> {
    fn len(&self) -> usize {
        match self {
            Optional::Plain(a) => a.len(),
            Optional::Ids(c) => c.len(),
        }
    }
    fn copy_range(&self, at: usize, out: &mut [i64]) {
        match self {
            Optional::Plain(a) => out.copy_from_slice(&a.values()[at..at + out.len()]),
            Optional::Ids(c) => c.copy_range(at, out),
        }
    }
}

/// A row's values `at..at + out.len()` of one event column, into `out`.
type RowFill<'a> = Box<dyn Fn(&RegionCalls, usize, &mut [i64]) + Sync + 'a>;

/// The event columns numbered at finalize: they are encoded after the numbering, the others
/// may be encoded ahead, alongside it ([`encode_ahead`]).
const ID_COLUMNS: [&str; 2] = ["call_ids", "parent_ids"];

/// The event columns of `rows` in file order: `start_deltas` (per row, from 0),
/// `durations`, then each optional column some row has, rows without it back-filled (-1, 0
/// for `await_ns`). Call and parent ids may be held bit-packed: decoded a chunk at a time.
///
/// Errors: the first row whose columns disagree in length, and how.
fn event_columns<'a>(rows: &[&'a RegionCalls]) -> Result<Vec<(&'static str, RowFill<'a>)>, (&'a RegionCalls, String)> {
    for r in rows {
        let (s, e) = (r.start_ns.len(), r.end_ns.len());
        if s != e {
            return Err((r, format!("{s} starts but {e} ends")));
        }
    }
    let deltas: RowFill<'a> = Box::new(|r: &RegionCalls, at: usize, out: &mut [i64]| {
        let s = &r.start_ns.values()[..];
        let mut prev = if at == 0 { 0 } else { s[at - 1] };
        for (o, &v) in out.iter_mut().zip(&s[at..]) {
            *o = v.wrapping_sub(prev);
            prev = v;
        }
    });
    let durations: RowFill<'a> = Box::new(|r: &RegionCalls, at: usize, out: &mut [i64]| {
        let (s, e) = (&r.start_ns.values()[at..], &r.end_ns.values()[at..]);
        for ((o, &a), &b) in out.iter_mut().zip(s).zip(e) {
            *o = b.wrapping_sub(a);
        }
    });
    let mut columns = vec![("start_deltas", deltas), ("durations", durations)];
    type Col = fn(&RegionCalls) -> Option<Optional<'_>>;
    let optional: [(&str, Col, i64); 8] = [
        ("gpu_durations", |r| r.gpu_ns.as_ref().map(Optional::Plain), -1),
        ("call_ids", |r| r.call_ids.as_ref().map(Optional::Ids), -1),
        ("parent_ids", |r| r.parent_ids.as_ref().map(Optional::Ids), -1),
        ("thread_ids", |r| r.thread_ids.as_ref().map(Optional::Plain), -1),
        ("task_ids", |r| r.task_ids.as_ref().map(Optional::Plain), -1),
        ("await_ns", |r| r.await_ns.as_ref().map(Optional::Plain), 0),
        // not in the reference's layout (its reader takes the columns it knows by name)
        ("ready_wait_ns", |r| r.ready_wait_ns.as_ref().map(Optional::Plain), -1),
        ("task_step_ns", |r| r.task_step_ns.as_ref().map(Optional::Plain), 0),
    ];
    for (name, get, missing) in optional {
        if !rows.iter().any(|r| get(r).is_some()) {
            continue;
        }
        for r in rows {
            if let Some(a) = get(r).filter(|a| a.len() != r.len()) {
                return Err((r, format!("{} calls but {} values in {name}", r.len(), a.len())));
            }
        }
        let row: RowFill<'a> = Box::new(move |r: &RegionCalls, at: usize, out: &mut [i64]| match get(r) {
            Some(a) => a.copy_range(at, out),
            None => out.fill(missing),
        });
        columns.push((name, row));
    }
    Ok(columns)
}

/// `/events`: every event column of `rows` ([`event_columns`]).
fn write_events(run: &Run, rows: &[&RegionCalls], events: &Group, w: &W<'_>) -> R<()> {
    let columns = event_columns(rows).map_err(|(r, detail)| w.region_err(run, r, detail))?;
    let offsets = event_offsets(rows);
    for (name, row) in columns {
        w.column(events, name, &RowsColumn { rows, offsets: &offsets, row })?;
    }
    Ok(())
}

/// What a file of a run holds that does not depend on its call ids, made before the write
/// ([`encode_ahead`]): the compressed event columns (times, lanes, await) and the per-row
/// summary statistics, with the chunk encoders' buffers.
#[derive(Default)]
pub struct EncodedAhead {
    workers: chunks::Workers,
    /// (column name, number of values, stored chunks)
    columns: Vec<(&'static str, usize, Vec<Vec<u8>>)>,
    /// `summary_statistics` of the written rows ([`row_summaries`]).
    summaries: Option<Vec<SummaryCompound>>,
}

impl EncodedAhead {
    /// The stored chunks of column `name` when it was encoded ahead with `len` values.
    fn get(&self, name: &str, len: usize) -> Option<&[Vec<u8>]> {
        self.columns.iter().find(|c| c.0 == name && c.1 == len).map(|c| &c.2[..])
    }
}

/// Encode the compressed event columns of `run` that do not depend on its call ids, and its
/// rows' summary statistics, for a later [`publish_h5_ahead`] of the same run once
/// numbered (at `finalize()` this runs alongside the numbering of the calls, which is
/// serial). No column is encoded when the file would not compress them, or when
/// its columns disagree in length (the write reports that). Parallel, on the analysis pool.
pub fn encode_ahead(run: &Run) -> EncodedAhead {
    let mut ahead = EncodedAhead::default();
    let rows = written_rows(run);
    ahead.summaries = Some(row_summaries(&rows));
    let offsets = event_offsets(&rows);
    let len = *offsets.last().unwrap_or(&0);
    if !(compresses(run) && len * std::mem::size_of::<i64>() > CONTIGUOUS_MAX_BYTES) {
        return ahead;
    }
    let Ok(columns) = event_columns(&rows) else { return ahead };
    let chunk = len.min(COMPRESSED_CHUNK);
    for (name, row) in columns.into_iter().filter(|(name, _)| !ID_COLUMNS.contains(name)) {
        let src = RowsColumn { rows: &rows, offsets: &offsets, row };
        let stored = chunks::encode_i64_chunks(&src, chunk, DEFLATE_LEVEL, &ahead.workers);
        ahead.columns.push((name, len, stored));
    }
    ahead
}

/// `/rank_region_index`: one value per row in each column; `new_id` from [`used_names`].
fn write_index(rows: &[&RegionCalls], new_id: &[u32], file: &hdf5::File, w: &W<'_>) -> R<()> {
    let index = file.create_group("rank_region_index").map_err(w.err("rank_region_index"))?;
    let region_ids: Vec<u32> = rows.iter().map(|r| new_id[r.region as usize]).collect();
    let ranks: Vec<u32> = rows.iter().map(|r| r.rank).collect();
    let counts: Vec<u64> = rows.iter().map(|r| r.len() as u64).collect();
    let offsets: Vec<u64> = counts
        .iter()
        .scan(0u64, |acc, &c| {
            let at = *acc;
            *acc += c;
            Some(at)
        })
        .collect();
    w.ints(&index, "region_ids", &region_ids)?;
    w.ints(&index, "ranks", &ranks)?;
    w.ints(&index, "event_offsets", &offsets)?;
    w.ints(&index, "event_counts", &counts)?;
    let lines: Vec<i64> = rows.iter().map(|r| r.source_line.filter(|&l| l >= 0).unwrap_or(-1)).collect();
    w.ints(&index, "source_lines", &lines)?;
    let totals: Vec<i64> = rows.iter().map(|r| r.exclusive_total_ns.filter(|&t| t >= 0).unwrap_or(-1)).collect();
    w.ints(&index, "exclusive_totals", &totals)?;
    let files: Vec<String> = rows.iter().map(|r| r.source_file.clone().unwrap_or_default()).collect();
    w.strs(&index, "source_files", &files)?;
    let texts: Vec<String> = rows.iter().map(|r| r.source_text.clone().unwrap_or_default()).collect();
    w.strs(&index, "source_texts", &texts)?;
    let tags: Vec<String> = rows.iter().map(|r| python_json_str_list(&r.tags)).collect();
    w.strs(&index, "tags", &tags)?;
    let metadata: Vec<String> = rows.iter().map(|r| r.event_metadata.clone().unwrap_or_else(|| "[]".into())).collect();
    w.strs(&index, "event_metadata", &metadata)?;
    match w.ahead.summaries.as_deref().filter(|s| s.len() == rows.len()) {
        Some(summaries) => w.ints(&index, "summary_statistics", summaries),
        None => w.ints(&index, "summary_statistics", &row_summaries(rows)),
    }
}

/// `rank_region_index/summary_statistics` of `rows` ([`StoredStats::of_calls`]): one row per
/// task (a row of 250,000 calls takes ~1 ms), on this process's pool, safe across fork()
/// (the global pool hangs a forked child).
fn row_summaries(rows: &[&RegionCalls]) -> Vec<SummaryCompound> {
    scope_profiler_analysis::pool::install(|| {
        rows.par_iter()
            .map(|r| {
                let gpu = r.gpu_ns.as_ref().map(|g| &g.values()[..]);
                SummaryCompound(StoredStats::of_calls(r.start_ns.values(), r.end_ns.values(), gpu))
            })
            .collect()
    })
}

/// Lane tables, only when non-empty, and (like the reference, which writes a rank's lane
/// rows together with its regions) only for ranks that recorded calls - except in a run
/// without any call, whose tables are written whole (a tracked run that recorded no region
/// keeps its threads; the reference drops them).
fn write_lane_tables(run: &Run, rows: &[&RegionCalls], file: &hdf5::File, w: &W<'_>) -> R<()> {
    let ranks_with_calls: std::collections::HashSet<u32> = rows.iter().map(|r| r.rank).collect();
    let kept = |rank: u32| rows.is_empty() || ranks_with_calls.contains(&rank);
    let threads: Vec<&ThreadRow> = run.threads.iter().filter(|t| kept(t.rank)).collect();
    let tasks: Vec<&TaskRow> = run.tasks.iter().filter(|t| kept(t.rank)).collect();
    if !threads.is_empty() {
        write_thread_table(&threads, file, w)?;
    }
    if !tasks.is_empty() {
        write_task_table(&tasks, file, w)?;
    }
    let blocks: Vec<&scope_profiler_analysis::LoopBlockRow> = run.loop_blocks.iter().filter(|b| kept(b.rank)).collect();
    if !blocks.is_empty() {
        write_loop_blocks(&blocks, file, w)?;
    }
    Ok(())
}

/// `/loop_blocks`: not in the reference's layout (its reader opens the groups it knows).
fn write_loop_blocks(b: &[&scope_profiler_analysis::LoopBlockRow], file: &hdf5::File, w: &W<'_>) -> R<()> {
    let g = file.create_group("loop_blocks").map_err(w.err("loop_blocks"))?;
    w.ints(&g, "ranks", &b.iter().map(|x| x.rank).collect::<Vec<u32>>())?;
    w.ints(&g, "thread", &b.iter().map(|x| x.thread).collect::<Vec<i64>>())?;
    w.ints(&g, "task", &b.iter().map(|x| x.task).collect::<Vec<i64>>())?;
    w.ints(&g, "start_ns", &b.iter().map(|x| x.start_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "end_ns", &b.iter().map(|x| x.end_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "delayed_tasks", &b.iter().map(|x| x.delayed_tasks).collect::<Vec<i64>>())
}

/// A thread-table column: its name and the value of a row.
type ThreadColumn = (&'static str, fn(&ThreadRow) -> i64);

fn write_thread_table(t: &[&ThreadRow], file: &hdf5::File, w: &W<'_>) -> R<()> {
    let g = file.create_group("thread_table").map_err(w.err("thread_table"))?;
    w.ints(&g, "ranks", &t.iter().map(|x| x.rank).collect::<Vec<u32>>())?;
    w.ints(&g, "index", &t.iter().map(|x| x.index).collect::<Vec<i64>>())?;
    w.ints(&g, "ident", &t.iter().map(|x| x.ident).collect::<Vec<i64>>())?;
    w.ints(&g, "native_id", &t.iter().map(|x| x.native_id).collect::<Vec<i64>>())?;
    w.ints(&g, "daemon", &t.iter().map(|x| x.daemon as i8).collect::<Vec<i8>>())?;
    w.ints(&g, "start_ns", &t.iter().map(|x| x.start_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "end_ns", &t.iter().map(|x| x.end_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "cpu_ns", &t.iter().map(|x| x.cpu_ns).collect::<Vec<i64>>())?;
    // not in the reference's layout (its reader takes the columns it knows by name);
    // left out when no row knows it (a run read from a reference file is written back as it was)
    let optional: [ThreadColumn; 4] = [
        ("cpu_start_ns", |x| x.cpu_start_ns),
        ("task_step_ns", |x| x.task_step_ns),
        ("ready_wait_ns", |x| x.ready_wait_ns),
        ("loop_idle_ns", |x| x.loop_idle_ns),
    ];
    for (name, value) in optional {
        if t.iter().any(|x| value(x) != scope_profiler_analysis::UNKNOWN) {
            w.ints(&g, name, &t.iter().map(|x| value(x)).collect::<Vec<i64>>())?;
        }
    }
    w.strs(&g, "name", &t.iter().map(|x| x.name.clone()).collect::<Vec<String>>())
}

fn write_task_table(t: &[&TaskRow], file: &hdf5::File, w: &W<'_>) -> R<()> {
    let g = file.create_group("task_table").map_err(w.err("task_table"))?;
    w.ints(&g, "ranks", &t.iter().map(|x| x.rank).collect::<Vec<u32>>())?;
    w.ints(&g, "index", &t.iter().map(|x| x.index).collect::<Vec<i64>>())?;
    w.ints(&g, "thread_index", &t.iter().map(|x| x.thread_index).collect::<Vec<i64>>())?;
    w.ints(&g, "created_ns", &t.iter().map(|x| x.created_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "done_ns", &t.iter().map(|x| x.done_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "steps", &t.iter().map(|x| x.steps).collect::<Vec<i64>>())?;
    w.ints(&g, "running_ns", &t.iter().map(|x| x.running_ns).collect::<Vec<i64>>())?;
    w.ints(&g, "suspended_ns", &t.iter().map(|x| x.suspended_ns).collect::<Vec<i64>>())?;
    // not in the reference's layout; left out when no row knows it
    if t.iter().any(|x| x.ready_wait_ns != scope_profiler_analysis::UNKNOWN) {
        w.ints(&g, "ready_wait_ns", &t.iter().map(|x| x.ready_wait_ns).collect::<Vec<i64>>())?;
    }
    w.strs(&g, "kind", &t.iter().map(|x| x.kind.clone()).collect::<Vec<String>>())?;
    w.strs(&g, "name", &t.iter().map(|x| x.name.clone()).collect::<Vec<String>>())?;
    w.strs(&g, "coro_name", &t.iter().map(|x| x.coro_name.clone()).collect::<Vec<String>>())
}

/// The process umask, without changing it (Linux `/proc/self/status`; else set-and-restore).
pub(crate) fn process_umask() -> u32 {
    if let Ok(status) = fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("Umask:") {
                if let Ok(m) = u32::from_str_radix(v.trim(), 8) {
                    return m;
                }
            }
        }
    }
    // SAFETY: umask only swaps the process mask; restored immediately.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}

/// Write `run` as schema 3, atomically (temp file beside the target, then rename), umask respected.
///
/// Layout as the reference's writer (`spec-hdf5.md` §4-5): `start_deltas`/`durations` per row,
/// optional event columns only when some row has them (missing rows back-filled with -1, or 0
/// for `await_ns`), lane tables only when non-empty and only for ranks with calls (a tracked
/// run that recorded no region gets none, as in the reference), `/metadata` attributes, root attributes
/// `scope_profiler_schema = 3` (int64) and `storage_layout = "columnar"`. Rows without calls
/// are not written, and `region_table/names` holds only the names rows use (the reference
/// writes only regions with completed calls). Datasets are contiguous, except that from
/// 16384 events on (the reference's automatic compression) numeric datasets above 64 KiB are
/// chunked (65536 elements) with shuffle + gzip level 1 ([`DEFLATE_LEVEL`]), chunks compressed in parallel and written directly.
///
/// Publication: written to `.<name>.<tag>-<pid>.<random>.tmp` in the target's directory
/// ([`working_files`](super::working_files)), fsynced, given mode `0o666 & !umask`, renamed over
/// `path`, directory fsynced. On error the temp file is removed and `path` is untouched.
/// After publishing, what dead writers left in that directory is removed
/// ([`working_files::remove_stale`](super::working_files::remove_stale): their temporary files, and
/// sidecars older than their target).
///
/// Errors: [`H5Error::Write`] naming the file ([`publish_h5`] also tells the OS error).
pub fn write_h5(run: &Run, path: &Path) -> Result<(), H5Error> {
    publish_h5(run, path).map_err(|f| f.error)
}

/// Why [`publish_h5`] failed: the [`H5Error::Write`] (its message names the file) and, when
/// the filesystem refused, the OS error number (`ENOENT` for a missing directory, `EACCES`,
/// `EISDIR` when `path` is a directory, `ENOTDIR`, `ENOSPC`, ...), so that callers can raise
/// the matching `OSError` subclass.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct WriteFailure {
    pub error: H5Error,
    pub errno: Option<i32>,
}

/// The OS error number of `e`; for a wrapped error (`tempfile` puts the path around it and
/// hides the original) the number of its kind.
fn io_errno(e: &std::io::Error) -> Option<i32> {
    use std::io::ErrorKind::*;
    e.raw_os_error().or(match e.kind() {
        NotFound => Some(libc::ENOENT),
        PermissionDenied => Some(libc::EACCES),
        IsADirectory => Some(libc::EISDIR),
        NotADirectory => Some(libc::ENOTDIR),
        StorageFull => Some(libc::ENOSPC),
        QuotaExceeded => Some(libc::EDQUOT),
        ReadOnlyFilesystem => Some(libc::EROFS),
        AlreadyExists => Some(libc::EEXIST),
        InvalidFilename => Some(libc::ENAMETOOLONG),
        _ => None,
    })
}

/// The OS error number in an HDF5 error stack (`"..., errno = 28, error message = ..."`).
fn hdf5_errno(e: &hdf5::Error) -> Option<i32> {
    let text = match e {
        hdf5::Error::HDF5(stack) => stack.clone().expand().map(|s| format!("{s:?}")).unwrap_or_default(),
        hdf5::Error::Internal(m) => m.clone(),
    };
    let at = text.find("errno = ")? + "errno = ".len();
    let digits: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&n| n > 0)
}

/// [`write_h5`], telling the OS error of a failure ([`WriteFailure`]).
pub fn publish_h5(run: &Run, path: &Path) -> Result<(), WriteFailure> {
    publish_h5_ahead(run, path, &EncodedAhead::default())
}

/// [`publish_h5`] with the columns [`encode_ahead`] encoded from this same run (unchanged
/// since, except for its call ids, parent ids and exclusive totals).
pub fn publish_h5_ahead(run: &Run, path: &Path, ahead: &EncodedAhead) -> Result<(), WriteFailure> {
    let shown = path.display().to_string();
    let os = |what: &str, e: &std::io::Error| WriteFailure {
        error: H5Error::Write(format!("could not write {shown} ({what}): {e}")),
        errno: io_errno(e),
    };
    let plain = |error: H5Error| WriteFailure { error, errno: None };
    let file_name = path
        .file_name()
        .ok_or_else(|| plain(H5Error::Write(format!("could not write {shown}: the path names no file"))))?
        .to_string_lossy()
        .into_owned();
    if path.is_dir() {
        return Err(os("target", &std::io::Error::from_raw_os_error(libc::EISDIR)));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(&super::working_files::temp_prefix(&file_name))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| os("temporary file", &e))?;
    let w = W { path: &shown, compress: compresses(run), errno: Default::default(), ahead };
    let written = catch_unwind(AssertUnwindSafe(|| -> R<()> {
        let file = hdf5::File::create(tmp.path()).map_err(w.err("create"))?;
        super::close_on_exec(&file);
        write_contents(run, &file, &w)?;
        file.close().map_err(w.err("close"))?;
        Ok(())
    }));
    match written {
        Ok(r) => r.map_err(|error| WriteFailure { error, errno: w.errno.get() })?,
        Err(_) => return Err(plain(H5Error::Write(format!("could not write {shown}: the HDF5 writer failed")))),
    }
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = 0o666 & !process_umask();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode)).map_err(|e| os("permissions", &e))?;
        fs::File::open(tmp.path()).and_then(|f| f.sync_all()).map_err(|e| os("fsync", &e))?;
    }
    tmp.persist(path).map_err(|e| os("rename", &e.error))?;
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    // what killed writers left here
    super::working_files::remove_stale(&dir);
    Ok(())
}
