//! Regression tests of the finalize crate, each headed by where the problem was reported.
use std::sync::Arc;

use scope_profiler_analysis::MetaValue;
use scope_profiler_finalize::{checkpoint, CheckpointError, CheckpointRequest};
use scope_profiler_recorder::{now_ns, Recorder, RegionTable, ThreadInfo, ThreadState};

fn state(rec: &Recorder) -> &ThreadState {
    let (st, _) = rec.register_current_thread(ThreadInfo { name: "Main".into(), ..Default::default() });
    // SAFETY: the thread-local list keeps the state alive as long as the recorder.
    unsafe { &*Arc::as_ptr(&st) }
}

fn call(s: &ThreadState, region: u32) {
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

/// issue 13 item 1: "A failed write throws away the run: `finalize()` empties the recorder
/// buffers before the file is written; a retry writes an empty profile." Now the calls are
/// retired only once the file is published: the failure carries the run and its errno,
/// the retry writes every call (also those recorded while the failed write ran), and a
/// call recorded during a successful write is kept for the next checkpoint.
#[test]
fn issue_13_item_1_failed_write_keeps_every_call_for_the_retry() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = state(&rec);
    for _ in 0..3 {
        call(s, a);
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing").join("run.h5");
    // the write runs "with the lock released": a call is recorded meanwhile
    let err = unsafe {
        checkpoint(&rec, &table, request(&missing), |write| {
            call(s, a);
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
            call(s, a); // recorded during the successful write: kept for the next checkpoint
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

/// issue 13 item 1: the OS error of each kind of refused target reaches the caller.
#[test]
fn issue_13_item_1_write_failures_carry_their_errno() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    call(state(&rec), a);
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

/// issue 13 item 6: "SIGKILL / OOM kill loses everything. Add opt-in streaming": a flush
/// appends the completed calls to the sidecar and retires exactly those (a call recorded
/// during the append stays buffered, a call open across it is taken once it completes); the
/// checkpoint with the sidecar's frames writes every call once, nested as recorded.
#[test]
fn issue_13_item_6_flushed_and_buffered_calls_make_the_file_once() {
    use scope_profiler_finalize::checkpoint_with_prior;
    use scope_profiler_finalize::stream::{flush, Flushed, SidecarWriter};
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (outer, _) = table.get_or_create("outer", vec![]);
    let (inner, _) = table.get_or_create("inner", vec![]);
    let s = state(&rec);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run.h5");
    let mut side = SidecarWriter::new(dir.path().join(".run.h5.partial"));
    s.enter(outer, false); // open across the flush
    for _ in 0..3 {
        call(s, inner);
    }
    let meta = || vec![("start_time_ns".to_string(), MetaValue::Int(0))];
    let flushed = unsafe {
        flush(&rec, &table, 0, meta(), &mut side, |job| {
            call(s, inner); // recorded while the frame is appended (GIL released)
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
    call(s, inner);
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

/// issue 13 item 6: a sidecar whose writer runs (this process) is not recovered; its frames
/// are read up to a torn one ("never failing on a torn last frame") and numbered. (Recovery
/// of a killed process's sidecar end to end: `tests/python/test_regressions.py`.)
#[test]
fn issue_13_item_6_recover_stops_at_a_torn_frame() {
    use scope_profiler_finalize::stream::{flush, pending_sidecar, recover, recover_run, RecoverError, SidecarWriter};
    use scope_profiler_formats::hdf5::leftovers::sidecar_path;
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (a, _) = table.get_or_create("a", vec![]);
    let s = state(&rec);
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run.h5");
    let path = sidecar_path(&target, std::process::id());
    let mut side = SidecarWriter::new(path.clone());
    for n in [2, 3] {
        for _ in 0..n {
            call(s, a);
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

/// issue 13 item 7: "Temp files of a killed write stay forever". A publication removes the
/// temporary files of dead writers of this namespace in its directory once they are a few
/// seconds old; a live writer's, a young one and one of another namespace stay.
#[test]
fn issue_13_item_7_publication_removes_dead_writers_temp_files() {
    use scope_profiler_formats::hdf5::leftovers::process_tag;
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
    call(state(&rec), a);
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

/// issue 13 item 3: "Regions still open at `finalize()` vanish without a word (a worker
/// blocked inside a region when the session ends)". Every checkpoint lists the open calls;
/// the end of a recording (`close_open_at`) puts them in the run as calls ending then,
/// flagged in their per-call metadata; a checkpoint leaves them open for a later one.
#[test]
fn issue_13_item_3_calls_open_at_the_end_are_reported_and_closed_into_the_run() {
    let rec = Recorder::new(4, true);
    let table = RegionTable::new();
    let (outer, _) = table.get_or_create("outer", vec![]);
    let (blocked, _) = table.get_or_create("blocked", vec![]);
    let s = state(&rec);
    s.enter(outer, false);
    call(s, blocked); // one completed call of "blocked"
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
