//! The run model: one profiling run as columns.
//!
//! A [`Run`] holds every (region, rank) row of the reference's `rank_region_index`
//! with its per-call columns as Arrow [`Int64Array`]s, plus the thread and task
//! tables and the run metadata. It is what the HDF5 reader produces, what the
//! recorder's snapshot is turned into at `finalize()`, and what every analysis and
//! export consumes.
//!
//! Units: every timestamp and duration is an `i64` count of nanoseconds on the
//! recording clock (`CLOCK_MONOTONIC`, the clock of Python's `time.perf_counter_ns`).
//! Per-call `start_ns`/`end_ns` are absolute on that clock; lane-table timestamps
//! (`ThreadRow::start_ns`, `TaskRow::created_ns`, ...) are relative to the run
//! origin `metadata["start_time_ns"]`, with `-1` meaning "not known / still alive".

use arrow_array::Int64Array;

pub use crate::packed_ids::IdColumn;

/// `ns / 1e9` as Python computes `float(ns) / 1e9`: the ns of the model as float s.
#[inline]
pub fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// Missing value of the lane columns: unknown thread, outside any task, end not known.
pub const UNKNOWN: i64 = -1;

/// One region's completed calls on one rank (one row of `rank_region_index`).
///
/// All present columns have the same length ([`RegionCalls::len`]). Calls are in
/// recorded order: for a tracked run, grouped by thread (ascending thread index),
/// each thread in entry order, so `start_ns` is not monotonic.
#[derive(Debug, Clone)]
pub struct RegionCalls {
    /// Index into [`Run::region_names`].
    pub region: u32,
    /// MPI rank (0 in a serial run).
    pub rank: u32,
    /// Absolute call start, ns.
    pub start_ns: Int64Array,
    /// Absolute call end, ns (`end >= start` in a valid run).
    pub end_ns: Int64Array,
    /// GPU duration per call in ns, `-1` = none. `None` when the run recorded no GPU timing.
    pub gpu_ns: Option<Int64Array>,
    /// Finalize-assigned call id per call (unique per rank). `None` = no call graph recorded.
    /// Plain or bit-packed ([`IdColumn`]); [`IdColumn::to_array`] gives the values.
    pub call_ids: Option<IdColumn>,
    /// Call id of the enclosing call on the same lane, `-1` for a root.
    pub parent_ids: Option<IdColumn>,
    /// Thread-table index per call (`track_threads`), `-1` = unknown thread. `None` = not tracked.
    pub thread_ids: Option<Int64Array>,
    /// Task-table index per call (`track_async`), `-1` = outside any task. `None` = not tracked.
    pub task_ids: Option<Int64Array>,
    /// ns the call's task was suspended between entry and exit (`track_async`), 0 outside tasks.
    pub await_ns: Option<Int64Array>,
    /// ns of that suspension during which the task was ready to resume but its event loop
    /// ran other code (`track_async`), 0 outside tasks, `-1` when the loop could not tell.
    /// `None` = not recorded (no `track_async`, or a file without the column).
    pub ready_wait_ns: Option<Int64Array>,
    /// ns the call's thread spent running task steps (asyncio tasks, greenlets) between the
    /// call's entry and exit, for a call on the thread's own lane (`track_async`); 0 for a
    /// call in a task. That time is the task lanes': it is not the call's exclusive or held
    /// time. `None` = not recorded (runs without `track_async`, files of 0.7.5).
    pub task_step_ns: Option<Int64Array>,
    pub source_file: Option<String>,
    pub source_line: Option<i64>,
    pub source_text: Option<String>,
    pub tags: Vec<String>,
    /// JSON list of per-call metadata dicts as stored in the file; `None` when empty (`"[]"`).
    pub event_metadata: Option<String>,
    /// Stored sum of exclusive ns for this row; `None` when not computed (`-1` in the file).
    pub exclusive_total_ns: Option<i64>,
    /// Statistics stored in the file (`rank_region_index/summary_statistics`) for a row read
    /// without its events (`read_h5_summary`): the per-call columns are then empty and
    /// [`StoredStats::count`] is the number of calls. `None` for rows with their events.
    pub stored: Option<StoredStats>,
}

/// A region row's statistics as the file stores them: the call count (`event_counts`) and
/// the reference's `_timing_summary` (`rank_region_index/summary_statistics`, every field
/// after `count`, in this order). Written for every row ([`StoredStats::of_calls`]); read
/// back for rows read without their events. Durations in ns (recording clock), `mean` in
/// ns, `m2` = Σ squared deviations in ns². `repr(C)`: the HDF5 compound is described by
/// field offsets (`formats::hdf5::summary_statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct StoredStats {
    /// Number of calls (`event_counts`).
    pub count: i64,
    /// Σ durations.
    pub total: i64,
    pub minimum: i64,
    pub maximum: i64,
    /// Duration of the first / last call in recorded order.
    pub first: i64,
    pub last: i64,
    /// Earliest start / latest end, absolute ns.
    pub start_minimum: i64,
    pub end_maximum: i64,
    /// Calls with a GPU duration (>= 0) and their total.
    pub gpu_count: u64,
    pub gpu_total: i64,
    pub mean: f64,
    pub m2: f64,
}

impl StoredStats {
    /// The statistics of calls `start[i]..end[i]` (the first `min(len)` of each; all zero
    /// without calls) and their GPU durations `gpu` (`-1` = none), as the reference's
    /// `_timing_summary` computes them: `mean` and `m2` with numpy's summation order
    /// ([`crate::numpy_reductions`]), so the floats match bit for bit; integer sums wrap.
    pub fn of_calls(start: &[i64], end: &[i64], gpu: Option<&[i64]>) -> Self {
        let mut s = StoredStats::default();
        let n = start.len().min(end.len());
        if n > 0 {
            // the durations are computed where they are used, never held as an array (that would
            // allocate and fault in n values per region at every finalize())
            let (start, end) = (&start[..n], &end[..n]);
            let d = |i: usize| {
                debug_assert!(i < n);
                // SAFETY: the statistics below ask only for i < n, the length of both slices
                unsafe { end.get_unchecked(i).wrapping_sub(*start.get_unchecked(i)) }
            };
            // `float(np.mean(d, dtype=f8))` and `float(np.var(d, dtype=f8)) * count`.
            let (mean, var) = crate::numpy_reductions::mean_var_i64_by(n, d);
            s.count = n as i64;
            s.mean = mean;
            s.m2 = var * n as f64;
            // one pass over both columns for every integer statistic
            let (mut total, mut minimum, mut maximum) = (0i64, i64::MAX, i64::MIN);
            let (mut start_minimum, mut end_maximum) = (i64::MAX, i64::MIN);
            for (&b, &e) in start.iter().zip(end) {
                let x = e.wrapping_sub(b);
                total = total.wrapping_add(x);
                minimum = minimum.min(x);
                maximum = maximum.max(x);
                start_minimum = start_minimum.min(b);
                end_maximum = end_maximum.max(e);
            }
            (s.total, s.minimum, s.maximum) = (total, minimum, maximum);
            (s.start_minimum, s.end_maximum) = (start_minimum, end_maximum);
            s.first = d(0);
            s.last = d(n - 1);
        }
        if let Some(g) = gpu {
            for &v in g.iter().filter(|&&v| v >= 0) {
                s.gpu_count += 1;
                s.gpu_total = s.gpu_total.wrapping_add(v);
            }
        }
        s
    }
}

impl RegionCalls {
    /// A row with calls `start_ns[i]..end_ns[i]` and no optional column, source or tag.
    pub fn new(region: u32, rank: u32, start_ns: Int64Array, end_ns: Int64Array) -> Self {
        RegionCalls {
            region,
            rank,
            start_ns,
            end_ns,
            gpu_ns: None,
            call_ids: None,
            parent_ids: None,
            thread_ids: None,
            task_ids: None,
            await_ns: None,
            ready_wait_ns: None,
            task_step_ns: None,
            source_file: None,
            source_line: None,
            source_text: None,
            tags: Vec::new(),
            event_metadata: None,
            exclusive_total_ns: None,
            stored: None,
        }
    }

    /// Number of calls in this row.
    pub fn len(&self) -> usize {
        self.start_ns.len()
    }
    /// Σ await ns of the calls, each clamped to `[0, its duration]` (a damaged file's value
    /// outside it would make held time negative), `None` without an await column. The one
    /// rule of a call's await for every summary (regions, threads, tasks).
    pub fn await_total_ns(&self) -> Option<i64> {
        let awaits = self.await_ns.as_ref()?.values();
        let (start, end) = (self.start_ns.values(), self.end_ns.values());
        let clamped = awaits.iter().zip(start.iter().zip(end.iter())).map(|(&w, (&s, &e))| w.clamp(0, (e - s).max(0)));
        Some(clamped.fold(0i64, i64::wrapping_add))
    }

    /// Σ task-step ns of the calls ([`RegionCalls::task_step_ns`]), each clamped to `[0, its
    /// duration]`; `None` without that column.
    pub fn task_step_total_ns(&self) -> Option<i64> {
        let steps = self.task_step_ns.as_ref()?.values();
        let (start, end) = (self.start_ns.values(), self.end_ns.values());
        let clamped = steps.iter().zip(start.iter().zip(end.iter())).map(|(&w, (&s, &e))| w.clamp(0, (e - s).max(0)));
        Some(clamped.fold(0i64, i64::wrapping_add))
    }

    /// Number of calls: the stored count of a summary-only row ([`RegionCalls::stored`]), else
    /// the per-call columns' length.
    pub fn num_calls(&self) -> usize {
        self.stored.as_ref().map_or(self.len(), |s| s.count.max(0) as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.start_ns.is_empty()
    }
    /// Earliest call start, ns on the recording clock; `None` without calls.
    pub fn start_min(&self) -> Option<i64> {
        extreme(self.start_ns.values(), i64::min)
    }
    /// Latest call end, ns on the recording clock; `None` without calls.
    pub fn end_max(&self) -> Option<i64> {
        extreme(self.end_ns.values(), i64::max)
    }
}

/// `pick`-reduction of `values` (min or max). One sequential pass, generic over `pick` so
/// that it inlines and vectorises: through a `fn` pointer (as it was) every element cost an
/// indirect call, ~2.5 ns, 5 ms for the 2M starts that `get_regions()` orders regions by.
fn extreme<F: Fn(i64, i64) -> i64>(values: &[i64], pick: F) -> Option<i64> {
    values.iter().copied().reduce(pick)
}

/// One row of `thread_table`: a thread the tracker registered on one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadRow {
    pub rank: u32,
    /// Dense per-rank index; the value `thread_ids` holds.
    pub index: i64,
    /// `threading.Thread.ident` (0 if None).
    pub ident: i64,
    /// OS thread id (0 if unavailable).
    pub native_id: i64,
    pub daemon: bool,
    /// Registration time, ns since the run origin.
    pub start_ns: i64,
    /// Thread end, ns since the run origin; `-1` while alive.
    pub end_ns: i64,
    /// Total CPU time of the OS thread (`CLOCK_THREAD_CPUTIME_ID`) at its end or at the
    /// latest sample, ns: the whole life of the thread, CPU spent before `setup()` included
    /// (the reference's `cpu_ns`).
    pub cpu_ns: i64,
    /// The thread's CPU clock when the run started counting it, ns: read at registration
    /// (for the thread that called `setup()`, at `setup()`). `cpu_ns - cpu_start_ns` is the
    /// CPU burned during the run. [`UNKNOWN`] (`-1`) when not recorded (files of the
    /// reference, 0.7.5, and runs built without it).
    pub cpu_start_ns: i64,
    /// ns the thread spent running task steps (asyncio tasks, greenlets; outermost steps
    /// only) during the run; [`UNKNOWN`] when not recorded (runs without `track_async`,
    /// files of 0.7.5).
    pub task_step_ns: i64,
    /// ns in which some task resumed on this thread was ready to but waited for the thread
    /// (the union of their ready waits, so never more than the thread's wall time);
    /// [`UNKNOWN`] when no task step ran on it, a ready moment was not known, or not recorded.
    pub ready_wait_ns: i64,
    /// ns the instrumented event loops run on this thread waited with nothing ready (an
    /// asyncio loop's `select` with nothing queued, a trio run's I/O wait with a timeout);
    /// [`UNKNOWN`] when no instrumented loop ran on it (no `track_async`, uvloop, gevent)
    /// or not recorded.
    pub loop_idle_ns: i64,
    /// `Thread.name` at registration.
    pub name: String,
}

impl ThreadRow {
    /// Thread `index` of `rank`, registered at the run's origin and still alive, with no
    /// ident, OS thread id or CPU clock recorded; set the other fields with struct update
    /// syntax (`ThreadRow { ident: 7, ..ThreadRow::new(0, 0, "MainThread") }`).
    pub fn new(rank: u32, index: i64, name: &str) -> Self {
        ThreadRow {
            rank,
            index,
            ident: 0,
            native_id: 0,
            daemon: false,
            start_ns: 0,
            end_ns: -1,
            cpu_ns: 0,
            cpu_start_ns: UNKNOWN,
            task_step_ns: UNKNOWN,
            ready_wait_ns: UNKNOWN,
            loop_idle_ns: UNKNOWN,
            name: name.into(),
        }
    }

    /// ns of CPU the thread burned during the run (`cpu_ns - cpu_start_ns`, its
    /// `CLOCK_THREAD_CPUTIME_ID`), `None` when `cpu_start_ns` is not recorded.
    pub fn cpu_run_ns(&self) -> Option<i64> {
        (self.cpu_start_ns != UNKNOWN).then(|| self.cpu_ns - self.cpu_start_ns)
    }

    /// What is wrong with this row's times: one phrase per value no recording gives (a
    /// negative time other than [`UNKNOWN`], an end before the start, a negative CPU clock or
    /// one below its start); empty for a sound row. Summaries show such values as unknown
    /// and say so ([`crate::thread_table_note`]) instead of printing a negative time.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.start_ns < UNKNOWN {
            out.push(format!("start_ns {} is negative", self.start_ns));
        }
        if self.end_ns < UNKNOWN {
            out.push(format!("end_ns {} is negative", self.end_ns));
        } else if self.end_ns != UNKNOWN && self.start_ns >= 0 && self.end_ns < self.start_ns {
            out.push(format!("end_ns {} is before start_ns {}", self.end_ns, self.start_ns));
        }
        if self.cpu_ns < 0 {
            out.push(format!("cpu_ns {} is negative", self.cpu_ns));
        }
        if self.cpu_start_ns < UNKNOWN {
            out.push(format!("cpu_start_ns {} is negative", self.cpu_start_ns));
        } else if self.cpu_start_ns != UNKNOWN && self.cpu_ns >= 0 && self.cpu_ns < self.cpu_start_ns {
            out.push(format!("cpu_ns {} is below cpu_start_ns {}", self.cpu_ns, self.cpu_start_ns));
        }
        out
    }

    /// `start_ns`, `None` when not known or unsound ([`ThreadRow::problems`]).
    pub fn sound_start_ns(&self) -> Option<i64> {
        (self.start_ns >= 0).then_some(self.start_ns)
    }

    /// `end_ns` of a thread that ended, `None` while alive or when unsound (negative, or
    /// before the start).
    pub fn sound_end_ns(&self) -> Option<i64> {
        (self.end_ns >= 0 && (self.start_ns < 0 || self.end_ns >= self.start_ns)).then_some(self.end_ns)
    }

    /// `cpu_ns` (the whole life), `None` when negative.
    pub fn sound_cpu_ns(&self) -> Option<i64> {
        (self.cpu_ns >= 0).then_some(self.cpu_ns)
    }

    /// CPU ns of the run: [`ThreadRow::cpu_run_ns`], or the whole life when `cpu_start_ns`
    /// is not recorded; `None` when either clock reading is unsound.
    pub fn sound_cpu_run_ns(&self) -> Option<i64> {
        let total = self.sound_cpu_ns()?;
        match self.cpu_start_ns {
            UNKNOWN => Some(total),
            start if start >= 0 && total >= start => Some(total - start),
            _ => None,
        }
    }
}

/// One row of `task_table`: an asyncio task or a greenlet on one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub rank: u32,
    /// Dense per-rank index; the value `task_ids` holds.
    pub index: i64,
    /// Thread-table index of the thread that ran the latest step.
    pub thread_index: i64,
    /// Creation time, ns since the run origin.
    pub created_ns: i64,
    /// Completion time, ns since the run origin; `-1` = not done.
    pub done_ns: i64,
    pub steps: i64,
    pub running_ns: i64,
    pub suspended_ns: i64,
    /// ns the task was ready to resume but its event loop ran other code; [`UNKNOWN`] when
    /// not known (not recorded, or a loop that could not tell).
    pub ready_wait_ns: i64,
    /// `"task"` or `"greenlet"`.
    pub kind: String,
    pub name: String,
    pub coro_name: String,
}

impl TaskRow {
    /// Task `index` of `rank`: a `kind` (`"task"` or `"greenlet"`) named `name` running
    /// `coro_name`, with no thread (`thread_index` [`UNKNOWN`]), created at the run origin
    /// (`created_ns` 0), not done (`done_ns` [`UNKNOWN`]) and no steps or times; the methods
    /// below set those.
    pub fn new(
        rank: u32,
        index: i64,
        kind: impl Into<String>,
        name: impl Into<String>,
        coro_name: impl Into<String>,
    ) -> Self {
        TaskRow {
            rank,
            index,
            thread_index: UNKNOWN,
            created_ns: 0,
            done_ns: UNKNOWN,
            steps: 0,
            running_ns: 0,
            suspended_ns: 0,
            ready_wait_ns: UNKNOWN,
            kind: kind.into(),
            name: name.into(),
            coro_name: coro_name.into(),
        }
    }

    /// This row with `thread_index`: the thread-table index of the thread that ran the
    /// latest step ([`UNKNOWN`]: none).
    pub fn on_thread(self, thread_index: i64) -> Self {
        TaskRow { thread_index, ..self }
    }

    /// This row created at `created_ns` and done at `done_ns` ([`UNKNOWN`]: not done), ns
    /// since the run origin.
    pub fn lifetime(self, created_ns: i64, done_ns: i64) -> Self {
        TaskRow { created_ns, done_ns, ..self }
    }

    /// This row with `steps` steps, `running_ns` ns running and `suspended_ns` ns
    /// suspended.
    pub fn timing(self, steps: i64, running_ns: i64, suspended_ns: i64) -> Self {
        TaskRow { steps, running_ns, suspended_ns, ..self }
    }

    /// This row with `ready_wait_ns` ns ready but not resumed ([`UNKNOWN`]: not known).
    pub fn ready_wait(self, ready_wait_ns: i64) -> Self {
        TaskRow { ready_wait_ns, ..self }
    }
}

/// A value of the `/metadata` group.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i64),
    Float(f64),
    Str(String),
    StrList(Vec<String>),
}

/// A whole run: region rows, lane tables and metadata.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Region names; a name's id is its position (the file's `region_table/names`).
    pub region_names: Vec<String>,
    /// (region, rank) rows in file order (a rank's rows back to back, ranks ascending).
    pub regions: Vec<RegionCalls>,
    /// Thread-table rows of every rank, ranks ascending, each rank in index order.
    pub threads: Vec<ThreadRow>,
    /// Task-table rows of every rank, ranks ascending, each rank in index order.
    pub tasks: Vec<TaskRow>,
    /// Rank 0's metadata attributes, in file order.
    pub metadata: Vec<(String, MetaValue)>,
    /// Number of ranks: `max(metadata.mpi_size, max rank + 1)` when there are rows, else 0.
    pub num_ranks: u32,
    /// Event-loop blocks of every rank (`track_async`), ranks ascending, each rank in the
    /// order they ended; empty when none were recorded.
    pub loop_blocks: Vec<crate::loop_blocks::LoopBlockRow>,
}
impl Run {
    /// The metadata value under `key`, if any.
    pub fn meta(&self, key: &str) -> Option<&MetaValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
    /// An integer metadata value (e.g. `start_time_ns`).
    pub fn meta_int(&self, key: &str) -> Option<i64> {
        match self.meta(key) {
            Some(MetaValue::Int(v)) => Some(*v),
            _ => None,
        }
    }
    /// How a rank is named as a whole (summaries, report and timeline headings, trace
    /// process names): `rank R`, and the process it was when the run stacks processes one
    /// rank each (`scope-profiler run` following processes: metadata
    /// [`PROCESSES`](crate::merge::PROCESSES)), e.g. `rank 1 (pid 4251 (child of 4242):
    /// multiprocessing Process-1)`.
    pub fn rank_label(&self, rank: u32) -> String {
        match self.meta(crate::merge::PROCESSES) {
            Some(MetaValue::StrList(names)) if names.len() == self.num_ranks as usize => match names.get(rank as usize)
            {
                Some(name) if !name.is_empty() => format!("rank {rank} ({name})"),
                _ => format!("rank {rank}"),
            },
            _ => format!("rank {rank}"),
        }
    }
    /// Whether `rank` was read without its calls (`read_h5_summary`: a row carries stored
    /// statistics, [`RegionCalls::stored`]): what needs the calls (per-lane times) is unknown.
    pub fn summary_only(&self, rank: u32) -> bool {
        self.rank_rows(rank).any(|r| r.stored.is_some())
    }
    /// Rows of one rank, in file order.
    pub fn rank_rows(&self, rank: u32) -> impl Iterator<Item = &RegionCalls> {
        self.regions.iter().filter(move |r| r.rank == rank)
    }
    /// Thread-table rows of one rank, in index order.
    pub fn rank_threads(&self, rank: u32) -> impl Iterator<Item = &ThreadRow> {
        self.threads.iter().filter(move |t| t.rank == rank)
    }
    /// Task-table rows of one rank, in index order.
    pub fn rank_tasks(&self, rank: u32) -> impl Iterator<Item = &TaskRow> {
        self.tasks.iter().filter(move |t| t.rank == rank)
    }
    /// Whether any row carries a thread column (the run was recorded with `track_threads`).
    pub fn has_thread_ids(&self) -> bool {
        self.regions.iter().any(|r| r.thread_ids.is_some())
    }
    /// Reorder the rows so that each rank's rows are back to back, ranks ascending, as the
    /// run model requires (stable: a rank's rows keep their order). Returns the new position
    /// of each row, by its old position.
    pub fn order_rows_by_rank(&mut self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.regions.len()).collect();
        order.sort_by_key(|&i| self.regions[i].rank);
        let mut position = vec![0usize; order.len()];
        for (new, &old) in order.iter().enumerate() {
            position[old] = new;
        }
        let mut rows: Vec<Option<RegionCalls>> = self.regions.drain(..).map(Some).collect();
        self.regions = order.iter().filter_map(|&i| rows[i].take()).collect();
        position
    }
    /// Positions of the rows of the regions named `names`, in that order, each region's rows
    /// by rank ascending; only ranks in `ranks` (`None`: all). `events()` order.
    pub fn rows_of(&self, names: &[String], ranks: Option<&[u32]>) -> Vec<usize> {
        let mut out = Vec::new();
        for name in names {
            let Some(id) = self.region_names.iter().position(|n| n == name) else { continue };
            let mut rows: Vec<(u32, usize)> = (self.regions.iter().enumerate())
                .filter(|(_, r)| r.region as usize == id && ranks.is_none_or(|w| w.contains(&r.rank)))
                .map(|(i, r)| (r.rank, i))
                .collect();
            rows.sort_by_key(|(rank, _)| *rank);
            out.extend(rows.into_iter().map(|(_, i)| i));
        }
        out
    }
    /// Give the rows from `first` on the lane columns (`thread_ids`, `task_ids`, `await_ns`)
    /// that another row of the run has, filled as a file stores a row without them: thread
    /// and task -1 (unknown thread, outside any task: lane -1), await 0. A row added to a
    /// tracked run (a C/Fortran region folded in at `finalize`) then has the shape it reads
    /// back with (spec-hdf5: with a lane column in the file, every region gets an array).
    pub fn fill_lane_columns(&mut self, first: usize) {
        let rows = &self.regions;
        let threads = rows.iter().any(|r| r.thread_ids.is_some());
        let tasks = rows.iter().any(|r| r.task_ids.is_some());
        let awaits = rows.iter().any(|r| r.await_ns.is_some());
        let steps = rows.iter().any(|r| r.task_step_ns.is_some());
        for row in self.regions.iter_mut().skip(first) {
            let n = row.len();
            let filled = |value: i64| Some(Int64Array::from(vec![value; n]));
            if threads && row.thread_ids.is_none() {
                row.thread_ids = filled(-1);
            }
            if tasks && row.task_ids.is_none() {
                row.task_ids = filled(-1);
            }
            if awaits && row.await_ns.is_none() {
                row.await_ns = filled(0);
            }
            if steps && row.task_step_ns.is_none() {
                row.task_step_ns = filled(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(region: u32, n: usize) -> RegionCalls {
        RegionCalls::new(region, 0, Int64Array::from(vec![10; n]), Int64Array::from(vec![20; n]))
    }

    /// Rows of rank 1 given first move after rank 0's, each rank keeping its order;
    /// `rows_of` then finds them by name, ranks ascending.
    #[test]
    fn rows_ordered_by_rank_are_found_by_name() {
        let at = |region: u32, rank: u32| RegionCalls { rank, ..row(region, 1) };
        let mut run = Run {
            region_names: vec!["a".into(), "b".into()],
            regions: vec![at(0, 1), at(1, 1), at(1, 0), at(0, 0)],
            ..Run::default()
        };
        assert_eq!(run.order_rows_by_rank(), vec![2, 3, 0, 1]);
        let order: Vec<(u32, u32)> = run.regions.iter().map(|r| (r.region, r.rank)).collect();
        assert_eq!(order, vec![(1, 0), (0, 0), (0, 1), (1, 1)]);
        assert_eq!(run.rows_of(&["a".into(), "b".into()], None), vec![1, 2, 0, 3]);
        assert_eq!(run.rows_of(&["b".into(), "zz".into()], Some(&[1])), vec![3]);
    }

    /// Rows added to a run with thread and await columns get -1 threads and 0 awaits, no task
    /// column (no row has one); the rows before `first` are left as they are.
    #[test]
    fn fill_lane_columns_gives_added_rows_the_columns_a_file_reads_back() {
        let mut tracked = row(0, 2);
        tracked.thread_ids = Some(Int64Array::from(vec![0, 1]));
        tracked.await_ns = Some(Int64Array::from(vec![5, 6]));
        let mut run = Run { regions: vec![tracked, row(1, 1), row(2, 3)], ..Run::default() };
        run.fill_lane_columns(2);
        let added = &run.regions[2];
        assert_eq!(added.thread_ids.as_ref().map(|a| a.values().to_vec()), Some(vec![-1, -1, -1]));
        assert_eq!(added.await_ns.as_ref().map(|a| a.values().to_vec()), Some(vec![0, 0, 0]));
        assert!(added.task_ids.is_none());
        assert!(run.regions[1].thread_ids.is_none());
        assert_eq!(run.regions[0].thread_ids.as_ref().map(|a| a.values().to_vec()), Some(vec![0, 1]));
        // an untracked run stays without lane columns
        let mut plain = Run { regions: vec![row(0, 1), row(1, 2)], ..Run::default() };
        plain.fill_lane_columns(0);
        assert!(plain.regions.iter().all(|r| r.thread_ids.is_none() && r.await_ns.is_none()));
    }

    /// The extremes wherever they sit (first, middle, last call), and `None` for an empty row.
    #[test]
    fn start_min_and_end_max_match_a_plain_scan() {
        for n in [0usize, 1, 5, (1 << 18) - 1, 1 << 18, (1 << 18) + 77, 1 << 20] {
            for spot in [0usize, n / 2, n.saturating_sub(1)] {
                let mut start: Vec<i64> = (0..n as i64).map(|i| 1_000 + (i * 7919) % 100_003).collect();
                let mut end: Vec<i64> = start.iter().map(|s| s + 10).collect();
                if n > 0 {
                    start[spot] = -42;
                    end[spot] = 9_000_000;
                }
                let (want_min, want_max) = (start.iter().copied().min(), end.iter().copied().max());
                let row = RegionCalls::new(0, 0, Int64Array::from(start), Int64Array::from(end));
                assert_eq!(row.start_min(), want_min, "n={n} spot={spot}");
                assert_eq!(row.end_max(), want_max, "n={n} spot={spot}");
                if n > 0 {
                    assert_eq!((want_min, want_max), (Some(-42), Some(9_000_000)));
                }
            }
        }
    }
}
