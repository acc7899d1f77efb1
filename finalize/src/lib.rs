//! From recording to a finished run, without Python.
//!
//! * [`snapshot`]: the recorder's snapshot (per-region columns, thread and task rows) and
//!   its region table become an [`analysis::Run`](scope_profiler_analysis::Run) (rank 0).
//! * [`concat`]: the calls of one recorder taken at successive moments (sidecar frames,
//!   then the last snapshot) as one run, a part at a time.
//! * [`checkpoint`]: what `finalize()` does: snapshot, optional rewind, call ids
//!   ([`analysis::assign_call_ids`](scope_profiler_analysis::assign_call_ids)) and the HDF5
//!   file ([`formats::write_h5`](scope_profiler_formats::write_h5)).
//! * [`followed`]: the recordings of the processes `run` followed, stacked after the run's own
//!   file as rank blocks (at the end of `run`, and by `recover`).
//! * [`native_regions`]: one rank's regions of C/Fortran output, for `finalize(native_traces=)`.
//! * [`metadata_scopes`]: `metadata()` scopes (entry/exit times and values) applied to the
//!   calls they contain at a checkpoint; nothing per call.
//! * [`stream`]: `flush_interval`: completed calls appended to a sidecar file as they
//!   complete, read back at finalize, and `recover` of the sidecar of a killed process.
//! * [`transport`]: a run as bytes between processes of one job (MPI ranks to rank 0) and
//!   the stacking of such runs into one multi-rank run; its columns apart (pickling) or
//!   compressed (sidecar frames).
//!
//! The PyO3 crate only converts Python values and handles the GIL around these calls.
pub mod checkpoint;
pub mod concat;
pub mod followed;
pub mod metadata_scopes;
pub mod native_regions;
pub mod snapshot;
pub mod stream;
pub mod transport;

pub use checkpoint::{
    checkpoint, checkpoint_with_prior, Checkpoint, CheckpointError, CheckpointRequest, ForeignRegion, WriteJob,
};
pub use metadata_scopes::{BadScopeValues, MetadataScope, MetadataScopes};
pub use snapshot::{run_from_snapshot, Snapshot, UnknownRegion};
pub use transport::{
    decode_run, decode_run_apart, decode_run_compact, decode_run_compact_shape, encode_run, encode_run_apart,
    encode_run_compact, stack, DecodeError, StackError, MAGIC,
};
