//! JSON profile (spec-exports §5): round trip of every column, the compat file, the
//! reference's example documents (read, and written byte for byte), bad inputs.
mod consumers;
mod export_support;

use std::path::Path;

use arrow_array::Int64Array;
use export_support::{datasets, reference};
use scope_profiler_analysis::*;
use scope_profiler_formats::json_profile::{read_json, write_json, JsonError};
use scope_profiler_formats::{read_h5, Selection};

fn all(run: &Run) -> Selection {
    Selection::new((0..run.num_ranks).collect(), "x")
}

fn vals(a: &Int64Array) -> Vec<i64> {
    a.values().to_vec()
}
fn opt(a: &Option<Int64Array>) -> Option<Vec<i64>> {
    a.as_ref().map(vals)
}
fn ids(a: &Option<IdColumn>) -> Option<Vec<i64>> {
    a.as_ref().map(|c| vals(&c.to_array()))
}

/// Every column of every row, the lane tables, metadata and rank count are equal.
fn assert_same_run(a: &Run, b: &Run) {
    assert_eq!(a.region_names, b.region_names);
    assert_eq!(a.num_ranks, b.num_ranks);
    assert_eq!(a.metadata, b.metadata);
    assert_eq!(a.threads, b.threads);
    assert_eq!(a.tasks, b.tasks);
    assert_eq!(a.regions.len(), b.regions.len());
    for (x, y) in a.regions.iter().zip(&b.regions) {
        assert_eq!((x.region, x.rank), (y.region, y.rank));
        assert_eq!(vals(&x.start_ns), vals(&y.start_ns));
        assert_eq!(vals(&x.end_ns), vals(&y.end_ns));
        assert_eq!(opt(&x.gpu_ns), opt(&y.gpu_ns));
        assert_eq!(ids(&x.call_ids), ids(&y.call_ids));
        assert_eq!(ids(&x.parent_ids), ids(&y.parent_ids));
        assert_eq!(opt(&x.thread_ids), opt(&y.thread_ids));
        assert_eq!(opt(&x.task_ids), opt(&y.task_ids));
        assert_eq!(opt(&x.await_ns), opt(&y.await_ns));
        assert_eq!(x.source_file, y.source_file);
        assert_eq!(x.source_line, y.source_line);
        assert_eq!(x.source_text, y.source_text);
        assert_eq!(x.tags, y.tags);
        assert_eq!(x.event_metadata, y.event_metadata);
        assert_eq!(x.exclusive_total_ns, y.exclusive_total_ns);
    }
}

#[test]
fn tracked_run_with_tasks_round_trips_every_column() {
    let run = reference("async");
    assert!(!run.tasks.is_empty() && run.regions.iter().any(|r| r.await_ns.is_some()));
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.json", "a.json.gz"] {
        let p = dir.path().join(name);
        write_json(&run, &all(&run), None, &p).unwrap();
        assert_same_run(&run, &read_json(&p).unwrap());
    }
    // gzip: mtime 0, no file name -> byte-identical files
    let (p1, p2) = (dir.path().join("x.json.gz"), dir.path().join("y.json.gz"));
    write_json(&run, &all(&run), Some(2), &p1).unwrap();
    write_json(&run, &all(&run), Some(2), &p2).unwrap();
    let b = std::fs::read(&p1).unwrap();
    assert_eq!(b, std::fs::read(&p2).unwrap());
    assert_eq!(&b[..4], &[0x1f, 0x8b, 8, 0], "no FNAME flag");
    assert_eq!(&b[4..8], &[0, 0, 0, 0], "mtime 0");
}

#[test]
fn event_metadata_gpu_and_sources_round_trip() {
    let mut run = reference("threads");
    let mut row = RegionCalls::new(0, 0, Int64Array::from(vec![1, 5]), Int64Array::from(vec![3, 9]));
    row.gpu_ns = Some(Int64Array::from(vec![-1, 2]));
    // as the recorder stores it: Python's json.dumps text
    row.event_metadata = Some(r#"[{"z": 1, "a": "\u00e9"}, {}]"#.into());
    row.source_text = Some("def f():".into());
    row.tags = vec!["t1".into(), "t2".into()];
    row.exclusive_total_ns = Some(6);
    run.region_names.insert(0, "extra".into());
    for r in &mut run.regions {
        r.region += 1;
    }
    run.regions.insert(0, row);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.json");
    write_json(&run, &all(&run), None, &p).unwrap();
    let back = read_json(&p).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(r#""event_metadata": [{"z": 1, "a": "\u00e9"}, {}]"#), "key order kept, ASCII escapes");
    assert_same_run(&run, &back);
}

#[test]
fn rank_and_region_filters() {
    let run = reference("threads");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.json");
    let keep = run.region_names[1].clone();
    write_json(&run, &Selection::new(vec![0], "x").with_regions(vec![keep.clone()]), None, &p).unwrap();
    let back = read_json(&p).unwrap();
    assert_eq!(back.region_names, vec![keep]);
    assert_eq!(back.regions.len(), 1);
    assert_eq!(back.threads, run.threads);
    write_json(&run, &Selection::new(vec![], "x"), None, &p).unwrap();
    let back = read_json(&p).unwrap();
    assert!(back.regions.is_empty() && back.threads.is_empty());
    assert_eq!(back.num_ranks, run.num_ranks);
}

#[test]
fn compat_v1_file_reads_with_its_values() {
    let run = read_json(&datasets().join("compat/json-v1.json")).unwrap();
    assert_eq!(run.region_names, vec!["solve"]);
    assert_eq!(run.num_ranks, 1);
    assert_eq!(run.metadata, vec![("mpi_size".to_string(), MetaValue::Int(1))]);
    let r = &run.regions[0];
    assert_eq!(vals(&r.start_ns), vec![10, 20, 40]);
    assert_eq!(vals(&r.end_ns), vec![15, 33, 55]);
    assert_eq!(r.source_file.as_deref(), Some("solver.py"));
    assert_eq!(r.source_line, Some(7));
    assert_eq!(r.tags, vec!["golden"]);
    assert!(r.call_ids.is_none() && r.thread_ids.is_none() && r.exclusive_total_ns.is_none());
    assert!(run.threads.is_empty() && run.tasks.is_empty());
}

#[test]
fn reference_example_reads_and_is_written_byte_for_byte() {
    let Some(examples) = consumers::spec_examples() else { return };
    let run = read_json(&examples.join("tasks.json")).unwrap();
    // values read by hand in the file
    assert_eq!(run.region_names, vec!["scope_profiler.session", "fetch"]);
    assert_eq!(run.meta_int("start_time_ns"), Some(447025140334));
    assert_eq!(run.meta("platform"), Some(&MetaValue::Str("Linux-6.18.44-fc-v657-x86_64-with-glibc2.36".into())));
    let fetch = &run.regions[1];
    assert_eq!(vals(&fetch.start_ns), vec![447037308633, 447038330778]);
    assert_eq!(opt(&fetch.await_ns), Some(vec![3160867, 3197452]));
    assert_eq!(opt(&fetch.task_ids), Some(vec![1, 2]));
    assert_eq!(fetch.exclusive_total_ns, Some(10390795));
    assert_eq!(run.threads.len(), 1);
    assert_eq!((run.threads[0].ident, run.threads[0].end_ns, run.threads[0].cpu_ns), (139623185959808, -1, 110218795));
    assert_eq!(run.tasks.len(), 5);
    let t = &run.tasks[1];
    assert_eq!((t.name.as_str(), t.coro_name.as_str()), ("Task-2", "fetch"));
    assert_eq!((t.created_ns, t.done_ns, t.running_ns, t.suspended_ns), (12049562, 17383371, 2128916, 3160867));
    assert_eq!(run.tasks[3].coro_name, "BaseEventLoop.shutdown_asyncgens");

    // the reference wrote tasks.json from tasks.h5 with indent=1: same bytes from ours
    let h5 = read_h5(&examples.join("tasks.h5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("tasks.json");
    write_json(&h5, &all(&h5), Some(1), &p).unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), std::fs::read_to_string(examples.join("tasks.json")).unwrap());
}

fn read_err(dir: &Path, name: &str, bytes: &[u8]) -> JsonError {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let e = read_json(&p).unwrap_err();
    assert!(e.to_string().contains(&p.display().to_string()), "{e} names the file");
    e
}

#[test]
fn bad_inputs_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = read_json(&d.join("nope.json")).unwrap_err();
    assert!(matches!(missing, JsonError::NotFound(_)));
    let e = read_err(d, "foreign.json", br#"{"$schema": "speedscope", "profiles": []}"#);
    assert!(e.to_string().contains("is not a scope-profiler JSON profile"), "{e}");
    let e = read_err(d, "foreign2.json", br#"{"regions": 5}"#);
    assert!(e.to_string().contains("is not a scope-profiler JSON profile"), "{e}");
    let e = read_err(d, "list.json", b"[1, 2]");
    assert!(e.to_string().contains("is not a scope-profiler JSON profile"), "{e}");
    let e = read_err(d, "garbage.json", b"\x00\xffnot json at all");
    assert!(matches!(e, JsonError::Invalid(_)), "{e}");
    let e = read_err(d, "v2.json", br#"{"format": "scope-profiler-profile", "format_version": 2}"#);
    assert!(e.to_string().contains("format version 2"), "{e}");
    let text = std::fs::read(datasets().join("compat/json-v1.json")).unwrap();
    let e = read_err(d, "trunc.json", &text[..text.len() / 2]);
    assert!(e.to_string().contains("is not a valid JSON profile"), "{e}");
    let e = read_err(d, "bad.json.gz", &[0x1f, 0x8b, 8, 0, 1, 2]);
    assert!(e.to_string().contains("gzip"), "{e}");
    let e = read_err(
        d,
        "len.json",
        br#"{"format": "scope-profiler-profile", "format_version": 1, "regions": [{"name": "a", "rank": 0, "start_times_ns": [1, 2], "end_times_ns": [3]}]}"#,
    );
    assert!(e.to_string().contains("end_times_ns has 1 values for 2 calls"), "{e}");
    // a call that ends before it starts is refused, as by the HDF5 reader, naming the region
    // and the call (read, it would give a negative total in `summary`)
    let e = read_err(
        d,
        "backwards.json",
        br#"{"format": "scope-profiler-profile", "format_version": 1, "regions": [{"name": "a", "rank": 0, "start_times_ns": [1, 9000], "end_times_ns": [5, 4000]}]}"#,
    );
    assert!(e.to_string().contains(r#"region "a" rank 0: call 1 ends before it starts (5000 ns before)"#), "{e}");
    let e = read_err(
        d,
        "type.json",
        br#"{"format": "scope-profiler-profile", "format_version": 1, "regions": [{"name": "a", "rank": 0, "start_times_ns": ["x"]}]}"#,
    );
    assert!(e.to_string().contains("is not a valid JSON profile"), "{e}");
    // a version without format_version still reads (the reference's default 0)
    let p = d.join("v0.json");
    std::fs::write(&p, br#"{"format": "scope-profiler-profile"}"#).unwrap();
    let run = read_json(&p).unwrap();
    assert!(run.regions.is_empty() && run.num_ranks == 0);
}
