//! `analysis::numpy_reductions` against numpy 2.4.6: every function, every case, bit for bit.
//! Vectors: `analysis/tests/data/numpy_reductions.json`, written by `numpy_reductions_vectors.py` (same
//! directory), which also documents the LCG and the distributions reproduced here.
use scope_profiler_analysis::numpy_reductions::{
    mean_f64, mean_i64, percentile_f64, percentile_i64, pooled_std, std_f64, std_i64, stored_std, sum_f64,
    sum_i64_as_f64, var_f64, var_i64,
};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/numpy_reductions.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read numpy_reductions.json"))
        .expect("parse numpy_reductions.json")
}

fn from_hex(v: &Value) -> f64 {
    f64::from_bits(u64::from_str_radix(v.as_str().expect("hex string"), 16).expect("hex bits"))
}

/// The generator's LCG: state = state * mul + inc (mod 2^64), draw = state >> shift.
struct Lcg {
    state: u64,
    mul: u64,
    inc: u64,
    shift: u32,
}

impl Iterator for Lcg {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.state = self.state.wrapping_mul(self.mul).wrapping_add(self.inc);
        Some(self.state >> self.shift)
    }
}

/// `draw` of numpy_reductions_vectors.py.
fn draw(dist: &str, u: u64) -> i64 {
    let u = u as i64; // 53-bit draws: no sign change
    match dist {
        "small" => u % 1000,
        "dur" => 1_000 + u % 50_000_000,
        "huge" => 1_000_000_000_000_000 + u % 1_000_000_000_000,
        "wide" => u % (1 << 53),
        "mixed" if u % 5 == 0 => 1_000_000_000_000_000 + u % 1_000_000_000,
        "mixed" => u % 10_000,
        "neg" => u % 2_000_000_000_000 - 1_000_000_000_000,
        "const" => 987_654_321,
        "giant" => (1 << 62) + u,
        other => panic!("unknown distribution {other}"),
    }
}

/// Bit equality, except that any NaN matches any NaN (numpy's 0/0 NaN sign is not an API).
fn check(failures: &mut Vec<String>, what: String, got: f64, want: f64) {
    let same = got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan());
    if !same {
        failures.push(format!(
            "{what}: got {got:e} ({:016x}), numpy {want:e} ({:016x})",
            got.to_bits(),
            want.to_bits()
        ));
    }
}

#[test]
fn matches_numpy_bit_for_bit() {
    let doc = vectors();
    let lcg = &doc["lcg"];
    let (mul, inc) = (lcg["mul"].as_u64().unwrap(), lcg["inc"].as_u64().unwrap());
    let shift = lcg["shift"].as_u64().unwrap() as u32;
    let percents: Vec<f64> = doc["percents"].as_array().unwrap().iter().map(from_hex).collect();
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for case in doc["cases"].as_array().unwrap() {
        let dist = case["dist"].as_str().unwrap();
        let n = case["n"].as_u64().unwrap() as usize;
        let seed = case["seed"].as_u64().unwrap();
        let ints: Vec<i64> = Lcg { state: seed, mul, inc, shift }.take(n).map(|u| draw(dist, u)).collect();
        let floats: Vec<f64> = ints.iter().map(|&x| x as f64 / 1e9).collect();
        let tag = |kind: &str, stat: &str| format!("{dist} n={n} {kind} {stat}");

        let want = &case["i64"];
        check(&mut failures, tag("i64", "sum"), sum_i64_as_f64(&ints), from_hex(&want["sum"]));
        check(&mut failures, tag("i64", "mean"), mean_i64(&ints), from_hex(&want["mean"]));
        check(&mut failures, tag("i64", "var"), var_i64(&ints), from_hex(&want["var"]));
        check(&mut failures, tag("i64", "std"), std_i64(&ints), from_hex(&want["std"]));
        let want = &case["f64"];
        check(&mut failures, tag("f64", "sum"), sum_f64(&floats), from_hex(&want["sum"]));
        check(&mut failures, tag("f64", "mean"), mean_f64(&floats), from_hex(&want["mean"]));
        check(&mut failures, tag("f64", "var"), var_f64(&floats), from_hex(&want["var"]));
        check(&mut failures, tag("f64", "std"), std_f64(&floats), from_hex(&want["std"]));
        for (kind, want) in [("i64", &case["i64"]["pct"]), ("f64", &case["f64"]["pct"])] {
            for (&q, w) in percents.iter().zip(want.as_array().unwrap()) {
                // numpy raises on an empty array (null in the file); ours is NaN.
                let w = if w.is_null() { f64::NAN } else { from_hex(w) };
                let got = if kind == "i64" { percentile_i64(&ints, q) } else { percentile_f64(&floats, q) };
                check(&mut failures, tag(kind, &format!("percentile {q}")), got, w);
            }
        }
        checked += 1;
    }
    assert!(checked > 200, "only {checked} cases");
    assert!(failures.is_empty(), "{} mismatches with numpy:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn stored_and_pooled_std_match_python() {
    let doc = vectors();
    let mut failures = Vec::new();
    for (g, case) in doc["pooled"].as_array().unwrap().iter().enumerate() {
        let rows: Vec<(i64, f64, f64)> = case["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r[0].as_i64().unwrap(), from_hex(&r[1]), from_hex(&r[2])))
            .collect();
        // The caller's part: `/ NS_PER_SECOND` after the ns result.
        check(&mut failures, format!("group {g} pooled"), pooled_std(&rows) / 1e9, from_hex(&case["pooled"]));
        for (i, (&(count, _, m2), want)) in rows.iter().zip(case["stored"].as_array().unwrap()).enumerate() {
            check(&mut failures, format!("group {g} row {i} stored"), stored_std(count, m2) / 1e9, from_hex(want));
        }
    }
    assert!(failures.is_empty(), "{} mismatches with Python:\n{}", failures.len(), failures.join("\n"));
}

/// The cast buffer matters: summing the int64 array in one pairwise pass (no 8192 buffers)
/// differs from numpy on large arrays, so the vectors can tell a wrong buffer size apart.
#[test]
fn vectors_distinguish_buffer_size() {
    let doc = vectors();
    let lcg = &doc["lcg"];
    let (mul, inc) = (lcg["mul"].as_u64().unwrap(), lcg["inc"].as_u64().unwrap());
    let shift = lcg["shift"].as_u64().unwrap() as u32;
    let mut distinguished = 0;
    for case in doc["cases"].as_array().unwrap() {
        let n = case["n"].as_u64().unwrap() as usize;
        if n < 100_000 {
            continue;
        }
        let dist = case["dist"].as_str().unwrap();
        let seed = case["seed"].as_u64().unwrap();
        let ints: Vec<i64> = Lcg { state: seed, mul, inc, shift }.take(n).map(|u| draw(dist, u)).collect();
        let as_f: Vec<f64> = ints.iter().map(|&x| x as f64).collect();
        if sum_f64(&as_f).to_bits() != from_hex(&case["i64"]["sum"]).to_bits() {
            distinguished += 1;
        }
    }
    assert!(distinguished > 0, "no large case separates buffered from unbuffered summation");
}
