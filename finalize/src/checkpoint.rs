//! `finalize()` / checkpoint: recorder -> numbered [`Run`], optionally written as HDF5.
use std::path::Path;

use scope_profiler_analysis::{assign_call_ids, MetaValue, Run};
use scope_profiler_formats::{write_h5, H5Error};
use scope_profiler_recorder::{Recorder, RegionTable};

use crate::snapshot::{run_from_snapshot, Snapshot, UnknownRegion};

/// What a checkpoint does besides taking the snapshot.
#[derive(Debug, Clone, Default)]
pub struct CheckpointRequest<'a> {
    /// The run metadata (`/metadata`), in order; `mpi_size` decides `num_ranks`.
    pub metadata: Vec<(String, MetaValue)>,
    /// Run origin, absolute ns on the recording clock: thread and task timestamps are
    /// made relative to it.
    pub start_time_ns: i64,
    /// Rewind the recorder after the snapshot ([`Recorder::mark_written`]): the calls
    /// taken are not reported again by the next checkpoint.
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
    /// Writing the HDF5 file failed (the message names the file).
    #[error(transparent)]
    Write(#[from] H5Error),
}

/// The HDF5 write of a checkpoint, handed to the caller's `release` (see [`checkpoint`]).
pub type WriteJob<'a> = &'a (dyn Fn() -> Result<(), H5Error> + Sync + 'a);

/// Snapshot `rec` against its region table `regions` (both under the table's lock), rewind
/// when `req.rewind`, number the calls from `req.call_id_base`
/// ([`assign_call_ids`]; on a nesting failure the run keeps no call graph and the message
/// is returned as [`Checkpoint::warning`]), and write `req.write_to` when given.
///
/// `release` runs the HDF5 write: it must call the job it is given and return its result.
/// The Python glue releases the GIL there (`py.detach`); the job does not touch the
/// recorder. Callers without a lock pass `|write| write()`.
///
/// Errors: [`CheckpointError::Write`] when the file cannot be written (the run is then
/// lost to the caller, the recorder is rewound all the same if asked).
///
/// # Safety
/// As [`Recorder::snapshot`]: no thread may be inside `enter`/`exit` of `rec`
/// concurrently, and earlier such calls must happen-before this one.
pub unsafe fn checkpoint(
    rec: &Recorder,
    regions: &RegionTable,
    req: CheckpointRequest<'_>,
    release: impl FnOnce(WriteJob<'_>) -> Result<(), H5Error>,
) -> Result<Checkpoint, CheckpointError> {
    let mut run = {
        let table = regions.lock();
        let snap = Snapshot::take(rec, table.len(), req.start_time_ns);
        if req.rewind {
            rec.mark_written();
        }
        run_from_snapshot(snap, &table, req.metadata)?
    };
    let (next_call_id, warning) = number_calls(&mut run, req.call_id_base);
    if let Some(path) = req.write_to {
        let r = &run;
        release(&|| write_h5(r, path))?;
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
