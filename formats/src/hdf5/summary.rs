//! `rank_region_index/summary_statistics`: the reference's `_timing_summary` per region row,
//! with numpy's summation order so float statistics match bit for bit.
use hdf5::H5Type;

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

/// numpy's pairwise summation (`pairwise_sum` in `loops_utils.h`), so float statistics
/// match the reference bit for bit.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = -0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `np.add.reduce(int64 array, dtype=float64)`: cast in buffers of 8192, pairwise per buffer.
fn numpy_sum_cast(a: &[i64]) -> f64 {
    let mut total = 0.0;
    let mut buf = Vec::with_capacity(8192.min(a.len()));
    for chunk in a.chunks(8192) {
        buf.clear();
        buf.extend(chunk.iter().map(|&x| x as f64));
        total += pairwise_sum(&buf);
    }
    total
}

/// The reference's `_timing_summary` of one row.
pub fn summary_record(start: &[i64], end: &[i64], gpu: Option<&[i64]>) -> SummaryRecord {
    let mut s = SummaryRecord::default();
    let n = start.len().min(end.len());
    if n > 0 {
        let d: Vec<i64> = (0..n).map(|i| end[i].wrapping_sub(start[i])).collect();
        let count = n as f64;
        let mean = numpy_sum_cast(&d) / count;
        let sq: Vec<f64> = d
            .iter()
            .map(|&x| {
                let y = x as f64 - mean;
                y * y
            })
            .collect();
        s.mean = mean;
        s.m2 = (pairwise_sum(&sq) / count) * count;
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
