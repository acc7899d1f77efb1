//! Regression tests, each headed by where the problem was reported (an issue of this project,
//! or a peer tool's public bug report).
use arrow_array::Int64Array;
use scope_profiler_analysis::{
    build_call_arrays, exclusive_by_row, lane_label, merge_runs, rank_call_arrays, rank_summary, region_input,
    set_aside_causes, set_aside_report, thread_summary, MergeOptions, MetaValue, RegionCalls, Run, RunAnalysis,
    TaskRow, ThreadRow,
};

fn run(name: &str, metadata: Vec<(&str, MetaValue)>) -> Run {
    Run {
        region_names: vec![name.into()],
        regions: vec![RegionCalls::new(0, 0, Int64Array::from(vec![0, 10]), Int64Array::from(vec![5, 30]))],
        metadata: metadata.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        num_ranks: 1,
        ..Run::default()
    }
}

/// issue 10: "two merges with different metadata rules (`merge._stacked` unions metadata,
/// `analysis::stack_runs`/`cli merge` keep the first run's)": one rule for stacking and union.
#[test]
fn issue_10_one_metadata_rule_for_stacking_and_union() {
    let a = || run("x", vec![("label", MetaValue::Str("A".into())), ("only_a", MetaValue::Int(1))]);
    let b = run("x", vec![("label", MetaValue::Str("B".into())), ("only_b", MetaValue::Int(2))]);
    let stacked = merge_runs(vec![(0, a()), (1, b)], &MergeOptions::default()).unwrap();
    let keys: Vec<&str> = stacked.metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["label", "only_a", "only_b", "mpi_size"]);
    assert_eq!(stacked.meta("label"), Some(&MetaValue::Str("A".into())));
    assert_eq!(stacked.meta_int("mpi_size"), Some(2));
    let c = run("y", vec![("label", MetaValue::Str("C".into())), ("only_c", MetaValue::Int(3))]);
    let united = merge_runs(vec![(0, a()), (0, c)], &MergeOptions { union: true, ..MergeOptions::default() }).unwrap();
    let keys: Vec<&str> = united.metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["label", "only_a", "only_c"]);
    assert_eq!(united.meta("label"), Some(&MetaValue::Str("A".into())));
}

/// issue 10: "lane labels three ways": `lane_label` and `LaneLabels` give the same strings.
#[test]
fn issue_10_lane_label_is_one_rule() {
    let mut r = run("x", vec![]);
    r.threads = vec![ThreadRow {
        rank: 0,
        index: 0,
        ident: 1,
        native_id: 2,
        daemon: false,
        start_ns: 0,
        end_ns: -1,
        cpu_ns: 0,
        cpu_start_ns: -1,
        name: "MainThread".into(),
    }];
    r.tasks =
        vec![TaskRow::new(0, 0, "task", "Task-2", "main.<locals>.fetch").on_thread(0).lifetime(0, -1).timing(1, 0, 0)];
    let labels = scope_profiler_analysis::LaneLabels::new(&r, 0);
    for (lane, want) in
        [(0, "Task-2 (fetch) on MainThread"), (-2, "MainThread"), (-1, "unknown lane"), (-3, "thread 1"), (5, "task 5")]
    {
        assert_eq!(lane_label(&r, lane, 0), want);
        assert_eq!(labels.label(lane), want);
    }
}

/// A tracked run with a generator timed over its iteration and first advanced inside
/// `header`: main [0, 100], header [10, 20], gen [15, 60], body [30, 40] on one thread.
fn peeked_generator_run(tracked: bool) -> Run {
    let row = |region: u32, s: i64, e: i64| {
        let mut r = RegionCalls::new(region, 0, Int64Array::from(vec![s]), Int64Array::from(vec![e]));
        if tracked {
            r.thread_ids = Some(Int64Array::from(vec![0]));
        }
        r
    };
    Run {
        region_names: vec!["main".into(), "header".into(), "gen".into(), "body".into()],
        regions: vec![row(0, 0, 100), row(1, 10, 20), row(2, 15, 60), row(3, 30, 40)],
        threads: vec![ThreadRow {
            rank: 0,
            index: 0,
            ident: 1,
            native_id: 2,
            daemon: false,
            start_ns: 0,
            end_ns: 200,
            cpu_ns: 0,
            cpu_start_ns: -1,
            name: "MainThread".into(),
        }],
        num_ranks: 1,
        ..Run::default()
    }
}

/// issue 13 item 2: "one non-nesting call poisons the whole rank": a generator decorated
/// with `@profile` and peeked inside a region made thread_summary, exclusive times and every
/// export fail with NestingError. The crossing call is set aside (kept, flagged, reported)
/// and the rest is analysed; `build_call_arrays` itself still raises.
#[test]
fn issue_13_a_call_that_does_not_nest_is_set_aside_not_fatal() {
    let run = peeked_generator_run(true);
    let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
    let name = |id: u32| {
        run.region_names[run.regions[rows[calls.region_index[id as usize] as usize]].region as usize].as_str()
    };
    assert_eq!(calls.set_aside.len(), 1);
    assert_eq!((name(calls.set_aside[0].call), name(calls.set_aside[0].crossed)), ("gen", "header"));
    // exclusive: main loses header and body (not gen); gen keeps its whole duration
    let excl: Vec<(usize, Vec<i64>)> = exclusive_by_row(&run, 0).unwrap();
    assert_eq!(excl, vec![(0, vec![80]), (1, vec![10]), (2, vec![45]), (3, vec![10])]);
    let body = calls.start_ns.iter().position(|&s| s == 30).unwrap();
    assert_eq!(name(calls.parent[body] as u32), "main");
    // root time counts main only, not the overlapping set-aside gen
    let summary = thread_summary(&run, 0).unwrap();
    assert_eq!((summary[0].num_calls, summary[0].region_time), (4, 100e-9));
    let report = set_aside_report(&run, 0, &rows, &calls).unwrap();
    assert!(
        report.starts_with("1 call(s) on rank 0 do not nest in their lane and were set aside")
            && report.contains("'gen' call 0 [0.000000015, 0.000000060] s on MainThread starts inside 'header' call 0 [0.000000010, 0.000000020] s but ends after it"),
        "{report}"
    );
    // reported once per rank
    let analysis = RunAnalysis::new(std::sync::Arc::new(run.clone()));
    assert!(analysis.set_aside_notice(0).is_none(), "not reconstructed yet");
    analysis.rank(0).unwrap();
    assert_eq!(analysis.set_aside_notice(0).as_deref(), Some(report.as_str()));
    assert!(analysis.set_aside_notice(0).is_none());
    // the explicit reconstruction keeps its promise
    let inputs: Vec<_> = run.regions.iter().map(|r| region_input(&run, r)).collect();
    assert!(build_call_arrays(&inputs).unwrap_err().0.contains("starts inside 'header' call 0"));
}

/// issue 13 item 2: without lanes a crossing still means interleaved untracked threads:
/// the page promises NestingError there.
#[test]
fn issue_13_untracked_crossings_stay_an_error() {
    let run = peeked_generator_run(false);
    assert!(rank_call_arrays(&run, 0).unwrap_err().0.contains("not properly nested"));
}

/// issue 14 (new-user trial): the set-aside note always blamed generators. It names the
/// likely cause from the lanes of the crossing calls: on a thread's lane of a run without
/// task ids a generator or untracked event-loop tasks (`--track-async`); on a task lane a
/// generator only; on the unknown lane (no thread id) threads recorded without
/// `--track-threads`.
#[test]
fn issue_14_new_user_trial_set_aside_note_names_the_likely_cause() {
    let run = peeked_generator_run(true);
    let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
    let report = set_aside_report(&run, 0, &rows, &calls).unwrap();
    assert!(report.ends_with("Likely cause: a generator timed over its iteration (a yield inside a region) advanced inside another region, or an event loop's tasks recorded without track_async (--track-async)."), "{report}");
    assert!(!report.contains("--track-threads"), "{report}");
    // the same calls inside one task: a generator only
    let mut tasks = run.clone();
    for r in &mut tasks.regions {
        r.task_ids = Some(Int64Array::from(vec![0]));
    }
    let (_, calls) = rank_call_arrays(&tasks, 0).unwrap();
    assert_eq!(
        set_aside_causes(&tasks, 0, &calls),
        ["a generator or async generator timed over its iteration (a yield inside a region) advanced inside another region"]
    );
    // the crossing call without a thread id (unknown lane) in a tracked run
    let mut unknown = run.clone();
    for r in &mut unknown.regions {
        r.thread_ids = Some(Int64Array::from(vec![-1]));
    }
    let (_, calls) = rank_call_arrays(&unknown, 0).unwrap();
    assert_eq!(
        set_aside_causes(&unknown, 0, &calls),
        ["calls of several threads recorded without track_threads (--track-threads) share one stack"]
    );
}

/// issue 14 (second new-user trial): a threaded program run without `--track-threads` got a
/// summary whose only note pointed at a missing `sp_end`. The note of an untracked rank whose
/// calls cross now names the likely cause and the flag; a tracked rank's note is unchanged.
#[test]
fn issue_14_untracked_crossing_note_names_track_threads() {
    let mut untracked = peeked_generator_run(false);
    untracked.threads.clear();
    let note = rank_summary(&untracked, 0).unwrap().nesting_note.expect("cannot be reconstructed");
    assert!(note.starts_with("recorded calls are not properly nested: 'gen' call 0"), "{note}");
    assert!(note.contains("sp_end / __exit__. If the program runs regions on several threads"), "{note}");
    assert!(note.contains("--track-threads (--track-async for asyncio), track_threads=True"), "{note}");
    // an end before a start is no threading matter: the error alone
    let mut reversed = run("x", vec![]);
    reversed.regions[0] = RegionCalls::new(0, 0, Int64Array::from(vec![10]), Int64Array::from(vec![5]));
    let note = rank_summary(&reversed, 0).unwrap().nesting_note.unwrap();
    assert_eq!(note, "a recorded call ends before it starts");
}

/// issue 14 (third new-user trial): `merge_results` of two runs of `scope-profiler run`
/// (each with a `processes` label per rank) kept the first run's list, shorter than the
/// ranks, so the summary dropped every label. Stacking gives one label per rank: each part's
/// own, a part without labels named by its `merged_from` path.
#[test]
fn issue_14_stacked_runs_keep_one_process_label_per_rank() {
    let labelled = |labels: &[&str]| {
        let mut r = run("x", vec![("processes", MetaValue::StrList(labels.iter().map(|s| s.to_string()).collect()))]);
        r.num_ranks = labels.len() as u32;
        r.regions.push(RegionCalls::new(
            0,
            labels.len() as u32 - 1,
            Int64Array::from(vec![0]),
            Int64Array::from(vec![1]),
        ));
        r
    };
    let options = MergeOptions {
        num_ranks: Some(5),
        merged_from: Some(vec!["a.h5".into(), "b.h5".into(), "c.h5".into()]),
        ..MergeOptions::default()
    };
    let parts = vec![(0, labelled(&["pid 1", "pid 2"])), (2, run("y", vec![])), (3, labelled(&["pid 7", "pid 8"]))];
    let merged = merge_runs(parts, &options).unwrap();
    assert_eq!(
        merged.meta("processes"),
        Some(&MetaValue::StrList(vec!["pid 1".into(), "pid 2".into(), "b.h5".into(), "pid 7".into(), "pid 8".into()]))
    );
    // no part with labels: no `processes` key
    let plain = merge_runs(vec![(0, run("x", vec![])), (1, run("y", vec![]))], &MergeOptions::default()).unwrap();
    assert_eq!(merged.num_ranks, 5);
    assert!(plain.meta("processes").is_none());
}

// Reported: stop 24 note, "Noticed, not fixed": "An `.h5` with negative
// `thread_table/cpu_ns` or `end_ns = 0`, or with thread ids that have no thread row, is
// accepted without a word: `threads` prints negative CPU or wall times, or 0 calls per
// thread." (The file-level test is `test_regressions.py`; this one is the summary's rule.)
/// Unsound times are `None` (never negative), calls of a thread id without a row get a row
/// `thread N` of their own, and `thread_table_note` names each bad row and the problem.
#[test]
fn stop_24_a_damaged_thread_table_gives_unknown_times_and_a_note() {
    use scope_profiler_analysis::thread_table_note;
    let thread = |index: i64, name: &str, start_ns: i64, end_ns: i64, cpu_ns: i64, cpu_start_ns: i64| ThreadRow {
        rank: 0,
        index,
        ident: 0,
        native_id: 0,
        daemon: false,
        start_ns,
        end_ns,
        cpu_ns,
        cpu_start_ns,
        name: name.into(),
    };
    let mut row = RegionCalls::new(0, 0, Int64Array::from(vec![0, 10, 20, 30]), Int64Array::from(vec![5, 15, 25, 35]));
    row.thread_ids = Some(Int64Array::from(vec![0, 1, 7, 7]));
    let run = Run {
        region_names: vec!["r".into()],
        regions: vec![row],
        threads: vec![
            thread(0, "good", 100, 900, 50, 10),
            thread(1, "bad", 500, 0, -5, -1),
            thread(2, "cpu", 100, -1, 20, 30),
        ],
        num_ranks: 1,
        ..Run::default()
    };
    let rows = thread_summary(&run, 0).unwrap();
    type Shown<'a> = (i64, &'a str, bool, Option<f64>, Option<f64>, i64);
    let got: Vec<Shown<'_>> =
        rows.iter().map(|r| (r.index, r.name.as_str(), r.listed, r.wall_time, r.cpu_time, r.num_calls)).collect();
    assert_eq!(
        got,
        [
            (0, "good", true, Some(900.0 / 1e9 - 100.0 / 1e9), Some(4e-8), 1),
            (1, "bad", true, None, None, 1),
            (2, "cpu", true, None, None, 0), // alive, the run's end unknown: no wall time either
            (7, "thread 7", false, None, None, 2),
        ]
    );
    assert_eq!(rows[1].cpu_time_total, None);
    assert_eq!(rows[2].cpu_time_total, Some(2e-8), "the whole-life clock is sound");
    assert_eq!(
        thread_table_note(&run, 0, &rows).as_deref(),
        Some(
            "thread_table of rank 0 has times no recording gives, shown as unknown (-): row 1 (thread 1 'bad'): \
             end_ns 0 is before start_ns 500, cpu_ns -5 is negative; row 2 (thread 2 'cpu'): cpu_ns 20 is below \
             cpu_start_ns 30; 2 call(s) on rank 0 carry thread id(s) 7 with no thread_table row: listed as \
             `thread N` with unknown times. The file is damaged."
        )
    );
    let sound = Run { threads: run.threads[..1].to_vec(), ..run.clone() };
    let mut sound = sound;
    sound.regions[0].thread_ids = Some(Int64Array::from(vec![0, 0, 0, 0]));
    let rows = thread_summary(&sound, 0).unwrap();
    assert_eq!(thread_table_note(&sound, 0, &rows), None);
    assert_eq!(rows.iter().map(|r| r.num_calls).collect::<Vec<_>>(), [4]);
}

/// stop 25 new-user trial (analysis), finding 4: "`events_frame(include=['zzz'])` has 6
/// columns where the unfiltered frame has 11; an empty run's summary frame has 12 columns
/// (vs 24), its per-rank frame `num_ranks` instead of `rank` and no percentiles". The
/// columns now come from the run and the query, never from the rows selected.
#[test]
fn stop_25_finding_4_frames_keep_their_columns_when_empty() {
    use scope_profiler_analysis::{events_batch, summary_table_columns};
    let mut r = run("x", vec![]);
    r.regions[0].call_ids = Some(Int64Array::from(vec![0, 1]).into());
    r.regions[0].parent_ids = Some(Int64Array::from(vec![-1, -1]).into());
    r.regions[0].thread_ids = Some(Int64Array::from(vec![0, 0]));
    r.regions[0].task_ids = Some(Int64Array::from(vec![0, -1]));
    r.regions[0].await_ns = Some(Int64Array::from(vec![1, 0]));
    let names = |rows: &[usize]| -> Vec<String> {
        events_batch(&r, rows, 0.0).unwrap().schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    let all = names(&[0]);
    assert_eq!(all.len(), 11, "{all:?}");
    assert_eq!(names(&[]), all, "no row selected: the same columns");
    // an empty run recorded with track_threads (a thread table, no calls) has the thread column
    let empty = Run { threads: vec![], num_ranks: 0, ..Run::default() };
    let tracked = Run { threads: vec![main_thread()], ..Run::default() };
    let cols = |run: &Run| -> Vec<String> {
        events_batch(run, &[], 0.0).unwrap().schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    assert_eq!(cols(&empty), ["name", "rank", "call_index", "start", "end", "duration"]);
    assert_eq!(cols(&tracked).last().map(String::as_str), Some("thread"));
    // summary tables: per-rank has `rank` and the percentiles, with or without calls
    let per_rank = summary_table_columns(&empty, true);
    assert_eq!(per_rank[1], "rank");
    assert_eq!(per_rank.len(), 15);
    assert_eq!(&per_rank[12..], ["p50_duration", "p95_duration", "p99_duration"]);
    assert_eq!(summary_table_columns(&empty, false).len(), 22);
    assert_eq!(summary_table_columns(&empty, false)[1], "num_ranks");
    // await and held columns for a run with await times
    let with_await = summary_table_columns(&r, false);
    assert_eq!(with_await.len(), 24);
    assert_eq!(&with_await[22..], ["await_duration", "held_duration"]);
}

fn main_thread() -> ThreadRow {
    ThreadRow {
        rank: 0,
        index: 0,
        ident: 1,
        native_id: 1,
        daemon: false,
        start_ns: 0,
        end_ns: -1,
        cpu_ns: 0,
        cpu_start_ns: -1,
        name: "MainThread".into(),
    }
}
