//! One region row as a results object sees it: the row's calls, and where its per-call
//! exclusive times come from.
//!
//! A `Region` (Python) is a [`RowView`]: a row of an analysed run plus the rule for its
//! exclusive time. Rows of a loaded or recorded run take theirs from the run's cached
//! reconstruction of their rank; a region built from arrays, alone, has no enclosing calls
//! to compare with and reports its inclusive time (the reference's "detached" region); a
//! slice (`for_thread`, `for_task`, `for_lane`) takes its parent's values at the calls it
//! keeps.
use std::sync::Arc;

use arrow_array::Int64Array;

use crate::callstack::{lane_id, NestingError};
use crate::run::{RegionCalls, Run};
use crate::run_analysis::RunAnalysis;

/// Where a row's per-call exclusive ns come from.
#[derive(Debug, Clone)]
pub enum ExclusiveOf {
    /// The run's reconstruction of the row's rank (every row of that rank, same lane).
    Run,
    /// The row's own durations (no owner: nothing to subtract).
    Inclusive,
    /// The parent view's exclusive values at `picks` (positions in the parent's calls).
    Slice { parent: Box<RowView>, picks: Arc<[u32]> },
}

/// Which calls a slice keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneFilter {
    /// `thread_ids == index`.
    Thread(i64),
    /// `task_ids == index`.
    Task(i64),
    /// Lane id ([`lane_id`]) equal to this.
    Lane(i64),
}

/// A region row of an analysed run, with its exclusive-time rule.
#[derive(Debug, Clone)]
pub struct RowView {
    pub analysis: Arc<RunAnalysis>,
    /// Position in `analysis.run.regions`.
    pub row: usize,
    pub exclusive: ExclusiveOf,
}

impl RowView {
    /// Row `row` of `analysis`, exclusive time from its reconstruction.
    pub fn of_run(analysis: &Arc<RunAnalysis>, row: usize) -> Self {
        RowView { analysis: Arc::clone(analysis), row, exclusive: ExclusiveOf::Run }
    }

    /// `calls` alone in a one-row run named `name` (region id 0), exclusive = inclusive.
    pub fn detached(name: &str, mut calls: RegionCalls) -> Self {
        calls.region = 0;
        let run = Run {
            region_names: vec![name.to_string()],
            num_ranks: calls.rank + 1,
            regions: vec![calls],
            ..Run::default()
        };
        RowView { analysis: Arc::new(RunAnalysis::new(Arc::new(run))), row: 0, exclusive: ExclusiveOf::Inclusive }
    }

    /// The row's calls.
    pub fn calls(&self) -> &RegionCalls {
        &self.analysis.run.regions[self.row]
    }

    /// The row's region name (`""` when the id is out of range).
    pub fn name(&self) -> &str {
        let run = &self.analysis.run;
        run.region_names.get(self.calls().region as usize).map(String::as_str).unwrap_or("")
    }

    /// Durations ns (`end - start`), recorded order.
    pub fn durations_ns(&self) -> Vec<i64> {
        durations(self.calls())
    }

    /// Per-call exclusive ns, recorded order (see [`ExclusiveOf`]).
    ///
    /// Errors: [`NestingError`] when the owning rank cannot be reconstructed.
    pub fn exclusive_ns(&self) -> Result<Int64Array, NestingError> {
        match &self.exclusive {
            ExclusiveOf::Run => self.analysis.exclusive(self.row),
            ExclusiveOf::Inclusive => Ok(Int64Array::from(self.durations_ns())),
            ExclusiveOf::Slice { parent, picks } => {
                let all = parent.exclusive_ns()?;
                Ok(picks.iter().map(|&i| all.value(i as usize)).collect())
            }
        }
    }

    /// Σ exclusive ns: the stored total while the rank has not been reconstructed (the
    /// reference's rule; both are the same sum), else the sum of [`Self::exclusive_ns`].
    /// A stored total that cannot be true (above the row's inclusive total: a damaged file)
    /// is not used; the sum is then reconstructed. A summary-only row gives its stored
    /// total, or its total duration without one.
    pub fn exclusive_total_ns(&self) -> Result<i64, NestingError> {
        let calls = self.calls();
        if let Some(stored) = &calls.stored {
            return Ok(calls.exclusive_total_ns.unwrap_or(stored.total));
        }
        if calls.is_empty() {
            return Ok(0);
        }
        if let (ExclusiveOf::Run, Some(total)) = (&self.exclusive, calls.exclusive_total_ns) {
            if !self.analysis.is_cached(calls.rank) && total as i128 <= inclusive_total_ns(calls) {
                return Ok(total);
            }
        }
        Ok(self.exclusive_ns()?.values().iter().fold(0i64, |a, &x| a.wrapping_add(x)))
    }

    /// Σ await ns of the row's calls, each within `[0, its duration]` as the summaries count
    /// it ([`RegionCalls::await_total_ns`]), `None` when the row has no await column (no
    /// `track_async`).
    pub fn await_total_ns(&self) -> Option<i64> {
        self.calls().await_total_ns()
    }

    /// Positions of the calls `filter` keeps, ascending. `None` when the row lacks the
    /// column the filter reads (no thread column for `Thread`/`Lane`, no task column for `Task`).
    pub fn picks(&self, filter: LaneFilter) -> Option<Vec<u32>> {
        let calls = self.calls();
        let n = calls.len();
        let keep = |pred: &dyn Fn(usize) -> bool| (0..n).filter(|&i| pred(i)).map(|i| i as u32).collect();
        match filter {
            LaneFilter::Thread(t) => calls.thread_ids.as_ref().map(|ids| keep(&|i| ids.value(i) == t)),
            LaneFilter::Task(k) => calls.task_ids.as_ref().map(|ids| keep(&|i| ids.value(i) == k)),
            LaneFilter::Lane(l) => {
                let threads = calls.thread_ids.as_ref()?;
                let tasks = calls.task_ids.as_ref();
                Some(keep(&|i| lane_id(threads.value(i), tasks.map_or(-1, |k| k.value(i))) == l))
            }
        }
    }

    /// The calls at `picks` as a view of their own (every column sliced, per-call metadata
    /// too; source, tags kept; stored totals dropped), exclusive time from this view.
    pub fn select(&self, picks: Vec<u32>) -> RowView {
        let calls = self.calls();
        let take = |a: &Int64Array| -> Int64Array { picks.iter().map(|&i| a.value(i as usize)).collect() };
        let take_opt = |a: &Option<Int64Array>| a.as_ref().map(take);
        let take_ids = |c: &Option<crate::IdColumn>| c.as_ref().map(|c| take(&c.to_array()).into());
        let part = RegionCalls {
            region: 0,
            rank: calls.rank,
            start_ns: take(&calls.start_ns),
            end_ns: take(&calls.end_ns),
            gpu_ns: take_opt(&calls.gpu_ns),
            call_ids: take_ids(&calls.call_ids),
            parent_ids: take_ids(&calls.parent_ids),
            thread_ids: take_opt(&calls.thread_ids),
            task_ids: take_opt(&calls.task_ids),
            await_ns: take_opt(&calls.await_ns),
            ready_wait_ns: take_opt(&calls.ready_wait_ns),
            task_step_ns: take_opt(&calls.task_step_ns),
            source_file: calls.source_file.clone(),
            source_line: calls.source_line,
            source_text: calls.source_text.clone(),
            tags: calls.tags.clone(),
            event_metadata: calls.event_metadata.as_deref().and_then(|m| select_metadata(m, &picks)),
            exclusive_total_ns: None,
            stored: None,
        };
        let mut view = RowView::detached(self.name(), part);
        view.exclusive = ExclusiveOf::Slice { parent: Box::new(self.clone()), picks: picks.into() };
        view
    }
}

/// Σ (end - start) over the calls, ns, as `i128` (a damaged row cannot overflow it).
fn inclusive_total_ns(calls: &RegionCalls) -> i128 {
    calls.start_ns.values().iter().zip(calls.end_ns.values().iter()).map(|(s, e)| *e as i128 - *s as i128).sum()
}

/// `end - start` per call (wrapping, like numpy's int64 subtraction).
pub fn durations(calls: &RegionCalls) -> Vec<i64> {
    calls.start_ns.values().iter().zip(calls.end_ns.values().iter()).map(|(s, e)| e.wrapping_sub(*s)).collect()
}

/// The elements at `picks` of a JSON list (the stored per-call metadata), written back as
/// Python's `json.dumps` joins list items (`", "`), each element's text kept verbatim.
/// `None` when the text is not a JSON list or a pick is out of range.
pub fn select_metadata(json: &str, picks: &[u32]) -> Option<String> {
    let items = crate::call_metadata::entries(json).ok()?;
    let mut out = String::from("[");
    for (k, &i) in picks.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        out.push_str(items.get(i as usize)?);
    }
    out.push(']');
    Some(out)
}

/// Where a view comes from, in plain values (what a pickled `Region` carries): row `row` of
/// a run (its exclusive time from the run's reconstruction, or its own durations when
/// `inclusive`), then the calls kept by each slice in turn (`for_thread`, `for_task`,
/// `for_lane`), as positions in the previous view.
pub struct ViewPath {
    pub analysis: Arc<RunAnalysis>,
    pub row: usize,
    pub inclusive: bool,
    pub slices: Vec<Vec<u32>>,
}

impl ViewPath {
    /// The path of `view`.
    pub fn of(view: &RowView) -> ViewPath {
        match &view.exclusive {
            ExclusiveOf::Run | ExclusiveOf::Inclusive => ViewPath {
                analysis: Arc::clone(&view.analysis),
                row: view.row,
                inclusive: matches!(view.exclusive, ExclusiveOf::Inclusive),
                slices: Vec::new(),
            },
            ExclusiveOf::Slice { parent, picks } => {
                let mut path = ViewPath::of(parent);
                path.slices.push(picks.to_vec());
                path
            }
        }
    }

    /// The view again. Errors (the message) when a row or a position is not there.
    pub fn view(self) -> Result<RowView, String> {
        let rows = self.analysis.run.regions.len();
        if self.row >= rows {
            return Err(format!("not a pickled region: row {} of a run of {rows}", self.row));
        }
        let mut view = RowView::of_run(&self.analysis, self.row);
        if self.inclusive {
            view.exclusive = ExclusiveOf::Inclusive;
        }
        for picks in self.slices {
            let n = view.calls().len();
            if picks.iter().any(|&i| i as usize >= n) {
                return Err(format!("not a pickled region: a slice past its {n} calls"));
            }
            view = view.select(picks);
        }
        Ok(view)
    }
}

/// Positions as the bytes a path stores for them (u32, little-endian).
pub fn picks_bytes(picks: &[u32]) -> Vec<u8> {
    picks.iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// Inverse of [`picks_bytes`]. Errors (the message) for a length that is not a whole
/// number of positions.
pub fn picks_of(bytes: &[u8]) -> Result<Vec<u32>, String> {
    if !bytes.len().is_multiple_of(4) {
        return Err("not a pickled region: a slice of a partial position".into());
    }
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(starts: Vec<i64>, ends: Vec<i64>, threads: Vec<i64>) -> RegionCalls {
        let mut r = RegionCalls::new(0, 0, Int64Array::from(starts), Int64Array::from(ends));
        r.thread_ids = Some(Int64Array::from(threads));
        r
    }

    #[test]
    fn slices_take_the_parents_exclusive_time_and_metadata() {
        // outer [0,100] on thread 0 holds inner [10,30]; thread 1 has outer [0,50] alone
        let outer = row(vec![0, 0], vec![100, 50], vec![0, 1]);
        let mut inner = row(vec![10], vec![30], vec![0]);
        inner.region = 1;
        let mut outer = outer;
        outer.event_metadata = Some(r#"[{"a": 1}, {"b": [2, 3]}]"#.into());
        let run = Run {
            region_names: vec!["outer".into(), "inner".into()],
            regions: vec![outer, inner],
            num_ranks: 1,
            ..Run::default()
        };
        let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
        let view = RowView::of_run(&analysis, 0);
        assert_eq!(view.exclusive_ns().unwrap().values().to_vec(), vec![80, 50]);
        let t1 = view.select(view.picks(LaneFilter::Thread(1)).unwrap());
        assert_eq!(t1.calls().start_ns.values().to_vec(), vec![0]);
        assert_eq!(t1.exclusive_ns().unwrap().values().to_vec(), vec![50]);
        assert_eq!(t1.calls().event_metadata.as_deref(), Some(r#"[{"b": [2, 3]}]"#));
        assert_eq!(t1.name(), "outer");
        let t0 = view.select(view.picks(LaneFilter::Lane(-2)).unwrap());
        assert_eq!(t0.exclusive_total_ns().unwrap(), 80);
        assert!(view.picks(LaneFilter::Task(0)).is_none());
    }

    #[test]
    fn a_detached_row_reports_inclusive_time() {
        let view = RowView::detached("x", row(vec![0, 2], vec![10, 5], vec![0, 0]));
        assert_eq!(view.exclusive_ns().unwrap().values().to_vec(), vec![10, 3]);
        assert_eq!(view.exclusive_total_ns().unwrap(), 13);
    }

    #[test]
    fn stored_totals_answer_until_the_rank_is_reconstructed() {
        let mut r = row(vec![0, 10], vec![100, 30], vec![0, 0]);
        r.exclusive_total_ns = Some(97);
        let run = Run { region_names: vec!["a".into()], regions: vec![r], num_ranks: 1, ..Run::default() };
        let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
        let view = RowView::of_run(&analysis, 0);
        assert_eq!(view.exclusive_total_ns().unwrap(), 97);
        assert_eq!(view.exclusive_ns().unwrap().values().to_vec(), vec![80, 20]);
        assert_eq!(view.exclusive_total_ns().unwrap(), 100);
    }

    /// A stored exclusive total larger than the inclusive one would load as a wrong profile:
    /// a stored total above the row's inclusive total (120 ns) is not used.
    #[test]
    fn an_impossible_stored_total_is_reconstructed() {
        let mut r = row(vec![0, 10], vec![100, 30], vec![0, 0]);
        r.exclusive_total_ns = Some(999);
        let run = Run { region_names: vec!["a".into()], regions: vec![r], num_ranks: 1, ..Run::default() };
        let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
        assert_eq!(RowView::of_run(&analysis, 0).exclusive_total_ns().unwrap(), 100);
    }

    /// A slice of a slice goes through its path and back to the same calls and exclusive
    /// times; a path past the run or the calls is refused, as are bytes of a partial position.
    #[test]
    fn a_view_path_rebuilds_the_view() {
        let r = row(vec![0, 0, 5], vec![100, 50, 9], vec![0, 1, 1]);
        let run = Run { region_names: vec!["a".into()], regions: vec![r], num_ranks: 1, ..Run::default() };
        let analysis = Arc::new(RunAnalysis::new(Arc::new(run)));
        let view = RowView::of_run(&analysis, 0);
        let t1 = view.select(view.picks(LaneFilter::Thread(1)).unwrap());
        let last = t1.select(vec![1]);
        let path = ViewPath::of(&last);
        assert_eq!((path.row, path.inclusive, path.slices.clone()), (0, false, vec![vec![1, 2], vec![1]]));
        let back = path.view().unwrap();
        assert_eq!(back.calls().start_ns.values().to_vec(), vec![5]);
        assert_eq!(back.exclusive_ns().unwrap().values().to_vec(), last.exclusive_ns().unwrap().values().to_vec());
        let bad = ViewPath { analysis: Arc::clone(&analysis), row: 0, inclusive: true, slices: vec![vec![3]] };
        assert_eq!(bad.view().err().as_deref(), Some("not a pickled region: a slice past its 3 calls"));
        let past = ViewPath { analysis, row: 1, inclusive: false, slices: Vec::new() };
        assert_eq!(past.view().err().as_deref(), Some("not a pickled region: row 1 of a run of 1"));
        assert_eq!(picks_bytes(&[1, 258]), vec![1, 0, 0, 0, 2, 1, 0, 0]);
        assert_eq!(picks_of(&picks_bytes(&[7, 0, u32::MAX])), Ok(vec![7, 0, u32::MAX]));
        assert!(picks_of(&[1, 2, 3]).is_err());
    }
}
