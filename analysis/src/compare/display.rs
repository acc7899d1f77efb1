//! How a comparison's numbers are written for people: times in the unit that shows them
//! with 3 significant digits, changes in signed percent. Shared by the text table, the
//! HTML page and the notebook view, so that all three print the same thing.

/// Seconds in ns, µs, ms or s, 3 significant digits: `87.0 ns`, `512 µs`, `13.0 ms`,
/// `1.30 s`, `1.23e+03 s`; `0 s` for zero.
pub fn format_seconds(s: f64) -> String {
    if s == 0.0 {
        return "0 s".into();
    }
    if !s.is_finite() {
        return format!("{s} s");
    }
    // the unit of the value rounded to 3 digits (999.6 ns is 1.00 µs)
    let r = round_significant(s, 3);
    let a = r.abs() * (1.0 + 1e-12);
    let (v, unit) = if a < 1e-6 {
        (r * 1e9, "ns")
    } else if a < 1e-3 {
        (r * 1e6, "µs")
    } else if a < 1.0 {
        (r * 1e3, "ms")
    } else {
        (r, "s")
    };
    format!("{} {unit}", three_significant(v))
}

/// `v` rounded to `digits` significant digits.
fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let factor = 10f64.powi(v.abs().log10().floor() as i32 - (digits - 1));
    (v / factor).round() * factor
}

/// `v` with 3 significant digits (`1.00`, `12.3`, `512`, `1.23e+03` from 1000 on).
fn three_significant(v: f64) -> String {
    let a = v.abs();
    // rounding can carry into the next decade (999.6 -> 1.00e+03, 9.996 -> 10.0)
    let decimals = |x: f64| {
        if x >= 99.95 {
            0
        } else if x >= 9.995 {
            1
        } else {
            2
        }
    };
    if a >= 999.5 {
        let exp = a.log10().floor() as i32;
        let mantissa = v / 10f64.powi(exp);
        let (mantissa, exp) =
            if (mantissa.abs() * 100.0).round() >= 1000.0 { (mantissa / 10.0, exp + 1) } else { (mantissa, exp) };
        return format!("{mantissa:.2}e+{exp:02}");
    }
    format!("{v:.prec$}", prec = decimals(a))
}

/// A change as signed percent with one decimal: `+29.8%`, `-40.1%`, `+0.0%`.
pub fn format_change(change: f64) -> String {
    let pct = change * 100.0;
    if pct.abs() >= 999.95 {
        return format!("{}{}%", if pct > 0.0 { "+" } else { "-" }, three_significant(pct.abs()));
    }
    let rounded = (pct * 10.0).round() / 10.0;
    if rounded == 0.0 {
        return "+0.0%".into();
    }
    format!("{rounded:+.1}%")
}

/// An interval of changes: `[+28.1%, +31.6%]`.
pub fn format_interval(low: f64, high: f64) -> String {
    format!("[{}, {}]", format_change(low), format_change(high))
}

/// Mean calls per run: an integer as such, else 3 significant digits (`12.5`, `0.333`).
pub fn format_calls(calls: f64) -> String {
    if calls.fract() == 0.0 && calls.abs() < 1e15 {
        format!("{}", calls as i64)
    } else if calls.abs() < 1.0 {
        format!("{calls:.3}")
    } else {
        three_significant(calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_the_unit_that_shows_them() {
        let cases = [
            (0.0, "0 s"),
            (87e-9, "87.0 ns"),
            (1.5e-9, "1.50 ns"),
            (999.6e-9, "1.00 µs"),
            (512e-6, "512 µs"),
            (0.013, "13.0 ms"),
            (0.0999996, "100 ms"),
            (1.3, "1.30 s"),
            (12.345, "12.3 s"),
            (1234.0, "1.23e+03 s"),
            (-0.0042, "-4.20 ms"),
        ];
        for (s, want) in cases {
            assert_eq!(format_seconds(s), want, "{s}");
        }
    }

    #[test]
    fn changes_in_signed_percent() {
        assert_eq!(format_change(0.2981), "+29.8%");
        assert_eq!(format_change(-0.401), "-40.1%");
        assert_eq!(format_change(-0.00001), "+0.0%");
        assert_eq!(format_change(12.5), "+1.25e+03%");
        assert_eq!(format_interval(0.281, 0.316), "[+28.1%, +31.6%]");
        assert_eq!(format_calls(100.0), "100");
        assert_eq!(format_calls(12.5), "12.5");
        assert_eq!(format_calls(1.0 / 3.0), "0.333");
    }
}
