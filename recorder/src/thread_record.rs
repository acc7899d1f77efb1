//! The thread table: a thread's identity at registration ([`ThreadInfo`]), its row while
//! it runs ([`ThreadRecord`]: end and CPU time updated after registration) and as plain
//! values ([`ThreadRowData`]).
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::task::READY_UNKNOWN;
use crate::{now_ns, thread_cpu_ns, UNKNOWN};

/// Identity of a thread at registration, supplied by the caller (Python's `threading`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadInfo {
    pub ident: i64,
    pub native_id: i64,
    pub name: String,
    pub daemon: bool,
}

/// One row of the thread table. `end_ns`/`cpu_ns` are updated after registration (CPU
/// sampling on the hot path, the exit hook on the dying thread) and are atomics.
#[derive(Debug)]
pub struct ThreadRecord {
    pub index: usize,
    pub info: ThreadInfo,
    /// Registration time, absolute ns ([`now_ns`]); for the thread that marked the run's
    /// start ([`Recorder::mark_start_thread`](crate::Recorder::mark_start_thread)), that moment.
    pub start_ns: i64,
    /// The thread's CPU clock at `start_ns`, ns: `cpu_ns - cpu_start_ns` is the CPU burned
    /// since then (during the run).
    pub cpu_start_ns: i64,
    pub(crate) end_ns: AtomicI64,
    pub(crate) cpu_ns: AtomicI64,
    /// CPU ns added to every reading: the pre-fork total of a thread that continues in a
    /// forked child (whose CPU clock restarts at 0). 0 otherwise. See [`fork`].
    pub(crate) cpu_base: AtomicI64,
    /// OS thread id after a fork (the continuing thread's id changes); 0 = `info.native_id`.
    pub(crate) native_id_now: AtomicI64,
    /// The union of the ready waits of the task steps run on this thread (the stretches in
    /// which some task was ready but the thread ran other code); written by this thread only.
    pub(crate) ready_union: UnsafeCell<crate::event_loop::UnionOfIntervals>,
    /// Its total for readers: [`UNKNOWN`] before the first task step with a known ready
    /// moment, [`READY_UNKNOWN`] once a step's ready moment was not known.
    pub(crate) ready_wait_ns: AtomicI64,
    /// ns an event loop run on this thread waited with nothing ready ([`UNKNOWN`]: no
    /// instrumented loop ran here); written by this thread only.
    pub(crate) loop_idle_ns: AtomicI64,
}

// SAFETY: `ready_union` is touched only by the thread the record describes
// ([`ThreadRecord::task_resumed`]); every other field is immutable or atomic.
unsafe impl Sync for ThreadRecord {}

impl ThreadRecord {
    /// A task step starts on this thread (called on it) after waiting ready `[from, to)`,
    /// `None` when its ready moment is not known.
    #[inline]
    pub fn task_resumed(&self, wait: Option<(i64, i64)>) {
        let total = self.ready_wait_ns.load(Ordering::Relaxed);
        if total == READY_UNKNOWN {
            return;
        }
        let Some((from, to)) = wait else {
            self.ready_wait_ns.store(READY_UNKNOWN, Ordering::Relaxed);
            return;
        };
        // SAFETY: called by the thread this record describes, the only one touching it.
        let union = unsafe { &mut *self.ready_union.get() };
        union.add(from, to);
        self.ready_wait_ns.store(union.total(), Ordering::Relaxed);
    }

    /// ns in which some task resumed on this thread was ready to but waited (the union of
    /// their ready waits); [`UNKNOWN`] when no task step ran here or a ready moment was not
    /// known.
    pub fn ready_wait_ns(&self) -> i64 {
        match self.ready_wait_ns.load(Ordering::Relaxed) {
            READY_UNKNOWN => UNKNOWN,
            v => v,
        }
    }

    /// An instrumented event loop runs on this thread (called on it): its idle time is
    /// known from now, 0 until the loop first waits with nothing ready.
    #[inline]
    pub fn loop_runs(&self) {
        if self.loop_idle_ns.load(Ordering::Relaxed) == UNKNOWN {
            self.loop_idle_ns.store(0, Ordering::Relaxed);
        }
    }

    /// An instrumented event loop on this thread (called on it) waited `ns` with nothing
    /// ready to run: its `select` (asyncio) or I/O wait (trio) with a timeout, up to the
    /// moment it looked at what became ready.
    #[inline]
    pub fn loop_idled(&self, ns: i64) {
        let total = self.loop_idle_ns.load(Ordering::Relaxed).max(0);
        self.loop_idle_ns.store(total + ns.max(0), Ordering::Relaxed);
    }

    /// ns the event loops run on this thread waited with nothing ready; [`UNKNOWN`] when no
    /// instrumented loop ran here.
    pub fn loop_idle_ns(&self) -> i64 {
        self.loop_idle_ns.load(Ordering::Relaxed)
    }

    /// Thread end, absolute ns; [`UNKNOWN`] while alive.
    pub fn end_ns(&self) -> i64 {
        self.end_ns.load(Ordering::Acquire)
    }
    /// Latest CPU reading of the thread, ns.
    pub fn cpu_ns(&self) -> i64 {
        self.cpu_ns.load(Ordering::Relaxed)
    }
    pub fn alive(&self) -> bool {
        self.end_ns() == UNKNOWN
    }
    /// Refresh `cpu_ns`. Only meaningful on the thread this record describes.
    #[inline]
    pub fn sample_cpu(&self) {
        self.cpu_ns.store(self.cpu_base.load(Ordering::Relaxed) + thread_cpu_ns(), Ordering::Relaxed);
    }
    /// Called on the dying thread itself: take its exact CPU total and end time.
    pub fn mark_exited(&self) {
        self.cpu_ns.store(self.cpu_base.load(Ordering::Relaxed) + thread_cpu_ns(), Ordering::Relaxed);
        self.end_ns.store(now_ns(), Ordering::Release);
    }
}

/// A thread-table row as plain values, timestamps relative to an origin (`-1` kept).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRowData {
    pub index: i64,
    pub info: ThreadInfo,
    pub start_ns: i64,
    pub end_ns: i64,
    pub cpu_ns: i64,
    /// CPU ns at registration (see [`ThreadRecord::cpu_start_ns`]).
    pub cpu_start_ns: i64,
    /// ns the thread spent inside task steps (asyncio tasks, greenlets) so far, outermost
    /// steps only ([`ThreadState::begin_step`](crate::ThreadState::begin_step)).
    pub task_step_ns: i64,
    /// See [`ThreadRecord::ready_wait_ns`].
    pub ready_wait_ns: i64,
    /// See [`ThreadRecord::loop_idle_ns`].
    pub loop_idle_ns: i64,
}
