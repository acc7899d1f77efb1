//! The comparison on simulated runs whose truth is known: A/A pairs must not be called
//! changed, real changes must be found with intervals that cover them, for single runs and
//! for groups with run-to-run variation; plus the rows, keys and JSON of small runs.
use super::*;
use crate::{RegionCalls, Run, RunAnalysis};
use arrow_array::Int64Array;
use proptest::prelude::*;
use std::sync::Arc;

/// splitmix64: a small seeded generator, so every simulation is the same on every machine.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(super) fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub(super) fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * self.uniform()).cos()
    }
    /// A call duration in ns: lognormal with median `median_ns` and log-sd `sigma`.
    pub(super) fn duration(&mut self, median_ns: f64, sigma: f64) -> i64 {
        (median_ns * (sigma * self.normal()).exp()).round().max(1.0) as i64
    }
}

/// A run of one key "r" with the given durations.
fn run_of(durations: &[i64]) -> RunCallStats {
    let mut keys = std::collections::HashMap::new();
    if !durations.is_empty() {
        keys.insert(vec!["r".to_string()], CallStats::of_sequence(durations));
    }
    RunCallStats { name: "run".into(), keys }
}

fn group(runs: Vec<RunCallStats>) -> Group {
    Group { label: "g".into(), runs }
}

/// The row of key "r" comparing `base` with `new`.
fn row(base: Vec<RunCallStats>, new: Vec<RunCallStats>, threshold: f64) -> DiffRow {
    let c = compare(&group(base), &group(new), CompareBy::Region, threshold).unwrap();
    c.rows.into_iter().find(|r| r.name == "r").unwrap()
}

/// Sample one run: `n` calls, per-call lognormal noise `sigma`, times a run effect
/// `exp(run_sd · N(0,1))`, times an AR(1) load factor (`drift`: its innovation sd, 0.98
/// autocorrelation) that makes neighbouring calls alike.
fn sample_run(rng: &mut Rng, n: usize, median_ns: f64, sigma: f64, run_sd: f64, drift: f64) -> Vec<i64> {
    let run_effect = (run_sd * rng.normal()).exp();
    let mut load = 0.0f64;
    (0..n)
        .map(|_| {
            load = 0.98 * load + drift * rng.normal();
            rng.duration(median_ns * run_effect * load.exp(), sigma)
        })
        .collect()
}

/// Fraction of `pairs` simulated pairs (each `m` runs per side, the new side scaled by `factor`)
/// whose interval covers the true change, and the verdicts seen.
fn coverage(
    seed: u64,
    pairs: usize,
    m: usize,
    n: usize,
    factor: f64,
    (sigma, run_sd, drift): (f64, f64, f64),
) -> (f64, std::collections::HashMap<Verdict, usize>) {
    let mut rng = Rng(seed);
    let mut covered = 0;
    let mut verdicts = std::collections::HashMap::new();
    for _ in 0..pairs {
        let base = (0..m).map(|_| run_of(&sample_run(&mut rng, n, 1e6, sigma, run_sd, drift))).collect();
        let new = (0..m).map(|_| run_of(&sample_run(&mut rng, n, 1e6 * factor, sigma, run_sd, drift))).collect();
        let r = row(base, new, 0.05);
        let (lo, hi) = (r.ci_low.unwrap(), r.ci_high.unwrap());
        // the true change of the expected time per run (run effects and load average out)
        if lo <= factor - 1.0 && factor - 1.0 <= hi {
            covered += 1;
        }
        *verdicts.entry(r.verdict).or_insert(0) += 1;
    }
    (covered as f64 / pairs as f64, verdicts)
}

#[test]
fn a_a_pairs_of_single_runs_are_unchanged_and_covered() {
    for (n, sigma) in [(20, 0.3), (200, 0.5), (2000, 1.0)] {
        let (cov, verdicts) = coverage(1 + n as u64, 400, 1, n, 1.0, (sigma, 0.0, 0.0));
        assert!(cov >= 0.92, "n {n}: coverage {cov}");
        // a false verdict needs the interval to miss 0 by more than the threshold: rarer than
        // the 5 % that miss 0
        let unchanged = verdicts.get(&Verdict::Unchanged).copied().unwrap_or(0);
        assert!(unchanged >= 392, "n {n}: {verdicts:?}");
    }
}

/// A program of 50 regions run twice: the intervals hold together, so the pair comes out
/// unchanged everywhere in (at least) 95 % of such pairs, however small the regions.
#[test]
fn a_a_pairs_of_many_regions_are_unchanged_everywhere() {
    let mut rng = Rng(5);
    let mut any_changed = 0;
    for _ in 0..200 {
        let side = |rng: &mut Rng| {
            let mut keys = std::collections::HashMap::new();
            for k in 0..50 {
                let n = 3 + k % 7;
                let d: Vec<i64> = (0..n).map(|_| rng.duration(1e5 * (1 + k) as f64, 0.4)).collect();
                keys.insert(vec![format!("r{k}")], CallStats::of_sequence(&d));
            }
            group(vec![RunCallStats { name: "run".into(), keys }])
        };
        let (b, n) = (side(&mut rng), side(&mut rng));
        let c = compare(&b, &n, CompareBy::Region, 0.05).unwrap();
        assert!((c.row_level - (1.0 - 0.05 / 50.0)).abs() < 1e-12);
        any_changed += usize::from(c.rows.iter().any(|r| r.verdict != Verdict::Unchanged));
    }
    assert!(any_changed <= 10, "{any_changed} of 200 A/A pairs had a changed region");
}

#[test]
fn a_real_change_is_found_with_an_interval_around_it() {
    for (factor, want) in [(1.3, Verdict::Slower), (0.6, Verdict::Faster)] {
        let (cov, verdicts) = coverage(7, 300, 1, 300, factor, (0.2, 0.0, 0.0));
        assert!(cov >= 0.92, "factor {factor}: coverage {cov}");
        assert_eq!(verdicts.get(&want).copied().unwrap_or(0), 300, "factor {factor}: {verdicts:?}");
    }
}

/// Groups whose runs differ by a run effect (sd 10 %) beyond the calls' noise: the interval
/// counts the spread between runs and keeps its coverage, where the calls alone (all runs
/// pooled as one) would claim far more certainty than there is.
#[test]
fn groups_count_the_variation_between_runs() {
    let (cov, verdicts) = coverage(11, 300, 5, 400, 1.0, (0.3, 0.1, 0.0));
    assert!(cov >= 0.92, "coverage {cov}");
    let false_alarms = verdicts.get(&Verdict::Slower).unwrap_or(&0) + verdicts.get(&Verdict::Faster).unwrap_or(&0);
    assert!(false_alarms <= 15, "{verdicts:?}");
    // the same data pooled into one run per side: the run effects are invisible
    let mut rng = Rng(11);
    let mut covered = 0;
    for _ in 0..300 {
        let pool = |rng: &mut Rng| (0..5).flat_map(|_| sample_run(rng, 400, 1e6, 0.3, 0.1, 0.0)).collect::<Vec<_>>();
        let (b, n) = (pool(&mut rng), pool(&mut rng));
        let r = row(vec![run_of(&b)], vec![run_of(&n)], 0.05);
        covered += usize::from(r.ci_low.unwrap() <= 0.0 && 0.0 <= r.ci_high.unwrap());
    }
    assert!((covered as f64 / 300.0) < 0.7, "pooled coverage {}", covered as f64 / 300.0);
    // and a real 30 % change between groups whose runs vary by 5 % is found
    let (cov, verdicts) = coverage(12, 200, 5, 400, 1.3, (0.3, 0.05, 0.0));
    assert!(cov >= 0.9 && verdicts.get(&Verdict::Slower).copied().unwrap_or(0) >= 190, "{cov} {verdicts:?}");
}

/// A load that drifts during the run (neighbouring calls alike, over ~50 calls; the batches
/// hold 200): the batch means see it.
#[test]
fn drift_within_a_run_is_counted_by_the_batches() {
    let (cov, _) = coverage(21, 300, 1, 6400, 1.0, (0.2, 0.0, 0.03));
    assert!(cov >= 0.9, "coverage {cov}");
    // the independent-call variance alone would cover far less
    let mut rng = Rng(21);
    let mut covered = 0;
    for _ in 0..300 {
        let (b, n) = (sample_run(&mut rng, 6400, 1e6, 0.2, 0.0, 0.03), sample_run(&mut rng, 6400, 1e6, 0.2, 0.0, 0.03));
        let strip = |d: &[i64]| {
            let mut s = run_of(d);
            s.keys.values_mut().for_each(|c| c.batches = None);
            s
        };
        let r = row(vec![strip(&b)], vec![strip(&n)], 0.05);
        covered += usize::from(r.ci_low.unwrap() <= 0.0 && 0.0 <= r.ci_high.unwrap());
    }
    assert!((covered as f64 / 300.0) < 0.8, "iid coverage {}", covered as f64 / 300.0);
}

#[test]
fn one_call_per_side_cannot_be_declared_changed() {
    let c = compare(&group(vec![run_of(&[1_000_000])]), &group(vec![run_of(&[9_000_000])]), CompareBy::Region, 0.05);
    assert_eq!(c.unwrap().row_level, 0.95, "a row without an interval does not count");
    let r = row(vec![run_of(&[1_000_000])], vec![run_of(&[9_000_000])], 0.05);
    assert_eq!((r.verdict, r.change, r.ci_low, r.note), (Verdict::Unchanged, Some(8.0), None, Some(TOO_FEW_CALLS)));
    // one call per run but several runs: the runs' spread is the noise
    let base = vec![run_of(&[1_000_000]), run_of(&[1_010_000]), run_of(&[990_000])];
    let new = vec![run_of(&[2_000_000]), run_of(&[2_020_000]), run_of(&[1_980_000])];
    let r = row(base, new, 0.05);
    assert_eq!(r.verdict, Verdict::Slower);
    assert!(r.ci_low.unwrap() > 0.9 && r.ci_high.unwrap() < 1.1, "{r:?}");
}

/// `/tmp`-free runs built in memory: `outer` (3 calls) holds `inner` on one thread; `solo`
/// runs on a second thread; rank 1 has `outer` again.
fn nested_run(scale: i64) -> Run {
    let row = |region: u32, rank: u32, spans: &[(i64, i64)], thread: Option<i64>| {
        let mut r = RegionCalls::new(
            region,
            rank,
            Int64Array::from(spans.iter().map(|s| s.0).collect::<Vec<_>>()),
            Int64Array::from(spans.iter().map(|s| s.0 + (s.1 - s.0) * scale).collect::<Vec<_>>()),
        );
        r.thread_ids = thread.map(|t| Int64Array::from(vec![t; spans.len()]));
        r
    };
    Run {
        region_names: vec!["outer".into(), "inner".into(), "solo".into(), "unused".into()],
        regions: vec![
            row(0, 0, &[(0, 10), (100, 110), (200, 210)], Some(0)),
            row(1, 0, &[(2, 6), (102, 106), (202, 206)], Some(0)),
            row(2, 0, &[(0, 50)], Some(1)),
            row(3, 0, &[], Some(0)),
            row(0, 1, &[(0, 10)], Some(0)),
        ],
        num_ranks: 2,
        ..Default::default()
    }
}

#[test]
fn keys_by_region_and_by_path() {
    let run = nested_run(1);
    let by_region = RunCallStats::by_region("a", &run);
    let mut names: Vec<&String> = by_region.keys.keys().map(|k| &k[0]).collect();
    names.sort();
    assert_eq!(names, ["inner", "outer", "solo"], "a region without calls has no key");
    let outer = &by_region.keys[&vec!["outer".to_string()]];
    assert_eq!((outer.calls, outer.total_ns), (4, 40));
    let analysis = RunAnalysis::new(Arc::new(run));
    let by_path = RunCallStats::by_path("a", &analysis).unwrap();
    let mut paths: Vec<String> = by_path.keys.keys().map(|k| k.join(";")).collect();
    paths.sort();
    assert_eq!(paths, ["outer", "outer;inner", "solo"]);
    assert_eq!(by_path.keys[&vec!["outer".to_string(), "inner".to_string()]].total_ns, 12);
}

#[test]
fn rows_new_gone_sorted_and_as_json() {
    let mut base = nested_run(1);
    base.region_names[2] = "only_base".into();
    let new = nested_run(2);
    let side = |run: &Run, label: &str| Group { label: label.into(), runs: vec![RunCallStats::by_region(label, run)] };
    let c = compare(&side(&base, "a.h5"), &side(&new, "b.h5"), CompareBy::Region, 0.05).unwrap();
    let names: Vec<(&str, Verdict)> = c.rows.iter().map(|r| (r.name.as_str(), r.verdict)).collect();
    // |Δ time per run|: solo +100 ns (new), only_base −50 (gone), outer +40, inner +12; outer
    // and inner take exactly twice as long in every call (no noise: a point interval)
    assert_eq!(
        names,
        [("solo", Verdict::New), ("only_base", Verdict::Gone), ("outer", Verdict::Slower), ("inner", Verdict::Slower)]
    );
    // the intervals hold together over the two rows that have one
    assert!((c.row_level - (1.0 - 0.05 / 2.0)).abs() < 1e-12, "{}", c.row_level);
    let outer = &c.rows[2];
    assert_eq!((outer.base_calls, outer.new_calls, outer.change), (4.0, 4.0, Some(1.0)));
    assert_eq!(c.rows[0].change, None);
    let j = c.to_json();
    assert_eq!(j["base"]["runs"], json!(["a.h5"]));
    assert_eq!(j["regions"][0]["verdict"], "new");
    assert_eq!(j["regions"][0]["base_time"], 0.0);
    assert_eq!(j["regions"][0]["ci_low"], Value::Null);
    assert_eq!(j["regions"][2]["new_time"], 80e-9);
    assert_eq!(c.regressions(0.5).len(), 2, "outer and inner: each exactly twice as slow");
    assert!(c.regressions(1.5).is_empty());
    let err = compare(&Group { label: "empty/".into(), runs: vec![] }, &side(&new, "b"), CompareBy::Region, 0.05);
    assert_eq!(err.unwrap_err().to_string(), "empty/: no run to compare");
}

/// A vector of durations with some spread (at least 2 calls).
fn durations() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(1_000i64..10_000_000, 2..200)
}

proptest! {
    /// Scaling every duration of both sides by the same factor changes nothing; swapping the
    /// sides inverts the change and mirrors the interval on the log scale.
    #[test]
    fn scale_invariant_and_swap_symmetric(b in durations(), n in durations(), k in 2i64..50) {
        let r = row(vec![run_of(&b)], vec![run_of(&n)], 0.05);
        let scaled = |d: &[i64]| d.iter().map(|x| x * k).collect::<Vec<_>>();
        let s = row(vec![run_of(&scaled(&b))], vec![run_of(&scaled(&n))], 0.05);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * (1.0 + x.abs());
        prop_assert!(close(r.change.unwrap(), s.change.unwrap()));
        prop_assert!(close(r.ci_low.unwrap(), s.ci_low.unwrap()) && close(r.ci_high.unwrap(), s.ci_high.unwrap()));
        let clear = |x: f64| (x.abs() - 0.05).abs() > 1e-9;
        if clear(r.ci_low.unwrap()) && clear(r.ci_high.unwrap()) {
            prop_assert_eq!(r.verdict, s.verdict, "{:?} {:?}", r, s);
        }
        let w = row(vec![run_of(&n)], vec![run_of(&b)], 0.05);
        prop_assert!(close(1.0 / (1.0 + r.change.unwrap()) - 1.0, w.change.unwrap()));
        prop_assert!(close(1.0 / (1.0 + r.ci_high.unwrap()) - 1.0, w.ci_low.unwrap()));
        // the thresholds are ±5 % of the change, not symmetric on the log scale: "faster" by
        // −5 % is "slower" by +5.26 % the other way; "slower" by +5 % is "faster" by −4.76 %
        if r.verdict == Verdict::Faster && clear(r.ci_high.unwrap()) {
            prop_assert_eq!(w.verdict, Verdict::Slower);
        }
        if r.verdict == Verdict::Slower {
            prop_assert!(w.verdict != Verdict::Slower);
        }
        prop_assert!(r.ci_low.unwrap() <= r.change.unwrap() && r.change.unwrap() <= r.ci_high.unwrap());
    }

    /// The verdict follows the interval and the threshold, whatever the data.
    #[test]
    fn verdicts_follow_the_interval(b in durations(), n in durations(), t in 0.0f64..0.5) {
        let r = row(vec![run_of(&b)], vec![run_of(&n)], t);
        let (lo, hi) = (r.ci_low.unwrap(), r.ci_high.unwrap());
        let want = if lo > t { Verdict::Slower } else if hi < -t { Verdict::Faster } else { Verdict::Unchanged };
        prop_assert_eq!(r.verdict, want);
    }
}
