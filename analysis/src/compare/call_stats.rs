//! What a comparison needs of one run: per region (or per call path) the number of calls,
//! the sum of their durations, the sum of squared deviations, and the sums of
//! [`BATCHES`] contiguous batches of calls (batch means, for noise that drifts during the
//! run). A few numbers per key, computed in one pass over the calls: the run itself need
//! not be kept.
use std::collections::HashMap;

use rayon::prelude::*;

use crate::{NestingError, Run, RunAnalysis};

/// Number of contiguous batches a sequence of calls is cut into for the batch-means
/// variance ([`CallStats::batch_variance`]): 32 gives 31 degrees of freedom (a t quantile
/// within 4 % of the normal one) while each batch still averages many calls.
pub const BATCHES: usize = 32;

/// Batches are kept for a sequence of at least this many calls (two per batch).
const MIN_BATCHED: u64 = 2 * BATCHES as u64;

/// Call statistics of one key (region or call path) in one run. Durations in ns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallStats {
    /// Number of calls.
    pub calls: u64,
    /// Σ durations (inclusive time), ns.
    pub total_ns: i64,
    /// Σ (duration − mean)², ns².
    pub m2: f64,
    /// Per batch: (Σ durations, number of calls). A sequence of calls (one thread's calls of
    /// a region, or a call path's calls in start order) is cut into [`BATCHES`] runs of
    /// consecutive calls; the batches of several sequences are added up position by position
    /// (batch b of each covers the same fraction of its sequence). A sequence too short to
    /// cut is spread evenly. `None` when no sequence was long enough.
    pub batches: Option<Box<[(f64, f64); BATCHES]>>,
}

impl CallStats {
    /// The statistics of one sequence of durations (ns), in the order the calls ran.
    pub fn of_sequence(durations: &[i64]) -> Self {
        let n = durations.len() as u64;
        if n == 0 {
            return CallStats::default();
        }
        let shift = durations[0] as f64;
        let (mut s1, mut s2, mut total) = (0.0f64, 0.0f64, 0i64);
        for &d in durations {
            let x = d as f64 - shift;
            s1 += x;
            s2 += x * x;
            total += d;
        }
        let m2 = (s2 - s1 * s1 / n as f64).max(0.0);
        let batches = (n >= MIN_BATCHED).then(|| {
            let mut b = Box::new([(0.0, 0.0); BATCHES]);
            for (k, slot) in b.iter_mut().enumerate() {
                let (lo, hi) = (k * durations.len() / BATCHES, (k + 1) * durations.len() / BATCHES);
                let sum: i64 = durations[lo..hi].iter().sum();
                *slot = (sum as f64, (hi - lo) as f64);
            }
            b
        });
        CallStats { calls: n, total_ns: total, m2, batches }
    }

    /// The statistics stored for a row read without its calls: count, total and m2, no batches.
    pub fn of_stored(count: u64, total_ns: i64, m2: f64) -> Self {
        CallStats { calls: count, total_ns, m2: m2.max(0.0), batches: None }
    }

    /// Mean duration, ns (0 without calls).
    pub fn mean_ns(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.calls as f64
        }
    }

    /// Add `other`'s calls (another sequence of the same key): counts and totals add, m2
    /// combines exactly (Chan et al.), batches add position by position (a side without
    /// batches spread evenly over them).
    pub fn merge(&mut self, other: &CallStats) {
        if other.calls == 0 {
            return;
        }
        if self.calls == 0 {
            *self = other.clone();
            return;
        }
        let (na, nb) = (self.calls as f64, other.calls as f64);
        let delta = other.mean_ns() - self.mean_ns();
        self.m2 += other.m2 + delta * delta * na * nb / (na + nb);
        let spread = |s: &CallStats| (s.total_ns as f64 / BATCHES as f64, s.calls as f64 / BATCHES as f64);
        self.batches = match (self.batches.take(), &other.batches) {
            (None, None) => None,
            (Some(mut a), Some(b)) => {
                a.iter_mut().zip(b.iter()).for_each(|(x, y)| *x = (x.0 + y.0, x.1 + y.1));
                Some(a)
            }
            (Some(mut a), None) => {
                let (sum, n) = spread(other);
                a.iter_mut().for_each(|x| *x = (x.0 + sum, x.1 + n));
                Some(a)
            }
            (None, Some(b)) => {
                let (sum, n) = spread(self);
                let mut b = b.clone();
                b.iter_mut().for_each(|x| *x = (x.0 + sum, x.1 + n));
                Some(b)
            }
        };
        self.calls += other.calls;
        self.total_ns += other.total_ns;
    }

    /// Variance of the total (Σ durations) from the spread of the per-call durations, as if
    /// the calls were independent: `n s²`, with `n − 1` degrees of freedom. `None` below 2 calls.
    pub fn iid_variance(&self) -> Option<(f64, f64)> {
        (self.calls >= 2).then(|| {
            let n = self.calls as f64;
            (n * self.m2 / (n - 1.0), n - 1.0)
        })
    }

    /// Variance of the total from the batch sums (the method of batch means): each batch's
    /// deviation from what its number of calls predicts at the overall mean,
    /// `r_b = S_b − c_b·T/n`, gives `Var(T) ≈ B/(B−1) Σ r_b²` with `B − 1` degrees of freedom.
    /// Calls that run slower for a while (a loaded machine, a cache gone cold) make
    /// neighbouring calls alike; independent-call variance misses that, batch means do not.
    pub fn batch_variance(&self) -> Option<(f64, f64)> {
        let batches = self.batches.as_ref()?;
        let mean = self.mean_ns();
        let ss: f64 = batches.iter().map(|&(s, c)| (s - c * mean).powi(2)).sum();
        let b = BATCHES as f64;
        Some((b / (b - 1.0) * ss, b - 1.0))
    }

    /// Variance of this run's total for its calls and its degrees of freedom: the larger of
    /// [`CallStats::iid_variance`] and [`CallStats::batch_variance`]. `Some((0, ∞))` without
    /// calls (no time, exactly), `None` with one call (its noise cannot be estimated).
    pub fn within_variance(&self) -> Option<(f64, f64)> {
        if self.calls == 0 {
            return Some((0.0, f64::INFINITY));
        }
        let iid = self.iid_variance()?;
        Some(match self.batch_variance() {
            Some(batch) if batch.0 > iid.0 => batch,
            _ => iid,
        })
    }
}

/// How rows are keyed: by region name, or by call path (the region names from a root call
/// down to the call, lanes merged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompareBy {
    #[default]
    Region,
    Path,
}

impl CompareBy {
    /// `"region"` or `"path"`.
    pub fn name(self) -> &'static str {
        match self {
            CompareBy::Region => "region",
            CompareBy::Path => "path",
        }
    }

    /// The value named `name` (`"region"`, `"path"`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "region" => Some(CompareBy::Region),
            "path" => Some(CompareBy::Path),
            _ => None,
        }
    }
}

/// A key: one region name ([`CompareBy::Region`]) or the names along a call path.
pub type Key = Vec<String>;

/// The call statistics of one run, per key.
#[derive(Debug, Clone, Default)]
pub struct RunCallStats {
    /// How the run is named (its file, or its label).
    pub name: String,
    pub keys: HashMap<Key, CallStats>,
}

impl RunCallStats {
    /// Per region name: every rank's calls. Within a row, the calls of each thread (a
    /// contiguous run of equal thread ids: rows are stored thread by thread) are one
    /// sequence; rows read without their calls contribute their stored statistics.
    pub fn by_region(name: impl Into<String>, run: &Run) -> Self {
        let per_row: Vec<(u32, CallStats)> =
            crate::pool::install(|| run.regions.par_iter().map(|row| (row.region, row_stats(row))).collect());
        let mut keys: HashMap<Key, CallStats> = HashMap::new();
        for (region, stats) in per_row {
            let region_name = run.region_names.get(region as usize).cloned().unwrap_or_else(|| "?".into());
            keys.entry(vec![region_name]).or_default().merge(&stats);
        }
        keys.retain(|_, s| s.calls > 0);
        RunCallStats { name: name.into(), keys }
    }

    /// Per call path, from each rank's reconstruction (`analysis.rank`, cached): a call's
    /// path is its callers' region names and its own, on its lane; the lanes (threads, tasks)
    /// and ranks of a path are merged. A path's calls in start order are one sequence per
    /// rank. Calls set aside (they do not nest in their lane) are left out.
    ///
    /// Errors: the first rank that cannot be reconstructed.
    pub fn by_path(name: impl Into<String>, analysis: &RunAnalysis) -> Result<Self, NestingError> {
        let mut keys: HashMap<Key, CallStats> = HashMap::new();
        for (_, rec) in analysis.all() {
            let rec = rec?;
            for (path, stats) in rank_paths(&analysis.run, &rec) {
                keys.entry(path).or_default().merge(&stats);
            }
        }
        Ok(RunCallStats { name: name.into(), keys })
    }
}

/// The statistics by `by` of each of `runs` (an analysis and the run's name), in parallel.
/// Errors: the first run whose call paths cannot be built ([`RunCallStats::by_path`]).
pub fn runs_call_stats(
    runs: &[(std::sync::Arc<RunAnalysis>, String)],
    by: CompareBy,
) -> Result<Vec<RunCallStats>, NestingError> {
    crate::pool::install(|| {
        runs.par_iter()
            .map(|(analysis, name)| match by {
                CompareBy::Region => Ok(RunCallStats::by_region(name.clone(), &analysis.run)),
                CompareBy::Path => RunCallStats::by_path(name.clone(), analysis),
            })
            .collect()
    })
}

/// One row's statistics: a sequence per contiguous run of one thread id (the whole row
/// without thread ids); the stored statistics of a row read without its calls.
fn row_stats(row: &crate::RegionCalls) -> CallStats {
    if let (Some(stored), true) = (&row.stored, row.is_empty()) {
        return CallStats::of_stored(stored.count.max(0) as u64, stored.total, stored.m2);
    }
    let durations: Vec<i64> =
        row.start_ns.values().iter().zip(row.end_ns.values().iter()).map(|(s, e)| e - s).collect();
    let mut stats = CallStats::default();
    match &row.thread_ids {
        Some(threads) => {
            let threads = threads.values();
            let mut lo = 0;
            while lo < durations.len() {
                let t = threads.get(lo).copied();
                let len = threads[lo..].iter().position(|&x| Some(x) != t).unwrap_or(threads.len() - lo);
                let hi = (lo + len.max(1)).min(durations.len());
                stats.merge(&CallStats::of_sequence(&durations[lo..hi]));
                lo = hi;
            }
        }
        None => stats = CallStats::of_sequence(&durations),
    }
    stats
}

/// The call paths of one reconstructed rank and their statistics.
fn rank_paths(run: &Run, rec: &crate::Reconstruction) -> Vec<(Key, CallStats)> {
    let calls = &rec.calls;
    let mut set_aside = vec![false; calls.len()];
    for s in &calls.set_aside {
        set_aside[s.call as usize] = true;
    }
    // trie: node -> (parent node, region id); node_of per call (u32::MAX: left out)
    let mut nodes: Vec<(u32, u32)> = Vec::new();
    let mut child: HashMap<(u32, u32), u32> = HashMap::new();
    let mut node_of: Vec<u32> = vec![u32::MAX; calls.len()];
    let mut count: Vec<usize> = Vec::new();
    for c in 0..calls.len() {
        if set_aside[c] {
            continue;
        }
        let parent = calls.parent[c];
        let pnode = if parent < 0 { u32::MAX } else { node_of[parent as usize] };
        let region = run.regions[rec.rows[calls.region_index[c] as usize]].region;
        let next = nodes.len() as u32;
        let node = *child.entry((pnode, region)).or_insert(next);
        if node == next {
            nodes.push((pnode, region));
            count.push(0);
        }
        count[node as usize] += 1;
        node_of[c] = node;
    }
    // durations per node in start order (calls are sorted by start)
    let mut durations: Vec<Vec<i64>> = count.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (c, &node) in node_of.iter().enumerate() {
        if node != u32::MAX {
            durations[node as usize].push(calls.end_ns[c] - calls.start_ns[c]);
        }
    }
    let name = |region: u32| run.region_names.get(region as usize).cloned().unwrap_or_else(|| "?".into());
    durations
        .iter()
        .enumerate()
        .map(|(node, d)| {
            let mut path = Vec::new();
            let mut at = node as u32;
            while at != u32::MAX {
                let (parent, region) = nodes[at as usize];
                path.push(name(region));
                at = parent;
            }
            path.reverse();
            (path, CallStats::of_sequence(d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(d: &[i64]) -> (u64, i64, f64) {
        let n = d.len() as f64;
        let mean = d.iter().sum::<i64>() as f64 / n;
        (d.len() as u64, d.iter().sum(), d.iter().map(|&x| (x as f64 - mean).powi(2)).sum())
    }

    #[test]
    fn batches_cover_the_sequence_in_order() {
        let d: Vec<i64> = (0..100).collect();
        let s = CallStats::of_sequence(&d);
        let b = s.batches.as_ref().unwrap();
        assert_eq!(b.iter().map(|x| x.1).sum::<f64>(), 100.0);
        assert_eq!(b.iter().map(|x| x.0).sum::<f64>(), 4950.0);
        // batch 0 = calls 0..3 (100 * 1 / 32 = 3), the last = calls 96..100
        assert_eq!(b[0], (0.0 + 1.0 + 2.0, 3.0));
        assert_eq!(b[31], (96.0 + 97.0 + 98.0 + 99.0, 4.0));
        assert!(CallStats::of_sequence(&d[..63]).batches.is_none());
    }

    /// Calls that drift (slow for a stretch of the run) are alike in neighbours: the batch
    /// variance sees it, the independent-call variance does not.
    #[test]
    fn drifting_calls_widen_the_batch_variance() {
        let mut rng = crate::compare::tests::Rng(3);
        let steady: Vec<i64> = (0..3200).map(|_| rng.duration(1000.0, 0.1)).collect();
        let drift: Vec<i64> =
            steady.iter().enumerate().map(|(i, d)| if i < 1600 { d - 200 } else { d + 200 }).collect();
        let (a, b) = (CallStats::of_sequence(&steady), CallStats::of_sequence(&drift));
        let (iid_a, batch_a) = (a.iid_variance().unwrap().0, a.batch_variance().unwrap().0);
        let (iid_b, batch_b) = (b.iid_variance().unwrap().0, b.batch_variance().unwrap().0);
        // steady: the two agree within sampling error; drifting: batches ~ (n/2)² · 400² / ... ≫ iid
        assert!(batch_a < 3.0 * iid_a && batch_a > iid_a / 3.0, "{iid_a} {batch_a}");
        assert!(batch_b > 50.0 * iid_b, "{iid_b} {batch_b}");
        assert_eq!(b.within_variance().unwrap().1, (BATCHES - 1) as f64);
    }

    #[test]
    fn too_few_calls_have_no_variance() {
        assert_eq!(CallStats::of_sequence(&[]).within_variance(), Some((0.0, f64::INFINITY)));
        assert_eq!(CallStats::of_sequence(&[5]).within_variance(), None);
        let two = CallStats::of_sequence(&[4, 6]);
        assert_eq!(two.within_variance(), Some((2.0 * 2.0, 1.0)));
    }

    proptest! {
        /// Merging the statistics of the two halves of a sequence gives the whole's counts,
        /// totals and m2.
        #[test]
        fn merge_is_exact_for_counts_and_m2(d in prop::collection::vec(0i64..5_000_000, 1..400), cut in 0usize..400) {
            let cut = cut.min(d.len());
            let mut merged = CallStats::of_sequence(&d[..cut]);
            merged.merge(&CallStats::of_sequence(&d[cut..]));
            let (n, total, m2) = naive(&d);
            prop_assert_eq!(merged.calls, n);
            prop_assert_eq!(merged.total_ns, total);
            prop_assert!((merged.m2 - m2).abs() <= 1e-9 * m2.max(1.0) + 1e-6, "{} vs {}", merged.m2, m2);
            let whole = CallStats::of_sequence(&d);
            prop_assert!((whole.m2 - m2).abs() <= 1e-9 * m2.max(1.0) + 1e-6);
            if let Some(b) = &merged.batches {
                prop_assert!((b.iter().map(|x| x.1).sum::<f64>() - n as f64).abs() < 1e-6);
                prop_assert!((b.iter().map(|x| x.0).sum::<f64>() - total as f64).abs() < 1e-3);
            }
        }
    }
}
