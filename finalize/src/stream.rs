//! Streaming a recording to a sidecar file (`flush_interval`): a process killed by SIGKILL
//! or the OOM killer loses at most about one interval of calls.
//!
//! Every interval, [`flush`] takes the calls completed since the last flush (the recorder
//! snapshot with a [`Watermark`](scope_profiler_recorder::Watermark)), encodes them with
//! the thread and task tables and the run metadata as one run in its compact form
//! ([`encode_run_compact`]: the columns compressed as the HDF5 writer stores them, about a
//! byte per call), appends that as one frame to the sidecar and fsyncs it, and only then
//! retires the calls from the recorder's buffers (a failed append keeps them buffered).
//! Open calls are not flushed; they are taken once they complete. At a normal `finalize()`
//! the sidecar's frames and the calls still buffered make the file
//! ([`crate::checkpoint::checkpoint_with_prior`]); once it is published the sidecar is
//! removed. [`recover`] turns the sidecar of a process that died into the file it did not
//! write, reading it a frame at a time ([`RunConcat`]).
//!
//! # The sidecar
//! `.<name>.<tag>-<pid>.partial` beside the target
//! ([`working_files::sidecar_path`](scope_profiler_formats::hdf5::working_files::sidecar_path)), so
//! processes writing one path never share a sidecar. Little-endian:
//!
//! ```text
//! header: b"SPSIDE\x01\n"  pid u32  process start ticks u64  crc32(previous 20 bytes) u32
//! frame:  b"SPF2"  payload length u64  crc32(payload) u32  payload (an encode_run_compact run)
//! ```
//!
//! Frames marked `b"SPFR"` hold an [`encode_run`] run (raw `i64` columns, 16-24 bytes per
//! call): sidecars written that way are read as well.
//!
//! Every frame holds the calls completed since the previous frame (absolute ns on the
//! recording clock, no call ids) and the whole thread and task tables and metadata as of
//! its flush; the last frame's tables are the run's. A reader takes frames up to the first
//! truncated or damaged one ([`read_sidecar`], [`visit_frames`]) and never fails on a torn
//! last frame.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use arrow_array::Int64Array;
use scope_profiler_analysis::{assign_call_ids, MetaValue, RegionCalls, Run};
use scope_profiler_formats::hdf5::working_files::{self, LeftoverKind};
use scope_profiler_formats::hdf5::write::{publish_h5, WriteFailure};
use scope_profiler_formats::read_h5;
use scope_profiler_recorder::{Recorder, RegionTable};

pub use crate::concat::{concat_runs, RunConcat};
use crate::snapshot::{run_from_snapshot, Snapshot, UnknownRegion};
#[cfg(doc)]
use crate::transport::encode_run;
use crate::transport::{decode_run, decode_run_compact, decode_run_compact_shape, encode_run_compact};

/// The shortest `flush_interval`, in seconds: each flush takes a snapshot and appends a
/// frame, so an interval of nanoseconds would flush without pause.
pub const MIN_INTERVAL_S: f64 = 0.01;

/// The longest `flush_interval`, in seconds (a day): a longer one protects nothing a
/// recording would miss, and the flusher's timer takes at most this.
pub const MAX_INTERVAL_S: f64 = 86_400.0;

/// `seconds` as a `flush_interval`: finite, at least [`MIN_INTERVAL_S`] and at most
/// [`MAX_INTERVAL_S`]; else the reason, naming the value (the one rule of the CLI option,
/// the setting and the flusher).
pub fn check_interval(seconds: f64) -> Result<f64, String> {
    let shown = scope_profiler_analysis::py_float_repr(seconds);
    if seconds.is_finite() && (MIN_INTERVAL_S..=MAX_INTERVAL_S).contains(&seconds) {
        Ok(seconds)
    } else if seconds.is_finite() && seconds > MAX_INTERVAL_S {
        Err(format!("flush_interval must be at most {MAX_INTERVAL_S} s (a day), got {shown}"))
    } else if seconds.is_finite() && seconds > 0.0 {
        Err(format!(
            "flush_interval must be at least {MIN_INTERVAL_S} s (each flush writes to the sidecar), got {shown}"
        ))
    } else {
        Err(format!("flush_interval must be a positive number of seconds, got {shown}"))
    }
}

/// The flusher's period for `seconds` ([`check_interval`]'s rule).
pub fn interval_duration(seconds: f64) -> Result<std::time::Duration, String> {
    let seconds = check_interval(seconds)?;
    std::time::Duration::try_from_secs_f64(seconds).map_err(|e| format!("flush_interval {seconds}: {e}"))
}

/// First bytes of a sidecar (the byte before `\n` is the format version).
pub const SIDECAR_MAGIC: &[u8; 8] = b"SPSIDE\x01\n";
/// First bytes of a frame whose payload is an [`encode_run_compact`] run (what is written).
pub const FRAME_MAGIC: &[u8; 4] = b"SPF2";
/// First bytes of a frame whose payload is an [`encode_run`] run (read, no longer written).
pub const FRAME_MAGIC_RAW: &[u8; 4] = b"SPFR";
const HEADER_LEN: u64 = 24;
const FRAME_HEADER_LEN: u64 = 16;

/// Who wrote a sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SidecarHeader {
    pub pid: u32,
    /// The writer's start time in clock ticks since boot (0 = unknown), so a reused pid is
    /// not taken for the writer.
    pub start_ticks: u64,
}

impl SidecarHeader {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        SidecarHeader { pid, start_ticks: working_files::process_start_ticks(pid).unwrap_or(0) }
    }

    fn bytes(&self) -> [u8; HEADER_LEN as usize] {
        let mut b = [0u8; HEADER_LEN as usize];
        b[..8].copy_from_slice(SIDECAR_MAGIC);
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12..20].copy_from_slice(&self.start_ticks.to_le_bytes());
        let crc = crc32fast::hash(&b[..20]);
        b[20..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn parse(b: &[u8]) -> Option<Self> {
        if b.len() < HEADER_LEN as usize || &b[..8] != SIDECAR_MAGIC {
            return None;
        }
        if crc32fast::hash(&b[..20]).to_le_bytes() != b[20..24] {
            return None;
        }
        Some(SidecarHeader {
            pid: u32::from_le_bytes(b[8..12].try_into().ok()?),
            start_ticks: u64::from_le_bytes(b[12..20].try_into().ok()?),
        })
    }
}

/// The appending end of one process's sidecar. Created lazily by the first frame; removed
/// by [`SidecarWriter::remove`] once its calls are published.
#[derive(Debug)]
pub struct SidecarWriter {
    path: PathBuf,
    file: Option<File>,
    /// Bytes written and synced: the end of the last whole frame.
    len: u64,
    frames: usize,
    calls: usize,
    /// Thread and task rows in the last frame.
    tables: Option<(usize, usize)>,
}

impl SidecarWriter {
    /// A writer for the sidecar at `path` (nothing is created yet).
    pub fn new(path: PathBuf) -> Self {
        SidecarWriter { path, file: None, len: 0, frames: 0, calls: 0, tables: None }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Frames appended since the sidecar was created.
    pub fn frames(&self) -> usize {
        self.frames
    }
    /// Calls in those frames.
    pub fn calls(&self) -> usize {
        self.calls
    }

    fn open(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            let mut f = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&self.path)?;
            f.write_all(&SidecarHeader::current().bytes())?;
            f.sync_all()?;
            if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            self.len = HEADER_LEN;
            self.file = Some(f);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Append one frame holding `payload` (an [`encode_run_compact`] run of `calls` calls and
    /// `tables` thread/task rows) and fsync it. On error the sidecar is cut back to its last whole
    /// frame, so a later frame is not hidden behind a torn one.
    pub fn append(&mut self, payload: &[u8], calls: usize, tables: (usize, usize)) -> io::Result<()> {
        let at = self.len.max(HEADER_LEN);
        let f = self.open()?;
        let mut head = Vec::with_capacity(FRAME_HEADER_LEN as usize);
        head.extend_from_slice(FRAME_MAGIC);
        head.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        head.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        let written = f
            .seek(SeekFrom::Start(at))
            .and_then(|_| f.write_all(&head))
            .and_then(|_| f.write_all(payload))
            .and_then(|_| f.sync_data());
        if let Err(e) = written {
            let _ = f.set_len(at);
            return Err(e);
        }
        self.len = at + FRAME_HEADER_LEN + payload.len() as u64;
        self.frames += 1;
        self.calls += calls;
        self.tables = Some(tables);
        Ok(())
    }

    /// Every frame appended so far, read back through the open descriptor (so also after
    /// the path was removed by someone else). Empty when nothing was appended.
    pub fn read_back(&mut self) -> io::Result<SidecarRead> {
        let len = self.len;
        let Some(f) = self.file.as_mut() else { return Ok(SidecarRead::default()) };
        f.seek(SeekFrom::Start(0))?;
        Ok(read_frames(io::BufReader::new(Read::by_ref(f).take(len)), len))
    }

    /// Close and delete the sidecar (its calls are published); the next frame starts a new one.
    pub fn remove(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.path);
        }
        self.len = 0;
        self.frames = 0;
        self.calls = 0;
    }

    /// Forget the sidecar without touching it (a forked child: the file is the parent's).
    pub fn disown(&mut self) {
        self.file = None;
        self.len = 0;
        self.frames = 0;
        self.calls = 0;
        self.tables = None;
    }
}

/// What a sidecar holds, as far as it is intact.
#[derive(Debug, Clone, Default)]
pub struct SidecarRead {
    /// None when the header is missing or damaged (then there are no frames).
    pub header: Option<SidecarHeader>,
    /// The intact frames, in order.
    pub frames: Vec<Run>,
    /// Why reading stopped before the end of the file (a truncated or damaged frame).
    pub stopped: Option<String>,
}

impl SidecarRead {
    /// Calls in the intact frames.
    pub fn calls(&self) -> usize {
        self.frames.iter().map(|r| r.regions.iter().map(RegionCalls::len).sum::<usize>()).sum()
    }
}

/// What [`visit_frames`] went through.
#[derive(Debug, Clone, Default)]
pub struct FramesVisited {
    /// None when the header is missing or damaged (then there are no frames).
    pub header: Option<SidecarHeader>,
    /// Intact frames handed over.
    pub frames: usize,
    /// Why reading stopped before the end of the file (a truncated or damaged frame).
    pub stopped: Option<String>,
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The header of a sidecar of `len` bytes, or why there is none.
fn read_sidecar_header<R: Read>(r: &mut R) -> Result<SidecarHeader, String> {
    let mut head = [0u8; HEADER_LEN as usize];
    match read_full(r, &mut head) {
        Ok(n) if n == head.len() => {}
        Ok(n) => return Err(format!("the header is truncated ({n} of {HEADER_LEN} bytes)")),
        Err(e) => return Err(format!("the header could not be read: {e}")),
    }
    SidecarHeader::parse(&head).ok_or_else(|| "not a scope-profiler sidecar (bad or damaged header)".into())
}

/// How a frame's payload is encoded (its marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// `b"SPF2"`: [`encode_run_compact`].
    Compact,
    /// `b"SPFR"`: [`encode_run`].
    Raw,
}

/// Frame `k` at byte `pos` of a sidecar of `len` bytes, its payload read into `payload`
/// and checked; `Ok(None)` at the end of the file; else why it is not intact.
fn read_frame<R: Read>(
    r: &mut R,
    k: usize,
    pos: u64,
    len: u64,
    payload: &mut Vec<u8>,
) -> Result<Option<FrameKind>, String> {
    let mut fh = [0u8; FRAME_HEADER_LEN as usize];
    let n = read_full(r, &mut fh).map_err(|e| format!("frame {k} could not be read: {e}"))?;
    if n == 0 {
        return Ok(None);
    }
    if n < fh.len() {
        return Err(format!("frame {k} is truncated (its header has {n} of {FRAME_HEADER_LEN} bytes)"));
    }
    let kind = match &fh[..4] {
        m if m == FRAME_MAGIC => FrameKind::Compact,
        m if m == FRAME_MAGIC_RAW => FrameKind::Raw,
        _ => return Err(format!("frame {k} is damaged (no frame marker at byte {pos})")),
    };
    let size = u64::from_le_bytes(fh[4..12].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(fh[12..16].try_into().expect("4 bytes"));
    let left = len.saturating_sub(pos + FRAME_HEADER_LEN);
    if size > left {
        return Err(format!("frame {k} is truncated ({left} of {size} bytes)"));
    }
    payload.clear();
    payload.resize(size as usize, 0);
    match read_full(r, payload) {
        Ok(n) if n as u64 == size => {}
        Ok(n) => return Err(format!("frame {k} is truncated ({n} of {size} bytes)")),
        Err(e) => return Err(format!("frame {k} could not be read: {e}")),
    }
    if crc32fast::hash(payload) != crc {
        return Err(format!("frame {k} is damaged (checksum mismatch)"));
    }
    Ok(Some(kind))
}

/// Read a sidecar of `len` bytes a frame at a time, handing each intact frame's payload to
/// `take` (which says why it cannot use one: then reading stops there), up to the first
/// truncated or damaged frame. One frame is held at a time.
fn walk_frames<R: Read>(
    mut r: R,
    len: u64,
    mut take: impl FnMut(FrameKind, &[u8]) -> Result<(), String>,
) -> FramesVisited {
    let mut out = FramesVisited::default();
    match read_sidecar_header(&mut r) {
        Ok(h) => out.header = Some(h),
        Err(why) => {
            out.stopped = Some(why);
            return out;
        }
    }
    let (mut pos, mut payload) = (HEADER_LEN, Vec::new());
    loop {
        let k = out.frames;
        match read_frame(&mut r, k, pos, len, &mut payload) {
            Ok(Some(kind)) => {
                if let Err(why) = take(kind, &payload) {
                    out.stopped = Some(format!("frame {k} is damaged ({why})"));
                    break;
                }
                pos += FRAME_HEADER_LEN + payload.len() as u64;
                out.frames += 1;
            }
            Ok(None) => break,
            Err(why) => {
                out.stopped = Some(why);
                break;
            }
        }
    }
    out
}

/// Read a sidecar of `len` bytes a frame at a time, handing each intact frame to `visit`
/// in order, up to the first truncated or damaged one (never an error for those: `stopped`
/// says why the rest is not read). One frame is held at a time.
pub fn visit_frames<R: Read>(r: R, len: u64, mut visit: impl FnMut(Run)) -> FramesVisited {
    walk_frames(r, len, |kind, payload| {
        let run = match kind {
            FrameKind::Compact => decode_run_compact(payload),
            FrameKind::Raw => decode_run(payload),
        };
        run.map(&mut visit).map_err(|e| e.to_string())
    })
}

/// [`visit_frames`] of the frames' rows only: each frame's run with empty columns and its
/// rows' numbers of calls (compressed calls are not decompressed).
fn visit_frame_shapes<R: Read>(r: R, len: u64, mut visit: impl FnMut(&Run, &[usize])) -> FramesVisited {
    walk_frames(r, len, |kind, payload| {
        let shape = match kind {
            FrameKind::Compact => decode_run_compact_shape(payload),
            FrameKind::Raw => decode_run(payload).map(|run| {
                let lens = run.regions.iter().map(RegionCalls::len).collect();
                (run, lens)
            }),
        };
        shape.map(|(run, lens)| visit(&run, &lens)).map_err(|e| e.to_string())
    })
}

/// Every intact frame of a sidecar of `len` bytes ([`visit_frames`]).
fn read_frames<R: Read>(r: R, len: u64) -> SidecarRead {
    let mut frames = Vec::new();
    let visited = visit_frames(r, len, |run| frames.push(run));
    SidecarRead { header: visited.header, frames, stopped: visited.stopped }
}

/// Read the sidecar at `path` (see [`read_frames`]: a torn tail is not an error).
///
/// Errors: the file cannot be opened.
pub fn read_sidecar(path: &Path) -> io::Result<SidecarRead> {
    let f = File::open(path)?;
    let len = f.metadata()?.len();
    Ok(read_frames(io::BufReader::new(f), len))
}

/// What one [`flush`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Nothing new (no completed call; tables unchanged, or no frame yet): no frame.
    Nothing,
    /// One frame with this many calls was appended and those calls retired.
    Frame { calls: usize },
}

/// Why a [`flush`] failed. Nothing was retired: the calls are still buffered.
#[derive(Debug, thiserror::Error)]
pub enum FlushError {
    #[error(transparent)]
    Snapshot(#[from] UnknownRegion),
    #[error("could not append to {path}: {error}")]
    Append { path: PathBuf, error: io::Error },
}

/// The append of one frame, handed to the caller's `release` (see [`flush`]).
pub type FlushJob<'a> = &'a mut (dyn FnMut() -> io::Result<()> + Send + 'a);

/// Append the calls completed since the last flush to `sidecar` as one frame (with the
/// thread and task tables, `metadata` and thread/task times relative to `origin_ns`), then
/// retire them from `rec`. No frame when there is nothing new.
///
/// `release` runs the encoding and the append (it must call the job and return its result):
/// the Python glue releases the GIL there; threads may record meanwhile, and only the
/// flushed calls are retired afterwards (a [`Watermark`](scope_profiler_recorder::Watermark)
/// taken with the snapshot).
///
/// Errors: [`FlushError::Append`] when the frame cannot be written (the sidecar is cut back
/// to its last whole frame and every call stays buffered).
///
/// # Safety
/// As [`crate::checkpoint::checkpoint`]: no thread inside `enter`/`exit` of `rec` while this
/// runs outside `release`, and no other checkpoint, flush or retire of `rec` until it returns.
pub unsafe fn flush(
    rec: &Recorder,
    regions: &RegionTable,
    origin_ns: i64,
    metadata: Vec<(String, MetaValue)>,
    sidecar: &mut SidecarWriter,
    release: impl FnOnce(FlushJob<'_>) -> io::Result<()>,
) -> Result<Flushed, FlushError> {
    let (run, mark, calls, tables) = {
        let table = regions.lock();
        // completed calls only (what `retire` of the watermark below removes)
        let snap = Snapshot::take(rec, table.len(), origin_ns);
        let calls: usize = snap.regions.iter().map(|c| c.starts.len()).sum();
        let tables = (snap.threads.len(), snap.tasks.len());
        // a frame for new calls, or for changed tables of a sidecar that has calls already
        if calls == 0 && (sidecar.frames == 0 || sidecar.tables == Some(tables)) {
            return Ok(Flushed::Nothing);
        }
        let mark = rec.watermark();
        (run_from_snapshot(snap, &table, metadata)?, mark, calls, tables)
    };
    let path = sidecar.path.clone();
    let mut job = || sidecar.append(&encode_run_compact(&run), calls, tables);
    release(&mut job).map_err(|error| FlushError::Append { path, error })?;
    rec.retire(&mark);
    Ok(Flushed::Frame { calls })
}

/// A sidecar found beside a target ([`sidecars`]).
#[derive(Debug, Clone)]
pub struct SidecarInfo {
    pub path: PathBuf,
    pub pid: u32,
    /// Its writer is still running (this process included).
    pub alive: bool,
    /// Modified after the target (or the target does not exist): it holds calls the
    /// target does not.
    pub pending: bool,
    pub modified: Option<SystemTime>,
}

/// Sidecars beside `target` (any writer), newest first.
pub fn sidecars(target: &Path) -> Vec<SidecarInfo> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let target_time = fs::metadata(target).and_then(|m| m.modified()).ok();
    let mut out: Vec<SidecarInfo> = working_files::list(&dir)
        .into_iter()
        .filter(|(_, l)| l.kind == LeftoverKind::Sidecar && l.target == name)
        .map(|(path, l)| {
            let modified = fs::metadata(&path).and_then(|m| m.modified()).ok();
            let alive = if l.tag != working_files::process_tag() {
                // another host or container: its pid means nothing here; recently written
                // counts as alive
                modified.and_then(|m| m.elapsed().ok()).is_some_and(|age| age.as_secs() < 60)
            } else {
                let start = read_header(&path).map_or(0, |h| h.start_ticks);
                working_files::writer_alive(l.pid, start)
            };
            let pending = match (target_time, modified) {
                (None, _) => true,
                (Some(t), Some(m)) => m > t,
                (Some(_), None) => false,
            };
            SidecarInfo { path, pid: l.pid, alive, pending, modified }
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.modified));
    out
}

fn read_header(path: &Path) -> Option<SidecarHeader> {
    let mut b = [0u8; HEADER_LEN as usize];
    let mut f = File::open(path).ok()?;
    (read_full(&mut f, &mut b).ok()? == b.len()).then_some(())?;
    SidecarHeader::parse(&b)
}

/// The sidecar to recover `target` from: the newest one whose writer is gone and that
/// holds calls the target does not (the target is missing or older). None otherwise.
pub fn pending_sidecar(target: &Path) -> Option<PathBuf> {
    sidecars(target).into_iter().find(|s| !s.alive && s.pending).map(|s| s.path)
}

/// A run recovered from a sidecar ([`recover_run`]).
#[derive(Debug, Clone)]
pub struct Recovery {
    pub sidecar: PathBuf,
    /// The run: every intact frame's calls, numbered (call ids from 0), tables and
    /// metadata of the last intact frame plus `recovered_from` (the sidecar's name).
    pub run: Run,
    /// The writer's pid, from the header.
    pub pid: Option<u32>,
    pub frames: usize,
    pub calls: usize,
    /// Why reading stopped before the end (a torn or damaged last frame), if it did.
    pub stopped: Option<String>,
    /// The nesting failure's message when the calls do not nest (the run then has no call graph).
    pub warning: Option<String>,
    /// The calls the target already held when the sidecar's were added to it (its process
    /// wrote it, then streamed more: [`with_late_calls`]); None when the run written is the
    /// sidecar's alone.
    pub held: Option<usize>,
}

/// Why [`recover`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    /// Nothing to recover; the message says what was found.
    #[error("{0}")]
    Nothing(String),
    #[error("could not read {path}: {error}")]
    Read { path: PathBuf, error: io::Error },
    #[error(transparent)]
    Write(#[from] WriteFailure),
    /// The target holds more calls of another recording than the sidecar: not replaced;
    /// the message says why and how to write the sidecar's calls elsewhere.
    #[error("{0}")]
    Refused(String),
}

/// The run a sidecar holds (see [`Recovery`]).
///
/// Errors: [`RecoverError::Read`] when it cannot be opened, [`RecoverError::Nothing`] when
/// it has no intact frame.
pub fn recover_run(sidecar: &Path) -> Result<Recovery, RecoverError> {
    let read_error = |error| RecoverError::Read { path: sidecar.to_path_buf(), error };
    let open = || -> Result<(io::BufReader<File>, u64), RecoverError> {
        let f = File::open(sidecar).map_err(read_error)?;
        let len = f.metadata().map_err(read_error)?.len();
        Ok((io::BufReader::new(f), len))
    };
    // twice: the frames' rows first, so that each region's calls go into buffers of their
    // final size (nothing regrown or copied), then their calls
    let mut concat = RunConcat::new();
    let (f, len) = open()?;
    visit_frame_shapes(f, len, |shape, lens| concat.expect(shape, lens));
    let (f, len) = open()?;
    let visited = visit_frames(f, len, |frame| concat.add(frame));
    if visited.frames == 0 {
        let why = visited.stopped.as_deref().unwrap_or("it holds no frame");
        return Err(RecoverError::Nothing(format!("nothing to recover from {}: {why}", sidecar.display())));
    }
    let calls = concat.calls();
    let mut run = concat.finish(None);
    let name = sidecar.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    run.metadata.retain(|(k, _)| k != "recovered_from");
    run.metadata.push(("recovered_from".into(), MetaValue::Str(name)));
    let warning = if run.regions.is_empty() { None } else { assign_call_ids(&mut run, 0, 0).err().map(|e| e.0) };
    Ok(Recovery {
        sidecar: sidecar.to_path_buf(),
        run,
        pid: visited.header.map(|h| h.pid),
        frames: visited.frames,
        calls,
        stopped: visited.stopped,
        warning,
        held: None,
    })
}

/// What [`recover`] found when there is nothing to recover for `target`.
fn nothing_for(target: &Path) -> String {
    let found = sidecars(target);
    if found.is_empty() {
        return format!("no sidecar of {} (nothing was streamed to it with flush_interval)", target.display());
    }
    let mut msg = format!("no sidecar to recover {} from:", target.display());
    for s in found {
        let state = if s.alive {
            format!("process {} is still writing it", s.pid)
        } else {
            format!("older than {} (its calls are in it, or a later file replaced them)", target.display())
        };
        msg.push_str(&format!("\n  {}: {state}", s.path.display()));
    }
    msg
}

/// Turn the sidecar of a process that died into `output` (default: `target`): the
/// newest pending sidecar of `target` ([`pending_sidecar`]) or `from`, written through the
/// normal writer (atomically). When the file written is the target, the sidecar is then
/// removed. Returns the recovery and the path written.
///
/// A target that exists is never replaced by fewer calls than it holds ([`onto_target`]):
/// the sidecar of the process that wrote it (calls it recorded after writing it) is added
/// to it; another recording's sidecar replaces it only when it holds at least as many
/// calls, else [`RecoverError::Refused`] says why (`-o` writes the sidecar's run elsewhere).
///
/// Errors: [`RecoverError::Nothing`] (no such sidecar, its writer is still running, no intact
/// frame), [`RecoverError::Read`], [`RecoverError::Write`], [`RecoverError::Refused`].
pub fn recover(target: &Path, from: Option<&Path>, output: Option<&Path>) -> Result<(Recovery, PathBuf), RecoverError> {
    let sidecar = match from {
        Some(p) => {
            if let Some(h) = read_header(p) {
                let same_ns = working_files::parse(&p.file_name().unwrap_or_default().to_string_lossy())
                    .is_none_or(|l| l.tag == working_files::process_tag());
                if same_ns && working_files::writer_alive(h.pid, h.start_ticks) {
                    return Err(RecoverError::Nothing(format!(
                        "{} is still being written by process {}",
                        p.display(),
                        h.pid
                    )));
                }
            }
            p.to_path_buf()
        }
        None => pending_sidecar(target).ok_or_else(|| RecoverError::Nothing(nothing_for(target)))?,
    };
    let mut recovery = recover_run(&sidecar)?;
    let out = output.unwrap_or(target).to_path_buf();
    if out == target {
        recovery = onto_target(recovery, target)?;
    }
    publish_h5(&recovery.run, &out)?;
    if output.is_none_or(|o| o == target) {
        let _ = fs::remove_file(&sidecar);
    }
    Ok((recovery, out))
}

/// The number of calls `run` holds.
pub fn calls_of(run: &Run) -> usize {
    run.regions.iter().map(|r| r.stored.as_ref().map_or(r.len(), |s| s.count.max(0) as usize)).sum()
}

/// Whether `late` (a sidecar's run) was recorded by the same recording as `held` (a file):
/// the same `start_time_ns` (the recording's start on its clock) in both.
fn same_recording(held: &Run, late: &Run) -> bool {
    held.meta_int("start_time_ns").is_some_and(|t| late.meta_int("start_time_ns") == Some(t))
}

/// `recovery` written over `target`, which exists: a readable target of the same recording
/// gets the sidecar's calls added ([`with_late_calls`]; [`Recovery::held`] says how many
/// it had); one of another recording holding more calls than the sidecar is not replaced
/// ([`RecoverError::Refused`]). An unreadable target (damaged, not a profile) holds nothing
/// to keep: the sidecar's run replaces it.
fn onto_target(mut recovery: Recovery, target: &Path) -> Result<Recovery, RecoverError> {
    let Ok(held) = read_h5(target) else { return Ok(recovery) };
    let held_calls = calls_of(&held);
    if same_recording(&held, &recovery.run) {
        recovery.run = with_late_calls(held, recovery.run);
        recovery.held = Some(held_calls);
        return Ok(recovery);
    }
    if recovery.calls >= held_calls {
        return Ok(recovery);
    }
    Err(RecoverError::Refused(format!(
        "{target} holds {held_calls} call(s) of another recording than {sidecar}, which holds {calls}: {target} is \
         not replaced by fewer calls than it holds (`scope-profiler recover {target} -o OTHER.h5` writes the \
         sidecar's calls to OTHER.h5)",
        target = target.display(),
        sidecar = recovery.sidecar.display(),
        calls = recovery.calls,
    )))
}

/// One region row's calls with their columns, to be put in thread and start order.
#[derive(Default)]
struct RowCalls {
    starts: Vec<i64>,
    ends: Vec<i64>,
    gpu: Option<Vec<i64>>,
    ids: Option<Vec<i64>>,
    parents: Option<Vec<i64>>,
    threads: Option<Vec<i64>>,
    tasks: Option<Vec<i64>>,
    awaits: Option<Vec<i64>>,
    ready_waits: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
    metadata: Option<Vec<serde_json::Value>>,
}

impl RowCalls {
    fn of(r: &RegionCalls) -> Self {
        let values = |a: &Int64Array| a.values().to_vec();
        RowCalls {
            starts: values(&r.start_ns),
            ends: values(&r.end_ns),
            gpu: r.gpu_ns.as_ref().map(values),
            ids: r.call_ids.as_ref().map(|c| c.to_vec()),
            parents: r.parent_ids.as_ref().map(|c| c.to_vec()),
            threads: r.thread_ids.as_ref().map(values),
            tasks: r.task_ids.as_ref().map(values),
            awaits: r.await_ns.as_ref().map(values),
            ready_waits: r.ready_wait_ns.as_ref().map(values),
            steps: r.task_step_ns.as_ref().map(values),
            metadata: r.event_metadata.as_deref().and_then(|m| serde_json::from_str(m).ok()),
        }
    }

    /// `other`'s calls after these (a column one side lacks: its fill value there; call
    /// ids only when both have them).
    fn extend(&mut self, other: RowCalls) {
        let (have, n) = (self.starts.len(), other.starts.len());
        fn join<T: Clone>(a: &mut Option<Vec<T>>, b: Option<Vec<T>>, have: usize, n: usize, fill: T) {
            *a = match (a.take(), b) {
                (None, None) => None,
                (a, b) => {
                    let mut out = a.unwrap_or_else(|| vec![fill.clone(); have]);
                    out.extend(b.unwrap_or_else(|| vec![fill; n]));
                    Some(out)
                }
            };
        }
        self.starts.extend(other.starts);
        self.ends.extend(other.ends);
        join(&mut self.gpu, other.gpu, have, n, -1);
        join(&mut self.threads, other.threads, have, n, -1);
        join(&mut self.tasks, other.tasks, have, n, -1);
        join(&mut self.awaits, other.awaits, have, n, 0);
        join(&mut self.ready_waits, other.ready_waits, have, n, -1);
        join(&mut self.steps, other.steps, have, n, 0);
        join(&mut self.metadata, other.metadata, have, n, serde_json::Value::Object(Default::default()));
        let numbered = self.ids.is_some() && other.ids.is_some();
        join(&mut self.ids, other.ids.filter(|_| numbered), have, n, -1);
        join(&mut self.parents, other.parents.filter(|_| numbered), have, n, -1);
        if !numbered {
            (self.ids, self.parents) = (None, None);
        }
    }

    /// The columns into `row`, in thread and start order (a tracked row's recorded order).
    fn into_row(self, mut row: RegionCalls) -> RegionCalls {
        let mut perm: Vec<usize> = (0..self.starts.len()).collect();
        perm.sort_by_key(|&k| (self.threads.as_ref().map_or(0, |t| t[k]), self.starts[k]));
        let pick = |v: &[i64]| Int64Array::from(perm.iter().map(|&k| v[k]).collect::<Vec<i64>>());
        row.start_ns = pick(&self.starts);
        row.end_ns = pick(&self.ends);
        row.gpu_ns = self.gpu.as_deref().map(pick);
        row.call_ids = self.ids.as_deref().map(|v| pick(v).into());
        row.parent_ids = self.parents.as_deref().map(|v| pick(v).into());
        row.thread_ids = self.threads.as_deref().map(pick);
        row.task_ids = self.tasks.as_deref().map(pick);
        row.await_ns = self.awaits.as_deref().map(pick);
        row.ready_wait_ns = self.ready_waits.as_deref().map(pick);
        row.task_step_ns = self.steps.as_deref().map(pick);
        row.event_metadata =
            self.metadata.map(|m| serde_json::Value::Array(perm.iter().map(|&k| m[k].clone()).collect()).to_string());
        row.stored = None;
        row
    }
}

/// `held` (the file a process wrote) with `late` (calls the same recording completed after
/// it, recovered from its sidecar) added: each region's late calls beside its held ones, in
/// thread and start order, numbered after the held run's last call id (their parents among
/// themselves: every call the file holds ended before it was written, so none encloses a
/// late one); exclusive totals added; the late run's thread and task rows the file does not
/// have; the file's metadata, with `recovered_from`. Calls without a call graph on either
/// side give the merged row none.
pub fn with_late_calls(mut held: Run, mut late: Run) -> Run {
    let base =
        held.regions.iter().filter_map(|r| r.call_ids.as_ref()).flat_map(|c| c.to_vec()).max().map_or(0, |m| m + 1);
    if !late.regions.is_empty() && assign_call_ids(&mut late, 0, base).is_err() {
        for r in &mut late.regions {
            (r.call_ids, r.parent_ids, r.exclusive_total_ns) = (None, None, None);
        }
    }
    for row in late.regions {
        let name = &late.region_names[row.region as usize];
        let region = match held.region_names.iter().position(|n| n == name) {
            Some(i) => i as u32,
            None => {
                held.region_names.push(name.clone());
                (held.region_names.len() - 1) as u32
            }
        };
        let Some(at) = held.regions.iter().position(|r| r.region == region && r.rank == row.rank) else {
            held.regions.push(RegionCalls { region, ..row });
            continue;
        };
        let mut calls = RowCalls::of(&held.regions[at]);
        calls.extend(RowCalls::of(&row));
        let total = held.regions[at].exclusive_total_ns.zip(row.exclusive_total_ns).map(|(a, b)| a + b);
        let merged = calls.into_row(held.regions[at].clone());
        held.regions[at] = RegionCalls { exclusive_total_ns: total, ..merged };
    }
    for t in late.threads {
        if !held.threads.iter().any(|h| h.rank == t.rank && h.index == t.index) {
            held.threads.push(t);
        }
    }
    for t in late.tasks {
        if !held.tasks.iter().any(|h| h.rank == t.rank && h.index == t.index) {
            held.tasks.push(t);
        }
    }
    held.metadata.retain(|(k, _)| k != "recovered_from");
    if let Some(from) = late.metadata.into_iter().find(|(k, _)| k == "recovered_from") {
        held.metadata.push(from);
    }
    held.num_ranks = held.num_ranks.max(1);
    held
}

/// The one-line report of a recovery (`scope-profiler recover`, the `read_h5` warning).
pub fn describe(r: &Recovery, written: &Path) -> String {
    let who = r.pid.map_or(String::new(), |p| format!(" of process {p}"));
    let mut s = format!(
        "recovered {} call(s) of {} region(s) and {} thread(s) from {} frame(s) of {}{who} into {}",
        r.calls,
        r.run.region_names.len(),
        r.run.threads.len(),
        r.frames,
        r.sidecar.display(),
        written.display()
    );
    if let Some(held) = r.held {
        s.push_str(&format!(", after the {held} call(s) it held (its process recorded them after writing it)"));
    }
    if let Some(why) = &r.stopped {
        s.push_str(&format!(" (reading stopped: {why})"));
    }
    if let Some(w) = &r.warning {
        s.push_str(&format!("; call graph not recorded: {w}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_array::Int64Array;

    use crate::concat::tests::run_of;

    #[test]
    fn a_flush_interval_is_one_a_timer_can_take() {
        assert_eq!(check_interval(0.01), Ok(0.01));
        assert_eq!(interval_duration(86_400.0), Ok(std::time::Duration::from_secs(86_400)));
        for (seconds, says) in [
            (1e20, "at most 86400 s (a day), got 1e+20"),
            (86_400.5, "at most 86400 s"),
            (f64::INFINITY, "a positive number"),
            (f64::NAN, "a positive number"),
            (0.001, "at least 0.01 s"),
            (-1.0, "a positive number"),
        ] {
            let e = interval_duration(seconds).unwrap_err();
            assert!(e.starts_with("flush_interval must be") && e.contains(says), "{seconds}: {e}");
        }
    }

    /// A file's process that streamed calls after writing it (`flush_interval`, calls
    /// recorded after its exit-time finalize): `recover` adds them to the file. Its calls keep
    /// their ids and per-call metadata; the late ones are numbered after them, in thread and
    /// start order beside them; a thread the file does not have is added.
    #[test]
    fn late_calls_are_added_to_the_file_after_its_own_calls() {
        use scope_profiler_analysis::ThreadRow;
        let thread =
            |index| ThreadRow { ident: index, native_id: index, ..ThreadRow::new(0, index, &format!("t{index}")) };
        let mut work = run_of("work", &[10, 30, 20], &[0, 0, 1]).regions.remove(0);
        work.call_ids = Some(Int64Array::from(vec![0, 1, 2]).into());
        work.parent_ids = Some(Int64Array::from(vec![-1, -1, -1]).into());
        work.event_metadata = Some(r#"[{"step": 1}, {"step": 2}, {"step": 3}]"#.into());
        work.exclusive_total_ns = Some(15);
        let held = Run {
            region_names: vec!["work".into()],
            regions: vec![work],
            threads: vec![thread(0), thread(1)],
            metadata: vec![("start_time_ns".into(), MetaValue::Int(7))],
            num_ranks: 1,
            ..Run::default()
        };
        let mut late = concat_runs(vec![run_of("late", &[100], &[1]), run_of("work", &[90, 95], &[2, 0])], None);
        late.threads = vec![thread(0), thread(1), thread(2)];
        late.metadata =
            vec![("start_time_ns".into(), MetaValue::Int(7)), ("recovered_from".into(), MetaValue::Str("s".into()))];
        assert!(same_recording(&held, &late));
        let run = with_late_calls(held, late);
        assert_eq!(run.region_names, ["work", "late"]);
        assert_eq!(calls_of(&run), 6);
        let work = &run.regions[0];
        // thread 0: 10, 30, 95; thread 1: 20; thread 2: 90
        assert_eq!(work.start_ns.values().to_vec(), [10, 30, 95, 20, 90]);
        assert_eq!(work.thread_ids.as_ref().unwrap().values().to_vec(), [0, 0, 0, 1, 2]);
        let ids = work.call_ids.as_ref().unwrap().to_vec();
        assert_eq!((ids[0], ids[1], ids[3]), (0, 1, 2), "the file's calls keep their ids");
        let mut new: Vec<i64> = vec![ids[2], ids[4], run.regions[1].call_ids.as_ref().unwrap().to_vec()[0]];
        new.sort();
        assert_eq!(new, [3, 4, 5], "the late calls are numbered after the file's");
        assert_eq!(work.parent_ids.as_ref().unwrap().to_vec(), [-1; 5]);
        let meta: serde_json::Value = serde_json::from_str(work.event_metadata.as_deref().unwrap()).unwrap();
        assert_eq!(meta, serde_json::json!([{"step": 1}, {"step": 2}, {}, {"step": 3}, {}]));
        assert_eq!(work.exclusive_total_ns, Some(15 + 10), "5 ns for each late call");
        assert_eq!(run.threads.iter().map(|t| t.index).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(run.meta("recovered_from"), Some(&MetaValue::Str("s".into())));
        let other = Run { metadata: vec![("start_time_ns".into(), MetaValue::Int(8))], ..Run::default() };
        assert!(!same_recording(&run, &other), "another recording's start");
        assert!(!same_recording(&Run::default(), &Run::default()), "no start: not known to be the same");
    }

    #[test]
    fn frames_read_back_up_to_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".x.h5.partial");
        let mut w = SidecarWriter::new(path.clone());
        for k in 0..3 {
            w.append(&encode_run_compact(&run_of("r", &[k], &[0])), 1, (0, 0)).unwrap();
        }
        assert_eq!(w.read_back().unwrap().frames.len(), 3);
        let full = fs::read(&path).unwrap();
        for cut in [full.len() - 1, full.len() - 20, HEADER_LEN as usize + 3] {
            fs::write(&path, &full[..cut]).unwrap();
            let r = read_sidecar(&path).unwrap();
            assert!(r.frames.len() < 3 && r.stopped.as_deref().unwrap().contains("truncated"), "{r:?}");
        }
        let mut damaged = full.clone();
        let last = damaged.len() - 3;
        damaged[last] ^= 0xff;
        fs::write(&path, &damaged).unwrap();
        let r = read_sidecar(&path).unwrap();
        assert_eq!(r.frames.len(), 2);
        assert!(r.stopped.unwrap().contains("checksum"));
        fs::write(&path, b"garbage").unwrap();
        assert!(read_sidecar(&path).unwrap().header.is_none());
    }

    /// A frame as sidecars had them before frames were compressed: `b"SPFR"`, then an
    /// `encode_run` run.
    fn raw_frame(run: &Run) -> Vec<u8> {
        let payload = crate::transport::encode_run(run);
        let mut frame = FRAME_MAGIC_RAW.to_vec();
        frame.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        frame.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        frame.extend_from_slice(&payload);
        frame
    }

    #[test]
    fn a_sidecar_of_uncompressed_frames_is_still_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".old.h5.partial");
        let header = SidecarHeader { pid: 7, start_ticks: 0 };
        let mut bytes = header.bytes().to_vec();
        bytes.extend(raw_frame(&run_of("r", &[30, 10], &[1, 0])));
        bytes.extend(raw_frame(&run_of("r", &[20], &[0])));
        fs::write(&path, &bytes).unwrap();
        let recovery = recover_run(&path).unwrap();
        assert_eq!((recovery.frames, recovery.calls, recovery.pid), (2, 3, Some(7)));
        assert_eq!(recovery.run.regions[0].start_ns.values().to_vec(), vec![10, 20, 30]);
        assert!(recovery.stopped.is_none());
        // a compressed frame after them (a sidecar is written by one build; either is read)
        let mut w = SidecarWriter::new(path.clone());
        w.append(&encode_run_compact(&run_of("r", &[40], &[0])), 1, (0, 0)).unwrap();
        let compact = fs::read(&path).unwrap()[HEADER_LEN as usize..].to_vec();
        bytes.extend(compact);
        fs::write(&path, &bytes).unwrap();
        let recovery = recover_run(&path).unwrap();
        assert_eq!(recovery.run.regions[0].start_ns.values().to_vec(), vec![10, 20, 40, 30]);
        assert_eq!(recovery.frames, 3);
    }

    #[test]
    fn frames_cost_about_a_byte_per_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".big.h5.partial");
        let mut w = SidecarWriter::new(path.clone());
        // 200k calls per frame on two threads: 1.5-2 us apart, 0.5-1.5 us long
        let n = 200_000i64;
        for frame in 0..5i64 {
            let starts: Vec<i64> = (0..n).map(|i| (frame * n + i) * 1700 + (i * 7919) % 300).collect();
            let mut row = RegionCalls::new(
                0,
                0,
                Int64Array::from(starts.clone()),
                Int64Array::from(
                    starts.iter().enumerate().map(|(i, s)| s + 500 + (i as i64 * 104_729) % 1000).collect::<Vec<_>>(),
                ),
            );
            row.thread_ids = Some(Int64Array::from((0..n).map(|i| i * 2 / n).collect::<Vec<i64>>()));
            let run = Run { region_names: vec!["r".into()], regions: vec![row], num_ranks: 1, ..Run::default() };
            w.append(&encode_run_compact(&run), n as usize, (2, 0)).unwrap();
        }
        let bytes = fs::metadata(&path).unwrap().len();
        assert!(bytes < 2 * 5 * n as u64, "{bytes} bytes for {} calls", 5 * n);
        assert_eq!(recover_run(&path).unwrap().calls, 5 * n as usize);
    }
}
