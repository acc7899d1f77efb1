//! Command-line grammar (clap).
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Region profiler for concurrent Python programs: record with `run`, read `.h5` files
/// with `summary` and `threads`, convert many files at once with `export`.
#[derive(Debug, Parser)]
#[command(
    name = "scope-profiler",
    version,
    about = "Region profiler for concurrent Python programs (threads, asyncio, greenlets, MPI)",
    after_help = "Examples:\n  scope-profiler run --track-threads examples/threaded_pipeline.py\n  scope-profiler summary profiling_data.h5\n  scope-profiler threads profiling_data.h5\n  scope-profiler export speedscope runs/*.h5 -o speedscope/"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Export formats `export` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// speedscope evented profiles, one per lane (thread/task): `<stem>.speedscope.json`
    Speedscope,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a Python script under the profiler, then print its summary and write a
    /// `.h5` file and a `.speedscope.json` beside it.
    ///
    /// The script's own regions (`scope_profiler.profile_region(...)`, `@scope_profiler.profile`)
    /// are recorded by the process-wide manager; a root region `scope_profiler.session`
    /// spans the whole script.
    #[command(after_help = "Examples:\n  scope-profiler run --track-threads examples/threaded_pipeline.py\n  scope-profiler run -o out/run1.h5 my_script.py --my-flag 3")]
    Run {
        /// Record the thread of every call and the thread table (`track_threads=True`).
        #[arg(long)]
        track_threads: bool,
        /// The `.h5` file to write.
        #[arg(short = 'o', long = "output", default_value = "profiling_data.h5")]
        output: PathBuf,
        /// Do not write the `.speedscope.json` next to the `.h5` file.
        #[arg(long)]
        no_speedscope: bool,
        /// Do not print the summary.
        #[arg(short, long)]
        quiet: bool,
        /// The Python script to run (as `__main__`).
        script: PathBuf,
        /// Arguments passed to the script (its `sys.argv[1:]`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Print the per-region summary (calls, total/average/min/max, inclusive and exclusive
    /// time) and, for runs recorded with threads, the per-thread summary.
    #[command(after_help = "Example:\n  scope-profiler summary profiling_data.h5")]
    Summary {
        /// One or more `.h5` files written by scope-profiler (any schema 1-3).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List the threads (and tasks) a run recorded, with wall, CPU and region time.
    #[command(after_help = "Example:\n  scope-profiler threads profiling_data.h5")]
    Threads {
        /// A `.h5` file written by scope-profiler.
        file: PathBuf,
    },
    /// Convert many `.h5` files in parallel; one output per input in DIR. A file that
    /// fails gets an error line and the exit code is 1, but the batch goes on.
    #[command(after_help = "Example:\n  scope-profiler export speedscope runs/*.h5 -o speedscope/")]
    Export {
        /// Output format.
        format: Format,
        /// Input `.h5` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output directory (created if missing).
        #[arg(short = 'o', long = "output-dir")]
        output_dir: PathBuf,
        /// Worker threads (default: one per core).
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
    },
}
