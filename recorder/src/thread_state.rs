//! The recording state of one OS thread ([`ThreadState`]): a buffer per region and the
//! stack of the calls open on the thread's bare lane. [`ThreadState::enter`] and
//! [`ThreadState::exit`] are the hot path.
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::task::LaneEntry;
use crate::{now_ns, TaskRecord, ThreadRecord, CPU_SAMPLE_MASK};

/// What a call entered on a lane whose ready-wait clock reads `clock` keeps: minus the
/// clock, or [`task::READY_UNKNOWN`](crate::task::READY_UNKNOWN) when the clock says nothing.
#[inline(always)]
fn ready_entry(clock: i64) -> i64 {
    if clock == crate::task::READY_UNKNOWN {
        crate::task::READY_UNKNOWN
    } else {
        -clock
    }
}

/// A call's ready wait from what it kept at entry ([`ready_entry`]) and its lane's clock
/// now: the clock's growth, `-1` when the clock said nothing at either end.
#[inline(always)]
pub(crate) fn ready_exit(entry: i64, clock: i64) -> i64 {
    if entry == crate::task::READY_UNKNOWN || clock == crate::task::READY_UNKNOWN {
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
pub(crate) struct RegionBuf {
    /// `[start, end]` per slot, absolute ns; end 0 = open.
    pub(crate) calls: Vec<[i64; 2]>,
    /// `[task index, lane clock, ready wait]` per slot; only with async columns. In a task
    /// (index >= 0) the lane clock is the call's await ns (minus the task's suspended total
    /// while open) and the ready wait its ready-wait ns (minus the task's ready-wait clock
    /// while open, [`task::READY_UNKNOWN`](crate::task::READY_UNKNOWN) when that clock said
    /// nothing at entry, `-1` when not known at exit); on the thread's bare lane (-1) the lane
    /// clock is the ns the thread spent in task steps during the call (minus the thread's
    /// task-step total while open) and the ready wait 0.
    pub(crate) lanes: Vec<[i64; 3]>,
    /// Calls retired by earlier written finalizes.
    pub(crate) retired: u64,
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

/// The recording state of one OS thread for one [`Recorder`](crate::Recorder).
pub struct ThreadState {
    pub(crate) index: usize,
    pub(crate) buffer_limit: usize,
    /// Record `task_ids`/`await_ns` per call (`track_async`).
    pub(crate) async_cols: bool,
    pub(crate) record: Option<Arc<ThreadRecord>>,
    pub(crate) regions: UnsafeCell<Vec<RegionBuf>>,
    /// The calls open on this thread's bare lane (outside any task), innermost last: one
    /// stack for all regions, so a region costs no stack of its own.
    pub(crate) bare: UnsafeCell<Vec<BareEntry>>,
    /// The task lane running on this thread right now; null = the thread's bare lane.
    /// Set by the step timer / greenlet switch; points into the recorder's task registry.
    pub(crate) current: Cell<*const TaskRecord>,
    /// Calls entered while paused (placeholders pushed) over the thread's life: what a
    /// stopped recorder did not record ([`Recorder::stop`](crate::Recorder::stop)).
    pub(crate) placeholders: Cell<u64>,
    /// ns this thread spent inside completed task steps (outermost steps only: an eager
    /// task's first step runs inside its creator's step and is counted once). An atomic
    /// written only by the owning thread (plain load and store), read by the thread table.
    pub(crate) task_steps: AtomicI64,
    /// Task steps open on this thread now (nested: eager tasks) and when the outermost began.
    pub(crate) step_depth: Cell<u32>,
    pub(crate) step_since: Cell<i64>,
}

/// A call open on a thread's bare lane: its region and reserved slot (-1 = entered while
/// paused).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BareEntry {
    pub(crate) region: u32,
    pub(crate) slot: i64,
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

    /// A task step begins on this thread at `now` (the step timer, a greenlet switch).
    /// Must be called on the owning thread, paired with [`ThreadState::end_step`].
    #[inline(always)]
    pub fn begin_step(&self, now: i64) {
        let depth = self.step_depth.get();
        if depth == 0 {
            self.step_since.set(now);
        }
        self.step_depth.set(depth + 1);
    }

    /// The task step begun last on this thread ends at `now`. Must be called on the owning
    /// thread.
    #[inline(always)]
    pub fn end_step(&self, now: i64) {
        match self.step_depth.get() {
            0 => {}
            1 => {
                self.step_depth.set(0);
                let total = self.task_steps.load(Ordering::Relaxed);
                self.task_steps.store(total + (now - self.step_since.get()), Ordering::Relaxed);
            }
            d => self.step_depth.set(d - 1),
        }
    }

    /// ns this thread has spent inside task steps up to `now` (the step running now
    /// included): the clock a call on the thread's bare lane reads at entry and exit.
    #[inline(always)]
    pub fn task_step_ns(&self, now: i64) -> i64 {
        let done = self.task_steps.load(Ordering::Relaxed);
        if self.step_depth.get() == 0 {
            done
        } else {
            done + (now - self.step_since.get())
        }
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
            self.placeholders.set(self.placeholders.get() + 1);
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
                // inside a step only when a call of the bare lane is entered from a task's
                // step (rare): then the clock is read for it
                let steps = if self.step_depth.get() == 0 {
                    self.task_steps.load(Ordering::Relaxed)
                } else {
                    self.task_step_ns(now_ns())
                };
                buf.lanes.push([-1, -steps, 0]);
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
        let buf = &mut regions[region as usize];
        buf.calls[slot][1] = if end == 0 { 1 } else { end };
        if self.async_cols {
            buf.lanes[slot][1] += self.task_step_ns(end);
        }
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
