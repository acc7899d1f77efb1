//! Rank-level derivations on a hand-built Run: call ids, exclusive per row, thread summary,
//! lane labels.
mod support;

use arrow_array::Int64Array;
use scope_profiler_analysis::*;
use support::run;

fn row(region: u32, rank: u32, s: &[i64], e: &[i64], threads: Option<&[i64]>, tasks: Option<&[i64]>) -> RegionCalls {
    let mut row = RegionCalls::new(region, rank, Int64Array::from(s.to_vec()), Int64Array::from(e.to_vec()));
    row.thread_ids = threads.map(|t| Int64Array::from(t.to_vec()));
    row.task_ids = tasks.map(|t| Int64Array::from(t.to_vec()));
    row
}

fn thread(index: i64, name: &str, start: i64, end: i64, cpu: i64) -> ThreadRow {
    ThreadRow { start_ns: start, end_ns: end, cpu_ns: cpu, ..ThreadRow::new(0, index, name) }
}

fn task(index: i64, thread_index: i64, name: &str, coro: &str) -> TaskRow {
    TaskRow::new(0, index, "task", name, coro).on_thread(thread_index).lifetime(0, -1).timing(1, 0, 0)
}

/// outer [0,100] on main; inner calls on main and worker; a task on main.
fn sample() -> Run {
    Run {
        loop_blocks: Vec::new(),
        region_names: vec!["outer".into(), "inner".into()],
        regions: vec![
            row(0, 0, &[0], &[100], Some(&[0]), Some(&[-1])),
            // recorded order grouped by thread: worker's call first
            row(1, 0, &[15, 10, 40, 50], &[25, 20, 45, 90], Some(&[1, 0, 0, 0]), Some(&[-1, -1, -1, 0])),
            row(0, 1, &[5], &[6], None, None),
        ],
        threads: vec![thread(0, "MainThread", 1_000, -1, 5_000_000), thread(1, "worker-0", 2_909_712, 10_306_841, 7)],
        tasks: vec![task(0, 0, "Task-2", "main.<locals>.fetch")],
        metadata: vec![],
        num_ranks: 2,
    }
}

#[test]
fn assign_ids_and_totals() {
    let mut run = sample();
    let next = assign_call_ids(&mut run, 0, 100).unwrap();
    assert_eq!(next, 105);
    // sorted: outer[0,100]=100, inner[10,20]=101, inner[15,25]=102, inner[40,45]=103, inner[50,90]=104
    assert_eq!(run.regions[0].call_ids.as_ref().unwrap().to_vec(), vec![100]);
    assert_eq!(run.regions[1].call_ids.as_ref().unwrap().to_vec(), vec![102, 101, 103, 104]);
    // worker call and task call are roots of their own lanes
    assert_eq!(run.regions[1].parent_ids.as_ref().unwrap().to_vec(), vec![-1, 100, 100, -1]);
    assert_eq!(run.regions[0].exclusive_total_ns, Some(100 - 10 - 5));
    assert_eq!(run.regions[1].exclusive_total_ns, Some(10 + 10 + 5 + 40));
    // rank 1 untouched
    assert!(run.regions[2].call_ids.is_none());
    let next = assign_call_ids(&mut run, 1, 0).unwrap();
    assert_eq!(next, 1);
    assert_eq!(run.regions[2].exclusive_total_ns, Some(1));
}

/// A crossing call on a tracked rank is set aside: ids are assigned, the
/// crossing call is a root and its would-be parent keeps its whole exclusive time.
#[test]
fn assign_ids_sets_a_crossing_call_aside() {
    let mut run = sample();
    run.regions[1] = row(1, 0, &[50], &[150], Some(&[0]), Some(&[-1]));
    assert_eq!(assign_call_ids(&mut run, 0, 0).unwrap(), 2);
    assert_eq!(run.regions[1].parent_ids.as_ref().unwrap().to_vec(), vec![-1]);
    assert_eq!((run.regions[0].exclusive_total_ns, run.regions[1].exclusive_total_ns), (Some(100), Some(100)));
}

#[test]
fn assign_ids_error_changes_nothing() {
    let mut run = sample();
    run.regions[0] = row(0, 0, &[0], &[100], None, None);
    run.regions[1] = row(1, 0, &[50], &[150], None, None);
    let err = assign_call_ids(&mut run, 0, 0).unwrap_err();
    assert!(err.0.starts_with(
        "recorded calls are not properly nested: 'inner' call 0 [50, 150] ns starts inside 'outer' call 0 [0, 100] ns"
    ));
    assert!(run.regions.iter().all(|r| r.call_ids.is_none() && r.exclusive_total_ns.is_none()));
}

#[test]
fn exclusive_rows_in_recorded_order() {
    let run = sample();
    let rows = exclusive_by_row(&run, 0).unwrap();
    assert_eq!(rows, vec![(0, vec![85]), (1, vec![10, 10, 5, 40])]);
    let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
    assert_eq!(rows, vec![0, 1]);
    assert_eq!(calls.lane, vec![-2, -2, -3, -2, 0]);
}

#[test]
fn summary_rows() {
    let run = sample();
    let rows = thread_summary(&run, 0).unwrap();
    assert_eq!(rows.len(), 2);
    let main = &rows[0];
    // alive, and the run's end is not in the metadata: no wall time
    assert_eq!((main.index, main.name.as_str(), main.alive, main.wall_time), (0, "MainThread", true, None));
    assert_eq!(main.num_calls, 4);
    // roots: outer [0, 100] on the bare lane and the task's call [50, 90] (task on thread 0)
    // overlap: the union is 100 ns (the sum, 140 ns, would exceed the wall time)
    assert_eq!(main.region_time, 100.0 / 1e9);
    // no cpu_start_ns recorded: the whole-life figure
    assert_eq!((main.cpu_time, main.cpu_time_total), (Some(0.005), Some(0.005)));
    // no await column: held and await unknown
    assert_eq!((main.held_time, main.await_time), (None, None));
    let w = &rows[1];
    assert_eq!(w.num_calls, 1);
    assert_eq!(w.region_time, 10.0 / 1e9);
    // the reference subtracts float seconds: 0.010306841 - 0.002909712
    assert_eq!(w.wall_time, Some(0.0073971290000000006));
    assert!(thread_summary(&run, 1).unwrap().is_empty());
}

#[test]
fn labels() {
    let run = sample();
    assert_eq!(lane_label(&run, -2, 0), "MainThread");
    assert_eq!(lane_label(&run, -3, 0), "worker-0");
    assert_eq!(lane_label(&run, -9, 0), "thread 7");
    assert_eq!(lane_label(&run, -1, 0), "unknown lane");
    assert_eq!(lane_label(&run, 0, 0), "Task-2 (fetch) on MainThread");
    assert_eq!(lane_label(&run, 5, 0), "task 5");
    assert_eq!(lane_label(&run, -2, 1), "thread 0");
    let labels = LaneLabels::new(&run, 0);
    for lane in [-9, -3, -2, -1, 0, 5] {
        assert_eq!(labels.label(lane), lane_label(&run, lane, 0));
    }
}

/// Without task columns call counts come from lane sizes: hand-checked values, the same
/// through the cache; a thread id missing from the table and an unknown thread (-1) count
/// for nobody.
#[test]
fn summary_without_task_columns() {
    let mut run = sample();
    for r in &mut run.regions {
        r.task_ids = None;
    }
    run.regions.push(row(1, 0, &[200, 300], &[210, 310], Some(&[7, -1]), None));
    let rows = thread_summary(&run, 0).unwrap();
    // main: outer + 3 inner calls; the former task call [50, 90] is now a child of outer
    assert_eq!((rows[0].num_calls, rows[0].region_time), (4, 100.0 / 1e9));
    assert_eq!((rows[1].num_calls, rows[1].region_time), (1, 10.0 / 1e9));
    assert_eq!(RunAnalysis::new(std::sync::Arc::new(run)).thread_summary(0).unwrap(), rows);
}

/// Per-thread numbers that mean what they say. A thread with a bare-lane root
/// [0, 1000] and two task lanes on it whose roots interleave ([100, 600] awaiting 400 ns,
/// [200, 700] awaiting 450 ns): region time is the union over the lanes (1000 ns, never
/// above the wall time), held/await come from the await column, CPU is the run's share.
#[test]
fn thread_summary_union_held_await_cpu_and_wall() {
    let mut outer = row(0, 0, &[0], &[1000], Some(&[0]), Some(&[-1]));
    outer.await_ns = Some(Int64Array::from(vec![0]));
    let mut inner = row(1, 0, &[100, 200, 300], &[600, 700, 350], Some(&[0, 0, 0]), Some(&[0, 1, 1]));
    // the third call (nested in task 1's root) awaits 10 ns: not a top-level call
    inner.await_ns = Some(Int64Array::from(vec![400, 450, 10]));
    let mut main = thread(0, "MainThread", 5, -1, 9_000);
    main.cpu_start_ns = 4_000;
    let mut worker = thread(1, "worker", 10, 1_010, 300);
    worker.cpu_start_ns = 100;
    let mut t1 = task(1, 0, "Task-3", "m.g");
    t1.created_ns = 150;
    t1.done_ns = 800;
    let run = Run {
        loop_blocks: Vec::new(),
        region_names: vec!["outer".into(), "inner".into()],
        regions: vec![outer, inner],
        threads: vec![main, worker],
        tasks: vec![task(0, 0, "Task-2", "m.f"), t1],
        metadata: vec![
            ("start_time_ns".into(), MetaValue::Int(1_000)),
            ("finalize_time_ns".into(), MetaValue::Int(3_000)),
        ],
        num_ranks: 1,
    };
    let rows = thread_summary(&run, 0).unwrap();
    let m = &rows[0];
    assert_eq!(m.region_time, 1000.0 / 1e9);
    // alive: wall from its start (5 ns) to the run's end (3000 - 1000 ns)
    assert_eq!(m.wall_time, Some(2000.0 / 1e9 - 5.0 / 1e9));
    assert!(m.region_time <= m.wall_time.unwrap());
    // top-level calls: outer 1000 held; task 0: 500 - 400; task 1: 500 - 450; the task calls
    // lie inside outer, which holds the thread only outside them ([100, 700]: 600 ns;
    // counted whole, held would be 1150 ns > region 1000 ns)
    assert_eq!(m.held_time, Some((1000.0 - 600.0 + 100.0 + 50.0) / 1e9));
    // the tasks waited in the union of their calls ([100, 700]) less the time those held
    // the thread (100 + 50 ns); their summed awaits, 400 + 450 ns, are a per-task sum
    assert_eq!(m.await_time, Some((600.0 - 150.0) / 1e9));
    assert_eq!(m.task_await_time_sum, Some(850.0 / 1e9));
    assert_eq!(m.task_step_time, None, "not recorded in this run");
    assert_eq!((m.cpu_time, m.cpu_time_total), (Some(5_000.0 / 1e9), Some(9_000.0 / 1e9)));
    assert_eq!(m.num_calls, 4);
    let w = &rows[1];
    assert_eq!((w.wall_time, w.cpu_time, w.region_time), (Some(1010.0 / 1e9 - 10.0 / 1e9), Some(200.0 / 1e9), 0.0));
    assert_eq!((w.held_time, w.await_time), (Some(0.0), Some(0.0)));
    assert_eq!(RunAnalysis::new(std::sync::Arc::new(run.clone())).thread_summary(0).unwrap(), rows);

    let tasks = task_summary(&run, 0).unwrap();
    assert_eq!(tasks.len(), 2);
    let (a, b) = (&tasks[0], &tasks[1]);
    assert_eq!((a.index, a.name.as_str(), a.thread.as_str(), a.done), (0, "Task-2", "MainThread", false));
    // not done: wall from creation (0) to the run's end
    assert_eq!(a.wall_time, Some(2000.0 / 1e9));
    assert_eq!((a.num_calls, a.region_time, a.held_time, a.await_time), (1, 500e-9, Some(100e-9), Some(400e-9)));
    assert_eq!(b.wall_time, Some(800.0 / 1e9 - 150.0 / 1e9));
    assert_eq!((b.num_calls, b.region_time, b.held_time, b.await_time), (2, 500e-9, Some(50e-9), Some(450e-9)));
    for t in &tasks {
        assert!((t.held_time.unwrap() + t.await_time.unwrap() - t.region_time).abs() < 1e-15);
    }
    assert_eq!(RunAnalysis::new(std::sync::Arc::new(run)).task_summary(0).unwrap(), tasks);
}

/// The union of the top-level calls, checked against a brute-force count of
/// covered nanoseconds on random overlapping task lanes of one thread.
#[test]
fn region_time_is_the_union_of_lanes() {
    let mut state = 12345u64;
    let mut next = |m: i64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 33) as i64) % m
    };
    let (mut s, mut e, mut th, mut tk) = (vec![], vec![], vec![], vec![]);
    let lanes = 6;
    for lane in 0..lanes {
        let mut t = next(50);
        for _ in 0..20 {
            let d = 1 + next(40);
            s.push(t);
            e.push(t + d);
            th.push(0);
            tk.push(lane);
            t += d + next(30);
        }
    }
    let mut covered = vec![false; 5_000];
    for (a, b) in s.iter().zip(&e) {
        for c in &mut covered[*a as usize..*b as usize] {
            *c = true;
        }
    }
    let want = covered.iter().filter(|c| **c).count() as f64 / 1e9;
    let run = Run {
        region_names: vec!["r".into()],
        regions: vec![row(0, 0, &s, &e, Some(&th), Some(&tk))],
        threads: vec![thread(0, "MainThread", 0, 10_000, 1)],
        tasks: (0..lanes).map(|k| task(k, 0, "T", "c")).collect(),
        num_ranks: 1,
        ..Run::default()
    };
    let got = thread_summary(&run, 0).unwrap()[0].region_time;
    assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    let total: f64 = task_summary(&run, 0).unwrap().iter().map(|t| t.region_time).sum();
    assert!(total > got, "the lanes overlap, so their sum exceeds the union");
}

/// A live thread's wall time runs to the run's end; in a run stacked from several
/// files the metadata's end is rank 0's process's only, so other ranks' live threads have none.
#[test]
fn live_wall_time_in_stacked_runs() {
    let mut run = Run {
        region_names: vec!["r".into()],
        regions: vec![row(0, 0, &[10], &[20], Some(&[0]), None), row(0, 1, &[10], &[20], Some(&[0]), None)],
        threads: vec![thread(0, "MainThread", 0, -1, 1), ThreadRow { rank: 1, ..thread(0, "MainThread", 0, -1, 1) }],
        metadata: vec![("start_time_ns".into(), MetaValue::Int(100)), ("finalize_time_ns".into(), MetaValue::Int(600))],
        num_ranks: 2,
        ..Run::default()
    };
    assert_eq!(thread_summary(&run, 1).unwrap()[0].wall_time, Some(500e-9));
    run.metadata.push(("merged_from".into(), MetaValue::StrList(vec!["a.h5".into(), "b.h5".into()])));
    assert_eq!(thread_summary(&run, 0).unwrap()[0].wall_time, Some(500e-9));
    assert_eq!(thread_summary(&run, 1).unwrap()[0].wall_time, None);
}

/// Calls crossing on one thread without task ids (asyncio recorded with
/// --track-threads) get a note naming --track-async; the same calls on task lanes do not.
#[test]
fn crossing_calls_without_task_ids_get_the_track_async_note() {
    let crossing = |tasks: Option<&[i64]>| Run {
        region_names: vec!["a".into(), "b".into()],
        regions: vec![
            row(0, 0, &[0], &[100], Some(&[0]), tasks.map(|_| &[0][..])),
            row(1, 0, &[50], &[150], Some(&[0]), tasks),
        ],
        threads: vec![thread(0, "MainThread", 0, -1, 1)],
        num_ranks: 1,
        ..Run::default()
    };
    let run = crossing(None);
    let (_, calls) = rank_call_arrays(&run, 0).unwrap();
    let note = untracked_tasks_note(&run, 0, &calls).expect("a note");
    assert!(note.starts_with("1 call(s) on rank 0 overlap") && note.contains("--track-async"), "{note}");
    let run = crossing(Some(&[1]));
    let (_, calls) = rank_call_arrays(&run, 0).unwrap();
    assert_eq!(untracked_tasks_note(&run, 0, &calls), None);
    // nested calls: nothing to say
    let mut run = crossing(None);
    run.regions[1] = row(1, 0, &[50], &[90], Some(&[0]), None);
    let (_, calls) = rank_call_arrays(&run, 0).unwrap();
    assert_eq!(untracked_tasks_note(&run, 0, &calls), None);
}

/// Under `session()` the session's root region (bare lane) holds the thread only outside
/// the task calls it encloses (counted as held beside them, MainThread's `held_time` would
/// exceed its `wall_time`); those keep their own held and await. Checked by hand:
/// held <= region <= wall.
#[test]
fn enclosed_task_calls_are_not_counted_twice() {
    let with_await = |mut r: RegionCalls, w: &[i64]| {
        r.await_ns = Some(Int64Array::from(w.to_vec()));
        r
    };
    // the session root [0, 1000] on the bare lane; task 0: [100, 600] awaiting 400 (inside
    // the root); task 1: [900, 1500] awaiting 300 (crosses the root's end: top-level), and
    // [1600, 1800] awaiting 150 (after the root: top-level)
    let run = Run {
        region_names: vec!["scope_profiler.session".into(), "fetch".into()],
        regions: vec![
            with_await(row(0, 0, &[0], &[1000], Some(&[0]), Some(&[-1])), &[0]),
            with_await(
                row(1, 0, &[100, 900, 1600], &[600, 1500, 1800], Some(&[0, 0, 0]), Some(&[0, 1, 1])),
                &[400, 300, 150],
            ),
        ],
        threads: vec![thread(0, "MainThread", 0, 2_000, 1)],
        tasks: vec![task(0, 0, "Task-1", "f"), task(1, 0, "Task-2", "f")],
        num_ranks: 1,
        ..Run::default()
    };
    let m = &thread_summary(&run, 0).unwrap()[0];
    // union: [0, 1500] + [1600, 1800]
    assert_eq!(m.region_time, 1700e-9);
    // the task calls do not overlap: the union less their held time is their awaits' sum
    assert_eq!(m.await_time, Some((400.0 + 300.0 + 150.0) / 1e9));
    assert_eq!(m.task_await_time_sum, m.await_time);
    // the root outside [100, 600]: 500; task 0: 100; task 1: 300 + 50
    assert_eq!(m.held_time, Some((500.0 + 100.0 + 300.0 + 50.0) / 1e9));
    assert!(m.held_time.unwrap() <= m.region_time && m.region_time <= m.wall_time.unwrap());
    // per task nothing changes: each lane's own top-level calls
    let tasks = task_summary(&run, 0).unwrap();
    assert_eq!((tasks[0].held_time, tasks[0].await_time), (Some(100e-9), Some(400e-9)));
    assert_eq!((tasks[1].held_time, tasks[1].await_time), (Some(350e-9), Some(450e-9)));
}

/// A call on a thread's own lane does not own the task steps its thread ran while it was
/// open (the module body around `asyncio.run(main())`): its exclusive time is its duration
/// less its children's on its lane, less its task steps not inside those children; its
/// held time leaves them out too, and the thread's held time counts them once, as task
/// steps. Checked by hand on: the module body [0, 1000] (600 ns of task steps inside it),
/// its child `setup` [800, 900] (50 ns of them), `main` on task 0 [100, 700] awaiting
/// 100 ns, and 50 ns of task steps after the body (the thread: 650 ns in task steps).
#[test]
fn task_steps_are_not_the_exclusive_or_held_time_of_the_calls_around_them() {
    let with = |mut r: RegionCalls, w: &[i64], steps: &[i64]| {
        r.await_ns = Some(Int64Array::from(w.to_vec()));
        r.task_step_ns = Some(Int64Array::from(steps.to_vec()));
        r
    };
    let main_thread = ThreadRow { task_step_ns: 650, ..thread(0, "MainThread", 0, 2_000, 1) };
    let mut run = Run {
        region_names: vec!["__main__.<module>".into(), "setup".into(), "main".into()],
        regions: vec![
            with(row(0, 0, &[0], &[1000], Some(&[0]), Some(&[-1])), &[0], &[600]),
            with(row(1, 0, &[800], &[900], Some(&[0]), Some(&[-1])), &[0], &[50]),
            with(row(2, 0, &[100], &[700], Some(&[0]), Some(&[0])), &[100], &[0]),
        ],
        threads: vec![main_thread],
        tasks: vec![task(0, 0, "Task-1", "main")],
        num_ranks: 1,
        ..Run::default()
    };
    // per call, from the reconstruction: 1000 - 100 - (600 - 50); 100 - 50; main untouched
    let by_row: Vec<Vec<i64>> = exclusive_by_row(&run, 0).unwrap().into_iter().map(|(_, v)| v).collect();
    assert_eq!(by_row, vec![vec![350], vec![50], vec![600]]);
    // the totals stored at finalize (the streaming numbering) agree
    assign_call_ids(&mut run, 0, 0).unwrap();
    let totals: Vec<Option<i64>> = run.regions.iter().map(|r| r.exclusive_total_ns).collect();
    assert_eq!(totals, vec![Some(350), Some(50), Some(600)]);
    // held: duration - await - task steps
    let summary = rank_summary(&run, 0).unwrap();
    let held: Vec<Option<i64>> = summary.rows.iter().map(|r| r.held_ns()).collect();
    assert_eq!(held, vec![Some(400), Some(50), Some(500)]);
    // the thread: its own lane outside the steps (1000 - 600) plus every step (650), never
    // above its wall time (2000); its task waited 600 - 500 ns
    let m = &thread_summary(&run, 0).unwrap()[0];
    assert_eq!(m.task_step_time, Some(650e-9));
    assert_eq!(m.held_time, Some((1000.0 - 600.0 + 650.0) / 1e9));
    assert_eq!((m.await_time, m.task_await_time_sum), (Some(100e-9), Some(100e-9)));
    assert!(m.held_time.unwrap() <= m.wall_time.unwrap());
}

/// A task-step column whose calls do not nest their steps (a damaged file: the child's
/// steps exceed its parent's, so the parent is not among the calls with steps) is numbered
/// through the general reconstruction, with the same rule: the totals equal the per-call
/// values.
#[test]
fn stored_exclusive_totals_match_the_per_call_rule_on_any_step_column() {
    let with = |mut r: RegionCalls, steps: &[i64]| {
        r.await_ns = Some(Int64Array::from(vec![0; steps.len()]));
        r.task_step_ns = Some(Int64Array::from(steps.to_vec()));
        r
    };
    let mut run = Run {
        region_names: vec!["outer".into(), "inner".into()],
        regions: vec![
            with(row(0, 0, &[0], &[1000], Some(&[0]), Some(&[-1])), &[0]),
            with(row(1, 0, &[100, 400], &[300, 900], Some(&[0, 0]), Some(&[-1, -1])), &[150, 2_000]),
        ],
        threads: vec![thread(0, "MainThread", 0, 2_000, 1)],
        num_ranks: 1,
        ..Run::default()
    };
    let by_row: Vec<Vec<i64>> = exclusive_by_row(&run, 0).unwrap().into_iter().map(|(_, v)| v).collect();
    // inner: 200 - 150 and 500 - 500 (clamped to its duration); outer: 1000 - 700 + 650
    assert_eq!(by_row, vec![vec![950], vec![50, 0]]);
    assign_call_ids(&mut run, 0, 0).unwrap();
    let totals: Vec<Option<i64>> = run.regions.iter().map(|r| r.exclusive_total_ns).collect();
    assert_eq!(totals, vec![Some(950), Some(50)]);
}

/// `thread_summary()` of a run recorded without `track_threads` returns `[]` (as 0.7.5
/// does), and a note says why.
#[test]
fn no_thread_table_says_why() {
    let mut run = sample();
    let note = no_thread_table_note(&run, 1).expect("rank 1 has calls and no thread table");
    assert!(note.contains("recorded without track_threads") && note.contains("--track-threads"), "{note}");
    assert_eq!(thread_summary(&run, 1).unwrap(), vec![]);
    assert_eq!(no_thread_table_note(&run, 0), None, "rank 0 has a thread table");
    assert_eq!(no_thread_table_note(&run, 5), None, "no calls either: nothing to explain");
    run.threads.clear();
    assert!(no_thread_table_note(&run, 0).is_some());
}

/// The general reconstruction's ids, parents and exclusive totals per row: what the
/// streaming numbering at finalize must give.
fn expected_numbering(run: &Run, rank: u32, base: i64) -> Vec<(usize, Vec<i64>, Vec<i64>, i64)> {
    let (rows, calls) = rank_call_arrays(run, rank).unwrap();
    let mut out: Vec<(usize, Vec<i64>, Vec<i64>, i64)> =
        rows.iter().map(|&r| (r, vec![0; run.regions[r].len()], vec![0; run.regions[r].len()], 0)).collect();
    for id in 0..calls.len() {
        let (ri, ci) = (calls.region_index[id] as usize, calls.call_index[id] as usize);
        out[ri].1[ci] = base + id as i64;
        out[ri].2[ci] = if calls.parent[id] < 0 { -1 } else { base + calls.parent[id] as i64 };
        out[ri].3 += calls.exclusive_ns[id];
    }
    out
}

/// A random recording: `threads` threads (and, with `tasks`, task lanes) each entering and
/// leaving `regions` regions at coarse timestamps (ties, zero-length calls), some calls
/// crossing their parent; rows grouped by thread as the recorder writes them.
fn random_run(seed: u64, regions: u32, threads: i64, tasks: bool, crossing: bool) -> Run {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1;
    let mut rnd = move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    // per (region, thread): starts, ends, task ids
    type Calls = (Vec<i64>, Vec<i64>, Vec<i64>);
    let mut cols: Vec<Vec<Calls>> = (0..regions).map(|_| (0..threads).map(|_| Default::default()).collect()).collect();
    for t in 0..threads {
        let mut now = rnd(5) as i64;
        let mut open: Vec<(u32, usize)> = Vec::new();
        for _ in 0..300 {
            now += rnd(3) as i64; // 0: same timestamp
            if !open.is_empty() && (rnd(2) == 0 || open.len() > 5) {
                let k = if crossing && open.len() > 1 && rnd(10) == 0 { open.len() - 2 } else { open.len() - 1 };
                let (r, slot) = open.remove(k);
                cols[r as usize][t as usize].1[slot] = now;
            } else {
                let r = rnd(regions as u64) as u32;
                let c = &mut cols[r as usize][t as usize];
                c.0.push(now);
                c.1.push(-1);
                c.2.push(if tasks { rnd(3) as i64 - 1 } else { -1 });
                open.push((r, c.0.len() - 1));
            }
        }
        for (r, slot) in open {
            now += rnd(2) as i64;
            cols[r as usize][t as usize].1[slot] = now;
        }
    }
    let mut run =
        Run { region_names: (0..regions).map(|r| format!("r{r}")).collect(), num_ranks: 1, ..Default::default() };
    for (r, per_thread) in cols.into_iter().enumerate() {
        let (mut s, mut e, mut th, mut tk) = (vec![], vec![], vec![], vec![]);
        for (t, (a, b, k)) in per_thread.into_iter().enumerate() {
            th.extend(std::iter::repeat_n(t as i64, a.len()));
            s.extend(a);
            e.extend(b);
            tk.extend(k);
        }
        if !s.is_empty() {
            let lanes = (threads > 1 || tasks).then_some(&th[..]);
            run.regions.push(row(r as u32, 0, &s, &e, lanes, tasks.then_some(&tk[..])));
        }
    }
    run
}

/// Call ids at finalize come from a streaming merge, not the general reconstruction; ids,
/// parents, exclusive totals (set-aside calls included) are the same.
#[test]
fn streaming_call_ids_equal_the_reconstruction() {
    let mut checked = 0;
    for seed in 0..60u64 {
        for (regions, threads, tasks, crossing) in
            [(1, 1, false, false), (3, 1, false, false), (4, 3, false, true), (3, 2, true, true), (5, 4, true, false)]
        {
            let mut run = random_run(seed, regions, threads, tasks, crossing);
            let lanes = threads > 1 || tasks;
            let Ok(expected) = std::panic::catch_unwind(|| expected_numbering(&run, 0, 7)) else {
                // no lanes and crossing calls: both paths report the same nesting error
                assert!(assign_call_ids(&mut run, 0, 7).is_err());
                continue;
            };
            let n: usize = run.regions.iter().map(|r| r.len()).sum();
            assert_eq!(assign_call_ids(&mut run, 0, 7).unwrap(), 7 + n as i64);
            for (row, ids, parents, total) in expected {
                let r = &run.regions[row];
                assert_eq!(r.call_ids.as_ref().unwrap().to_vec(), ids, "seed {seed} row {row} lanes {lanes}");
                assert_eq!(r.parent_ids.as_ref().unwrap().to_vec(), parents, "seed {seed} row {row}");
                assert_eq!(r.exclusive_total_ns, Some(total), "seed {seed} row {row}");
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked}");
}

/// One rule for lane labels: `lane_label` and `LaneLabels` give the same strings.
#[test]
fn lane_label_is_one_rule() {
    let mut r = run("x", vec![]);
    r.threads = vec![ThreadRow { ident: 1, native_id: 2, ..ThreadRow::new(0, 0, "MainThread") }];
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
        threads: vec![ThreadRow { ident: 1, native_id: 2, end_ns: 200, ..ThreadRow::new(0, 0, "MainThread") }],
        num_ranks: 1,
        ..Run::default()
    }
}

/// One call that does not nest does not poison the whole rank: a generator decorated with
/// `@profile` and peeked inside a region crosses it. The crossing call is set aside (kept,
/// flagged, reported) and the rest is analysed (thread_summary, exclusive times, exports);
/// `build_call_arrays` itself still raises.
#[test]
fn a_call_that_does_not_nest_is_set_aside_not_fatal() {
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

/// Without lanes a crossing still means interleaved untracked threads:
/// the page promises NestingError there.
#[test]
fn untracked_crossings_stay_an_error() {
    let run = peeked_generator_run(false);
    assert!(rank_call_arrays(&run, 0).unwrap_err().0.contains("not properly nested"));
}

/// The set-aside note names the likely cause from the lanes of the crossing calls: on a thread's lane of a run without
/// task ids a generator or untracked event-loop tasks (`--track-async`); on a task lane a
/// generator only; on the unknown lane (no thread id) threads recorded without
/// `--track-threads`.
#[test]
fn set_aside_note_names_the_likely_cause() {
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

/// A threaded program run without `--track-threads`: the note of an untracked rank whose
/// calls cross names the likely cause and the flag, not only a missing `sp_end`; a tracked
/// rank's note does not.
#[test]
fn untracked_crossing_note_names_track_threads() {
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

/// A damaged thread table (negative `cpu_ns`, `end_ns = 0`, thread ids without a row): the
/// summary's rule (the file-level test is in `tests/python/test_read_robustness.py`).
/// Unsound times are `None` (never negative), calls of a thread id without a row get a row
/// `thread N` of their own, and `thread_table_note` names each bad row and the problem.
#[test]
fn a_damaged_thread_table_gives_unknown_times_and_a_note() {
    use scope_profiler_analysis::thread_table_note;
    let thread = |index: i64, name: &str, start_ns: i64, end_ns: i64, cpu_ns: i64, cpu_start_ns: i64| ThreadRow {
        start_ns,
        end_ns,
        cpu_ns,
        cpu_start_ns,
        ..ThreadRow::new(0, index, name)
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

/// A damaged await column (a value below 0 or above its call's duration) counts each call's
/// await within [0, duration] in the region summary, as the thread summary does: held time
/// is never negative.
#[test]
fn region_await_is_clamped_to_each_calls_duration() {
    let mut r = RegionCalls::new(0, 0, Int64Array::from(vec![0, 100, 300]), Int64Array::from(vec![50, 200, 400]));
    r.await_ns = Some(Int64Array::from(vec![-7, 1_000_000, 30]));
    let run = Run { region_names: vec!["parse".into()], regions: vec![r], num_ranks: 1, ..Run::default() };
    let row = &scope_profiler_analysis::rank_summary(&run, 0).unwrap().rows[0];
    // 0 + 100 (the duration, not 1e6) + 30
    assert_eq!((row.total_ns, row.await_ns, row.held_ns()), (250, Some(130), Some(120)));
}
