//! Task lanes: asyncio and trio tasks, and greenlets.
//!
//! A [`TaskRecord`] is one row of the task table plus the task's own scope stack (its
//! *lane stack*). While a task runs a step on a thread, that thread's
//! [`ThreadState`](crate::ThreadState) points at the record ([`ThreadState::set_current`]
//! (crate::ThreadState::set_current)); the region enter/exit path reads that pointer and
//! pushes/pops the task's lane stack instead of the thread's per-region stacks. So two
//! tasks interleaved on one thread close their own scopes, and a call entered in one task
//! can only be closed by that task.
//!
//! Step accounting (spec-recorder §4/§5): `suspended_ns` grows at the start of a step by
//! the gap since the previous step ended; a call's await time is `suspended_ns(exit) -
//! suspended_ns(entry)` of its task.
//!
//! Synchronization: the counters are atomics (plain loads/stores, no read-modify-write),
//! written by the thread running the task's step; the lane stack is an `UnsafeCell`
//! mutated only inside a step (or a greenlet's run) under the crate contract (external
//! serialization of enter/exit, e.g. the GIL).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use crate::{now_ns, ThreadState, UNKNOWN};

/// The ready-wait clock of a lane whose ready moments are not all known
/// ([`TaskRecord::ready_wait_ns`]).
pub const READY_UNKNOWN: i64 = i64::MIN;

/// `"task"` (asyncio, trio) or `"greenlet"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    Task,
    Greenlet,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Task => "task",
            TaskKind::Greenlet => "greenlet",
        }
    }
}

/// One open call on a task's lane: region id, slot in the entering thread's buffer of
/// that region (`-1` = entered while paused) and that thread's state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaneEntry {
    pub region: u32,
    pub slot: i64,
    pub state: *const ThreadState,
}

/// One row of the task table and the task's lane stack.
pub struct TaskRecord {
    pub index: usize,
    pub kind: TaskKind,
    /// Creation time, absolute ns.
    pub created_ns: i64,
    name: Mutex<String>,
    coro_name: Mutex<String>,
    thread_index: AtomicI64,
    done_ns: AtomicI64,
    steps: AtomicI64,
    running_ns: AtomicI64,
    suspended_ns: AtomicI64,
    ready_wait_ns: AtomicI64,
    last_step_end_ns: AtomicI64,
    step_started_ns: AtomicI64,
    pub(crate) stack: UnsafeCell<Vec<LaneEntry>>,
}

// SAFETY: `stack` is touched only by the thread running the task (enter/exit inside a
// step) or by readers under the crate contract; the rest is atomics and mutexes.
unsafe impl Sync for TaskRecord {}
unsafe impl Send for TaskRecord {}

impl std::fmt::Debug for TaskRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRecord")
            .field("index", &self.index)
            .field("kind", &self.kind)
            .field("name", &self.name())
            .field("steps", &self.steps())
            .finish()
    }
}

#[inline(always)]
fn get(a: &AtomicI64) -> i64 {
    a.load(Ordering::Relaxed)
}
#[inline(always)]
fn set(a: &AtomicI64, v: i64) {
    a.store(v, Ordering::Relaxed)
}

impl TaskRecord {
    pub(crate) fn new(index: usize, kind: TaskKind, name: String, coro_name: String, thread_index: i64) -> Self {
        TaskRecord {
            index,
            kind,
            created_ns: now_ns(),
            name: Mutex::new(name),
            coro_name: Mutex::new(coro_name),
            thread_index: AtomicI64::new(thread_index),
            done_ns: AtomicI64::new(UNKNOWN),
            steps: AtomicI64::new(0),
            running_ns: AtomicI64::new(0),
            suspended_ns: AtomicI64::new(0),
            ready_wait_ns: AtomicI64::new(0),
            last_step_end_ns: AtomicI64::new(0),
            step_started_ns: AtomicI64::new(0),
            stack: UnsafeCell::new(Vec::with_capacity(4)),
        }
    }

    pub fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set_name(&self, name: String) {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = name;
    }
    pub fn coro_name(&self) -> String {
        self.coro_name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set_coro_name(&self, name: String) {
        *self.coro_name.lock().unwrap_or_else(|e| e.into_inner()) = name;
    }
    /// Thread-table index of the thread that ran the latest step (initially the creator).
    pub fn thread_index(&self) -> i64 {
        get(&self.thread_index)
    }
    pub fn done_ns(&self) -> i64 {
        self.done_ns.load(Ordering::Acquire)
    }
    pub fn steps(&self) -> i64 {
        get(&self.steps)
    }
    pub fn running_ns(&self) -> i64 {
        get(&self.running_ns)
    }
    /// Total time suspended between steps so far (the await clock of this lane).
    #[inline(always)]
    pub fn suspended_ns(&self) -> i64 {
        get(&self.suspended_ns)
    }

    /// Total time the task was ready to resume but not resumed, the loop running other code
    /// (the ready-wait clock of this lane): the part of each suspension after the moment
    /// the task became ready ([`TaskRecord::ready_since`]). Never more than
    /// [`TaskRecord::suspended_ns`]. [`READY_UNKNOWN`] once a step resumed the task with no
    /// known ready moment (a loop that does not tell, a greenlet switch): from then on the
    /// clock of this lane says nothing.
    #[inline(always)]
    pub fn ready_wait_ns(&self) -> i64 {
        get(&self.ready_wait_ns)
    }

    /// The step about to start at `now` resumes the task, which was ready since `ready_ns`
    /// (the ready moment of the loop's handle that resumes it; `None`: not known). Call
    /// before [`TaskRecord::enter_step`]. The first step has no suspension before it:
    /// nothing, known or not. Returns the step's ready wait (`None` when not known or the
    /// first step).
    #[inline(always)]
    pub fn ready_since(&self, now: i64, ready_ns: Option<i64>) -> Option<i64> {
        let last = get(&self.last_step_end_ns);
        if last == 0 {
            return None;
        }
        let clock = get(&self.ready_wait_ns);
        match ready_ns {
            Some(ready) if clock != READY_UNKNOWN => {
                let wait = (now - ready.max(last)).max(0);
                set(&self.ready_wait_ns, clock + wait);
                Some(wait)
            }
            _ => {
                set(&self.ready_wait_ns, READY_UNKNOWN);
                None
            }
        }
    }

    /// A step starts on thread `thread_index` at `now`.
    #[inline(always)]
    pub fn enter_step(&self, now: i64, thread_index: i64) {
        let last = get(&self.last_step_end_ns);
        if last != 0 {
            set(&self.suspended_ns, get(&self.suspended_ns) + (now - last));
        }
        set(&self.steps, get(&self.steps) + 1);
        set(&self.step_started_ns, now);
        set(&self.thread_index, thread_index);
    }

    /// The current step ends at `now`.
    #[inline(always)]
    pub fn leave_step(&self, now: i64) {
        set(&self.running_ns, get(&self.running_ns) + (now - get(&self.step_started_ns)));
        set(&self.last_step_end_ns, now);
    }

    /// The task is done (first call wins).
    pub fn finish(&self) {
        if self.done_ns() == UNKNOWN {
            self.done_ns.store(now_ns(), Ordering::Release);
        }
    }

    /// Number of calls open on this lane (paused placeholders excluded).
    pub fn open_calls(&self) -> usize {
        // SAFETY: crate contract (owning step or external serialization).
        unsafe { &*self.stack.get() }.iter().filter(|e| e.slot >= 0).count()
    }

    #[inline(always)]
    pub(crate) fn push(&self, entry: LaneEntry) {
        // SAFETY: crate contract.
        unsafe { &mut *self.stack.get() }.push(entry);
    }

    /// Remove and return the innermost open entry of `region` on this lane.
    #[inline(always)]
    pub(crate) fn pop_region(&self, region: u32) -> Option<LaneEntry> {
        // SAFETY: crate contract.
        let stack = unsafe { &mut *self.stack.get() };
        match stack.last() {
            Some(e) if e.region == region => stack.pop(),
            _ => {
                let pos = stack.iter().rposition(|e| e.region == region)?;
                Some(stack.remove(pos))
            }
        }
    }
}

/// A task-table row as plain values, timestamps relative to an origin (`-1` kept).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRowData {
    pub index: i64,
    pub kind: &'static str,
    pub name: String,
    pub coro_name: String,
    pub thread_index: i64,
    pub created_ns: i64,
    pub done_ns: i64,
    pub steps: i64,
    pub running_ns: i64,
    pub suspended_ns: i64,
    /// ns ready to resume but not resumed ([`TaskRecord::ready_wait_ns`]); `-1` when not
    /// known.
    pub ready_wait_ns: i64,
}
