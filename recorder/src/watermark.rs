//! Retiring what a checkpoint wrote: the completed slots at one moment ([`Watermark`]),
//! and [`Recorder::retire`] of exactly those, open calls moved to the front.

use crate::Recorder;

/// The completed slots of every buffer at one moment ([`Recorder::watermark`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watermark {
    /// Per thread state (index order), per region id.
    pub(crate) per_state: Vec<Vec<BufMark>>,
}

/// One buffer at a [`Watermark`]: its length and its open slots (ascending).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BufMark {
    pub(crate) len: usize,
    pub(crate) open: Vec<usize>,
}

impl Recorder {
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
}
