//! `flush_interval`: a background thread appends the completed calls to
//! a sidecar file every interval ([`scope_profiler_finalize::stream`]), so a process killed
//! by SIGKILL or the OOM killer loses at most about one interval; `finalize()` reads the
//! sidecar back into its run and removes it once the file is published.
//!
//! The flusher is a Rust thread (OS name `sp-flush`), not a `threading.Thread`: it must not
//! appear in the thread table it writes. Each flush attaches to the interpreter
//! ([`Python::try_attach`]; none once it is shutting down), takes the checkpoint turn
//! ([`Shared::checkpoint_turn`]: flushes and finalizes never overlap), snapshots with the
//! GIL held, encodes and appends with it released, and retires with it held again.
//!
//! A forked child inherits the parent's stream state but not its thread: every operation
//! first checks that this process owns the stream ([`Stream::mine`]), so a child never
//! touches the parent's sidecar or waits on a lock the parent's flusher held at the fork.
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_finalize::stream::{flush, Flushed, SidecarWriter};
use scope_profiler_formats::hdf5::working_files::sidecar_path;

use super::{to_meta_value, Shared};

/// The streaming state of one recorder (a field of [`Shared`]).
#[derive(Default)]
pub(crate) struct Stream {
    /// The process that streams (0 = none): only it touches the state.
    owner: AtomicU32,
    state: Mutex<Option<StreamState>>,
    flusher: Mutex<Option<Flusher>>,
}

struct StreamState {
    writer: SidecarWriter,
    metadata: Vec<(String, MetaValue)>,
    origin_ns: i64,
    /// A failed append was warned about (once per stream, until one succeeds again).
    warned: bool,
}

struct Flusher {
    pid: u32,
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Stream {
    fn mine(&self) -> bool {
        let owner = self.owner.load(Ordering::Acquire);
        owner != 0 && owner == std::process::id()
    }

    /// The state, if this process streams. Callers hold the checkpoint turn, so the lock is
    /// never contended while the GIL is held.
    fn state(&self) -> Option<MutexGuard<'_, Option<StreamState>>> {
        self.mine().then(|| lock(&self.state))
    }
}

/// Start streaming the recorder's calls to the sidecar of `target` every `interval`
/// seconds (a running flusher is replaced). Returns the sidecar's path.
pub(crate) fn start(
    shared: &Arc<Shared>,
    py: Python<'_>,
    target: PathBuf,
    interval: f64,
    metadata: &Bound<'_, PyDict>,
    origin_ns: i64,
) -> PyResult<PathBuf> {
    let every = scope_profiler_finalize::stream::interval_duration(interval)
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    let mut meta = Vec::with_capacity(metadata.len());
    for (k, v) in metadata.iter() {
        meta.push((k.str()?.to_string(), to_meta_value(&v)?));
    }
    stop(shared, py);
    let pid = std::process::id();
    let path = sidecar_path(&target, pid);
    {
        let _turn = shared.checkpoint_turn(py);
        let mut st = lock(&shared.stream.state);
        let keep = st.as_ref().is_some_and(|s| shared.stream.mine() && s.writer.path() == path);
        if !keep {
            *st = Some(StreamState {
                writer: SidecarWriter::new(path.clone()),
                metadata: meta,
                origin_ns,
                warned: false,
            });
        } else if let Some(s) = st.as_mut() {
            s.metadata = meta;
            s.origin_ns = origin_ns;
        }
        shared.stream.owner.store(pid, Ordering::Release);
    }
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let weak: Weak<Shared> = Arc::downgrade(shared);
    let signal = Arc::clone(&stop);
    let handle = std::thread::Builder::new()
        .name("sp-flush".into())
        .spawn(move || flusher_loop(weak, signal, every))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("could not start the flush thread: {e}")))?;
    *lock(&shared.stream.flusher) = Some(Flusher { pid, stop, handle });
    Ok(path)
}

fn flusher_loop(shared: Weak<Shared>, stop: Arc<(Mutex<bool>, Condvar)>, every: Duration) {
    let (flag, cv) = &*stop;
    loop {
        let guard = lock(flag);
        let (guard, _) = cv.wait_timeout_while(guard, every, |stopped| !*stopped).unwrap_or_else(|e| e.into_inner());
        if *guard {
            return;
        }
        drop(guard);
        let went_on = Python::try_attach(|py| {
            let Some(sh) = shared.upgrade() else { return false };
            if let Err(e) = flush_now(&sh, py) {
                e.write_unraisable(py, None);
            }
            true
        });
        if went_on != Some(true) {
            return; // the recorder is gone, or the interpreter is shutting down
        }
    }
}

/// One flush now: append the calls completed since the last one. Returns how many were
/// flushed (0: nothing new, or no stream in this process). A failed append warns once
/// (`RuntimeWarning`) and keeps the calls buffered.
pub(crate) fn flush_now(shared: &Shared, py: Python<'_>) -> PyResult<usize> {
    if !shared.stream.mine() {
        return Ok(0);
    }
    let _turn = shared.checkpoint_turn(py);
    let Some(mut guard) = shared.stream.state() else { return Ok(0) };
    let Some(st) = guard.as_mut() else { return Ok(0) };
    let mut metadata = st.metadata.clone();
    metadata.retain(|(k, _)| k != "finalize_time_ns");
    metadata.push(("finalize_time_ns".into(), MetaValue::Int(scope_profiler_recorder::now_ns())));
    // SAFETY: GIL held for the snapshot and the retire (module contract), released only for
    // the encoding and the append, which do not touch the recorder; `_turn` keeps other
    // checkpoints and flushes out meanwhile.
    let outcome =
        unsafe { flush(&shared.rec, &shared.regions, st.origin_ns, metadata, &mut st.writer, |job| py.detach(job)) };
    match outcome {
        Ok(Flushed::Frame { calls }) => {
            st.warned = false;
            Ok(calls)
        }
        Ok(Flushed::Nothing) => Ok(0),
        Err(e) => {
            if !std::mem::replace(&mut st.warned, true) {
                let msg = format!("scope-profiler flush_interval: {e}; the calls stay buffered for the next flush");
                let msg = std::ffi::CString::new(msg).unwrap_or_default();
                PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &msg, 0)?;
            }
            Ok(0)
        }
    }
}

/// End the flusher thread (the sidecar and its frames stay for `finalize()`).
pub(crate) fn stop(shared: &Shared, py: Python<'_>) {
    let Some(f) = lock(&shared.stream.flusher).take() else { return };
    if f.pid != std::process::id() {
        return; // the parent's thread, not in this (forked) process
    }
    {
        let (flag, cv) = &*f.stop;
        *lock(flag) = true;
        cv.notify_all();
    }
    // the thread may be waiting for the GIL or the checkpoint turn: wait with neither held
    let handle = f.handle;
    let _ = py.detach(move || handle.join());
}

/// Stop and forget the stream, removing its sidecar: the run is discarded (`reset()`, a
/// new `setup()`). A forked child only forgets it.
pub(crate) fn discard(shared: &Shared, py: Python<'_>) {
    stop(shared, py);
    if !shared.stream.mine() {
        shared.stream.owner.store(0, Ordering::Release);
        return;
    }
    let _turn = shared.checkpoint_turn(py);
    if let Some(mut st) = shared.stream.state() {
        if let Some(s) = st.as_mut() {
            s.writer.remove();
        }
        *st = None;
    }
    shared.stream.owner.store(0, Ordering::Release);
}

/// The sidecar's path, while this process streams.
pub(crate) fn path(shared: &Shared) -> Option<String> {
    let st = shared.stream.state()?;
    st.as_ref().map(|s| s.writer.path().to_string_lossy().into_owned())
}

/// For `finalize()`, holding the checkpoint turn: the runs flushed since the last
/// checkpoint (read back with the GIL released). A damaged frame ends what is read.
pub(crate) fn prior(shared: &Shared, py: Python<'_>) -> PyResult<Vec<Run>> {
    let Some(mut guard) = shared.stream.state() else { return Ok(Vec::new()) };
    let Some(st) = guard.as_mut() else { return Ok(Vec::new()) };
    if st.writer.frames() == 0 {
        return Ok(Vec::new());
    }
    let shown = st.writer.path().display().to_string();
    let writer = &mut st.writer;
    let read = py
        .detach(|| writer.read_back())
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("could not read back {shown}: {e}")))?;
    Ok(read.frames)
}

/// After `finalize()` published the file (holding the checkpoint turn): the sidecar's calls
/// are in it, so the sidecar goes; the next flush starts a new one.
pub(crate) fn published(shared: &Shared) {
    if let Some(mut st) = shared.stream.state() {
        if let Some(s) = st.as_mut() {
            s.writer.remove();
        }
    }
}
