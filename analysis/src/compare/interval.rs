//! The interval of a change: how sure we are that a key's time per run moved.
//!
//! One side (base or new) is `m` runs of one program; run `j` spent `T_j` ns in the key over
//! `n_j` calls. The side's time per run is the mean `T̄`. Its variance has two parts:
//! * within a run: the noise of the calls themselves, `W_j` = the larger of `n s²`
//!   (independent calls) and the batch-means estimate (calls that drift together), see
//!   [`CallStats::within_variance`];
//! * between runs: what changes from one run to the next (the machine's load, the layout of
//!   memory, a cold cache), seen only with several runs: the sample variance `s²_T` of the
//!   `T_j` holds both parts (`E s²_T = σ²_between + W`).
//!
//! `Var(T̄) = max(s²_T, W̄) / m` (a variance-components estimate, the between part truncated at
//! zero), with `m − 1` degrees of freedom when `s²_T` is the larger, else those of the `W_j`
//! (Satterthwaite). One run: `Var(T̄) = W_1`.
//!
//! The change `r = T̄_new / T̄_base − 1` is estimated on the log scale (delta method):
//! `se² = Var(T̄_new)/T̄_new² + Var(T̄_base)/T̄_base²`, and the interval is
//! `exp(ln(1 + r) ± t·se) − 1` with `t` the `1 − α/2` quantile of Student's t at the
//! Welch–Satterthwaite degrees of freedom of the two sides; `α = 0.05 / k` for a comparison
//! of `k` rows ([`row_level`]), so that the intervals hold together at 95 %.
use super::call_stats::CallStats;
use super::student_t::t_quantile;

/// One side of one key: the mean time and calls per run and the variance of the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SideEstimate {
    /// Number of runs of the side.
    pub runs: usize,
    /// Mean calls per run.
    pub calls: f64,
    /// Mean Σ durations per run, ns.
    pub total_ns: f64,
    /// Variance of `total_ns` (ns²) and its degrees of freedom; `None` when it cannot be
    /// estimated (a single run with a single call).
    pub variance: Option<(f64, f64)>,
}

impl SideEstimate {
    /// The estimate from the key's statistics in each run of the side (`None`: no call in
    /// that run). `runs` must not be empty.
    pub fn of_runs(runs: &[Option<&CallStats>]) -> Self {
        let m = runs.len();
        let empty = CallStats::default();
        let stats: Vec<&CallStats> = runs.iter().map(|s| s.unwrap_or(&empty)).collect();
        let totals: Vec<f64> = stats.iter().map(|s| s.total_ns as f64).collect();
        let mean = totals.iter().sum::<f64>() / m as f64;
        let calls = stats.iter().map(|s| s.calls as f64).sum::<f64>() / m as f64;
        let within: Option<Vec<(f64, f64)>> = stats.iter().map(|s| s.within_variance()).collect();
        let variance = if m == 1 {
            within.map(|w| w[0])
        } else {
            let between = totals.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (m - 1) as f64;
            let mf = m as f64;
            match within {
                Some(w) => {
                    let sum_w: f64 = w.iter().map(|x| x.0).sum();
                    if between >= sum_w / mf {
                        Some((between / mf, (m - 1) as f64))
                    } else {
                        Some((sum_w / (mf * mf), satterthwaite(&w)))
                    }
                }
                // a run with one call: the spread of the run totals alone
                None => Some((between / mf, (m - 1) as f64)),
            }
        };
        SideEstimate { runs: m, calls, total_ns: mean, variance }
    }
}

/// Degrees of freedom of a sum of independent variance estimates `(v_i, df_i)`.
fn satterthwaite(parts: &[(f64, f64)]) -> f64 {
    let sum: f64 = parts.iter().map(|p| p.0).sum();
    let denom: f64 = parts.iter().filter(|p| p.0 > 0.0).map(|p| p.0 * p.0 / p.1).sum();
    if denom > 0.0 {
        sum * sum / denom
    } else {
        f64::INFINITY
    }
}

/// The change `new/base − 1` and its 95 % interval; the interval is `None` when a side's
/// variance is unknown or a side has no time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangeInterval {
    pub change: f64,
    pub interval: Option<(f64, f64)>,
}

/// Two-sided level of the intervals, together: all the intervals of a comparison cover
/// their true changes with this probability ([`row_level`]).
pub const LEVEL: f64 = 0.95;

/// The level of each of `rows` intervals so that together they hold at [`LEVEL`]
/// (Bonferroni: `1 − (1 − LEVEL) / rows`). Two runs of one program compared on 200 regions
/// would otherwise show about 10 intervals that miss 0, and some of them beyond the threshold.
pub fn row_level(rows: usize) -> f64 {
    1.0 - (1.0 - LEVEL) / rows.max(1) as f64
}

/// The change from `base` to `new` (both with time) and its two-sided interval at `level`.
/// `None` when a side spent no time (the change is not a finite number).
pub fn change_interval(base: &SideEstimate, new: &SideEstimate, level: f64) -> Option<ChangeInterval> {
    if !(base.total_ns > 0.0 && new.total_ns > 0.0) {
        return None;
    }
    let ratio = new.total_ns / base.total_ns;
    let change = ratio - 1.0;
    let interval = match (base.variance, new.variance) {
        (Some((vb, db)), Some((vn, dn))) => {
            let a = vb / (base.total_ns * base.total_ns);
            let b = vn / (new.total_ns * new.total_ns);
            let se2 = a + b;
            if se2 > 0.0 {
                let df = satterthwaite(&[(a, db), (b, dn)]).max(1.0);
                let half = t_quantile(0.5 + level / 2.0, df) * se2.sqrt();
                let log = ratio.ln();
                Some(((log - half).exp() - 1.0, (log + half).exp() - 1.0))
            } else {
                Some((change, change))
            }
        }
        _ => None,
    };
    Some(ChangeInterval { change, interval })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(runs: &[Vec<i64>]) -> SideEstimate {
        let stats: Vec<CallStats> = runs.iter().map(|d| CallStats::of_sequence(d)).collect();
        let refs: Vec<Option<&CallStats>> = stats.iter().map(|s| (s.calls > 0).then_some(s)).collect();
        SideEstimate::of_runs(&refs)
    }

    #[test]
    fn one_run_uses_the_calls_spread() {
        // 4 calls 8, 10, 12, 10: s² = 8/3, Var(T) = 4 · 8/3
        let s = side(&[vec![8, 10, 12, 10]]);
        assert_eq!((s.runs, s.calls, s.total_ns), (1, 4.0, 40.0));
        let (v, df) = s.variance.unwrap();
        assert!((v - 32.0 / 3.0).abs() < 1e-12 && df == 3.0);
        assert_eq!(side(&[vec![7]]).variance, None);
    }

    /// Runs whose totals differ more than their calls explain: the between-run spread rules,
    /// with m − 1 degrees of freedom; runs that agree: the calls' spread, pooled.
    #[test]
    fn several_runs_count_the_spread_between_runs() {
        let s = side(&[vec![10, 10, 11], vec![20, 20, 21], vec![30, 30, 31]]);
        // totals 31, 61, 91: s²_T = 900, Var(T̄) = 300
        assert!((s.total_ns - 61.0).abs() < 1e-12);
        assert_eq!(s.variance, Some((300.0, 2.0)));
        let s = side(&[vec![10, 20, 30], vec![30, 20, 10]]);
        // totals agree (60, 60): W_j = 3 · 100 = 300 each, Var = 600 / 4, df = Satterthwaite(2, 2) = 4
        let (v, df) = s.variance.unwrap();
        assert!((v - 150.0).abs() < 1e-9 && (df - 4.0).abs() < 1e-9, "{v} {df}");
        // one call per run: the run totals alone
        let s = side(&[vec![10], vec![12], vec![14]]);
        assert_eq!(s.variance, Some((4.0 / 3.0, 2.0)));
        // a run without calls counts as 0 calls, 0 time
        let s = side(&[vec![10, 12], vec![]]);
        assert_eq!((s.calls, s.total_ns), (1.0, 11.0));
    }

    #[test]
    fn the_interval_is_symmetric_on_the_log_scale() {
        let base = SideEstimate { runs: 1, calls: 100.0, total_ns: 1000.0, variance: Some((400.0, 99.0)) };
        let new = SideEstimate { runs: 1, calls: 100.0, total_ns: 1300.0, variance: Some((676.0, 99.0)) };
        let c = change_interval(&base, &new, LEVEL).unwrap();
        let (lo, hi) = c.interval.unwrap();
        assert!((c.change - 0.3).abs() < 1e-12);
        assert!(((1.0 + lo) * (1.0 + hi) - 1.3f64.powi(2)).abs() < 1e-12);
        // se = sqrt(400/1e6 + 676/1.69e6) = sqrt(8e-4); df = 198
        let half = t_quantile(0.975, 198.0) * 8e-4f64.sqrt();
        assert!((hi - (1.3f64.ln() + half).exp() + 1.0).abs() < 1e-12);
        let swapped = change_interval(&new, &base, LEVEL).unwrap();
        let (slo, shi) = swapped.interval.unwrap();
        assert!((1.0 / (1.0 + hi) - 1.0 - slo).abs() < 1e-12 && (1.0 / (1.0 + lo) - 1.0 - shi).abs() < 1e-12);
        let unknown = SideEstimate { variance: None, ..base };
        assert_eq!(change_interval(&unknown, &new, LEVEL).unwrap().interval, None);
        let wider = change_interval(&base, &new, row_level(10)).unwrap().interval.unwrap();
        assert!(wider.0 < lo && wider.1 > hi);
        assert!((row_level(10) - 0.995).abs() < 1e-12 && row_level(0) == LEVEL);
        let none = SideEstimate { total_ns: 0.0, ..base };
        assert_eq!(change_interval(&none, &new, LEVEL), None);
    }
}
