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
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use scope_profiler_analysis::{EventColumn, LaneLabels, Run};

use crate::export_lanes::reconstruct;
use crate::export_output::write_atomic;
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

/// Calls per (rank, lane).
type CallsPerLane = HashMap<(u32, i64), i64>;

/// The events of `sel` as one record batch ([`events_schema`]), plus calls per (rank, lane).
fn events_batch(run: &Run, sel: &Selection) -> Result<(RecordBatch, CallsPerLane), ExportError> {
    let all = reconstruct(run, &sel.ranks)?;
    let n: usize = all.iter().map(|r| r.calls.len()).sum();
    let mut rank = Vec::with_capacity(n);
    let mut region = StringDictionaryBuilder::<Int32Type>::with_capacity(n, run.region_names.len(), 1024);
    let (mut call_index, mut start, mut end, mut dur) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut call_id, mut parent_id, mut thread, mut task) =
        (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut await_ns: Vec<Option<i64>> = Vec::with_capacity(n);
    let (mut depth, mut lane, mut excl) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut per_lane: CallsPerLane = HashMap::new();
    let mut base = 0i64;
    for r in &all {
        let c = &r.calls;
        // region keys of this rank's rows, in dictionary order of first use
        let names: Vec<&str> = r
            .rows
            .iter()
            .map(|&row| run.region_names.get(run.regions[row].region as usize).map(String::as_str).unwrap_or("?"))
            .collect();
        for id in 0..c.len() {
            let ri = c.region_index[id] as usize;
            let row = &run.regions[r.rows[ri]];
            let ci = c.call_index[id];
            let at = |a: &Option<Int64Array>| a.as_ref().and_then(|a| a.values().get(ci as usize).copied());
            rank.push(r.rank as i32);
            region.append_value(names[ri]);
            call_index.push(ci as i64);
            start.push(c.start_ns[id]);
            end.push(c.end_ns[id]);
            dur.push(c.end_ns[id] - c.start_ns[id]);
            call_id.push(base + id as i64);
            parent_id.push(if c.parent[id] < 0 { -1 } else { base + c.parent[id] as i64 });
            thread.push(at(&row.thread_ids).unwrap_or(-1));
            task.push(at(&row.task_ids).unwrap_or(-1));
            await_ns.push(at(&row.await_ns));
            depth.push(c.depth[id] as i64);
            let l = c.lane_of(id);
            lane.push(l);
            *per_lane.entry((r.rank, l)).or_default() += 1;
            excl.push(c.exclusive_ns[id]);
        }
        base += c.len() as i64;
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(rank)),
        Arc::new(region.finish()),
        Arc::new(Int64Array::from(call_index)),
        Arc::new(Int64Array::from(start)),
        Arc::new(Int64Array::from(end)),
        Arc::new(Int64Array::from(dur)),
        Arc::new(Int64Array::from(call_id)),
        Arc::new(Int64Array::from(parent_id)),
        Arc::new(Int64Array::from(thread)),
        Arc::new(Int64Array::from(task)),
        Arc::new(Int64Array::from(await_ns)),
        Arc::new(Int64Array::from(depth)),
        Arc::new(Int64Array::from(lane)),
        Arc::new(Int64Array::from(excl)),
    ];
    let batch =
        RecordBatch::try_new(Arc::new(events_schema()), cols).map_err(|e| ExportError::Io(format!("arrow: {e}")))?;
    Ok((batch, per_lane))
}

/// The thread and task tables of the selected ranks as one record batch ([`lanes_schema`]).
fn lanes_batch(run: &Run, sel: &Selection, per_lane: &CallsPerLane) -> Result<RecordBatch, ExportError> {
    let mut rank = Vec::new();
    let mut lane = Vec::new();
    let mut kind: Vec<&str> = Vec::new();
    let mut index = Vec::new();
    let mut label = Vec::new();
    let mut name: Vec<String> = Vec::new();
    let mut thread_index = Vec::new();
    let mut start = Vec::new();
    let mut end: Vec<Option<i64>> = Vec::new();
    let mut num_calls = Vec::new();
    let mut ident: Vec<Option<i64>> = Vec::new();
    let mut native_id: Vec<Option<i64>> = Vec::new();
    let mut daemon: Vec<Option<bool>> = Vec::new();
    let mut cpu: Vec<Option<i64>> = Vec::new();
    let mut task_kind: Vec<Option<String>> = Vec::new();
    let mut coro: Vec<Option<String>> = Vec::new();
    let mut steps: Vec<Option<i64>> = Vec::new();
    let mut running: Vec<Option<i64>> = Vec::new();
    let mut suspended: Vec<Option<i64>> = Vec::new();
    let mut ranks = sel.ranks.clone();
    ranks.dedup();
    // lane-table times are stored relative to metadata start_time_ns; put them on the
    // events' clock when it is known
    let t0 = run.meta_int("start_time_ns").unwrap_or(0);
    let abs = |v: i64| if v < 0 { None } else { Some(t0 + v) };
    for &rk in &ranks {
        let labels = LaneLabels::new(run, rk);
        let mut threads: Vec<_> = run.rank_threads(rk).collect();
        threads.sort_by_key(|t| t.index);
        for t in threads {
            let l = -2 - t.index;
            rank.push(rk as i32);
            lane.push(l);
            kind.push("thread");
            index.push(t.index);
            label.push(labels.label(l));
            name.push(t.name.clone());
            thread_index.push(t.index);
            start.push(t0 + t.start_ns);
            end.push(abs(t.end_ns));
            num_calls.push(per_lane.get(&(rk, l)).copied().unwrap_or(0));
            ident.push(Some(t.ident));
            native_id.push(Some(t.native_id));
            daemon.push(Some(t.daemon));
            cpu.push(Some(t.cpu_ns));
            task_kind.push(None);
            coro.push(None);
            steps.push(None);
            running.push(None);
            suspended.push(None);
        }
        let mut tasks: Vec<_> = run.rank_tasks(rk).collect();
        tasks.sort_by_key(|t| t.index);
        for t in tasks {
            rank.push(rk as i32);
            lane.push(t.index);
            kind.push("task");
            index.push(t.index);
            label.push(labels.label(t.index));
            name.push(t.name.clone());
            thread_index.push(t.thread_index);
            start.push(t0 + t.created_ns);
            end.push(abs(t.done_ns));
            num_calls.push(per_lane.get(&(rk, t.index)).copied().unwrap_or(0));
            ident.push(None);
            native_id.push(None);
            daemon.push(None);
            cpu.push(None);
            task_kind.push(Some(t.kind.clone()));
            coro.push(Some(t.coro_name.clone()));
            steps.push(Some(t.steps));
            running.push(Some(t.running_ns));
            suspended.push(Some(t.suspended_ns));
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(rank)),
        Arc::new(Int64Array::from(lane)),
        Arc::new(StringArray::from(kind)),
        Arc::new(Int64Array::from(index)),
        Arc::new(StringArray::from(label)),
        Arc::new(StringArray::from(name)),
        Arc::new(Int64Array::from(thread_index)),
        Arc::new(Int64Array::from(start)),
        Arc::new(Int64Array::from(end)),
        Arc::new(Int64Array::from(num_calls)),
        Arc::new(Int64Array::from(ident)),
        Arc::new(Int64Array::from(native_id)),
        Arc::new(BooleanArray::from(daemon)),
        Arc::new(Int64Array::from(cpu)),
        Arc::new(StringArray::from(task_kind)),
        Arc::new(StringArray::from(coro)),
        Arc::new(Int64Array::from(steps)),
        Arc::new(Int64Array::from(running)),
        Arc::new(Int64Array::from(suspended)),
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
