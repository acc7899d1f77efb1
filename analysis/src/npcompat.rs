//! TEMPORARY stub (replaced by the npcompat helper's module): numpy-compatible reductions.
fn pairwise(a: &[f64]) -> f64 {
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
        pairwise(&a[..n2]) + pairwise(&a[n2..])
    }
}
pub fn sum_f64(a: &[f64]) -> f64 {
    pairwise(a)
}
pub fn sum_i64_as_f64(a: &[i64]) -> f64 {
    let mut total = 0.0;
    for chunk in a.chunks(8192) {
        let buf: Vec<f64> = chunk.iter().map(|&x| x as f64).collect();
        total += pairwise(&buf);
    }
    total
}
pub fn mean_i64(a: &[i64]) -> f64 {
    sum_i64_as_f64(a) / a.len() as f64
}
pub fn mean_f64(a: &[f64]) -> f64 {
    sum_f64(a) / a.len() as f64
}
pub fn std_i64(a: &[i64]) -> f64 {
    let m = mean_i64(a);
    let sq: Vec<f64> = a.iter().map(|&x| (x as f64 - m) * (x as f64 - m)).collect();
    (sum_f64(&sq) / a.len() as f64).sqrt()
}
pub fn std_f64(a: &[f64]) -> f64 {
    let m = mean_f64(a);
    let sq: Vec<f64> = a.iter().map(|&x| (x - m) * (x - m)).collect();
    (sum_f64(&sq) / a.len() as f64).sqrt()
}
fn pct(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let idx = (n - 1) as f64 * q / 100.0;
    let lo = idx.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let g = idx - lo as f64;
    let (a, b) = (v[lo], v[hi]);
    let d = b - a;
    if g >= 0.5 {
        b - d * (1.0 - g)
    } else {
        a + d * g
    }
}
pub fn percentile_i64(a: &[i64], q: f64) -> f64 {
    pct(a.iter().map(|&x| x as f64).collect(), q)
}
pub fn percentile_f64(a: &[f64], q: f64) -> f64 {
    pct(a.to_vec(), q)
}
