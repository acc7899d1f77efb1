//! Hot-path event recorder of scope-profiler: per-thread buffers, scope stacks and the
//! thread table. No Python, no Arrow.
//!
//! # Model
//! A [`Recorder`] belongs to one profiling configuration (one `setup()`). Regions are
//! numbered densely by the caller (`u32` ids, registration order; [`RegionTable`] maps
//! an id to its name, tags and source). Every OS thread that
//! records gets its own [`ThreadState`]: per region a buffer of `starts`/`ends` (an end of
//! `0` means "still open"), and one stack of its open calls, `(region, reserved slot)`
//! (slot `-1` = entered while paused). Entering a region reserves a slot, pushes it on the
//! calling thread's stack and reads the clock last; exiting reads the clock first, removes
//! the innermost entry of that region (the top, unless exits cross) and writes the end. So
//! concurrent threads never share a slot or a stack, whether or not threads are tracked.
//!
//! With tracking ([`Recorder::new`] `tracking = true`) each thread state carries a
//! [`ThreadRecord`] (a row of the thread table) and its index is the thread id stored
//! per call. Without tracking the states exist all the same (the index only orders the
//! snapshot) but no thread column is meant to be written.
//!
//! # Task lanes
//! With [`Recorder::with_tasks`] (`track_async`) calls also carry a task id and an await
//! time. A thread state's `current` pointer names the task running a step on it (set by
//! the step timer / greenlet switch, [`ThreadState::set_current`]); while it is set, enter
//! pushes onto that task's own lane stack ([`TaskRecord`]) and exit pops from it, so tasks
//! interleaved on one thread close their own scopes. The slot itself is still reserved in
//! the entering thread's buffer (snapshot order is per thread, as the reference's). The
//! hot path stays lock-free and allocation-free (one pointer read decides the lane).
//!
//! # Finding the calling thread's state
//! A `thread_local!` list maps recorder id -> this thread's [`ThreadState`] (usually one
//! entry). [`Recorder::local`] is a scan of that list: no lock, no atomic RMW, no
//! allocation. Registration ([`Recorder::register_current_thread`]) takes the recorder's
//! registry mutex once per (thread, recorder).
//!
//! # Synchronization contract
//! A thread's buffers are written only by that thread, through [`ThreadState::enter`] /
//! [`ThreadState::exit`], without any lock. Readers on other threads
//! ([`Recorder::snapshot`], [`Recorder::mark_written`], [`Recorder::num_calls`]) are
//! `unsafe`: the caller guarantees that no thread is inside `enter`/`exit` of the same
//! recorder at the same time and that those calls happen-before the read. The Python
//! glue satisfies this with the GIL (every `enter`/`exit` and every reader runs while
//! holding it and never releases it inside); the crate tests satisfy it with `join()`.
//! Thread-table fields that change after registration (`end_ns`, `cpu_ns`) are atomics,
//! since they are written from the dying thread's exit hook.
//!
//! # Checkpoints
//! [`Recorder::snapshot`] copies completed calls only (grouped by thread index ascending,
//! each thread in entry order); open calls stay. [`Recorder::mark_written`] (after a
//! written finalize) rewinds every buffer: completed slots are dropped and the open ones
//! are moved to the front with their stack entries remapped, so the next snapshot reports
//! each call exactly once. A checkpoint whose write happens while recording goes on takes
//! a [`Watermark`] with its snapshot and [`Recorder::retire`]s only those calls, and only
//! once the file is written: a failed write leaves every call buffered for a retry.
//!
//! # Files
//! `thread_state` (the per-thread buffers and the enter/exit hot path), `thread_record`
//! (the thread table), `task` (task lanes), `regions` (the region table), `snapshot`
//! (copying completed calls out), `watermark` (retiring what a checkpoint wrote),
//! `open_calls` (the calls open now), `fork` (a recorder inherited by a forked child),
//! `clock`, and the rules of function-level tracing (`trace_select`, `trace_decision`,
//! `trace_notes`, `monitoring_tool`, `instrument`). This file holds the [`Recorder`] itself: its threads' registration, its
//! tables and its counters.
pub mod clock;
pub mod event_loop;
pub mod fork;
pub mod hub_steps;
pub mod instrument;
pub mod monitoring_tool;
mod open_calls;
pub mod regions;
mod snapshot;
pub mod task;
pub mod task_step;
mod thread_record;
mod thread_state;
pub mod trace_decision;
pub mod trace_notes;
pub mod trace_select;
mod watermark;

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub use clock::{now_ns, thread_cpu_ns};
pub use open_calls::OpenCall;
pub use regions::{RegionMeta, RegionTable};
pub use snapshot::{RegionColumns, SNAPSHOT_JOB_CALLS};
pub use task::{TaskKind, TaskRecord, TaskRowData};
pub use task_step::TaskStep;
pub use thread_record::{ThreadInfo, ThreadRecord, ThreadRowData};
pub use thread_state::{ThreadState, FIRST_SLOTS};
pub use watermark::Watermark;

/// Value of `end_ns` while a thread is alive / unknown.
pub const UNKNOWN: i64 = -1;
/// A still-running thread refreshes its CPU time at exit of slots with `slot & MASK == 0`.
pub const CPU_SAMPLE_MASK: usize = 0xFF;

struct LocalEntry {
    recorder: u64,
    alive: Weak<()>,
    state: Arc<ThreadState>,
}

thread_local! {
    static LOCAL: UnsafeCell<Vec<LocalEntry>> = const { UnsafeCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The recorder of one profiling configuration. See the crate docs.
pub struct Recorder {
    id: u64,
    buffer_limit: usize,
    tracking: bool,
    async_cols: bool,
    tasks: Mutex<Vec<Arc<TaskRecord>>>,
    paused: AtomicBool,
    /// Placeholders pushed before [`Recorder::stop`] (all threads): set once stopped.
    stopped_at: Mutex<Option<u64>>,
    stopped: AtomicBool,
    alive: Arc<()>,
    states: Mutex<Vec<Arc<ThreadState>>>,
    /// The thread that started the run (`setup()`): its id, the clock and its CPU clock then.
    start_thread: Mutex<Option<(std::thread::ThreadId, i64, i64)>>,
    /// Event-loop blocks (`track_async`).
    loop_blocks: event_loop::BlockLog,
}

impl Recorder {
    /// `buffer_limit`: per-(region, thread) capacity grown to by doubling from
    /// [`FIRST_SLOTS`] (and doubled on beyond it).
    /// `tracking`: keep a thread table (`track_threads`).
    pub fn new(buffer_limit: usize, tracking: bool) -> Self {
        Self::with_tasks(buffer_limit, tracking, false)
    }

    /// As [`Recorder::new`]; `async_cols`: record a task id and await time per call
    /// (`track_async`; implies a thread table).
    pub fn with_tasks(buffer_limit: usize, tracking: bool, async_cols: bool) -> Self {
        Recorder {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            buffer_limit: buffer_limit.max(1),
            tracking: tracking || async_cols,
            async_cols,
            tasks: Mutex::new(Vec::new()),
            paused: AtomicBool::new(false),
            stopped_at: Mutex::new(None),
            stopped: AtomicBool::new(false),
            alive: Arc::new(()),
            states: Mutex::new(Vec::new()),
            start_thread: Mutex::new(None),
            loop_blocks: event_loop::BlockLog::default(),
        }
    }

    /// The event-loop blocks recorded on this recorder's threads.
    pub fn loop_blocks(&self) -> &event_loop::BlockLog {
        &self.loop_blocks
    }

    /// Note the calling thread as the one that started the run (`setup()`), with the clock
    /// and its CPU clock now: when it registers (lazily, at its first region), its row
    /// starts here instead, so its wall and CPU time cover the run from its start (not its
    /// whole life's CPU time, nor an unknown wall time). Marking again
    /// moves the mark. Returns the moment, ns on the recording clock (`CLOCK_MONOTONIC`): the
    /// run's origin, so that the thread starts exactly with the run (taken before the
    /// metadata and the recorder, the origin would be ~60-100 ms earlier).
    pub fn mark_start_thread(&self) -> i64 {
        let at = now_ns();
        *self.start_thread.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((std::thread::current().id(), at, thread_cpu_ns()));
        at
    }

    pub fn tracking(&self) -> bool {
        self.tracking
    }
    /// Whether calls carry task ids and await times.
    pub fn async_columns(&self) -> bool {
        self.async_cols
    }

    /// Register a task lane (cold path: takes the registry lock). `thread_index` is the
    /// creating thread's index (-1 if unknown).
    pub fn new_task(&self, kind: TaskKind, name: String, coro_name: String, thread_index: i64) -> Arc<TaskRecord> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        let rec = Arc::new(TaskRecord::new(tasks.len(), kind, name, coro_name, thread_index));
        tasks.push(rec.clone());
        rec
    }

    /// Every task lane registered so far, index order.
    pub fn task_records(&self) -> Vec<Arc<TaskRecord>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The task table with timestamps relative to `origin_ns` (`-1` kept).
    pub fn task_rows(&self, origin_ns: i64) -> Vec<TaskRowData> {
        self.task_records()
            .iter()
            .map(|t| {
                let done = t.done_ns();
                TaskRowData {
                    index: t.index as i64,
                    kind: t.kind.as_str(),
                    name: t.name(),
                    coro_name: t.coro_name(),
                    thread_index: t.thread_index(),
                    created_ns: t.created_ns - origin_ns,
                    done_ns: if done == UNKNOWN { UNKNOWN } else { done - origin_ns },
                    steps: t.steps(),
                    running_ns: t.running_ns(),
                    suspended_ns: t.suspended_ns(),
                    ready_wait_ns: match t.ready_wait_ns() {
                        task::READY_UNKNOWN => UNKNOWN,
                        v => v,
                    },
                }
            })
            .collect()
    }
    pub fn buffer_limit(&self) -> usize {
        self.buffer_limit
    }
    #[inline]
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
    /// Pause or resume; a stopped recorder stays paused.
    pub fn set_paused(&self, paused: bool) {
        if paused || !self.stopped() {
            self.paused.store(paused, Ordering::Relaxed)
        }
    }

    /// Stop recording for good (the recording's last checkpoint is under way): from now on
    /// entries push placeholders, as paused, and [`Recorder::calls_since_stop`] counts them.
    /// Calls open now still close. Stopping again changes nothing.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`] (it reads every thread's count of placeholders).
    pub unsafe fn stop(&self) {
        let mut stopped = self.stopped_at.lock().unwrap_or_else(|e| e.into_inner());
        if stopped.is_none() {
            *stopped = Some(self.placeholders());
            self.stopped.store(true, Ordering::Relaxed);
            self.paused.store(true, Ordering::Relaxed);
        }
    }

    /// Whether [`Recorder::stop`] was called.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Calls entered on any thread since [`Recorder::stop`] (none recorded); None before it.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn calls_since_stop(&self) -> Option<u64> {
        let at = (*self.stopped_at.lock().unwrap_or_else(|e| e.into_inner()))?;
        Some(self.placeholders() - at)
    }

    /// Placeholders pushed so far, all threads (caller upholds the snapshot contract).
    unsafe fn placeholders(&self) -> u64 {
        self.states().iter().map(|st| st.placeholders.get()).sum()
    }

    /// The calling thread's state for this recorder, if it has registered. Lock-free.
    /// The pointer stays valid while the calling thread runs (its thread-local list holds
    /// an `Arc`, and entries of a live recorder are never removed).
    #[inline]
    pub fn local(&self) -> Option<*const ThreadState> {
        LOCAL
            .try_with(|l| {
                // SAFETY: the list is only touched by this thread, never re-entrantly.
                let v = unsafe { &*l.get() };
                for e in v.iter() {
                    if e.recorder == self.id {
                        return Some(Arc::as_ptr(&e.state));
                    }
                }
                None
            })
            .ok()
            .flatten()
    }

    /// Register the calling thread (idempotent): create its state and, with tracking, its
    /// thread-table row (start = now, CPU sampled now). `info` is ignored without tracking.
    /// Returns the state and whether it was created by this call.
    pub fn register_current_thread(&self, info: ThreadInfo) -> (Arc<ThreadState>, bool) {
        if let Some(existing) = self.local_arc() {
            return (existing, false);
        }
        let state = {
            let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
            let index = states.len();
            let record = self.tracking.then(|| {
                let cpu = thread_cpu_ns();
                let (start_ns, cpu_start_ns) = match *self.start_thread.lock().unwrap_or_else(|e| e.into_inner()) {
                    Some((id, at, cpu_then)) if id == std::thread::current().id() => (at, cpu_then),
                    _ => (now_ns(), cpu),
                };
                Arc::new(ThreadRecord {
                    index,
                    info,
                    start_ns,
                    cpu_start_ns,
                    end_ns: AtomicI64::new(UNKNOWN),
                    cpu_ns: AtomicI64::new(cpu),
                    cpu_base: AtomicI64::new(0),
                    native_id_now: AtomicI64::new(0),
                    ready_union: UnsafeCell::new(event_loop::UnionOfIntervals::default()),
                    ready_wait_ns: AtomicI64::new(UNKNOWN),
                    loop_idle_ns: AtomicI64::new(UNKNOWN),
                })
            });
            let state = Arc::new(ThreadState {
                index,
                buffer_limit: self.buffer_limit,
                async_cols: self.async_cols,
                record,
                regions: UnsafeCell::new(Vec::new()),
                bare: UnsafeCell::new(Vec::with_capacity(16)),
                current: Cell::new(std::ptr::null()),
                placeholders: Cell::new(0),
                task_steps: AtomicI64::new(0),
                step_depth: Cell::new(0),
                step_since: Cell::new(0),
            });
            states.push(state.clone());
            state
        };
        let entry = LocalEntry { recorder: self.id, alive: Arc::downgrade(&self.alive), state: state.clone() };
        let _ = LOCAL.try_with(|l| {
            // SAFETY: only this thread touches its list.
            let v = unsafe { &mut *l.get() };
            // Forget states of recorders that no longer exist (earlier setups).
            v.retain(|e| e.alive.strong_count() > 0);
            v.push(entry);
        });
        (state, true)
    }

    fn local_arc(&self) -> Option<Arc<ThreadState>> {
        LOCAL
            .try_with(|l| {
                let v = unsafe { &*l.get() };
                v.iter().find(|e| e.recorder == self.id).map(|e| e.state.clone())
            })
            .ok()
            .flatten()
    }

    /// Number of thread states (= thread-table rows with tracking).
    pub fn num_threads(&self) -> usize {
        self.states.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn states(&self) -> Vec<Arc<ThreadState>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Thread records (tracking only), index order.
    pub fn thread_records(&self) -> Vec<Arc<ThreadRecord>> {
        self.states().iter().filter_map(|s| s.record.clone()).collect()
    }

    /// Refresh the CPU reading of the calling thread's record (if registered and tracked).
    pub fn sample_current_thread_cpu(&self) {
        if let Some(p) = self.local() {
            // SAFETY: pointer from `local`, valid on this thread.
            if let Some(r) = unsafe { &*p }.record() {
                r.sample_cpu();
            }
        }
    }

    /// The thread table with timestamps relative to `origin_ns` (`-1` kept). Re-samples the
    /// calling thread's CPU first. Empty without tracking.
    pub fn thread_rows(&self, origin_ns: i64) -> Vec<ThreadRowData> {
        self.sample_current_thread_cpu();
        self.states()
            .iter()
            .filter_map(|st| st.record.as_ref().map(|r| (st, r)))
            .map(|(st, r)| {
                let end = r.end_ns();
                ThreadRowData {
                    index: r.index as i64,
                    info: ThreadInfo { native_id: r.native_id(), ..r.info.clone() },
                    start_ns: r.start_ns - origin_ns,
                    end_ns: if end == UNKNOWN { UNKNOWN } else { end - origin_ns },
                    cpu_ns: r.cpu_ns(),
                    cpu_start_ns: r.cpu_start_ns,
                    task_step_ns: st.task_steps.load(Ordering::Relaxed),
                    ready_wait_ns: r.ready_wait_ns(),
                    loop_idle_ns: r.loop_idle_ns(),
                }
            })
            .collect()
    }

    /// Whether any thread holds a completed call not yet retired (what [`Recorder::snapshot`]
    /// would copy), found without copying: stops at the first one.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn has_completed_calls(&self) -> bool {
        self.states().iter().any(|st| (&*st.regions.get()).iter().any(|b| b.calls.iter().any(|c| c[1] != 0)))
    }

    /// Calls of `region` entered over the process lifetime, open ones included, all threads.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn num_calls(&self, region: u32) -> u64 {
        self.states()
            .iter()
            .map(|st| {
                let regions = &*st.regions.get();
                regions.get(region as usize).map_or(0, |b| b.retired + b.calls.len() as u64)
            })
            .sum()
    }

    /// Thread indices that have entered `region` (ascending).
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn threads_of_region(&self, region: u32) -> Vec<usize> {
        self.states()
            .iter()
            .filter(|st| {
                let regions = &*st.regions.get();
                regions.get(region as usize).is_some_and(|b| b.retired > 0 || !b.calls.is_empty())
            })
            .map(|st| st.index)
            .collect()
    }
}

/// Convenience for callers and tests: the calling thread's state, registering it (with
/// default identity) if needed.
pub fn local_or_register(rec: &Recorder, info: impl FnOnce() -> ThreadInfo) -> *const ThreadState {
    match rec.local() {
        Some(p) => p,
        None => Arc::as_ptr(&rec.register_current_thread(info()).0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // with 100,000 region names, each name costs a RegionBuf on
    // each thread that calls it, so its size is part of the per-name cost
    #[test]
    fn a_region_buffer_is_small_and_a_first_call_allocates_once() {
        use crate::thread_state::RegionBuf;
        assert!(std::mem::size_of::<RegionBuf>() <= 56, "{}", std::mem::size_of::<RegionBuf>());
        let rec = Recorder::new(1024, false);
        let st = local_or_register(&rec, ThreadInfo::default);
        // SAFETY: this thread owns `st`.
        let st = unsafe { &*st };
        st.enter(0, false);
        assert!(st.exit(0));
        let buf = |st: &ThreadState| unsafe { &(&*st.regions.get())[0] };
        assert_eq!((buf(st).calls.capacity(), buf(st).lanes.capacity()), (FIRST_SLOTS, 0));
        st.enter(0, false);
        st.enter(0, false); // nested in itself: both on the thread's one bare-lane stack
        assert_eq!(st.open_calls(0), 2);
        assert!(st.exit(0) && st.exit(0));
        let snap = unsafe { rec.snapshot(1) };
        assert_eq!(snap[0].starts.len(), 3);
        assert!(snap[0].starts[1] <= snap[0].starts[2] && snap[0].ends[2] <= snap[0].ends[1]);
    }
    use std::thread;
    use std::time::Duration;

    fn st(rec: &Recorder) -> &ThreadState {
        let p = local_or_register(rec, || ThreadInfo { name: "t".into(), ..Default::default() });
        unsafe { &*p }
    }

    /// `has_completed_calls` (a followed process's exit check, without copying every call
    /// through `snapshot()` to learn whether there is one): open calls are not completed,
    /// retired ones are gone.
    #[test]
    fn has_completed_calls_sees_only_completed_unretired_calls() {
        let rec = Recorder::new(4, false);
        let s = st(&rec);
        assert!(!unsafe { rec.has_completed_calls() });
        s.enter(0, false);
        assert!(!unsafe { rec.has_completed_calls() }, "an open call");
        s.enter(1, false);
        assert!(s.exit(1));
        assert!(unsafe { rec.has_completed_calls() });
        assert_eq!(unsafe { rec.has_completed_calls() }, !unsafe { rec.snapshot(2) }.is_empty());
        unsafe { rec.mark_written() };
        assert!(!unsafe { rec.has_completed_calls() }, "retired; the root is still open");
    }

    #[test]
    fn nesting_and_recursion() {
        let rec = Recorder::new(4, false);
        let s = st(&rec);
        s.enter(0, false);
        s.enter(1, false);
        s.enter(1, false); // recursive
        thread::sleep(Duration::from_millis(1));
        assert!(s.exit(1));
        assert!(s.exit(1));
        assert!(s.exit(0));
        assert!(!s.exit(0)); // nothing open
        let snap = unsafe { rec.snapshot(2) };
        assert_eq!(snap.len(), 2);
        let (a, b) = (&snap[0], &snap[1]);
        assert_eq!(a.starts.len(), 1);
        assert_eq!(b.starts.len(), 2);
        // outer region contains both inner calls; inner recursion: slot 0 contains slot 1
        assert!(a.starts[0] <= b.starts[0] && b.ends[0] <= a.ends[0]);
        assert!(b.starts[0] <= b.starts[1] && b.ends[1] <= b.ends[0]);
        assert!(b.ends[1] - b.starts[1] >= 1_000_000);
    }

    // one bare-lane stack per thread (a region's own stack would be 32 of its 88 bytes per
    // name per thread) still closes the innermost call of the exiting region,
    // whatever the order of exits, and a retire remaps the slots it holds
    #[test]
    fn one_bare_stack_closes_the_exiting_region_in_any_order() {
        let rec = Recorder::new(4, false);
        let s = st(&rec);
        s.enter(0, false); // a
        s.enter(1, false); // b
        s.enter(0, false); // a again, inside b
        assert!(s.exit(1)); // b ends before the inner a: the a calls stay open
        assert_eq!((s.open_calls(0), s.open_calls(1)), (2, 0));
        s.enter(2, true); // paused: a placeholder, closes nothing
        assert!(s.exit(2));
        assert_eq!(unsafe { rec.open_regions() }, vec![(0, 0)]);
        unsafe { rec.mark_written() }; // retires b's call; a's two open slots move to 0 and 1
        assert!(s.exit(0) && s.exit(0) && !s.exit(0));
        let snap = unsafe { rec.snapshot(3) };
        assert_eq!(snap.len(), 1, "b retired, the paused call never recorded");
        let a = &snap[0];
        assert_eq!(a.starts.len(), 2);
        // slot 0 is the outer a: it started first and ended last
        assert!(a.starts[0] <= a.starts[1] && a.ends[1] <= a.ends[0]);
    }

    #[test]
    fn open_calls_lists_bare_and_task_lanes() {
        let rec = Recorder::with_tasks(16, true, true);
        let s = unsafe { &*local_or_register(&rec, ThreadInfo::default) };
        s.enter(0, false);
        s.enter(1, false);
        s.exit(1);
        let task = rec.new_task(TaskKind::Task, "t".into(), "c".into(), 0);
        step_in(s, &task, || s.enter(2, false));
        let open = unsafe { rec.open_calls() };
        assert_eq!(open.iter().map(|c| (c.region, c.task)).collect::<Vec<_>>(), vec![(0, -1), (2, 0)]);
        assert!(open.iter().all(|c| c.start_ns > 0 && c.thread == 0));
        s.exit(0);
        step_in(s, &task, || assert!(s.exit(2)));
        assert!(unsafe { rec.open_calls() }.is_empty());
    }

    #[test]
    fn open_calls_stay_until_closed_and_checkpoint_rewinds() {
        let rec = Recorder::new(2, false);
        let s = st(&rec);
        s.enter(0, false); // stays open across the checkpoint
        for _ in 0..5 {
            s.enter(0, false);
            s.exit(0);
        }
        let snap = unsafe { rec.snapshot(1) };
        assert_eq!(snap[0].starts.len(), 5);
        let open_start = unsafe { (&*s.regions.get())[0].calls[0][0] };
        unsafe { rec.mark_written() };
        assert_eq!(unsafe { rec.num_calls(0) }, 6);
        assert_eq!(unsafe { rec.snapshot(1) }.len(), 0);
        s.enter(0, false);
        s.exit(0);
        s.exit(0); // closes the call opened before the checkpoint
        let snap = unsafe { rec.snapshot(1) };
        assert_eq!(snap[0].starts.len(), 2);
        assert_eq!(snap[0].starts[0], open_start, "open call kept its start, moved to the front");
        assert!(snap[0].ends[0] >= snap[0].ends[1]);
        unsafe { rec.mark_written() };
        assert_eq!(unsafe { rec.num_calls(0) }, 7);
    }

    /// A region called once holds a few slots, not `buffer_limit` of them (100,000 names
    /// would take 1.9 GB); a busy one still reaches `buffer_limit` by doubling.
    #[test]
    fn buffers_start_small_and_double() {
        let rec = Recorder::new(1024, false);
        let s = st(&rec);
        s.enter(0, false);
        s.exit(0);
        let cap = |s: &ThreadState| unsafe { (&*s.regions.get())[0].calls.capacity() };
        assert_eq!(cap(s), FIRST_SLOTS);
        for _ in 0..1000 {
            s.enter(0, false);
            s.exit(0);
        }
        assert_eq!(cap(s), 1024);
        assert_eq!(unsafe { rec.snapshot(1) }[0].starts.len(), 1001);
    }

    #[test]
    fn growth_beyond_initial_capacity_preserves_slots() {
        let rec = Recorder::new(3, false);
        let s = st(&rec);
        // open 10 nested calls so slots reserved before growth are written after it
        for _ in 0..10 {
            s.enter(0, false);
        }
        for _ in 0..10 {
            assert!(s.exit(0));
        }
        for _ in 0..1000 {
            s.enter(0, false);
            s.exit(0);
        }
        let snap = unsafe { rec.snapshot(1) };
        let c = &snap[0];
        assert_eq!(c.starts.len(), 1010);
        for i in 0..9 {
            assert!(c.starts[i] <= c.starts[i + 1]);
            assert!(c.ends[i] >= c.ends[i + 1]); // nested: outer ends last
        }
        assert!(c.starts.iter().zip(&c.ends).all(|(s, e)| e >= s && *s > 0));
    }

    #[test]
    fn threads_have_own_buffers_and_snapshot_groups_by_thread() {
        let rec = Arc::new(Recorder::new(8, true));
        // main thread registers first -> index 0
        let s = st(&rec);
        s.enter(0, false);
        let mut handles = Vec::new();
        for k in 0..4 {
            let rec = rec.clone();
            handles.push(thread::spawn(move || {
                let (state, created) =
                    rec.register_current_thread(ThreadInfo { ident: k, name: format!("w{k}"), ..Default::default() });
                assert!(created);
                for _ in 0..50 {
                    state.enter(0, false);
                    state.enter(1, false);
                    state.exit(1);
                    state.exit(0);
                }
                let mut x = 0u64;
                for i in 0..3_000_000u64 {
                    x = x.wrapping_add(i ^ (x >> 3));
                }
                std::hint::black_box(x);
                state.record().unwrap().mark_exited();
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        s.exit(0);
        let snap = unsafe { rec.snapshot(2) };
        assert_eq!(snap.len(), 2);
        assert_eq!(snap[0].starts.len(), 201);
        assert_eq!(snap[1].starts.len(), 200);
        // grouped by thread ascending, each in entry order
        assert!(snap[1].thread_ids.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(snap[1].thread_ids[0], 1);
        for t in 1..=4i64 {
            let starts: Vec<i64> =
                snap[1].thread_ids.iter().zip(&snap[1].starts).filter(|(i, _)| **i == t).map(|(_, s)| *s).collect();
            assert_eq!(starts.len(), 50);
            assert!(starts.windows(2).all(|w| w[0] <= w[1]));
        }
        assert_eq!(snap[0].thread_ids.iter().filter(|i| **i == 0).count(), 1);
        let rows = rec.thread_rows(0);
        assert_eq!(rows.len(), 5);
        assert_eq!(rows.iter().map(|r| r.index).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        for r in &rows[1..] {
            assert!(r.end_ns > r.start_ns, "worker ended");
            assert!(r.cpu_ns > 0);
            assert!(r.info.name.starts_with('w'));
        }
        assert_eq!(rows[0].end_ns, UNKNOWN);
        assert_eq!(unsafe { rec.threads_of_region(1) }, vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_stopped_recorder_counts_the_calls_it_does_not_record() {
        let rec = Recorder::new(4, false);
        let s = st(&rec);
        s.enter(0, false); // open at the stop: it still closes
        rec.set_paused(true);
        s.enter(1, rec.paused()); // paused before the stop: not counted
        assert!(s.exit(1));
        rec.set_paused(false);
        assert_eq!(unsafe { rec.calls_since_stop() }, None);
        unsafe { rec.stop() };
        for _ in 0..3 {
            s.enter(1, rec.paused());
            assert!(s.exit(1));
        }
        let late = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let t = st(&rec);
                    t.enter(2, rec.paused());
                    t.exit(2)
                })
                .join()
                .unwrap()
        });
        assert!(late);
        rec.set_paused(false); // resuming does not undo a stop
        assert!(rec.paused());
        s.enter(1, rec.paused());
        assert!(s.exit(1));
        assert!(s.exit(0));
        unsafe { rec.stop() }; // again: the count goes on from the first stop
        assert_eq!(unsafe { rec.calls_since_stop() }, Some(5));
        let snap = unsafe { rec.snapshot(3) };
        assert_eq!(snap.iter().map(|c| c.starts.len()).sum::<usize>(), 1, "only the call open at the stop");
    }

    #[test]
    fn paused_placeholder_closes_nothing() {
        let rec = Recorder::new(4, false);
        let s = st(&rec);
        s.enter(0, false);
        rec.set_paused(true);
        s.enter(0, rec.paused());
        assert!(s.exit(0)); // pops the placeholder
        rec.set_paused(false);
        assert_eq!(s.open_calls(0), 1);
        assert!(s.exit(0));
        assert_eq!(unsafe { rec.snapshot(1) }[0].starts.len(), 1);
    }

    #[test]
    fn independent_recorders_on_one_thread() {
        let a = Recorder::new(4, false);
        let b = Recorder::new(4, true);
        let sa = st(&a);
        let sb = st(&b);
        sa.enter(0, false);
        sb.enter(0, false);
        sa.exit(0);
        sb.exit(0);
        assert_eq!(unsafe { a.snapshot(1) }[0].starts.len(), 1);
        assert_eq!(unsafe { b.snapshot(1) }[0].starts.len(), 1);
        assert_eq!(a.thread_rows(0).len(), 0);
        assert_eq!(b.thread_rows(0).len(), 1);
        drop(a);
        // a new recorder registering on this thread prunes the dead one's entry
        let c = Recorder::new(4, false);
        let _ = st(&c);
        let n = LOCAL.with(|l| unsafe { &*l.get() }.len());
        assert_eq!(n, 2);
    }

    /// The snapshot copied in jobs (run here in reverse order, as a parallel loop
    /// may) is the serial one: threads' calls in thread order, open slots skipped, columns
    /// longer than one job split, task columns; with `lazy_threads` a region of one thread
    /// has `one_thread` instead of its thread column, and `fill_threads` writes that column.
    #[test]
    fn snapshot_in_jobs_is_the_serial_snapshot() {
        let rec = Arc::new(Recorder::with_tasks(1 << 20, true, true));
        let s = st(&rec);
        s.enter(0, false); // stays open: a slot to skip
        let calls = SNAPSHOT_JOB_CALLS + 1000; // two jobs per column
        for _ in 0..calls {
            s.enter(1, false);
            s.exit(1);
        }
        let task = rec.new_task(TaskKind::Task, "t".into(), "c".into(), 0);
        step_in(s, &task, || {
            s.enter(0, false);
            s.exit(0);
        });
        let rec2 = rec.clone();
        thread::spawn(move || {
            let (w, _) = rec2.register_current_thread(ThreadInfo::default());
            for _ in 0..3 {
                w.enter(0, false);
                w.exit(0);
            }
            w.enter(2, false);
            w.exit(2);
        })
        .join()
        .unwrap();
        let serial = unsafe { rec.snapshot(3) };
        let reversed = |n: usize, job: &(dyn Fn(usize) + Sync)| (0..n).rev().for_each(job);
        assert_eq!(unsafe { rec.snapshot_par(3, Vec::with_capacity, reversed, false) }, serial);
        let mut lazy = unsafe { rec.snapshot_par(3, Vec::with_capacity, reversed, true) };
        assert_eq!(lazy.iter().map(|c| c.one_thread).collect::<Vec<_>>(), vec![None, Some(0), Some(1)]);
        assert_eq!(serial[0].thread_ids, vec![0, 1, 1, 1]);
        assert_eq!(serial[1].starts.len(), calls);
        lazy.iter_mut().for_each(RegionColumns::fill_threads);
        assert_eq!(lazy, serial);
        s.exit(0);
    }

    fn step_in(s: &ThreadState, t: &Arc<TaskRecord>, f: impl FnOnce()) {
        t.enter_step(now_ns(), s.index() as i64);
        let prev = s.set_current(Arc::as_ptr(t));
        f();
        s.set_current(prev);
        t.leave_step(now_ns());
    }

    /// Ready wait: the part of a suspension after the task's ready moment, at most the
    /// suspension; nothing for the first step; a step whose ready moment is unknown makes
    /// the lane's clock unknown from then on.
    #[test]
    fn ready_wait_is_the_suspension_after_the_ready_moment() {
        let rec = Recorder::with_tasks(4, true, true);
        let t = rec.new_task(TaskKind::Task, "T".into(), "f".into(), 0);
        assert_eq!(t.ready_since(100, Some(50)), None); // first step: no suspension before it
        t.enter_step(100, 0);
        t.leave_step(110);
        assert_eq!(t.ready_since(200, Some(170)), Some(30)); // suspended 110..200, ready from 170
        t.enter_step(200, 0);
        t.leave_step(210);
        assert_eq!((t.suspended_ns(), t.ready_wait_ns()), (90, 30));
        t.ready_since(300, Some(150)); // ready before it even suspended: the whole suspension
        t.enter_step(300, 0);
        t.leave_step(310);
        assert_eq!((t.suspended_ns(), t.ready_wait_ns()), (180, 120));
        assert_eq!(t.ready_since(400, Some(400)), Some(0)); // resumed the moment it was ready
        t.enter_step(400, 0);
        t.leave_step(410);
        assert_eq!((t.suspended_ns(), t.ready_wait_ns()), (270, 120));
        assert_eq!(t.ready_since(500, None), None); // ready moment unknown
        t.enter_step(500, 0);
        t.leave_step(510);
        assert_eq!(t.ready_wait_ns(), task::READY_UNKNOWN);
        t.ready_since(600, Some(590)); // stays unknown
        assert_eq!(t.ready_wait_ns(), task::READY_UNKNOWN);
        assert_eq!(rec.task_rows(0)[0].ready_wait_ns, UNKNOWN);
    }

    /// A call's ready wait is its lane's ready-wait clock over the call; `-1` once a step
    /// inside it resumed with no known ready moment; 0 on a bare lane.
    #[test]
    fn a_calls_ready_wait_is_its_lanes_clock_over_the_call() {
        let rec = Recorder::with_tasks(4, true, true);
        let s = st(&rec);
        let t = rec.new_task(TaskKind::Task, "T".into(), "f".into(), 0);
        let step = |ready: Option<i64>, f: &dyn Fn()| {
            let now = now_ns();
            t.ready_since(now, ready.map(|r| now - r));
            t.enter_step(now, 0);
            let prev = s.set_current(Arc::as_ptr(&t));
            f();
            s.set_current(prev);
            t.leave_step(now_ns());
        };
        s.enter(2, false); // bare lane
        step(None, &|| s.enter(1, false)); // first step
        thread::sleep(Duration::from_millis(3));
        step(Some(1_000_000), &|| ()); // ready for the last 1 ms of its suspension
        thread::sleep(Duration::from_millis(3));
        step(Some(0), &|| {
            assert!(s.exit(1));
            s.enter(1, false);
        });
        thread::sleep(Duration::from_millis(3));
        step(None, &|| assert!(s.exit(1))); // unknown ready moment inside the second call
        assert!(s.exit(2));
        let snap = unsafe { rec.snapshot(3) };
        assert_eq!(snap[0].ready_wait_ns, vec![1_000_000, -1]);
        assert!(snap[0].await_ns[0] >= 6_000_000);
        assert_eq!(snap[1].ready_wait_ns, vec![0]);
    }

    fn timed_step_in(s: &ThreadState, t: &Arc<TaskRecord>, f: impl FnOnce()) {
        let now = now_ns();
        t.enter_step(now, s.index() as i64);
        s.begin_step(now);
        let prev = s.set_current(Arc::as_ptr(t));
        f();
        s.set_current(prev);
        let end = now_ns();
        t.leave_step(end);
        s.end_step(end);
    }

    /// A call on the thread's own lane (a module body around `asyncio.run`) records the time
    /// its thread spent in task steps while it was open, in its own column (its await stays
    /// 0); an eager task's first step inside its creator's step counts once; the thread
    /// table has the thread's total.
    #[test]
    fn a_bare_call_records_the_task_steps_it_encloses() {
        let rec = Recorder::with_tasks(8, true, true);
        let s = st(&rec);
        let a = rec.new_task(TaskKind::Task, "A".into(), "fa".into(), 0);
        let b = rec.new_task(TaskKind::Task, "B".into(), "fb".into(), 0);
        s.enter(0, false); // the module body
        thread::sleep(Duration::from_millis(3)); // its own time
        timed_step_in(s, &a, || {
            s.enter(1, false);
            thread::sleep(Duration::from_millis(4));
            timed_step_in(s, &b, || thread::sleep(Duration::from_millis(4))); // eager, nested
            s.exit(1);
        });
        s.enter(2, false); // a bare call after the steps: none inside it
        s.exit(2);
        timed_step_in(s, &b, || thread::sleep(Duration::from_millis(2)));
        assert!(s.exit(0));
        let snap = unsafe { rec.snapshot(3) };
        let (body, inner, after) = (&snap[0], &snap[1], &snap[2]);
        assert_eq!((body.task_ids.clone(), body.await_ns.clone()), (vec![-1], vec![0]));
        let steps = body.task_step_ns[0];
        let total = rec.thread_rows(0)[0].task_step_ns;
        assert_eq!(steps, total, "every step ran inside the body");
        // the steps: A's (8 ms, with B's eager step inside) and B's second (2 ms), once each
        assert!((10_000_000..30_000_000).contains(&steps), "{steps}");
        assert!(steps < a.running_ns() + b.running_ns(), "the nested step is not counted twice");
        assert!(steps <= body.ends[0] - body.starts[0] - 3_000_000);
        assert_eq!((inner.task_ids.clone(), inner.task_step_ns.clone()), (vec![0], vec![0]));
        assert_eq!(after.task_step_ns, vec![0]);
        // without async columns nothing is recorded per call
        let plain = Recorder::new(8, true);
        let p = st(&plain);
        p.enter(0, false);
        p.exit(0);
        assert!(unsafe { plain.snapshot(1) }[0].task_step_ns.is_empty());
    }

    /// An async generator left by `break` is closed by asyncio in another task: `exit_on`
    /// closes a call on the lane it was entered on, from any lane.
    #[test]
    fn exit_on_closes_a_call_on_another_lane_of_the_thread() {
        let rec = Recorder::with_tasks(4, true, true);
        let s = st(&rec);
        let a = rec.new_task(TaskKind::Task, "A".into(), "fa".into(), 0);
        let b = rec.new_task(TaskKind::Task, "B".into(), "fb".into(), 0);
        step_in(s, &a, || s.enter(1, false));
        s.enter(2, false); // bare lane
        step_in(s, &b, || {
            assert!(!s.exit(1), "not open on B's lane");
            assert!(s.exit_on(1, Arc::as_ptr(&a)));
            assert!(!s.exit_on(1, Arc::as_ptr(&a)), "closed once");
            assert!(s.exit_on(2, std::ptr::null()), "the bare lane");
        });
        let snap = unsafe { rec.snapshot(3) };
        assert_eq!((snap[0].region, snap[0].task_ids.clone()), (1, vec![0]));
        assert_eq!((snap[1].region, snap[1].task_ids.clone()), (2, vec![-1]));
        assert!(snap.iter().all(|c| c.starts[0] <= c.ends[0]));
    }

    #[test]
    fn interleaved_tasks_close_their_own_scopes_with_await() {
        let rec = Recorder::with_tasks(4, true, true);
        let s = st(&rec);
        s.enter(0, false); // bare lane: session-like root
        let a = rec.new_task(TaskKind::Task, "A".into(), "fa".into(), 0);
        let b = rec.new_task(TaskKind::Task, "B".into(), "fb".into(), 0);
        step_in(s, &a, || s.enter(1, false));
        step_in(s, &b, || s.enter(1, false));
        thread::sleep(Duration::from_millis(5));
        // A closes first although B entered last: each lane pops its own entry.
        step_in(s, &a, || assert!(s.exit(1)));
        step_in(s, &b, || {
            assert!(s.exit(1));
            assert!(!s.exit(1)); // nothing else open on B's lane
        });
        assert!(s.exit(0));
        let snap = unsafe { rec.snapshot(2) };
        let c = &snap[1];
        assert_eq!(c.task_ids, vec![0, 1]);
        // A: entered, suspended >= 5 ms (sleep + B's steps), exited in its next step
        assert!(c.await_ns[0] >= 5_000_000, "{:?}", c.await_ns);
        assert!(c.await_ns[0] <= c.ends[0] - c.starts[0]);
        assert!(c.await_ns[1] >= 5_000_000);
        assert_eq!(snap[0].task_ids, vec![-1]);
        assert_eq!(snap[0].await_ns, vec![0]);
        assert_eq!(a.steps(), 2);
        assert!(a.suspended_ns() >= 5_000_000);
        let rows = rec.task_rows(0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].name, "B");
        assert_eq!(rows[0].done_ns, UNKNOWN);
        a.finish();
        assert!(rec.task_rows(0)[0].done_ns > 0);
    }

    #[test]
    fn task_open_call_survives_rewind_and_bare_calls_after_it_are_clean() {
        let rec = Recorder::with_tasks(2, true, true);
        let s = st(&rec);
        let a = rec.new_task(TaskKind::Task, "A".into(), "fa".into(), 0);
        for _ in 0..3 {
            step_in(s, &a, || {
                s.enter(0, false);
                s.exit(0);
            });
        }
        step_in(s, &a, || s.enter(0, false)); // stays open across the checkpoint
        assert_eq!(unsafe { rec.open_regions() }, vec![(0, 0)]);
        assert_eq!(unsafe { rec.snapshot(1) }[0].starts.len(), 3);
        unsafe { rec.mark_written() };
        // a bare call reuses freed slots: task -1, await 0 (no stale values)
        s.enter(0, false);
        s.exit(0);
        thread::sleep(Duration::from_millis(2));
        step_in(s, &a, || assert!(s.exit(0)));
        let snap = unsafe { rec.snapshot(1) };
        let c = &snap[0];
        assert_eq!(c.task_ids, vec![0, -1]);
        assert_eq!(c.await_ns[1], 0);
        assert!(c.await_ns[0] >= 2_000_000);
        assert!(c.ends[0] > c.starts[0]);
    }

    #[test]
    fn paused_entry_in_task_closes_nothing() {
        let rec = Recorder::with_tasks(4, true, true);
        let s = st(&rec);
        let a = rec.new_task(TaskKind::Greenlet, "g".into(), "f".into(), 0);
        step_in(s, &a, || {
            s.enter(0, false);
            rec.set_paused(true);
            s.enter(0, rec.paused());
            assert!(s.exit(0));
            rec.set_paused(false);
            assert_eq!(a.open_calls(), 1);
            assert!(s.exit(0));
        });
        assert_eq!(unsafe { rec.snapshot(1) }[0].task_ids, vec![0]);
    }

    #[test]
    fn retire_drops_only_the_calls_completed_at_the_watermark() {
        let rec = Recorder::with_tasks(2, false, true);
        let s = st(&rec);
        let task = rec.new_task(TaskKind::Greenlet, "g".into(), "f".into(), 0);
        s.enter(0, false); // A: open at the mark, closes before the retire
        s.enter(0, false); // B: completed before the mark
        s.exit(0);
        step_in(s, &task, || s.enter(1, false)); // T: open on a task lane across both
        let mark = unsafe { rec.watermark() };
        let before = unsafe { rec.snapshot(2) };
        assert_eq!(before.iter().map(|c| c.starts.len()).collect::<Vec<_>>(), vec![1]);
        // recording goes on (a checkpoint's write runs with the GIL released)
        s.enter(0, false); // C: entered and completed after the mark
        s.exit(0);
        assert!(s.exit(0)); // closes A
        s.enter(0, false); // D: still open at the retire
        unsafe { rec.retire(&mark) };
        assert_eq!(unsafe { rec.num_calls(0) }, 4, "B retired, A, C, D kept");
        let after = unsafe { rec.snapshot(2) };
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].starts.len(), 2, "A and C, not B");
        assert!(!after[0].starts.contains(&before[0].starts[0]));
        assert!(s.exit(0)); // D closes through its remapped stack slot
        step_in(s, &task, || assert!(s.exit(1))); // T closes through its remapped task slot
        let snap = unsafe { rec.snapshot(2) };
        assert_eq!(snap.iter().map(|c| c.starts.len()).collect::<Vec<_>>(), vec![3, 1]);
        assert_eq!(snap[1].task_ids, vec![0]);
        unsafe { rec.mark_written() };
        assert!(unsafe { rec.snapshot(2) }.is_empty());
        assert_eq!(unsafe { rec.num_calls(0) } + unsafe { rec.num_calls(1) }, 5);
    }

    /// A thread's row counts CPU from its registration, and the thread that
    /// marked the run's start counts wall and CPU time from that mark: a thread that burned
    /// CPU before the recorder existed does not carry it into the run.
    #[test]
    fn cpu_and_start_are_counted_from_the_run() {
        fn burn() {
            let t0 = crate::thread_cpu_ns();
            let mut x = 0u64;
            while crate::thread_cpu_ns() - t0 < 20_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        thread::spawn(|| {
            burn(); // before the run
            let rec = Recorder::new(16, true);
            let at = rec.mark_start_thread();
            let marked = crate::now_ns();
            assert!(at <= marked);
            burn(); // in the run, before the first region
            let (state, _) = rec.register_current_thread(ThreadInfo::default());
            let r = state.record().unwrap();
            assert!(r.start_ns <= marked);
            assert_eq!(r.start_ns, at, "the thread starts at the mark, the run's origin");
            r.mark_exited();
            let run_cpu = r.cpu_ns() - r.cpu_start_ns;
            assert!(r.cpu_start_ns >= 20_000_000, "{}", r.cpu_start_ns);
            assert!((20_000_000..35_000_000).contains(&run_cpu), "{run_cpu}");
            // another thread registers with its own clock
            let rec2 = Arc::new(rec);
            let rec3 = Arc::clone(&rec2);
            thread::spawn(move || {
                burn();
                let (st, _) = rec3.register_current_thread(ThreadInfo::default());
                let r = st.record().unwrap();
                assert!(r.cpu_start_ns >= 20_000_000 && r.start_ns > marked);
            })
            .join()
            .unwrap();
        })
        .join()
        .unwrap();
    }
}
