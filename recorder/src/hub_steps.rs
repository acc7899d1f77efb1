//! Loop blocks of greenlet hubs (gevent): which greenlet steps held a hub's thread.
//!
//! A gevent hub is a greenlet running the thread's event loop; the other greenlets run when
//! it switches into them (a timer fired, I/O became ready, a callback ran) and give the
//! thread back by switching to it. A *step the hub resumed* - from a switch by the hub into
//! another greenlet (a spawned one, or the thread's main greenlet) until that greenlet
//! switches away - holds the loop: while it runs, no timer, I/O or callback of the hub
//! does. Such a step lasting [`BLOCK_FLOOR_NS`](crate::event_loop::BLOCK_FLOOR_NS) or more
//! is a loop block of its greenlet's lane. Not blocks:
//! * the hub's own steps: they include its wait for I/O with nothing to run;
//! * a step another greenlet switched into: no loop resumed it (greenlets without gevent,
//!   a main greenlet's code before its first gevent call, a greenlet the user switched
//!   into directly).
//!
//! The hub does not tell when a greenlet became ready to run (a timer's deadline, I/O's
//! arrival), so the tasks a block delayed are not known:
//! [`DELAYED_UNKNOWN`](crate::event_loop::DELAYED_UNKNOWN).
use std::sync::Mutex;

use crate::event_loop::BlockLog;

/// The lane of a thread's main greenlet (its bare lane) in [`HubSteps::switched`], and the
/// task of its blocks.
pub const MAIN_LANE: i64 = -1;

/// The hubs of one recorder and, per thread, the step a hub resumed that runs now. One
/// mutex, taken once per switch (uncontended: a switch holds the GIL).
#[derive(Debug, Default)]
pub struct HubSteps {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Task indices of the lanes that are hubs (one per thread running gevent).
    hubs: Vec<usize>,
    /// Steps resumed by a hub and running now, one per thread at most.
    resumed: Vec<Resumed>,
}

#[derive(Debug, Clone, Copy)]
struct Resumed {
    thread: usize,
    lane: i64,
    since: i64,
}

impl Inner {
    fn is_hub(&self, lane: i64) -> bool {
        lane >= 0 && self.hubs.contains(&(lane as usize))
    }
}

impl HubSteps {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The greenlet lane with task index `task` is a hub.
    pub fn add_hub(&self, task: usize) {
        let mut inner = self.lock();
        if !inner.hubs.contains(&task) {
            inner.hubs.push(task);
        }
    }

    /// A greenlet switch on thread `thread` at `now`, from lane `origin` to lane `target`
    /// (task indices, [`MAIN_LANE`] for the thread's main greenlet or a greenlet without a
    /// lane): the step the hub resumed on that thread, if `origin` runs it, ends and is a
    /// block of `log` if it lasted the floor or more; the step of `target` begins, resumed
    /// by the hub if `origin` is one and `target` is not.
    pub fn switched(&self, log: &BlockLog, thread: usize, now: i64, origin: i64, target: i64) {
        let mut inner = self.lock();
        if let Some(at) = inner.resumed.iter().position(|r| r.thread == thread) {
            let step = inner.resumed.swap_remove(at);
            // another lane: switches went untraced meanwhile (the trace was off); drop it
            if step.lane == origin {
                log.record_untold(thread, step.lane, step.since, now);
            }
        }
        if inner.is_hub(origin) && !inner.is_hub(target) {
            inner.resumed.push(Resumed { thread, lane: target, since: now });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_loop::{BLOCK_FLOOR_NS, DELAYED_UNKNOWN};

    const MS: i64 = 1_000_000;

    fn blocks(log: &BlockLog) -> Vec<(usize, i64, i64, i64, i64)> {
        log.blocks().iter().map(|b| (b.thread, b.task, b.start_ns, b.end_ns, b.delayed_tasks)).collect()
    }

    #[test]
    fn steps_the_hub_resumed_are_blocks_and_the_hubs_own_steps_are_not() {
        let (log, hubs) = (BlockLog::default(), HubSteps::default());
        hubs.add_hub(0);
        // main runs ordinary code, then waits in gevent: the hub runs (and idles) 100 ms
        hubs.switched(&log, 0, 50 * MS, MAIN_LANE, 0);
        // the hub resumes greenlet 1, which holds the thread 60 ms, then greenlet 2 for 0.5 ms
        hubs.switched(&log, 0, 150 * MS, 0, 1);
        hubs.switched(&log, 0, 210 * MS, 1, 0);
        hubs.switched(&log, 0, 211 * MS, 0, 2);
        hubs.switched(&log, 0, 211 * MS + BLOCK_FLOOR_NS / 2, 2, 0);
        // greenlet 3 on another thread, under that thread's hub 4
        hubs.add_hub(4);
        hubs.switched(&log, 1, 200 * MS, 4, 3);
        // the hub gives main back; main holds the thread 20 ms before its next gevent call
        hubs.switched(&log, 0, 300 * MS, 0, MAIN_LANE);
        hubs.switched(&log, 0, 320 * MS, MAIN_LANE, 0);
        hubs.switched(&log, 1, 205 * MS, 3, 4);
        assert_eq!(
            blocks(&log),
            [
                (0, 1, 150 * MS, 210 * MS, DELAYED_UNKNOWN),
                (0, MAIN_LANE, 300 * MS, 320 * MS, DELAYED_UNKNOWN),
                (1, 3, 200 * MS, 205 * MS, DELAYED_UNKNOWN),
            ]
        );
    }

    #[test]
    fn steps_no_hub_resumed_are_not_blocks() {
        let (log, hubs) = (BlockLog::default(), HubSteps::default());
        hubs.add_hub(0);
        // plain greenlets: main switches into 1, 1 into 2, each running 50 ms
        hubs.switched(&log, 0, 0, MAIN_LANE, 1);
        hubs.switched(&log, 0, 50 * MS, 1, 2);
        hubs.switched(&log, 0, 100 * MS, 2, MAIN_LANE);
        // the hub resumes 1, which switches straight into 2: only 1's step is the hub's
        hubs.switched(&log, 0, 200 * MS, 0, 1);
        hubs.switched(&log, 0, 230 * MS, 1, 2);
        hubs.switched(&log, 0, 290 * MS, 2, 0);
        // a step whose end went untraced (another lane switches away): dropped
        hubs.switched(&log, 0, 300 * MS, 0, 1);
        hubs.switched(&log, 0, 400 * MS, 2, 0);
        assert_eq!(blocks(&log), [(0, 1, 200 * MS, 230 * MS, DELAYED_UNKNOWN)]);
    }
}
