//! Quantiles of Student's t distribution (and of the standard normal), for the intervals of
//! [`crate::compare`]: `t_quantile(0.975, df)` is the half-width factor of a 95 % interval
//! whose variance estimate has `df` degrees of freedom (not necessarily an integer: a
//! Welch–Satterthwaite combination).
//!
//! The t CDF is the regularized incomplete beta function (continued fraction, Lentz's
//! method), inverted by Newton's method from the normal quantile, bracketed by bisection.

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms: ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // reflection: Γ(x) Γ(1 − x) = π / sin(πx)
        return std::f64::consts::PI.ln() - (std::f64::consts::PI * x).sin().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (Numerical Recipes' `betacf`).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function `I_x(a, b)`, `0 <= x <= 1`.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T <= t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// Density of Student's t with `df` degrees of freedom at `t`.
fn t_pdf(t: f64, df: f64) -> f64 {
    let ln = ln_gamma((df + 1.0) / 2.0)
        - ln_gamma(df / 2.0)
        - 0.5 * (df * std::f64::consts::PI).ln()
        - (df + 1.0) / 2.0 * (1.0 + t * t / df).ln();
    ln.exp()
}

/// The standard normal quantile (Acklam's rational approximation: 1.2e-9 relative), `0 < p < 1`.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`df > 0`, fractional
/// allowed; `df` infinite or above 1e7 gives the normal quantile), `0 < p < 1`.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    if p == 0.5 {
        return 0.0;
    }
    let z = normal_quantile(p);
    if !df.is_finite() || df > 1e7 {
        return z;
    }
    // bracket [lo, hi] with t_cdf(lo) <= p <= t_cdf(hi); the normal quantile is below the t one
    let (mut lo, mut hi) = (0.0, z.max(1.0));
    while t_cdf(hi, df) < p {
        lo = hi;
        hi *= 2.0;
        if hi > 1e300 {
            return f64::INFINITY;
        }
    }
    // first Cornish–Fisher term as the start
    let mut x = (z + (z * z * z + z) / (4.0 * df)).clamp(lo, hi);
    for _ in 0..200 {
        let f = t_cdf(x, df) - p;
        if f.abs() < 1e-14 {
            return x;
        }
        if f < 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let step = x - f / t_pdf(x, df);
        x = if step > lo && step < hi { step } else { 0.5 * (lo + hi) };
        if hi - lo < 1e-13 * hi.max(1.0) {
            return x;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Published table values (two-sided 95 %: the 0.975 quantile; and 0.995).
    #[test]
    fn quantiles_match_the_tables() {
        for (df, want) in [
            (1.0, 12.706_204_736),
            (2.0, 4.302_652_730),
            (3.0, 3.182_446_305),
            (5.0, 2.570_581_836),
            (10.0, 2.228_138_852),
            (30.0, 2.042_272_456),
            (100.0, 1.983_971_519),
            (1e9, 1.959_963_985),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 1e-6 * want, "df {df}: {got} vs {want}");
        }
        assert!((t_quantile(0.995, 4.0) - 4.604_094_871).abs() < 1e-6);
        assert!((t_quantile(0.025, 7.0) + 2.364_624_252).abs() < 1e-6);
        // fractional df lies between its integer neighbours
        let (a, b, c) = (t_quantile(0.975, 4.0), t_quantile(0.975, 4.5), t_quantile(0.975, 5.0));
        assert!(a > b && b > c, "{a} {b} {c}");
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((normal_quantile(0.001) + 3.090_232_306_167_813_5).abs() < 1e-8);
    }

    #[test]
    fn cdf_inverts_the_quantile() {
        for df in [0.7, 1.0, 2.5, 9.0, 31.0, 400.0] {
            for p in [0.6, 0.9, 0.975, 0.999] {
                let t = t_quantile(p, df);
                assert!((t_cdf(t, df) - p).abs() < 1e-10, "df {df} p {p}");
            }
        }
        assert_eq!(t_cdf(0.0, 3.0), 0.5);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }
}
