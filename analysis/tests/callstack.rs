//! Call-stack reconstruction: the boundary cases of `spec-callstack.md` §3 and property
//! tests against a brute-force O(n²) transcription of the reference algorithm.
use proptest::prelude::*;
use scope_profiler_analysis::{build_call_arrays, lane_id, split_by_lane, CallArrays, RegionInput};

fn region<'a>(name: &'a str, s: &'a [i64], e: &'a [i64]) -> RegionInput<'a> {
    RegionInput { name, start_ns: s, end_ns: e, thread_ids: None, task_ids: None }
}

fn on_thread<'a>(name: &'a str, s: &'a [i64], e: &'a [i64], t: &'a [i64]) -> RegionInput<'a> {
    RegionInput { name, start_ns: s, end_ns: e, thread_ids: Some(t), task_ids: None }
}

const TAIL: &str =
    "Regions must nest completely or not overlap at all - check for a missing or misordered sp_end / __exit__.";

#[test]
fn child_sharing_start() {
    let c = build_call_arrays(&[region("a", &[0], &[10]), region("b", &[0], &[5])]).unwrap();
    assert_eq!(c.region_index, vec![0, 1]);
    assert_eq!(c.parent, vec![-1, 0]);
    assert_eq!(c.depth, vec![0, 1]);
    assert_eq!(c.exclusive_ns, vec![5, 5]);
    assert!(c.lane.is_empty());
}

#[test]
fn identical_intervals_input_order_decides() {
    let c = build_call_arrays(&[region("a", &[0], &[10]), region("b", &[0], &[10])]).unwrap();
    assert_eq!(c.region_index, vec![0, 1]);
    assert_eq!(c.parent, vec![-1, 0]);
    assert_eq!(c.exclusive_ns, vec![0, 10]);
    // and the other way round
    let c = build_call_arrays(&[region("b", &[0], &[10]), region("a", &[0], &[10])]).unwrap();
    assert_eq!(c.region_index, vec![0, 1]);
    assert_eq!(c.parent, vec![-1, 0]);
}

#[test]
fn adjacent_are_siblings() {
    let c = build_call_arrays(&[region("a", &[0, 10], &[10, 20])]).unwrap();
    assert_eq!(c.parent, vec![-1, -1]);
    assert_eq!(c.depth, vec![0, 0]);
    assert_eq!(c.exclusive_ns, vec![10, 10]);
}

#[test]
fn zero_length_inside_is_child() {
    let c = build_call_arrays(&[region("a", &[0], &[10]), region("z", &[4], &[4])]).unwrap();
    assert_eq!(c.parent, vec![-1, 0]);
    assert_eq!(c.exclusive_ns, vec![10, 0]);
}

#[test]
fn zero_length_at_parent_start_is_child() {
    let c = build_call_arrays(&[region("z", &[5], &[5]), region("a", &[5], &[10])]).unwrap();
    // sorted: a [5,10] (end desc) then z [5,5]
    assert_eq!(c.region_index, vec![1, 0]);
    assert_eq!(c.parent, vec![-1, 0]);
    assert_eq!(c.depth, vec![0, 1]);
}

#[test]
fn zero_length_at_parent_end_is_sibling() {
    let c = build_call_arrays(&[region("a", &[0], &[10]), region("z", &[10], &[10])]).unwrap();
    assert_eq!(c.parent, vec![-1, -1]);
}

#[test]
fn two_zero_length_nest() {
    let c = build_call_arrays(&[region("z", &[5, 5], &[5, 5])]).unwrap();
    assert_eq!(c.call_index, vec![0, 1]);
    assert_eq!(c.parent, vec![-1, 0]);
    assert_eq!(c.depth, vec![0, 1]);
}

#[test]
fn overlap_is_an_error_child_first() {
    let e = build_call_arrays(&[region("A", &[0], &[10]), region("B", &[5], &[15])]).unwrap_err();
    assert_eq!(
        e.0,
        format!(
            "recorded calls are not properly nested: 'B' call 0 [5, 15] ns starts inside 'A' call 0 [0, 10] ns but ends after it. {TAIL}"
        )
    );
}

#[test]
fn quote_in_name_uses_python_repr() {
    let e = build_call_arrays(&[region("it's", &[0], &[10]), region("B", &[5], &[15])]).unwrap_err();
    assert!(e.0.contains("starts inside \"it's\" call 0 [0, 10] ns"), "{}", e.0);
}

#[test]
fn end_before_start_is_an_error() {
    let e = build_call_arrays(&[region("a", &[0, 10], &[5, 9])]).unwrap_err();
    assert_eq!(e.0, "a recorded call ends before it starts");
}

#[test]
fn mismatched_lengths_are_an_error_not_a_panic() {
    assert!(build_call_arrays(&[region("a", &[0, 10], &[5])]).is_err());
}

#[test]
fn same_intervals_on_two_lanes_are_two_roots() {
    let c = build_call_arrays(&[on_thread("a", &[0, 5], &[10, 15], &[0, 1])]).unwrap();
    assert_eq!(c.parent, vec![-1, -1]);
    assert_eq!(c.lane, vec![-2, -3]);
    let c = build_call_arrays(&[on_thread("a", &[0, 0], &[10, 10], &[0, 1])]).unwrap();
    assert_eq!(c.parent, vec![-1, -1]);
}

#[test]
fn region_without_thread_column_is_lane_minus_one() {
    let c = build_call_arrays(&[on_thread("a", &[0], &[10], &[0]), region("n", &[2], &[3])]).unwrap();
    assert_eq!(c.lane, vec![-2, -1]);
    assert_eq!(c.parent, vec![-1, -1]);
}

#[test]
fn empty_input() {
    let c = build_call_arrays(&[]).unwrap();
    assert!(c.is_empty() && c.lane.is_empty());
    let c = build_call_arrays(&[region("a", &[], &[])]).unwrap();
    assert!(c.is_empty());
    assert!(split_by_lane(&c).is_empty());
}

#[test]
fn lane_ids_examples() {
    let threads = [0, 1, 2, -1];
    let lanes: Vec<i64> = threads.iter().map(|&t| lane_id(t, -1)).collect();
    assert_eq!(lanes, vec![-2, -3, -4, -1]);
    let tasks = [-1, 7, -1, 0];
    let lanes: Vec<i64> = threads.iter().zip(tasks).map(|(&t, k)| lane_id(t, k)).collect();
    assert_eq!(lanes, vec![-2, 7, -4, 0]);
}

#[test]
fn split_by_lane_ascending() {
    let tasks = [-1, 3, -1, 0, -1];
    let c = build_call_arrays(&[RegionInput {
        name: "a",
        start_ns: &[0, 1, 2, 3, 4],
        end_ns: &[1, 2, 3, 4, 5],
        thread_ids: Some(&[0, 0, 2, 0, -1]),
        task_ids: Some(&tasks),
    }])
    .unwrap();
    let split = split_by_lane(&c);
    let lanes: Vec<i64> = split.iter().map(|(l, _)| l).collect();
    assert_eq!(lanes, vec![-4, -2, -1, 0, 3]);
    assert_eq!(split.get(1).1, &[0]);
    assert_eq!(split.get(0).1, &[2]);
    let untracked = build_call_arrays(&[region("a", &[0, 1], &[1, 2])]).unwrap();
    assert_eq!(pairs(&split_by_lane(&untracked)), vec![(-1, vec![0, 1])]);
}

#[test]
fn sparse_lane_values() {
    // task ids far apart: the sparse lane map
    let c = build_call_arrays(&[RegionInput {
        name: "a",
        start_ns: &[0, 1, 2],
        end_ns: &[10, 5, 3],
        thread_ids: Some(&[0, 0, 0]),
        task_ids: Some(&[i32::MAX as i64 - 1, -1, i32::MAX as i64 - 1]),
    }])
    .unwrap();
    assert_eq!(c.parent, vec![-1, -1, 0]);
    let split = split_by_lane(&c);
    assert_eq!(pairs(&split), vec![(-2, vec![1]), (i32::MAX as i64 - 1, vec![0, 2])]);
}

#[test]
fn lane_ids_beyond_i32_are_an_error_not_wrapped() {
    let got = build_call_arrays(&[RegionInput {
        name: "a",
        start_ns: &[0, 1],
        end_ns: &[10, 5],
        thread_ids: Some(&[0, 0]),
        task_ids: Some(&[i32::MAX as i64 + 1, -1]),
    }]);
    let err = got.unwrap_err().0;
    assert!(err.contains("thread or task ids beyond 2147483647"), "{err}");
}

/// `(lane, call ids)` pairs of a split.
fn pairs(split: &scope_profiler_analysis::LaneSplit) -> Vec<(i64, Vec<u32>)> {
    split.iter().map(|(l, ids)| (l, ids.to_vec())).collect()
}

#[test]
fn extreme_timestamps_do_not_overflow() {
    let m = i64::MAX;
    let c = build_call_arrays(&[region("a", &[0, m - 1, m], &[m, m, m])]).unwrap();
    assert_eq!(c.parent, vec![-1, 0, -1]);
    let c = build_call_arrays(&[region("a", &[i64::MIN, i64::MIN], &[-1, i64::MIN])]).unwrap();
    assert_eq!(c.parent, vec![-1, 0]);
}

// ---------------------------------------------------------------------------------------
// Brute-force oracle: the reference algorithm transcribed literally (O(n²)).

struct Oracle {
    order: Vec<usize>, // sorted position -> global input position
    parent: Vec<i64>,
    depth: Vec<i64>,
    exclusive: Vec<i64>,
    lane: Vec<i64>,
}

fn oracle(regions: &[RegionInput<'_>]) -> Result<Oracle, String> {
    let mut s = Vec::new();
    let mut e = Vec::new();
    let mut rc = Vec::new();
    let mut lane = Vec::new();
    let has_lanes = regions.iter().any(|r| r.thread_ids.is_some());
    for (ri, r) in regions.iter().enumerate() {
        for ci in 0..r.start_ns.len() {
            s.push(r.start_ns[ci]);
            e.push(r.end_ns[ci]);
            rc.push((ri, ci));
            lane.push(match r.thread_ids {
                None => -1,
                Some(t) => lane_id(t[ci], r.task_ids.map_or(-1, |k| k[ci])),
            });
        }
    }
    if s.iter().zip(&e).any(|(a, b)| b < a) {
        return Err("a recorded call ends before it starts".into());
    }
    let n = s.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| s[a].cmp(&s[b]).then(e[b].cmp(&e[a]))); // stable
    let ss: Vec<i128> = order.iter().map(|&i| 2 * s[i] as i128).collect();
    let se: Vec<i128> = order.iter().map(|&i| 2 * e[i] as i128 + if s[i] == e[i] { 1 } else { 0 }).collect();
    let lane_sorted: Vec<i64> = if has_lanes { order.iter().map(|&i| lane[i]).collect() } else { vec![-1; n] };
    let mut depth = vec![0i64; n];
    let mut parent = vec![-1i64; n];
    let mut lanes: Vec<i64> = lane_sorted.clone();
    lanes.sort();
    lanes.dedup();
    for l in lanes {
        let pos: Vec<usize> = (0..n).filter(|&i| lane_sorted[i] == l).collect();
        for (k, &i) in pos.iter().enumerate() {
            let closed = pos.iter().filter(|&&j| se[j] <= ss[i]).count() as i64;
            depth[i] = k as i64 - closed;
            assert!(depth[i] >= 0);
        }
        for (k, &i) in pos.iter().enumerate() {
            if depth[i] > 0 {
                parent[i] = pos[..k].iter().rev().find(|&&j| depth[j] == depth[i] - 1).map_or(-1, |&j| j as i64);
            }
        }
    }
    let es: Vec<i64> = order.iter().map(|&i| e[i]).collect();
    for i in 0..n {
        if parent[i] >= 0 && es[parent[i] as usize] < es[i] {
            let label = |x: usize| {
                let (ri, ci) = rc[order[x]];
                format!("'{}' call {} [{}, {}] ns", regions[ri].name, ci, s[order[x]], e[order[x]])
            };
            return Err(format!(
                "recorded calls are not properly nested: {} starts inside {} but ends after it. {TAIL}",
                label(i),
                label(parent[i] as usize)
            ));
        }
    }
    let mut exclusive: Vec<i64> = order.iter().map(|&i| e[i] - s[i]).collect();
    for i in 0..n {
        if parent[i] >= 0 {
            exclusive[parent[i] as usize] -= e[order[i]] - s[order[i]];
        }
    }
    Ok(Oracle { order, parent, depth, exclusive, lane: if has_lanes { lane_sorted } else { vec![] } })
}

/// Whether two calls on one lane overlap without nesting (strict crossing).
fn crossing_exists(calls: &[(i64, i64, i64)]) -> bool {
    for a in calls {
        for b in calls {
            if a.2 == b.2 && a.0 < b.0 && b.0 < a.1 && a.1 < b.1 {
                return true;
            }
        }
    }
    false
}

/// A region as owned columns: (name, starts, ends, thread ids).
type OwnedRegion = (String, Vec<i64>, Vec<i64>, Vec<i64>);

/// (start, end, thread, region) per call, grouped into regions named r0, r1, ...
fn to_regions(calls: &[(i64, i64, i64, usize)], nregions: usize) -> Vec<OwnedRegion> {
    let mut out: Vec<OwnedRegion> = (0..nregions).map(|r| (format!("r{r}"), vec![], vec![], vec![])).collect();
    for &(s, e, t, r) in calls {
        out[r].1.push(s);
        out[r].2.push(e);
        out[r].3.push(t);
    }
    out
}

fn inputs(owned: &[OwnedRegion], lanes: bool) -> Vec<RegionInput<'_>> {
    owned
        .iter()
        .map(|(n, s, e, t)| RegionInput {
            name: n,
            start_ns: s,
            end_ns: e,
            thread_ids: if lanes { Some(t) } else { None },
            task_ids: None,
        })
        .collect()
}

fn check_against_oracle(inp: &[RegionInput<'_>], got: &Result<CallArrays, scope_profiler_analysis::NestingError>) {
    let want = oracle(inp);
    match (got, want) {
        (Ok(c), Ok(o)) => {
            let mut offsets = vec![0usize];
            for r in inp {
                offsets.push(offsets.last().unwrap() + r.start_ns.len());
            }
            let pos: Vec<usize> =
                (0..c.len()).map(|i| offsets[c.region_index[i] as usize] + c.call_index[i] as usize).collect();
            assert_eq!(pos, o.order);
            let wide = |v: &[i32]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
            assert_eq!(wide(&c.parent), o.parent);
            assert_eq!(wide(&c.depth), o.depth);
            assert_eq!(c.exclusive_ns, o.exclusive);
            assert_eq!(wide(&c.lane), o.lane);
        }
        (Err(g), Err(w)) => assert_eq!(g.0, w),
        (g, w) => panic!("mismatch: got {:?}, oracle {:?}", g.as_ref().map(|c| c.parent.clone()), w.map(|o| o.parent)),
    }
}

/// A properly nested call sequence on one lane: a random bracket walk with non-decreasing
/// times (equal times give zero-length and adjacent calls).
fn nested_lane(ops: &[(bool, u8)], base: i64) -> Vec<(i64, i64)> {
    let mut t = base;
    let mut stack: Vec<i64> = Vec::new();
    let mut out = Vec::new();
    for &(open, dt) in ops {
        t += (dt % 4) as i64; // 0 allowed
        if open || stack.is_empty() {
            stack.push(t);
        } else {
            let s = stack.pop().unwrap();
            out.push((s, t));
        }
    }
    while let Some(s) = stack.pop() {
        t += 1;
        out.push((s, t));
    }
    out
}

proptest! {
    // 400 cases by default; PROPTEST_CASES=N runs more
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        ..ProptestConfig::default()
    })]

    /// Random small intervals (often crossing) on up to 3 lanes: same result as the oracle,
    /// and an error exactly when two calls of one lane cross.
    #[test]
    fn random_intervals_match_oracle(
        raw in prop::collection::vec((0i64..25, 0i64..8, 0i64..3, 0usize..4), 0..24),
        lanes in any::<bool>(),
    ) {
        let calls: Vec<(i64, i64, i64, usize)> = raw.iter().map(|&(s, d, t, r)| (s, s + d, t, r)).collect();
        let owned = to_regions(&calls, 4);
        let inp = inputs(&owned, lanes);
        let got = build_call_arrays(&inp);
        check_against_oracle(&inp, &got);
        let lane_of = |t: i64| if lanes { t } else { 0 };
        let flat: Vec<(i64, i64, i64)> = calls.iter().map(|&(s, e, t, _)| (s, e, lane_of(t))).collect();
        prop_assert_eq!(got.is_err(), crossing_exists(&flat));
    }

    /// Properly nested sets on several lanes, interleaved in time and shuffled across
    /// regions: reconstruction succeeds, every child lies inside its parent on its lane,
    /// and Σ exclusive = Σ inclusive − Σ children (= Σ root durations per lane).
    #[test]
    fn nested_sets_reconstruct(
        lane_ops in prop::collection::vec(prop::collection::vec((any::<bool>(), any::<u8>()), 0..30), 1..5),
        assign in prop::collection::vec(0usize..5, 200),
    ) {
        let mut calls = Vec::new();
        for (lane, ops) in lane_ops.iter().enumerate() {
            for (k, (s, e)) in nested_lane(ops, (lane as i64) * 3).into_iter().enumerate() {
                calls.push((s, e, lane as i64, assign[(k * 7 + lane) % assign.len()]));
            }
        }
        let owned = to_regions(&calls, 5);
        let inp = inputs(&owned, true);
        let got = build_call_arrays(&inp);
        check_against_oracle(&inp, &got);
        let c = got.unwrap();
        prop_assert_eq!(c.len(), calls.len());
        let mut root_total = 0i64;
        let mut children_total = 0i64;
        for i in 0..c.len() {
            let p = c.parent[i];
            if p >= 0 {
                let p = p as usize;
                prop_assert!(p < i);
                prop_assert_eq!(c.lane[p], c.lane[i]);
                prop_assert!(c.start_ns[p] <= c.start_ns[i] && c.end_ns[i] <= c.end_ns[p]);
                prop_assert_eq!(c.depth[i], c.depth[p] + 1);
                children_total += c.end_ns[i] - c.start_ns[i];
            } else {
                prop_assert_eq!(c.depth[i], 0);
                root_total += c.end_ns[i] - c.start_ns[i];
            }
            prop_assert!(c.exclusive_ns[i] >= 0);
        }
        let inclusive: i64 = c.start_ns.iter().zip(&c.end_ns).map(|(s, e)| e - s).sum();
        let exclusive: i64 = c.exclusive_ns.iter().sum();
        prop_assert_eq!(exclusive, inclusive - children_total);
        prop_assert_eq!(exclusive, root_total);
        // split_by_lane: partitions the ids, ascending lanes, ids ascending
        let split = split_by_lane(&c);
        let mut seen = 0;
        for w in split.lanes.windows(2) { prop_assert!(w[0] < w[1]); }
        for (lane, ids) in split.iter() {
            for w in ids.windows(2) { prop_assert!(w[0] < w[1]); }
            for &i in ids { prop_assert_eq!(c.lane_of(i as usize), lane); }
            seen += ids.len();
        }
        prop_assert_eq!(seen, c.len());
    }
}

#[test]
fn scales_linearly_with_many_lanes() {
    // 200k lanes of 5 calls each: the walk must not be O(lanes × calls).
    let lanes = 200_000i64;
    let mut s = Vec::new();
    let mut e = Vec::new();
    let mut t = Vec::new();
    let mut k = Vec::new();
    for l in 0..lanes {
        let base = l % 1000;
        for j in 0..5 {
            s.push(base + j);
            e.push(base + 10 - j);
            t.push(0);
            k.push(l);
        }
    }
    let started = std::time::Instant::now();
    let c = build_call_arrays(&[RegionInput {
        name: "x",
        start_ns: &s,
        end_ns: &e,
        thread_ids: Some(&t),
        task_ids: Some(&k),
    }])
    .unwrap();
    let split = split_by_lane(&c);
    assert_eq!(split.len(), lanes as usize);
    assert_eq!(c.max_depth(), Some(4));
    assert!(started.elapsed().as_secs_f64() < 5.0, "took {:?}", started.elapsed());
}

/// A straightforward O(n log n) reconstruction (stable sort, one `Vec` stack per lane),
/// independent of the library's bucket sort and linked-list walk; the O(n²) oracle above
/// vouches for it on small inputs (`simple_matches_oracle`). Returns, per call in sorted
/// order: (global input position, parent, depth, exclusive, lane).
fn simple(regions: &[RegionInput<'_>]) -> Vec<(usize, i64, i64, i64, i64)> {
    let mut calls = Vec::new(); // (start, end, lane)
    for r in regions {
        for c in 0..r.start_ns.len() {
            let lane = match r.thread_ids {
                None => -1,
                Some(t) => lane_id(t[c], r.task_ids.map_or(-1, |k| k[c])),
            };
            calls.push((r.start_ns[c], r.end_ns[c], lane));
        }
    }
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by(|&a, &b| calls[a].0.cmp(&calls[b].0).then(calls[b].1.cmp(&calls[a].1)));
    let mut stacks: std::collections::HashMap<i64, Vec<usize>> = Default::default();
    let mut out: Vec<(usize, i64, i64, i64, i64)> = Vec::with_capacity(calls.len());
    for (k, &i) in order.iter().enumerate() {
        let (s, e, lane) = calls[i];
        let stack = stacks.entry(lane).or_default();
        while let Some(&t) = stack.last() {
            let (ts, te, _) = calls[order[t]]; // t: a sorted position
            if te < s || (te == s && ts != te) {
                stack.pop();
            } else {
                break;
            }
        }
        let parent = stack.last().map_or(-1, |&t| t as i64);
        out.push((
            i,
            parent,
            stack.len() as i64,
            e - s,
            if regions.iter().any(|r| r.thread_ids.is_some()) { lane } else { 0 },
        ));
        if parent >= 0 {
            out[parent as usize].3 -= e - s;
        }
        stack.push(k);
    }
    out
}

fn check_against_simple(inp: &[RegionInput<'_>]) {
    let c = build_call_arrays(inp).unwrap();
    let want = simple(inp);
    let mut offsets = vec![0usize];
    for r in inp {
        offsets.push(offsets.last().unwrap() + r.start_ns.len());
    }
    assert_eq!(c.len(), want.len());
    for (k, w) in want.iter().enumerate() {
        let pos = offsets[c.region_index[k] as usize] + c.call_index[k] as usize;
        assert_eq!(pos, w.0, "call {k}: input position");
        assert_eq!(c.parent[k] as i64, w.1, "call {k}: parent");
        assert_eq!(c.depth[k] as i64, w.2, "call {k}: depth");
        assert_eq!(c.exclusive_ns[k], w.3, "call {k}: exclusive");
        if !c.lane.is_empty() {
            assert_eq!(c.lane[k] as i64, w.4, "call {k}: lane");
        }
    }
}

/// Deterministic pseudo-random numbers (LCG).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

/// Nested calls on `threads` threads: every thread runs `iterations` of a random nest of
/// up to 4 levels (with zero-length calls, calls sharing start or end with their parent, and
/// identical intervals in different regions); `regions` regions; calls in recorded order
/// (per region grouped by thread, each thread in entry order) or shuffled.
fn recorded(
    threads: i64,
    iterations: i64,
    regions: usize,
    shuffle: bool,
    seed: u64,
) -> Vec<(Vec<i64>, Vec<i64>, Vec<i64>)> {
    let mut rng = Lcg(seed);
    let mut rows: Vec<Vec<(i64, i64, i64)>> = vec![Vec::new(); regions];
    for t in 0..threads {
        let mut at = t * 7 + rng.next(50) as i64;
        for _ in 0..iterations {
            let len = 40 + rng.next(100) as i64;
            let (s0, e0) = (at, at + len);
            rows[rng.next(regions as u64) as usize].push((s0, e0, t));
            let mut lo = s0;
            let mut hi = e0;
            for _ in 0..rng.next(4) {
                let s = lo + if rng.next(3) == 0 { 0 } else { rng.next(((hi - lo) / 3).max(1) as u64) as i64 };
                let e = if rng.next(5) == 0 {
                    s
                } else if rng.next(3) == 0 {
                    hi
                } else {
                    s + rng.next((hi - s).max(1) as u64) as i64
                };
                rows[rng.next(regions as u64) as usize].push((s, e, t));
                if rng.next(4) == 0 {
                    rows[rng.next(regions as u64) as usize].push((s, e, t)); // identical interval
                }
                lo = s;
                hi = e;
            }
            at = e0 + rng.next(3) as i64; // sometimes adjacent (end == next start)
        }
    }
    rows.into_iter()
        .map(|mut r| {
            r.sort_by_key(|&(s, _, t)| (t, s)); // recorded order: by thread, entry order
            if shuffle {
                for i in (1..r.len()).rev() {
                    let j = rng.next(i as u64 + 1) as usize;
                    r.swap(i, j);
                }
            }
            (r.iter().map(|x| x.0).collect(), r.iter().map(|x| x.1).collect(), r.iter().map(|x| x.2).collect())
        })
        .collect()
}

#[test]
fn simple_matches_oracle() {
    for seed in 0..20 {
        let rows = recorded(3, 20, 3, seed % 2 == 1, seed);
        let inputs: Vec<RegionInput<'_>> = rows.iter().map(|r| on_thread("r", &r.0, &r.1, &r.2)).collect();
        let o = oracle(&inputs).unwrap();
        let s = simple(&inputs);
        assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), o.order);
        assert_eq!(s.iter().map(|x| x.1).collect::<Vec<_>>(), o.parent);
        assert_eq!(s.iter().map(|x| x.2).collect::<Vec<_>>(), o.depth);
        assert_eq!(s.iter().map(|x| x.3).collect::<Vec<_>>(), o.exclusive);
    }
}

/// Large inputs take the parallel paths (bucket sort, lanes walked in parallel): they must
/// give exactly the simple reconstruction, for recorded and shuffled order, one lane and
/// many, with ties of every kind.
#[test]
fn large_inputs_match_the_simple_reconstruction() {
    for (threads, iterations, regions, shuffle) in
        [(1, 60_000, 4, false), (8, 8_000, 4, false), (8, 8_000, 3, true), (300, 200, 5, false)]
    {
        let rows = recorded(threads, iterations, regions, shuffle, threads as u64 * 31 + iterations as u64);
        let n: usize = rows.iter().map(|r| r.0.len()).sum();
        assert!(n > 100_000, "{n} calls: too few for the parallel paths");
        let tracked: Vec<RegionInput<'_>> = rows.iter().map(|r| on_thread("r", &r.0, &r.1, &r.2)).collect();
        check_against_simple(&tracked);
        if threads == 1 {
            let untracked: Vec<RegionInput<'_>> = rows.iter().map(|r| region("r", &r.0, &r.1)).collect();
            check_against_simple(&untracked);
        }
    }
}

/// A skewed start distribution (one call far from the rest) puts almost every call in one
/// bucket: still exact.
#[test]
fn skewed_starts_match_the_simple_reconstruction() {
    let mut rows = recorded(2, 30_000, 2, false, 7);
    rows[0].0.push(i64::MAX / 2);
    rows[0].1.push(i64::MAX / 2 + 5);
    rows[0].2.push(0);
    rows[1].0.insert(0, -(i64::MAX / 2));
    rows[1].1.insert(0, -(i64::MAX / 2) + 5);
    rows[1].2.insert(0, 1);
    let inputs: Vec<RegionInput<'_>> = rows.iter().map(|r| on_thread("r", &r.0, &r.1, &r.2)).collect();
    check_against_simple(&inputs);
}
