//! The `scope-profiler` command line as a library (clap): the grammar ([`args`]),
//! [`dispatch`], and one module per subcommand, each with its `execute`: [`summary`],
//! [`threads`], [`export`], [`timeline`], [`report`], [`recover`] (a killed streamed
//! recording's file), and [`run`].
//!
//! `run` needs a Python interpreter: [`dispatch`] hands it back as a [`RunRequest`] and the
//! Python package's console script carries it out (the standalone binary re-executes
//! `python3 -m scope_profiler`). Everything that reads files runs here, in Rust.

/// `println!` to standard output that drops what it cannot write instead of panicking: a
/// reader that closed the pipe (`scope-profiler summary f.h5 | head -3`) ends the output, not
/// the command (instead of a Rust panic and a Python traceback).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

pub mod args;
pub mod dataset;
pub mod diff;
pub mod export;
pub mod failure;
pub mod recover;
pub mod report;
pub mod run;
pub mod summary;
pub mod threads;
pub mod timeline;

use clap::Parser;

pub use args::{Cli, Command, Format, Formats};
/// What `run` asks of the Python package (`session::run_command`).
pub use scope_profiler_session::run_command::{RunRequest, RunSettings, TracingRequest};
/// The HDF5 file a run writing `output` records into (`session::settings::recording_path`).
pub use scope_profiler_session::settings::recording_path;

/// What the command line asked for.
#[derive(Debug)]
pub enum Outcome {
    /// Done; exit with this code.
    Exit(i32),
    /// Python must run a script (then `session::end_of_run::after_run`).
    Run(Box<RunRequest>),
}

/// Parse `argv` (program name first) and carry out every subcommand but `run`.
/// `--help`/`--version` print and give `Exit(0)`; usage errors - clap's and ours (a bad
/// option value, an input or output of the wrong kind: [`failure::Failure`]) - print
/// `error: ...` and give `Exit(2)`; runtime failures (a file missing, damaged, not written)
/// `Exit(1)`.
pub fn dispatch<I, T>(argv: I) -> Outcome
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(run::module_args_last(argv.into_iter().map(Into::into).collect())) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Outcome::Exit(code);
        }
    };
    let code = match cli.command {
        Command::Run(args) => return run::request(args),
        Command::Recover { file, output, from } => recover::execute(&file, output.as_deref(), from.as_deref()),
        Command::Summary { files, merge, summary } => summary::execute(&files, merge, &summary.options(None)),
        Command::Report { files, output, ranks } => report::execute(&files, &output, &ranks),
        Command::Threads { file, all_tasks } => threads::execute(&file, all_tasks),
        Command::Export { formats, files, output_dir, ranks, jobs } => {
            export::execute(&formats.0, &files, &output_dir, &ranks, jobs)
        }
        Command::Diff(args) => diff::run(&args),
        Command::Dataset { runs, output_dir, append, jobs } => dataset::execute(&runs, &output_dir, append, jobs),
        Command::Timeline { file, output, ranks, width, limits } => {
            timeline::execute(&file, output.as_deref(), &ranks, width, &limits)
        }
    };
    Outcome::Exit(code)
}
