//! A dataset built from the reference runs, read back with the parquet crate: per region the
//! calls, total and exclusive times are the reference's own values; call times are from the
//! run's start; the runs table carries each run's metadata; a copy of a run and the same run
//! as a JSON profile are one run; `append` skips runs present; a bad file fails alone; what
//! a killed build left is removed by the next.
mod export_support;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use export_support::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use scope_profiler_formats::dataset::{
    build, convert_file, find_runs, prepare, read_runs, run_id, time_origin, Converted, Table, RUNS_FILE,
};
use scope_profiler_formats::json_profile::write_json;
use scope_profiler_formats::Selection;

const NAMES: [&str; 4] = ["threads", "async", "pool", "single"];

fn read(path: &Path) -> RecordBatch {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let batches: Vec<RecordBatch> = b.build().unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(batches.len(), 1, "{}: small partitions are one batch", path.display());
    batches[0].clone()
}

fn part(dir: &Path, table: Table, id: &str) -> PathBuf {
    dir.join(table.name()).join(format!("run={id}")).join("part-0.parquet")
}

fn ints(b: &RecordBatch, c: &str) -> Vec<i64> {
    b.column_by_name(c).unwrap_or_else(|| panic!("no column {c}")).as_primitive::<Int64Type>().values().to_vec()
}

fn strs(b: &RecordBatch, c: &str) -> Vec<String> {
    b.column_by_name(c).unwrap().as_string::<i32>().iter().map(|s| s.unwrap().to_string()).collect()
}

fn reference_files() -> Vec<PathBuf> {
    NAMES.iter().map(|n| datasets().join(format!("reference/{n}.h5")).canonicalize().unwrap()).collect()
}

fn no_tick(_: usize) {}

#[test]
fn region_totals_of_each_run_are_the_references() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let files = reference_files();
    let out = build(&files, &dir, false, Some(2), &no_tick).unwrap();
    assert!(out.failed.is_empty() && out.present.is_empty(), "{out:?}");
    assert_eq!(out.added.len(), NAMES.len());
    let rows = read_runs(&dir.join(RUNS_FILE)).unwrap();
    assert_eq!(rows, out.added, "the runs table holds the rows of the build");
    for (name, row) in NAMES.iter().zip(&rows) {
        let run = reference(name);
        assert_eq!(row.run, run_id(&run));
        assert_eq!(row.path, files[NAMES.iter().position(|n| n == name).unwrap()].display().to_string());
        let want = expected(name);
        let calls = read(&part(&dir, Table::Calls, &row.run));
        let regions = read(&part(&dir, Table::Regions, &row.run));
        assert_eq!(row.num_calls as usize, calls.num_rows());
        // per region, from the calls table and from the regions table
        let (names, dur, excl) = (strs(&calls, "region"), ints(&calls, "duration_ns"), ints(&calls, "exclusive_ns"));
        let mut by: BTreeMap<&str, (i64, i64, i64)> = BTreeMap::new();
        for i in 0..calls.num_rows() {
            let t = by.entry(names[i].as_str()).or_default();
            *t = (t.0 + 1, t.1 + dur[i], t.2 + excl[i]);
        }
        let r_names = strs(&regions, "region");
        let (r_calls, r_total, r_excl) =
            (ints(&regions, "calls"), ints(&regions, "total_ns"), ints(&regions, "exclusive_ns"));
        for (region, ranks) in want["regions"].as_object().unwrap() {
            let w = &ranks["0"];
            let ns = |k: &str| (w[k].as_f64().unwrap() * 1e9).round() as i64;
            let got = by[region.as_str()];
            assert_eq!(got.0, w["num_calls"].as_i64().unwrap(), "{name}/{region} calls");
            assert!(
                (got.1 - ns("total_duration")).abs() <= 1,
                "{name}/{region} total {} vs {}",
                got.1,
                ns("total_duration")
            );
            assert!(
                (got.2 - ns("exclusive_duration")).abs() <= 1,
                "{name}/{region} exclusive {} vs {}",
                got.2,
                ns("exclusive_duration")
            );
            let k = r_names.iter().position(|n| n == region).unwrap();
            assert_eq!((r_calls[k], r_total[k], r_excl[k]), got, "{name}/{region}: regions table = sums of calls");
        }
        // call times from the run's start, as events_frame() gives them
        let t0 = time_origin(&run);
        assert_eq!(Some(t0), run.meta_int("start_time_ns"));
        let first: i64 = run.regions.iter().flat_map(|r| r.start_ns.values().iter().copied()).min().unwrap();
        assert_eq!(ints(&calls, "start_ns").into_iter().min(), Some(first - t0));
        assert_eq!(calls.column_by_name("rank").unwrap().as_primitive::<Int32Type>().values().iter().max(), Some(&0));
        // lane tables: one row per thread / task, counted in the runs table
        let threads = want["threads"].as_object().and_then(|t| t.get("0")).map(|t| t.as_array().unwrap().len());
        assert_eq!(row.num_threads as usize, threads.unwrap_or(0), "{name} threads");
        if row.num_threads > 0 {
            let t = read(&part(&dir, Table::Threads, &row.run));
            assert_eq!(t.num_rows() as i64, row.num_threads);
            assert_eq!(ints(&t, "num_calls").iter().sum::<i64>(), calls.num_rows() as i64 - lane_unknown(&calls));
        } else {
            assert!(!part(&dir, Table::Threads, &row.run).exists(), "no empty partition");
        }
        let has_await = calls.column_by_name("await_ns").unwrap().null_count() < calls.num_rows();
        assert_eq!(has_await, row.num_tasks > 0 || run.regions.iter().any(|r| r.await_ns.is_some()), "{name}");
        // metadata as columns
        assert_eq!(row.label, *name);
        assert!(row.start_time.is_some(), "{name}: timestamp parsed");
        assert!(row.metadata.iter().any(|(k, v)| k == "mpi_size" && v.as_i64() == Some(1)));
    }
}

/// Calls on no thread lane (lane -1 or a task lane: counted in the tasks table instead).
fn lane_unknown(calls: &RecordBatch) -> i64 {
    ints(calls, "lane").iter().filter(|&&l| l > -2).count() as i64
}

#[test]
fn copies_and_formats_of_a_run_are_one_run_and_append_adds_only_new_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, src) = (tmp.path().join("ds"), tmp.path().join("src"));
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::create_dir_all(src.join("b")).unwrap();
    let threads = datasets().join("reference/threads.h5");
    std::fs::copy(&threads, src.join("a/run.h5")).unwrap();
    std::fs::copy(&threads, src.join("b/run.h5")).unwrap();
    write_json(&reference("threads"), &Selection::new(vec![0], "threads"), None, &src.join("b/run.json")).unwrap();
    std::fs::copy(datasets().join("reference/async.h5"), src.join("a/other.h5")).unwrap();
    std::fs::write(src.join("a/broken.h5"), b"\x89HDF\r\n\x1a\n not really").unwrap();
    std::fs::write(src.join("a/run.speedscope.json"), b"{}").unwrap();
    std::fs::write(src.join("a/settings.json"), b"{\"threads\": 4}").unwrap();
    let (files, missing) = find_runs(&[src.join("a"), src.join("b"), tmp.path().join("nope.h5")]);
    assert_eq!(missing.len(), 1);
    assert!(missing[0].1.contains("nope.h5"), "{missing:?}");
    let names: Vec<String> = files.iter().map(|f| f.strip_prefix(&src).unwrap().display().to_string()).collect();
    assert_eq!(
        names,
        ["a/broken.h5", "a/other.h5", "a/run.h5", "b/run.h5", "b/run.json"],
        "exports and other JSON are not runs"
    );
    let out = build(&files, &dir, false, Some(2), &no_tick).unwrap();
    assert_eq!(out.added.len(), 2, "{out:?}");
    assert_eq!(out.present.len(), 2, "the copy and the JSON profile are the same run: {out:?}");
    assert!(out.present.iter().all(|(_, id)| *id == run_id(&reference("threads"))));
    assert_eq!(out.failed.len(), 1);
    assert!(out.failed[0].1.contains("broken.h5"), "the message names the file: {}", out.failed[0].1);
    // a second build without append refuses; with append it skips what is there
    let err = build(&files, &dir, false, None, &no_tick).unwrap_err();
    assert!(err.to_string().contains("already holds a dataset"), "{err}");
    let before = std::fs::metadata(part(&dir, Table::Calls, &out.added[0].run)).unwrap().modified().unwrap();
    std::fs::copy(datasets().join("reference/pool.h5"), src.join("b/pool.h5")).unwrap();
    let again = build(&find_runs(&[src.join("a"), src.join("b")]).0, &dir, true, None, &no_tick).unwrap();
    assert_eq!(again.added.len(), 1, "{again:?}");
    assert_eq!(again.added[0].label, "pool");
    assert_eq!(again.present.len(), 4);
    let after = std::fs::metadata(part(&dir, Table::Calls, &out.added[0].run)).unwrap().modified().unwrap();
    assert_eq!(before, after, "runs already there are not rewritten");
    let ids: Vec<String> = read_runs(&dir.join(RUNS_FILE)).unwrap().into_iter().map(|r| r.run).collect();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 3);
}

#[test]
fn what_a_killed_build_left_is_removed_by_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ds");
    let single = datasets().join("reference/single.h5");
    build(&[single], &dir, false, None, &no_tick).unwrap();
    let kept = read_runs(&dir.join(RUNS_FILE)).unwrap();
    // a build killed after writing a partition, before the runs table, and mid-staging
    let orphan = convert_file(&datasets().join("reference/pool.h5"), &dir, &HashSet::new());
    let Converted::Added(orphan) = orphan else { panic!("{orphan:?}") };
    assert!(part(&dir, Table::Calls, &orphan.run).exists());
    std::fs::create_dir_all(dir.join(".staging/calls-x-123")).unwrap();
    std::fs::write(dir.join(".runs.parquet.abc.tmp"), b"half").unwrap();
    let rows = prepare(&dir, true).unwrap();
    assert_eq!(rows, kept);
    assert!(!part(&dir, Table::Calls, &orphan.run).exists(), "a run not in the runs table is removed");
    assert!(part(&dir, Table::Calls, &kept[0].run).exists());
    assert!(!dir.join(".staging").exists() && !dir.join(".runs.parquet.abc.tmp").exists());
    // a directory holding something else is not taken
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), b"mine").unwrap();
    let err = prepare(&other, false).unwrap_err().to_string();
    assert!(err.contains("not empty and holds no dataset (notes.txt)"), "{err}");
}
