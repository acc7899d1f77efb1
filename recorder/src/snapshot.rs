//! Copying the completed calls out of the buffers ([`Recorder::snapshot`]), as columns per
//! region ([`RegionColumns`]), optionally as parallel jobs ([`Recorder::snapshot_par`]).

use std::sync::Arc;

use crate::thread_state::RegionBuf;
use crate::{Recorder, ThreadState};

/// Completed calls of one region, ready to become a run row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RegionColumns {
    pub region: u32,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    /// Thread index per call (the [`ThreadState::index`](crate::ThreadState::index)); meaningful with tracking. Empty
    /// when `one_thread` is set.
    pub thread_ids: Vec<i64>,
    /// Set by a snapshot with `lazy_threads` ([`Recorder::snapshot_par`]) when every call is
    /// on this one thread: `thread_ids` is then left empty (that column of one value was a
    /// third of a snapshot's fresh pages); [`RegionColumns::fill_threads`] writes it.
    pub one_thread: Option<i64>,
    /// Task index per call (-1 outside any task); empty without async columns.
    pub task_ids: Vec<i64>,
    /// ns the call's task was suspended between entry and exit (0 on a thread's bare lane);
    /// empty without async columns.
    pub await_ns: Vec<i64>,
    /// ns of that suspension during which the task was ready to resume but the loop ran
    /// other code, `-1` when not known; empty without async columns.
    pub ready_wait_ns: Vec<i64>,
    /// ns the call's thread spent running task steps between entry and exit, for a call on
    /// the thread's bare lane (0 in a task); empty without async columns.
    pub task_step_ns: Vec<i64>,
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
/// (starts, ends, thread ids, task ids, await ns, task-step ns) of region `region` of the snapshot, from
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

impl Recorder {
    /// Completed calls of every region id `< num_regions` that has any, ascending region
    /// id; within a region grouped by thread index ascending, each thread in entry order.
    ///
    /// # Safety
    /// No thread may be inside [`ThreadState::enter`](crate::ThreadState::enter)/
    /// [`ThreadState::exit`](crate::ThreadState::exit) of this
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
        let mut plan = self.plan_snapshot(&states, num_regions, &column, lazy_threads);
        let dest = plan.destinations(self.async_cols);
        let jobs = &plan.jobs;
        run(jobs.len(), &|i| {
            let j = &jobs[i];
            j.copy(dest[j.region][j.kind].0);
        });
        plan.finish(self.async_cols)
    }
}

/// A snapshot being made: its columns (allocated, not yet written), the number of completed
/// calls each region's columns receive, and the copy jobs that write them.
struct SnapshotPlan<'a> {
    out: Vec<RegionColumns>,
    /// Per region of `out`.
    completed: Vec<usize>,
    jobs: Vec<CopyJob<'a>>,
}

impl Recorder {
    /// The columns of every region id `< num_regions` with calls in `states`' buffers, sized
    /// once (completed calls plus the few open ones: closing the open calls into the snapshot
    /// appends them without regrowth), and the jobs that copy them ([`Recorder::snapshot_par`]).
    ///
    /// # Safety
    /// As for [`Recorder::snapshot`].
    unsafe fn plan_snapshot<'a>(
        &self,
        states: &'a [Arc<ThreadState>],
        num_regions: usize,
        column: &impl Fn(usize) -> Vec<i64>,
        lazy_threads: bool,
    ) -> SnapshotPlan<'a> {
        let kinds = if self.async_cols { 7 } else { 3 };
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
                cols.task_step_ns = column(n);
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
        SnapshotPlan { out, completed, jobs }
    }
}

impl SnapshotPlan<'_> {
    /// Where the jobs write: per region, the buffer of each of its six columns (starts,
    /// ends, thread ids, task ids, await ns, task-step ns, ready-wait ns), checked to be empty with room for its
    /// completed calls.
    fn destinations(&mut self, async_cols: bool) -> Vec<[SendPtr; 7]> {
        self.out
            .iter_mut()
            .zip(&self.completed)
            .map(|(c, &n)| {
                // the jobs write the first `n` values of each column they fill, in place
                let threads = c.one_thread.is_none().then_some(&c.thread_ids);
                let tasks =
                    [&c.task_ids, &c.await_ns, &c.task_step_ns, &c.ready_wait_ns].into_iter().filter(|_| async_cols);
                for v in [&c.starts, &c.ends].into_iter().chain(threads).chain(tasks) {
                    assert!(v.is_empty() && v.capacity() >= n, "column(n) must give an empty vector of capacity n");
                }
                [
                    &mut c.starts,
                    &mut c.ends,
                    &mut c.thread_ids,
                    &mut c.task_ids,
                    &mut c.await_ns,
                    &mut c.task_step_ns,
                    &mut c.ready_wait_ns,
                ]
                .map(|v| SendPtr(v.as_mut_ptr()))
            })
            .collect()
    }

    /// The columns, once every job has run: each holds its region's completed calls.
    ///
    /// # Safety
    /// Every job of the plan ran.
    unsafe fn finish(self, async_cols: bool) -> Vec<RegionColumns> {
        let SnapshotPlan { mut out, completed, .. } = self;
        for (cols, n) in out.iter_mut().zip(completed) {
            // SAFETY: the jobs wrote positions 0..n of every column
            unsafe {
                cols.starts.set_len(n);
                cols.ends.set_len(n);
                if cols.one_thread.is_none() {
                    cols.thread_ids.set_len(n);
                }
            }
            if async_cols {
                // SAFETY: as above
                unsafe {
                    cols.task_ids.set_len(n);
                    cols.await_ns.set_len(n);
                    cols.ready_wait_ns.set_len(n);
                    cols.task_step_ns.set_len(n);
                }
            }
        }
        out.retain(|c| !c.starts.is_empty());
        out
    }
}

impl CopyJob<'_> {
    /// Copy this job's slots into its column, whose buffer is `dst`.
    ///
    /// # Safety
    /// `dst` is the buffer of column `kind` of region `region` ([`SnapshotPlan::destinations`]),
    /// with room for the completed calls counted by the plan; no other job writes this
    /// job's positions.
    #[inline]
    unsafe fn copy(&self, dst: *mut i64) {
        let j = self;
        let (calls, lanes) = (&j.buf.calls[j.from..j.to], &j.buf.lanes[..]);
        // SAFETY (every write below): jobs write disjoint ranges of their column, all
        // within the completed calls the plan counted (<= its capacity)
        if j.open {
            let completed = calls.iter().enumerate().filter(|(_, c)| c[1] != 0);
            for (at, (slot, c)) in (j.at..).zip(completed) {
                let slot = j.from + slot;
                let v = match j.kind {
                    0 => c[0],
                    1 => c[1],
                    2 => j.thread,
                    3 => lanes[slot][0],
                    kind => lane_clock(lanes[slot], kind),
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
            3 => lanes[j.from..j.to].iter().enumerate().for_each(|(k, l)| unsafe { dst.add(k).write(l[0]) }),
            kind => lanes[j.from..j.to]
                .iter()
                .enumerate()
                .for_each(|(k, &l)| unsafe { dst.add(k).write(lane_clock(l, kind)) }),
        }
    }
}

/// Column `kind` (4: await ns, 5: task-step ns, 6: ready-wait ns) of a slot's `[task index,
/// lane clock, ready wait]`: the lane clock is the await of a call in a task and the
/// task-step time of a call on the thread's bare lane (`RegionBuf::lanes`), the other of the
/// two columns 0; the ready wait is the slot's own (0 on the bare lane).
#[inline(always)]
fn lane_clock(lane: [i64; 3], kind: usize) -> i64 {
    if kind == 6 {
        lane[2]
    } else if (lane[0] >= 0) == (kind == 4) {
        lane[1]
    } else {
        0
    }
}
