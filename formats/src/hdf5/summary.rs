//! `rank_region_index/summary_statistics`: the reference's `_timing_summary` per region row,
//! with numpy's summation order (`analysis::npcompat`) so float statistics match bit for bit.
use hdf5::H5Type;
use scope_profiler_analysis::npcompat::{mean_i64, var_i64};

/// One row of `rank_region_index/summary_statistics` (88 bytes, the reference's compound).
#[derive(H5Type, Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct SummaryRecord {
    /// Σ durations, ns.
    pub total: i64,
    /// Shortest / longest duration, ns.
    pub minimum: i64,
    pub maximum: i64,
    /// Duration of the first / last call in recorded order, ns.
    pub first: i64,
    pub last: i64,
    /// Earliest start / latest end, ns.
    pub start_minimum: i64,
    pub end_maximum: i64,
    /// Calls with a GPU duration (>= 0) and their total, ns.
    pub gpu_count: u64,
    pub gpu_total: i64,
    /// Mean duration and Σ squared deviations (variance × count), ns and ns².
    pub mean: f64,
    pub m2: f64,
}

/// The reference's `_timing_summary` of one row.
pub fn summary_record(start: &[i64], end: &[i64], gpu: Option<&[i64]>) -> SummaryRecord {
    let mut s = SummaryRecord::default();
    let n = start.len().min(end.len());
    if n > 0 {
        let d: Vec<i64> = (0..n).map(|i| end[i].wrapping_sub(start[i])).collect();
        // `float(np.mean(d, dtype=f8))` and `float(np.var(d, dtype=f8)) * count`.
        s.mean = mean_i64(&d);
        s.m2 = var_i64(&d) * n as f64;
        s.total = d.iter().fold(0i64, |a, &x| a.wrapping_add(x));
        s.minimum = *d.iter().min().unwrap();
        s.maximum = *d.iter().max().unwrap();
        s.first = d[0];
        s.last = d[n - 1];
        s.start_minimum = *start[..n].iter().min().unwrap();
        s.end_maximum = *end[..n].iter().max().unwrap();
    }
    if let Some(g) = gpu {
        for &v in g.iter().filter(|&&v| v >= 0) {
            s.gpu_count += 1;
            s.gpu_total = s.gpu_total.wrapping_add(v);
        }
    }
    s
}
