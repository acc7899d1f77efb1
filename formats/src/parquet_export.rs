//! Parquet export: an events file (one row per call) and a lanes file (the thread and task
//! tables), for DuckDB, Polars, pandas/pyarrow, Spark.
//!
//! Events (`<stem>.parquet`): the events table of [`scope_profiler_analysis::events`] (one
//! row per call) in the reconstruction's form, for joins and group-bys in SQL: calls of each
//! selected rank in sorted order (start ascending, end descending) instead of recorded order,
//! times as absolute int64 ns instead of s, every lane column present and null-free (-1 where
//! absent), ids recomputed from the reconstruction, plus the reconstruction's `depth`, `lane`
//! and `exclusive_ns`. The columns named as in the events table ([`EventColumn`]: `call_index`,
//! `call_id`, `parent_id`, `thread`, `task`) take their names and types from it. All non-null
//! except `await_ns`:
//!
//! | column | type | events table column | meaning |
//! |---|---|---|---|
//! | `rank` | int32 | `rank` | MPI rank |
//! | `region` | dictionary<int32, utf8> | `name` | region name |
//! | `call_index` | int64 | `call_index` | position of the call in its region's arrays |
//! | `start_ns`, `end_ns`, `duration_ns` | int64 | `start`, `end`, `duration` | recording clock, ns |
//! | `call_id`, `parent_id` | int64 | `call_id`, `parent_id` | call id (sorted position, numbered across the selected ranks in order), parent's id or -1 |
//! | `thread`, `task` | int64 | `thread`, `task` | thread-table / task-table index, -1 where absent |
//! | `await_ns` | int64, null when not recorded | `await_duration` | ns the call's task was suspended inside the call |
//! | `depth` | int64 | - | 0 = root of its lane |
//! | `lane` | int64 | - | task index (>= 0), `-2 - thread` (thread lane), -1 (unknown) |
//! | `exclusive_ns` | int64 | - | duration minus the direct children on the same lane |
//!
//! Lanes (`<stem>.lanes.parquet`), one row per thread and task of the selected ranks
//! (threads first, by index, then tasks): `rank`, `lane`, `kind` ("thread"/"task"),
//! `index`, `label` (lane label), `name`, `thread_index`, `start_ns` (thread start / task
//! creation), `end_ns` (null while alive / not done) — both on the events' clock (the lane
//! tables' run-relative times plus metadata `start_time_ns`; relative when the run has no
//! start time) —, `num_calls` (rows of the events file on that lane), then per kind (null for
//! the other kind): `ident`, `native_id`, `daemon`, `cpu_ns`; `task_kind`, `coro_name`,
//! `steps`, `running_ns`, `suspended_ns`. Join with events on `(rank, lane)`.
//!
//! Both files carry key-value metadata `scope_profiler.label`, `scope_profiler.exporter`
//! and, when known, `scope_profiler.start_time_ns`. Snappy compression.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use scope_profiler_analysis::{EventColumn, Run, TaskRow, ThreadRow};

use crate::call_columns::{CallColumns, CallsPerLane};
use crate::export_output::write_atomic;
use crate::lane_rows::{lane_rows, LaneKind};
use crate::speedscope::EXPORTER;
use crate::{ExportError, Selection};

/// The lanes file beside events file `path`: `x.parquet` / `x.events.parquet` ->
/// `x.lanes.parquet`; any other name gets `.lanes.parquet` appended.
pub fn lanes_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = name.strip_suffix(".events.parquet").or_else(|| name.strip_suffix(".parquet")).unwrap_or(&name);
    path.with_file_name(format!("{base}.lanes.parquet"))
}

/// Schema of the events file (see the module documentation).
pub fn events_schema() -> Schema {
    let i64f = |n: &str| Field::new(n, DataType::Int64, false);
    Schema::new(vec![
        Field::new("rank", DataType::Int32, false),
        Field::new("region", DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), false),
        EventColumn::CallIndex.field(false),
        i64f("start_ns"),
        i64f("end_ns"),
        i64f("duration_ns"),
        EventColumn::CallId.field(false),
        EventColumn::ParentId.field(false),
        EventColumn::Thread.field(false),
        EventColumn::Task.field(false),
        Field::new("await_ns", DataType::Int64, true),
        i64f("depth"),
        i64f("lane"),
        i64f("exclusive_ns"),
    ])
}

/// Schema of the lanes file.
pub fn lanes_schema() -> Schema {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Schema::new(vec![
        f("rank", DataType::Int32, false),
        f("lane", DataType::Int64, false),
        f("kind", DataType::Utf8, false),
        f("index", DataType::Int64, false),
        f("label", DataType::Utf8, false),
        f("name", DataType::Utf8, false),
        f("thread_index", DataType::Int64, false),
        f("start_ns", DataType::Int64, false),
        f("end_ns", DataType::Int64, true),
        f("num_calls", DataType::Int64, false),
        f("ident", DataType::Int64, true),
        f("native_id", DataType::Int64, true),
        f("daemon", DataType::Boolean, true),
        f("cpu_ns", DataType::Int64, true),
        f("task_kind", DataType::Utf8, true),
        f("coro_name", DataType::Utf8, true),
        f("steps", DataType::Int64, true),
        f("running_ns", DataType::Int64, true),
        f("suspended_ns", DataType::Int64, true),
    ])
}

fn props(run: &Run, sel: &Selection) -> WriterProperties {
    let mut kv = vec![
        KeyValue::new("scope_profiler.label".into(), sel.label.clone()),
        KeyValue::new("scope_profiler.exporter".into(), EXPORTER.to_string()),
    ];
    if let Some(s) = run.meta_int("start_time_ns") {
        kv.push(KeyValue::new("scope_profiler.start_time_ns".into(), s.to_string()));
    }
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        // dictionary pages only where values repeat (names, kinds); the int64 columns are
        // mostly distinct and a dictionary attempt there only costs time
        .set_dictionary_enabled(false)
        .set_column_dictionary_enabled(ColumnPath::from("region"), true)
        .set_column_dictionary_enabled(ColumnPath::from("kind"), true)
        .set_key_value_metadata(Some(kv))
        .build()
}

fn pq_err(path: &Path) -> impl Fn(parquet::errors::ParquetError) -> ExportError + '_ {
    move |e| ExportError::Io(format!("could not write {}: {e}", path.display()))
}

/// The events of `sel` as one record batch ([`events_schema`]), plus calls per (rank, lane).
fn events_batch(run: &Run, sel: &Selection) -> Result<(RecordBatch, CallsPerLane), ExportError> {
    let c = CallColumns::of(run, &sel.ranks)?;
    let i64s = |v: &[i64]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(c.rank.clone())),
        Arc::new(c.region_dictionary(run)),
        i64s(&c.call_index),
        i64s(&c.start_ns),
        i64s(&c.end_ns),
        Arc::new(c.duration_ns()),
        i64s(&c.call_id),
        i64s(&c.parent_id),
        i64s(&c.thread),
        i64s(&c.task),
        Arc::new(Int64Array::from(c.await_ns.clone())),
        i64s(&c.depth),
        i64s(&c.lane),
        i64s(&c.exclusive_ns),
    ];
    let batch =
        RecordBatch::try_new(Arc::new(events_schema()), cols).map_err(|e| ExportError::Io(format!("arrow: {e}")))?;
    Ok((batch, c.per_lane))
}

/// The thread and task tables of the selected ranks as one record batch ([`lanes_schema`]).
fn lanes_batch(run: &Run, sel: &Selection, per_lane: &CallsPerLane) -> Result<RecordBatch, ExportError> {
    let rows = lane_rows(run, &sel.ranks, per_lane);
    // lane-table times are stored relative to metadata start_time_ns; put them on the
    // events' clock when it is known
    let t0 = run.meta_int("start_time_ns").unwrap_or(0);
    let thread = |f: fn(&ThreadRow) -> i64| -> Int64Array {
        rows.iter().map(|r| if let LaneKind::Thread(t) = r.kind { Some(f(t)) } else { None }).collect()
    };
    let task = |f: fn(&TaskRow) -> i64| -> Int64Array {
        rows.iter().map(|r| if let LaneKind::Task(t) = r.kind { Some(f(t)) } else { None }).collect()
    };
    let task_str = |f: fn(&TaskRow) -> &str| -> StringArray {
        rows.iter().map(|r| if let LaneKind::Task(t) = r.kind { Some(f(t)) } else { None }).collect()
    };
    let daemon: BooleanArray =
        rows.iter().map(|r| if let LaneKind::Thread(t) = r.kind { Some(t.daemon) } else { None }).collect();
    let kind: StringArray =
        rows.iter().map(|r| Some(if matches!(r.kind, LaneKind::Thread(_)) { "thread" } else { "task" })).collect();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| r.rank as i32).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| r.lane).collect::<Int64Array>()),
        Arc::new(kind),
        Arc::new(rows.iter().map(|r| r.index()).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(r.label.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(r.name())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| r.thread_index()).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| t0 + r.start_ns()).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.end_ns().map(|e| t0 + e)).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.num_calls).collect::<Int64Array>()),
        Arc::new(thread(|t| t.ident)),
        Arc::new(thread(|t| t.native_id)),
        Arc::new(daemon),
        Arc::new(thread(|t| t.cpu_ns)),
        Arc::new(task_str(|t| &t.kind)),
        Arc::new(task_str(|t| &t.coro_name)),
        Arc::new(task(|t| t.steps)),
        Arc::new(task(|t| t.running_ns)),
        Arc::new(task(|t| t.suspended_ns)),
    ];
    RecordBatch::try_new(Arc::new(lanes_schema()), cols).map_err(|e| ExportError::Io(format!("arrow: {e}")))
}

fn write_batch(path: &Path, batch: &RecordBatch, props: WriterProperties) -> Result<(), ExportError> {
    write_atomic(path, |f| {
        let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).map_err(pq_err(path))?;
        w.write(batch).map_err(pq_err(path))?;
        w.close().map_err(pq_err(path))?;
        Ok(())
    })
}

/// Write the events of `sel` to `path` and the lane tables to [`lanes_path`]`(path)`
/// (each atomically, parent directories created). Returns both paths, events first.
///
/// Errors: [`ExportError::Nesting`], [`ExportError::NoCalls`] (nothing written), and
/// [`ExportError::Io`] naming the path.
pub fn write_parquet(run: &Run, sel: &Selection, path: &Path) -> Result<Vec<PathBuf>, ExportError> {
    let applied = sel.apply(run);
    let run: &Run = &applied;
    let (events, per_lane) = events_batch(run, sel)?;
    let lanes = lanes_batch(run, sel, &per_lane)?;
    let lanes_file = lanes_path(path);
    write_batch(path, &events, props(run, sel))?;
    write_batch(&lanes_file, &lanes, props(run, sel))?;
    Ok(vec![path.to_path_buf(), lanes_file])
}
