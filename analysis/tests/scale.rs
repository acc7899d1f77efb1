//! Scale check (ignored by default; run with `--ignored --nocapture`): 20M calls on 100k lanes.
use scope_profiler_analysis::{build_call_arrays, split_by_lane, RegionInput};

#[test]
#[ignore]
fn twenty_million_calls_hundred_thousand_lanes() {
    let n_lanes = 100_000i64;
    let per_lane = 200i64; // 20M calls
    let mut s = Vec::with_capacity((n_lanes * per_lane) as usize);
    let mut e = Vec::with_capacity(s.capacity());
    let mut th = Vec::with_capacity(s.capacity());
    let mut tk = Vec::with_capacity(s.capacity());
    // each lane: 50 roots of [t, t+100] each with 3 nested children, lanes interleaved in time
    for l in 0..n_lanes {
        let base = (l * 37) % 100_000;
        for k in 0..per_lane / 4 {
            let t = base + k * 1000;
            for (a, b) in [(t, t + 100), (t + 10, t + 90), (t + 20, t + 80), (t + 30, t + 70)] {
                s.push(a);
                e.push(b);
                th.push(l % 8);
                tk.push(if l < 8 { -1 } else { l });
            }
        }
    }
    let t0 = std::time::Instant::now();
    let c = build_call_arrays(&[RegionInput {
        name: "x",
        start_ns: &s,
        end_ns: &e,
        thread_ids: Some(&th),
        task_ids: Some(&tk),
    }])
    .unwrap();
    let t1 = t0.elapsed();
    let lanes = split_by_lane(&c);
    let t2 = t0.elapsed();
    println!("{} calls, {} lanes: build {:?}, split {:?}", c.len(), lanes.len(), t1, t2 - t1);
    drop(lanes);
    drop(c);
    // again, with the allocator's pages already touched
    let t0 = std::time::Instant::now();
    let c = build_call_arrays(&[RegionInput {
        name: "x",
        start_ns: &s,
        end_ns: &e,
        thread_ids: Some(&th),
        task_ids: Some(&tk),
    }])
    .unwrap();
    println!("second build {:?}", t0.elapsed());
    assert_eq!(c.max_depth(), Some(3));
}

#[test]
#[ignore]
fn sort_cost_alone() {
    use rayon::slice::ParallelSliceMut;
    let n = 20_000_000usize;
    let mut keys: Vec<(i64, i64, u64)> = (0..n as u64)
        .map(|i| {
            let l = (i / 200) as i64;
            let k = (i % 200) as i64;
            let t = (l * 37) % 100_000 + (k / 4) * 1000;
            (t + (k % 4) * 10, !(t + 100 - (k % 4) * 10), i)
        })
        .collect();
    let t0 = std::time::Instant::now();
    keys.par_sort_unstable();
    println!("par sort {:?}", t0.elapsed());
}
