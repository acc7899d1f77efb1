//! A [`Run`] as bytes between processes of one job (what an MPI rank sends to rank 0 at
//! `finalize()`, one pickle-free buffer), and the stacking of such runs as blocks of ranks.
//!
//! Encoding (little-endian): magic `b"SPRUN\x02"`, then the region names, the rows (every
//! column as raw `i64`s, optional columns flagged; bit-packed ids are written decoded), the
//! thread and task tables, the metadata and `num_ranks`. It is a transport between
//! processes of one job running the same package build, not a file format: rows read
//! without their events (`RegionCalls::stored`) do not travel.
use std::path::Path;

use arrow_array::Int64Array;
use scope_profiler_analysis::{merge_runs, MergeError, MergeOptions, MetaValue, RegionCalls, Run, TaskRow, ThreadRow};
use scope_profiler_formats::hdf5::write::{publish_h5, WriteFailure};

/// First bytes of every encoding (the trailing byte is the encoding version).
pub const MAGIC: &[u8; 6] = b"SPRUN\x02";

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
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

/// The run as bytes (see the module docs).
pub fn encode_run(run: &Run) -> Vec<u8> {
    let events: usize = run.regions.iter().map(|r| r.len()).sum();
    let mut e = Enc(Vec::with_capacity(64 + events * 8 * 6));
    e.0.extend_from_slice(MAGIC);
    e.u64(run.region_names.len() as u64);
    for n in &run.region_names {
        e.str(n);
    }
    e.u64(run.regions.len() as u64);
    for r in &run.regions {
        e.u32(r.region);
        e.u32(r.rank);
        e.u64(r.len() as u64);
        let (call_ids, parent_ids) =
            (r.call_ids.as_ref().map(|c| c.to_array()), r.parent_ids.as_ref().map(|c| c.to_array()));
        let opt = [&r.gpu_ns, &call_ids, &parent_ids, &r.thread_ids, &r.task_ids, &r.await_ns];
        let mut flags = 0u8;
        for (bit, c) in opt.iter().enumerate() {
            if c.is_some() {
                flags |= 1 << bit;
            }
        }
        e.u8(flags);
        e.col(&r.start_ns);
        e.col(&r.end_ns);
        for c in opt.into_iter().flatten() {
            e.col(c);
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
    }
    e.u64(run.threads.len() as u64);
    for t in &run.threads {
        e.u32(t.rank);
        for v in [t.index, t.ident, t.native_id, t.start_ns, t.end_ns, t.cpu_ns, t.cpu_start_ns] {
            e.i64(v);
        }
        e.u8(t.daemon as u8);
        e.str(&t.name);
    }
    e.u64(run.tasks.len() as u64);
    for t in &run.tasks {
        e.u32(t.rank);
        for v in [t.index, t.thread_index, t.created_ns, t.done_ns, t.steps, t.running_ns, t.suspended_ns] {
            e.i64(v);
        }
        e.str(&t.kind);
        e.str(&t.name);
        e.str(&t.coro_name);
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
    e.0
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
    let mut run = Run::default();
    for _ in 0..d.len()? {
        run.region_names.push(d.str()?);
    }
    for _ in 0..d.len()? {
        let region = d.u32()?;
        let rank = d.u32()?;
        let n = d.len()?;
        let flags = d.u8()?;
        let start_ns = d.col(n)?;
        let end_ns = d.col(n)?;
        let mut opt: [Option<Int64Array>; 6] = Default::default();
        for (bit, slot) in opt.iter_mut().enumerate() {
            if flags & (1 << bit) != 0 {
                *slot = Some(d.col(n)?);
            }
        }
        let [gpu_ns, call_ids, parent_ids, thread_ids, task_ids, await_ns] = opt;
        let source_file = d.opt_str()?;
        let source_line = d.opt_i64()?;
        let source_text = d.opt_str()?;
        let mut tags = Vec::new();
        for _ in 0..d.len()? {
            tags.push(d.str()?);
        }
        let event_metadata = d.opt_str()?;
        let exclusive_total_ns = d.opt_i64()?;
        if region as usize >= run.region_names.len() {
            return Err(format!("row refers to region id {region} of {} names", run.region_names.len()).into());
        }
        run.regions.push(RegionCalls {
            gpu_ns,
            call_ids: call_ids.map(Into::into),
            parent_ids: parent_ids.map(Into::into),
            thread_ids,
            task_ids,
            await_ns,
            source_file,
            source_line,
            source_text,
            tags,
            event_metadata,
            exclusive_total_ns,
            ..RegionCalls::new(region, rank, start_ns, end_ns)
        });
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let (index, ident, native_id, start_ns, end_ns, cpu_ns, cpu_start_ns) =
            (d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?);
        let daemon = d.u8()? != 0;
        let name = d.str()?;
        run.threads.push(ThreadRow {
            ready_wait_ns: -1,
            rank,
            index,
            ident,
            native_id,
            daemon,
            start_ns,
            end_ns,
            cpu_ns,
            cpu_start_ns,
            name,
        });
    }
    for _ in 0..d.len()? {
        let rank = d.u32()?;
        let (index, thread_index, created_ns, done_ns, steps, running_ns, suspended_ns) =
            (d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?, d.i64()?);
        let (kind, name, coro_name) = (d.str()?, d.str()?, d.str()?);
        run.tasks.push(
            TaskRow::new(rank, index, kind, name, coro_name)
                .on_thread(thread_index)
                .lifetime(created_ns, done_ns)
                .timing(steps, running_ns, suspended_ns),
        );
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
    if d.pos != bytes.len() {
        return Err("trailing bytes after the run encoding".into());
    }
    Ok(run)
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
