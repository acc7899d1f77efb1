//! One step of a task on a thread, accounted the same way by every step timer (asyncio's
//! coroutine wrapper, trio's instrument): [`TaskStep::begin`] when the step starts,
//! [`TaskStep::end`] when it ends.
//!
//! At the start the task's ready wait grows by the part of its suspension after its ready
//! moment ([`TaskRecord::ready_since`]), the task becomes the thread's lane and its step and
//! the thread's task-step clock start. A step that is the thread's outermost (no other task
//! lane was current: not an eager task's first step inside its creator's) also
//! * counts toward the loop blocks its ready wait overlapped ([`BlockLog::count_delayed`]),
//! * adds that wait to the thread's ready-wait union ([`ThreadRecord::task_resumed`]), and
//! * is recorded as a loop block when it held the thread for the floor or more
//!   ([`BlockLog::record`]).
//!
//! The caller brackets the step with [`crate::event_loop::step_begins`] and
//! [`crate::event_loop::step_ends`] itself: asyncio takes the step's start from what the
//! former says.
//!
//! [`ThreadRecord::task_resumed`]: crate::ThreadRecord::task_resumed
use crate::event_loop::BlockLog;
use crate::task::READY_UNKNOWN;
use crate::{TaskRecord, ThreadState};

/// A task step under way (see the module docs); end it on the thread that began it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskStep {
    /// The lane that was current on the thread before the step (the address of its
    /// `TaskRecord`; 0 = the thread's own lane). An address rather than a pointer so a step
    /// can be kept where `Send` is required; it is only handed back to the same thread.
    prev: usize,
    start_ns: i64,
    /// The loop tells when its tasks became ready, so the tasks a block delayed are counted
    /// (else the block's count is [`crate::event_loop::DELAYED_UNKNOWN`]).
    loop_tells: bool,
}

impl TaskStep {
    /// `task` starts a step on `st`'s thread (the calling thread) at `now`; its loop's
    /// handle (or trio's scheduling) says it was ready since `ready_ns` (`None`: not known,
    /// or nothing to say for a first step). `loop_tells`: the loop running the step tells
    /// when its tasks become ready (asyncio's loops with a timed ready queue, trio; not
    /// uvloop), so the tasks a block of this step delays can be counted.
    #[inline(always)]
    pub fn begin(
        st: &ThreadState,
        task: &TaskRecord,
        now: i64,
        ready_ns: Option<i64>,
        loop_tells: bool,
        blocks: &BlockLog,
    ) -> TaskStep {
        let waited = task.ready_since(now, ready_ns);
        task.enter_step(now, st.index() as i64);
        st.begin_step(now);
        let prev = st.set_current(task as *const TaskRecord);
        if prev.is_null() {
            if let Some(wait) = waited.filter(|&w| w > 0) {
                blocks.count_delayed(st.index(), now - wait, now);
            }
            if let Some(thread) = st.record() {
                match waited {
                    Some(wait) => thread.task_resumed(Some((now - wait, now))),
                    None if task.ready_wait_ns() == READY_UNKNOWN => thread.task_resumed(None),
                    None => {} // a first step: no wait
                }
            }
        }
        TaskStep { prev: prev as usize, start_ns: now, loop_tells }
    }

    /// The step of `task` (the one [`TaskStep::begin`] started) ends at `end`: the thread's
    /// previous lane is current again.
    #[inline(always)]
    pub fn end(self, st: &ThreadState, task: &TaskRecord, end: i64, blocks: &BlockLog) {
        st.set_current(self.prev as *const TaskRecord);
        task.leave_step(end);
        if self.prev == 0 && self.loop_tells {
            blocks.record(st.index(), task.index as i64, self.start_ns, end);
        } else if self.prev == 0 {
            blocks.record_untold(st.index(), task.index as i64, self.start_ns, end);
        }
        st.end_step(end);
    }

    /// When the step began (recording clock, ns).
    pub fn start_ns(self) -> i64 {
        self.start_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_loop::BLOCK_FLOOR_NS;
    use crate::{local_or_register, Recorder, TaskKind, ThreadInfo};

    #[test]
    fn an_outermost_step_is_timed_counted_and_blocks_a_nested_one_is_not() {
        let rec = Recorder::new(64, true);
        // SAFETY: the calling thread's own state, alive as long as `rec`.
        let st = unsafe { &*local_or_register(&rec, ThreadInfo::default) };
        let blocks = rec.loop_blocks();
        let task = rec.new_task(TaskKind::Task, "a".into(), "a".into(), 0);
        let eager = rec.new_task(TaskKind::Task, "b".into(), "b".into(), 0);
        let ms = 1_000_000;

        // first step: no wait; an eager task's first step runs inside it
        let step = TaskStep::begin(st, &task, 10 * ms, None, true, blocks);
        assert_eq!(st.current(), &*task as *const TaskRecord);
        let inner = TaskStep::begin(st, &eager, 11 * ms, None, true, blocks);
        inner.end(st, &eager, 11 * ms + BLOCK_FLOOR_NS * 5, blocks);
        assert_eq!(st.current(), &*task as *const TaskRecord, "the creator's lane again");
        step.end(st, &task, 10 * ms + 20 * ms, blocks);
        assert!(st.current().is_null());
        let b = blocks.blocks();
        assert_eq!(b.len(), 1, "only the outermost step is a block: {b:?}");
        assert_eq!((b[0].task, b[0].start_ns, b[0].end_ns), (task.index as i64, 10 * ms, 30 * ms));

        // second step: ready at 31 ms, resumed at 40 ms (the block ended before: not delayed)
        let step = TaskStep::begin(st, &task, 40 * ms, Some(31 * ms), true, blocks);
        assert_eq!(step.start_ns(), 40 * ms);
        step.end(st, &task, 40 * ms + 10, blocks);
        assert_eq!(task.ready_wait_ns(), 9 * ms);
        assert_eq!(st.record().map(|t| t.ready_wait_ns()), Some(9 * ms));
        assert_eq!(blocks.blocks()[0].delayed_tasks, 0);
        assert_eq!(st.task_step_ns(50 * ms), 20 * ms + 10);

        // a loop that does not tell ready moments (uvloop): its blocks' delays are not known
        let step = TaskStep::begin(st, &task, 60 * ms, None, false, blocks);
        step.end(st, &task, 75 * ms, blocks);
        let last = blocks.blocks()[1];
        assert_eq!((last.start_ns, last.delayed_tasks), (60 * ms, crate::event_loop::DELAYED_UNKNOWN));
    }
}
