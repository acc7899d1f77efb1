//! The calls open now, on every lane: which regions ([`Recorder::open_regions`]) and each
//! call with its entry time ([`Recorder::open_calls`]).

use crate::thread_state::RegionBuf;
use crate::Recorder;

impl Recorder {
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
    /// ns its thread has spent in task steps since the entry so far, on a bare lane with
    /// async columns (0 otherwise).
    pub task_step_ns: i64,
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
            let steps_now = st.task_step_ns(crate::now_ns());
            for e in (*st.bare.get()).iter().filter(|e| e.slot >= 0) {
                let buf = regions.get(e.region as usize);
                let start_ns = buf.and_then(|b| b.calls.get(e.slot as usize)).map_or(0, |c| c[0]);
                let task_step_ns = match buf.and_then(|b| b.lanes.get(e.slot as usize)) {
                    Some(l) if st.async_cols => l[1] + steps_now,
                    _ => 0,
                };
                bare.push(OpenCall {
                    region: e.region,
                    thread: st.index,
                    task: -1,
                    start_ns,
                    await_ns: 0,
                    ready_wait_ns: 0,
                    task_step_ns,
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
                let ready_wait_ns = lane.map_or(0, |l| crate::thread_state::ready_exit(l[2], task.ready_wait_ns()));
                out.push(OpenCall {
                    region: e.region,
                    thread: st.index,
                    task: task.index as i64,
                    start_ns,
                    await_ns,
                    ready_wait_ns,
                    task_step_ns: 0,
                });
            }
        }
        out
    }
}
