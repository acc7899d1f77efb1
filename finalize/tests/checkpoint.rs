//! Recorder -> checkpoint -> Run, driven without Python. The crate contract (no thread
//! inside enter/exit while a reader runs) is met by joining every recording thread before
//! the snapshot.
use std::sync::Arc;
use std::thread;

use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_finalize::{checkpoint, run_from_snapshot, Checkpoint, CheckpointRequest, Snapshot};
use scope_profiler_recorder::{
    now_ns, Recorder, RegionColumns, RegionMeta, RegionTable, TaskKind, TaskRecord, ThreadInfo, ThreadState,
};

/// Wait until the clock has moved, so every recorded timestamp is distinct.
fn tick() {
    let t = now_ns();
    while now_ns() == t {}
}

fn state(rec: &Recorder, info: ThreadInfo) -> &ThreadState {
    let (st, created) = rec.register_current_thread(info);
    assert!(created);
    // SAFETY: the thread-local list keeps the state alive as long as the recorder.
    unsafe { &*Arc::as_ptr(&st) }
}

fn call(s: &ThreadState, region: u32, inside: impl FnOnce()) {
    tick();
    s.enter(region, false);
    tick();
    inside();
    tick();
    assert!(s.exit(region));
    tick();
}

fn no_lock(
    write: scope_profiler_finalize::WriteJob<'_>,
) -> Result<(), scope_profiler_formats::hdf5::write::WriteFailure> {
    write()
}

fn req(metadata: Vec<(String, MetaValue)>, start_time_ns: i64, rewind: bool, base: i64) -> CheckpointRequest<'static> {
    CheckpointRequest {
        metadata,
        start_time_ns,
        rewind,
        call_id_base: base,
        write_to: None,
        close_open_at: None,
        foreign: Vec::new(),
        metadata_scopes: None,
    }
}

/// One completed call as the test sees it: (region name, start, end, thread).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Call<'a> {
    name: &'a str,
    start: i64,
    end: i64,
    thread: i64,
}

/// Every call of the raw recorder columns, named from `table`.
fn calls_of<'a>(cols: &'a [RegionColumns], table: &'a [RegionMeta]) -> Vec<Call<'a>> {
    let mut out = Vec::new();
    for c in cols {
        for i in 0..c.starts.len() {
            out.push(Call {
                name: &table[c.region as usize].name,
                start: c.starts[i],
                end: c.ends[i],
                thread: c.thread_ids[i],
            });
        }
    }
    out
}

/// Naive call graph: ids by (start, -end) order from `base`; parent = the innermost other
/// call on the same thread that contains the call; exclusive = duration - children's.
fn expected_graph(calls: &[Call<'_>], base: i64) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by_key(|&i| (calls[i].start, -calls[i].end));
    let mut id = vec![0i64; calls.len()];
    for (pos, &i) in order.iter().enumerate() {
        id[i] = base + pos as i64;
    }
    let parent_of = |i: usize| -> Option<usize> {
        (0..calls.len())
            .filter(|&j| j != i && calls[j].thread == calls[i].thread)
            .filter(|&j| calls[j].start <= calls[i].start && calls[i].end <= calls[j].end)
            .max_by_key(|&j| calls[j].start)
    };
    let parents: Vec<Option<usize>> = (0..calls.len()).map(parent_of).collect();
    let parent_ids = parents.iter().map(|p| p.map_or(-1, |j| id[j])).collect();
    let exclusive = (0..calls.len())
        .map(|i| {
            let children: i64 =
                (0..calls.len()).filter(|&j| parents[j] == Some(i)).map(|j| calls[j].end - calls[j].start).sum();
            calls[i].end - calls[i].start - children
        })
        .collect();
    (id, parent_ids, exclusive)
}

/// The run's calls in row order, with their call id, parent id and the row's position.
fn run_calls(run: &Run) -> Vec<(Call<'_>, i64, i64, usize)> {
    let mut out = Vec::new();
    for (k, r) in run.regions.iter().enumerate() {
        let ids = r.call_ids.as_ref().expect("call ids").to_vec();
        let parents = r.parent_ids.as_ref().expect("parent ids").to_vec();
        let threads = r.thread_ids.as_ref().expect("thread ids");
        for i in 0..r.len() {
            let c = Call {
                name: &run.region_names[r.region as usize],
                start: r.start_ns.value(i),
                end: r.end_ns.value(i),
                thread: threads.value(i),
            };
            out.push((c, ids[i], parents[i], k));
        }
    }
    out
}

#[test]
fn three_threads_checkpoint_matches_an_independent_call_graph() {
    let rec = Arc::new(Recorder::new(4, true));
    let table = Arc::new(RegionTable::new());
    let (outer, _) = table.get_or_create("outer", vec!["io".into()]);
    let (inner, _) = table.get_or_create("inner", vec![]);
    let (_unused, _) = table.get_or_create("unused", vec![]);
    let (open, _) = table.get_or_create("open", vec![]);
    table.set_source(outer, "app.py".into(), Some(12), Some("with outer:".into()));

    let before_main = now_ns();
    let main = state(&rec, ThreadInfo { ident: 100, native_id: 1000, name: "Main".into(), daemon: false });
    let after_main = now_ns();
    tick();
    main.enter(open, false); // stays open across the first checkpoint
    call(main, outer, || {
        call(main, inner, || {});
        call(main, inner, || {});
    });
    call(main, inner, || {});

    // workers one after the other, so their thread indices are 1 and 2
    let mut worker_cpu = 0;
    for k in 1..=2i64 {
        let (rec, table) = (Arc::clone(&rec), Arc::clone(&table));
        let cpu = thread::spawn(move || {
            let (outer, _) = table.get_or_create("outer", vec!["ignored".into()]);
            let (inner, _) = table.get_or_create("inner", vec![]);
            let s =
                state(&rec, ThreadInfo { ident: 100 + k, native_id: 1000 + k, name: format!("w{k}"), daemon: k == 2 });
            for _ in 0..k {
                call(s, outer, || call(s, inner, || {}));
            }
            // worker 1 exits as CPython's exit hook would mark it; worker 2 stays "alive"
            if k == 1 {
                let record = s.record().expect("tracked");
                record.mark_exited();
                record.cpu_ns()
            } else {
                0
            }
        })
        .join()
        .unwrap();
        if k == 1 {
            worker_cpu = cpu;
        }
    }

    let origin = before_main - 500;
    let metadata = vec![("start_time_ns".to_string(), MetaValue::Int(origin)), ("mpi_size".into(), MetaValue::Int(1))];
    // SAFETY: every recording thread joined; this thread is the only one left.
    let raw = unsafe { rec.snapshot(table.len()) };
    let records = rec.thread_records();
    let done: Checkpoint =
        unsafe { checkpoint(&rec, &table, req(metadata.clone(), origin, true, 7), no_lock) }.unwrap();
    let run = &done.run;
    assert_eq!(done.warning, None);

    // rows: regions with completed calls, registration order, renumbered densely
    assert_eq!(run.region_names, vec!["outer", "inner"]);
    assert_eq!(run.regions.len(), 2);
    assert_eq!(run.num_ranks, 1);
    assert_eq!(run.metadata, metadata);
    for (k, r) in run.regions.iter().enumerate() {
        assert_eq!(r.region, k as u32);
        assert_eq!(r.rank, 0);
        assert_eq!(r.start_ns.values().to_vec(), raw[k].starts);
        assert_eq!(r.end_ns.values().to_vec(), raw[k].ends);
        assert_eq!(r.thread_ids.as_ref().unwrap().values().to_vec(), raw[k].thread_ids);
        assert!(r.task_ids.is_none() && r.await_ns.is_none() && r.gpu_ns.is_none());
    }
    // outer: 1 call on main, 1 on w1, 2 on w2; inner: 3 on main, then 1 and 2
    assert_eq!(raw[0].thread_ids, vec![0, 1, 2, 2]);
    assert_eq!(raw[1].thread_ids, vec![0, 0, 0, 1, 2, 2]);
    assert!(raw[0].starts[0] > after_main && raw.iter().all(|c| c.starts.iter().zip(&c.ends).all(|(s, e)| s < e)));
    let o = &run.regions[0];
    assert_eq!(o.tags, vec!["io"]);
    assert_eq!(o.source_file.as_deref(), Some("app.py"));
    assert_eq!(o.source_line, Some(12));
    assert_eq!(o.source_text.as_deref(), Some("with outer:"));
    assert_eq!(run.regions[1].source_file, None);

    // call graph against the naive computation
    let meta = table.lock().clone();
    let calls = calls_of(&raw, &meta);
    let (ids, parents, exclusive) = expected_graph(&calls, 7);
    let got = run_calls(run);
    assert_eq!(got.len(), calls.len());
    assert_eq!(done.next_call_id, 7 + calls.len() as i64);
    let mut totals = [0i64; 2];
    for (i, (c, id, parent, row)) in got.iter().enumerate() {
        assert_eq!(*c, calls[i]);
        assert_eq!(*id, ids[i], "call id of {c:?}");
        assert_eq!(*parent, parents[i], "parent of {c:?}");
        totals[*row] += exclusive[i];
    }
    assert_eq!(run.regions[0].exclusive_total_ns, Some(totals[0]));
    assert_eq!(run.regions[1].exclusive_total_ns, Some(totals[1]));
    // main's three inner calls: two children of outer, one root
    assert_eq!(parents[4..7], [ids[0], ids[0], -1]);

    // thread table relative to the origin
    assert_eq!(run.threads.len(), 3);
    for (t, r) in run.threads.iter().zip(&records) {
        assert_eq!(t.rank, 0);
        assert_eq!(t.index, r.index as i64);
        assert_eq!(t.ident, 100 + t.index);
        assert_eq!(t.native_id, 1000 + t.index);
        assert_eq!(t.start_ns, r.start_ns - origin);
    }
    assert_eq!(run.threads.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Main", "w1", "w2"]);
    assert_eq!(run.threads.iter().map(|t| t.daemon).collect::<Vec<_>>(), [false, false, true]);
    assert!(run.threads[0].start_ns >= before_main - origin && run.threads[0].start_ns <= after_main - origin);
    assert_eq!(run.threads[0].end_ns, -1);
    assert_eq!(run.threads[1].end_ns, records[1].end_ns() - origin);
    assert!(run.threads[1].end_ns > run.threads[1].start_ns);
    assert_eq!(run.threads[1].cpu_ns, worker_cpu);
    assert_eq!(run.threads[2].end_ns, -1);
    assert!(run.threads[0].cpu_ns > 0);
    assert!(run.tasks.is_empty());

    // rewound: the next checkpoint reports only the call open across the first one
    tick();
    assert!(main.exit(open));
    let again = unsafe { checkpoint(&rec, &table, req(vec![], origin, false, done.next_call_id), no_lock) }.unwrap();
    assert_eq!(again.run.region_names, vec!["open"]);
    let r = &again.run.regions[0];
    assert_eq!(r.len(), 1);
    assert!(r.start_ns.value(0) < raw[0].starts[0] && r.end_ns.value(0) > raw[1].ends[2]);
    assert_eq!(r.call_ids.as_ref().unwrap().to_vec(), vec![done.next_call_id]);
    assert_eq!(r.parent_ids.as_ref().unwrap().to_vec(), vec![-1]);
    assert_eq!(r.exclusive_total_ns, Some(r.end_ns.value(0) - r.start_ns.value(0)));
    assert_eq!(again.next_call_id, done.next_call_id + 1);
    // not rewound this time: the same call is reported again
    let third = unsafe { checkpoint(&rec, &table, req(vec![], origin, false, 0), no_lock) }.unwrap();
    assert_eq!(third.run.regions[0].start_ns, r.start_ns);
}

#[test]
fn calls_that_do_not_nest_give_the_warning_and_no_call_graph() {
    let rec = Recorder::new(4, false);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let (b, _) = table.get_or_create("b", vec![]);
    let s = state(&rec, ThreadInfo::default());
    tick();
    s.enter(a, false);
    tick();
    s.enter(b, false);
    tick();
    assert!(s.exit(a)); // a closes while b is open: [a   (b   a)   b]
    tick();
    assert!(s.exit(b));
    let done = unsafe { checkpoint(&rec, &table, req(vec![], 0, true, 40), no_lock) }.unwrap();
    let warning = done.warning.expect("nesting failure reported");
    assert!(!warning.is_empty());
    assert_eq!(done.next_call_id, 40);
    assert_eq!(done.run.regions.len(), 2);
    for r in &done.run.regions {
        assert!(r.call_ids.is_none() && r.parent_ids.is_none() && r.exclusive_total_ns.is_none());
        assert!(r.thread_ids.is_none(), "untracked recorder: no thread column");
    }
    assert!(done.run.threads.is_empty());
    let (sa, ea) = (done.run.regions[0].start_ns.value(0), done.run.regions[0].end_ns.value(0));
    let (sb, eb) = (done.run.regions[1].start_ns.value(0), done.run.regions[1].end_ns.value(0));
    assert!(sa < sb && sb < ea && ea < eb);
}

#[test]
fn empty_recorder_gives_an_empty_run_and_keeps_the_base() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    table.get_or_create("never", vec![]);
    let meta = vec![("mpi_size".to_string(), MetaValue::Int(4))];
    let done = unsafe { checkpoint(&rec, &table, req(meta, 0, true, 5), no_lock) }.unwrap();
    assert!(done.run.regions.is_empty() && done.run.region_names.is_empty());
    assert_eq!(done.run.num_ranks, 0);
    assert_eq!((done.next_call_id, done.warning), (5, None));
}

#[test]
fn num_ranks_follows_mpi_size_and_task_columns_are_kept() {
    let rec = Recorder::with_tasks(4, true, true);
    let table = RegionTable::new();
    let (r, _) = table.get_or_create("step", vec![]);
    let s = state(&rec, ThreadInfo { name: "Main".into(), ..Default::default() });
    let task = rec.new_task(TaskKind::Task, "Task-1".into(), "main".into(), 0);
    let step_in = |t: &Arc<TaskRecord>, f: &dyn Fn()| {
        t.enter_step(now_ns(), s.index() as i64);
        let prev = s.set_current(Arc::as_ptr(t));
        f();
        s.set_current(prev);
        t.leave_step(now_ns());
    };
    step_in(&task, &|| {
        tick();
        s.enter(r, false);
        tick();
    });
    std::thread::sleep(std::time::Duration::from_millis(2));
    step_in(&task, &|| {
        tick();
        assert!(s.exit(r));
    });
    call(s, r, || {}); // outside any task
    task.finish();
    let origin = 1_000;
    let meta = vec![("mpi_size".to_string(), MetaValue::Int(4))];
    let raw = unsafe { rec.snapshot(1) };
    let done = unsafe { checkpoint(&rec, &table, req(meta, origin, true, 0), no_lock) }.unwrap();
    assert_eq!(done.run.num_ranks, 4);
    let row = &done.run.regions[0];
    assert_eq!(row.task_ids.as_ref().unwrap().values().to_vec(), vec![0, -1]);
    assert_eq!(row.task_ids.as_ref().unwrap().values().to_vec(), raw[0].task_ids);
    assert_eq!(row.await_ns.as_ref().unwrap().values().to_vec(), raw[0].await_ns);
    assert!(raw[0].await_ns[0] >= 2_000_000 && raw[0].await_ns[1] == 0);
    assert_eq!(done.run.tasks.len(), 1);
    let t = &done.run.tasks[0];
    assert_eq!((t.rank, t.index, t.thread_index), (0, 0, 0));
    assert_eq!((t.kind.as_str(), t.name.as_str(), t.coro_name.as_str()), ("task", "Task-1", "main"));
    assert_eq!(t.steps, 2);
    assert_eq!(t.running_ns, task.running_ns());
    assert_eq!(t.suspended_ns, task.suspended_ns());
    assert_eq!(t.done_ns, task.done_ns() - origin);
    assert_eq!(t.created_ns, rec.task_rows(origin)[0].created_ns);
    // the task lane and the bare lane are separate lanes: both calls are roots
    assert_eq!(row.parent_ids.as_ref().unwrap().to_vec(), vec![-1, -1]);
}

#[test]
fn write_to_publishes_the_run_through_release() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = state(&rec, ThreadInfo { name: "Main".into(), ..Default::default() });
    call(s, a, || {});
    call(s, a, || {});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.h5");
    let mut released = 0;
    let request = CheckpointRequest {
        metadata: vec![("start_time_ns".into(), MetaValue::Int(0))],
        start_time_ns: 0,
        rewind: true,
        call_id_base: 0,
        write_to: Some(&path),
        close_open_at: None,
        foreign: Vec::new(),
        metadata_scopes: None,
    };
    let done = unsafe {
        checkpoint(&rec, &table, request, |write| {
            released += 1;
            write()
        })
    }
    .unwrap();
    assert_eq!(released, 1);
    let back = scope_profiler_formats::read_h5(&path).unwrap();
    assert_eq!(back.region_names, vec!["a"]);
    assert_eq!(back.regions[0].start_ns, done.run.regions[0].start_ns);
    assert_eq!(back.regions[0].end_ns, done.run.regions[0].end_ns);
    assert_eq!(back.regions[0].call_ids.as_ref().unwrap().to_vec(), vec![0, 1]);

    // an unwritable path is an error naming the file, not a panic
    call(s, a, || {});
    let bad = dir.path().join("missing-dir").join("run.h5");
    let request = CheckpointRequest { write_to: Some(&bad), ..Default::default() };
    let err = unsafe { checkpoint(&rec, &table, request, no_lock) }.unwrap_err();
    assert!(err.to_string().contains("run.h5"), "{err}");
}

#[test]
fn a_snapshot_naming_an_unknown_region_is_an_error() {
    let snap = Snapshot {
        regions: vec![RegionColumns {
            region: 3,
            starts: vec![1],
            ends: vec![2],
            thread_ids: vec![0],
            ..Default::default()
        }],
        ..Default::default()
    };
    let table = vec![RegionMeta::named("a")];
    let err = run_from_snapshot(snap, &table, vec![]).unwrap_err();
    assert_eq!((err.id, err.regions), (3, 1));
}

/// Issue 11 (per-call metadata): a checkpoint gives the calls inside `metadata()` scopes
/// their values (two threads: the rule is time, as the reference's), retires the scopes with
/// its calls, and keeps them when it keeps its calls (`rewind` false: `scopes_taken` says
/// how many to retire later).
#[test]
fn metadata_scopes_are_applied_and_retired_with_the_calls() {
    use scope_profiler_finalize::{MetadataScope, MetadataScopes};
    let rec = Arc::new(Recorder::new(8, true));
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = state(&rec, ThreadInfo { name: "Main".into(), ..Default::default() });
    let store = MetadataScopes::default();
    call(s, a, || {}); // before any scope
    let outer_start = now_ns();
    call(s, a, || {});
    let inner_start = now_ns();
    let rec2 = Arc::clone(&rec);
    thread::spawn(move || {
        // SAFETY: as `state`: the recorder outlives the thread's use of it
        let s2 = unsafe { &*Arc::as_ptr(&rec2.register_current_thread(ThreadInfo::default()).0) };
        call(s2, a, || {});
    })
    .join()
    .unwrap();
    store.push(MetadataScope::new(inner_start, now_ns(), r#"{"k": 1, "inner": true}"#).unwrap());
    store.push(MetadataScope::new(outer_start, now_ns(), r#"{"k": 0, "s": "x"}"#).unwrap());
    let keep = CheckpointRequest { metadata_scopes: Some(&store), ..req(vec![], 0, false, 0) };
    let done = unsafe { checkpoint(&rec, &table, keep, no_lock) }.unwrap();
    // rows per thread: Main's two calls, then the other thread's one
    assert_eq!(
        done.run.regions[0].event_metadata.as_deref(),
        Some(r#"[{}, {"k": 0, "s": "x"}, {"k": 1, "s": "x", "inner": true}]"#)
    );
    assert_eq!((done.scopes_taken, store.len()), (2, 2), "kept with the calls");
    let retire = CheckpointRequest { metadata_scopes: Some(&store), ..req(vec![], 0, true, 0) };
    let again = unsafe { checkpoint(&rec, &table, retire, no_lock) }.unwrap();
    assert_eq!(again.run.regions[0].event_metadata, done.run.regions[0].event_metadata);
    assert!(store.is_empty(), "retired with the calls");
    let empty = unsafe { checkpoint(&rec, &table, req(vec![], 0, true, 0), no_lock) }.unwrap();
    assert!(empty.run.regions.is_empty());
}
