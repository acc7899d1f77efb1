//! The per-run tables of a dataset as Arrow record batches: `calls`, `threads`, `tasks` and
//! `regions` (schemas in `docs/datasets.md` and [`Table::schema`]). None has the `run`
//! column: it is the Hive partition (`<table>/run=<id>/`).
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use scope_profiler_analysis::{Run, TaskRow, ThreadRow};

use crate::call_columns::CallColumns;
use crate::lane_rows::{lane_rows, LaneKind, LaneRow};
use crate::ExportError;

/// A per-run table of the dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Calls,
    Threads,
    Tasks,
    Regions,
}

fn f(name: &str, t: DataType, nullable: bool) -> Field {
    Field::new(name, t, nullable)
}

impl Table {
    /// Every table, in directory order.
    pub const ALL: [Table; 4] = [Table::Calls, Table::Threads, Table::Tasks, Table::Regions];

    /// The table's directory name under the dataset.
    pub fn name(self) -> &'static str {
        match self {
            Table::Calls => "calls",
            Table::Threads => "threads",
            Table::Tasks => "tasks",
            Table::Regions => "regions",
        }
    }

    /// The table called `name`.
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The table's columns (without `run`).
    pub fn schema(self) -> Schema {
        use DataType::{Boolean, Int32, Int64, Utf8};
        let fields = match self {
            Table::Calls => vec![
                f("rank", Int32, false),
                f("region", Utf8, false),
                f("lane", Int64, false),
                f("thread", Int64, false),
                f("task", Int64, false),
                f("start_ns", Int64, false),
                f("duration_ns", Int64, false),
                f("exclusive_ns", Int64, false),
                f("await_ns", Int64, true),
                f("depth", Int64, false),
                f("call_id", Int64, false),
                f("parent_id", Int64, false),
            ],
            Table::Threads => vec![
                f("rank", Int32, false),
                f("thread", Int64, false),
                f("name", Utf8, false),
                f("label", Utf8, false),
                f("ident", Int64, false),
                f("native_id", Int64, false),
                f("daemon", Boolean, false),
                f("start_ns", Int64, false),
                f("end_ns", Int64, true),
                f("cpu_ns", Int64, false),
                f("num_calls", Int64, false),
            ],
            Table::Tasks => vec![
                f("rank", Int32, false),
                f("task", Int64, false),
                f("name", Utf8, false),
                f("label", Utf8, false),
                f("kind", Utf8, false),
                f("coro_name", Utf8, false),
                f("thread", Int64, false),
                f("start_ns", Int64, false),
                f("end_ns", Int64, true),
                f("steps", Int64, false),
                f("running_ns", Int64, false),
                f("suspended_ns", Int64, false),
                f("num_calls", Int64, false),
            ],
            Table::Regions => vec![
                f("rank", Int32, false),
                f("region", Utf8, false),
                f("calls", Int64, false),
                f("total_ns", Int64, false),
                f("exclusive_ns", Int64, false),
                f("min_ns", Int64, false),
                f("max_ns", Int64, false),
                f("await_ns", Int64, true),
            ],
        };
        Schema::new(fields)
    }

    /// Columns holding repeated strings: dictionary-encoded in the Parquet files.
    pub(crate) fn dictionary_columns(self) -> &'static [&'static str] {
        match self {
            Table::Calls | Table::Regions => &["region"],
            Table::Threads => &["name", "label"],
            Table::Tasks => &["name", "label", "kind", "coro_name"],
        }
    }
}

/// The tables of one run, each `None` when it has no row.
pub struct RunTables {
    pub calls: Option<RecordBatch>,
    pub threads: Option<RecordBatch>,
    pub tasks: Option<RecordBatch>,
    pub regions: Option<RecordBatch>,
}

impl RunTables {
    /// `(table, batch)` of the tables that have rows.
    pub fn present(&self) -> impl Iterator<Item = (Table, &RecordBatch)> {
        [(Table::Calls, &self.calls), (Table::Threads, &self.threads), (Table::Tasks, &self.tasks)]
            .into_iter()
            .chain([(Table::Regions, &self.regions)])
            .filter_map(|(t, b)| b.as_ref().map(|b| (t, b)))
    }
    /// Rows of `table` (0 when it has none).
    pub fn rows(&self, table: Table) -> usize {
        self.present().find(|(t, _)| *t == table).map(|(_, b)| b.num_rows()).unwrap_or(0)
    }
}

fn batch(table: Table, cols: Vec<ArrayRef>) -> Result<Option<RecordBatch>, ExportError> {
    if cols.first().is_none_or(|c| c.is_empty()) {
        return Ok(None);
    }
    RecordBatch::try_new(Arc::new(table.schema()), cols).map(Some).map_err(|e| ExportError::Io(format!("arrow: {e}")))
}

/// The origin of the run's call times: metadata `start_time_ns` (`events_frame()`'s
/// `time_origin`), else the first call's start.
pub fn time_origin(run: &Run) -> i64 {
    run.meta_int("start_time_ns").unwrap_or_else(|| {
        run.regions.iter().filter_map(|r| r.start_ns.values().iter().min().copied()).min().unwrap_or(0)
    })
}

/// The tables of `run` (every rank). Errors: `Nesting` when a rank cannot be reconstructed.
pub fn run_tables(run: &Run) -> Result<RunTables, ExportError> {
    let ranks: Vec<u32> = (0..run.num_ranks.max(1)).collect();
    let calls = match CallColumns::of(run, &ranks) {
        Ok(c) => c,
        Err(ExportError::NoCalls) => CallColumns::default(),
        Err(e) => return Err(e),
    };
    let lanes = lane_rows(run, &ranks, &calls.per_lane);
    Ok(RunTables {
        calls: calls_batch(run, &calls)?,
        threads: threads_batch(&lanes)?,
        tasks: tasks_batch(&lanes)?,
        regions: regions_batch(run, &calls)?,
    })
}

fn calls_batch(run: &Run, c: &CallColumns) -> Result<Option<RecordBatch>, ExportError> {
    let i64s = |v: &[i64]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
    let exclusive: ArrayRef = i64s(&c.exclusive_ns);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(c.rank.clone())),
        Arc::new(c.region_names(run)),
        i64s(&c.lane),
        i64s(&c.thread),
        i64s(&c.task),
        Arc::new(c.start_from(time_origin(run))),
        Arc::new(c.duration_ns()),
        exclusive,
        Arc::new(Int64Array::from(c.await_ns.clone())),
        i64s(&c.depth),
        i64s(&c.call_id),
        i64s(&c.parent_id),
    ];
    batch(Table::Calls, cols)
}

fn threads_batch(lanes: &[LaneRow<'_>]) -> Result<Option<RecordBatch>, ExportError> {
    let rows: Vec<(&LaneRow, &ThreadRow)> =
        lanes.iter().filter_map(|l| if let LaneKind::Thread(t) = l.kind { Some((l, t)) } else { None }).collect();
    let ints =
        |g: fn(&ThreadRow) -> i64| -> ArrayRef { Arc::new(rows.iter().map(|(_, t)| g(t)).collect::<Int64Array>()) };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|(l, _)| l.rank as i32).collect::<Int32Array>()),
        ints(|t| t.index),
        Arc::new(rows.iter().map(|(_, t)| Some(t.name.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|(l, _)| Some(l.label.as_str())).collect::<StringArray>()),
        ints(|t| t.ident),
        ints(|t| t.native_id),
        Arc::new(rows.iter().map(|(_, t)| Some(t.daemon)).collect::<BooleanArray>()),
        Arc::new(rows.iter().map(|(l, _)| l.start_ns()).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|(l, _)| l.end_ns()).collect::<Int64Array>()),
        ints(|t| t.cpu_ns),
        Arc::new(rows.iter().map(|(l, _)| l.num_calls).collect::<Int64Array>()),
    ];
    batch(Table::Threads, cols)
}

fn tasks_batch(lanes: &[LaneRow<'_>]) -> Result<Option<RecordBatch>, ExportError> {
    let rows: Vec<(&LaneRow, &TaskRow)> =
        lanes.iter().filter_map(|l| if let LaneKind::Task(t) = l.kind { Some((l, t)) } else { None }).collect();
    let ints =
        |g: fn(&TaskRow) -> i64| -> ArrayRef { Arc::new(rows.iter().map(|(_, t)| g(t)).collect::<Int64Array>()) };
    let strs = |g: fn(&TaskRow) -> &str| -> ArrayRef {
        Arc::new(rows.iter().map(|(_, t)| Some(g(t))).collect::<StringArray>())
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|(l, _)| l.rank as i32).collect::<Int32Array>()),
        ints(|t| t.index),
        strs(|t| &t.name),
        Arc::new(rows.iter().map(|(l, _)| Some(l.label.as_str())).collect::<StringArray>()),
        strs(|t| &t.kind),
        strs(|t| &t.coro_name),
        ints(|t| t.thread_index),
        Arc::new(rows.iter().map(|(l, _)| l.start_ns()).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|(l, _)| l.end_ns()).collect::<Int64Array>()),
        ints(|t| t.steps),
        ints(|t| t.running_ns),
        ints(|t| t.suspended_ns),
        Arc::new(rows.iter().map(|(l, _)| l.num_calls).collect::<Int64Array>()),
    ];
    batch(Table::Tasks, cols)
}

/// Per (rank, region): calls, total, exclusive, min, max and await ns.
#[derive(Default)]
struct RegionTotals {
    calls: i64,
    total: i64,
    exclusive: i64,
    min: i64,
    max: i64,
    awaited: Option<i64>,
}

fn regions_batch(run: &Run, c: &CallColumns) -> Result<Option<RecordBatch>, ExportError> {
    let mut by: BTreeMap<(i32, u32), RegionTotals> = BTreeMap::new();
    for i in 0..c.len() {
        let d = c.end_ns[i] - c.start_ns[i];
        let t = by.entry((c.rank[i], c.region[i])).or_insert(RegionTotals { min: i64::MAX, ..Default::default() });
        t.calls += 1;
        t.total += d;
        t.exclusive += c.exclusive_ns[i];
        t.min = t.min.min(d);
        t.max = t.max.max(d);
        if let Some(a) = c.await_ns[i] {
            t.awaited = Some(t.awaited.unwrap_or(0) + a);
        }
    }
    let name = |r: u32| run.region_names.get(r as usize).map(String::as_str).unwrap_or("?");
    let ints = |g: fn(&RegionTotals) -> i64| -> ArrayRef { Arc::new(by.values().map(g).collect::<Int64Array>()) };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(by.keys().map(|k| k.0).collect::<Int32Array>()),
        Arc::new(by.keys().map(|k| Some(name(k.1))).collect::<StringArray>()),
        ints(|t| t.calls),
        ints(|t| t.total),
        ints(|t| t.exclusive),
        ints(|t| t.min),
        ints(|t| t.max),
        Arc::new(by.values().map(|t| t.awaited).collect::<Int64Array>()),
    ];
    batch(Table::Regions, cols)
}
