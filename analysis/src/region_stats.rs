//! Duration statistics of a region, in seconds, computed as the reference computes them.
//!
//! [`RowStats`] is one region on one rank (`Region`), [`PooledStats`] one region over ranks
//! (`MPIRegion`, whose pooled arrays are the per-rank `ns / 1e9` arrays concatenated in the
//! given order). Every float is produced with numpy's algorithms ([`crate::numpy_reductions`]), so the
//! values equal the reference's bit for bit. A row read without its events
//! ([`RegionCalls::stored`]) answers from its stored statistics; percentiles are then unknown.
use std::cell::OnceCell;

use crate::numpy_reductions;
use crate::row_view::durations;
pub use crate::run::secs;
use crate::run::RegionCalls;

/// A percentile outside `0..=100` (`ValueError("percentile must be between 0 and 100")`).
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileOutOfRange;

fn check_percentile(q: f64) -> Result<(), PercentileOutOfRange> {
    if (0.0..=100.0).contains(&q) {
        Ok(())
    } else {
        Err(PercentileOutOfRange)
    }
}

/// Statistics of one row (a `Region`), seconds.
pub struct RowStats<'a> {
    calls: &'a RegionCalls,
    /// `end - start` per call, ns (empty for a summary-only row); computed on first use.
    durations: OnceCell<Vec<i64>>,
}

impl<'a> RowStats<'a> {
    pub fn new(calls: &'a RegionCalls) -> Self {
        RowStats { calls, durations: OnceCell::new() }
    }

    /// `end - start` per call, ns, recorded order.
    pub fn durations(&self) -> &[i64] {
        self.durations.get_or_init(|| durations(self.calls))
    }

    /// Number of calls (the stored count for a summary-only row: [`RegionCalls::num_calls`]).
    pub fn num_calls(&self) -> i64 {
        self.calls.num_calls() as i64
    }

    pub fn has_timing(&self) -> bool {
        self.num_calls() > 0
    }

    fn stored_or(&self, stored: impl Fn(&crate::StoredStats) -> f64, events: impl Fn(&Self) -> f64) -> f64 {
        match &self.calls.stored {
            Some(s) => stored(s),
            None if self.has_timing() => events(self),
            None => 0.0,
        }
    }

    /// Σ durations, s.
    pub fn total(&self) -> f64 {
        self.stored_or(|s| secs(s.total), |r| secs(r.durations().iter().fold(0i64, |a, &d| a.wrapping_add(d))))
    }
    /// Mean duration, s (`np.mean` of the int64 ns, then / 1e9).
    pub fn mean(&self) -> f64 {
        match &self.calls.stored {
            Some(s) if s.count > 0 => self.total() / s.count as f64,
            Some(_) => 0.0,
            None if self.has_timing() => numpy_reductions::mean_i64(self.durations()) / 1e9,
            None => 0.0,
        }
    }
    pub fn min(&self) -> f64 {
        self.stored_or(|s| secs(s.minimum), |r| secs(*r.durations().iter().min().unwrap_or(&0)))
    }
    pub fn max(&self) -> f64 {
        self.stored_or(|s| secs(s.maximum), |r| secs(*r.durations().iter().max().unwrap_or(&0)))
    }
    /// Duration of the first / last call in recorded order, s.
    pub fn first(&self) -> f64 {
        self.stored_or(|s| secs(s.first), |r| secs(r.durations()[0]))
    }
    pub fn last(&self) -> f64 {
        self.stored_or(|s| secs(s.last), |r| secs(r.durations()[r.durations().len() - 1]))
    }
    /// Population standard deviation, s (stored rows: `sqrt(max(m2, 0) / count)`).
    pub fn std(&self) -> f64 {
        match &self.calls.stored {
            Some(s) if s.count > 0 => numpy_reductions::stored_std(s.count, s.m2) / 1e9,
            Some(_) => 0.0,
            None if self.has_timing() => numpy_reductions::std_i64(self.durations()) / 1e9,
            None => 0.0,
        }
    }
    /// `np.percentile(durations_ns, q) / 1e9`; `Ok(None)` for a summary-only row with calls,
    /// `0.0` without calls.
    pub fn percentile(&self, q: f64) -> Result<Option<f64>, PercentileOutOfRange> {
        check_percentile(q)?;
        if self.calls.stored.is_some() && self.num_calls() > 0 {
            return Ok(None);
        }
        Ok(Some(if self.has_timing() { numpy_reductions::percentile_i64(self.durations(), q) / 1e9 } else { 0.0 }))
    }
    /// Earliest start / latest end, s on the recording clock (absolute).
    pub fn first_start(&self) -> f64 {
        self.stored_or(|s| secs(s.start_minimum), |r| secs(r.calls.start_min().unwrap_or(0)))
    }
    pub fn last_end(&self) -> f64 {
        self.stored_or(|s| secs(s.end_maximum), |r| secs(r.calls.end_max().unwrap_or(0)))
    }

    /// The GPU column when it holds at least one duration (>= 0), else `None`.
    pub fn gpu_ns(&self) -> Option<&[i64]> {
        self.calls.gpu_ns.as_ref().map(|g| &g.values()[..]).filter(|g| g.iter().any(|&v| v >= 0))
    }
    pub fn has_gpu_timing(&self) -> bool {
        match &self.calls.stored {
            Some(s) => s.gpu_count > 0,
            None => self.gpu_ns().is_some_and(|g| !g.is_empty()),
        }
    }
    /// Σ GPU durations, s, or `None` without GPU timing.
    pub fn gpu_total(&self) -> Option<f64> {
        match &self.calls.stored {
            Some(s) => (s.gpu_count > 0).then(|| secs(s.gpu_total)),
            None => self.gpu_ns().map(|g| secs(g.iter().fold(0i64, |a, &x| a.wrapping_add(x)))),
        }
    }
    pub fn gpu_mean(&self) -> Option<f64> {
        match &self.calls.stored {
            Some(s) => (s.gpu_count > 0).then(|| s.gpu_total as f64 / s.gpu_count as f64 / 1e9),
            None => self.gpu_ns().filter(|g| !g.is_empty()).map(|g| numpy_reductions::mean_i64(g) / 1e9),
        }
    }
    /// The stored statistics of a summary-only row.
    pub fn stored(&self) -> Option<&crate::StoredStats> {
        self.calls.stored.as_ref()
    }
}

/// Statistics of one region over several rows (an `MPIRegion`: its ranks in its own order).
pub struct PooledStats<'a> {
    pub rows: Vec<RowStats<'a>>,
    /// The rows' `durations / 1e9` concatenated (rows with calls, in order); on first use.
    durations: OnceCell<Vec<f64>>,
}

impl<'a> PooledStats<'a> {
    pub fn new(rows: Vec<RowStats<'a>>) -> Self {
        PooledStats { rows, durations: OnceCell::new() }
    }

    /// The pooled durations, s.
    pub fn durations(&self) -> &[f64] {
        self.durations.get_or_init(|| {
            self.rows.iter().filter(|r| r.has_timing()).flat_map(|r| r.durations().iter().map(|&d| secs(d))).collect()
        })
    }

    pub fn num_calls(&self) -> i64 {
        self.rows.iter().map(RowStats::num_calls).sum()
    }
    pub fn has_timing(&self) -> bool {
        self.rows.iter().any(RowStats::has_timing)
    }
    /// Σ of the rows' totals (Python `sum` of floats, in order), s.
    pub fn total(&self) -> f64 {
        self.rows.iter().fold(0.0, |a, r| a + r.total())
    }
    pub fn mean(&self) -> f64 {
        if !self.durations().is_empty() {
            return numpy_reductions::mean_f64(self.durations());
        }
        let n = self.num_calls();
        if n > 0 {
            self.total() / n as f64
        } else {
            0.0
        }
    }
    /// Population std of the pooled durations; without events, the stored rows' (count,
    /// mean, m2) combined exactly as the reference does.
    pub fn std(&self) -> f64 {
        if !self.durations().is_empty() {
            return numpy_reductions::std_f64(self.durations());
        }
        let stored: Vec<&crate::StoredStats> =
            self.rows.iter().filter(|r| r.num_calls() > 0).filter_map(RowStats::stored).collect();
        if stored.is_empty() {
            return 0.0;
        }
        let rows: Vec<(i64, f64, f64)> = stored.iter().map(|s| (s.count, s.mean, s.m2)).collect();
        numpy_reductions::pooled_std(&rows) / 1e9
    }
    pub fn percentile(&self, q: f64) -> Result<Option<f64>, PercentileOutOfRange> {
        check_percentile(q)?;
        if !self.durations().is_empty() {
            return Ok(Some(numpy_reductions::percentile_f64(self.durations(), q)));
        }
        Ok(if self.num_calls() > 0 { None } else { Some(0.0) })
    }
    fn extreme(
        &self,
        pooled: impl Fn(&[f64]) -> f64,
        per_row: impl Fn(&RowStats) -> f64,
        pick: fn(f64, f64) -> f64,
    ) -> f64 {
        if !self.durations().is_empty() {
            return pooled(self.durations());
        }
        self.rows.iter().filter(|r| r.num_calls() > 0).map(per_row).reduce(pick).unwrap_or(0.0)
    }
    pub fn min(&self) -> f64 {
        self.extreme(|d| d.iter().copied().fold(f64::INFINITY, f64::min), |r| r.min(), f64::min)
    }
    pub fn max(&self) -> f64 {
        self.extreme(|d| d.iter().copied().fold(f64::NEG_INFINITY, f64::max), |r| r.max(), f64::max)
    }
    /// The first row (in order) whose key is strictly best, as Python's `min`/`max` pick.
    fn timed_by(&self, key: impl Fn(&RowStats<'a>) -> f64, better: fn(f64, f64) -> bool) -> Option<&RowStats<'a>> {
        let mut best: Option<(&RowStats<'a>, f64)> = None;
        for r in self.rows.iter().filter(|r| r.has_timing()) {
            let k = key(r);
            if best.is_none_or(|(_, b)| better(k, b)) {
                best = Some((r, k));
            }
        }
        best.map(|(r, _)| r)
    }
    /// First duration of the row whose first start is earliest, s.
    pub fn first(&self) -> f64 {
        self.timed_by(|r| r.first_start(), |a, b| a < b).map_or(0.0, |r| r.first())
    }
    /// Last duration of the row whose last end is latest, s.
    pub fn last(&self) -> f64 {
        self.timed_by(|r| r.last_end(), |a, b| a > b).map_or(0.0, |r| r.last())
    }
    pub fn first_start(&self) -> f64 {
        self.timed_by(|r| r.first_start(), |a, b| a < b).map_or(0.0, |r| r.first_start())
    }
    pub fn last_end(&self) -> f64 {
        self.timed_by(|r| r.last_end(), |a, b| a > b).map_or(0.0, |r| r.last_end())
    }
    /// `max / mean` of the rows' positive totals (0.0 with fewer than two).
    pub fn rank_imbalance(&self) -> f64 {
        let totals: Vec<f64> = self.rows.iter().map(RowStats::total).filter(|&t| t > 0.0).collect();
        if totals.len() < 2 {
            return 0.0;
        }
        let max = totals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        max / numpy_reductions::mean_f64(&totals)
    }
    pub fn rank_imbalance_pct(&self) -> f64 {
        let ratio = self.rank_imbalance();
        if ratio != 0.0 {
            (ratio - 1.0) * 100.0
        } else {
            0.0
        }
    }
    pub fn has_gpu_timing(&self) -> bool {
        self.rows.iter().any(RowStats::has_gpu_timing)
    }
    pub fn gpu_total(&self) -> Option<f64> {
        let totals: Vec<f64> = self.rows.iter().filter_map(RowStats::gpu_total).collect();
        (!totals.is_empty()).then(|| totals.iter().fold(0.0, |a, t| a + t))
    }
    /// Pooled GPU durations (the rows' GPU columns / 1e9 concatenated), s.
    pub fn gpu_durations(&self) -> Option<Vec<f64>> {
        let cols: Vec<&[i64]> = self.rows.iter().filter_map(RowStats::gpu_ns).collect();
        (!cols.is_empty()).then(|| cols.iter().flat_map(|g| g.iter().map(|&v| secs(v))).collect())
    }
    pub fn gpu_mean(&self) -> Option<f64> {
        if let Some(values) = self.gpu_durations().filter(|v| !v.is_empty()) {
            return Some(numpy_reductions::mean_f64(&values));
        }
        let count: u64 = self.rows.iter().filter_map(RowStats::stored).map(|s| s.gpu_count).sum();
        match self.gpu_total() {
            Some(total) if count > 0 => Some(total / count as f64),
            _ => None,
        }
    }
}

/// Earliest first start and latest last end over the rows with calls, s on the recording
/// clock (stored statistics for summary-only rows); `None` when no row has a call.
pub fn time_bounds<'a>(rows: impl IntoIterator<Item = &'a RegionCalls>) -> Option<(f64, f64)> {
    rows.into_iter()
        .map(RowStats::new)
        .filter(RowStats::has_timing)
        .map(|r| (r.first_start(), r.last_end()))
        .reduce(|(s, e), (a, b)| (s.min(a), e.max(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;

    fn row(starts: Vec<i64>, ends: Vec<i64>) -> RegionCalls {
        RegionCalls::new(0, 0, Int64Array::from(starts), Int64Array::from(ends))
    }

    /// Rows without calls do not count; a summary-only row answers from its stored extremes.
    #[test]
    fn time_bounds_span_the_rows_with_calls() {
        let mut stored = row(vec![], vec![]);
        stored.stored = Some(crate::StoredStats {
            count: 2,
            start_minimum: 50,
            end_maximum: 4_000_000_000,
            ..crate::StoredStats::default()
        });
        let rows = [row(vec![3_000_000_000, 1_000_000_000], vec![3_500_000_000, 2_000_000_000]), row(vec![], vec![])];
        assert_eq!(time_bounds(&rows), Some((1.0, 3.5)));
        assert_eq!(time_bounds([&rows[0], &stored]), Some((5e-8, 4.0)));
        assert_eq!(time_bounds(&rows[1..]), None);
    }

    #[test]
    fn row_statistics_in_seconds() {
        let r = row(vec![100, 200, 300], vec![110, 230, 320]);
        let s = RowStats::new(&r);
        assert_eq!(s.num_calls(), 3);
        assert_eq!(s.total(), 60.0 / 1e9);
        assert_eq!(s.mean(), 20.0 / 1e9);
        assert_eq!((s.min(), s.max(), s.first(), s.last()), (10.0 / 1e9, 30.0 / 1e9, 10.0 / 1e9, 20.0 / 1e9));
        assert_eq!((s.first_start(), s.last_end()), (100.0 / 1e9, 320.0 / 1e9));
        assert_eq!(s.percentile(50.0).unwrap(), Some(20.0 / 1e9));
        assert!(s.percentile(101.0).is_err());
        let sd = ((100.0f64 + 0.0 + 100.0) / 3.0).sqrt() / 1e9;
        assert_eq!(s.std(), sd);
    }

    #[test]
    fn pooled_over_rows_in_order() {
        let a = row(vec![50], vec![60]);
        let b = row(vec![10, 20], vec![15, 40]);
        let p = PooledStats::new(vec![RowStats::new(&a), RowStats::new(&b)]);
        assert_eq!(p.num_calls(), 3);
        assert_eq!(p.durations(), vec![10.0 / 1e9, 5.0 / 1e9, 20.0 / 1e9]);
        assert_eq!(p.first(), 5.0 / 1e9); // row b starts first
        assert_eq!(p.last(), 10.0 / 1e9); // row a ends last
        assert_eq!(p.min(), 5.0 / 1e9);
        assert_eq!(p.rank_imbalance(), (25.0 / 1e9) / ((10.0 / 1e9 + 25.0 / 1e9) / 2.0));
    }

    #[test]
    fn empty_rows_give_zeros() {
        let e = row(vec![], vec![]);
        let s = RowStats::new(&e);
        assert_eq!((s.total(), s.mean(), s.std(), s.first(), s.first_start()), (0.0, 0.0, 0.0, 0.0, 0.0));
        assert_eq!(s.percentile(50.0).unwrap(), Some(0.0));
        let p = PooledStats::new(vec![s]);
        assert_eq!((p.mean(), p.first(), p.rank_imbalance()), (0.0, 0.0, 0.0));
    }
}
