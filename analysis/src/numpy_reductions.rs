//! Float reductions computed exactly as numpy 2.x computes them, so statistics match the
//! reference bit for bit.
//!
//! The results objects print floats at full precision (`repr`) and are compared with the
//! reference package (numpy 2.4), so "close" is not enough: every function here replays numpy's
//! order of operations on a contiguous 1-d array (checked against numpy 2.4.6 by
//! `analysis/tests/numpy_reductions.rs` with vectors from `analysis/tests/numpy_reductions_vectors.py`).
//!
//! * Sums use numpy's pairwise summation (`pairwise_sum` in `loops_utils.h.src`), added to the
//!   reduction's initial value `0.0`.
//! * An int64 array reduced with `dtype=float64` (what `np.mean` / `np.std` do for integers) is
//!   cast in buffers of [`CAST_BUFFER`] elements; each buffer is summed pairwise and the buffer
//!   sums are added one after another.
//! * `std` / `var` follow numpy's `_var`: mean by the (casting) sum divided by n, deviations
//!   `a[i] as f64 - mean`, squared, summed pairwise, divided by n (ddof 0), then `sqrt`.
//! * Percentiles follow `np.percentile(a, q)` with the default method `"linear"`.
//!
//! Units are whatever the caller's are (ns for `int64` durations, s for `ns / 1e9` arrays);
//! nothing here converts. Empty input gives what numpy gives (documented per function); where
//! numpy raises, the function returns NaN and says so.

/// Elements per cast buffer in numpy's buffered reduction (`NPY_BUFSIZE`, 8192): the chunk size
/// of `np.add.reduce(int64_array, dtype=float64)`. Checked against numpy 2.4.6 up to 1e6
/// elements.
pub const CAST_BUFFER: usize = 8192;

/// numpy's `pairwise_sum` for doubles: blocks of < 8 summed in order, blocks up to 128 with
/// eight accumulators, larger blocks split at half (rounded down to a multiple of 8).
fn pairwise_sum(a: &[f64]) -> f64 {
    pairwise_sum_by(0, a.len(), &|i| a[i])
}

/// [`pairwise_sum`] of the `n` values `value(at)`, `value(at + 1)`, ... computed as they are
/// needed, in the same order of operations (bit for bit the same result), so that a derived
/// array - durations, squared deviations - is never materialised (`finalize()` would
/// allocate and fault in two such arrays per region).
fn pairwise_sum_by<F: Fn(usize) -> f64>(at: usize, n: usize, value: &F) -> f64 {
    if n < 8 {
        let mut res = -0.0;
        for i in at..at + n {
            res += value(i);
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        for (j, acc) in r.iter_mut().enumerate() {
            *acc = value(at + j);
        }
        let mut i = 8;
        while i < n - (n % 8) {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += value(at + i + j);
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for k in at + i..at + n {
            res += value(k);
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum_by(at, n2, value) + pairwise_sum_by(at + n2, n - n2, value)
    }
}

/// `np.add.reduce(a)` (= `np.sum(a)`) of a contiguous float64 array: `0.0 + pairwise(a)`.
/// Empty: `0.0`.
pub fn sum_f64(a: &[f64]) -> f64 {
    0.0 + pairwise_sum(a)
}

/// `np.add.reduce(a, dtype=np.float64)` of a contiguous int64 array, as `np.mean` / `np.std`
/// compute it: each element cast with `as f64` (round to nearest), in buffers of
/// [`CAST_BUFFER`]; the buffer sums added in order to `0.0`. Empty: `0.0`.
pub fn sum_i64_as_f64(a: &[i64]) -> f64 {
    sum_i64_as_f64_by(a.len(), |i| a[i])
}

/// [`sum_i64_as_f64`] of the int64 values `value(0..n)`, computed as they are needed.
pub fn sum_i64_as_f64_by(n: usize, value: impl Fn(usize) -> i64) -> f64 {
    let mut total = 0.0;
    for at in (0..n).step_by(CAST_BUFFER) {
        total += pairwise_sum_by(at, CAST_BUFFER.min(n - at), &|i| value(i) as f64);
    }
    total
}

/// `(float(np.mean(a)), float(np.var(a)))` of the int64 array `a[i] = value(i)`, `i < n`,
/// without materialising `a` nor its squared deviations ([`mean_i64`], [`var_i64`] bit for
/// bit). Empty: `(NaN, NaN)`.
pub fn mean_var_i64_by(n: usize, value: impl Fn(usize) -> i64) -> (f64, f64) {
    let mean = sum_i64_as_f64_by(n, &value) / n as f64;
    let sq = 0.0
        + pairwise_sum_by(0, n, &|i| {
            let d = value(i) as f64 - mean;
            d * d
        });
    (mean, sq / n as f64)
}

/// `float(np.mean(a))` of an int64 array: [`sum_i64_as_f64`] / n. Empty: NaN (numpy warns
/// "Mean of empty slice" and returns nan).
pub fn mean_i64(a: &[i64]) -> f64 {
    sum_i64_as_f64(a) / a.len() as f64
}

/// `float(np.mean(a))` of a float64 array: [`sum_f64`] / n. Empty: NaN (as numpy).
pub fn mean_f64(a: &[f64]) -> f64 {
    sum_f64(a) / a.len() as f64
}

/// Σ (x - mean)² of numpy's `_var`, given numpy's mean and the elements as float64.
fn sum_sq_dev(values: impl Iterator<Item = f64>, mean: f64) -> f64 {
    let sq: Vec<f64> = values
        .map(|x| {
            let d = x - mean;
            d * d
        })
        .collect();
    sum_f64(&sq)
}

/// `float(np.var(a))` (ddof 0) of an int64 array: Σ (a[i] as f64 - mean)² / n, with numpy's
/// mean and pairwise sum. Empty: NaN (numpy warns and returns nan).
pub fn var_i64(a: &[i64]) -> f64 {
    mean_var_i64_by(a.len(), |i| a[i]).1
}

/// `float(np.var(a))` (ddof 0) of a float64 array. Empty: NaN (as numpy).
pub fn var_f64(a: &[f64]) -> f64 {
    let mean = mean_f64(a);
    sum_sq_dev(a.iter().copied(), mean) / a.len() as f64
}

/// `float(np.std(a))` (ddof 0) of an int64 array: `sqrt(`[`var_i64`]`)`. Empty: NaN (as numpy).
pub fn std_i64(a: &[i64]) -> f64 {
    var_i64(a).sqrt()
}

/// `float(np.std(a))` (ddof 0) of a float64 array: `sqrt(`[`var_f64`]`)`. Empty: NaN (as numpy).
pub fn std_f64(a: &[f64]) -> f64 {
    var_f64(a).sqrt()
}

/// Where the linear method reads the sorted array for `q` (percent) over `n` values:
/// (lower index, upper index, gamma), replaying numpy's `_get_indexes` and `_get_gamma`.
/// `None` when numpy raises: `n == 0` (IndexError) or `q / 100` outside `[0, 1]` or NaN
/// (ValueError "Percentiles must be in the range [0, 100]").
fn linear_points(n: usize, q: f64) -> Option<(usize, usize, f64)> {
    let quantile = q / 100.0;
    if n == 0 || !(0.0..=1.0).contains(&quantile) {
        return None;
    }
    let virtual_index = (n - 1) as f64 * quantile;
    if virtual_index >= (n - 1) as f64 {
        // numpy sets both indexes to -1 (the last element); gamma is taken against that -1.
        return Some((n - 1, n - 1, virtual_index - -1.0));
    }
    let previous = virtual_index.floor();
    let lower = previous as usize;
    Some((lower, lower + 1, virtual_index - previous))
}

/// numpy's `_lerp(a, b, t)` on float64: `a + (b - a) * t`, replaced by `b - (b - a) * (1 - t)`
/// where `t >= 0.5`.
fn lerp(a: f64, b: f64, diff: f64, t: f64) -> f64 {
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// The values at sorted positions `lower` and `upper` (`upper` is `lower` or `lower + 1`) of a
/// copy of `a`, by selection (the input is not modified).
fn sorted_pair<T: Copy>(a: &[T], lower: usize, upper: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> (T, T) {
    let mut v = a.to_vec();
    let (_, &mut lo, rest) = v.select_nth_unstable_by(lower, &cmp);
    let hi = if upper == lower { lo } else { *rest.iter().min_by(|x, y| cmp(x, y)).unwrap_or(&lo) };
    (lo, hi)
}

/// `float(np.percentile(a, q))` of an int64 array, method `"linear"`, `q` in percent
/// (`0.0..=100.0`). numpy: virtual index `(n - 1) * (q / 100)`, neighbours `floor` and
/// `floor + 1` (both the last element at or above `n - 1`), gamma = index - lower index, and
/// `_lerp` with the difference taken in int64 (wrapping, as numpy's int64 subtraction) before
/// the cast to float64. NaN where numpy raises: empty `a` (IndexError) or `q` outside
/// `[0, 100]` / NaN (ValueError).
pub fn percentile_i64(a: &[i64], q: f64) -> f64 {
    let Some((lower, upper, gamma)) = linear_points(a.len(), q) else {
        return f64::NAN;
    };
    let (lo, hi) = sorted_pair(a, lower, upper, |x, y| x.cmp(y));
    lerp(lo as f64, hi as f64, hi.wrapping_sub(lo) as f64, gamma)
}

/// `float(np.percentile(a, q))` of a float64 array, method `"linear"`, `q` in percent; the
/// same steps as [`percentile_i64`] in float64. If `a` holds a NaN the result is NaN (numpy
/// returns the NaN that sorts last; which NaN payload is not reproduced). Equal values of
/// different sign (`-0.0` / `0.0`) may land in a different order than numpy's partition, so a
/// zero result's sign may differ. NaN where numpy raises: empty `a`, `q` outside `[0, 100]`.
pub fn percentile_f64(a: &[f64], q: f64) -> f64 {
    let Some((lower, upper, gamma)) = linear_points(a.len(), q) else {
        return f64::NAN;
    };
    if let Some(&nan) = a.iter().find(|x| x.is_nan()) {
        return nan;
    }
    let (lo, hi) = sorted_pair(a, lower, upper, f64::total_cmp);
    lerp(lo, hi, hi - lo, gamma)
}

/// Python's `max(x, 0.0)`: `x` unless `0.0 > x` (so NaN and `-0.0` pass through).
fn py_max_zero(x: f64) -> f64 {
    if 0.0 > x {
        0.0
    } else {
        x
    }
}

/// Python's `x ** 2` on a float: C `pow(|x|, 2.0)` from the system libm, as CPython's
/// `float_pow` calls it (the exponent hidden from the optimiser so it stays a libm call,
/// not `x * x`).
fn py_square(x: f64) -> f64 {
    x.abs().powf(std::hint::black_box(2.0))
}

/// Standard deviation of a summary-only region row from its stored statistics, in the row's
/// unit (ns): `float(np.sqrt(max(float(m2), 0.0) / count))` of `Region.std_duration`; the caller
/// divides by `NS_PER_SECOND` (1e9) afterwards, as the Python does. `count == 0` gives `0.0`
/// (the Python's `if count and m2 is not None ... else 0.0`; a missing `m2` is the caller's).
pub fn stored_std(count: i64, m2: f64) -> f64 {
    if count == 0 {
        return 0.0;
    }
    (py_max_zero(m2) / count as f64).sqrt()
}

/// Pooled standard deviation over stored rows `(count, mean, m2)` (ns, ns, ns²), in ns, exactly
/// as `MPIRegion.std_duration` (and the reference's summary merge) computes it for summary-only
/// rows with Python 3.11 floats: `count = Σ count`, `mean = Σ (count * mean) / count`,
/// `m2 = Σ (m2 + count * (mean_row - mean) ** 2)` (plain left-to-right sums starting at 0),
/// then `np.sqrt(max(m2, 0.0) / count)`. The caller divides by `NS_PER_SECOND` (1e9) and picks
/// the rows (the Python keeps rows with calls and stored statistics). No rows: `0.0` (as the
/// Python). Total count 0: NaN (the Python raises ZeroDivisionError).
pub fn pooled_std(rows: &[(i64, f64, f64)]) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    let count: i128 = rows.iter().map(|&(c, _, _)| i128::from(c)).sum();
    if count == 0 {
        return f64::NAN;
    }
    let count_f = count as f64;
    let mut weighted = 0.0;
    for &(c, mean, _) in rows {
        weighted += c as f64 * mean;
    }
    let mean = weighted / count_f;
    let mut m2 = 0.0;
    for &(c, row_mean, row_m2) in rows {
        m2 += row_m2 + c as f64 * py_square(row_mean - mean);
    }
    (py_max_zero(m2) / count_f).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases_by_hand() {
        assert_eq!(sum_f64(&[]).to_bits(), 0.0f64.to_bits());
        assert_eq!(sum_f64(&[-0.0]).to_bits(), 0.0f64.to_bits());
        assert_eq!(mean_i64(&[1, 2, 3, 4]), 2.5);
        assert_eq!(std_i64(&[2, 4, 4, 4, 5, 5, 7, 9]), 2.0);
        assert!(mean_i64(&[]).is_nan() && std_f64(&[]).is_nan());
        assert_eq!(percentile_i64(&[3, 1, 2, 4], 50.0), 2.5);
        assert_eq!(percentile_i64(&[3, 1, 2, 4], 100.0), 4.0);
        assert_eq!(percentile_f64(&[3.0, 1.0, 2.0], 0.0), 1.0);
        assert!(percentile_i64(&[], 50.0).is_nan());
        assert!(percentile_f64(&[1.0], 101.0).is_nan());
        assert!(percentile_f64(&[1.0, f64::NAN], 10.0).is_nan());
        assert_eq!(stored_std(0, 5.0), 0.0);
        assert_eq!(stored_std(4, -1.0), 0.0);
        assert_eq!(stored_std(4, 16.0), 2.0);
        assert_eq!(pooled_std(&[]), 0.0);
        // Two rows of one value each (1 and 3): mean 2, m2 = 1 + 1, std = 1.
        assert_eq!(pooled_std(&[(1, 1.0, 0.0), (1, 3.0, 0.0)]), 1.0);
    }

    #[test]
    fn percentile_leaves_input_alone() {
        let a = [5i64, 1, 4, 2, 3];
        let before = a;
        let _ = percentile_i64(&a, 40.0);
        assert_eq!(a, before);
    }
}
