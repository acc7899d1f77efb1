//! What changed between two runs (or two groups of repeated runs) of a program, and how
//! sure that is: `scope-profiler diff`, `scope_profiler.compare()`.
//!
//! Each side is a [`Group`] of runs of one version, each run reduced to per-key call
//! statistics ([`RunCallStats`]: a key is a region, or a call path). For every key seen
//! on either side, [`compare`] gives a [`DiffRow`]: the mean calls and time per run on each
//! side, the change of the time per run (`new / base − 1`), its 95 % interval
//! ([`interval`]: within-run noise from the calls, between-run noise from the runs), and a
//! [`Verdict`] that says "slower" or "faster" only when the whole interval is beyond the
//! threshold. The intervals hold together: with `k` rows, each is at level `1 − 0.05/k`. `docs/compare.md` describes the method and its assumptions.
mod call_stats;
pub mod display;
pub mod interval;
pub mod student_t;

use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

pub use call_stats::{runs_call_stats, CallStats, CompareBy, Key, RunCallStats, BATCHES};
use interval::{change_interval, row_level, SideEstimate};

/// One side of a comparison: runs of one version, named as the user gave them.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// What the side was given as (a file, a directory, a label).
    pub label: String,
    pub runs: Vec<RunCallStats>,
}

/// What a key did between the two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The whole interval is above `+threshold`.
    Slower,
    /// The whole interval is below `−threshold`.
    Faster,
    /// Anything else: the interval reaches within the threshold, or the noise is unknown.
    Unchanged,
    /// Calls only on the new side.
    New,
    /// Calls only on the base side.
    Gone,
}

impl Verdict {
    /// `"slower"`, `"faster"`, `"unchanged"`, `"new"`, `"gone"`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Gone => "gone",
        }
    }
}

/// Why a row present on both sides has no interval.
pub const TOO_FEW_CALLS: &str = "too few calls to estimate the noise (one call in a single run)";
/// Why a row present on both sides has no change.
pub const NO_TIME: &str = "no measurable time on one side";

/// One key's comparison. Times are seconds per run (mean over the side's runs).
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    /// The region name, or the call path's names joined by `;`.
    pub name: String,
    /// The key: `[region]`, or the names along the call path, root first.
    pub key: Key,
    /// Mean calls per run, base and new.
    pub base_calls: f64,
    pub new_calls: f64,
    /// Mean inclusive time per run (Σ call durations), s.
    pub base_time: f64,
    pub new_time: f64,
    /// `new_time / base_time − 1`; `None` when a side has no call (or no time).
    pub change: Option<f64>,
    /// Interval of `change` (95 % for all rows together, [`Comparison::row_level`] each);
    /// `None` when it cannot be estimated.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Verdict,
    /// Why `change` or the interval is missing, when one is while both sides have calls.
    pub note: Option<&'static str>,
}

/// A side as the comparison reports it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SideInfo {
    pub label: String,
    /// The runs' names, in order.
    pub runs: Vec<String>,
}

/// The rows of a comparison, largest change of time per run first.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub base: SideInfo,
    pub new: SideInfo,
    pub by: CompareBy,
    /// The verdict threshold, a fraction (0.05 = 5 %).
    pub threshold: f64,
    /// The level of each row's interval: [`interval::LEVEL`] shared by the rows with an
    /// interval ([`interval::row_level`]).
    pub row_level: f64,
    pub rows: Vec<DiffRow>,
}

/// Why a comparison cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompareError {
    #[error("{0}: no run to compare")]
    NoRuns(String),
    #[error("the threshold must be a finite fraction >= 0, not {0}")]
    Threshold(f64),
}

/// Compare `new` with `base`: one row per key with calls on either side, sorted by the size
/// of the change of time per run (|new − base|, largest first; then by name).
/// `threshold` (a fraction) decides the verdicts. Keys are compared in parallel.
pub fn compare(base: &Group, new: &Group, by: CompareBy, threshold: f64) -> Result<Comparison, CompareError> {
    for g in [base, new] {
        if g.runs.is_empty() {
            return Err(CompareError::NoRuns(g.label.clone()));
        }
    }
    if !(threshold.is_finite() && threshold >= 0.0) {
        return Err(CompareError::Threshold(threshold));
    }
    let keys: BTreeSet<&Key> = base.runs.iter().chain(&new.runs).flat_map(|r| r.keys.keys()).collect();
    let keys: Vec<&Key> = keys.into_iter().collect();
    let estimate = |g: &Group, key: &Key| {
        let per_run: Vec<Option<&CallStats>> = g.runs.iter().map(|r| r.keys.get(key)).collect();
        SideEstimate::of_runs(&per_run)
    };
    let sides: Vec<(SideEstimate, SideEstimate)> =
        crate::pool::install(|| keys.par_iter().map(|k| (estimate(base, k), estimate(new, k))).collect());
    // the intervals hold together: one per key with calls, time and a variance on both sides
    let both = sides.iter().filter(|(b, n)| has_interval(b) && has_interval(n)).count();
    let level = row_level(both);
    let mut rows: Vec<DiffRow> =
        keys.iter().zip(&sides).map(|(k, (b, n))| diff_row(k, b, n, by, threshold, level)).collect();
    rows.retain(|r| r.base_calls > 0.0 || r.new_calls > 0.0);
    rows.sort_by(|a, b| {
        let (da, db) = ((a.new_time - a.base_time).abs(), (b.new_time - b.base_time).abs());
        db.total_cmp(&da).then_with(|| a.name.cmp(&b.name))
    });
    let info = |g: &Group| SideInfo { label: g.label.clone(), runs: g.runs.iter().map(|r| r.name.clone()).collect() };
    Ok(Comparison { base: info(base), new: info(new), by, threshold, row_level: level, rows })
}

/// Whether a side of a key can take part in an interval.
fn has_interval(s: &SideEstimate) -> bool {
    s.calls > 0.0 && s.total_ns > 0.0 && s.variance.is_some()
}

/// The row of `key` from its two sides' estimates; intervals at `level`.
fn diff_row(key: &Key, b: &SideEstimate, n: &SideEstimate, by: CompareBy, threshold: f64, level: f64) -> DiffRow {
    let mut row = DiffRow {
        name: match by {
            CompareBy::Region => key.first().cloned().unwrap_or_default(),
            CompareBy::Path => key.join(";"),
        },
        key: key.clone(),
        base_calls: b.calls,
        new_calls: n.calls,
        base_time: b.total_ns / 1e9,
        new_time: n.total_ns / 1e9,
        change: None,
        ci_low: None,
        ci_high: None,
        verdict: Verdict::Unchanged,
        note: None,
    };
    if b.calls == 0.0 || n.calls == 0.0 {
        row.verdict = if b.calls == 0.0 { Verdict::New } else { Verdict::Gone };
        return row;
    }
    let Some(c) = change_interval(b, n, level) else {
        row.note = Some(NO_TIME);
        return row;
    };
    row.change = Some(c.change);
    match c.interval {
        None => row.note = Some(TOO_FEW_CALLS),
        Some((lo, hi)) => {
            row.ci_low = Some(lo);
            row.ci_high = Some(hi);
            row.verdict = if lo > threshold {
                Verdict::Slower
            } else if hi < -threshold {
                Verdict::Faster
            } else {
                Verdict::Unchanged
            };
        }
    }
    row
}

impl Comparison {
    /// The rows that are "slower" with the low end of their interval above `limit` (a
    /// fraction: 0.1 = 10 %), in row order: what `--fail-on-regression` fails on.
    pub fn regressions(&self, limit: f64) -> Vec<&DiffRow> {
        self.rows.iter().filter(|r| r.verdict == Verdict::Slower && r.ci_low.is_some_and(|lo| lo > limit)).collect()
    }

    /// The comparison as one JSON object: `base` and `new` (label, runs), `by`, `threshold`,
    /// `level` (of the intervals together), `row_level` (of each), and `regions`, one object per row (see [`row_json`]).
    pub fn to_json(&self) -> Value {
        let side = |s: &SideInfo| json!({"label": s.label, "runs": s.runs});
        json!({
            "base": side(&self.base),
            "new": side(&self.new),
            "by": self.by.name(),
            "threshold": self.threshold,
            "level": interval::LEVEL,
            "row_level": self.row_level,
            "regions": self.rows.iter().map(|r| row_json(r, self.by)).collect::<Vec<_>>(),
        })
    }
}

/// One row as JSON: `name` (and `path`, the list of names, by call path), `base_calls`,
/// `new_calls` (mean calls per run), `base_time`, `new_time` (mean inclusive s per run),
/// `change`, `ci_low`, `ci_high` (null when unknown), `verdict`, `note`.
pub fn row_json(r: &DiffRow, by: CompareBy) -> Value {
    let mut v = json!({"name": r.name});
    if by == CompareBy::Path {
        v["path"] = json!(r.key);
    }
    for (k, x) in [
        ("base_calls", json!(r.base_calls)),
        ("new_calls", json!(r.new_calls)),
        ("base_time", json!(r.base_time)),
        ("new_time", json!(r.new_time)),
        ("change", json!(r.change)),
        ("ci_low", json!(r.ci_low)),
        ("ci_high", json!(r.ci_high)),
        ("verdict", json!(r.verdict.name())),
        ("note", json!(r.note)),
    ] {
        v[k] = x;
    }
    v
}

#[cfg(test)]
mod tests;
