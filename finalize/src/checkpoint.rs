//! `finalize()` / checkpoint: recorder -> numbered [`Run`], optionally written as HDF5.
use std::path::Path;

use scope_profiler_analysis::{nesting_note, number_rank, MetaValue, Run};
use scope_profiler_formats::hdf5::write::{encode_ahead, publish_h5_ahead, EncodedAhead, WriteFailure};
use scope_profiler_recorder::{OpenCall, Recorder, RegionTable, Watermark};

use crate::concat::concat_runs;
use crate::metadata_scopes::{self, MetadataScopes};
use crate::snapshot::{run_from_snapshot, Snapshot, UnknownRegion};

/// What a checkpoint does besides taking the snapshot.
#[derive(Debug, Clone, Default)]
pub struct CheckpointRequest<'a> {
    /// The run metadata (`/metadata`), in order; `mpi_size` decides `num_ranks`.
    pub metadata: Vec<(String, MetaValue)>,
    /// Run origin, absolute ns on the recording clock: thread and task timestamps are
    /// made relative to it.
    pub start_time_ns: i64,
    /// Rewind the recorder ([`Recorder::retire`] of the snapshot's calls): the calls taken
    /// are not reported again by the next checkpoint. With `write_to`, only once the file
    /// is written: after a failed write every call is still buffered.
    pub rewind: bool,
    /// First call id of this checkpoint's calls.
    pub call_id_base: i64,
    /// Write the run there as HDF5 (atomically), if given.
    pub write_to: Option<&'a Path>,
    /// The end of the recording (a session's end, the exit-time finalize): calls still
    /// open are put in the run as calls ending at this absolute ns, flagged
    /// `{"open_at_finalize": true}` in their per-call metadata, so their time is not
    /// missing from their lane. `None` (a checkpoint): they stay open in the recorder and
    /// a later checkpoint reports them once they end.
    pub close_open_at: Option<i64>,
    /// Regions recorded outside the recorder for this rank (the C/Fortran region APIs'
    /// traces, `finalize(native_traces=...)`): added to the run as rows without a thread or
    /// task (lane -1, one stack), numbered and written with the rest.
    pub foreign: Vec<ForeignRegion>,
    /// The recording's exited `metadata()` scopes: every scope held is applied to the
    /// run's recorded calls ([`metadata_scopes::apply`]; not to `foreign` regions, as the
    /// reference) and retired with the calls (when they are retired here; else
    /// [`Checkpoint::scopes_taken`] says how many to retire with [`Checkpoint::taken`]).
    pub metadata_scopes: Option<&'a MetadataScopes>,
}

/// A region recorded outside the recorder: its calls' starts and ends (absolute ns, the
/// recording clock) and source location.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForeignRegion {
    pub name: String,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
    pub source_file: Option<String>,
    pub source_line: Option<i64>,
}

/// A checkpoint's outcome.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The rank-0 run, with call ids, parent ids and exclusive totals unless `warning`.
    pub run: Run,
    /// The base for the next checkpoint: `call_id_base` + calls numbered here
    /// (`call_id_base` when nothing was numbered).
    pub next_call_id: i64,
    /// The nesting failure's message when the calls do not nest on some lane: the run then
    /// has no call graph (no call ids, parent ids or exclusive totals).
    pub warning: Option<String>,
    /// The calls that were open at the snapshot (closed into the run when
    /// `close_open_at` was given), with their region names.
    pub open: Vec<(String, OpenCall)>,
    /// The calls taken, when this checkpoint retired none (`rewind` false): the caller may
    /// retire them later ([`Recorder::retire`]), e.g. once another process wrote them (MPI:
    /// rank 0 writes every rank's calls). `None` when they were retired here.
    pub taken: Option<Watermark>,
    /// How many `metadata()` scopes the run applied (the oldest held): retired here with the
    /// calls, or to retire ([`MetadataScopes::retire`]) with [`Checkpoint::taken`].
    pub scopes_taken: usize,
}

/// Why a checkpoint failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Snapshot(#[from] UnknownRegion),
    /// Writing the HDF5 file failed (the message names the file; `errno` when the
    /// filesystem refused). Nothing was rewound: the next checkpoint takes these calls
    /// again. `unwritten` is what a successful checkpoint would have returned, so the
    /// caller can still report the run.
    #[error("{failure}")]
    Write { failure: WriteFailure, unwritten: Box<Checkpoint> },
    /// A foreign region has the name of a recorded one (merging them would count the
    /// region twice) or mismatched columns. Nothing was retired.
    #[error("{0}")]
    Foreign(String),
}

/// The HDF5 write of a checkpoint, handed to the caller's `release` (see [`checkpoint`]).
pub type WriteJob<'a> = &'a (dyn Fn() -> Result<(), WriteFailure> + Sync + 'a);

/// Snapshot `rec` against its region table `regions` (both under the table's lock, with a
/// [`Recorder::watermark`] of the calls taken), number the calls from `req.call_id_base`
/// ([`assign_call_ids`]; on a nesting failure the run keeps no call graph and the message
/// is returned as [`Checkpoint::warning`]), write `req.write_to` when given, and when
/// `req.rewind` retire the calls taken: right away without a file, after the file is
/// published with one, not at all when the write fails.
///
/// `release` runs the HDF5 write: it must call the job it is given and return its result.
/// The Python glue releases the GIL there (`py.detach`); the job does not touch the
/// recorder, and threads may go on recording meanwhile: only the calls of the snapshot
/// are retired afterwards. Callers without a lock pass `|write| write()`.
///
/// Errors: [`CheckpointError::Write`] when the file cannot be written, carrying the run
/// (the recorder keeps every call, so a later checkpoint writes them).
///
/// # Safety
/// As [`Recorder::snapshot`], both when this is called and when `release` returns: no
/// thread may be inside `enter`/`exit` of `rec` concurrently, and earlier such calls must
/// happen-before. And no other checkpoint (or [`Recorder::mark_written`]) of `rec` may run
/// while `release` runs: callers that release a lock there serialize checkpoints.
pub unsafe fn checkpoint(
    rec: &Recorder,
    regions: &RegionTable,
    req: CheckpointRequest<'_>,
    release: impl FnOnce(WriteJob<'_>) -> Result<(), WriteFailure>,
) -> Result<Checkpoint, CheckpointError> {
    checkpoint_with_prior(rec, regions, req, Vec::new(), release)
}

/// [`checkpoint`] of a streamed recording (`flush_interval`, [`crate::stream`]): `prior`
/// are the runs flushed to the sidecar since the last checkpoint (their calls already
/// retired from `rec`); the checkpoint's run is them and the snapshot together
/// ([`concat_runs`], rows in region-table order, the snapshot's tables and `req.metadata`),
/// numbered as one. The caller removes the sidecar once the file is published.
///
/// # Safety
/// As [`checkpoint`].
pub unsafe fn checkpoint_with_prior(
    rec: &Recorder,
    regions: &RegionTable,
    req: CheckpointRequest<'_>,
    mut prior: Vec<Run>,
    release: impl FnOnce(WriteJob<'_>) -> Result<(), WriteFailure>,
) -> Result<Checkpoint, CheckpointError> {
    let scopes = req.metadata_scopes.map(MetadataScopes::taken).unwrap_or_default();
    let retire_scopes = || {
        if let Some(store) = req.metadata_scopes {
            store.retire(scopes.len());
        }
    };
    let (mut run, mark, order, open) = {
        let table = regions.lock();
        let mut snap = Snapshot::take(rec, table.len(), req.start_time_ns);
        let mark = rec.watermark();
        if req.rewind && req.write_to.is_none() {
            rec.retire(&mark);
            retire_scopes();
        }
        let open: Vec<(String, OpenCall)> = rec
            .open_calls()
            .into_iter()
            .filter_map(|c| Some((table.get(c.region as usize)?.name.to_string(), c)))
            .collect();
        let closed = req.close_open_at.map(|end| close_open_calls(&mut snap, &open, end)).unwrap_or_default();
        let order: Option<Vec<String>> =
            (!prior.is_empty()).then(|| table.iter().map(|m| m.name.to_string()).collect());
        let mut run = run_from_snapshot(snap, &table, req.metadata)?;
        flag_open_calls(&mut run, &closed);
        (run, mark, order, open)
    };
    if let Some(order) = order {
        prior.push(run);
        run = concat_runs(prior, Some(&order));
    }
    metadata_scopes::apply(&mut run, &scopes);
    add_foreign(&mut run, req.foreign)?;
    // the columns that do not depend on call ids are encoded meanwhile, on the other core
    let writes = req.write_to.is_some();
    let (numbering, ahead) = scope_profiler_analysis::pool::install(|| {
        rayon::join(
            || number_rank(&run, 0, req.call_id_base),
            || if writes { encode_ahead(&run) } else { EncodedAhead::default() },
        )
    });
    let (next_call_id, warning) = apply_numbering(&mut run, req.call_id_base, numbering);
    if let Some(path) = req.write_to {
        let r = &run;
        if let Err(failure) = release(&|| publish_h5_ahead(r, path, &ahead)) {
            let scopes_taken = scopes.len();
            let unwritten = Box::new(Checkpoint { run, next_call_id, warning, open, taken: Some(mark), scopes_taken });
            return Err(CheckpointError::Write { failure, unwritten });
        }
        if req.rewind {
            rec.retire(&mark);
            retire_scopes();
        }
    }
    let taken = (!req.rewind).then_some(mark);
    Ok(Checkpoint { run, next_call_id, warning, open, taken, scopes_taken: scopes.len() })
}

/// Add `foreign` regions to rank 0 of `run`; in a run with lane columns they get them as
/// a file stores them ([`Run::fill_lane_columns`]: thread and task -1, await 0), so the
/// run has the same shape in memory as read back from its file. Errors: [`CheckpointError::Foreign`] for a name the run has already, or for starts and
/// ends of different lengths.
fn add_foreign(run: &mut Run, foreign: Vec<ForeignRegion>) -> Result<(), CheckpointError> {
    let first = run.regions.len();
    for f in foreign {
        if run.region_names.contains(&f.name) {
            return Err(CheckpointError::Foreign(format!(
                "region {} was recorded by both the Python API and a native profile; merging them would double-count it. Give the regions distinct names (a 'c:' or 'fortran:' prefix, say).",
                scope_profiler_analysis::py_repr(&f.name)
            )));
        }
        if f.start_ns.len() != f.end_ns.len() {
            return Err(CheckpointError::Foreign(format!(
                "native region {} has {} starts but {} ends",
                scope_profiler_analysis::py_repr(&f.name),
                f.start_ns.len(),
                f.end_ns.len()
            )));
        }
        let id = run.region_names.len() as u32;
        run.region_names.push(f.name);
        let mut row = scope_profiler_analysis::RegionCalls::new(
            id,
            0,
            arrow_array::Int64Array::from(f.start_ns),
            arrow_array::Int64Array::from(f.end_ns),
        );
        row.source_file = f.source_file;
        row.source_line = f.source_line;
        run.regions.push(row);
    }
    run.fill_lane_columns(first);
    if !run.regions.is_empty() {
        run.num_ranks = run.num_ranks.max(1);
    }
    Ok(())
}

/// Append `open` to the snapshot's columns as calls ending at `end` (absolute ns), each in
/// its region's column (one made where the region has no completed call) - or earlier, at
/// the end of the innermost completed call of its lane that encloses its start (see
/// [`closing_times`]). Returns, per region name, how many calls were appended (they are the
/// last ones of its column).
fn close_open_calls(snap: &mut Snapshot, open: &[(String, OpenCall)], end: i64) -> Vec<(String, usize)> {
    if open.is_empty() {
        return Vec::new();
    }
    // the columns as recorded: closed calls are appended to them, and read per call
    snap.regions.iter_mut().for_each(scope_profiler_recorder::RegionColumns::fill_threads);
    let ends = closing_times(snap, open, end);
    let mut closed: Vec<(String, usize)> = Vec::new();
    for ((name, c), end) in open.iter().zip(ends) {
        let k = match snap.regions.binary_search_by_key(&c.region, |r| r.region) {
            Ok(k) => k,
            Err(k) => {
                snap.regions
                    .insert(k, scope_profiler_recorder::RegionColumns { region: c.region, ..Default::default() });
                k
            }
        };
        let col = &mut snap.regions[k];
        col.starts.push(c.start_ns);
        col.ends.push(end);
        col.thread_ids.push(c.thread as i64);
        if snap.task_columns {
            col.task_ids.push(c.task);
            col.await_ns.push(c.await_ns.min(end - c.start_ns)); // an earlier end: no longer
            col.ready_wait_ns.push(if c.ready_wait_ns < 0 { -1 } else { c.ready_wait_ns.min(end - c.start_ns) });
            col.task_step_ns.push(c.task_step_ns.min(end - c.start_ns));
        }
        match closed.iter_mut().find(|(n, _)| n == name) {
            Some((_, n)) => *n += 1,
            None => closed.push((name.clone(), 1)),
        }
    }
    closed
}

/// The end each of `open` gets when closed at `end`: `end`, or the end of the innermost
/// completed call on its lane that encloses its start, when that call ended first. A call left open inside one that was exited - the
/// session's root region closing around a worker's call when a pool is terminated, an
/// `__enter__` without `__exit__` before `sys.exit()` - then nests in it instead of crossing
/// it (crossing it, an untracked run would lose its call graph and a tracked one would set
/// the call aside). Lanes as the reconstruction's: the task lane for a
/// call in a task, else the thread's; one lane for all without a thread column.
/// Cost: none without open calls; else one pass over the snapshot's calls, looking up only
/// the lanes with an open call.
fn closing_times(snap: &Snapshot, open: &[(String, OpenCall)], end: i64) -> Vec<i64> {
    let lane = |thread: i64, task: i64| -> (i64, i64) {
        if !snap.thread_ids {
            (0, -1)
        } else if snap.task_columns && task >= 0 {
            (-1, task)
        } else {
            (thread, -1)
        }
    };
    let mut ends: Vec<i64> = open.iter().map(|(_, c)| end.max(c.start_ns)).collect();
    if open.is_empty() {
        return ends; // the usual end of a recording: no pass over the calls
    }
    let mut by_lane: std::collections::HashMap<(i64, i64), Vec<usize>> = std::collections::HashMap::new();
    for (k, (_, c)) in open.iter().enumerate() {
        by_lane.entry(lane(c.thread as i64, c.task)).or_default().push(k);
    }
    for col in &snap.regions {
        for (i, (&s, &e)) in col.starts.iter().zip(&col.ends).enumerate() {
            let thread = col.thread_ids.get(i).copied().unwrap_or(-1);
            let task = if snap.task_columns { col.task_ids.get(i).copied().unwrap_or(-1) } else { -1 };
            let Some(waiting) = by_lane.get(&lane(thread, task)) else { continue };
            for &k in waiting {
                let start = open[k].1.start_ns;
                // strictly around its start: a sibling that ended at the very ns it started
                // does not enclose it
                if s < start && start < e && e < ends[k] {
                    ends[k] = e;
                }
            }
        }
    }
    ends
}

/// Per-call metadata of the rows that got closed open calls: `{}` for each completed call,
/// then `{"open_at_finalize": true}` for each closed one.
fn flag_open_calls(run: &mut Run, closed: &[(String, usize)]) {
    for (name, n) in closed {
        let Some(id) = run.region_names.iter().position(|r| r == name) else { continue };
        for row in run.regions.iter_mut().filter(|r| r.region as usize == id) {
            let done = row.len() - n;
            let items: Vec<&str> = std::iter::repeat_n("{}", done)
                .chain(std::iter::repeat_n("{\"open_at_finalize\": true}", *n))
                .collect();
            row.event_metadata = Some(format!("[{}]", items.join(", ")));
        }
    }
}

/// Store rank 0's call ids from `base` ([`number_rank`]): `(next base, nesting failure
/// message)`; on a failure the run keeps no call graph.
fn apply_numbering(
    run: &mut Run,
    base: i64,
    numbering: Result<scope_profiler_analysis::CallNumbering, scope_profiler_analysis::NestingError>,
) -> (i64, Option<String>) {
    if run.regions.is_empty() {
        return (base, None);
    }
    match numbering {
        Ok(numbering) => (numbering.apply(run), None),
        // with the likely cause when untracked (threads traced by
        // setup(recursive_profile=True) are not pointed at a missing sp_end only)
        Err(e) => (base, Some(nesting_note(run, 0, &e))),
    }
}

impl Checkpoint {
    /// The warning about [`Checkpoint::open`], `None` when no call was open: how many, the
    /// first few with region, lane (thread name, or task name and thread) and how long they
    /// had been open at `now_ns`, and what became of them (`closed`: in the run, ending at
    /// the end of the recording; else left open for a later checkpoint).
    pub fn open_calls_warning(&self, now_ns: i64, closed: bool) -> Option<String> {
        const SHOWN: usize = 3;
        if self.open.is_empty() {
            return None;
        }
        let thread = |i: usize| {
            self.run
                .threads
                .iter()
                .find(|t| t.index == i as i64)
                .map_or_else(|| format!("thread #{i}"), |t| t.name.clone())
        };
        let lane = |c: &OpenCall| match self.run.tasks.iter().find(|t| t.index == c.task) {
            Some(t) => format!("{} on {}", t.name, thread(c.thread)),
            None => thread(c.thread),
        };
        let shown: Vec<String> = self
            .open
            .iter()
            .take(SHOWN)
            .map(|(name, c)| {
                let open_s = (now_ns - c.start_ns).max(0) as f64 / 1e9;
                format!("{} on {} (open {open_s:.3} s)", scope_profiler_analysis::py_repr(name), lane(c))
            })
            .collect();
        let more = self.open.len().saturating_sub(SHOWN);
        let what = if closed {
            "at the end of the recording; they are in the profile as calls ending now, flagged {\"open_at_finalize\": true} in their per-call metadata (Region.event_metadata)"
        } else {
            "at finalize; they stay open, and the finalize after they end reports them"
        };
        Some(format!(
            "{} call(s) still open {what}: {}{}",
            self.open.len(),
            shown.join(", "),
            if more > 0 { format!(", and {more} more") } else { String::new() }
        ))
    }
}
