//! Event loops as the recorder sees them: when each callback became ready, which one runs
//! now, when the loop waited with nothing to do, and which runs held the loop's thread for
//! long (loop blocks).
//!
//! An instrumented loop keeps one [`LoopTimes`] beside its ready queue (asyncio: the
//! `collections.deque` `loop._ready`, replaced by a queue that stamps each handle). Every
//! handle gets a *ready moment* when it is queued:
//! * a timer moved to the queue: its deadline (it was due then, not when the loop got to it);
//! * a handle queued by a plain callback on the loop's thread (a future completed by a
//!   timer or an I/O callback, the wakeup of the task awaiting it): the moment it was queued
//!   minus how late that callback ran, so a timer that fires late makes the task it wakes
//!   late by the same amount (readiness carried through the loop's callbacks);
//! * anything else (a task step queueing its own next step, another task's wakeup, what the
//!   task's bookkeeping queues after its step - its done callbacks, the step after a bare
//!   `yield` - a call from another thread): the moment it was queued;
//! * but a handle that became ready while the loop waited for I/O with nothing to run (its
//!   `select` sleeping through a timer's deadline by the selector's millisecond granularity)
//!   is ready when the loop woke up, the moment it was queued: the loop was not running
//!   other code meanwhile. Only a timer due before that wait began keeps its deadline.
//!
//! A ready moment is never before the loop started running ([`LoopTimes::run_started`]). The
//! handle the loop runs now is published per thread ([`handle_ready`]), so the step timer of
//! the task it resumes knows since when the task was ready: that step's *ready wait* is
//! the part of the task's suspension after that moment, when the task could have run but
//! the loop was running other code.
//!
//! Per thread the step timers also count the top-level task steps ([`steps_started`], so a
//! handle's run knows whether a task step ran in it) and whether one runs now
//! ([`in_task_step`]).
use std::cell::Cell;
use std::collections::VecDeque;

/// Runs of a task step or callback shorter than this are not recorded as loop blocks.
pub const BLOCK_FLOOR_NS: i64 = 1_000_000;

/// The handle an instrumented loop runs on this thread now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Running {
    ready_ns: i64,
    start_ns: i64,
    /// Top-level task steps started on the thread before this handle started.
    steps: u64,
}

struct LoopThread {
    /// Top-level task steps started on this thread so far.
    steps: Cell<u64>,
    /// Step timers active on this thread (nested: one per recorder wrapping a task, and an
    /// eager task's first step inside another's).
    step_depth: Cell<u32>,
    /// The handle an instrumented loop runs here now, if any.
    handle: Cell<Option<Running>>,
    /// The latest clock reading of a step's end or a handle queued on this thread.
    last_read: Cell<i64>,
}

thread_local! {
    static THREAD: LoopThread = const {
        LoopThread { steps: Cell::new(0), step_depth: Cell::new(0), handle: Cell::new(None), last_read: Cell::new(0) }
    };
}

/// Top-level task steps started on the calling thread so far.
pub fn steps_started() -> u64 {
    THREAD.with(|t| t.steps.get())
}

/// Whether a task step runs on the calling thread now.
pub fn in_task_step() -> bool {
    THREAD.with(|t| t.step_depth.get() > 0)
}

/// A step timer starts a step on the calling thread; what it learns: [`StepStart`]. Each
/// call is paired with a [`step_ends`].
pub fn step_begins() -> StepStart {
    THREAD.with(|t| {
        let depth = t.step_depth.get();
        t.step_depth.set(depth + 1);
        if depth > 0 {
            return StepStart::Nested(t.handle.get().map(|r| r.ready_ns));
        }
        let steps = t.steps.get() + 1;
        t.steps.set(steps);
        match t.handle.get() {
            Some(r) => {
                StepStart::Handle { ready_ns: r.ready_ns, start_ns: (r.steps + 1 == steps).then_some(r.start_ns) }
            }
            None => StepStart::NoHandle,
        }
    })
}

/// The step timer that called [`step_begins`] ends its step at `end_ns`.
pub fn step_ends(end_ns: i64) {
    THREAD.with(|t| {
        t.step_depth.set(t.step_depth.get().saturating_sub(1));
        t.last_read.set(end_ns);
    });
}

/// What a step timer learns when its step starts ([`step_begins`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStart {
    /// The outermost step timer of a step resumed by a handle of an instrumented loop, ready
    /// since `ready_ns`; `start_ns`: when that handle started, if this is the first step
    /// it runs (the moment the loop took it, a few hundred ns before the step: a step
    /// timer may take it as the step's start instead of reading the clock again).
    Handle { ready_ns: i64, start_ns: Option<i64> },
    /// The outermost step timer, but no instrumented loop runs a handle here: the moment the
    /// task became ready is not known.
    NoHandle,
    /// Inside another step (another recorder's timer of the same step, or an eager task's
    /// first step run by `create_task` inside a step), with the ready moment of the handle
    /// running, if any.
    Nested(Option<i64>),
}

impl StepStart {
    /// The ready moment of the handle running the step, if known.
    pub fn ready_ns(self) -> Option<i64> {
        match self {
            StepStart::Handle { ready_ns, .. } => Some(ready_ns),
            StepStart::Nested(r) => r,
            StepStart::NoHandle => None,
        }
    }
}

/// The ready moment of the handle an instrumented loop runs on the calling thread now.
pub fn handle_ready() -> Option<i64> {
    THREAD.with(|t| t.handle.get().map(|r| r.ready_ns))
}

fn publish(handle: Option<Running>) {
    THREAD.with(|t| t.handle.set(handle));
}

/// One run of a handle that ended: `[start_ns, end_ns)`, ready since `ready_ns`, and whether a
/// task step ran in it (else it was a plain callback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleRun {
    pub ready_ns: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub task_step: bool,
}

/// The ready-queue timing of one instrumented loop (see the module docs). The caller keeps
/// the handles themselves in the same order and calls these methods from the queue's
/// operations; times are ns on the recording clock.
#[derive(Debug, Default)]
pub struct LoopTimes {
    /// Ready moment of each queued handle, queue order.
    ready: VecDeque<i64>,
    /// The handle running now: ready moment, start, and the thread's step count at its start.
    running: Option<(Running, u64)>,
    /// The loop waits with nothing ready since then (end of a batch with an empty queue).
    idle_since: Option<i64>,
    /// When the loop started running (ready moments are not earlier).
    run_start: i64,
    /// Identity of the thread running the loop ([`thread_key`]), 0 before its first run.
    thread: usize,
}

/// An identity of the calling thread, cheap to take (the address of a thread-local).
pub fn thread_key() -> usize {
    THREAD.with(|t| t as *const LoopThread as usize)
}

impl LoopTimes {
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles queued.
    pub fn len(&self) -> usize {
        self.ready.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty()
    }

    /// The loop starts running on the calling thread at `now`.
    pub fn run_started(&mut self, now: i64) {
        self.run_start = now;
        self.thread = thread_key();
        self.idle_since = None;
    }

    /// The loop stopped running at `now`: the handle running (if any) ends.
    pub fn run_stopped(&mut self, now: i64) -> Option<HandleRun> {
        self.idle_since = None;
        self.end_running(now)
    }

    /// A handle is queued at `now` (at the back, or at the front with `front`); `due` is a
    /// timer's deadline. Returns its ready moment.
    pub fn push(&mut self, now: i64, due: Option<i64>, front: bool) -> i64 {
        let mut ready = due.map_or(now, |d| d.min(now));
        if self.idle_since.is_some_and(|idle| ready >= idle) {
            ready = now; // became ready while the loop slept: ready when it woke (module docs)
        }
        if let Some((running, at)) = self.running {
            let (key, plain_callback) = THREAD.with(|t| {
                t.last_read.set(now);
                // no task step began in the running handle: a plain callback
                (t as *const LoopThread as usize, t.step_depth.get() == 0 && t.steps.get() == at)
            });
            if key == self.thread && plain_callback {
                ready = ready.min(now - (running.start_ns - running.ready_ns).max(0));
            }
        }
        if front {
            self.ready.push_front(ready);
        } else {
            self.ready.push_back(ready);
        }
        ready
    }

    /// The moment the loop takes its next handle, when it need not read the clock: the
    /// handle running ran a task step, which has ended, and the thread's latest reading
    /// since (that step's end, or a handle the task's bookkeeping queued after it) is a few
    /// hundred ns before the loop takes the next handle. `None`: read the clock.
    #[inline]
    pub fn next_start(&self) -> Option<i64> {
        let (running, at) = self.running?;
        THREAD.with(|t| {
            let read = t.last_read.get();
            (t.steps.get() != at && t.step_depth.get() == 0 && read >= running.start_ns).then_some(read)
        })
    }

    /// The loop takes the next handle at `now` (to run it, or to drop it if cancelled): the
    /// handle running so far ends. Returns the run that ended, if any.
    pub fn pop_front(&mut self, now: i64) -> Option<HandleRun> {
        let ready = self.ready.pop_front();
        let (ended, next) = THREAD.with(|t| {
            let steps = t.steps.get();
            let ended = self.running.take().map(|(r, at)| HandleRun {
                ready_ns: r.ready_ns,
                start_ns: r.start_ns,
                end_ns: now.max(r.start_ns),
                task_step: steps != at,
            });
            let next =
                ready.map(|ready| Running { ready_ns: ready.max(self.run_start).min(now), start_ns: now, steps });
            t.handle.set(next);
            (ended, next)
        });
        self.running = next.map(|r| (r, r.steps));
        ended
    }

    /// A handle is taken from the back (not to be run).
    pub fn pop_back(&mut self) {
        self.ready.pop_back();
    }

    /// The handle at queue position `at` is taken out (not to be run).
    pub fn remove_at(&mut self, at: usize) {
        self.ready.remove(at);
    }

    /// The loop asks whether anything is ready (the top of an iteration: the batch it ran is
    /// over). With nothing queued it is idle from now until something becomes ready.
    pub fn poll(&mut self, now: i64) -> Option<HandleRun> {
        let ended = self.end_running(now);
        if self.ready.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
        ended
    }

    /// The loop counts the queue to run a batch at `now`: any idle wait ends. Returns its ns.
    pub fn batch(&mut self, now: i64) -> i64 {
        self.end_idle(now)
    }

    /// Everything queued is dropped.
    pub fn clear(&mut self) {
        self.ready.clear();
    }

    fn end_idle(&mut self, at: i64) -> i64 {
        match self.idle_since.take() {
            Some(since) => (at - since).max(0),
            None => 0,
        }
    }

    fn end_running(&mut self, now: i64) -> Option<HandleRun> {
        let (running, steps) = self.running.take()?;
        publish(None);
        Some(HandleRun {
            ready_ns: running.ready_ns,
            start_ns: running.start_ns,
            end_ns: now.max(running.start_ns),
            task_step: steps_started() != steps,
        })
    }
}

/// The measure of a union of intervals that arrive with non-decreasing ends but starts that
/// may reach back (a task ready since a moment before other tasks' waits ended): the recent
/// disjoint pieces are kept to merge with (at most [`UnionOfIntervals::KEPT`]; older ones are
/// final).
#[derive(Debug, Default, Clone)]
pub struct UnionOfIntervals {
    pieces: VecDeque<(i64, i64)>,
    total: i64,
}

impl UnionOfIntervals {
    pub const KEPT: usize = 32;

    /// Add `[start, end)`.
    pub fn add(&mut self, mut start: i64, mut end: i64) {
        if end <= start {
            return;
        }
        while let Some(&(s, e)) = self.pieces.back() {
            if e < start {
                break;
            }
            self.pieces.pop_back();
            self.total -= e - s;
            start = start.min(s);
            end = end.max(e);
        }
        self.pieces.push_back((start, end));
        self.total += end - start;
        if self.pieces.len() > Self::KEPT {
            self.pieces.pop_front();
        }
    }

    /// ns covered.
    pub fn total(&self) -> i64 {
        self.total
    }
}

/// One loop block as recorded: a task step or callback that held its thread for at least
/// [`BLOCK_FLOOR_NS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopBlock {
    /// Dense index of the thread's state (= thread-table index with tracking).
    pub thread: usize,
    /// Task-table index of the step's task, `-1` for a plain callback.
    pub task: i64,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Tasks that were ready and waiting during the block (counted as each resumes);
    /// [`DELAYED_UNKNOWN`] when the loop does not tell when its tasks became ready (a
    /// gevent hub).
    pub delayed_tasks: i64,
}

/// [`LoopBlock::delayed_tasks`] of a block whose loop does not tell ready moments.
pub const DELAYED_UNKNOWN: i64 = -1;

/// The loop blocks of one recorder ([`LoopBlock`]), in the order they ended. Blocks are
/// rare (each holds a loop for a millisecond or more): a mutex is taken to record one, and
/// at a task step's start only when the task's ready wait reaches back before the end of
/// the latest block ([`BlockLog::count_delayed`]), so the common step costs one atomic load.
#[derive(Debug, Default)]
pub struct BlockLog {
    blocks: std::sync::Mutex<Vec<LoopBlock>>,
    /// End of the latest block recorded, ns (0: none).
    latest_end: std::sync::atomic::AtomicI64,
}

impl BlockLog {
    /// Blocks kept at most (beyond, new blocks are not recorded: a program blocking its loop
    /// a thousand times a second for 20 minutes).
    pub const MAX_BLOCKS: usize = 1 << 20;
    /// How far out of end order blocks may be recorded, ns: each is recorded as it ends,
    /// under the GIL, so in practice in end order; a resuming task's scan goes back past
    /// its ready moment by this much.
    const END_ORDER_SLACK_NS: i64 = BLOCK_FLOOR_NS;

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<LoopBlock>> {
        self.blocks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a run of `[start_ns, end_ns)` on thread `thread` by task `task` (-1: a plain
    /// callback) if it lasted at least [`BLOCK_FLOOR_NS`].
    pub fn record(&self, thread: usize, task: i64, start_ns: i64, end_ns: i64) {
        self.record_with(thread, task, start_ns, end_ns, 0)
    }

    /// As [`BlockLog::record`], for a loop whose tasks' ready moments are not known: the
    /// block's delayed tasks are [`DELAYED_UNKNOWN`] and stay so.
    pub fn record_untold(&self, thread: usize, task: i64, start_ns: i64, end_ns: i64) {
        self.record_with(thread, task, start_ns, end_ns, DELAYED_UNKNOWN)
    }

    fn record_with(&self, thread: usize, task: i64, start_ns: i64, end_ns: i64, delayed_tasks: i64) {
        if end_ns - start_ns < BLOCK_FLOOR_NS {
            return;
        }
        let mut blocks = self.lock();
        if blocks.len() < Self::MAX_BLOCKS {
            blocks.push(LoopBlock { thread, task, start_ns, end_ns, delayed_tasks });
            self.latest_end.fetch_max(end_ns, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// A task resumes at `start_ns` on thread `thread`, ready since `ready_ns`: every block
    /// of that thread overlapping `[ready_ns, start_ns)` delayed it. The blocks are scanned
    /// from the latest back to the first that ended before `ready_ns`, so a task kept
    /// waiting through any number of blocks counts in each.
    #[inline(always)]
    pub fn count_delayed(&self, thread: usize, ready_ns: i64, start_ns: i64) {
        if ready_ns >= self.latest_end.load(std::sync::atomic::Ordering::Relaxed) || ready_ns >= start_ns {
            return;
        }
        self.count_delayed_slow(thread, ready_ns, start_ns);
    }

    #[cold]
    fn count_delayed_slow(&self, thread: usize, ready_ns: i64, start_ns: i64) {
        let mut blocks = self.lock();
        for b in blocks.iter_mut().rev() {
            if b.end_ns < ready_ns - Self::END_ORDER_SLACK_NS {
                break;
            }
            if b.thread == thread && b.start_ns < start_ns && b.end_ns > ready_ns && b.delayed_tasks >= 0 {
                b.delayed_tasks += 1;
            }
        }
    }

    /// Every block recorded so far.
    pub fn blocks(&self) -> Vec<LoopBlock> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_counts_overlaps_once_and_merges_reaching_back() {
        let mut u = UnionOfIntervals::default();
        u.add(0, 10);
        u.add(5, 20); // overlaps: +10
        assert_eq!(u.total(), 20);
        u.add(30, 40);
        assert_eq!(u.total(), 30);
        u.add(15, 50); // reaches back over the gap 20..30 and the piece 30..40
        assert_eq!(u.total(), 50);
        u.add(60, 60); // empty
        assert_eq!(u.total(), 50);
        // far more disjoint pieces than kept: the total stays exact
        for k in 0..100 {
            u.add(100 + 10 * k, 105 + 10 * k);
        }
        assert_eq!(u.total(), 50 + 500);
    }

    #[test]
    fn blocks_count_the_tasks_whose_ready_wait_overlaps_them() {
        let log = BlockLog::default();
        log.record(0, 3, 1_000, 1_000 + BLOCK_FLOOR_NS - 1); // under the floor
        log.record(0, 3, 10_000_000, 90_000_000);
        log.record(1, -1, 10_000_000, 90_000_000); // another thread
        log.count_delayed(0, 12_000_000, 90_100_000); // ready during the block
        log.count_delayed(0, 1_000_000, 90_200_000); // ready before it: delayed too
        log.count_delayed(0, 90_000_000, 90_300_000); // ready as it ended: not delayed
        log.count_delayed(0, 5_000_000, 9_000_000); // resumed before it began
        log.record_untold(0, 4, 100_000_000, 120_000_000); // its delays are not known...
        log.count_delayed(0, 101_000_000, 121_000_000); // ...and stay unknown
        let b = log.blocks();
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].task, b[0].delayed_tasks, b[1].delayed_tasks), (3, 2, 0));
        assert_eq!((b[2].task, b[2].delayed_tasks), (4, DELAYED_UNKNOWN));
    }

    #[test]
    fn a_task_kept_waiting_through_many_blocks_counts_in_each() {
        const MS: i64 = 1_000_000;
        let log = BlockLog::default();
        // 100 tasks ready at 1 ms; each holds the loop 2 ms in turn: task k resumes when the
        // k blocks before it have ended, so block k delayed the 99 - k tasks after it
        for k in 0..100 {
            let start = 4 * MS + 2 * MS * k;
            log.count_delayed(0, MS, start);
            log.record(0, k, start, start + 2 * MS);
        }
        let delayed: Vec<i64> = log.blocks().iter().map(|b| b.delayed_tasks).collect();
        assert_eq!(delayed, (0..100).rev().collect::<Vec<i64>>());
    }

    #[test]
    fn ready_moments_carry_a_late_callbacks_lateness_not_a_sleeping_loops() {
        let mut q = LoopTimes::new();
        q.run_started(1_000);
        assert_eq!(q.poll(1_000), None); // nothing queued: idle from 1000
                                         // a timer due at 1200, while the loop slept: ready when it woke
        assert_eq!(q.push(1_500, Some(1_200), false), 1_500);
        assert_eq!(q.push(1_510, Some(900), false), 900); // due before the loop went idle
        assert_eq!(q.batch(1_520), 520);
        q.pop_back();
        q.pop_back();
        q.push(1_500, Some(1_200), false); // busy since: a timer keeps its deadline
        assert_eq!(q.batch(1_500), 0);
        assert_eq!(q.pop_front(1_600), None); // the timer callback starts, 400 late
        assert_eq!(handle_ready(), Some(1_200));
        // the callback completes a future: the task it wakes is as late
        let woken = q.push(1_650, None, false);
        assert_eq!(woken, 1_250);
        let ended = q.pop_front(1_700).unwrap();
        assert_eq!(ended, HandleRun { ready_ns: 1_200, start_ns: 1_600, end_ns: 1_700, task_step: false });
        assert_eq!(handle_ready(), Some(1_250));
        // a task step runs in this handle; what it queues is ready when queued
        assert_eq!(step_begins(), StepStart::Handle { ready_ns: 1_250, start_ns: Some(1_700) });
        assert_eq!(step_begins(), StepStart::Nested(Some(1_250)));
        let own = q.push(1_750, None, false);
        assert_eq!(own, 1_750);
        step_ends(1_760);
        assert_eq!(q.next_start(), None, "inside the step");
        step_ends(1_770);
        assert_eq!(q.next_start(), Some(1_770), "the step ended: its end");
        // what the task's bookkeeping queues after the step (its done callbacks) is ready
        // when queued, not as late as the handle that ran the step
        assert_eq!(q.push(1_775, None, false), 1_775);
        q.pop_back();
        let ended = q.poll(1_800).unwrap();
        assert!(ended.task_step && ended.end_ns == 1_800);
        assert_eq!(handle_ready(), None);
        assert_eq!(step_begins(), StepStart::NoHandle);
        step_ends(1_900);
        assert_eq!(q.next_start(), None, "nothing running");
        // a handle queued before the loop ran again is ready from its start
        let mut fresh = LoopTimes::new();
        fresh.push(10, None, false);
        fresh.run_started(50);
        assert_eq!(fresh.pop_front(60), None);
        assert_eq!(handle_ready(), Some(50));
        fresh.run_stopped(70);
        assert_eq!(handle_ready(), None);
    }
}
