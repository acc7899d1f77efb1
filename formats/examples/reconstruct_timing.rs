//! Load a profile and time each analysis step (rank 0): read, reconstruction, lane split,
//! thread summary. `cargo run --release -p scope-profiler-formats --example reconstruct_timing -- FILE [REPEAT]`
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::Path::new(&args[1]);
    let repeat: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    for _ in 0..repeat {
        let t0 = Instant::now();
        let run = scope_profiler_formats::hdf5::read_h5(path).expect("read");
        let t1 = Instant::now();
        let (_rows, calls) = scope_profiler_analysis::rank_call_arrays(&run, 0).expect("reconstruct");
        let t2 = Instant::now();
        let lanes = scope_profiler_analysis::split_by_lane(&calls);
        let t3 = Instant::now();
        let summary = scope_profiler_analysis::thread_summary_from(&run, 0, &calls);
        let t4 = Instant::now();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!(
            "read {:7.1} ms  reconstruct {:7.1} ms  split {:6.1} ms  summary {:6.1} ms  ({} calls, {} lanes, {} threads)",
            ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4), calls.len(), lanes.len(), summary.len()
        );
    }
}
