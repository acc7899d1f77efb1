//! What a [`NativeRecorder`](super::NativeRecorder) and its regions share: the recorder,
//! the region table, the lazy registration of a recording thread, one checkpoint at a time.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use scope_profiler_recorder::{Recorder, RegionMeta, RegionTable, ThreadInfo, ThreadState};

use super::names::recorded_name;
use super::{stream, ThreadExitSentinel};

/// What a [`NativeRecorder`](super::NativeRecorder) and its regions share.
pub(crate) struct Shared {
    pub(super) rec: Recorder,
    pub(super) regions: RegionTable,
    /// A `threading.local()`: holds each registered thread's [`ThreadExitSentinel`].
    pub(super) local: Py<PyAny>,
    /// Called (no arguments) on a thread right after it registered lazily (the greenlet
    /// hooks use it to follow that thread's switches too).
    pub(super) on_register: Mutex<Option<Py<PyAny>>>,
    /// A checkpoint is running (set and cleared with the GIL held; see [`Shared::checkpoint_turn`]).
    pub(super) checkpointing: AtomicBool,
    /// A thread or task name with NUL was escaped and warned about ([`recorded_name`]).
    pub(crate) nul_warned: AtomicBool,
    /// `flush_interval`: the sidecar and its flusher thread ([`stream`]).
    pub(super) stream: stream::Stream,
    /// The calls the last checkpoint took without retiring them (`rewind=False`), for
    /// [`NativeRecorder::retire_taken`] once they are written elsewhere.
    pub(super) taken: Mutex<Option<(scope_profiler_recorder::Watermark, usize)>>,
    /// Exited `ProfileManager.metadata()` scopes, applied to the calls at each checkpoint.
    pub(super) metadata_scopes: scope_profiler_finalize::MetadataScopes,
}

/// Held while a checkpoint runs; clears [`Shared::checkpointing`] when dropped.
pub(super) struct CheckpointTurn<'a>(&'a AtomicBool);

impl Drop for CheckpointTurn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Shared {
    /// The calling thread's state, registering the thread on first use (slow path: with
    /// tracking it reads `threading.current_thread()` and parks the exit sentinel).
    #[inline]
    pub(super) fn state(&self, py: Python<'_>) -> PyResult<*const ThreadState> {
        match self.rec.local() {
            Some(p) => Ok(p),
            None => self.register_current(py),
        }
    }

    #[cold]
    pub(super) fn register_current(&self, py: Python<'_>) -> PyResult<*const ThreadState> {
        if !self.rec.tracking() {
            let (state, _) = self.rec.register_current_thread(ThreadInfo::default());
            // The thread-local list keeps an Arc, so the pointer outlives this call.
            return Ok(Arc::as_ptr(&state));
        }
        let threading = py.import("threading")?;
        let t = threading.call_method0("current_thread")?;
        let int_attr = |name: &str| -> i64 {
            t.getattr(name).ok().and_then(|v| v.extract::<Option<i64>>().ok()).flatten().unwrap_or(0)
        };
        // The OS's id of this thread, not the Thread object's: a thread made outside
        // `threading` (`_thread.start_new_thread`, C code) whose ident the OS reused gets
        // the stale `_DummyThread` of the thread that had it before, whose name
        // then says which thread this is. (A real Thread's native_id can also be stale for
        // a moment - in a forked child before threading's own fork handler runs - but its
        // name is right.)
        let native_id: i64 = threading.call_method0("get_native_id")?.extract()?;
        let mut name = t.getattr("name")?.str()?.to_string();
        let object_native_id = int_attr("native_id");
        let dummy = t.is_instance(&threading.getattr("_DummyThread")?)?;
        if dummy && object_native_id != 0 && object_native_id != native_id {
            name = format!("{name} (native id {native_id})");
        }
        let info = ThreadInfo {
            ident: int_attr("ident"),
            native_id,
            name: recorded_name(py, "thread", name, &self.nul_warned)?,
            daemon: t.getattr("daemon")?.is_truthy()?,
        };
        let (state, created) = self.rec.register_current_thread(info);
        if created {
            if let Some(record) = state.record() {
                let sentinel = Py::new(py, ThreadExitSentinel { record: Arc::clone(record) })?;
                self.local.bind(py).setattr("sentinel", sentinel)?;
            }
            let callback = self.on_register.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|c| c.clone_ref(py));
            if let Some(cb) = callback {
                if let Err(e) = cb.call0(py) {
                    e.write_unraisable(py, Some(cb.bind(py)));
                }
            }
        }
        Ok(Arc::as_ptr(&state))
    }

    /// Wait (GIL released) until no other thread runs a checkpoint of this recorder, then
    /// take the turn. The flag only changes with the GIL held, so check-and-set is atomic.
    pub(super) fn checkpoint_turn(&self, py: Python<'_>) -> CheckpointTurn<'_> {
        while self.checkpointing.swap(true, Ordering::AcqRel) {
            py.detach(|| {
                while self.checkpointing.load(Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            });
        }
        CheckpointTurn(&self.checkpointing)
    }

    pub(super) fn meta(&self) -> std::sync::MutexGuard<'_, Vec<RegionMeta>> {
        self.regions.lock()
    }
}
