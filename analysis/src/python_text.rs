//! Python's text forms of values, for messages and reports that must read exactly as the
//! reference's (which prints with Python's `repr`, `str` and format specs).

/// Python's `repr()` of a string (used in the reference's error messages; the HDF5 reader
/// and writer in `scope-profiler-formats` use it too).
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr(x)` / `str(x)` of a float: the shortest digits that round-trip,
/// positional for exponents -4..16, else scientific with a two-digit exponent (`1e-05`,
/// `1.5e+16`); `nan`, `inf`, `-inf`; integral values keep `.0`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    let sci = format!("{x:e}"); // shortest round-trip digits: "-1.2345e-7"
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    if (-4..16).contains(&exp) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Python's `format(x, ".{p}g")` (`p` significant digits, trailing zeros removed;
/// scientific when the exponent is < -4 or >= `p`).
pub fn py_format_g(x: f64, p: usize) -> String {
    if !x.is_finite() {
        return py_float_repr(x);
    }
    let p = p.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_prints_them() {
        for (x, s) in [
            (0.1, "0.1"),
            (1e-05, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e-07, "1.5e-07"),
            (3.0, "3.0"),
            (123456789.0, "123456789.0"),
            (1e16, "1e+16"),
            (1.2345678901234567e-3, "0.0012345678901234567"),
            (-2.5e-9, "-2.5e-09"),
            (0.0, "0.0"),
        ] {
            assert_eq!(py_float_repr(x), s, "{x}");
        }
        for (x, s) in [
            (0.000123456789, "0.000123457"),
            (1e-05, "1e-05"),
            (1234567.0, "1.23457e+06"),
            (0.5, "0.5"),
            (100.0, "100"),
            (0.0, "0"),
            (2.0e-9, "2e-09"),
        ] {
            assert_eq!(py_format_g(x, 6), s, "{x}");
        }
    }
}
