//! Time each step of `finalize()` after N recorded calls (4 nested regions, one tracked
//! thread, as `benches/bench_recording.py --what finalize`): snapshot -> Run, call ids
//! (with the columns that do not need them encoded meanwhile, as `finalize()` does), the
//! rest of the HDF5 write, with the minor page faults taken meanwhile. The first repeat is the
//! one `finalize()` sees (a process finalizes once: every page it writes is fresh); later
//! ones reuse memory the allocator kept and run faster.
//! `cargo run --release -p scope-profiler-finalize --example finalize_timing -- [CALLS] [REPEAT]`
use std::time::Instant;

use scope_profiler_analysis::number_rank;
use scope_profiler_finalize::{run_from_snapshot, Snapshot};
use scope_profiler_formats::hdf5::write::{encode_ahead, publish_h5_ahead};
use scope_profiler_recorder::{Recorder, RegionTable, ThreadInfo};

/// Minor page faults and CPU ns (user + system, all threads) of this process so far.
fn usage() -> (i64, i64) {
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let ns = |t: libc::timeval| t.tv_sec * 1_000_000_000 + t.tv_usec * 1000;
    (u.ru_minflt, ns(u.ru_utime) + ns(u.ru_stime))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let repeat: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().expect("temp dir");
    for _ in 0..repeat {
        let rec = Recorder::new(1 << 30, true);
        let table = RegionTable::new();
        let ids: Vec<u32> =
            ["outer", "middle", "inner", "leaf"].iter().map(|n| table.get_or_create(n, vec![]).0).collect();
        let (st, _) =
            rec.register_current_thread(ThreadInfo { ident: 1, native_id: 1, name: "Main".into(), daemon: false });
        for _ in 0..calls / 4 {
            for &r in &ids {
                st.enter(r, false);
            }
            for &r in ids.iter().rev() {
                st.exit(r);
            }
        }
        let path = dir.path().join("t.h5");
        let u0 = usage();
        let t0 = Instant::now();
        // SAFETY: this thread is the only one recording.
        let snap = unsafe { Snapshot::take(&rec, table.len(), 0) };
        let t1 = Instant::now();
        let u1 = usage();
        let mut run = run_from_snapshot(snap, &table.lock(), vec![]).expect("snapshot");
        let t2 = Instant::now();
        let (numbering, ahead) = scope_profiler_analysis::pool::install(|| {
            rayon::join(|| number_rank(&run, 0, 0).expect("call ids"), || encode_ahead(&run))
        });
        numbering.apply(&mut run);
        let t3 = Instant::now();
        let u3 = usage();
        publish_h5_ahead(&run, &path, &ahead).expect("write");
        let t4 = Instant::now();
        let u4 = usage();
        let ns = |a: Instant, b: Instant| (b - a).as_nanos() as f64 / calls as f64;
        println!(
            "ns/call: snapshot {:5.1}  run {:5.1}  call ids + ahead {:5.1}  write {:5.1}  total {:5.1}  ({:.3} bytes/call on disk)\n  minor faults {} + {} + {}, CPU ns/call {:.1} + {:.1} + {:.1}",
            ns(t0, t1),
            ns(t1, t2),
            ns(t2, t3),
            ns(t3, t4),
            ns(t0, t4),
            std::fs::metadata(&path).map(|m| m.len() as f64 / calls as f64).unwrap_or(0.0),
            u1.0 - u0.0,
            u3.0 - u1.0,
            u4.0 - u3.0,
            (u1.1 - u0.1) as f64 / calls as f64,
            (u3.1 - u1.1) as f64 / calls as f64,
            (u4.1 - u3.1) as f64 / calls as f64,
        );
    }
}
