//! `fork()`: what a recorder inherited by a forked child does about the threads it knew.
//!
//! A forked child has one thread, the one that called `fork()`; every other thread of the
//! parent is gone. The child inherits the recorder with the parent's buffered (not yet
//! finalized) calls and the parent's thread table. If the child finalizes the parent's run,
//! its file must report the parent's pre-fork calls and the child's, and every thread id in
//! it must have a row (the reference resets its thread table in the child and writes ids
//! with no row). So the rows stay, and the child's view is made true:
//!
//! * threads that did not survive the fork are marked ended at the fork
//!   ([`Recorder::after_fork_in_child`]); their completed calls are still reported, their
//!   open calls can never close and are not;
//! * the forking thread goes on as the child's main thread with the same index, lane and
//!   open scopes (a `with` entered before the fork closes in the child): its row takes the
//!   child's OS thread id, and its CPU time continues from the pre-fork reading (sampled by
//!   [`Recorder::before_fork`]) because the OS restarts the thread CPU clock in the child;
//! * threads the child starts register lazily (first region entered) with indices after
//!   the inherited rows, so ids never collide.
//!
//! Nothing registers threads or tasks in the child unless it records a call: the hooks are
//! taken out by the Python side (`scope_profiler._fork`).
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::{now_ns, Recorder, ThreadRecord};

impl ThreadRecord {
    /// The OS thread id: the registration-time one, or the child's after a fork.
    pub fn native_id(&self) -> i64 {
        match self.native_id_now.load(Ordering::Relaxed) {
            0 => self.info.native_id,
            id => id,
        }
    }
}

impl Recorder {
    /// In the parent, on the thread about to call `fork()`: sample its CPU time, so a child
    /// can continue the row from it.
    pub fn before_fork(&self) {
        self.sample_current_thread_cpu();
    }

    /// In a forked child, on its only thread (the one that forked), before anything else
    /// records: mark the threads that did not survive the fork as ended now, and carry the
    /// calling thread's row over to the child (`native_id` = the child's OS thread id; CPU
    /// time continues from the pre-fork reading). Returns how many rows were closed.
    pub fn after_fork_in_child(&self, native_id: i64) -> usize {
        let me = self.local();
        let now = now_ns();
        let mut closed = 0;
        for st in self.states() {
            let Some(rec) = st.record() else { continue };
            if me.is_some_and(|p| std::ptr::eq(p, Arc::as_ptr(&st))) {
                rec.cpu_base.store(rec.cpu_ns(), Ordering::Relaxed);
                rec.native_id_now.store(native_id, Ordering::Relaxed);
            } else if rec.alive() {
                rec.end_ns.store(now, Ordering::Release);
                closed += 1;
            }
        }
        closed
    }
}

#[cfg(test)]
mod tests {
    use crate::{local_or_register, Recorder, ThreadInfo, UNKNOWN};
    use std::sync::{mpsc, Arc};
    use std::thread;

    #[test]
    fn child_view_closes_other_threads_and_continues_the_caller() {
        let rec = Arc::new(Recorder::new(4, true));
        let me = local_or_register(&rec, || ThreadInfo { name: "main".into(), native_id: 11, ..Default::default() });
        // SAFETY: this thread's own state.
        let me = unsafe { &*me };
        me.enter(0, false);
        let (ready_tx, ready_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let r2 = rec.clone();
        let other = thread::spawn(move || {
            let (st, _) =
                r2.register_current_thread(ThreadInfo { name: "w".into(), native_id: 12, ..Default::default() });
            st.enter(0, false);
            st.exit(0);
            ready_tx.send(()).unwrap();
            done_rx.recv().unwrap(); // alive during the "fork"
        });
        ready_rx.recv().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i ^ (x >> 5));
        }
        std::hint::black_box(x);
        rec.before_fork();
        let before = rec.thread_rows(0);
        assert_eq!(rec.after_fork_in_child(99), 1);
        let rows = rec.thread_rows(0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].info.native_id, 99);
        assert_eq!(rows[0].end_ns, UNKNOWN);
        // no fork happened here, so the clock did not restart: base + clock >= before
        assert!(rows[0].cpu_ns >= before[0].cpu_ns);
        assert_eq!(rows[1].info.native_id, 12);
        assert!(rows[1].end_ns > 0, "the other thread is closed in the child's view");
        me.exit(0); // the caller's open scope still closes
        let snap = unsafe { rec.snapshot(1) };
        assert_eq!(snap[0].thread_ids, vec![0, 1]);
        done_tx.send(()).unwrap();
        other.join().unwrap();
    }
}
