//! Rank-level derivations on a hand-built Run: call ids, exclusive per row, thread summary,
//! lane labels.
use arrow_array::Int64Array;
use scope_profiler_analysis::*;

fn row(region: u32, rank: u32, s: &[i64], e: &[i64], threads: Option<&[i64]>, tasks: Option<&[i64]>) -> RegionCalls {
    RegionCalls {
        region,
        rank,
        start_ns: Int64Array::from(s.to_vec()),
        end_ns: Int64Array::from(e.to_vec()),
        gpu_ns: None,
        call_ids: None,
        parent_ids: None,
        thread_ids: threads.map(|t| Int64Array::from(t.to_vec())),
        task_ids: tasks.map(|t| Int64Array::from(t.to_vec())),
        await_ns: None,
        source_file: None,
        source_line: None,
        source_text: None,
        tags: vec![],
        event_metadata: None,
        exclusive_total_ns: None,
        stored: None,
    }
}

fn thread(index: i64, name: &str, start: i64, end: i64, cpu: i64) -> ThreadRow {
    ThreadRow {
        rank: 0,
        index,
        ident: 0,
        native_id: 0,
        daemon: false,
        start_ns: start,
        end_ns: end,
        cpu_ns: cpu,
        name: name.into(),
    }
}

fn task(index: i64, thread_index: i64, name: &str, coro: &str) -> TaskRow {
    TaskRow {
        rank: 0,
        index,
        thread_index,
        created_ns: 0,
        done_ns: -1,
        steps: 1,
        running_ns: 0,
        suspended_ns: 0,
        kind: "task".into(),
        name: name.into(),
        coro_name: coro.into(),
    }
}

/// outer [0,100] on main; inner calls on main and worker; a task on main.
fn sample() -> Run {
    Run {
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

/// A crossing call on a tracked rank is set aside (issue 13 item 2): ids are assigned, the
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
    assert_eq!((main.index, main.name.as_str(), main.alive, main.wall_time), (0, "MainThread", true, None));
    assert_eq!(main.num_calls, 4);
    // roots: outer (100 ns, bare lane) + the task's call (40 ns, task on thread 0)
    assert_eq!(main.region_time, 140.0 / 1e9);
    assert_eq!(main.cpu_time, 0.005);
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
