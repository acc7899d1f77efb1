//! From recording to a finished run, without Python.
//!
//! * [`api_surface`]: the package's names loaded on first use and the reference's names it
//!   cannot honour (with the reason).
//! * [`lifecycle`]: the manager's lifecycle, when `setup()` is refused, which tagged regions record.
//! * [`pausing`]: when `pause()` is refused, and the message saying why.
//! * [`snapshot`]: the recorder's snapshot (per-region columns, thread and task rows) and
//!   its region table become an [`analysis::Run`](scope_profiler_analysis::Run) (rank 0).
//! * [`concat`]: the calls of one recorder taken at successive moments (sidecar frames,
//!   then the last snapshot) as one run, a part at a time.
//! * [`checkpoint`]: what `finalize()` does: snapshot, optional rewind, call ids
//!   ([`analysis::assign_call_ids`](scope_profiler_analysis::assign_call_ids)) and the HDF5
//!   file ([`formats::write_h5`](scope_profiler_formats::write_h5)).
//! * [`end_of_run`]: the end of `scope-profiler run` once the script's session wrote its
//!   recording: followed processes stacked, the output rendered, the summary, the speedscope file.
//! * [`environment`]: what the environment asks of a run (`setup_from_env`, opt-in tags,
//!   MPI launch detection).
//! * [`followed`]: the recordings of the processes `run` followed, stacked after the run's own
//!   file as rank blocks (at the end of `run`, and by `recover`).
//! * [`host`]: host facts of the run's `/metadata` (`platform`, `omp_num_threads`) from
//!   system calls, without a subprocess.
//! * [`settings`]: the settings of `setup()`: names, defaults, validation (the reference's words).
//! * [`run_metadata`]: the run's `/metadata` at `setup()` (host, versions, a job's environment).
//! * [`run_session`]: what `scope-profiler run` asks of the Python package (session keywords,
//!   script check, followed processes' files and descriptions) and the texts around it.
//! * [`mpi_job`]: a collective `finalize()` under MPI: messages to rank 0, texts.
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
pub mod api_surface;
pub mod checkpoint;
pub mod concat;
pub mod end_of_run;
pub mod environment;
pub mod followed;
pub mod host;
pub mod lifecycle;
pub mod metadata_scopes;
pub mod mpi_job;
pub mod native_regions;
pub mod pausing;
pub mod run_metadata;
pub mod run_session;
pub mod settings;
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
