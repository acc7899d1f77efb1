//! Damaged files must give an error, never a panic or a hang.
use std::path::Path;

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

/// Seeded random byte damage of the reference files: every outcome is Ok or an error naming
/// the file; any Ok run reconstructs or fails with a NestingError, never panics.
#[test]
fn random_damage_never_panics_or_hangs() {
    let seeds: u64 = std::env::var("SP_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e3779b97f4a7c15);
    let per_file: usize = std::env::var("SP_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut seed = seeds;
    let mut rnd = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in ["threads", "async", "single", "pool", "gzip"] {
        let file = if src == "gzip" {
            root.join("tests/data/threads-gzip.h5")
        } else {
            root.join(format!("../datasets/reference/{src}.h5"))
        };
        let bytes = std::fs::read(file).unwrap();
        for k in 0..per_file {
            let mut b = bytes.clone();
            for _ in 0..1 + (rnd() % 8) as usize {
                let at = (rnd() as usize) % b.len();
                b[at] = rnd() as u8;
            }
            let p = dir.path().join(format!("{src}-{k}.h5"));
            std::fs::write(&p, &b).unwrap();
            match read_h5(&p) {
                Ok(run) => {
                    let _ = scope_profiler_analysis::exclusive_by_row(&run, 0);
                    let _ = scope_profiler_analysis::thread_summary(&run, 0);
                }
                Err(H5Error::Schema(_)) => {}
                Err(e) => assert!(e.to_string().contains(&p.display().to_string()), "{e}"),
            }
        }
    }
}
