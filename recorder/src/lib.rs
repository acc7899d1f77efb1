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

pub mod clock;
pub mod event_loop;
pub mod fork;
pub mod instrument;
pub mod regions;
pub mod task;
pub mod trace_notes;
pub mod trace_select;

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub use clock::{now_ns, thread_cpu_ns};
pub use regions::{RegionMeta, RegionTable};
use task::LaneEntry;
pub use task::{TaskKind, TaskRecord, TaskRowData};

/// Value of `end_ns` while a thread is alive / unknown.
pub const UNKNOWN: i64 = -1;
/// A still-running thread refreshes its CPU time at exit of slots with `slot & MASK == 0`.
pub const CPU_SAMPLE_MASK: usize = 0xFF;

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
    /// start ([`Recorder::mark_start_thread`]), that moment.
    pub start_ns: i64,
    /// The thread's CPU clock at `start_ns`, ns: `cpu_ns - cpu_start_ns` is the CPU burned
    /// since then (during the run).
    pub cpu_start_ns: i64,
    end_ns: AtomicI64,
    cpu_ns: AtomicI64,
    /// CPU ns added to every reading: the pre-fork total of a thread that continues in a
    /// forked child (whose CPU clock restarts at 0). 0 otherwise. See [`fork`].
    cpu_base: AtomicI64,
    /// OS thread id after a fork (the continuing thread's id changes); 0 = `info.native_id`.
    native_id_now: AtomicI64,
    /// The union of the ready waits of the task steps run on this thread (the stretches in
    /// which some task was ready but the thread ran other code); written by this thread only.
    ready_union: UnsafeCell<event_loop::UnionOfIntervals>,
    /// Its total for readers: [`UNKNOWN`] before the first task step with a known ready
    /// moment, [`task::READY_UNKNOWN`] once a step's ready moment was not known.
    ready_wait_ns: AtomicI64,
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
        if total == task::READY_UNKNOWN {
            return;
        }
        let Some((from, to)) = wait else {
            self.ready_wait_ns.store(task::READY_UNKNOWN, Ordering::Relaxed);
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
            task::READY_UNKNOWN => UNKNOWN,
            v => v,
        }
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

/// What a call entered on a lane whose ready-wait clock reads `clock` keeps: minus the
/// clock, or [`task::READY_UNKNOWN`] when the clock says nothing.
#[inline(always)]
fn ready_entry(clock: i64) -> i64 {
    if clock == task::READY_UNKNOWN {
        task::READY_UNKNOWN
    } else {
        -clock
    }
}

/// A call's ready wait from what it kept at entry ([`ready_entry`]) and its lane's clock
/// now: the clock's growth, `-1` when the clock said nothing at either end.
#[inline(always)]
fn ready_exit(entry: i64, clock: i64) -> i64 {
    if entry == task::READY_UNKNOWN || clock == task::READY_UNKNOWN {
        -1
    } else {
        (entry + clock).max(0)
    }
}

/// Slots a region's buffer on a thread starts with (see [`RegionBuf::reserve_for`]).
pub const FIRST_SLOTS: usize = 1;

/// One region's buffer on one thread: 56 bytes, and one heap block once called (a program
/// with 100,000 region names holds one per name per thread). Its open calls are
/// on the thread's bare-lane stack ([`ThreadState`]'s `bare`), not here.
#[derive(Debug, Default)]
struct RegionBuf {
    /// `[start, end]` per slot, absolute ns; end 0 = open.
    calls: Vec<[i64; 2]>,
    /// `[task index, await ns, ready-wait ns]` per slot (task -1 = outside any task; await
    /// minus the task's suspended total while open, ready wait minus its ready-wait clock
    /// while open, [`task::READY_UNKNOWN`] when that clock said nothing at entry, `-1` when
    /// not known at exit); only with async columns.
    lanes: Vec<[i64; 3]>,
    /// Calls retired by earlier written finalizes.
    retired: u64,
}

impl RegionBuf {
    /// Grow a full buffer (preserving slots): first to [`FIRST_SLOTS`] (at most `limit`),
    /// then doubling. `limit` (`buffer_limit`) is reached after a few doublings instead of
    /// being reserved up front, so a region called once costs a few slots, not `limit`
    /// (reserved up front, 100,000 names would take 16 KiB each, 1.9 GB).
    #[cold]
    fn reserve_for(&mut self, limit: usize, async_cols: bool) {
        let cap = self.calls.capacity();
        let extra = if cap == 0 { limit.clamp(1, FIRST_SLOTS) } else { cap };
        self.calls.reserve_exact(extra);
        if async_cols {
            let n = self.lanes.len();
            self.lanes.reserve_exact(self.calls.capacity() - n);
        }
    }
}

/// The completed slots of every buffer at one moment ([`Recorder::watermark`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watermark {
    /// Per thread state (index order), per region id.
    per_state: Vec<Vec<BufMark>>,
}

/// One buffer at a [`Watermark`]: its length and its open slots (ascending).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct BufMark {
    len: usize,
    open: Vec<usize>,
}

/// The recording state of one OS thread for one [`Recorder`].
pub struct ThreadState {
    index: usize,
    buffer_limit: usize,
    /// Record `task_ids`/`await_ns` per call (`track_async`).
    async_cols: bool,
    record: Option<Arc<ThreadRecord>>,
    regions: UnsafeCell<Vec<RegionBuf>>,
    /// The calls open on this thread's bare lane (outside any task), innermost last: one
    /// stack for all regions, so a region costs no stack of its own.
    bare: UnsafeCell<Vec<BareEntry>>,
    /// The task lane running on this thread right now; null = the thread's bare lane.
    /// Set by the step timer / greenlet switch; points into the recorder's task registry.
    current: Cell<*const TaskRecord>,
}

/// A call open on a thread's bare lane: its region and reserved slot (-1 = entered while
/// paused).
#[derive(Debug, Clone, Copy)]
struct BareEntry {
    region: u32,
    slot: i64,
}

// SAFETY: `regions` is mutated only by the owning thread (enter/exit) and read by others
// only under the contract in the crate docs (external serialization, e.g. the GIL).
unsafe impl Sync for ThreadState {}
unsafe impl Send for ThreadState {}

impl ThreadState {
    /// Dense index of this thread in its recorder (= thread-table index with tracking).
    pub fn index(&self) -> usize {
        self.index
    }
    pub fn record(&self) -> Option<&Arc<ThreadRecord>> {
        self.record.as_ref()
    }

    /// The task running on this thread (null = bare lane).
    #[inline(always)]
    pub fn current(&self) -> *const TaskRecord {
        self.current.get()
    }

    /// Make `task` (a record of this state's recorder, kept alive by its registry; null =
    /// the bare lane) the lane running on this thread; returns the previous one. Must be
    /// called on the owning thread.
    #[inline(always)]
    pub fn set_current(&self, task: *const TaskRecord) -> *const TaskRecord {
        self.current.replace(task)
    }

    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    unsafe fn regions_mut(&self) -> &mut Vec<RegionBuf> {
        &mut *self.regions.get()
    }

    #[allow(clippy::mut_from_ref)]
    #[inline(always)]
    unsafe fn bare_mut(&self) -> &mut Vec<BareEntry> {
        &mut *self.bare.get()
    }

    /// Remove and return the innermost open bare-lane entry of `region`.
    #[inline(always)]
    fn pop_bare(&self, region: u32) -> Option<BareEntry> {
        // SAFETY: only the owning thread calls enter/exit (crate contract).
        let bare = unsafe { self.bare_mut() };
        match bare.last() {
            Some(e) if e.region == region => bare.pop(),
            _ => {
                let pos = bare.iter().rposition(|e| e.region == region)?;
                Some(bare.remove(pos))
            }
        }
    }

    #[cold]
    fn grow_regions(regions: &mut Vec<RegionBuf>, region: usize) {
        regions.resize_with(region + 1, RegionBuf::default);
    }

    /// Open a call of `region` on this thread. Must be called on the owning thread.
    /// With `paused`, push a placeholder so the matching exit closes nothing.
    #[inline]
    pub fn enter(&self, region: u32, paused: bool) {
        // SAFETY: only the owning thread calls enter/exit (crate contract).
        let regions = unsafe { self.regions_mut() };
        let r = region as usize;
        if r >= regions.len() {
            Self::grow_regions(regions, r);
        }
        let buf = &mut regions[r];
        let task = self.current.get();
        if paused {
            if task.is_null() {
                // SAFETY: owning thread (crate contract).
                unsafe { self.bare_mut() }.push(BareEntry { region, slot: -1 });
            } else {
                // SAFETY: a current task is alive (registry of this recorder).
                unsafe { &*task }.push(LaneEntry { region, slot: -1, state: self });
            }
            return;
        }
        let slot = buf.calls.len();
        if slot == buf.calls.capacity() {
            buf.reserve_for(self.buffer_limit, self.async_cols);
        }
        buf.calls.push([0, 0]);
        if task.is_null() {
            if self.async_cols {
                buf.lanes.push([-1, 0, 0]);
            }
            // SAFETY: owning thread (crate contract).
            unsafe { self.bare_mut() }.push(BareEntry { region, slot: slot as i64 });
        } else {
            // SAFETY: a current task is alive (registry of this recorder).
            let t = unsafe { &*task };
            if self.async_cols {
                buf.lanes.push([t.index as i64, -t.suspended_ns(), ready_entry(t.ready_wait_ns())]);
            }
            t.push(LaneEntry { region, slot: slot as i64, state: self });
        }
        let t = now_ns(); // clock read last
                          // SAFETY: `slot` was just pushed.
        unsafe {
            buf.calls.get_unchecked_mut(slot)[0] = t;
        }
    }

    /// Close the innermost open call of `region` on the lane running on this thread (the
    /// current task's lane, else the bare lane). Returns false (and does nothing) when
    /// that lane has no open call of the region. Must be called on the owning thread.
    #[inline]
    pub fn exit(&self, region: u32) -> bool {
        let end = now_ns(); // clock read first
        let task = self.current.get();
        if !task.is_null() {
            return self.exit_task(region, end, task);
        }
        self.exit_bare(region, end)
    }

    /// Close the innermost open call of `region` on lane `task` of this thread (a task
    /// record of this recorder; null = this thread's bare lane), whichever lane runs now:
    /// a generator entered on one lane and finished on another (an async generator left
    /// by `break` is closed by asyncio in a task of its own: its call must not stay open to
    /// the end of the run). Returns false when that lane has no open
    /// call of the region. Must be called on the owning thread.
    pub fn exit_on(&self, region: u32, task: *const TaskRecord) -> bool {
        let end = now_ns();
        if task.is_null() {
            self.exit_bare(region, end)
        } else {
            self.exit_task(region, end, task)
        }
    }

    #[inline]
    fn exit_bare(&self, region: u32, end: i64) -> bool {
        let Some(BareEntry { slot, .. }) = self.pop_bare(region) else { return false };
        if slot < 0 {
            return true;
        }
        let slot = slot as usize;
        // SAFETY: only the owning thread calls enter/exit (crate contract).
        let regions = unsafe { self.regions_mut() };
        regions[region as usize].calls[slot][1] = if end == 0 { 1 } else { end };
        if slot & CPU_SAMPLE_MASK == 0 {
            if let Some(rec) = &self.record {
                rec.sample_cpu();
            }
        }
        true
    }

    #[inline]
    fn exit_task(&self, region: u32, end: i64, task: *const TaskRecord) -> bool {
        // SAFETY: a current task is alive (registry of this recorder).
        let t = unsafe { &*task };
        let Some(entry) = t.pop_region(region) else { return false };
        if entry.slot < 0 {
            return true;
        }
        let slot = entry.slot as usize;
        // The entering thread's buffer: this one, unless the task's loop moved to another
        // thread while the call was open (then the crate contract's external
        // serialization, e.g. the GIL, makes the write safe).
        // SAFETY: states live as long as their recorder, which owns the task.
        let st = unsafe { &*entry.state };
        let regions = unsafe { st.regions_mut() };
        let buf = &mut regions[region as usize];
        buf.calls[slot][1] = if end == 0 { 1 } else { end };
        if st.async_cols {
            let lane = &mut buf.lanes[slot];
            lane[1] += t.suspended_ns();
            lane[2] = ready_exit(lane[2], t.ready_wait_ns());
        }
        if slot & CPU_SAMPLE_MASK == 0 {
            if let Some(rec) = &self.record {
                rec.sample_cpu();
            }
        }
        true
    }

    /// Number of calls of `region` open on this thread's bare lane (paused placeholders excluded).
    pub fn open_calls(&self, region: u32) -> usize {
        // SAFETY: read by the owning thread, or under the crate contract.
        let bare = unsafe { &*self.bare.get() };
        bare.iter().filter(|e| e.region == region && e.slot >= 0).count()
    }
}

/// Completed calls of one region, ready to become a run row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RegionColumns {
    pub region: u32,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    /// Thread index per call (the [`ThreadState::index`]); meaningful with tracking. Empty
    /// when `one_thread` is set.
    pub thread_ids: Vec<i64>,
    /// Set by a snapshot with `lazy_threads` ([`Recorder::snapshot_par`]) when every call is
    /// on this one thread: `thread_ids` is then left empty (that column of one value was a
    /// third of a snapshot's fresh pages); [`RegionColumns::fill_threads`] writes it.
    pub one_thread: Option<i64>,
    /// Task index per call (-1 outside any task); empty without async columns.
    pub task_ids: Vec<i64>,
    /// ns the call's task was suspended between entry and exit; empty without async columns.
    pub await_ns: Vec<i64>,
    /// ns of that suspension during which the task was ready to resume but the loop ran
    /// other code, `-1` when not known; empty without async columns.
    pub ready_wait_ns: Vec<i64>,
}

impl RegionColumns {
    /// Write `thread_ids` out when `one_thread` left it empty (then `one_thread` is `None`).
    pub fn fill_threads(&mut self) {
        if let Some(t) = self.one_thread.take() {
            self.thread_ids = vec![t; self.starts.len()];
        }
    }
}

/// Calls one job of [`Recorder::snapshot_par`] copies at most (of one column).
pub const SNAPSHOT_JOB_CALLS: usize = 1 << 18;

/// One job of [`Recorder::snapshot_par`]: slots `from..to` of `buf` into column `kind`
/// (starts, ends, thread ids, task ids, await ns) of region `region` of the snapshot, from
/// position `at`, skipping open slots when `open`.
struct CopyJob<'a> {
    region: usize,
    kind: usize,
    buf: &'a RegionBuf,
    thread: i64,
    from: usize,
    to: usize,
    at: usize,
    open: bool,
}

/// A snapshot column's buffer, written by the copy jobs of [`Recorder::snapshot_par`] on
/// several threads (disjoint positions).
#[derive(Clone, Copy)]
struct SendPtr(*mut i64);
// SAFETY: the jobs write disjoint positions, and the columns outlive the jobs.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

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
    /// See [`ThreadRecord::ready_wait_ns`].
    pub ready_wait_ns: i64,
}

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
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed)
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
        self.thread_records()
            .iter()
            .map(|r| {
                let end = r.end_ns();
                ThreadRowData {
                    index: r.index as i64,
                    info: ThreadInfo { native_id: r.native_id(), ..r.info.clone() },
                    start_ns: r.start_ns - origin_ns,
                    end_ns: if end == UNKNOWN { UNKNOWN } else { end - origin_ns },
                    cpu_ns: r.cpu_ns(),
                    cpu_start_ns: r.cpu_start_ns,
                    ready_wait_ns: r.ready_wait_ns(),
                }
            })
            .collect()
    }

    /// Completed calls of every region id `< num_regions` that has any, ascending region
    /// id; within a region grouped by thread index ascending, each thread in entry order.
    ///
    /// # Safety
    /// No thread may be inside [`ThreadState::enter`]/[`ThreadState::exit`] of this
    /// recorder concurrently, and all earlier such calls must happen-before this one
    /// (e.g. everything runs under the Python GIL).
    pub unsafe fn snapshot(&self, num_regions: usize) -> Vec<RegionColumns> {
        self.snapshot_into(num_regions, Vec::with_capacity)
    }

    /// [`Recorder::snapshot`] with each column allocated by `column(n)` (an empty vector of
    /// capacity `n`), e.g. one advised for huge pages: a snapshot writes all of its columns
    /// into fresh memory, and first touches of 4 KiB pages are a third of `finalize()`.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn snapshot_into(&self, num_regions: usize, column: impl Fn(usize) -> Vec<i64>) -> Vec<RegionColumns> {
        self.snapshot_par(num_regions, column, |n, job| (0..n).for_each(job), false)
    }

    /// [`Recorder::snapshot_into`] with the copying split into independent jobs `0..n`
    /// that `run(n, job)` must run, each once, in any order and on any threads (a parallel
    /// loop: the snapshot's first touches of its fresh columns cost ~2.5 µs per 4 KiB page
    /// on the VMs measured, ~15 ns per call; two cores fault them in half the
    /// time). A job copies up to [`SNAPSHOT_JOB_CALLS`] calls of one column of one
    /// region's buffer on one thread (a buffer with open calls in one job per column).
    /// With `lazy_threads`, a region whose calls are all on one thread gets
    /// [`RegionColumns::one_thread`] instead of a `thread_ids` column.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`]; the jobs only read the buffers and write the new
    /// columns, and `run` returns once all of them have run (a job that panics leaves the
    /// snapshot unfinished: `run` must not return normally then).
    pub unsafe fn snapshot_par(
        &self,
        num_regions: usize,
        column: impl Fn(usize) -> Vec<i64>,
        run: impl FnOnce(usize, &(dyn Fn(usize) + Sync)),
        lazy_threads: bool,
    ) -> Vec<RegionColumns> {
        let states = self.states();
        let kinds = if self.async_cols { 6 } else { 3 };
        let mut out = Vec::new();
        let mut completed = Vec::new(); // per region of `out`
        let mut jobs: Vec<CopyJob<'_>> = Vec::new();
        for region in 0..num_regions {
            let mut cols = RegionColumns { region: region as u32, ..Default::default() };
            let bufs: Vec<(i64, &RegionBuf)> = states
                .iter()
                .filter_map(|st| (&*st.regions.get()).get(region).map(|b| (st.index as i64, b)))
                .filter(|(_, b)| !b.calls.is_empty())
                .collect();
            // sized once (completed calls plus the few open ones): closing the open calls
            // into the snapshot appends them without regrowth
            let n: usize = bufs.iter().map(|(_, b)| b.calls.len()).sum();
            if n == 0 {
                continue;
            }
            cols.starts = column(n);
            cols.ends = column(n);
            if lazy_threads && bufs.len() == 1 {
                cols.one_thread = Some(bufs[0].0);
            } else {
                cols.thread_ids = column(n);
            }
            if self.async_cols {
                cols.task_ids = column(n);
                cols.await_ns = column(n);
                cols.ready_wait_ns = column(n);
            }
            let k = out.len();
            let mut at = 0;
            for (thread, buf) in bufs {
                let open = buf.calls.iter().filter(|c| c[1] == 0).count();
                for kind in (0..kinds).filter(|&kind| kind != 2 || cols.one_thread.is_none()) {
                    let job = |from: usize, to: usize| CopyJob {
                        region: k,
                        kind,
                        buf,
                        thread,
                        from,
                        to,
                        at: at + from,
                        open: open > 0,
                    };
                    if open > 0 {
                        jobs.push(job(0, buf.calls.len()));
                    } else {
                        for from in (0..buf.calls.len()).step_by(SNAPSHOT_JOB_CALLS) {
                            jobs.push(job(from, (from + SNAPSHOT_JOB_CALLS).min(buf.calls.len())));
                        }
                    }
                }
                at += buf.calls.len() - open;
            }
            completed.push(at);
            out.push(cols);
        }
        let dest: Vec<[SendPtr; 6]> = out
            .iter_mut()
            .zip(&completed)
            .map(|(c, &n)| {
                // the jobs write the first `n` values of each column they fill, in place
                let threads = c.one_thread.is_none().then_some(&c.thread_ids);
                let tasks = [&c.task_ids, &c.await_ns, &c.ready_wait_ns].into_iter().filter(|_| self.async_cols);
                for v in [&c.starts, &c.ends].into_iter().chain(threads).chain(tasks) {
                    assert!(v.is_empty() && v.capacity() >= n, "column(n) must give an empty vector of capacity n");
                }
                [&mut c.starts, &mut c.ends, &mut c.thread_ids, &mut c.task_ids, &mut c.await_ns, &mut c.ready_wait_ns]
                    .map(|v| SendPtr(v.as_mut_ptr()))
            })
            .collect();
        run(jobs.len(), &|i| {
            let j = &jobs[i];
            let dst = dest[j.region][j.kind].0;
            let (calls, lanes) = (&j.buf.calls[j.from..j.to], &j.buf.lanes[..]);
            // SAFETY (every write below): jobs write disjoint ranges of their column, all
            // within the completed calls counted above (<= its capacity)
            if j.open {
                let completed = calls.iter().enumerate().filter(|(_, c)| c[1] != 0);
                for (at, (slot, c)) in (j.at..).zip(completed) {
                    let slot = j.from + slot;
                    let v = match j.kind {
                        0 => c[0],
                        1 => c[1],
                        2 => j.thread,
                        3 => lanes[slot][0],
                        4 => lanes[slot][1],
                        _ => lanes[slot][2],
                    };
                    unsafe { dst.add(at).write(v) };
                }
                return;
            }
            let dst = unsafe { dst.add(j.at) };
            match j.kind {
                0 => calls.iter().enumerate().for_each(|(k, c)| unsafe { dst.add(k).write(c[0]) }),
                1 => calls.iter().enumerate().for_each(|(k, c)| unsafe { dst.add(k).write(c[1]) }),
                2 => (0..calls.len()).for_each(|k| unsafe { dst.add(k).write(j.thread) }),
                kind => {
                    lanes[j.from..j.to].iter().enumerate().for_each(|(k, l)| unsafe { dst.add(k).write(l[kind - 3]) })
                }
            }
        });
        for (cols, n) in out.iter_mut().zip(completed) {
            // SAFETY: the jobs wrote positions 0..n of every column
            unsafe {
                cols.starts.set_len(n);
                cols.ends.set_len(n);
                if cols.one_thread.is_none() {
                    cols.thread_ids.set_len(n);
                }
            }
            if self.async_cols {
                // SAFETY: as above
                unsafe {
                    cols.task_ids.set_len(n);
                    cols.await_ns.set_len(n);
                    cols.ready_wait_ns.set_len(n);
                }
            }
        }
        out.retain(|c| !c.starts.is_empty());
        out
    }

    /// Rewind every buffer after a written finalize: completed calls are retired, open ones
    /// move to the front (stack slots remapped). Same as [`Recorder::retire`] of a
    /// [`Recorder::watermark`] taken now.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn mark_written(&self) {
        self.retire(&self.watermark());
    }

    /// Which slots are completed now, so that exactly these calls can be retired later
    /// ([`Recorder::retire`]) while recording goes on in between: a checkpoint takes it
    /// with its snapshot and retires only once the snapshot is safely written.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn watermark(&self) -> Watermark {
        let states = self.states();
        let mut per_state = Vec::with_capacity(states.len());
        for st in &states {
            let regions = &*st.regions.get();
            per_state.push(
                regions
                    .iter()
                    .map(|buf| BufMark {
                        len: buf.calls.len(),
                        open: (0..buf.calls.len()).filter(|&i| buf.calls[i][1] == 0).collect(),
                    })
                    .collect(),
            );
        }
        Watermark { per_state }
    }

    /// Retire the calls that were completed when `mark` was taken; everything else stays
    /// (calls open then, whether or not they have completed since, and calls entered
    /// since), moved to the front in slot order with stack slots remapped. The next
    /// snapshot reports each kept call once more, no retired one.
    ///
    /// `mark` must be the latest watermark of this recorder, and no other retire (or
    /// [`Recorder::mark_written`]) may have happened since it was taken (the slot numbers
    /// it holds would no longer be valid).
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn retire(&self, mark: &Watermark) {
        let states = self.states();
        // remaps[state][region]: old slot -> new slot (-1 = retired), for open task-lane entries.
        let mut remaps: Vec<Vec<Option<Vec<i64>>>> = Vec::with_capacity(states.len());
        for (st, marks) in states.iter().zip(&mark.per_state) {
            let regions = &mut *st.regions.get();
            let mut per_region = Vec::with_capacity(regions.len());
            for (buf, m) in regions.iter_mut().zip(marks) {
                let n = buf.calls.len();
                // slot i is retired iff i < m.len and it was not open at the mark
                let retire_count = m.len - m.open.len();
                if retire_count == 0 {
                    per_region.push(None);
                    continue;
                }
                buf.retired += retire_count as u64;
                if retire_count == n {
                    buf.calls.clear();
                    buf.lanes.clear();
                    per_region.push(None);
                    continue;
                }
                let mut remap = vec![-1i64; n];
                let mut open_then = m.open.iter().peekable();
                let mut new = 0usize;
                for (old, target) in remap.iter_mut().enumerate() {
                    let keep = old >= m.len || open_then.next_if_eq(&&old).is_some();
                    if !keep {
                        continue;
                    }
                    buf.calls[new] = buf.calls[old];
                    if st.async_cols {
                        buf.lanes[new] = buf.lanes[old];
                    }
                    *target = new as i64;
                    new += 1;
                }
                buf.calls.truncate(new);
                if st.async_cols {
                    buf.lanes.truncate(new);
                }
                per_region.push(Some(remap));
            }
            // Every slot on a stack is open now, so it was open at the mark (or entered
            // since) and is kept: the remap of a stack entry is never -1.
            for e in (*st.bare.get()).iter_mut() {
                if let (true, Some(Some(remap))) = (e.slot >= 0, per_region.get(e.region as usize)) {
                    e.slot = remap[e.slot as usize];
                }
            }
            remaps.push(per_region);
        }
        for task in self.task_records() {
            let stack = &mut *task.stack.get();
            for e in stack.iter_mut() {
                if e.slot < 0 {
                    continue;
                }
                let si = (*e.state).index;
                if let Some(Some(remap)) = remaps.get(si).and_then(|r| r.get(e.region as usize)) {
                    e.slot = remap[e.slot as usize];
                }
            }
        }
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

    /// Names of regions (by id) with an open call on any thread, paused placeholders
    /// excluded: `(region, thread index)` pairs.
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn open_regions(&self) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        for st in self.states() {
            let mut open: Vec<u32> = (*st.bare.get()).iter().filter(|e| e.slot >= 0).map(|e| e.region).collect();
            open.sort_unstable();
            open.dedup();
            out.extend(open.into_iter().map(|r| (r, st.index)));
        }
        for task in self.task_records() {
            for e in (*task.stack.get()).iter() {
                if e.slot >= 0 {
                    out.push((e.region, (*e.state).index));
                }
            }
        }
        out
    }
}

/// A call still open when [`Recorder::open_calls`] looked: where it was entered and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenCall {
    pub region: u32,
    /// Dense index of the entering thread's state (= thread-table index with tracking).
    pub thread: usize,
    /// Task-table index of the lane it is open on, `-1` on the thread's bare lane.
    pub task: i64,
    /// Entry time, absolute ns (recording clock).
    pub start_ns: i64,
    /// ns its task has been suspended since the entry so far (0 on a bare lane or without
    /// async columns).
    pub await_ns: i64,
    /// ns of that suspension its task was ready but not resumed, `-1` when not known (0 on
    /// a bare lane or without async columns).
    pub ready_wait_ns: i64,
}

impl Recorder {
    /// Every call open now on any lane (paused placeholders excluded), bare lanes first
    /// (thread index order, outermost first), then task lanes (task index order).
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    pub unsafe fn open_calls(&self) -> Vec<OpenCall> {
        let mut out = Vec::new();
        for st in self.states() {
            let regions = &*st.regions.get();
            let mut bare: Vec<OpenCall> = Vec::new();
            for e in (*st.bare.get()).iter().filter(|e| e.slot >= 0) {
                let start_ns =
                    regions.get(e.region as usize).and_then(|b| b.calls.get(e.slot as usize)).map_or(0, |c| c[0]);
                bare.push(OpenCall {
                    region: e.region,
                    thread: st.index,
                    task: -1,
                    start_ns,
                    await_ns: 0,
                    ready_wait_ns: 0,
                });
            }
            bare.sort_by_key(|c| c.start_ns);
            out.extend(bare);
        }
        for task in self.task_records() {
            for e in (*task.stack.get()).iter().filter(|e| e.slot >= 0) {
                let st = &*e.state;
                let regions: &Vec<RegionBuf> = &*st.regions.get();
                let buf = &regions[e.region as usize];
                let slot = e.slot as usize;
                let start_ns = buf.calls.get(slot).map_or(0, |c| c[0]);
                let lane = buf.lanes.get(slot).filter(|_| st.async_cols);
                let await_ns = lane.map_or(0, |l| l[1] + task.suspended_ns());
                let ready_wait_ns = lane.map_or(0, |l| ready_exit(l[2], task.ready_wait_ns()));
                out.push(OpenCall {
                    region: e.region,
                    thread: st.index,
                    task: task.index as i64,
                    start_ns,
                    await_ns,
                    ready_wait_ns,
                });
            }
        }
        out
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
