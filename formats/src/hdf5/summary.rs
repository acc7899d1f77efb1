//! `rank_region_index/summary_statistics`: the reference's `_timing_summary` per region row,
//! with numpy's summation order (`analysis::npcompat`) so float statistics match bit for bit.
use hdf5::H5Type;
use scope_profiler_analysis::npcompat::mean_var_i64_by;

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
        // the durations are computed where they are used, never held as an array (two arrays
        // of n per region would be allocated and faulted in at every finalize())
        let (start, end) = (&start[..n], &end[..n]);
        let d = |i: usize| {
            debug_assert!(i < n);
            // SAFETY: the statistics below ask only for i < n, the length of both slices
            unsafe { end.get_unchecked(i).wrapping_sub(*start.get_unchecked(i)) }
        };
        // `float(np.mean(d, dtype=f8))` and `float(np.var(d, dtype=f8)) * count`.
        let (mean, var) = mean_var_i64_by(n, d);
        s.mean = mean;
        s.m2 = var * n as f64;
        // one pass for the integer statistics, not five over both columns
        let (mut total, mut minimum, mut maximum) = (0i64, i64::MAX, i64::MIN);
        let (mut start_minimum, mut end_maximum) = (i64::MAX, i64::MIN);
        for (&b, &e) in start.iter().zip(end) {
            let x = e.wrapping_sub(b);
            total = total.wrapping_add(x);
            minimum = minimum.min(x);
            maximum = maximum.max(x);
            start_minimum = start_minimum.min(b);
            end_maximum = end_maximum.max(e);
        }
        (s.total, s.minimum, s.maximum) = (total, minimum, maximum);
        (s.start_minimum, s.end_maximum) = (start_minimum, end_maximum);
        s.first = d(0);
        s.last = d(n - 1);
    }
    if let Some(g) = gpu {
        for &v in g.iter().filter(|&&v| v >= 0) {
            s.gpu_count += 1;
            s.gpu_total = s.gpu_total.wrapping_add(v);
        }
    }
    s
}
