//! Event-loop blocks: the stretches in which one task step or callback held an event loop's
//! thread, as recorded ([`LoopBlockRow`]) and as reported ([`loop_blocks`]).
//!
//! The recorder keeps every handle run of an instrumented loop lasting at least
//! [`BLOCK_FLOOR_NS`] (1 ms): shorter runs are the loop's ordinary work, and keeping them
//! would cost a record per step. So a query can ask for blocks of at least the floor, not
//! less ([`BelowBlockFloor`]).
//!
//! Each block names the region it ran in: the innermost call on the block's lane (the
//! task's lane, or the thread's own lane for a plain callback) that covers at least half
//! of the block. Calls on one lane nest, so those calls form one chain and the innermost is
//! the shortest. A block in which no call covers half is named after the innermost call
//! open on that lane when it began; `None` when there is none. (A region entered inside the
//! blocking step - `with region: time.sleep(0.08)` - covers the block although it was not
//! open when the step began: that region, not its caller, is what blocked the loop.)
//!
//! A block on a thread's own lane (task `-1`) is a plain callback of an asyncio or trio
//! loop, or, on a thread whose greenlets are lanes, a step of its main greenlet resumed by
//! the gevent hub ([`own_lane_holder`]). A gevent hub does not tell when its greenlets
//! became ready: its blocks' delayed tasks are not known (recorded as `-1`, reported as
//! `None`).
use crate::run::{secs, Run};

/// Handle runs shorter than this are not recorded as blocks (ns).
pub const BLOCK_FLOOR_NS: i64 = 1_000_000;

/// One recorded loop block on one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopBlockRow {
    pub rank: u32,
    /// Thread-table index of the loop's thread.
    pub thread: i64,
    /// Task-table index of the task whose step held the loop, `-1` for a plain callback.
    pub task: i64,
    /// Absolute ns on the recording clock, as call starts and ends.
    pub start_ns: i64,
    pub end_ns: i64,
    /// Tasks that were ready and waiting during the block: each task step that resumed
    /// after it with a ready wait overlapping it; `-1` when not known (a gevent hub's block).
    pub delayed_tasks: i64,
}

/// A loop block as [`loop_blocks`] reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopBlock {
    pub thread: i64,
    pub task: i64,
    /// s from the run's start (`metadata.start_time_ns`; without it, the rank's first call).
    pub start: f64,
    /// s.
    pub duration: f64,
    /// The region it ran in (see the module docs), `None` when there is none.
    pub region: Option<String>,
    /// `None` when not known (a gevent hub's block).
    pub delayed_tasks: Option<i64>,
}

/// A threshold below [`BLOCK_FLOOR_NS`]: blocks that short are not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BelowBlockFloor {
    pub threshold_ns: i64,
}

impl std::fmt::Display for BelowBlockFloor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "threshold {} s is below the recording floor of loop blocks, {} s: shorter runs are not recorded",
            secs(self.threshold_ns),
            secs(BLOCK_FLOOR_NS)
        )
    }
}

impl std::error::Error for BelowBlockFloor {}

/// The blocks of `rank` lasting at least `threshold_ns`, longest first (ties: earlier
/// first), each with its region (module docs).
///
/// Errors: [`BelowBlockFloor`] when `threshold_ns` is below [`BLOCK_FLOOR_NS`].
pub fn loop_blocks(run: &Run, rank: u32, threshold_ns: i64) -> Result<Vec<LoopBlock>, BelowBlockFloor> {
    if threshold_ns < BLOCK_FLOOR_NS {
        return Err(BelowBlockFloor { threshold_ns });
    }
    let mut rows: Vec<&LoopBlockRow> =
        run.loop_blocks.iter().filter(|b| b.rank == rank && b.end_ns - b.start_ns >= threshold_ns).collect();
    rows.sort_by_key(|b| (std::cmp::Reverse(b.end_ns - b.start_ns), b.start_ns));
    let origin = run.meta_int("start_time_ns").or_else(|| run.rank_rows(rank).filter_map(|r| r.start_min()).min());
    let regions = block_regions(run, rank, &rows);
    Ok(rows
        .into_iter()
        .zip(regions)
        .map(|(b, region)| LoopBlock {
            thread: b.thread,
            task: b.task,
            start: secs(b.start_ns - origin.unwrap_or(b.start_ns)),
            duration: secs(b.end_ns - b.start_ns),
            region: region.map(|r| run.region_names[r as usize].clone()),
            delayed_tasks: (b.delayed_tasks >= 0).then_some(b.delayed_tasks),
        })
        .collect())
}

/// What held the loop in a block of thread `thread` of `rank` on the thread's own lane
/// (task `-1`): `"main greenlet"` when greenlets of that thread are lanes (the gevent hub
/// resumed the thread's main greenlet), else `"a callback"` (of an asyncio or trio loop).
pub fn own_lane_holder(run: &Run, rank: u32, thread: i64) -> &'static str {
    if run.rank_tasks(rank).any(|t| t.kind == "greenlet" && t.thread_index == thread) {
        "main greenlet"
    } else {
        "a callback"
    }
}

/// What a block's region is chosen from (module docs): the shortest call on its lane
/// covering at least half of it, and the latest-starting one open when it began, as
/// `(duration or start, region)`.
#[derive(Debug, Clone, Copy, Default)]
struct RegionPick {
    covering: Option<(i64, u32)>,
    open: Option<(i64, u32)>,
}

/// The region id of the call each block of `blocks` (all of `rank`) ran in (module docs),
/// in one pass over the rank's calls: a call is checked against the blocks that start
/// within the longest block's duration before it and before its end (blocks sorted by
/// start, found by binary search), not against every block.
fn block_regions(run: &Run, rank: u32, blocks: &[&LoopBlockRow]) -> Vec<Option<u32>> {
    if blocks.is_empty() {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..blocks.len()).collect();
    order.sort_by_key(|&k| blocks[k].start_ns);
    let starts: Vec<i64> = order.iter().map(|&k| blocks[k].start_ns).collect();
    let longest = blocks.iter().map(|b| b.end_ns - b.start_ns).max().unwrap_or(0);
    let mut picks = vec![RegionPick::default(); blocks.len()];
    for row in run.rank_rows(rank) {
        for i in 0..row.len() {
            let (s, e) = (row.start_ns.value(i), row.end_ns.value(i));
            // a block overlapping [s, e] starts before e and ends after s, so after s - longest
            let lo = starts.partition_point(|&t| t <= s.saturating_sub(longest));
            let hi = starts.partition_point(|&t| t < e);
            for &k in &order[lo..hi.max(lo)] {
                let b = blocks[k];
                if b.end_ns <= s || !on_block_lane(row, i, b) {
                    continue;
                }
                let pick = &mut picks[k];
                let overlap = e.min(b.end_ns) - s.max(b.start_ns);
                if overlap * 2 >= b.end_ns - b.start_ns && pick.covering.is_none_or(|(d, _)| e - s < d) {
                    pick.covering = Some((e - s, row.region));
                }
                if s <= b.start_ns && pick.open.is_none_or(|(start, _)| s > start) {
                    pick.open = Some((s, row.region));
                }
            }
        }
    }
    picks.into_iter().map(|p| p.covering.or(p.open).map(|(_, r)| r)).collect()
}

/// Whether call `i` of `row` is on the lane of block `b`: the task's lane for a task's step,
/// else the thread's own lane.
fn on_block_lane(row: &crate::run::RegionCalls, i: usize, b: &LoopBlockRow) -> bool {
    match (&row.task_ids, &row.thread_ids) {
        (Some(tasks), _) if b.task >= 0 => tasks.value(i) == b.task,
        (tasks, Some(threads)) => tasks.as_ref().is_none_or(|t| t.value(i) < 0) && threads.value(i) == b.thread,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{MetaValue, RegionCalls};
    use arrow_array::Int64Array;

    fn row(region: u32, calls: &[(i64, i64, i64, i64)]) -> RegionCalls {
        let col = |k: usize| Int64Array::from(calls.iter().map(|c| [c.0, c.1, c.2, c.3][k]).collect::<Vec<i64>>());
        let mut r = RegionCalls::new(region, 0, col(0), col(1));
        r.thread_ids = Some(col(2));
        r.task_ids = Some(col(3));
        r
    }

    fn run() -> Run {
        let ms = 1_000_000;
        Run {
            region_names: vec!["outer".into(), "hold".into(), "cb_region".into()],
            // task 4: `outer` over the whole step, `hold` inside it over most of the block;
            // thread 0's own lane: `cb_region` open when a callback block began
            regions: vec![
                row(0, &[(1_000 * ms, 1_200 * ms, 0, 4)]),
                row(1, &[(1_010 * ms, 1_090 * ms, 0, 4), (1_095 * ms, 1_099 * ms, 0, 4)]),
                row(2, &[(1_150 * ms, 1_300 * ms, 0, -1)]),
            ],
            metadata: vec![("start_time_ns".into(), MetaValue::Int(900 * ms))],
            num_ranks: 1,
            loop_blocks: vec![
                LoopBlockRow {
                    rank: 0,
                    thread: 0,
                    task: 4,
                    start_ns: 1_005 * ms,
                    end_ns: 1_100 * ms,
                    delayed_tasks: 5,
                },
                LoopBlockRow {
                    rank: 0,
                    thread: 0,
                    task: -1,
                    start_ns: 1_160 * ms,
                    end_ns: 1_180 * ms,
                    delayed_tasks: 1,
                },
                LoopBlockRow {
                    rank: 0,
                    thread: 0,
                    task: -1,
                    start_ns: 1_400 * ms,
                    end_ns: 1_402 * ms,
                    delayed_tasks: 0,
                },
                LoopBlockRow { rank: 1, thread: 0, task: -1, start_ns: 0, end_ns: 500 * ms, delayed_tasks: 0 },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn blocks_are_longest_first_from_the_run_start_with_their_region() {
        let blocks = loop_blocks(&run(), 0, 10_000_000).unwrap();
        assert_eq!(blocks.len(), 2, "the 2 ms block is under the threshold, rank 1 is another rank");
        let b = &blocks[0];
        assert_eq!((b.thread, b.task, b.delayed_tasks), (0, 4, Some(5)));
        assert!((b.start - 0.105).abs() < 1e-9 && (b.duration - 0.095).abs() < 1e-9, "{b:?}");
        // `hold` covers 80 of the 95 ms: the innermost call covering half, though entered
        // after the block began
        assert_eq!(b.region.as_deref(), Some("hold"));
        // a callback on the thread's own lane, inside `cb_region`
        assert_eq!((blocks[1].task, blocks[1].region.as_deref()), (-1, Some("cb_region")));
        let all = loop_blocks(&run(), 0, BLOCK_FLOOR_NS).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].region, None, "no call on the lane overlaps it");
    }

    #[test]
    fn a_block_no_call_covers_half_of_is_named_after_the_call_open_when_it_began() {
        let mut r = run();
        // `hold` shrinks to 10 ms of the 95 ms block: `outer` (open at the start) covers it all
        r.regions[1] = row(1, &[(1_010_000_000, 1_020_000_000, 0, 4)]);
        assert_eq!(loop_blocks(&r, 0, 10_000_000).unwrap()[0].region.as_deref(), Some("outer"));
        r.regions[0] = row(0, &[(1_000_000_000, 1_030_000_000, 0, 4)]);
        assert_eq!(loop_blocks(&r, 0, 10_000_000).unwrap()[0].region.as_deref(), Some("outer"));
    }

    #[test]
    fn a_gevent_hubs_block_has_unknown_delays_and_its_main_greenlet_holds_the_own_lane() {
        let mut r = run();
        assert_eq!(own_lane_holder(&r, 0, 0), "a callback");
        // thread 0 runs greenlet lanes; its own-lane block is the main greenlet's, delays unknown
        r.tasks = vec![crate::run::TaskRow::new(0, 4, "greenlet", "greenlet-1", "Hub.run").on_thread(0)];
        r.loop_blocks[1].delayed_tasks = -1;
        let blocks = loop_blocks(&r, 0, 10_000_000).unwrap();
        assert_eq!((blocks[1].task, blocks[1].delayed_tasks), (-1, None));
        assert_eq!(own_lane_holder(&r, 0, 0), "main greenlet");
        assert_eq!(own_lane_holder(&r, 0, 1), "a callback", "another thread");
        assert_eq!(own_lane_holder(&r, 1, 0), "a callback", "another rank");
    }

    #[test]
    fn a_threshold_below_the_floor_is_refused_naming_the_floor() {
        let err = loop_blocks(&run(), 0, 500_000).unwrap_err();
        assert!(err.to_string().contains("0.001 s"), "{err}");
    }

    /// The one-pass choice of regions gives what checking every call against each block
    /// gives, on blocks and calls of several lanes, nested and overlapping.
    #[test]
    fn regions_found_in_one_pass_match_a_check_of_every_call() {
        let mut calls = Vec::new();
        let mut seed = 7u64;
        let mut next = |m: i64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as i64) % m
        };
        for _ in 0..400 {
            let s = next(10_000);
            calls.push((s, s + next(3_000), next(2), next(4) - 1));
        }
        let mut r = Run {
            region_names: (0..4).map(|k| format!("r{k}")).collect(),
            regions: (0..4).map(|k| row(k, &calls[k as usize * 100..(k as usize + 1) * 100])).collect(),
            num_ranks: 1,
            ..Default::default()
        };
        r.loop_blocks = (0..60)
            .map(|_| {
                let s = next(10_000);
                LoopBlockRow {
                    rank: 0,
                    thread: next(2),
                    task: next(4) - 1,
                    start_ns: s,
                    end_ns: s + 1 + next(2_000),
                    delayed_tasks: 0,
                }
            })
            .collect();
        let blocks: Vec<&LoopBlockRow> = r.loop_blocks.iter().collect();
        let one_pass = block_regions(&r, 0, &blocks);
        let each: Vec<Option<u32>> = blocks
            .iter()
            .map(|b| {
                let mut pick = RegionPick::default();
                for row in r.rank_rows(0) {
                    for i in 0..row.len() {
                        let (s, e) = (row.start_ns.value(i), row.end_ns.value(i));
                        if e <= b.start_ns || s >= b.end_ns || !on_block_lane(row, i, b) {
                            continue;
                        }
                        let overlap = e.min(b.end_ns) - s.max(b.start_ns);
                        if overlap * 2 >= b.end_ns - b.start_ns && pick.covering.is_none_or(|(d, _)| e - s < d) {
                            pick.covering = Some((e - s, row.region));
                        }
                        if s <= b.start_ns && pick.open.is_none_or(|(start, _)| s > start) {
                            pick.open = Some((s, row.region));
                        }
                    }
                }
                pick.covering.or(pick.open).map(|(_, r)| r)
            })
            .collect();
        assert_eq!(one_pass, each);
        assert!(each.iter().filter(|r| r.is_some()).count() > 20, "the case names regions: {each:?}");
    }
}
