//! Call ids at finalize in one streaming pass: the calls of a rank merged in sorted order
//! (start ascending, end descending, then input position, as [`crate::callstack`]) from the
//! sorted runs its rows consist of, each call numbered as it comes and placed on its lane's
//! open-call stack, which gives its parent and the exclusive time of the calls it closes.
//!
//! It builds no reconstruction (`CallArrays`: 44 bytes per call plus the sort) - only the
//! two id columns it returns, a heap of one entry per run and one stack per lane, which
//! keeps `finalize()`'s time and peak memory down. Parents, exclusive totals and set-aside calls are
//! those of [`crate::callstack::build_lenient`]'s walk (tested against it); whatever this
//! pass does not handle (a crossing call on a rank without lanes, an end before its start)
//! it leaves to that general path, which reports the error.
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::callstack::{lane_id, RegionInput};
use crate::packed_ids::{IdColumn, IdColumnBuilder};

/// Per row (in input order) its call ids and parent ids (`base +` sorted position, `-1`
/// for a root), and per row the Σ of its calls' exclusive ns.
pub(crate) struct Numbered {
    pub call_ids: Vec<IdColumn>,
    pub parent_ids: Vec<IdColumn>,
    pub exclusive_totals: Vec<i64>,
}

/// A call still open on its lane's stack.
struct Frame {
    start: i64,
    end: i64,
    id: i64,
    row: usize,
    exclusive: i64,
}

/// Sort key of a call: (start, end descending). Ties between runs go to the lower run,
/// which is the lower (row, call): runs are listed by row, then by first call.
type Key = (i64, Reverse<i64>);

/// Runs up to this many are merged by scanning their heads (a heap beyond).
const SCAN_MAX_RUNS: usize = 8;

/// The head key of an exhausted run in [`Heads::Scan`]: after every real key (a real call
/// starting at `i64::MAX` ends there too, so its key is smaller).
const EXHAUSTED: Key = (i64::MAX, Reverse(i64::MIN));

/// The next call of every sorted run, smallest key first.
enum Heads {
    /// Few runs: each run's next key ([`EXHAUSTED`] once done), found by a scan.
    Scan { keys: Vec<Key>, live: usize },
    /// Many runs: a heap of (key, run).
    Heap(BinaryHeap<Reverse<(Key, usize)>>),
}

impl Heads {
    fn new(keys: Vec<Key>) -> Heads {
        if keys.len() <= SCAN_MAX_RUNS {
            Heads::Scan { live: keys.len(), keys }
        } else {
            Heads::Heap(keys.into_iter().enumerate().map(|(k, key)| Reverse((key, k))).collect())
        }
    }
    /// The smallest key's run; its entry is left empty until [`Heads::refill`] or
    /// [`Heads::exhaust`].
    fn pop(&mut self) -> Option<usize> {
        match self {
            Heads::Scan { keys, live } => {
                if *live == 0 {
                    return None;
                }
                let mut best = 0;
                for k in 1..keys.len() {
                    if keys[k] < keys[best] {
                        best = k;
                    }
                }
                Some(best)
            }
            Heads::Heap(heap) => heap.pop().map(|Reverse((_, run))| run),
        }
    }
    fn refill(&mut self, run: usize, key: Key) {
        match self {
            Heads::Scan { keys, .. } => keys[run] = key,
            Heads::Heap(heap) => heap.push(Reverse((key, run))),
        }
    }
    /// Run `run` has no call left.
    fn exhaust(&mut self, run: usize) {
        if let Heads::Scan { keys, live } = self {
            keys[run] = EXHAUSTED;
            *live -= 1;
        }
    }
}

/// One sorted run of a row: its calls `at..end`, with the row's columns.
struct Run<'a> {
    row: usize,
    at: usize,
    end: usize,
    starts: &'a [i64],
    ends: &'a [i64],
    threads: Option<&'a [i64]>,
    tasks: Option<&'a [i64]>,
}

impl Run<'_> {
    fn key(&self) -> Key {
        (self.starts[self.at], Reverse(self.ends[self.at]))
    }
    /// The lane of call `at` ([`lane_id`]; -1 without a thread column).
    fn lane(&self) -> i64 {
        match self.threads {
            None => -1,
            Some(t) => lane_id(
                t.get(self.at).copied().unwrap_or(-1),
                self.tasks.and_then(|k| k.get(self.at).copied()).unwrap_or(-1),
            ),
        }
    }
}

/// The sorted runs of `rows` (each row cut where its starts go down, or tie with a longer
/// call after a shorter one); `None` for mismatched columns or an end before its start.
fn sorted_runs<'a>(rows: &[RegionInput<'a>]) -> Option<Vec<Run<'a>>> {
    let mut runs = Vec::new();
    for (k, r) in rows.iter().enumerate() {
        let (s, e) = (r.start_ns, r.end_ns);
        if s.len() != e.len() {
            return None;
        }
        let run = |at: usize, end: usize| Run {
            row: k,
            at,
            end,
            starts: s,
            ends: e,
            threads: r.thread_ids,
            tasks: r.task_ids,
        };
        let mut lo = 0;
        for i in 0..s.len() {
            if e[i] < s[i] {
                return None;
            }
            if i > 0 && (s[i] < s[i - 1] || (s[i] == s[i - 1] && e[i] > e[i - 1])) {
                runs.push(run(lo, i));
                lo = i;
            }
        }
        if !s.is_empty() {
            runs.push(run(lo, s.len()));
        }
    }
    Some(runs)
}

/// Number the calls of `rows` (one rank; `rows` in reconstruction order) from `base`.
/// `None` when this pass cannot: mismatched columns, an end before its start, or calls that
/// do not nest on a rank without lane columns (the general path then reports why).
pub(crate) fn number_calls(rows: &[RegionInput<'_>], base: i64) -> Option<Numbered> {
    let lenient = rows.iter().any(|r| r.thread_ids.is_some());
    let mut runs = sorted_runs(rows)?;
    let mut heads = Heads::new(runs.iter().map(Run::key).collect());
    // a run's calls come out in its order: its ids are packed as they come
    let mut ids: Vec<IdColumnBuilder> = runs.iter().map(|_| IdColumnBuilder::new()).collect();
    let mut parents: Vec<IdColumnBuilder> = runs.iter().map(|_| IdColumnBuilder::new()).collect();
    let mut totals = vec![0i64; rows.len()];
    let mut lanes: HashMap<i64, Vec<Frame>> = HashMap::new();
    let mut last_lane = (i64::MIN, Vec::new());
    let mut id = base;
    while let Some(k) = heads.pop() {
        let run = &mut runs[k];
        let (start, end, row, lane) = (run.starts[run.at], run.ends[run.at], run.row, run.lane());
        run.at += 1;
        if run.at < run.end {
            heads.refill(k, run.key());
        } else {
            heads.exhaust(k);
        }
        if lane != last_lane.0 {
            let stack = lanes.remove(&lane).unwrap_or_default();
            let previous = std::mem::replace(&mut last_lane, (lane, stack));
            if previous.0 != i64::MIN {
                lanes.insert(previous.0, previous.1);
            }
        }
        let stack = &mut last_lane.1;
        // closed at `start`: ended before it, or at it for a call of non-zero length
        while let Some(top) = stack.last() {
            if top.end < start || (top.end == start && top.start != top.end) {
                let done = stack.pop().expect("a top");
                totals[done.row] = totals[done.row].wrapping_add(done.exclusive);
            } else {
                break;
            }
        }
        let dur = end.wrapping_sub(start);
        ids[k].push(id);
        match stack.last_mut() {
            Some(top) if top.end < end => {
                if !lenient {
                    return None;
                }
                // set aside: a root with its whole duration, nobody's parent
                parents[k].push(-1);
                totals[row] = totals[row].wrapping_add(dur);
            }
            top => {
                parents[k].push(match top {
                    Some(top) => {
                        top.exclusive = top.exclusive.wrapping_sub(dur);
                        top.id
                    }
                    None => -1,
                });
                stack.push(Frame { start, end, id, row, exclusive: dur });
            }
        }
        id += 1;
    }
    for frame in lanes.into_values().chain(std::iter::once(last_lane.1)).flatten() {
        totals[frame.row] = totals[frame.row].wrapping_add(frame.exclusive);
    }
    let run_rows: Vec<usize> = runs.iter().map(|r| r.row).collect();
    Some(Numbered {
        call_ids: row_columns(rows.len(), &run_rows, ids),
        parent_ids: row_columns(rows.len(), &run_rows, parents),
        exclusive_totals: totals,
    })
}

/// Each row's column from the columns of its runs (`run_rows[k]`: the row of run `k`, rows
/// ascending): a row of one run keeps it, a row of several is joined (values in run order).
fn row_columns(num_rows: usize, run_rows: &[usize], runs: Vec<IdColumnBuilder>) -> Vec<IdColumn> {
    let mut out: Vec<Option<IdColumn>> = (0..num_rows).map(|_| None).collect();
    let mut runs = runs.into_iter().zip(run_rows).peekable();
    while let Some((first, &row)) = runs.next() {
        if runs.peek().is_none_or(|(_, &r)| r != row) {
            out[row] = Some(first.finish());
            continue;
        }
        let mut joined = IdColumnBuilder::new();
        let mut part = Some(first);
        while let Some(b) = part.take() {
            for v in b.finish().to_vec() {
                joined.push(v);
            }
            part = runs.next_if(|(_, &r)| r == row).map(|(b, _)| b);
        }
        out[row] = Some(joined.finish());
    }
    out.into_iter().map(|c| c.unwrap_or_else(|| IdColumnBuilder::new().finish())).collect()
}
