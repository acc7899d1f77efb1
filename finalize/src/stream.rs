//! Streaming a recording to a sidecar file (`flush_interval`): a process
//! killed by SIGKILL or the OOM killer loses at most about one interval of calls.
//!
//! Every interval, [`flush`] takes the calls completed since the last flush (the recorder
//! snapshot with a [`Watermark`](scope_profiler_recorder::Watermark)), encodes them with
//! the thread and task tables and the run metadata as one run ([`encode_run`]), appends
//! that as one frame to the sidecar and fsyncs it, and only then retires the calls from the
//! recorder's buffers (a failed append keeps them buffered). Open calls are not flushed;
//! they are taken once they complete. At a normal `finalize()` the sidecar's frames and the
//! calls still buffered make the file ([`crate::checkpoint::checkpoint_with_prior`]); once
//! it is published the sidecar is removed. [`recover`] turns the sidecar of a process that
//! died into the file it did not write.
//!
//! # The sidecar
//! `.<name>.<tag>-<pid>.partial` beside the target
//! ([`working_files::sidecar_path`](scope_profiler_formats::hdf5::working_files::sidecar_path)), so
//! processes writing one path never share a sidecar. Little-endian:
//!
//! ```text
//! header: b"SPSIDE\x01\n"  pid u32  process start ticks u64  crc32(previous 20 bytes) u32
//! frame:  b"SPFR"  payload length u64  crc32(payload) u32  payload (an encode_run run)
//! ```
//!
//! Every frame holds the calls completed since the previous frame (absolute ns on the
//! recording clock, no call ids) and the whole thread and task tables and metadata as of
//! its flush; the last frame's tables are the run's. A reader takes frames up to the first
//! truncated or damaged one ([`read_sidecar`]) and never fails on a torn last frame.
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use arrow_array::Int64Array;
use scope_profiler_analysis::{assign_call_ids, MetaValue, RegionCalls, Run};
use scope_profiler_formats::hdf5::working_files::{self, LeftoverKind};
use scope_profiler_formats::hdf5::write::{publish_h5, WriteFailure};
use scope_profiler_recorder::{Recorder, RegionTable};

use crate::snapshot::{run_from_snapshot, Snapshot, UnknownRegion};
use crate::transport::{decode_run, encode_run};

/// The shortest `flush_interval`, in seconds: each flush takes a snapshot and appends a
/// frame, so an interval of nanoseconds would flush without pause.
pub const MIN_INTERVAL_S: f64 = 0.01;

/// The longest `flush_interval`, in seconds (one day): the sidecar exists so that a crash
/// loses at most one interval, and a longer one is no protection (nor a time the flush
/// thread's timer can always hold).
pub const MAX_INTERVAL_S: f64 = 86_400.0;

/// `seconds` as a `flush_interval`: finite, from [`MIN_INTERVAL_S`] to [`MAX_INTERVAL_S`];
/// else the reason, naming the value (the one rule of the CLI option, the setting and the
/// flusher).
pub fn check_interval(seconds: f64) -> Result<f64, String> {
    if !seconds.is_finite() || seconds <= 0.0 {
        Err(format!("flush_interval must be a positive number of seconds, got {seconds}"))
    } else if seconds < MIN_INTERVAL_S {
        Err(format!(
            "flush_interval must be at least {MIN_INTERVAL_S} s (each flush writes to the sidecar), got {seconds}"
        ))
    } else if seconds > MAX_INTERVAL_S {
        Err(format!("flush_interval must be at most {MAX_INTERVAL_S} s (one day), got {seconds}"))
    } else {
        Ok(seconds)
    }
}

/// First bytes of a sidecar (the byte before `\n` is the format version).
pub const SIDECAR_MAGIC: &[u8; 8] = b"SPSIDE\x01\n";
/// First bytes of every frame.
pub const FRAME_MAGIC: &[u8; 4] = b"SPFR";
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

    /// Append one frame holding `payload` (an encoded run of `calls` calls and `tables`
    /// thread/task rows) and fsync it. On error the sidecar is cut back to its last whole
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

/// Read a sidecar of `len` bytes: the header, then frames up to the first truncated or
/// damaged one (never an error for those: what is intact is returned, `stopped` says why
/// the rest is not).
fn read_frames<R: Read>(mut r: R, len: u64) -> SidecarRead {
    let mut out = SidecarRead::default();
    let mut head = [0u8; HEADER_LEN as usize];
    match read_full(&mut r, &mut head) {
        Ok(n) if n == head.len() => {}
        Ok(n) => {
            out.stopped = Some(format!("the header is truncated ({n} of {HEADER_LEN} bytes)"));
            return out;
        }
        Err(e) => {
            out.stopped = Some(format!("the header could not be read: {e}"));
            return out;
        }
    }
    let Some(header) = SidecarHeader::parse(&head) else {
        out.stopped = Some("not a scope-profiler sidecar (bad or damaged header)".into());
        return out;
    };
    out.header = Some(header);
    let mut pos = HEADER_LEN;
    loop {
        let k = out.frames.len();
        let mut fh = [0u8; FRAME_HEADER_LEN as usize];
        let n = match read_full(&mut r, &mut fh) {
            Ok(n) => n,
            Err(e) => {
                out.stopped = Some(format!("frame {k} could not be read: {e}"));
                break;
            }
        };
        if n == 0 {
            break;
        }
        if n < fh.len() {
            out.stopped = Some(format!("frame {k} is truncated (its header has {n} of {FRAME_HEADER_LEN} bytes)"));
            break;
        }
        if &fh[..4] != FRAME_MAGIC {
            out.stopped = Some(format!("frame {k} is damaged (no frame marker at byte {pos})"));
            break;
        }
        let size = u64::from_le_bytes(fh[4..12].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(fh[12..16].try_into().expect("4 bytes"));
        let left = len.saturating_sub(pos + FRAME_HEADER_LEN);
        if size > left {
            out.stopped = Some(format!("frame {k} is truncated ({left} of {size} bytes)"));
            break;
        }
        let mut payload = vec![0u8; size as usize];
        match read_full(&mut r, &mut payload) {
            Ok(n) if n as u64 == size => {}
            Ok(n) => {
                out.stopped = Some(format!("frame {k} is truncated ({n} of {size} bytes)"));
                break;
            }
            Err(e) => {
                out.stopped = Some(format!("frame {k} could not be read: {e}"));
                break;
            }
        }
        if crc32fast::hash(&payload) != crc {
            out.stopped = Some(format!("frame {k} is damaged (checksum mismatch)"));
            break;
        }
        match decode_run(&payload) {
            Ok(run) => out.frames.push(run),
            Err(e) => {
                out.stopped = Some(format!("frame {k} is damaged ({e})"));
                break;
            }
        }
        pos += FRAME_HEADER_LEN + size;
    }
    out
}

/// Read the sidecar at `path` (see [`read_frames`]: a torn tail is not an error).
///
/// Errors: the file cannot be opened.
pub fn read_sidecar(path: &Path) -> io::Result<SidecarRead> {
    let f = File::open(path)?;
    let len = f.metadata()?.len();
    Ok(read_frames(io::BufReader::new(f), len))
}

/// One region's calls gathered from several runs.
#[derive(Default)]
struct Gathered {
    first: usize,
    starts: Vec<i64>,
    ends: Vec<i64>,
    threads: Option<Vec<i64>>,
    tasks: Option<Vec<i64>>,
    awaits: Option<Vec<i64>>,
    template: Option<RegionCalls>,
}

fn extend_opt(acc: &mut Option<Vec<i64>>, have: usize, col: Option<&Int64Array>, n: usize, fill: i64) {
    match (acc.as_mut(), col) {
        (Some(a), Some(c)) => a.extend_from_slice(c.values()),
        (Some(a), None) => a.resize(have + n, fill),
        (None, Some(c)) => {
            let mut a = vec![fill; have];
            a.extend_from_slice(c.values());
            *acc = Some(a);
        }
        (None, None) => {}
    }
}

/// The calls of rank-0 runs of one recorder, taken at successive moments, as one run:
/// each region's calls concatenated (per region name), ordered by thread and start as a
/// single snapshot would have them; thread and task tables, metadata and `num_ranks` rule
/// of the last part (the latest). Rows are ordered by `region_order` (names, e.g. the
/// region table in id order; unknown names after, in order of appearance) or by
/// appearance. Call ids of the parts are dropped (the caller numbers the whole).
pub fn concat_runs(parts: Vec<Run>, region_order: Option<&[String]>) -> Run {
    let mut names: Vec<String> = Vec::new();
    let mut rows: Vec<Gathered> = Vec::new();
    let mut last = Run::default();
    for part in parts {
        for row in &part.regions {
            let name = &part.region_names[row.region as usize];
            let i = match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    names.push(name.clone());
                    rows.push(Gathered { first: rows.len(), ..Default::default() });
                    rows.len() - 1
                }
            };
            let g = &mut rows[i];
            let (have, n) = (g.starts.len(), row.len());
            g.starts.extend_from_slice(row.start_ns.values());
            g.ends.extend_from_slice(row.end_ns.values());
            extend_opt(&mut g.threads, have, row.thread_ids.as_ref(), n, -1);
            extend_opt(&mut g.tasks, have, row.task_ids.as_ref(), n, -1);
            extend_opt(&mut g.awaits, have, row.await_ns.as_ref(), n, 0);
            if g.template.is_none() {
                g.template = Some(RegionCalls {
                    source_file: row.source_file.clone(),
                    source_line: row.source_line,
                    source_text: row.source_text.clone(),
                    tags: row.tags.clone(),
                    ..RegionCalls::new(0, 0, Int64Array::from(Vec::<i64>::new()), Int64Array::from(Vec::<i64>::new()))
                });
            }
        }
        last = part;
    }
    let position = |name: &str| region_order.and_then(|o| o.iter().position(|n| n == name)).unwrap_or(usize::MAX);
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by_key(|&i| (position(&names[i]), rows[i].first));
    let mut run = Run { threads: last.threads, tasks: last.tasks, metadata: last.metadata, ..Run::default() };
    for i in order {
        let g = std::mem::take(&mut rows[i]);
        let mut perm: Vec<usize> = (0..g.starts.len()).collect();
        perm.sort_by_key(|&k| (g.threads.as_ref().map_or(0, |t| t[k]), g.starts[k]));
        let pick = |v: &[i64]| Int64Array::from(perm.iter().map(|&k| v[k]).collect::<Vec<i64>>());
        let region = run.region_names.len() as u32;
        run.region_names.push(std::mem::take(&mut names[i]));
        let template = g.template.unwrap_or_else(|| {
            RegionCalls::new(0, 0, Int64Array::from(Vec::<i64>::new()), Int64Array::from(Vec::<i64>::new()))
        });
        run.regions.push(RegionCalls {
            thread_ids: g.threads.as_deref().map(pick),
            task_ids: g.tasks.as_deref().map(pick),
            await_ns: g.awaits.as_deref().map(pick),
            ..RegionCalls { region, rank: 0, start_ns: pick(&g.starts), end_ns: pick(&g.ends), ..template }
        });
    }
    let mpi_size = run.meta_int("mpi_size").unwrap_or(1).max(1) as u32;
    run.num_ranks = if run.regions.is_empty() { 0 } else { mpi_size };
    run
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
    let mut job = || sidecar.append(&encode_run(&run), calls, tables);
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
}

/// The run a sidecar holds (see [`Recovery`]).
///
/// Errors: [`RecoverError::Read`] when it cannot be opened, [`RecoverError::Nothing`] when
/// it has no intact frame.
pub fn recover_run(sidecar: &Path) -> Result<Recovery, RecoverError> {
    let read = read_sidecar(sidecar).map_err(|error| RecoverError::Read { path: sidecar.to_path_buf(), error })?;
    if read.frames.is_empty() {
        let why = read.stopped.as_deref().unwrap_or("it holds no frame");
        return Err(RecoverError::Nothing(format!("nothing to recover from {}: {why}", sidecar.display())));
    }
    let (frames, calls) = (read.frames.len(), read.calls());
    let mut run = concat_runs(read.frames, None);
    let name = sidecar.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    run.metadata.retain(|(k, _)| k != "recovered_from");
    run.metadata.push(("recovered_from".into(), MetaValue::Str(name)));
    let warning = if run.regions.is_empty() { None } else { assign_call_ids(&mut run, 0, 0).err().map(|e| e.0) };
    Ok(Recovery {
        sidecar: sidecar.to_path_buf(),
        run,
        pid: read.header.map(|h| h.pid),
        frames,
        calls,
        stopped: read.stopped,
        warning,
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
/// Errors: [`RecoverError::Nothing`] (no such sidecar, its writer is still running, no intact
/// frame), [`RecoverError::Read`], [`RecoverError::Write`].
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
    let recovery = recover_run(&sidecar)?;
    let out = output.unwrap_or(target).to_path_buf();
    publish_h5(&recovery.run, &out)?;
    if output.is_none_or(|o| o == target) {
        let _ = fs::remove_file(&sidecar);
    }
    Ok((recovery, out))
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

    #[test]
    fn flush_intervals_run_from_10_ms_to_one_day() {
        assert_eq!(check_interval(0.01), Ok(0.01));
        assert_eq!(check_interval(86_400.0), Ok(86_400.0));
        assert!(check_interval(0.005).unwrap_err().contains("at least 0.01 s"));
        assert_eq!(
            check_interval(1e20).unwrap_err(),
            "flush_interval must be at most 86400 s (one day), got 100000000000000000000"
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(check_interval(bad).unwrap_err().starts_with("flush_interval must be a positive number"), "{bad}");
        }
    }

    fn run_of(name: &str, starts: &[i64], threads: &[i64]) -> Run {
        let mut row = RegionCalls::new(
            0,
            0,
            Int64Array::from(starts.to_vec()),
            Int64Array::from(starts.iter().map(|s| s + 5).collect::<Vec<_>>()),
        );
        row.thread_ids = Some(Int64Array::from(threads.to_vec()));
        Run { region_names: vec![name.into()], regions: vec![row], num_ranks: 1, ..Run::default() }
    }

    #[test]
    fn concat_orders_by_thread_then_start_and_by_the_given_region_order() {
        let parts = vec![run_of("b", &[30, 10], &[1, 0]), run_of("a", &[1], &[0]), run_of("b", &[20], &[0])];
        let run = concat_runs(parts, Some(&["a".into(), "b".into()]));
        assert_eq!(run.region_names, vec!["a", "b"]);
        assert_eq!(run.regions[1].start_ns.values().to_vec(), vec![10, 20, 30]);
        assert_eq!(run.regions[1].thread_ids.as_ref().unwrap().values().to_vec(), vec![0, 0, 1]);
        assert_eq!(run.regions[1].region, 1);
        let run = concat_runs(vec![run_of("b", &[1], &[0]), run_of("a", &[2], &[0])], None);
        assert_eq!(run.region_names, vec!["b", "a"]);
    }

    #[test]
    fn frames_read_back_up_to_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".x.h5.partial");
        let mut w = SidecarWriter::new(path.clone());
        for k in 0..3 {
            w.append(&encode_run(&run_of("r", &[k], &[0])), 1, (0, 0)).unwrap();
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
}
