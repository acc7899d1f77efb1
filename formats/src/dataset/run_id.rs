//! The identity of a run in a dataset: `r` + 16 hex digits, a 64-bit FNV-1a hash of what the
//! run itself recorded: its metadata attributes that single out one recording (`timestamp`,
//! `start_time_ns`, `finalize_time_ns`, `hostname`, `platform`, `label`) and a fingerprint
//! of its calls (per region row with calls: rank, region name, number of calls and the sums
//! of their start and end ns on the monotonic recording clock).
//!
//! Why not the file's path: the same run copied or moved elsewhere, or saved both as `.h5`
//! and as a JSON profile, would enter a dataset twice; two runs named `run.h5` in two
//! directories must not collide either. The recorded identity is stable across copies and
//! formats, and two recordings differ in it: their `start_time_ns` (ns on the host's
//! monotonic clock) and wall `timestamp` (µs) differ, and so do their calls. A file written
//! from part of a run (one rank, some regions) has other calls, hence another identity.
//!
//! The leading `r` keeps the Hive partition value `run=r...` a string in every engine
//! (an all-digit value would be inferred as an integer).
use scope_profiler_analysis::{MetaValue, Run};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Metadata attributes that take part in the identity.
const IDENTITY_KEYS: [&str; 6] = ["timestamp", "start_time_ns", "finalize_time_ns", "hostname", "platform", "label"];

/// 64-bit FNV-1a, fed piece by piece.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(FNV_OFFSET)
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
        self
    }
    fn int(&mut self, v: i64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }
    /// A length-prefixed string (so that `"ab" + "c"` and `"a" + "bc"` differ).
    fn text(&mut self, s: &str) -> &mut Self {
        self.int(s.len() as i64).bytes(s.as_bytes())
    }
}

fn meta_text(v: &MetaValue) -> String {
    match v {
        MetaValue::Int(i) => format!("i{i}"),
        MetaValue::Float(f) => format!("f{f:?}"),
        MetaValue::Str(s) => format!("s{s}"),
        MetaValue::StrList(l) => format!("l{}", l.join("\u{1f}")),
    }
}

/// The run's identity (see the module documentation).
pub fn run_id(run: &Run) -> String {
    let mut h = Fnv::new();
    for key in IDENTITY_KEYS {
        h.text(key);
        match run.meta(key) {
            Some(v) => h.text(&meta_text(v)),
            None => h.text(""),
        };
    }
    // rows combine by a wrapping sum: the fingerprint does not depend on the rows' order
    let (mut rows, mut count) = (0u64, 0i64);
    // rows without calls are left out: a format may not store them
    for r in run.regions.iter().filter(|r| !r.is_empty()) {
        let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("");
        let sum = |a: &arrow_array::Int64Array| a.values().iter().fold(0i64, |s, &v| s.wrapping_add(v));
        let mut one = Fnv::new();
        one.int(r.rank as i64).text(name).int(r.len() as i64).int(sum(&r.start_ns)).int(sum(&r.end_ns));
        rows = rows.wrapping_add(one.0);
        count += 1;
    }
    h.int(count).int(rows as i64);
    format!("r{:016x}", h.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;

    fn run(start: i64, label: &str) -> Run {
        let a = RegionCalls::new(
            0,
            0,
            Int64Array::from(vec![start, start + 10]),
            Int64Array::from(vec![start + 5, start + 20]),
        );
        let b = RegionCalls::new(1, 0, Int64Array::from(vec![start + 1]), Int64Array::from(vec![start + 2]));
        Run {
            region_names: vec!["a".into(), "b".into()],
            regions: vec![a, b],
            metadata: vec![
                ("start_time_ns".into(), MetaValue::Int(start)),
                ("label".into(), MetaValue::Str(label.into())),
            ],
            num_ranks: 1,
            ..Default::default()
        }
    }

    #[test]
    fn identity_follows_the_recording_not_the_row_order() {
        let id = run_id(&run(100, "x"));
        assert!(id.starts_with('r') && id.len() == 17 && id[1..].chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert_eq!(run_id(&run(100, "x")), id);
        let mut swapped = run(100, "x");
        swapped.regions.reverse();
        assert_eq!(run_id(&swapped), id, "row order is not part of the identity");
        assert_ne!(run_id(&run(101, "x")), id, "another start time");
        assert_ne!(run_id(&run(100, "y")), id, "another label");
        let mut part = run(100, "x");
        part.regions.truncate(1);
        assert_ne!(run_id(&part), id, "part of the run's calls");
        let mut later_end = run(100, "x");
        later_end.regions[1] = RegionCalls::new(1, 0, Int64Array::from(vec![101]), Int64Array::from(vec![103]));
        assert_ne!(run_id(&later_end), id, "a call of other times");
    }
}
