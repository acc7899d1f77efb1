//! The per-call events table: one row per call of a list of region rows, as Arrow
//! ([`events_batch`]). It is `ProfilingResults.events()` / `Region.events()` as a table (what
//! `events_frame()` hands to polars, pandas and pyarrow).
//!
//! Columns, in this order ([`EventColumn`] names and types them once):
//!
//! | column | type | present | meaning |
//! |---|---|---|---|
//! | `name` | utf8 | always | region name |
//! | `rank` | int64 | always | MPI rank |
//! | `call_index` | int64 | always | position of the call in its region row's arrays |
//! | `start`, `end` | float64 | always | s on the recording clock minus `origin_s` |
//! | `duration` | float64 | always | `end - start`, s |
//! | `gpu_duration` | float64 | a row of the run has a GPU value >= 0 | GPU s (`-1e-9` where the call has none) |
//! | `call_id`, `parent_id` | int64 | a row of the run has both id columns | stored call id, parent's id or -1 |
//! | `thread` | int64 | the run has a thread table or a row with `thread_ids` | thread-table index, -1 = unknown |
//! | `task`, `await_duration` | int64, float64 | the run has a task table or a row with `task_ids` and `await_ns` | task-table index (-1 = none), s suspended inside the call |
//! | `metadata` | utf8 | a row of the run has `event_metadata` | the call's metadata dict as JSON text (as stored), null when empty |
//!
//! Which optional columns appear depends on the run alone ([`OptionalColumns`]), never on
//! the rows selected: an empty selection keeps them. Rows appear in the order given, each
//! row's calls in recorded order. An optional column holds nulls for the calls of rows that
//! lack it; a column is nullable exactly when it
//! holds a null. Seconds are `ns as f64 / 1e9` (Python's `float(ns) / 1e9`).
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use crate::run::{secs, RegionCalls, Run};

/// A column of the events table (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventColumn {
    Name,
    Rank,
    CallIndex,
    Start,
    End,
    Duration,
    GpuDuration,
    CallId,
    ParentId,
    Thread,
    Task,
    AwaitDuration,
    Metadata,
}

impl EventColumn {
    /// Every column in table order.
    pub const ALL: [EventColumn; 13] = [
        EventColumn::Name,
        EventColumn::Rank,
        EventColumn::CallIndex,
        EventColumn::Start,
        EventColumn::End,
        EventColumn::Duration,
        EventColumn::GpuDuration,
        EventColumn::CallId,
        EventColumn::ParentId,
        EventColumn::Thread,
        EventColumn::Task,
        EventColumn::AwaitDuration,
        EventColumn::Metadata,
    ];

    /// The column name (the key of the `events()` dicts).
    pub fn name(self) -> &'static str {
        match self {
            EventColumn::Name => "name",
            EventColumn::Rank => "rank",
            EventColumn::CallIndex => "call_index",
            EventColumn::Start => "start",
            EventColumn::End => "end",
            EventColumn::Duration => "duration",
            EventColumn::GpuDuration => "gpu_duration",
            EventColumn::CallId => "call_id",
            EventColumn::ParentId => "parent_id",
            EventColumn::Thread => "thread",
            EventColumn::Task => "task",
            EventColumn::AwaitDuration => "await_duration",
            EventColumn::Metadata => "metadata",
        }
    }

    /// The column's Arrow type.
    pub fn data_type(self) -> DataType {
        match self {
            EventColumn::Name | EventColumn::Metadata => DataType::Utf8,
            EventColumn::Rank
            | EventColumn::CallIndex
            | EventColumn::CallId
            | EventColumn::ParentId
            | EventColumn::Thread
            | EventColumn::Task => DataType::Int64,
            EventColumn::Start
            | EventColumn::End
            | EventColumn::Duration
            | EventColumn::GpuDuration
            | EventColumn::AwaitDuration => DataType::Float64,
        }
    }

    /// The column's field.
    pub fn field(self, nullable: bool) -> Field {
        Field::new(self.name(), self.data_type(), nullable)
    }
}

/// Why [`events_batch`] could not build the table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EventsError {
    /// A requested row position is not a row of the run.
    #[error("row {row} out of range (the run has {rows} region rows)")]
    RowOutOfRange { row: usize, rows: usize },
    /// A row's `event_metadata` is not a JSON list.
    #[error("region {region:?} on rank {rank}: event metadata is not a JSON list: {reason}")]
    BadMetadata { region: String, rank: u32, reason: String },
    /// Arrow refused the columns (a bug: they are built to one length).
    #[error("arrow: {0}")]
    Arrow(String),
}

fn gpu_of(r: &RegionCalls) -> Option<&Int64Array> {
    r.gpu_ns.as_ref().filter(|g| g.values().iter().any(|&v| v >= 0))
}

fn tasks_of(r: &RegionCalls) -> Option<(&Int64Array, &Int64Array)> {
    r.task_ids.as_ref().zip(r.await_ns.as_ref())
}

/// Per call of `r`: its metadata dict as stored (JSON text), `None` for an empty dict, a null
/// or a missing entry.
fn metadata_of(run: &Run, r: &RegionCalls) -> Result<Vec<Option<String>>, EventsError> {
    let mut out = vec![None; r.len()];
    let Some(text) = &r.event_metadata else { return Ok(out) };
    let items = crate::call_metadata::entries(text).map_err(|e| EventsError::BadMetadata {
        region: run.region_names.get(r.region as usize).cloned().unwrap_or_default(),
        rank: r.rank,
        reason: e.to_string(),
    })?;
    for (slot, raw) in out.iter_mut().zip(items) {
        let compact: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
        if compact != "{}" && compact != "null" {
            *slot = Some(raw.to_string());
        }
    }
    Ok(out)
}

/// Which optional columns a run has: one of its region rows carries them (for `gpu`, a GPU
/// value >= 0). The events table has exactly these, whatever rows a query selects, so its
/// schema depends on the run and the query's `metadata` flag, never on the rows selected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptionalColumns {
    pub gpu: bool,
    pub ids: bool,
    pub thread: bool,
    pub task: bool,
    pub metadata: bool,
}

impl OptionalColumns {
    /// The optional columns of `run`: a thread column also when the run has a thread table,
    /// task columns also when it has a task table (a tracked run without calls).
    pub fn of(run: &Run) -> Self {
        let rows = &run.regions;
        OptionalColumns {
            gpu: rows.iter().any(|r| gpu_of(r).is_some()),
            ids: rows.iter().any(|r| r.call_ids.is_some() && r.parent_ids.is_some()),
            thread: !run.threads.is_empty() || rows.iter().any(|r| r.thread_ids.is_some()),
            task: !run.tasks.is_empty() || rows.iter().any(|r| tasks_of(r).is_some()),
            metadata: rows.iter().any(|r| r.event_metadata.is_some()),
        }
    }
}

/// A column of `n` values, `Some` per row that has it, nulls for the others.
fn extend_opt<T: Copy>(col: &mut Vec<Option<T>>, values: Option<impl Iterator<Item = T>>, m: usize) {
    match values {
        Some(v) => col.extend(v.map(Some)),
        None => col.extend(std::iter::repeat_n(None, m)),
    }
}

/// The events table (module documentation) of the region rows `rows` (positions in
/// `run.regions`, in this order); `origin_s` (s) is subtracted from starts and ends.
///
/// Errors: [`EventsError::RowOutOfRange`], [`EventsError::BadMetadata`].
pub fn events_batch(run: &Run, rows: &[usize], origin_s: f64) -> Result<RecordBatch, EventsError> {
    events_batch_with(run, rows, origin_s, true)
}

/// [`events_batch`], with the `metadata` column only when `metadata` is true (`false`: the
/// per-call metadata is not read at all; `events_frame()` has no such column).
pub fn events_batch_with(run: &Run, rows: &[usize], origin_s: f64, metadata: bool) -> Result<RecordBatch, EventsError> {
    let mut sel = Vec::with_capacity(rows.len());
    for &row in rows {
        sel.push(run.regions.get(row).ok_or(EventsError::RowOutOfRange { row, rows: run.regions.len() })?);
    }
    let n: usize = sel.iter().map(|r| r.len()).sum();
    // the optional columns are those of the run, not of the selected rows: a query selecting
    // no row (or rows without them) keeps the schema
    let has = OptionalColumns::of(run);
    let (any_gpu, any_ids, any_thread, any_task) = (has.gpu, has.ids, has.thread, has.task);
    let any_meta = metadata && has.metadata;
    let cap = |on: bool| if on { n } else { 0 };
    let mut name = StringBuilder::with_capacity(n, n * 8);
    let (mut rank, mut call_index) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut start, mut end, mut duration) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let mut gpu: Vec<Option<f64>> = Vec::with_capacity(cap(any_gpu));
    let mut call_id: Vec<Option<i64>> = Vec::with_capacity(cap(any_ids));
    let mut parent_id: Vec<Option<i64>> = Vec::with_capacity(cap(any_ids));
    let mut thread: Vec<Option<i64>> = Vec::with_capacity(cap(any_thread));
    let mut task: Vec<Option<i64>> = Vec::with_capacity(cap(any_task));
    let mut await_s: Vec<Option<f64>> = Vec::with_capacity(cap(any_task));
    let mut meta = StringBuilder::with_capacity(cap(any_meta), 0);
    for r in &sel {
        let m = r.len();
        let nm = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("");
        for _ in 0..m {
            name.append_value(nm);
        }
        rank.extend(std::iter::repeat_n(r.rank as i64, m));
        call_index.extend(0..m as i64);
        for (&s, &e) in r.start_ns.values().iter().zip(r.end_ns.values().iter()) {
            let (a, b) = (secs(s) - origin_s, secs(e) - origin_s);
            start.push(a);
            end.push(b);
            duration.push(b - a);
        }
        if any_gpu {
            extend_opt(&mut gpu, gpu_of(r).map(|g| g.values().iter().map(|&v| secs(v))), m);
        }
        if any_ids {
            let ids = r.call_ids.as_ref().zip(r.parent_ids.as_ref()).map(|(c, p)| (c.to_vec(), p.to_vec()));
            extend_opt(&mut call_id, ids.as_ref().map(|(c, _)| c.iter().copied()), m);
            extend_opt(&mut parent_id, ids.as_ref().map(|(_, p)| p.iter().copied()), m);
        }
        if any_thread {
            extend_opt(&mut thread, r.thread_ids.as_ref().map(|t| t.values().iter().copied()), m);
        }
        if any_task {
            let t = tasks_of(r);
            extend_opt(&mut task, t.map(|(t, _)| t.values().iter().copied()), m);
            extend_opt(&mut await_s, t.map(|(_, a)| a.values().iter().map(|&v| secs(v))), m);
        }
        if any_meta {
            for value in metadata_of(run, r)? {
                meta.append_option(value);
            }
        }
    }
    let mut cols: Vec<(EventColumn, ArrayRef)> = vec![
        (EventColumn::Name, Arc::new(name.finish())),
        (EventColumn::Rank, Arc::new(Int64Array::from(rank))),
        (EventColumn::CallIndex, Arc::new(Int64Array::from(call_index))),
        (EventColumn::Start, Arc::new(Float64Array::from(start))),
        (EventColumn::End, Arc::new(Float64Array::from(end))),
        (EventColumn::Duration, Arc::new(Float64Array::from(duration))),
    ];
    if any_gpu {
        cols.push((EventColumn::GpuDuration, Arc::new(Float64Array::from(gpu))));
    }
    if any_ids {
        cols.push((EventColumn::CallId, Arc::new(Int64Array::from(call_id))));
        cols.push((EventColumn::ParentId, Arc::new(Int64Array::from(parent_id))));
    }
    if any_thread {
        cols.push((EventColumn::Thread, Arc::new(Int64Array::from(thread))));
    }
    if any_task {
        cols.push((EventColumn::Task, Arc::new(Int64Array::from(task))));
        cols.push((EventColumn::AwaitDuration, Arc::new(Float64Array::from(await_s))));
    }
    if any_meta {
        cols.push((EventColumn::Metadata, Arc::new(meta.finish())));
    }
    let fields: Vec<Field> = cols.iter().map(|(c, a)| c.field(a.null_count() > 0)).collect();
    let arrays = cols.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| EventsError::Arrow(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};

    fn run() -> Run {
        let mut a = RegionCalls::new(
            0,
            0,
            Int64Array::from(vec![1_000_000_000, 2_500_000_000]),
            Int64Array::from(vec![1_250_000_000, 4_000_000_000]),
        );
        a.gpu_ns = Some(Int64Array::from(vec![-1, 300_000_000]));
        a.call_ids = Some(Int64Array::from(vec![0, 2]).into());
        a.parent_ids = Some(Int64Array::from(vec![-1, -1]).into());
        a.thread_ids = Some(Int64Array::from(vec![0, 1]));
        a.event_metadata = Some(r#"[{"step": 1, "tag": "x"}, {}]"#.into());
        let b = RegionCalls::new(1, 1, Int64Array::from(vec![3_000_000_000]), Int64Array::from(vec![3_000_000_500]));
        // GPU column of no value: counts as none
        let mut c = RegionCalls::new(1, 0, Int64Array::from(vec![5]), Int64Array::from(vec![6]));
        c.gpu_ns = Some(Int64Array::from(vec![-1]));
        c.task_ids = Some(Int64Array::from(vec![3]));
        c.await_ns = Some(Int64Array::from(vec![2_000_000]));
        Run { region_names: vec!["a".into(), "b".into()], regions: vec![a, b, c], num_ranks: 2, ..Default::default() }
    }

    fn names(b: &RecordBatch) -> Vec<String> {
        b.schema().fields().iter().map(|f| f.name().clone()).collect()
    }
    fn ints(b: &RecordBatch, c: &str) -> Vec<Option<i64>> {
        b.column_by_name(c).unwrap().as_primitive::<Int64Type>().iter().collect()
    }
    fn floats(b: &RecordBatch, c: &str) -> Vec<Option<f64>> {
        b.column_by_name(c).unwrap().as_primitive::<Float64Type>().iter().collect()
    }

    #[test]
    fn rows_without_optional_columns_give_the_six_base_columns() {
        let mut r = run();
        r.regions.truncate(2);
        r.regions[0] = RegionCalls::new(0, 0, Int64Array::from(vec![1]), Int64Array::from(vec![2]));
        assert_eq!(
            names(&events_batch(&r, &[0, 1], 0.0).unwrap()),
            vec!["name", "rank", "call_index", "start", "end", "duration"]
        );
        // a row without the run's optional columns gets them as nulls
        let b = events_batch(&run(), &[1], 0.0).unwrap();
        assert_eq!(b.num_columns(), 13);
        assert_eq!(ints(&b, "thread"), vec![None]);
        assert_eq!(ints(&b, "rank"), vec![Some(1)]);
        assert_eq!(floats(&b, "start"), vec![Some(3.0)]);
        assert_eq!(floats(&b, "end"), vec![Some(3.0000005)]);
        assert_eq!(floats(&b, "duration"), vec![Some(3.0000005 - 3.0)]);
        assert!(!b.schema().field_with_name("start").unwrap().is_nullable());
        // no row selected: the same columns
        assert_eq!(names(&events_batch(&run(), &[], 0.0).unwrap()), names(&b));
    }

    #[test]
    fn optional_columns_appear_when_a_row_has_them_with_nulls_elsewhere() {
        let b = events_batch(&run(), &[0, 1, 2], 1.0).unwrap();
        assert_eq!(
            names(&b),
            vec![
                "name",
                "rank",
                "call_index",
                "start",
                "end",
                "duration",
                "gpu_duration",
                "call_id",
                "parent_id",
                "thread",
                "task",
                "await_duration",
                "metadata"
            ]
        );
        let name: Vec<&str> = b.column_by_name("name").unwrap().as_string::<i32>().iter().flatten().collect();
        assert_eq!(name, vec!["a", "a", "b", "b"]);
        assert_eq!(ints(&b, "rank"), vec![Some(0), Some(0), Some(1), Some(0)]);
        assert_eq!(ints(&b, "call_index"), vec![Some(0), Some(1), Some(0), Some(0)]);
        assert_eq!(floats(&b, "start"), vec![Some(0.0), Some(1.5), Some(2.0), Some(5e-9 - 1.0)]);
        assert_eq!(floats(&b, "end"), vec![Some(0.25), Some(3.0), Some(3.0000005 - 1.0), Some(6e-9 - 1.0)]);
        assert_eq!(floats(&b, "duration")[1], Some(1.5));
        assert_eq!(floats(&b, "gpu_duration"), vec![Some(-1e-9), Some(0.3), None, None]);
        assert_eq!(ints(&b, "call_id"), vec![Some(0), Some(2), None, None]);
        assert_eq!(ints(&b, "parent_id"), vec![Some(-1), Some(-1), None, None]);
        assert_eq!(ints(&b, "thread"), vec![Some(0), Some(1), None, None]);
        assert_eq!(ints(&b, "task"), vec![None, None, None, Some(3)]);
        assert_eq!(floats(&b, "await_duration"), vec![None, None, None, Some(0.002)]);
        let meta: Vec<Option<&str>> = b.column_by_name("metadata").unwrap().as_string::<i32>().iter().collect();
        assert_eq!(meta, vec![Some(r#"{"step": 1, "tag": "x"}"#), None, None, None]);
        let schema = b.schema();
        assert!(!schema.field_with_name("start").unwrap().is_nullable());
        assert!(schema.field_with_name("thread").unwrap().is_nullable());
        for c in EventColumn::ALL {
            assert_eq!(schema.field_with_name(c.name()).unwrap().data_type(), &c.data_type());
        }
    }

    #[test]
    fn bad_rows_and_metadata_are_errors() {
        let mut r = run();
        assert_eq!(events_batch(&r, &[3], 0.0).unwrap_err(), EventsError::RowOutOfRange { row: 3, rows: 3 });
        r.regions[0].event_metadata = Some("{not json".into());
        let err = events_batch(&r, &[0], 0.0).unwrap_err();
        assert!(err.to_string().starts_with("region \"a\" on rank 0: event metadata is not a JSON list"), "{err}");
        assert_eq!(events_batch(&r, &[], 0.0).unwrap().num_rows(), 0);
        // without the metadata column the metadata is not read
        let b = events_batch_with(&r, &[0], 0.0, false).unwrap();
        assert_eq!(b.num_columns(), 12);
        assert!(b.column_by_name("metadata").is_none());
    }
}
