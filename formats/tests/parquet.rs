//! Parquet export read back with the parquet crate's Arrow reader: schema, one row per
//! call with the reconstruction's values, null-free lane columns, lanes table = thread and
//! task tables, per-region exclusive sums = the reference's values.
mod export_support;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use export_support::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use scope_profiler_analysis::*;
use scope_profiler_formats::parquet_export::{events_schema, lanes_path, lanes_schema, write_parquet};
use scope_profiler_formats::{ExportError, Selection};

fn read(path: &Path) -> (RecordBatch, Vec<(String, String)>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let kv: Vec<(String, String)> = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .map(|v| v.iter().map(|k| (k.key.clone(), k.value.clone().unwrap_or_default())).collect())
        .unwrap_or_default();
    let schema = b.schema().clone();
    let batches: Vec<RecordBatch> = b.build().unwrap().map(|r| r.unwrap()).collect();
    (arrow_select_concat(&schema, &batches), kv)
}

fn arrow_select_concat(schema: &arrow_schema::SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    if batches.len() == 1 {
        return batches[0].clone();
    }
    assert!(batches.is_empty(), "small files are one batch");
    RecordBatch::new_empty(schema.clone())
}

fn i64col<'a>(b: &'a RecordBatch, name: &str) -> &'a arrow_array::PrimitiveArray<Int64Type> {
    b.column_by_name(name).unwrap_or_else(|| panic!("no column {name}")).as_primitive::<Int64Type>()
}

#[test]
fn events_and_lanes_of_the_reference_runs() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["threads", "async", "pool", "single"] {
        let run = reference(name);
        let path = dir.path().join(format!("{name}.parquet"));
        let written = write_parquet(&run, &Selection::new(vec![0], name), &path).unwrap();
        assert_eq!(written, vec![path.clone(), dir.path().join(format!("{name}.lanes.parquet"))]);
        let (ev, kv) = read(&path);
        assert!(kv.contains(&("scope_profiler.label".into(), name.into())));
        assert_eq!(ev.schema().fields().len(), events_schema().fields().len());
        for (f, want) in ev.schema().fields().iter().zip(events_schema().fields()) {
            assert_eq!(f.name(), want.name());
            assert_eq!(f.data_type(), want.data_type(), "{}", f.name());
        }
        let (rows, calls) = rank_call_arrays(&run, 0).unwrap();
        assert_eq!(ev.num_rows(), calls.len(), "{name}: one row per call");
        for col in [
            "call_index",
            "start_ns",
            "end_ns",
            "duration_ns",
            "call_id",
            "parent_id",
            "thread",
            "task",
            "depth",
            "lane",
            "exclusive_ns",
        ] {
            assert_eq!(ev.column_by_name(col).unwrap().null_count(), 0, "{name}.{col} null-free");
        }
        let (start, end, dur) = (i64col(&ev, "start_ns"), i64col(&ev, "end_ns"), i64col(&ev, "duration_ns"));
        let (lane, thread, task, excl) =
            (i64col(&ev, "lane"), i64col(&ev, "thread"), i64col(&ev, "task"), i64col(&ev, "exclusive_ns"));
        let (cid, pid, depth) = (i64col(&ev, "call_id"), i64col(&ev, "parent_id"), i64col(&ev, "depth"));
        let aw = i64col(&ev, "await_ns");
        let region = ev.column_by_name("region").unwrap().as_dictionary::<Int32Type>();
        let values = region.values().as_string::<i32>();
        let mut excl_by_region: BTreeMap<String, i64> = BTreeMap::new();
        for i in 0..calls.len() {
            let row = &run.regions[rows[calls.region_index[i] as usize]];
            let rname = &run.region_names[row.region as usize];
            assert_eq!(values.value(region.keys().value(i) as usize), rname);
            assert_eq!((start.value(i), end.value(i)), (calls.start_ns[i], calls.end_ns[i]));
            assert_eq!(dur.value(i), end.value(i) - start.value(i));
            assert_eq!(cid.value(i), i as i64);
            assert_eq!(pid.value(i), calls.parent[i] as i64);
            assert_eq!(depth.value(i), calls.depth[i] as i64);
            assert_eq!(lane.value(i), calls.lane_of(i));
            assert_eq!(lane.value(i), lane_id(thread.value(i), task.value(i)), "lane agrees with thread/task");
            assert_eq!(excl.value(i), calls.exclusive_ns[i]);
            // stored call ids (assigned at finalize by the recorder) are the same numbering
            if let Some(ids) = &row.call_ids {
                assert_eq!(ids.to_array().value(calls.call_index[i] as usize), i as i64, "{name}: call id");
            }
            assert_eq!(aw.is_null(i), row.await_ns.is_none());
            *excl_by_region.entry(rname.clone()).or_default() += excl.value(i);
        }
        for (region, ranks) in expected(name)["regions"].as_object().unwrap() {
            let want = ranks["0"]["exclusive_duration"].as_f64().unwrap();
            let got = excl_by_region.get(region).copied().unwrap_or(0) as f64 / 1e9;
            assert!((got - want).abs() < 1e-12, "{name}/{region}");
        }
        // lanes: threads then tasks, labels as lane_label, on the events' clock
        let (ln, _) = read(&lanes_path(&path));
        assert_eq!(ln.schema().fields().len(), lanes_schema().fields().len());
        assert_eq!(ln.num_rows(), run.threads.len() + run.tasks.len(), "{name}");
        let kinds = ln.column_by_name("kind").unwrap().as_string::<i32>();
        let labels = ln.column_by_name("label").unwrap().as_string::<i32>();
        let lanes = i64col(&ln, "lane");
        let starts = i64col(&ln, "start_ns");
        let ncalls = i64col(&ln, "num_calls");
        let t0 = run.meta_int("start_time_ns").unwrap();
        for i in 0..ln.num_rows() {
            assert_eq!(labels.value(i), lane_label(&run, lanes.value(i), 0));
            let n = (0..calls.len()).filter(|&c| calls.lane_of(c) == lanes.value(i)).count();
            assert_eq!(ncalls.value(i) as usize, n);
            if i < run.threads.len() {
                assert_eq!(kinds.value(i), "thread");
                assert_eq!(starts.value(i), t0 + run.threads[i].start_ns);
            } else {
                assert_eq!(kinds.value(i), "task");
                assert_eq!(starts.value(i), t0 + run.tasks[i - run.threads.len()].created_ns);
            }
        }
    }
}

#[test]
fn lanes_file_names_and_errors() {
    assert_eq!(lanes_path(Path::new("d/x.parquet")), Path::new("d/x.lanes.parquet"));
    assert_eq!(lanes_path(Path::new("d/x.events.parquet")), Path::new("d/x.lanes.parquet"));
    assert_eq!(lanes_path(Path::new("x.pq")), Path::new("x.pq.lanes.parquet"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.parquet");
    let empty = Run { region_names: vec!["a".into()], num_ranks: 1, ..Default::default() };
    assert_eq!(write_parquet(&empty, &Selection::new(vec![0], "x"), &p), Err(ExportError::NoCalls));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
    // untracked run: lane columns are -1, await null, lanes file empty but readable
    let mut run = Run { region_names: vec!["a".into()], num_ranks: 1, ..Default::default() };
    run.regions.push(row(0, &[0, 20], &[10, 30]));
    write_parquet(&run, &Selection::new(vec![0], "x"), &p).unwrap();
    let (ev, _) = read(&p);
    assert_eq!(i64col(&ev, "thread").values().to_vec(), vec![-1, -1]);
    assert_eq!(i64col(&ev, "lane").values().to_vec(), vec![-1, -1]);
    assert_eq!(ev.column_by_name("await_ns").unwrap().null_count(), 2);
    let (ln, _) = read(&lanes_path(&p));
    assert_eq!(ln.num_rows(), 0);
}
