//! How a figure is written for a person to read: in the text summary, the HTML report and
//! the notebook display. Durations are written in the unit that shows them (ns, µs, ms,
//! s) with three significant digits, so the time of a small function reads `758 ns`, not
//! `0.000 ms`; other floats in a repr keep three significant digits too. The values in
//! dicts and frames are never rounded: only their text is.

/// Significant digits of every figure written for reading.
pub const SIGNIFICANT: usize = 3;

/// `v` with [`SIGNIFICANT`] significant digits and no exponent: the number of decimals is
/// what three significant digits need (none from 100 up: `1234.5` -> `1234`, `12.34` ->
/// `12.3`, `0.0007586` -> `0.000759`). The one rounding rule of this module.
pub fn significant(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs().log10().floor() as i64;
    let decimals = (SIGNIFICANT as i64 - 1 - magnitude).max(0) as usize;
    let text = format!("{v:.decimals$}");
    // rounding may carry into one more digit (`9.996` -> `10.00`): one decimal fewer then
    let digits = text.chars().filter(char::is_ascii_digit).skip_while(|&c| c == '0').count();
    if decimals > 0 && digits > SIGNIFICANT {
        let decimals = decimals - 1;
        return format!("{v:.decimals$}");
    }
    text
}

/// A duration of `seconds` in the unit that shows it: `ns` below 1 µs, `µs` below 1 ms,
/// `ms` below 1 s, else `s`, with [`SIGNIFICANT`] significant digits (`758 ns`, `12.3 µs`,
/// `1.50 ms`, `2.00 s`; `0 s` for zero). A value that rounds up to 1000 of its unit is
/// written in the next one (`999.7 µs` -> `1.00 ms`).
pub fn duration_text(seconds: f64) -> String {
    if !seconds.is_finite() {
        return format!("{} s", significant(seconds));
    }
    if seconds == 0.0 {
        return "0 s".into();
    }
    const UNITS: [(f64, &str); 4] = [(1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")];
    let a = seconds.abs();
    let mut k = UNITS.iter().rposition(|&(scale, _)| a >= scale).unwrap_or(0);
    loop {
        let (scale, unit) = UNITS[k];
        let text = significant(seconds / scale);
        let whole: f64 = text.trim_start_matches('-').parse().unwrap_or(0.0);
        if whole < 1000.0 || k == UNITS.len() - 1 {
            return format!("{text} {unit}");
        }
        k += 1;
    }
}

/// [`duration_text`] of `ns` nanoseconds.
pub fn duration_text_ns(ns: f64) -> String {
    duration_text(ns / 1e9)
}

/// A float in a repr: [`significant`] digits, written as a Python float (`0.000759`,
/// `12.3`, `1234.0`), so a repr reads as its values without `0.0007586649999999995`.
pub fn float_repr(v: f64) -> String {
    let text = significant(v);
    if v.is_finite() && !text.contains('.') {
        format!("{text}.0")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each figure reads in the unit that shows it, three significant digits, carried into
    /// the next unit when rounding reaches 1000.
    #[test]
    fn durations_are_written_in_the_unit_that_shows_them() {
        let cases = [
            (758e-9, "758 ns"),
            (7.5866e-7, "759 ns"),
            (1.2e-8, "12.0 ns"),
            (0.5e-9, "0.500 ns"),
            (12.34e-6, "12.3 µs"),
            (999.7e-6, "1.00 ms"),
            (0.0015, "1.50 ms"),
            (0.0007586649999999995, "759 µs"),
            (0.999_96, "1.00 s"),
            (2.0, "2.00 s"),
            (61.27, "61.3 s"),
            (1234.5, "1234 s"),
            (0.0, "0 s"),
            (-0.0015, "-1.50 ms"),
        ];
        for (s, want) in cases {
            assert_eq!(duration_text(s), want, "{s}");
        }
        assert_eq!(duration_text_ns(758.0), "758 ns");
    }

    #[test]
    fn reprs_keep_three_significant_digits() {
        assert_eq!(float_repr(0.0007586649999999995), "0.000759");
        assert_eq!(float_repr(12.345), "12.3");
        assert_eq!(float_repr(9.996), "10.0");
        assert_eq!(float_repr(1234.5), "1234.0");
        assert_eq!(float_repr(0.0), "0.0");
        assert_eq!(float_repr(f64::NAN), "nan");
        assert_eq!(significant(99.96), "100");
        assert_eq!(significant(0.0999_6), "0.100");
    }
}
