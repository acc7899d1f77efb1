//! Damaged files must give an error, never a panic or a hang.
use std::path::Path;

use proptest::prelude::*;
use scope_profiler_formats::{read_h5, H5Error};

/// A reference file with bytes flipped so that a global heap (the vlen strings' storage)
/// has an object 0 of size 0: HDF5's own parser loops forever on it.
#[test]
fn global_heap_loop_is_refused() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcol-loop.h5");
    match read_h5(&p) {
        Err(H5Error::Corrupt(m)) => {
            assert!(m.contains("gcol-loop.h5") && m.contains("damaged global heap"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

fn bases() -> &'static [(&'static str, Vec<u8>)] {
    static BASES: std::sync::OnceLock<Vec<(&'static str, Vec<u8>)>> = std::sync::OnceLock::new();
    BASES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        ["threads", "async", "single", "pool", "gzip"]
            .into_iter()
            .map(|src| {
                let file = if src == "gzip" {
                    root.join("tests/data/threads-gzip.h5")
                } else {
                    root.join(format!("../datasets/reference/{src}.h5"))
                };
                (src, std::fs::read(file).unwrap())
            })
            .collect()
    })
}

proptest! {
    // The reader's fuzz target: a proptest-driven mutator of the reference
    // files (and a gzip one). 300 cases by default, SP_FUZZ_CASES=N runs more; a failure
    // shrinks to the fewest damaged bytes.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("SP_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Random byte damage (1 to 8 bytes set anywhere, or the file cut short): every outcome
    /// is Ok or an error naming the file; any Ok run reconstructs (or fails with a
    /// NestingError) and summarises, never panics or hangs.
    #[test]
    fn random_damage_never_panics_or_hangs(
        base in 0usize..5,
        damage in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in prop::option::weighted(0.2, any::<prop::sample::Index>()),
    ) {
        let (src, bytes) = &bases()[base];
        let mut b = bytes.clone();
        for (at, v) in &damage {
            let i = at.index(b.len());
            b[i] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len()));
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(format!("{src}.h5"));
        std::fs::write(&p, &b).unwrap();
        match read_h5(&p) {
            Ok(run) => {
                for rank in 0..run.num_ranks.min(4) {
                    let _ = scope_profiler_analysis::exclusive_by_row(&run, rank);
                    let _ = scope_profiler_analysis::thread_summary(&run, rank);
                }
            }
            Err(H5Error::Schema(_)) => {}
            Err(e) => prop_assert!(e.to_string().contains(&p.display().to_string()), "{}", e),
        }
        match scope_profiler_formats::read_h5_summary(&p) {
            Ok(_) | Err(H5Error::Schema(_)) => {}
            Err(e) => prop_assert!(e.to_string().contains(&p.display().to_string()), "{}", e),
        }
    }
}
