//! The rules of a profiling session and of `scope-profiler run`, without Python: what the
//! Python package decides and says, exposed to it by thin functions of the PyO3 crate; and
//! the signal plumbing of the processes `run` runs.
//!
//! * [`package_names`]: the package's names loaded on first use and the reference's names it
//!   cannot honour (with the reason).
//! * [`lifecycle`]: the manager's lifecycle, when `setup()` is refused, which tagged regions record.
//! * [`pausing`]: when `pause()` is refused, and the message saying why.
//! * [`settings`]: the settings of `setup()`: names, defaults, validation (the reference's words).
//! * [`environment`]: what the environment asks of a run (`setup_from_env`, opt-in tags,
//!   MPI launch detection).
//! * [`host`]: host facts of the run's `/metadata` (`platform`, `omp_num_threads`) from
//!   system calls, without a subprocess.
//! * [`run_metadata`]: the run's `/metadata` at `setup()` (host, versions, a job's environment).
//! * [`mpi_job`]: a collective `finalize()` under MPI: messages to rank 0, texts.
//! * [`run_command`]: what `scope-profiler run` asks of the Python package (session keywords,
//!   script check, followed processes' files and descriptions) and the texts around it.
//! * [`default_outputs`]: what `run` writes when not asked for more (the profile and its flame
//!   graph), and the bound of every such file.
//! * [`end_of_run`]: the end of `scope-profiler run` once the script's session wrote its
//!   recording: followed processes stacked, the output rendered, the summary, the flame graph
//!   or (`--speedscope`) the speedscope file.
//! * [`sigterm_guard`]: the C guard in front of the Python-level SIGTERM handlers of `run` and
//!   of the processes it follows.
//! * [`untracked_loops`]: what `track_async` says about tasks it cannot give lanes (an
//!   uninstrumented event loop's, trio's).
pub mod default_outputs;
pub mod end_of_run;
pub mod environment;
pub mod host;
pub mod lifecycle;
pub mod mpi_job;
pub mod package_names;
pub mod pausing;
pub mod run_command;
pub mod run_metadata;
pub mod settings;
pub mod sigterm_guard;
pub mod untracked_loops;
