//! Tables for data-frame libraries as Arrow record batches: the lane tables of a run
//! (`threads_frame()`, `tasks_frame()`), the lane summaries of a rank (`thread_summary()`,
//! `task_summary()` and their frames) and the rows of a comparison. The Python views hand
//! a batch over as a table, or as one dict per row.
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{ArrowError, Field, Schema};

use crate::callstack::CallArrays;
use crate::compare::{CompareBy, Comparison};
use crate::lane_summary::{TaskSummaryRow, ThreadSummaryRow};
use crate::loop_blocks::LoopBlock;
use crate::run::{secs, Run, TaskRow, ThreadRow, UNKNOWN};

/// A batch of the named columns, in this order (a column is nullable iff it has nulls).
/// Errors when the columns differ in length.
pub fn of_columns(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> =
        columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns.into_iter().map(|(_, a)| a).collect())
}

fn ints(v: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(v))
}
fn floats(v: impl IntoIterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(v))
}
fn opt_floats(v: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(v))
}
fn bools(v: impl IntoIterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(v.into_iter().map(Some)))
}
fn strs<'a>(v: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(v))
}

/// The thread table (all ranks): `rank, index, name, ident, native_id, daemon, start_time,
/// end_time, cpu_time, alive, wall_time, cpu_time_total` (s since the run start;
/// `end_time`/`wall_time` null while alive): the fields of `ThreadInfo`, `cpu_time` the CPU
/// during the run and `cpu_time_total` the whole life, as in `thread_summary()`.
pub fn threads_table(run: &Run) -> Result<RecordBatch, ArrowError> {
    let t = &run.threads;
    let end = |x: &ThreadRow| (x.end_ns != UNKNOWN).then(|| secs(x.end_ns));
    of_columns(vec![
        ("rank", ints(t.iter().map(|x| x.rank as i64))),
        ("index", ints(t.iter().map(|x| x.index))),
        ("name", strs(t.iter().map(|x| x.name.as_str()))),
        ("ident", ints(t.iter().map(|x| x.ident))),
        ("native_id", ints(t.iter().map(|x| x.native_id))),
        ("daemon", bools(t.iter().map(|x| x.daemon))),
        ("start_time", floats(t.iter().map(|x| secs(x.start_ns)))),
        ("end_time", opt_floats(t.iter().map(end))),
        ("cpu_time", floats(t.iter().map(|x| secs(x.cpu_run_ns().unwrap_or(x.cpu_ns))))),
        ("alive", bools(t.iter().map(|x| x.end_ns == UNKNOWN))),
        ("wall_time", opt_floats(t.iter().map(|x| end(x).map(|e| e - secs(x.start_ns))))),
        ("cpu_time_total", floats(t.iter().map(|x| secs(x.cpu_ns)))),
    ])
}

/// The task table (all ranks): `rank, index, kind, name, coro_name, thread_index,
/// created_time, done_time, steps, running_time, awaiting_time, done, wall_time` - the
/// fields of `TaskInfo` (`done_time`/`wall_time` null when not done).
pub fn tasks_table(run: &Run) -> Result<RecordBatch, ArrowError> {
    let t = &run.tasks;
    let done = |x: &TaskRow| (x.done_ns != UNKNOWN).then(|| secs(x.done_ns));
    of_columns(vec![
        ("rank", ints(t.iter().map(|x| x.rank as i64))),
        ("index", ints(t.iter().map(|x| x.index))),
        ("kind", strs(t.iter().map(|x| x.kind.as_str()))),
        ("name", strs(t.iter().map(|x| x.name.as_str()))),
        ("coro_name", strs(t.iter().map(|x| x.coro_name.as_str()))),
        ("thread_index", ints(t.iter().map(|x| x.thread_index))),
        ("created_time", floats(t.iter().map(|x| secs(x.created_ns)))),
        ("done_time", opt_floats(t.iter().map(done))),
        ("steps", ints(t.iter().map(|x| x.steps))),
        ("running_time", floats(t.iter().map(|x| secs(x.running_ns)))),
        ("awaiting_time", floats(t.iter().map(|x| secs(x.suspended_ns)))),
        ("done", bools(t.iter().map(|x| x.done_ns != UNKNOWN))),
        ("wall_time", opt_floats(t.iter().map(|x| done(x).map(|d| d - secs(x.created_ns))))),
    ])
}

/// `thread_summary(rank)` as a table: `index, name, alive, wall_time, cpu_time,
/// cpu_time_total, num_calls, region_time, held_time, await_time, task_step_time,
/// task_await_time_sum, ready_wait_time, idle_time` (one row per thread-table row; s; null where a
/// row's value is unknown).
pub fn thread_summary_table(rows: &[ThreadSummaryRow]) -> Result<RecordBatch, ArrowError> {
    of_columns(vec![
        ("index", ints(rows.iter().map(|r| r.index))),
        ("name", strs(rows.iter().map(|r| r.name.as_str()))),
        ("alive", bools(rows.iter().map(|r| r.alive))),
        ("wall_time", opt_floats(rows.iter().map(|r| r.wall_time))),
        ("cpu_time", opt_floats(rows.iter().map(|r| r.cpu_time))),
        ("cpu_time_total", opt_floats(rows.iter().map(|r| r.cpu_time_total))),
        ("num_calls", ints(rows.iter().map(|r| r.num_calls))),
        ("region_time", floats(rows.iter().map(|r| r.region_time))),
        ("held_time", opt_floats(rows.iter().map(|r| r.held_time))),
        ("await_time", opt_floats(rows.iter().map(|r| r.await_time))),
        ("task_step_time", opt_floats(rows.iter().map(|r| r.task_step_time))),
        ("task_await_time_sum", opt_floats(rows.iter().map(|r| r.task_await_time_sum))),
        ("ready_wait_time", opt_floats(rows.iter().map(|r| r.ready_wait_time))),
        ("idle_time", opt_floats(rows.iter().map(|r| r.idle_time))),
    ])
}

/// `task_summary(rank)` as a table: `index, kind, name, coro_name, thread_index, thread,
/// done, wall_time, num_calls, region_time, held_time, await_time, ready_wait_time` (one row
/// per task/greenlet).
pub fn task_summary_table(rows: &[TaskSummaryRow]) -> Result<RecordBatch, ArrowError> {
    of_columns(vec![
        ("index", ints(rows.iter().map(|r| r.index))),
        ("kind", strs(rows.iter().map(|r| r.kind.as_str()))),
        ("name", strs(rows.iter().map(|r| r.name.as_str()))),
        ("coro_name", strs(rows.iter().map(|r| r.coro_name.as_str()))),
        ("thread_index", ints(rows.iter().map(|r| r.thread_index))),
        ("thread", strs(rows.iter().map(|r| r.thread.as_str()))),
        ("done", bools(rows.iter().map(|r| r.done))),
        ("wall_time", opt_floats(rows.iter().map(|r| r.wall_time))),
        ("num_calls", ints(rows.iter().map(|r| r.num_calls))),
        ("region_time", floats(rows.iter().map(|r| r.region_time))),
        ("held_time", opt_floats(rows.iter().map(|r| r.held_time))),
        ("await_time", opt_floats(rows.iter().map(|r| r.await_time))),
        ("ready_wait_time", opt_floats(rows.iter().map(|r| r.ready_wait_time))),
    ])
}

/// `loop_blocks(rank, threshold)` as a table: `thread, task, start, duration, region,
/// delayed_tasks` (s; `region` null when none was open, `delayed_tasks` when not known).
pub fn loop_blocks_table(rows: &[LoopBlock]) -> Result<RecordBatch, ArrowError> {
    of_columns(vec![
        ("thread", ints(rows.iter().map(|b| b.thread))),
        ("task", ints(rows.iter().map(|b| b.task))),
        ("start", floats(rows.iter().map(|b| b.start))),
        ("duration", floats(rows.iter().map(|b| b.duration))),
        ("region", Arc::new(StringArray::from_iter(rows.iter().map(|b| b.region.as_deref())))),
        ("delayed_tasks", Arc::new(Int64Array::from_iter(rows.iter().map(|b| b.delayed_tasks)))),
    ])
}

/// A region of a reconstruction as its calls show it: name, source file and line (`None`:
/// none recorded).
pub type CallSource<'a> = (&'a str, Option<&'a str>, Option<i64>);

/// The calls of a reconstruction as the rows of `build_call_stack`, in call id order:
/// `call_id, name, call_index, start, end` (s minus `origin`), `duration,
/// inclusive_duration, exclusive_duration` (s), `depth, parent` (a call id, null for a
/// root), `call_path` (the names from the root, `"a > b"`), `source_file, source_lineno`
/// (null when none) and `lane` (-1 without lanes). `regions[k]` is region index `k`.
pub fn call_stack_table(
    calls: &CallArrays,
    regions: &[CallSource<'_>],
    origin: f64,
) -> Result<RecordBatch, ArrowError> {
    let n = calls.len();
    let region = |id: usize| regions[calls.region_index[id] as usize];
    let mut paths: Vec<String> = Vec::with_capacity(n);
    for id in 0..n {
        let name = region(id).0;
        let parent = calls.parent[id];
        paths.push(if parent < 0 { name.to_string() } else { format!("{} > {name}", paths[parent as usize]) });
    }
    let col32 = |v: &[i32]| ints(v.iter().map(|&x| i64::from(x)));
    let secs_of = |v: &[i64], minus: f64| floats(v.iter().map(|&x| x as f64 / 1e9 - minus));
    let durations = || floats((0..n).map(|id| (calls.end_ns[id] - calls.start_ns[id]) as f64 / 1e9));
    let lanes: ArrayRef = if calls.lane.is_empty() { ints(std::iter::repeat_n(-1, n)) } else { col32(&calls.lane) };
    of_columns(vec![
        ("call_id", ints(0..n as i64)),
        ("name", strs((0..n).map(|id| region(id).0))),
        ("call_index", col32(&calls.call_index)),
        ("start", secs_of(&calls.start_ns, origin)),
        ("end", secs_of(&calls.end_ns, origin)),
        ("duration", durations()),
        ("inclusive_duration", durations()),
        ("exclusive_duration", secs_of(&calls.exclusive_ns, 0.0)),
        ("depth", col32(&calls.depth)),
        ("parent", Arc::new(Int64Array::from_iter(calls.parent.iter().map(|&p| (p >= 0).then_some(i64::from(p)))))),
        ("call_path", strs(paths.iter().map(String::as_str))),
        ("source_file", Arc::new(StringArray::from_iter((0..n).map(|id| region(id).1)))),
        ("source_lineno", Arc::new(Int64Array::from_iter((0..n).map(|id| region(id).2)))),
        ("lane", lanes),
    ])
}

/// The rows of a comparison: `name`, `path` (a list of names, by call path only),
/// `base_calls, new_calls, base_time, new_time, change, ci_low, ci_high, verdict, note`
/// (the keys of `scope-profiler diff --json`; null where a row has no value).
pub fn comparison_table(c: &Comparison) -> Result<RecordBatch, ArrowError> {
    let rows = &c.rows;
    let mut columns: Vec<(&str, ArrayRef)> = vec![("name", strs(rows.iter().map(|r| r.name.as_str())))];
    if c.by == CompareBy::Path {
        let mut b = ListBuilder::new(StringBuilder::new());
        for r in rows {
            r.key.iter().for_each(|n| b.values().append_value(n));
            b.append(true);
        }
        columns.push(("path", Arc::new(b.finish())));
    }
    columns.extend([
        ("base_calls", floats(rows.iter().map(|r| r.base_calls))),
        ("new_calls", floats(rows.iter().map(|r| r.new_calls))),
        ("base_time", floats(rows.iter().map(|r| r.base_time))),
        ("new_time", floats(rows.iter().map(|r| r.new_time))),
        ("change", opt_floats(rows.iter().map(|r| r.change))),
        ("ci_low", opt_floats(rows.iter().map(|r| r.ci_low))),
        ("ci_high", opt_floats(rows.iter().map(|r| r.ci_high))),
        ("verdict", strs(rows.iter().map(|r| r.verdict.name()))),
        ("note", Arc::new(StringArray::from_iter(rows.iter().map(|r| r.note))) as ArrayRef),
    ]);
    of_columns(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;

    fn thread(rank: u32, index: i64, end_ns: i64) -> ThreadRow {
        ThreadRow {
            rank,
            index,
            ident: 100 + index,
            native_id: 200 + index,
            daemon: index == 1,
            start_ns: 1_000_000_000,
            end_ns,
            cpu_ns: 3_000_000_000,
            cpu_start_ns: 500_000_000,
            task_step_ns: -1,
            ready_wait_ns: -1,
            loop_idle_ns: -1,
            name: format!("T{index}"),
        }
    }

    /// Times in s, the run's CPU (whole life minus the CPU at the start), null ends while alive.
    #[test]
    fn threads_table_holds_the_fields_of_thread_info() {
        let run = Run { threads: vec![thread(0, 0, UNKNOWN), thread(1, 1, 4_000_000_000)], ..Run::default() };
        let t = threads_table(&run).unwrap();
        assert_eq!(t.num_rows(), 2);
        let f = |name: &str| t.column_by_name(name).unwrap().as_primitive::<Float64Type>().clone();
        assert_eq!(f("start_time").values().to_vec(), vec![1.0, 1.0]);
        assert!(f("end_time").is_null(0) && f("end_time").value(1) == 4.0);
        assert!(f("wall_time").is_null(0) && f("wall_time").value(1) == 3.0);
        assert_eq!(f("cpu_time").values().to_vec(), vec![2.5, 2.5]);
        assert_eq!(f("cpu_time_total").values().to_vec(), vec![3.0, 3.0]);
        let alive = t.column_by_name("alive").unwrap().as_boolean().clone();
        assert_eq!((alive.value(0), alive.value(1)), (true, false));
        let ranks = t.column_by_name("rank").unwrap().as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(ranks, vec![0, 1]);
        assert!(!t.schema().field_with_name("start_time").unwrap().is_nullable());
        assert!(t.schema().field_with_name("end_time").unwrap().is_nullable());
    }

    /// A task never done has null done and wall times; a done one the difference in s.
    #[test]
    fn tasks_table_holds_the_fields_of_task_info() {
        let done = TaskRow::new(0, 0, "task", "Task-1", "main")
            .on_thread(0)
            .lifetime(2_000_000_000, 5_000_000_000)
            .timing(3, 1_000_000_000, 2_000_000_000);
        let open = TaskRow::new(0, 1, "greenlet", "g", "run").lifetime(1_000_000_000, UNKNOWN);
        let t = tasks_table(&Run { tasks: vec![done, open], ..Run::default() }).unwrap();
        let wall = t.column_by_name("wall_time").unwrap().as_primitive::<Float64Type>().clone();
        assert_eq!(wall.value(0), 3.0);
        assert!(wall.is_null(1));
        let kinds = t.column_by_name("kind").unwrap().as_string::<i32>().clone();
        assert_eq!((kinds.value(0), kinds.value(1)), ("task", "greenlet"));
        let running = t.column_by_name("running_time").unwrap().as_primitive::<Float64Type>().value(0);
        assert_eq!(running, 1.0);
    }

    /// The summary tables keep the rows' values and their unknowns as nulls.
    #[test]
    fn summary_tables_keep_values_and_unknowns() {
        let row = ThreadSummaryRow {
            index: 3,
            name: "worker".into(),
            listed: true,
            alive: false,
            wall_time: Some(2.0),
            cpu_time: None,
            cpu_time_total: Some(1.5),
            num_calls: 7,
            region_time: 1.25,
            held_time: None,
            await_time: None,
            task_step_time: None,
            task_await_time_sum: None,
            ready_wait_time: None,
            idle_time: None,
        };
        let t = thread_summary_table(&[row]).unwrap();
        let names: Vec<String> = t.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names[..3], ["index", "name", "alive"]);
        assert!(t.column_by_name("cpu_time").unwrap().is_null(0));
        let calls = t.column_by_name("num_calls").unwrap().as_primitive::<Int64Type>().value(0);
        assert_eq!(calls, 7);
        assert!(task_summary_table(&[]).unwrap().num_rows() == 0);
    }

    /// `outer` [0, 10 s] holding `inner` [2, 5 s]: the path, parent, times minus the origin.
    #[test]
    fn call_stack_table_lists_each_call_with_its_path() {
        let calls = CallArrays {
            region_index: vec![0, 1],
            call_index: vec![0, 0],
            start_ns: vec![0, 2_000_000_000],
            end_ns: vec![10_000_000_000, 5_000_000_000],
            depth: vec![0, 1],
            parent: vec![-1, 0],
            exclusive_ns: vec![7_000_000_000, 3_000_000_000],
            lane: Vec::new(),
            set_aside: Vec::new(),
        };
        let regions = [("outer", Some("a.py"), Some(3)), ("inner", None, None)];
        let t = call_stack_table(&calls, &regions, 1.0).unwrap();
        let f = |name: &str| t.column_by_name(name).unwrap().as_primitive::<Float64Type>().values().to_vec();
        let i = |name: &str| t.column_by_name(name).unwrap().as_primitive::<Int64Type>().clone();
        assert_eq!(f("start"), vec![-1.0, 1.0]);
        assert_eq!(f("duration"), vec![10.0, 3.0]);
        assert_eq!(f("exclusive_duration"), vec![7.0, 3.0]);
        let paths = t.column_by_name("call_path").unwrap().as_string::<i32>().clone();
        assert_eq!((paths.value(0), paths.value(1)), ("outer", "outer > inner"));
        assert!(i("parent").is_null(0) && i("parent").value(1) == 0);
        assert_eq!(i("lane").values().to_vec(), vec![-1, -1]);
        assert!(i("source_lineno").is_null(1) && i("source_lineno").value(0) == 3);
    }

    /// By call path the `path` column lists the names; a missing change is null.
    #[test]
    fn comparison_table_has_the_keys_of_diff_json() {
        use crate::compare::{DiffRow, SideInfo, Verdict};
        let row = DiffRow {
            name: "a;b".into(),
            key: vec!["a".to_string(), "b".to_string()],
            base_calls: 2.0,
            new_calls: 0.0,
            base_time: 0.5,
            new_time: 0.0,
            change: None,
            ci_low: None,
            ci_high: None,
            verdict: Verdict::Unchanged,
            note: Some("gone"),
        };
        let c = Comparison {
            base: SideInfo::default(),
            new: SideInfo::default(),
            by: CompareBy::Path,
            threshold: 0.05,
            row_level: 0.95,
            rows: vec![row],
        };
        let t = comparison_table(&c).unwrap();
        let names: Vec<String> = t.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names[..3], ["name", "path", "base_calls"]);
        assert_eq!(names.last().map(String::as_str), Some("note"));
        let path = t.column_by_name("path").unwrap().as_list::<i32>().value(0);
        let path: Vec<&str> = path.as_string::<i32>().iter().map(|s| s.unwrap()).collect();
        assert_eq!(path, ["a", "b"]);
        assert!(t.column_by_name("change").unwrap().is_null(0));
        assert_eq!(t.column_by_name("verdict").unwrap().as_string::<i32>().value(0), "unchanged");
    }
}
