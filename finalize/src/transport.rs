//! A [`Run`] as bytes between processes of one job (what an MPI rank sends to rank 0 at
//! `finalize()`, one pickle-free buffer), and the stacking of such runs as blocks of ranks.
//!
//! Encoding (little-endian): magic `b"SPRUN\x04"`, then the region names, the rows (every
//! column as raw `i64`s, optional columns flagged; bit-packed ids are written decoded), the
//! thread, task and loop-block tables, the metadata and `num_ranks`. It is a transport between
//! processes of one job running the same package build, not a file format: rows read
//! without their events (`RegionCalls::stored`) do not travel.
//!
//! Two forms keep the per-call columns apart from the rest (magic `b"SPRUNC"`, the same
//! layout with every column left out and rows read without their events keeping their
//! statistics):
//! * [`encode_run_apart`] / [`decode_run_apart`]: the columns as Arrow arrays beside the
//!   bytes, shared, not copied (pickling hands them to pickle's out-of-band buffers);
//! * [`encode_run_compact`] / [`decode_run_compact`]: the columns compressed after the
//!   bytes as the HDF5 writer stores them (starts as steps, ends as durations, each column
//!   shuffled and deflated, [`scope_profiler_formats::hdf5::chunks::encode_column`]): about
//!   a byte per call (the `flush_interval` sidecar's frames).
use std::path::Path;

use arrow_array::Int64Array;
use scope_profiler_analysis::{
    merge_runs, LoopBlockRow, MergeError, MergeOptions, MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow,
};
use scope_profiler_formats::hdf5::chunks::{decode_column, encode_column};
use scope_profiler_formats::hdf5::write::{publish_h5, WriteFailure};

/// First bytes of every encoding (the trailing byte is the encoding version).
pub const MAGIC: &[u8; 6] = b"SPRUN\x04";
/// First bytes of an encoding whose columns are elsewhere ([`encode_run_apart`]).
pub const APART_MAGIC: &[u8; 6] = b"SPRUNC";
/// First bytes of a compact encoding ([`encode_run_compact`]): its columns, then the rest.
pub const COMPACT_MAGIC: &[u8; 6] = b"SPCOL\x03";

/// The per-call columns of a row, in encoding order: `[start, end, gpu, call ids, parent
/// ids, thread ids, task ids, await, task steps, ready waits]` (an optional one flagged by
/// bit [`flag_bit`]`(kind)` of the row's 16-bit flags).
const KINDS: usize = 10;
/// Row flag: the row's stored statistics follow (only in the forms with columns apart).
const STORED_FLAG: u16 = 1 << 15;

/// The row-flag bit of optional column `kind` (2..KINDS).
fn flag_bit(kind: usize) -> u16 {
    (kind - 2) as u16
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: &Option<String>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
    fn opt_i64(&mut self, v: Option<i64>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.i64(v);
            }
            None => self.u8(0),
        }
    }
    fn col(&mut self, a: &Int64Array) {
        self.0.reserve(a.len() * 8);
        for v in a.values().iter() {
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
}

struct Dec<'a> {
    b: &'a [u8],
    pos: usize,
}

/// The bytes are not a complete, well-formed run encoding; the message says what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl From<&str> for DecodeError {
    fn from(m: &str) -> Self {
        DecodeError(m.to_string())
    }
}

impl From<String> for DecodeError {
    fn from(m: String) -> Self {
        DecodeError(m)
    }
}

type D<T> = Result<T, DecodeError>;

impl<'a> Dec<'a> {
    fn take(&mut self, n: usize) -> D<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("truncated run encoding")?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> D<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> D<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> D<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> D<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn len(&mut self) -> D<usize> {
        usize::try_from(self.u64()?).map_err(|_| DecodeError::from("length out of range"))
    }
    fn i64(&mut self) -> D<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> D<f64> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn str(&mut self) -> D<String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| DecodeError::from("invalid UTF-8 in run encoding"))
    }
    fn opt_str(&mut self) -> D<Option<String>> {
        Ok(if self.u8()? != 0 { Some(self.str()?) } else { None })
    }
    fn opt_i64(&mut self) -> D<Option<i64>> {
        Ok(if self.u8()? != 0 { Some(self.i64()?) } else { None })
    }
    fn col(&mut self, n: usize) -> D<Int64Array> {
        let bytes = self.take(n.checked_mul(8).ok_or("length out of range")?)?;
        Ok(Int64Array::from(
            bytes.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<i64>>(),
        ))
    }
}

/// Where an encoding's per-call columns go.
trait ColumnsOut {
    fn put(&mut self, e: &mut Enc, kind: usize, values: &Int64Array);
}

/// Where a decoding's per-call columns come from.
trait ColumnsIn {
    fn get(&mut self, d: &mut Dec<'_>, kind: usize, n: usize) -> D<Int64Array>;
}

/// Columns inline, raw `i64`s ([`encode_run`]).
struct Inline;

impl ColumnsOut for Inline {
    fn put(&mut self, e: &mut Enc, _kind: usize, values: &Int64Array) {
        e.col(values);
    }
}

impl ColumnsIn for Inline {
    fn get(&mut self, d: &mut Dec<'_>, _kind: usize, n: usize) -> D<Int64Array> {
        d.col(n)
    }
}

/// Columns handed over as they are, in encoding order ([`encode_run_apart`]).
struct Apart(Vec<Int64Array>);

impl ColumnsOut for Apart {
    fn put(&mut self, _e: &mut Enc, _kind: usize, values: &Int64Array) {
        self.0.push(values.clone());
    }
}

/// The columns of a decoding with columns apart, taken in order.
struct Given(std::vec::IntoIter<Int64Array>);

impl ColumnsIn for Given {
    fn get(&mut self, _d: &mut Dec<'_>, _kind: usize, n: usize) -> D<Int64Array> {
        match self.0.next() {
            Some(a) if a.len() == n => Ok(a),
            Some(a) => Err(format!("a column of {} values where the row has {n} calls", a.len()).into()),
            None => Err("fewer columns than the rows need".into()),
        }
    }
}

/// Columns gathered per kind, every row's after the previous row's ([`encode_run_compact`]).
#[derive(Default)]
struct Gathered([Vec<i64>; KINDS]);

impl ColumnsOut for Gathered {
    fn put(&mut self, _e: &mut Enc, kind: usize, values: &Int64Array) {
        self.0[kind].extend_from_slice(values.values());
    }
}

/// The columns of a compact decoding, filled in after the rows: the number of calls of each
/// row, in order (an empty placeholder stands for each column meanwhile).
#[derive(Default)]
struct Deferred(Vec<usize>);

impl ColumnsIn for Deferred {
    fn get(&mut self, _d: &mut Dec<'_>, kind: usize, n: usize) -> D<Int64Array> {
        if kind == 0 {
            self.0.push(n);
        }
        Ok(Int64Array::from(Vec::<i64>::new()))
    }
}

/// Whether `row` has a column of `kind` (a placeholder while decoding).
fn has_kind(row: &RegionCalls, kind: usize) -> bool {
    match kind {
        0 | 1 => true,
        2 => row.gpu_ns.is_some(),
        3 => row.call_ids.is_some(),
        4 => row.parent_ids.is_some(),
        5 => row.thread_ids.is_some(),
        6 => row.task_ids.is_some(),
        7 => row.await_ns.is_some(),
        8 => row.task_step_ns.is_some(),
        _ => row.ready_wait_ns.is_some(),
    }
}

/// Set `row`'s column of `kind` (one it has) to `values`.
fn set_kind(row: &mut RegionCalls, kind: usize, values: Int64Array) {
    match kind {
        0 => row.start_ns = values,
        1 => row.end_ns = values,
        2 => row.gpu_ns = Some(values),
        3 => row.call_ids = Some(values.into()),
        4 => row.parent_ids = Some(values.into()),
        5 => row.thread_ids = Some(values),
        6 => row.task_ids = Some(values),
        7 => row.await_ns = Some(values),
        8 => row.task_step_ns = Some(values),
        _ => row.ready_wait_ns = Some(values),
    }
}

/// Give the rows of `run` (`lens[i]` calls each) their values of `kind` from `values`
/// (every row's after the previous row's; starts as steps from the previous start, ends as
/// durations). Each row gets a buffer of its own (the only row gets `values` itself).
fn distribute(run: &mut Run, lens: &[usize], kind: usize, mut values: Vec<i64>) -> D<()> {
    let rows = || run.regions.iter().zip(lens).filter(|(r, _)| has_kind(r, kind));
    let (wanted, with) = (rows().map(|(_, &n)| n).sum::<usize>(), rows().count());
    if values.len() != wanted {
        return Err(format!("column {kind} holds {} values where the rows have {wanted} calls", values.len()).into());
    }
    if kind == 0 {
        let mut prev = 0i64;
        for v in values.iter_mut() {
            prev = prev.wrapping_add(*v);
            *v = prev;
        }
    }
    let mut at = 0;
    for (row, &n) in run.regions.iter_mut().zip(lens).filter(|(r, _)| has_kind(r, kind)) {
        let mut part = if with == 1 { std::mem::take(&mut values) } else { values[at..at + n].to_vec() };
        at += n;
        if kind == 1 {
            for (end, start) in part.iter_mut().zip(row.start_ns.values().iter()) {
                *end = end.wrapping_add(*start);
            }
        }
        set_kind(row, kind, Int64Array::from(part));
    }
    Ok(())
}

/// The run as bytes (see the module docs).
pub fn encode_run(run: &Run) -> Vec<u8> {
    let events: usize = run.regions.iter().map(|r| r.len()).sum();
    let mut e = Enc(Vec::with_capacity(64 + events * 8 * 6));
    e.0.extend_from_slice(MAGIC);
    encode_body(run, &mut e, &mut Inline, false);
    e.0
}

/// The run as bytes without its per-call columns (magic [`APART_MAGIC`]) and those columns
/// in encoding order: Arrow arrays sharing the run's buffers (ids held bit-packed are
/// decoded). Rows read without their events keep their statistics. [`decode_run_apart`]
/// puts them back together.
pub fn encode_run_apart(run: &Run) -> (Vec<u8>, Vec<Int64Array>) {
    let mut e = Enc(Vec::with_capacity(256));
    e.0.extend_from_slice(APART_MAGIC);
    let mut columns = Apart(Vec::new());
    encode_body(run, &mut e, &mut columns, true);
    (e.0, columns.0)
}

/// Inverse of [`encode_run_apart`]: the run of `bytes` with `columns` as its per-call
/// columns (used as they are, not copied).
///
/// Errors: as [`decode_run`], and when the columns are not the ones the rows need (too
/// few, too many, a length that is not the row's).
pub fn decode_run_apart(bytes: &[u8], columns: Vec<Int64Array>) -> Result<Run, DecodeError> {
    let mut d = Dec { b: bytes, pos: 0 };
    if d.take(APART_MAGIC.len())? != APART_MAGIC {
        return Err("not a scope-profiler run encoding".into());
    }
    let mut given = Given(columns.into_iter());
    let run = decode_body(&mut d, &mut given, true)?;
    if given.0.next().is_some() {
        return Err("more columns than the rows need".into());
    }
    Ok(run)
}

/// The run in its compact form (magic [`COMPACT_MAGIC`]): per column kind, the values of
/// every row one after the other, compressed ([`encode_column`]: starts as steps from the
/// previous one, ends as durations, the others as they are), then the rest as
/// [`encode_run_apart`] writes it.
pub fn encode_run_compact(run: &Run) -> Vec<u8> {
    let mut e = Enc(Vec::with_capacity(256));
    e.0.extend_from_slice(APART_MAGIC);
    let mut columns = Gathered::default();
    encode_body(run, &mut e, &mut columns, true);
    let [starts, ends, ..] = &mut columns.0;
    for (end, start) in ends.iter_mut().zip(starts.iter()) {
        *end = end.wrapping_sub(*start);
    }
    let mut prev = 0i64;
    for v in starts.iter_mut() {
        (*v, prev) = (v.wrapping_sub(prev), *v);
    }
    let mut out = Vec::with_capacity(e.0.len() + 64);
    out.extend_from_slice(COMPACT_MAGIC);
    for values in &columns.0 {
        let blob = encode_column(values);
        out.extend_from_slice(&(values.len() as u64).to_le_bytes());
        out.extend_from_slice(&(blob.len() as u64).to_le_bytes());
        out.extend_from_slice(&blob);
    }
    out.extend_from_slice(&e.0);
    out
}

/// Inverse of [`encode_run_compact`]. The rows are read first, then each column kind is
/// decompressed and handed out to them (every row's columns in buffers of their own), so
/// decoding holds the run and one kind's values at most.
///
/// Errors: as [`decode_run`], and when a compressed column is damaged or holds other than
/// the values the rows need.
pub fn decode_run_compact(bytes: &[u8]) -> Result<Run, DecodeError> {
    let (mut run, lens, blobs) = compact_parts(bytes)?;
    for (kind, (n, blob)) in blobs.into_iter().enumerate() {
        let values = decode_column(blob, n).map_err(|e| DecodeError(format!("column {kind}: {e}")))?;
        distribute(&mut run, &lens, kind, values)?;
    }
    Ok(run)
}

/// The rows of a compact encoding without their calls: the run with every column empty
/// (an optional one `Some` where the row has it) and each row's number of calls. Nothing is
/// decompressed: what a reader needs to know the size of a run before reading its calls.
///
/// Errors: as [`decode_run_compact`], but a damaged compressed column goes unnoticed.
pub fn decode_run_compact_shape(bytes: &[u8]) -> Result<(Run, Vec<usize>), DecodeError> {
    let (run, lens, _) = compact_parts(bytes)?;
    Ok((run, lens))
}

/// The compressed columns `(values, blob)` per kind of a compact encoding, and its rows
/// with placeholder columns and their numbers of calls.
type CompactParts<'a> = (Run, Vec<usize>, Vec<(usize, &'a [u8])>);

fn compact_parts(bytes: &[u8]) -> Result<CompactParts<'_>, DecodeError> {
    let mut d = Dec { b: bytes, pos: 0 };
    if d.take(COMPACT_MAGIC.len())? != COMPACT_MAGIC {
        return Err("not a compact scope-profiler run encoding".into());
    }
    let mut blobs: Vec<(usize, &[u8])> = Vec::with_capacity(KINDS);
    for _ in 0..KINDS {
        let n = d.len()?;
        let size = d.len()?;
        blobs.push((n, d.take(size)?));
    }
    if d.take(APART_MAGIC.len())? != APART_MAGIC {
        return Err("not a scope-profiler run encoding".into());
    }
    let mut lens = Deferred::default();
    let run = decode_body(&mut d, &mut lens, true)?;
    Ok((run, lens.0, blobs))
}

/// Everything after the magic: names, rows (columns through `cols`; with `stored`, the
/// statistics of rows read without their events), tables, metadata, `num_ranks`.
fn encode_body(run: &Run, e: &mut Enc, cols: &mut dyn ColumnsOut, stored: bool) {
    e.u64(run.region_names.len() as u64);
    for n in &run.region_names {
        e.str(n);
    }
    e.u64(run.regions.len() as u64);
    for r in &run.regions {
        encode_row(r, e, cols, stored);
    }
    encode_tables(run, e);
}

fn encode_row(r: &RegionCalls, e: &mut Enc, cols: &mut dyn ColumnsOut, stored: bool) {
    e.u32(r.region);
    e.u32(r.rank);
    e.u64(r.len() as u64);
    let (call_ids, parent_ids) =
        (r.call_ids.as_ref().map(|c| c.to_array()), r.parent_ids.as_ref().map(|c| c.to_array()));
    let opt =
        [&r.gpu_ns, &call_ids, &parent_ids, &r.thread_ids, &r.task_ids, &r.await_ns, &r.task_step_ns, &r.ready_wait_ns];
    let mut flags = 0u16;
    for (k, c) in opt.iter().enumerate() {
        if c.is_some() {
            flags |= 1 << flag_bit(2 + k);
        }
    }
    let stats = r.stored.filter(|_| stored);
    if stats.is_some() {
        flags |= STORED_FLAG;
    }
    e.u16(flags);
    cols.put(e, 0, &r.start_ns);
    cols.put(e, 1, &r.end_ns);
    for (k, c) in opt.into_iter().enumerate() {
        if let Some(c) = c {
            cols.put(e, 2 + k, c);
        }
    }
    e.opt_str(&r.source_file);
    e.opt_i64(r.source_line);
    e.opt_str(&r.source_text);
    e.u64(r.tags.len() as u64);
    for t in &r.tags {
        e.str(t);
    }
    e.opt_str(&r.event_metadata);
    e.opt_i64(r.exclusive_total_ns);
    if let Some(s) = stats {
        for v in [s.count, s.total, s.minimum, s.maximum, s.first, s.last, s.start_minimum, s.end_maximum] {
            e.i64(v);
        }
        e.u64(s.gpu_count);
        e.i64(s.gpu_total);
        e.f64(s.mean);
        e.f64(s.m2);
    }
}

/// Thread, task and loop-block tables, metadata, `num_ranks`.
fn encode_tables(run: &Run, e: &mut Enc) {
    e.u64(run.threads.len() as u64);
    for t in &run.threads {
        e.u32(t.rank);
        let times = [t.start_ns, t.end_ns, t.cpu_ns, t.cpu_start_ns, t.task_step_ns, t.ready_wait_ns, t.loop_idle_ns];
        for v in [t.index, t.ident, t.native_id].into_iter().chain(times) {
            e.i64(v);
        }
        e.u8(t.daemon as u8);
        e.str(&t.name);
    }
    e.u64(run.tasks.len() as u64);
    for t in &run.tasks {
        e.u32(t.rank);
        let times = [t.created_ns, t.done_ns, t.steps, t.running_ns, t.suspended_ns, t.ready_wait_ns];
        for v in [t.index, t.thread_index].into_iter().chain(times) {
            e.i64(v);
        }
        e.str(&t.kind);
        e.str(&t.name);
        e.str(&t.coro_name);
    }
    e.u64(run.loop_blocks.len() as u64);
    for b in &run.loop_blocks {
        e.u32(b.rank);
        for v in [b.thread, b.task, b.start_ns, b.end_ns, b.delayed_tasks] {
            e.i64(v);
        }
    }
    e.u64(run.metadata.len() as u64);
    for (k, v) in &run.metadata {
        e.str(k);
        match v {
            MetaValue::Int(i) => {
                e.u8(0);
                e.i64(*i);
            }
            MetaValue::Float(f) => {
                e.u8(1);
                e.f64(*f);
            }
            MetaValue::Str(s) => {
                e.u8(2);
                e.str(s);
            }
            MetaValue::StrList(l) => {
                e.u8(3);
                e.u64(l.len() as u64);
                for s in l {
                    e.str(s);
                }
            }
        }
    }
    e.u32(run.num_ranks);
}

/// Inverse of [`encode_run`].
///
/// Errors: [`DecodeError`] on anything but a complete, well-formed encoding (bad magic,
/// truncated, trailing bytes, a row naming an unknown region id, an unknown metadata tag,
/// invalid UTF-8). Lengths are checked against the bytes left before anything is
/// allocated, so a damaged length cannot make it allocate unboundedly.
pub fn decode_run(bytes: &[u8]) -> Result<Run, DecodeError> {
    let mut d = Dec { b: bytes, pos: 0 };
    if d.take(MAGIC.len())? != MAGIC {
        return Err("not a scope-profiler run encoding".into());
    }
    decode_body(&mut d, &mut Inline, false)
}

/// Inverse of [`encode_body`], up to the end of the bytes (trailing bytes are an error).
fn decode_body(d: &mut Dec<'_>, cols: &mut dyn ColumnsIn, stored: bool) -> Result<Run, DecodeError> {
    let mut run = Run::default();
    for _ in 0..d.len()? {
        run.region_names.push(d.str()?);
    }
    for _ in 0..d.len()? {
        let row = decode_row(d, cols, stored)?;
        if row.region as usize >= run.region_names.len() {
            return Err(format!("row refers to region id {} of {} names", row.region, run.region_names.len()).into());
        }
        run.regions.push(row);
    }
    decode_tables(d, &mut run)?;
    if d.pos != d.b.len() {
        return Err("trailing bytes after the run encoding".into());
    }
    Ok(run)
}

fn decode_row(d: &mut Dec<'_>, cols: &mut dyn ColumnsIn, stored: bool) -> D<RegionCalls> {
    let region = d.u32()?;
    let rank = d.u32()?;
    let n = d.len()?;
    let flags = d.u16()?;
    let known = (2..KINDS).fold(STORED_FLAG, |m, k| m | 1 << flag_bit(k));
    if flags & !known != 0 {
        return Err(format!("unknown row flags {:#06x}", flags & !known).into());
    }
    let start_ns = cols.get(d, 0, n)?;
    let end_ns = cols.get(d, 1, n)?;
    let mut opt: [Option<Int64Array>; KINDS - 2] = Default::default();
    for (k, slot) in opt.iter_mut().enumerate() {
        if flags & (1 << flag_bit(2 + k)) != 0 {
            *slot = Some(cols.get(d, 2 + k, n)?);
        }
    }
    let [gpu_ns, call_ids, parent_ids, thread_ids, task_ids, await_ns, task_step_ns, ready_wait_ns] = opt;
    let source_file = d.opt_str()?;
    let source_line = d.opt_i64()?;
    let source_text = d.opt_str()?;
    let mut tags = Vec::new();
    for _ in 0..d.len()? {
        tags.push(d.str()?);
    }
    let event_metadata = d.opt_str()?;
    let exclusive_total_ns = d.opt_i64()?;
    let stored = if stored && flags & STORED_FLAG != 0 { Some(decode_stats(d)?) } else { None };
    Ok(RegionCalls {
        gpu_ns,
        call_ids: call_ids.map(Into::into),
        parent_ids: parent_ids.map(Into::into),
        thread_ids,
        task_ids,
        await_ns,
        task_step_ns,
        ready_wait_ns,
        source_file,
        source_line,
        source_text,
        tags,
        event_metadata,
        exclusive_total_ns,
        stored,
        ..RegionCalls::new(region, rank, start_ns, end_ns)
    })
}

fn decode_stats(d: &mut Dec<'_>) -> D<StoredStats> {
    let [count, total, minimum, maximum, first, last, start_minimum, end_maximum] =
        [d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?];
    Ok(StoredStats {
        count,
        total,
        minimum,
        maximum,
        first,
        last,
        start_minimum,
        end_maximum,
        gpu_count: d.u64()?,
        gpu_total: d.i64()?,
        mean: d.f64()?,
        m2: d.f64()?,
    })
}

/// Inverse of [`encode_tables`].
fn decode_tables(d: &mut Dec<'_>, run: &mut Run) -> D<()> {
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let [index, ident, native_id, start_ns, end_ns, cpu_ns, cpu_start_ns, task_step_ns, ready_wait_ns, loop_idle_ns] =
            [d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?];
        let daemon = d.u8()? != 0;
        let name = d.str()?;
        run.threads.push(ThreadRow {
            ident,
            native_id,
            daemon,
            start_ns,
            end_ns,
            cpu_ns,
            cpu_start_ns,
            task_step_ns,
            ready_wait_ns,
            loop_idle_ns,
            ..ThreadRow::new(rank, index, &name)
        });
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let [index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns, ready_wait_ns] =
            [d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?];
        let (kind, name, coro_name) = (d.str()?, d.str()?, d.str()?);
        run.tasks.push(
            TaskRow::new(rank, index, kind, name, coro_name)
                .on_thread(thread_index)
                .lifetime(created_ns, done_ns)
                .timing(steps, running_ns, suspended_ns)
                .ready_wait(ready_wait_ns),
        );
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let [thread, task, start_ns, end_ns, delayed_tasks] = [d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?];
        run.loop_blocks.push(LoopBlockRow { rank, thread, task, start_ns, end_ns, delayed_tasks });
    }
    for _ in 0..d.len()? {
        let key = d.str()?;
        let value = match d.u8()? {
            0 => MetaValue::Int(d.i64()?),
            1 => MetaValue::Float(d.f64()?),
            2 => MetaValue::Str(d.str()?),
            3 => {
                let mut l = Vec::new();
                for _ in 0..d.len()? {
                    l.push(d.str()?);
                }
                MetaValue::StrList(l)
            }
            t => return Err(format!("unknown metadata tag {t}").into()),
        };
        run.metadata.push((key, value));
    }
    run.num_ranks = d.u32()?;
    Ok(())
}

/// Why [`stack`] failed.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// The parts cannot be stacked ([`merge_runs`]: overlapping rank blocks, a row naming an
    /// unknown region id).
    #[error(transparent)]
    Stack(#[from] MergeError),
    /// Writing the HDF5 file failed (the message names the file; `errno` when the
    /// filesystem refused).
    #[error(transparent)]
    Write(#[from] WriteFailure),
}

/// Stack runs as blocks of ranks ([`merge_runs`] without union): `parts` are `(rank_offset, run)`.
/// `metadata`, when given, replaces the stacked run's (the first part's); `num_ranks`
/// overrides the computed count. With `write_to` the result is written there as HDF5
/// (schema 3, atomically) before it is returned.
///
/// Errors: [`StackError::Stack`] when two parts claim a rank, [`StackError::Write`] when the
/// file cannot be written.
pub fn stack(
    parts: Vec<(u32, Run)>,
    metadata: Option<Vec<(String, MetaValue)>>,
    num_ranks: Option<u32>,
    write_to: Option<&Path>,
) -> Result<Run, StackError> {
    let mut run = merge_runs(parts, &MergeOptions { num_ranks, ..Default::default() })?;
    if let Some(metadata) = metadata {
        run.metadata = metadata;
    }
    if let Some(path) = write_to {
        publish_h5(&run, path)?;
    }
    Ok(run)
}
