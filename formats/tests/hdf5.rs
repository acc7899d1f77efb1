//! HDF5 reading (compat fixtures, reference datasets against their expected values), writing
//! (round trip, interop with the reference package), and damaged / foreign input.
mod consumers;

use std::path::{Path, PathBuf};

use consumers::{consumer_command, consumer_output, reference_python};
use scope_profiler_analysis::*;
use scope_profiler_formats::{read_h5, write_h5, H5Error};
use serde_json::Value;

fn datasets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets")
}

fn tmpdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------------------
// compat fixtures

#[test]
fn compat_fixtures_all_schemas() {
    for schema in 1..=3 {
        let p = datasets().join(format!("compat/schema-{schema}.h5"));
        let run = read_h5(&p).unwrap_or_else(|e| panic!("schema {schema}: {e}"));
        assert_eq!(run.region_names, vec!["solve".to_string()], "schema {schema}");
        assert_eq!(run.num_ranks, 1);
        assert_eq!(run.regions.len(), 1);
        let r = &run.regions[0];
        assert_eq!((r.region, r.rank), (0, 0));
        assert_eq!(r.start_ns.values().to_vec(), vec![10, 20, 40]);
        assert_eq!(r.end_ns.values().to_vec(), vec![15, 33, 55]);
        assert_eq!(r.source_line, Some(7));
        assert_eq!(r.source_file.as_deref(), Some("solver.py"));
        assert_eq!(r.source_text, None);
        assert_eq!(r.tags, vec!["golden".to_string()]);
        assert!(r.thread_ids.is_none() && r.task_ids.is_none() && r.await_ns.is_none());
        assert!(r.gpu_ns.is_none());
        assert_eq!(r.exclusive_total_ns, None);
        assert_eq!(r.event_metadata, None);
        assert!(run.threads.is_empty() && run.tasks.is_empty());
        assert_eq!(run.meta_int("mpi_size"), Some(1));
    }
}

// ---------------------------------------------------------------------------------------
// reference datasets against expected.json

fn opt_i64s(v: &Value) -> Option<Vec<i64>> {
    v.as_array().map(|a| a.iter().map(|x| x.as_i64().unwrap()).collect())
}

fn opt_f64(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn check_expected(run: &Run, expected: &Value, file: &str) {
    let names: Vec<String> =
        expected["region_names"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(run.region_names, names, "{file}");
    assert_eq!(run.num_ranks as i64, expected["num_ranks"].as_i64().unwrap(), "{file}");
    let excl = exclusive_by_row(run, 0).unwrap();
    for (pos, row) in run.regions.iter().enumerate() {
        let name = &run.region_names[row.region as usize];
        let e = &expected["regions"][name][row.rank.to_string()];
        assert_eq!(row.len() as i64, e["num_calls"].as_i64().unwrap(), "{file} {name}");
        let d: Vec<i64> = row.start_ns.values().iter().zip(row.end_ns.values().iter()).map(|(s, e)| e - s).collect();
        assert_eq!(Some(d.clone()), opt_i64s(&e["durations_ns"]), "{file} {name}");
        assert_eq!(row.thread_ids.as_ref().map(|a| a.values().to_vec()), opt_i64s(&e["thread_ids"]), "{file} {name}");
        assert_eq!(row.task_ids.as_ref().map(|a| a.values().to_vec()), opt_i64s(&e["task_ids"]), "{file} {name}");
        assert_eq!(row.await_ns.as_ref().map(|a| a.values().to_vec()), opt_i64s(&e["await_ns"]), "{file} {name}");
        let total: i64 = d.iter().sum();
        assert_eq!(total as f64 / 1e9, e["total_duration"].as_f64().unwrap(), "{file} {name}");
        let ex = excl.iter().find(|(p, _)| *p == pos).unwrap();
        let ex_total: i64 = ex.1.iter().sum();
        assert_eq!(ex_total as f64 / 1e9, e["exclusive_duration"].as_f64().unwrap(), "{file} {name}");
        if let Some(stored) = row.exclusive_total_ns {
            assert_eq!(stored, ex_total, "{file} {name}: stored exclusive total");
        }
        let mut threads: Vec<i64> = row.thread_ids.as_ref().map(|a| a.values().to_vec()).unwrap_or_default();
        threads.sort();
        threads.dedup();
        assert_eq!(Some(threads), opt_i64s(&e["threads"]), "{file} {name}");
    }
    // thread table
    let threads = expected["threads"]["0"].as_array().cloned().unwrap_or_default();
    assert_eq!(run.rank_threads(0).count(), threads.len(), "{file}");
    for (t, e) in run.rank_threads(0).zip(&threads) {
        assert_eq!(t.index, e["index"].as_i64().unwrap());
        assert_eq!(t.name, e["name"].as_str().unwrap());
        assert_eq!(t.daemon, e["daemon"].as_bool().unwrap());
        assert_eq!(t.end_ns == -1, e["alive"].as_bool().unwrap());
        assert_eq!(t.start_ns as f64 / 1e9, e["start_time"].as_f64().unwrap());
        assert_eq!((t.end_ns != -1).then(|| t.end_ns as f64 / 1e9), opt_f64(&e["end_time"]));
        assert_eq!(t.cpu_ns as f64 / 1e9, e["cpu_time"].as_f64().unwrap());
    }
    let tasks = expected["tasks"]["0"].as_array().cloned().unwrap_or_default();
    assert_eq!(run.rank_tasks(0).count(), tasks.len(), "{file}");
    for (t, e) in run.rank_tasks(0).zip(&tasks) {
        assert_eq!(t.index, e["index"].as_i64().unwrap());
        assert_eq!(t.kind, e["kind"].as_str().unwrap());
        assert_eq!(t.name, e["name"].as_str().unwrap());
        assert_eq!(t.coro_name, e["coro_name"].as_str().unwrap());
        assert_eq!(t.thread_index, e["thread_index"].as_i64().unwrap());
        assert_eq!(t.steps, e["steps"].as_i64().unwrap());
        assert_eq!(t.running_ns as f64 / 1e9, e["running_time"].as_f64().unwrap());
        assert_eq!(t.suspended_ns as f64 / 1e9, e["awaiting_time"].as_f64().unwrap());
        assert_eq!(t.created_ns as f64 / 1e9, e["created_time"].as_f64().unwrap());
        assert_eq!((t.done_ns != -1).then(|| t.done_ns as f64 / 1e9), opt_f64(&e["done_time"]));
    }
    // thread summary: exact floats
    if let Some(rows) = expected.get("thread_summary") {
        let got = thread_summary(run, 0).unwrap();
        let want = rows["0"].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{file}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.index, w["index"].as_i64().unwrap(), "{file}");
            assert_eq!(g.name, w["name"].as_str().unwrap(), "{file}");
            assert_eq!(g.alive, w["alive"].as_bool().unwrap(), "{file}");
            // deviations from the reference: an alive thread's wall time runs to the
            // run's end (the reference: None); region time is the union over the thread's
            // lanes (the reference sums the lanes' top-level calls = held + await)
            if g.alive {
                assert_eq!(opt_f64(&w["wall_time"]), None, "{file}");
                let t = run.rank_threads(0).find(|t| t.index == g.index).unwrap();
                let end = run.meta_int("finalize_time_ns").unwrap() - run.meta_int("start_time_ns").unwrap();
                assert_eq!(g.wall_time, Some(end as f64 / 1e9 - t.start_ns as f64 / 1e9), "{file} {}", g.name);
            } else {
                assert_eq!(g.wall_time, opt_f64(&w["wall_time"]), "{file} {}", g.name);
            }
            // the reference's files carry no cpu_start_ns: both figures are the whole life
            assert_eq!(run.rank_threads(0).find(|t| t.index == g.index).unwrap().cpu_start_ns, -1);
            assert_eq!((g.cpu_time, g.cpu_time_total), (w["cpu_time"].as_f64(), g.cpu_time), "{file}");
            assert_eq!(g.num_calls, w["num_calls"].as_i64().unwrap(), "{file} {}", g.name);
            let summed = w["region_time"].as_f64().unwrap();
            if run.rank_tasks(0).next().is_none() {
                assert_eq!(g.region_time, summed, "{file} {}", g.name);
            } else {
                assert!(g.region_time <= summed + 1e-12, "{file} {}", g.name);
                // plus the task calls inside a call of the thread itself, which the reference
                // counts twice
                let both = g.held_time.unwrap() + g.task_await_time_sum.unwrap() + enclosed_task_secs(run, g.index);
                assert!((both - summed).abs() < 1e-9, "{file} {}: {both} vs {summed}", g.name);
                assert!(g.held_time.unwrap() <= g.region_time + 1e-12, "{file} {}", g.name);
            }
            if let Some(wall) = g.wall_time {
                assert!(g.region_time <= wall, "{file} {}: {} > {wall}", g.name, g.region_time);
            }
        }
    } else {
        assert!(thread_summary(run, 0).unwrap().is_empty());
    }
    // call arrays
    let ca = &expected["call_arrays"];
    let (_, calls) = rank_call_arrays(run, 0).unwrap();
    assert_eq!(calls.len() as i64, ca["num_calls"].as_i64().unwrap(), "{file}");
    assert_eq!(calls.max_depth().unwrap(), ca["max_depth"].as_i64().unwrap(), "{file}");
    assert_eq!(calls.lane.is_empty(), ca["lane_column_empty"].as_bool().unwrap(), "{file}");
    assert_eq!(calls.parent.iter().filter(|&&p| p < 0).count() as i64, ca["roots"].as_i64().unwrap(), "{file}");
    let lanes: Vec<(i64, i64, String)> = split_by_lane(&calls)
        .iter()
        .map(|(lane, ids)| {
            let label = if lane == -1 { "rank 0".to_string() } else { lane_label(run, lane, 0) };
            (lane, ids.len() as i64, label)
        })
        .collect();
    let want: Vec<(i64, i64, String)> = ca["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l[0].as_i64().unwrap(), l[1].as_i64().unwrap(), l[2].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(lanes, want, "{file}");
}

const REFERENCE: [&str; 4] = ["single", "threads", "async", "pool"];

#[test]
fn reference_datasets_match_expected() {
    for name in REFERENCE {
        let run = read_h5(&datasets().join(format!("reference/{name}.h5"))).unwrap();
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(datasets().join(format!("reference/{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        check_expected(&run, &expected, name);
    }
}

// ---------------------------------------------------------------------------------------
// round trip

fn assert_runs_equal(a: &Run, b: &Run, what: &str) {
    assert_eq!(a.region_names, b.region_names, "{what}");
    assert_eq!(a.num_ranks, b.num_ranks, "{what}");
    assert_eq!(a.threads, b.threads, "{what}");
    assert_eq!(a.tasks, b.tasks, "{what}");
    assert_eq!(a.metadata, b.metadata, "{what}");
    assert_eq!(a.regions.len(), b.regions.len(), "{what}");
    for (x, y) in a.regions.iter().zip(&b.regions) {
        assert_eq!((x.region, x.rank), (y.region, y.rank), "{what}");
        assert_eq!(x.start_ns, y.start_ns, "{what}");
        assert_eq!(x.end_ns, y.end_ns, "{what}");
        assert_eq!(x.gpu_ns, y.gpu_ns, "{what}");
        assert_eq!(x.call_ids, y.call_ids, "{what}");
        assert_eq!(x.parent_ids, y.parent_ids, "{what}");
        assert_eq!(x.thread_ids, y.thread_ids, "{what}");
        assert_eq!(x.task_ids, y.task_ids, "{what}");
        assert_eq!(x.await_ns, y.await_ns, "{what}");
        assert_eq!(x.task_step_ns, y.task_step_ns, "{what}");
        assert_eq!(x.source_file, y.source_file, "{what}");
        assert_eq!(x.source_line, y.source_line, "{what}");
        assert_eq!(x.source_text, y.source_text, "{what}");
        assert_eq!(x.tags, y.tags, "{what}");
        assert_eq!(x.event_metadata, y.event_metadata, "{what}");
        assert_eq!(x.exclusive_total_ns, y.exclusive_total_ns, "{what}");
    }
}

#[test]
fn round_trip_reference_and_compat() {
    let dir = tmpdir();
    let mut files: Vec<String> = REFERENCE.iter().map(|n| format!("reference/{n}.h5")).collect();
    files.extend((1..=3).map(|s| format!("compat/schema-{s}.h5")));
    for f in files {
        let original = read_h5(&datasets().join(&f)).unwrap();
        let out = dir.path().join(f.replace('/', "_"));
        write_h5(&original, &out).unwrap();
        let back = read_h5(&out).unwrap();
        assert_runs_equal(&original, &back, &f);
        // and once more: writing what we read is a fixed point
        let out2 = dir.path().join(format!("again_{}", f.replace('/', "_")));
        write_h5(&back, &out2).unwrap();
        assert_runs_equal(&back, &read_h5(&out2).unwrap(), &f);
    }
    // nothing but the published files is left in the directory (no temp files)
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

/// The time calls on a thread's own lane left to task steps, and each thread's time in task
/// steps, survive the file in columns of their own (`events/task_step_ns`,
/// `thread_table/task_step_ns`); a row without the column reads back as zeros beside one
/// that has it, and a file without them (the reference's) reads as not recorded.
#[test]
fn task_step_times_round_trip() {
    let mut run = read_h5(&datasets().join("reference/async.h5")).unwrap();
    assert!(run.regions.iter().all(|r| r.task_step_ns.is_none()));
    assert!(run.threads.iter().all(|t| t.task_step_ns == -1));
    run.regions[0].task_step_ns = Some(vec![7i64; run.regions[0].len()].into());
    run.threads[0].task_step_ns = 123;
    let dir = tmpdir();
    let out = dir.path().join("steps.h5");
    write_h5(&run, &out).unwrap();
    let back = read_h5(&out).unwrap();
    assert_eq!(back.regions[0].task_step_ns, run.regions[0].task_step_ns);
    for r in &back.regions[1..] {
        assert_eq!(r.task_step_ns.as_ref().map(|a| a.values().to_vec()), Some(vec![0; r.len()]));
    }
    assert_eq!(back.threads[0].task_step_ns, 123);
}

#[test]
fn round_trip_exotic_values() {
    let mut run = read_h5(&datasets().join("compat/schema-3.h5")).unwrap();
    {
        let r = &mut run.regions[0];
        r.tags = vec!["a \"quoted\" tag".into(), "ünïcödé 🚀".into(), "back\\slash\n".into()];
        r.source_text = Some("with x:\n    pass".into());
        r.event_metadata = Some("[{\"n\": 1}, {}, {}]".into());
        r.gpu_ns = Some(vec![-1i64, 7, -1].into());
        r.exclusive_total_ns = Some(33);
    }
    run.region_names.push("unused".into());
    run.metadata.push(("label".into(), MetaValue::Str("ünï".into())));
    run.metadata.push(("modules".into(), MetaValue::StrList(vec!["numpy".into(), "h5py".into()])));
    run.metadata.push(("ratio".into(), MetaValue::Float(0.25)));
    run.metadata.push(("neg".into(), MetaValue::Int(-5)));
    let dir = tmpdir();
    let out = dir.path().join("exotic.h5");
    write_h5(&run, &out).unwrap();
    let back = read_h5(&out).unwrap();
    // unused names are not written (the reference writes only names with calls)
    run.region_names.pop();
    // metadata comes back in attribute-name order
    let mut meta = run.metadata.clone();
    meta.sort_by(|a, b| a.0.cmp(&b.0));
    run.metadata = meta;
    assert_runs_equal(&run, &back, "exotic");
    // the stored JSON is Python's json.dumps
    let f = hdf5::File::open(&out).unwrap();
    let tags = f.dataset("rank_region_index/tags").unwrap().read_raw::<hdf5::types::VarLenUnicode>().unwrap();
    assert_eq!(
        tags[0].as_str(),
        r#"["a \"quoted\" tag", "\u00fcn\u00efc\u00f6d\u00e9 \ud83d\ude80", "back\\slash\n"]"#
    );
}

#[test]
fn empty_run_writes_and_reads() {
    let dir = tmpdir();
    let out = dir.path().join("empty.h5");
    let run = Run { metadata: vec![("mpi_size".into(), MetaValue::Int(1))], ..Default::default() };
    write_h5(&run, &out).unwrap();
    let back = read_h5(&out).unwrap();
    assert!(back.regions.is_empty());
    assert_eq!(back.num_ranks, 0);
}

#[test]
fn published_mode_follows_umask() {
    use std::os::unix::fs::PermissionsExt;
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
        .unwrap();
    let dir = tmpdir();
    let out = dir.path().join("mode.h5");
    write_h5(&read_h5(&datasets().join("compat/schema-3.h5")).unwrap(), &out).unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask);
}

#[test]
fn write_into_missing_directory_is_a_write_error() {
    let run = read_h5(&datasets().join("compat/schema-3.h5")).unwrap();
    let out = Path::new("/nonexistent-dir-for-test/x.h5");
    match write_h5(&run, out) {
        Err(H5Error::Write(m)) => assert!(m.contains("/nonexistent-dir-for-test/x.h5"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn overwrite_is_atomic_replace() {
    let dir = tmpdir();
    let out = dir.path().join("same.h5");
    let a = read_h5(&datasets().join("reference/threads.h5")).unwrap();
    let b = read_h5(&datasets().join("compat/schema-3.h5")).unwrap();
    write_h5(&a, &out).unwrap();
    write_h5(&b, &out).unwrap();
    assert_runs_equal(&b, &read_h5(&out).unwrap(), "overwrite");
}

// ---------------------------------------------------------------------------------------
// files we write open in the reference package with the same values

#[test]
fn reference_package_reads_our_files_identically() {
    let Some(python) = reference_python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compare_h5.py");
    let dir = tmpdir();
    for name in REFERENCE {
        let original = datasets().join(format!("reference/{name}.h5"));
        let out = dir.path().join(format!("{name}.h5"));
        write_h5(&read_h5(&original).unwrap(), &out).unwrap();
        let o = consumer_output(consumer_command(&python).arg(&script).arg(&original).arg(&out)).unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && stdout.trim_end().ends_with("OK"),
            "{name}: {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // a compat fixture rewritten as schema 3 still reads as starts [10,20,40], ends [15,33,55]
    let out = dir.path().join("compat.h5");
    write_h5(&read_h5(&datasets().join("compat/schema-1.h5")).unwrap(), &out).unwrap();
    let code = "import sys, scope_profiler as sp; r = sp.read_h5(sys.argv[1]); g = r.get_region('solve')[0]; \
                print(g.start_times_ns.tolist(), g.end_times_ns.tolist(), g.source_file, g.source_lineno, tuple(g.tags), r.num_ranks)";
    let o = consumer_output(consumer_command(&python).args(["-c", code]).arg(&out)).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "[10, 20, 40] [15, 33, 55] solver.py 7 ('golden',) 1",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// missing, damaged and foreign files

fn expect_corrupt(p: &Path) -> String {
    match read_h5(p) {
        Err(H5Error::Corrupt(m)) => {
            assert!(m.contains(&p.display().to_string()), "message does not name the file: {m}");
            m
        }
        other => panic!("{}: expected Corrupt, got {other:?}", p.display()),
    }
}

#[test]
fn missing_file() {
    let dir = tmpdir();
    let p = dir.path().join("definitely/not/here.h5");
    match read_h5(&p) {
        Err(H5Error::NotFound(m)) => assert_eq!(m, format!("HDF5 file not found: {}", p.display())),
        other => panic!("{other:?}"),
    }
}

#[test]
fn random_bytes_and_empty_files() {
    let dir = tmpdir();
    let p = dir.path().join("random.h5");
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&p, bytes).unwrap();
    let m = expect_corrupt(&p);
    assert!(m.contains("is not a readable HDF5 profiling file"), "{m}");
    let e = dir.path().join("empty.h5");
    std::fs::write(&e, b"").unwrap();
    expect_corrupt(&e);
    // a directory is not a profile either, and the message says so (no HDF5 internals)
    let m = expect_corrupt(dir.path());
    assert!(m.ends_with("is a directory, not a profile file."), "{m}");
}

#[test]
fn truncated_files_are_corrupt_never_a_panic() {
    let dir = tmpdir();
    for name in ["threads", "async"] {
        let bytes = std::fs::read(datasets().join(format!("reference/{name}.h5"))).unwrap();
        let n = bytes.len();
        let cuts = [8, 96, 512, 2048, n / 4, n / 2, 3 * n / 4, n - 4096, n - 100, n - 1];
        for cut in cuts {
            let p = dir.path().join(format!("{name}-{cut}.h5"));
            std::fs::write(&p, &bytes[..cut]).unwrap();
            expect_corrupt(&p);
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    // Damage inside the file (not only at its end): any outcome but a panic is acceptable,
    // and an error must name the file.
    let dir = tmpdir();
    let bytes = std::fs::read(datasets().join("reference/threads.h5")).unwrap();
    for k in 0..40usize {
        let mut b = bytes.clone();
        let at = (k * 7919 + 13) % b.len();
        for j in 0..16 {
            if at + j < b.len() {
                b[at + j] ^= 0x5a;
            }
        }
        let p = dir.path().join(format!("flip-{k}.h5"));
        std::fs::write(&p, &b).unwrap();
        if let Err(e) = read_h5(&p) {
            assert!(e.to_string().contains(&p.display().to_string()) || matches!(e, H5Error::Schema(_)), "{e}");
        }
    }
}

#[test]
fn foreign_hdf5_file() {
    let dir = tmpdir();
    let p = dir.path().join("foreign.h5");
    {
        let f = hdf5::File::create(&p).unwrap();
        f.new_dataset_builder().with_data(&[1.0f64, 2.0, 3.0]).create("temperature").unwrap();
    }
    let m = expect_corrupt(&p);
    assert!(m.contains("not a scope-profiler profile"), "{m}");
    // schema attribute present but the columnar groups missing
    let q = dir.path().join("foreign3.h5");
    {
        let f = hdf5::File::create(&q).unwrap();
        f.new_attr::<i64>().create("scope_profiler_schema").unwrap().write_scalar(&3i64).unwrap();
        f.create_group("metadata").unwrap();
    }
    expect_corrupt(&q);
}

fn with_schema_attr(dir: &Path, name: &str, set: impl Fn(&hdf5::File)) -> PathBuf {
    let p = dir.join(name);
    write_h5(&read_h5(&datasets().join("compat/schema-3.h5")).unwrap(), &p).unwrap();
    let f = hdf5::File::open_rw(&p).unwrap();
    f.delete_attr("scope_profiler_schema").unwrap();
    set(&f);
    p
}

#[test]
fn schema_attribute_validation() {
    let dir = tmpdir();
    let schema_err = |p: &Path| match read_h5(p) {
        Err(H5Error::Schema(m)) => m,
        other => panic!("{other:?}"),
    };
    let p = with_schema_attr(dir.path(), "v4.h5", |f| {
        f.new_attr::<i64>().create("scope_profiler_schema").unwrap().write_scalar(&4i64).unwrap()
    });
    assert_eq!(
        schema_err(&p),
        "Unsupported scope-profiler HDF5 schema version 4; this package supports versions through 3. Upgrade scope-profiler to read this file."
    );
    let p = with_schema_attr(dir.path(), "v0.h5", |f| {
        f.new_attr::<i64>().create("scope_profiler_schema").unwrap().write_scalar(&0i64).unwrap()
    });
    assert_eq!(schema_err(&p), "Unsupported scope-profiler HDF5 schema version 0; versions must be positive");
    let p = with_schema_attr(dir.path(), "vf.h5", |f| {
        f.new_attr::<f64>().create("scope_profiler_schema").unwrap().write_scalar(&3.0f64).unwrap()
    });
    assert_eq!(
        schema_err(&p),
        "HDF5 schema version attribute 'scope_profiler_schema' must be an integer, got np.float64(3.0)"
    );
    let p = with_schema_attr(dir.path(), "vs.h5", |f| {
        let v: hdf5::types::VarLenUnicode = "3".parse().unwrap();
        f.new_attr::<hdf5::types::VarLenUnicode>().create("scope_profiler_schema").unwrap().write_scalar(&v).unwrap()
    });
    assert_eq!(schema_err(&p), "HDF5 schema version attribute 'scope_profiler_schema' must be an integer, got '3'");
    // uint8 2 is a valid integer schema
    let p = with_schema_attr(dir.path(), "vu.h5", |f| {
        f.new_attr::<u8>().create("scope_profiler_schema").unwrap().write_scalar(&2u8).unwrap()
    });
    assert!(read_h5(&p).is_ok());
}

fn damaged_index(dir: &Path, name: &str, dataset: &str, values: &[u64]) -> PathBuf {
    let p = dir.join(name);
    write_h5(&read_h5(&datasets().join("reference/threads.h5")).unwrap(), &p).unwrap();
    let f = hdf5::File::open_rw(&p).unwrap();
    let g = f.group("rank_region_index").unwrap();
    g.unlink(dataset).unwrap();
    g.new_dataset_builder().with_data(values).create(dataset).unwrap();
    p
}

#[test]
fn damaged_event_index() {
    let dir = tmpdir();
    // threads.h5: 4 rows, 54 events; counts [1, 26, 26, 1]
    let p = damaged_index(dir.path(), "long.h5", "event_counts", &[1, 26, 26, 5]);
    let m = expect_corrupt(&p);
    assert_eq!(
        m,
        format!(
            "{} claims 58 recorded events but its event columns hold 54. The file is truncated or damaged.",
            p.display()
        )
    );
    let p = damaged_index(dir.path(), "overlap.h5", "event_offsets", &[0, 1, 20, 53]);
    let m = expect_corrupt(&p);
    assert_eq!(m, format!("{} has overlapping region rows in its event index. The file is damaged.", p.display()));
    let p = damaged_index(dir.path(), "badid.h5", "region_ids", &[0, 1, 2, 9]);
    expect_corrupt(&p);
    let p = damaged_index(dir.path(), "short.h5", "ranks", &[0, 0]);
    expect_corrupt(&p);
    // a damaged rank must not make readers and exporters walk billions of empty ranks
    let p = damaged_index(dir.path(), "hugerank.h5", "ranks", &[0, 0, 0, 4_000_000_000]);
    let m = expect_corrupt(&p);
    assert!(m.contains("claims 4000000001 ranks") && m.contains("The file is damaged"), "{m}");
    let p = damaged_index(dir.path(), "gaprank.h5", "ranks", &[0, 0, 0, 7]);
    let m = expect_corrupt(&p);
    assert!(m.contains("highest rank 7, mpi_size 1, 4 index rows"), "{m}");
}

#[test]
fn gzip_compressed_reference_layout() {
    // threads.h5 copied by h5py with gzip level 4 + shuffle on every dataset (what the
    // reference writes for runs of >= 16384 events).
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/threads-gzip.h5");
    let a = read_h5(&p).unwrap();
    let b = read_h5(&datasets().join("reference/threads.h5")).unwrap();
    assert_runs_equal(&b, &a, "gzip");
}

// ---------------------------------------------------------------------------------------
// large runs: compressed like the reference's automatic policy

/// s of rank 0: the union of the top-level task-lane calls of thread `index` that lie inside
/// a top-level call of its own lane (counted twice in the reference's `region_time`), by
/// brute force over the roots.
fn enclosed_task_secs(run: &Run, index: i64) -> f64 {
    let (_, calls) = rank_call_arrays(run, 0).unwrap();
    let aside: Vec<usize> = calls.set_aside.iter().map(|a| a.call as usize).collect();
    let roots: Vec<usize> = (0..calls.len()).filter(|&i| calls.parent[i] < 0 && !aside.contains(&i)).collect();
    let on_thread = |lane: i64| run.rank_tasks(0).any(|t| t.index == lane && t.thread_index == index);
    let bare: Vec<(i64, i64)> = roots
        .iter()
        .filter(|&&i| calls.lane_of(i) == -2 - index)
        .map(|&i| (calls.start_ns[i], calls.end_ns[i]))
        .collect();
    let mut inner: Vec<(i64, i64)> = roots
        .iter()
        .filter(|&&i| calls.lane_of(i) >= 0 && on_thread(calls.lane_of(i)))
        .map(|&i| (calls.start_ns[i], calls.end_ns[i]))
        .filter(|&(s, e)| bare.iter().any(|&(b, be)| b <= s && e <= be))
        .collect();
    inner.sort_unstable();
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for (s, e) in inner {
        cur = match cur {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    (total + cur.map_or(0, |(s, e)| e - s)) as f64 / 1e9
}

/// `n` calls of one region nested in a session root, on `threads` threads (recorded order
/// grouped by thread, as the recorder writes them).
fn synthetic_run(n: usize, threads: i64) -> Run {
    let per = n / threads as usize;
    let (mut s, mut e, mut t) = (Vec::new(), Vec::new(), Vec::new());
    for th in 0..threads {
        for k in 0..per as i64 {
            let start = 1_000_000 + th * 7 + k * 1000;
            s.push(start);
            e.push(start + 500 + (k * 7919) % 400);
            t.push(th);
        }
    }
    let total = s.len() as i64;
    let region = |region: u32, s: Vec<i64>, e: Vec<i64>, t: Vec<i64>| RegionCalls {
        ready_wait_ns: None,
        region,
        rank: 0,
        start_ns: s.into(),
        end_ns: e.into(),
        gpu_ns: None,
        call_ids: None,
        parent_ids: None,
        thread_ids: Some(t.into()),
        task_ids: None,
        await_ns: None,
        task_step_ns: None,
        source_file: Some("big.py".into()),
        source_line: Some(3),
        source_text: None,
        tags: vec![],
        event_metadata: None,
        exclusive_total_ns: None,
        stored: None,
    };
    let mut run = Run {
        region_names: vec!["scope_profiler.session".into(), "work".into()],
        regions: vec![region(0, vec![0], vec![10_000_000 + total * 1000], vec![0]), region(1, s, e, t)],
        threads: (0..threads)
            .map(|i| ThreadRow {
                ident: 100 + i,
                native_id: 200 + i,
                start_ns: 5,
                end_ns: if i == 0 { -1 } else { 99 },
                cpu_ns: 7,
                cpu_start_ns: 3,
                ..ThreadRow::new(0, i, &format!("t{i}"))
            })
            .collect(),
        metadata: vec![("mpi_size".into(), MetaValue::Int(1))],
        num_ranks: 1,
        ..Default::default()
    };
    assign_call_ids(&mut run, 0, 0).unwrap();
    run
}

#[test]
fn large_run_is_compressed_and_round_trips() {
    let run = synthetic_run(40_000, 4);
    let dir = tmpdir();
    let out = dir.path().join("large.h5");
    write_h5(&run, &out).unwrap();
    {
        let f = hdf5::File::open(&out).unwrap();
        let ds = f.dataset("events/start_deltas").unwrap();
        assert!(ds.is_chunked());
        assert!(!ds.filters().is_empty());
        assert!(!f.dataset("region_table/names").unwrap().is_chunked());
    }
    let back = read_h5(&out).unwrap();
    assert_runs_equal(&run, &back, "large");
}

#[test]
fn reference_package_reads_a_large_compressed_run() {
    let Some(python) = reference_python() else { return };
    let run = synthetic_run(40_000, 4);
    let dir = tmpdir();
    let out = dir.path().join("large.h5");
    write_h5(&run, &out).unwrap();
    let code = "import sys, numpy as np, scope_profiler as sp; r = sp.read_h5(sys.argv[1]); g = r.get_region('work')[0]; \
                print(len(g.start_times_ns), int(np.sum(g.end_times_ns - g.start_times_ns)), r.get_region('work')[0].exclusive_duration, len(r.threads[0]))";
    let o = consumer_output(consumer_command(&python).args(["-c", code]).arg(&out)).unwrap();
    let r = &run.regions[1];
    let total: i64 = r.start_ns.values().iter().zip(r.end_ns.values().iter()).map(|(s, e)| e - s).sum();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("40000 {total} {} 4", total as f64 / 1e9),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Compressed chunks are shuffled and deflated in parallel and written directly;
/// several chunks and a partial last one read back equal, here and in the reference.
#[test]
fn directly_written_chunks_round_trip() {
    let run = synthetic_run(150_001, 3);
    let dir = tmpdir();
    let out = dir.path().join("chunks.h5");
    write_h5(&run, &out).unwrap();
    {
        let f = hdf5::File::open(&out).unwrap();
        let ds = f.dataset("events/durations").unwrap();
        assert_eq!(ds.chunk(), Some(vec![65_536]));
        assert!(ds.size() > 2 * 65_536 && !ds.size().is_multiple_of(65_536), "{}", ds.size());
        assert_eq!(ds.num_chunks(), Some(ds.size().div_ceil(65_536)));
    }
    let back = read_h5(&out).unwrap();
    assert_runs_equal(&run, &back, "chunks");
}

/// The directly written chunks (several, a partial last one) read back equal in the reference.
#[test]
fn reference_package_reads_directly_written_chunks() {
    let Some(python) = reference_python() else { return };
    let run = synthetic_run(150_001, 3);
    let dir = tmpdir();
    let out = dir.path().join("chunks.h5");
    write_h5(&run, &out).unwrap();
    let code = "import sys, numpy as np, scope_profiler as sp; r = sp.read_h5(sys.argv[1]); g = r.get_region('work')[0]; \
                print(len(g.start_times_ns), int(np.sum(g.end_times_ns - g.start_times_ns)), int(g.start_times_ns[-1]))";
    let o = consumer_output(consumer_command(&python).args(["-c", code]).arg(&out)).unwrap();
    let r = &run.regions[1];
    let total: i64 = r.start_ns.values().iter().zip(r.end_ns.values().iter()).map(|(s, e)| e - s).sum();
    let last = r.start_ns.values()[r.len() - 1];
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        format!("{} {total} {last}", r.len()),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
#[ignore]
fn scale_twenty_million_events() {
    let t0 = std::time::Instant::now();
    let run = synthetic_run(20_000_000, 8);
    println!("built + call ids {:?}", t0.elapsed());
    let dir = tmpdir();
    let out = dir.path().join("huge.h5");
    let t0 = std::time::Instant::now();
    write_h5(&run, &out).unwrap();
    println!("write {:?} ({} MB)", t0.elapsed(), std::fs::metadata(&out).unwrap().len() >> 20);
    let t0 = std::time::Instant::now();
    let back = read_h5(&out).unwrap();
    println!("read {:?}", t0.elapsed());
    let t0 = std::time::Instant::now();
    let rows = exclusive_by_row(&back, 0).unwrap();
    println!("exclusive_by_row {:?}", t0.elapsed());
    assert_eq!(rows.len(), 2);
}

/// A run without calls keeps its lane tables (the reference drops them, a defect we do not
/// copy: its file then says 0 ranks and no threads, unlike the run in memory).
#[test]
fn tracked_run_without_calls_keeps_its_lane_tables() {
    let mut run = read_h5(&datasets().join("reference/threads.h5")).unwrap();
    let threads = run.threads.clone();
    run.regions.clear();
    let dir = tmpdir();
    let out = dir.path().join("nocalls.h5");
    write_h5(&run, &out).unwrap();
    let f = hdf5::File::open(&out).unwrap();
    assert!(f.link_exists("thread_table"));
    let back = read_h5(&out).unwrap();
    assert!(back.regions.is_empty() && !threads.is_empty());
    assert_eq!(back.threads, threads);
    assert_eq!(back.num_ranks, 1);
}

/// At `finalize()` the columns that do not depend on call ids are encoded while
/// the calls are numbered (`encode_ahead`), then written with the rest: the file holds
/// exactly what a plain write of the numbered run holds, and call ids numbered after the
/// ahead step (a run that had ids already, renumbered from another base) are the new ones.
#[test]
fn columns_encoded_ahead_write_what_a_plain_write_does() {
    use scope_profiler_formats::hdf5::write::{encode_ahead, publish_h5_ahead};
    let dir = tmpdir();
    let numbered = synthetic_run(150_001, 3);
    let plain = dir.path().join("plain.h5");
    write_h5(&numbered, &plain).unwrap();
    for (name, base) in [("ahead.h5", 0), ("renumbered.h5", 1000)] {
        let mut run = numbered.clone();
        if base == 0 {
            for r in &mut run.regions {
                (r.call_ids, r.parent_ids, r.exclusive_total_ns) = (None, None, None);
            }
        }
        let ahead = encode_ahead(&run);
        let next = number_rank(&run, 0, base).unwrap().apply(&mut run);
        assert_eq!(next, base + 150_000 + 1);
        let out = dir.path().join(name);
        publish_h5_ahead(&run, &out, &ahead).unwrap();
        let (a, b) = (hdf5::File::open(&plain).unwrap(), hdf5::File::open(&out).unwrap());
        for column in ["start_deltas", "durations", "thread_ids", "call_ids", "parent_ids"] {
            let want: Vec<i64> = a.dataset(&format!("events/{column}")).unwrap().read_raw().unwrap();
            let got: Vec<i64> = b.dataset(&format!("events/{column}")).unwrap().read_raw().unwrap();
            let shift = if column.ends_with("ids") && column != "thread_ids" { base } else { 0 };
            let want: Vec<i64> = want.iter().map(|&v| if v >= 0 { v + shift } else { v }).collect();
            assert_eq!(got, want, "{name}: events/{column}");
        }
        assert_runs_equal(&run, &read_h5(&out).unwrap(), name);
    }
}
