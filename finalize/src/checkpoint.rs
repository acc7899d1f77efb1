//! `finalize()` / checkpoint: recorder -> numbered [`Run`], optionally written as HDF5.
use std::path::Path;

use scope_profiler_analysis::{assign_call_ids, MetaValue, Run};
use scope_profiler_formats::hdf5::write::{publish_h5, WriteFailure};
use scope_profiler_recorder::{Recorder, RegionTable};

use crate::snapshot::{run_from_snapshot, Snapshot, UnknownRegion};
use crate::stream::concat_runs;

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
    let (mut run, mark, order) = {
        let table = regions.lock();
        let snap = Snapshot::take(rec, table.len(), req.start_time_ns);
        let mark = rec.watermark();
        if req.rewind && req.write_to.is_none() {
            rec.retire(&mark);
        }
        let order: Option<Vec<String>> = (!prior.is_empty()).then(|| table.iter().map(|m| m.name.clone()).collect());
        (run_from_snapshot(snap, &table, req.metadata)?, mark, order)
    };
    if let Some(order) = order {
        prior.push(run);
        run = concat_runs(prior, Some(&order));
    }
    let (next_call_id, warning) = number_calls(&mut run, req.call_id_base);
    if let Some(path) = req.write_to {
        let r = &run;
        if let Err(failure) = release(&|| publish_h5(r, path)) {
            let unwritten = Box::new(Checkpoint { run, next_call_id, warning });
            return Err(CheckpointError::Write { failure, unwritten });
        }
        if req.rewind {
            rec.retire(&mark);
        }
    }
    Ok(Checkpoint { run, next_call_id, warning })
}

/// Rank 0's call ids from `base`: `(next base, nesting failure message)`.
fn number_calls(run: &mut Run, base: i64) -> (i64, Option<String>) {
    if run.regions.is_empty() {
        return (base, None);
    }
    match assign_call_ids(run, 0, base) {
        Ok(next) => (next, None),
        Err(e) => (base, Some(e.0)),
    }
}
