//! Recorder -> checkpoint -> Run, driven without Python. The crate contract (no thread
//! inside enter/exit while a reader runs) is met by joining every recording thread before
//! the snapshot.
use std::sync::Arc;
use std::thread;

use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_finalize::{
    checkpoint, run_from_snapshot, Checkpoint, CheckpointError, CheckpointRequest, Snapshot,
};
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

/// Per-call metadata: a checkpoint gives the calls inside `metadata()` scopes
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

fn main_state(rec: &Recorder) -> &ThreadState {
    let (st, _) = rec.register_current_thread(ThreadInfo { name: "Main".into(), ..Default::default() });
    // SAFETY: the thread-local list keeps the state alive as long as the recorder.
    unsafe { &*Arc::as_ptr(&st) }
}

fn timed_call(s: &ThreadState, region: u32) {
    let t = now_ns();
    s.enter(region, false);
    while now_ns() == t {}
    assert!(s.exit(region));
}

fn request(path: &std::path::Path) -> CheckpointRequest<'_> {
    CheckpointRequest {
        metadata: vec![("start_time_ns".into(), MetaValue::Int(0))],
        start_time_ns: 0,
        rewind: true,
        call_id_base: 0,
        write_to: Some(path),
        close_open_at: None,
        foreign: Vec::new(),
        metadata_scopes: None,
    }
}

/// A failed write keeps the run: the calls are retired only once the file is published (not
/// before it is written, which would leave a retry an empty profile): the failure carries the run and its errno,
/// the retry writes every call (also those recorded while the failed write ran), and a
/// call recorded during a successful write is kept for the next checkpoint.
#[test]
fn a_failed_write_keeps_every_call_for_the_retry() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = main_state(&rec);
    for _ in 0..3 {
        timed_call(s, a);
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing").join("run.h5");
    // the write runs "with the lock released": a call is recorded meanwhile
    let err = unsafe {
        checkpoint(&rec, &table, request(&missing), |write| {
            timed_call(s, a);
            write()
        })
    }
    .unwrap_err();
    let CheckpointError::Write { failure, unwritten } = err else { panic!("not a write error") };
    assert_eq!(failure.errno, Some(libc::ENOENT), "{failure}");
    assert!(failure.to_string().contains("run.h5"), "{failure}");
    assert_eq!(unwritten.run.regions[0].len(), 3, "the failed checkpoint still reports its run");
    assert_eq!(unwritten.next_call_id, 3);
    assert!(!missing.exists());

    let good = dir.path().join("run.h5");
    let done = unsafe {
        checkpoint(&rec, &table, request(&good), |write| {
            timed_call(s, a); // recorded during the successful write: kept for the next checkpoint
            write()
        })
    }
    .unwrap();
    assert_eq!(done.run.regions[0].len(), 4, "3 before the failure + 1 during it");
    let back = scope_profiler_formats::read_h5(&good).unwrap();
    assert_eq!(back.regions[0].len(), 4);
    assert_eq!(back.regions[0].start_ns, done.run.regions[0].start_ns);
    assert_eq!(back.regions[0].end_ns, done.run.regions[0].end_ns);
    assert_eq!(back.regions[0].call_ids.as_ref().unwrap().to_vec(), vec![0, 1, 2, 3]);

    let next = dir.path().join("next.h5");
    let done = unsafe { checkpoint(&rec, &table, request(&next), |write| write()) }.unwrap();
    assert_eq!(done.run.regions[0].len(), 1, "only the call recorded during the last write");
    assert!(done.run.regions[0].start_ns.value(0) > back.regions[0].end_ns.value(3));
}

/// The OS error of each kind of refused target reaches the caller.
#[test]
fn write_failures_carry_their_errno() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    timed_call(main_state(&rec), a);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    for (target, errno) in [
        (dir.path().to_path_buf(), libc::EISDIR),
        (file.join("run.h5"), libc::ENOTDIR),
        (dir.path().join("no").join("run.h5"), libc::ENOENT),
    ] {
        let err = unsafe { checkpoint(&rec, &table, request(&target), |write| write()) }.unwrap_err();
        let CheckpointError::Write { failure, unwritten } = err else { panic!("not a write error") };
        assert_eq!(failure.errno, Some(errno), "{target:?}: {failure}");
        assert_eq!(unwritten.run.regions[0].len(), 1, "{target:?}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

/// Opt-in streaming, so that a SIGKILL or the OOM killer does not lose everything: a flush
/// appends the completed calls to the sidecar and retires exactly those (a call recorded
/// during the append stays buffered, a call open across it is taken once it completes); the
/// checkpoint with the sidecar's frames writes every call once, nested as recorded.
#[test]
fn flushed_and_buffered_calls_make_the_file_once() {
    use scope_profiler_finalize::checkpoint_with_prior;
    use scope_profiler_finalize::stream::{flush, Flushed, SidecarWriter};
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (outer, _) = table.get_or_create("outer", vec![]);
    let (inner, _) = table.get_or_create("inner", vec![]);
    let s = main_state(&rec);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run.h5");
    let mut side = SidecarWriter::new(dir.path().join(".run.h5.partial"));
    s.enter(outer, false); // open across the flush
    for _ in 0..3 {
        timed_call(s, inner);
    }
    let meta = || vec![("start_time_ns".to_string(), MetaValue::Int(0))];
    let flushed = unsafe {
        flush(&rec, &table, 0, meta(), &mut side, |job| {
            timed_call(s, inner); // recorded while the frame is appended (GIL released)
            job()
        })
    }
    .unwrap();
    assert_eq!(flushed, Flushed::Frame { calls: 3 });
    assert_eq!(side.frames(), 1);
    assert_eq!(unsafe { rec.snapshot(2) }[0].starts.len(), 1, "only the call of the append is buffered");
    // nothing new: no frame
    let frames_before = side.frames();
    assert_eq!(unsafe { flush(&rec, &table, 0, meta(), &mut side, |job| job()) }.unwrap(), Flushed::Frame { calls: 1 });
    assert_eq!(unsafe { flush(&rec, &table, 0, meta(), &mut side, |job| job()) }.unwrap(), Flushed::Nothing);
    assert_eq!(side.frames(), frames_before + 1);
    timed_call(s, inner);
    assert!(s.exit(outer));
    let prior = side.read_back().unwrap();
    assert!(prior.stopped.is_none());
    let done = unsafe { checkpoint_with_prior(&rec, &table, request(&target), prior.frames, |write| write()) }.unwrap();
    side.remove();
    assert!(!dir.path().join(".run.h5.partial").exists());
    assert!(done.warning.is_none());
    let back = scope_profiler_formats::read_h5(&target).unwrap();
    assert_eq!(back.region_names, vec!["outer", "inner"], "region-table order, as without streaming");
    assert_eq!((back.regions[0].len(), back.regions[1].len()), (1, 5));
    let starts = back.regions[1].start_ns.values().to_vec();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "entry order: {starts:?}");
    let outer_id = back.regions[0].call_ids.as_ref().unwrap().to_vec()[0];
    assert_eq!(back.regions[1].parent_ids.as_ref().unwrap().to_vec(), vec![outer_id; 5]);
    assert_eq!(unsafe { rec.snapshot(2) }.len(), 0, "everything retired once written");
}

/// A sidecar whose writer runs (this process) is not recovered; its frames are read up to a
/// torn one (never failing on a torn last frame) and numbered. (Recovery of a killed
/// process's sidecar end to end: `tests/python/test_recovery.py`.)
#[test]
fn recover_stops_at_a_torn_frame_and_leaves_a_live_writers_sidecar() {
    use scope_profiler_finalize::stream::{flush, pending_sidecar, recover, recover_run, RecoverError, SidecarWriter};
    use scope_profiler_formats::hdf5::working_files::sidecar_path;
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = main_state(&rec);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run.h5");
    let path = sidecar_path(&target, std::process::id());
    let mut side = SidecarWriter::new(path.clone());
    for n in [2, 3] {
        for _ in 0..n {
            timed_call(s, a);
        }
        unsafe { flush(&rec, &table, 0, vec![], &mut side, |job| job()) }.unwrap();
    }
    assert_eq!(pending_sidecar(&target), None, "its writer (this process) is alive");
    assert!(matches!(recover(&target, None, None), Err(RecoverError::Nothing(m)) if m.contains("still writing")));
    let whole = std::fs::read(&path).unwrap();
    std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
    assert!(
        matches!(recover(&target, Some(&path), None), Err(RecoverError::Nothing(m)) if m.contains("still being written"))
    );
    let r = recover_run(&path).unwrap();
    assert_eq!((r.frames, r.calls), (1, 2));
    assert!(r.stopped.as_deref().unwrap().contains("frame 1 is truncated"), "{:?}", r.stopped);
    assert_eq!(r.run.regions[0].call_ids.as_ref().unwrap().to_vec(), vec![0, 1]);
    assert_eq!(r.run.meta("recovered_from"), Some(&MetaValue::Str(path.file_name().unwrap().to_string_lossy().into())));
}

/// Temp files of a killed write do not stay forever: a publication removes the
/// temporary files of dead writers of this namespace in its directory once they are a few
/// seconds old; a live writer's, a young one and one of another namespace stay.
#[test]
fn publication_removes_dead_writers_temp_files() {
    use scope_profiler_formats::hdf5::working_files::process_tag;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let tag = process_tag();
    let other_tag = format!("{}{}", if tag.starts_with('0') { '1' } else { '0' }, &tag[1..]);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let make = |name: String, aged: bool| {
        let p = dir.path().join(name);
        let f = std::fs::File::create(&p).unwrap();
        if aged {
            f.set_modified(old).unwrap();
        }
        p
    };
    let gone = make(format!(".run.h5.{tag}-{dead}.Ab3xZ9.tmp"), true);
    let live = make(format!(".run.h5.{tag}-{}.Ab3xZ9.tmp", std::process::id()), true);
    let young = make(format!(".run.h5.{tag}-{dead}.Qq3xZ9.tmp"), false);
    let foreign = make(format!(".run.h5.{other_tag}-{dead}.Ab3xZ9.tmp"), true);
    let stale_side = make(format!(".old.h5.{tag}-{dead}.partial"), true);
    let pending_side = make(format!(".new.h5.{tag}-{dead}.partial"), true);
    make("old.h5".into(), false); // newer than its sidecar: that one is stale
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    timed_call(main_state(&rec), a);
    unsafe { checkpoint(&rec, &table, request(&dir.path().join("run.h5")), |write| write()) }.unwrap();
    assert!(!gone.exists() && !stale_side.exists());
    for kept in [&live, &young, &foreign, &pending_side] {
        assert!(kept.exists(), "{kept:?}");
    }
    let ours = format!("-{}.", std::process::id());
    let mine: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n.contains(&ours))
        .collect();
    assert_eq!(mine.len(), 1, "the publication's own temp file became run.h5: {mine:?}");
}

/// Regions still open at `finalize()` (a worker blocked inside a region when the session
/// ends) do not vanish without a word: every checkpoint lists the open calls;
/// the end of a recording (`close_open_at`) puts them in the run as calls ending then,
/// flagged in their per-call metadata; a checkpoint leaves them open for a later one.
#[test]
fn calls_open_at_the_end_are_reported_and_closed_into_the_run() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (outer, _) = table.get_or_create("outer", vec![]);
    let (blocked, _) = table.get_or_create("blocked", vec![]);
    let s = main_state(&rec);
    s.enter(outer, false);
    timed_call(s, blocked); // one completed call of "blocked"
    s.enter(blocked, false); // and one still open
    let entered = now_ns();
    let req = |close: Option<i64>| CheckpointRequest { rewind: false, close_open_at: close, ..Default::default() };

    let checkpoint_only = unsafe { checkpoint(&rec, &table, req(None), |w| w()) }.unwrap();
    let names: Vec<&str> = checkpoint_only.open.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["outer", "blocked"]);
    assert_eq!(checkpoint_only.run.region_names, ["blocked"]);
    assert_eq!(checkpoint_only.run.regions[0].len(), 1);
    assert!(checkpoint_only.run.regions[0].event_metadata.is_none());

    let end = now_ns();
    let last = unsafe { checkpoint(&rec, &table, req(Some(end)), |w| w()) }.unwrap();
    let run = &last.run;
    assert_eq!(run.region_names, ["outer", "blocked"]);
    let (o, b) = (&run.regions[0], &run.regions[1]);
    assert_eq!((o.len(), b.len()), (1, 2));
    assert_eq!(o.end_ns.value(0), end);
    assert_eq!(b.end_ns.value(1), end);
    assert!(b.start_ns.value(1) <= entered && b.start_ns.value(1) > b.end_ns.value(0));
    assert_eq!(o.event_metadata.as_deref(), Some(r#"[{"open_at_finalize": true}]"#));
    assert_eq!(b.event_metadata.as_deref(), Some(r#"[{}, {"open_at_finalize": true}]"#));
    // nested as recorded: the closed calls form a tree (outer > blocked, blocked)
    assert_eq!(b.parent_ids.as_ref().unwrap().to_array().values().to_vec(), vec![0, 0]);
    assert!(last.warning.is_none());
    let said = last.open_calls_warning(end + 2_000_000_000, true).unwrap();
    assert!(said.starts_with("2 call(s) still open at the end of the recording; they are in the profile"), "{said}");
    assert!(said.contains("'outer' on Main (open 2.0") && said.contains("'blocked' on Main (open 2.0"), "{said}");
    let kept = checkpoint_only.open_calls_warning(end, false).unwrap();
    assert!(kept.contains("still open at finalize; they stay open"), "{kept}");
}
