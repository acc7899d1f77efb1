//! Command-line grammar (clap).
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Region profiler for concurrent Python programs: record with `run`, read `.h5` files
/// with `summary` and `threads`, convert many files at once with `export`, draw a run's
/// threads and tasks with `timeline`.
#[derive(Debug, Parser)]
#[command(
    name = "scope-profiler",
    version,
    about = "Region profiler for concurrent Python programs (threads, asyncio, greenlets, MPI)",
    after_help = "Examples:\n  scope-profiler run --track-threads examples/threaded_pipeline.py\n  scope-profiler run --track-async my_asyncio_app.py\n  scope-profiler summary profiling_data.h5\n  scope-profiler threads profiling_data.h5\n  scope-profiler export speedscope runs/*.h5 -o speedscope/\n  scope-profiler export folded,flamegraph,parquet runs/*.h5 -o out/\n  scope-profiler timeline profiling_data.h5 -o timeline.svg\n  scope-profiler run --flush-interval 5 server.py  # then, if it was killed: scope-profiler recover profiling_data.h5"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

use scope_profiler_formats::registry::cli_formats_help;
/// The formats `export` writes: [`scope_profiler_formats::registry`].
pub use scope_profiler_formats::Format;

/// `--flush-interval`: a number of seconds
/// ([`check_interval`](scope_profiler_finalize::stream::check_interval)).
pub fn parse_interval(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => scope_profiler_finalize::stream::check_interval(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// A comma-separated list of formats (`folded,flamegraph`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formats(pub Vec<Format>);

/// `export --help`'s text after the options: the formats ([`cli_formats_help`]), then
/// `examples`.
fn formats_then(examples: &str) -> String {
    format!("{}\n\n{examples}", cli_formats_help())
}

/// Parse `FORMAT[,FORMAT...]` (case-insensitive; an unknown name lists the valid ones).
pub fn parse_formats(s: &str) -> Result<Formats, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let f = Format::from_cli_name(part).ok_or_else(|| {
            let names: Vec<&str> = Format::cli_formats().map(Format::name).collect();
            format!("unknown format '{part}' (formats: {})", names.join(", "))
        })?;
        out.push(f);
    }
    if out.is_empty() {
        return Err("no format given".into());
    }
    Ok(Formats(out))
}

/// `--sort KEY`: one of [`SortKey::NAMES`](scope_profiler_analysis::SortKey::NAMES).
pub fn parse_sort(s: &str) -> Result<scope_profiler_analysis::SortKey, String> {
    use scope_profiler_analysis::SortKey;
    if !SortKey::NAMES.contains(&s) {
        return Err(format!("'{s}' is not a sort key (one of: {})", SortKey::NAMES.join(", ")));
    }
    SortKey::parse(s)
}

/// What the printed summary shows: the order of the regions and how many of them and of
/// the tasks (`summary`, `run`).
#[derive(Debug, Clone, clap::Args)]
pub struct SummaryArgs {
    /// Order the regions by KEY: total (inclusive time, the default), exclusive, calls, mean
    /// (time per call) or name.
    #[arg(long, value_name = "KEY", value_parser = parse_sort, default_value = "total")]
    pub sort: scope_profiler_analysis::SortKey,
    /// Show only the first N regions of each rank in that order, and how many more there are
    /// (0: every region). `run` shows 30 unless told.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// One row per asyncio task or greenlet (by default the 20 that held their thread
    /// longest, and how many more there are).
    #[arg(long)]
    pub all_tasks: bool,
}

impl SummaryArgs {
    /// The text summary's options, `default_top` when `--top` is not given.
    pub fn options(&self, default_top: Option<usize>) -> scope_profiler_formats::text_summary::SummaryOptions {
        scope_profiler_formats::text_summary::SummaryOptions {
            sort: self.sort,
            top: self.top.or(default_top).filter(|&n| n > 0),
            all_tasks: self.all_tasks,
            ..Default::default()
        }
        .with_cli_hints()
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a Python script under the profiler and write its profile
    ///
    /// When the script ends, print its summary and write a `.h5` file and the run's flame
    /// graph (`.flamegraph.svg`) beside it; the full timeline of every call
    /// (`.speedscope.json`) with --speedscope. The flame graph stays within 40 bytes per
    /// recorded call and 100 MB; the `.h5` takes about 3 bytes per call.
    ///
    /// The script's own regions (`scope_profiler.profile_region(...)`, `@scope_profiler.profile`)
    /// are recorded by the process-wide manager; a root region `scope_profiler.session`
    /// spans the whole script.
    ///
    /// Python processes the script starts are profiled too and merged into the output, one
    /// rank block per process (`--no-follow`: this process only).
    #[command(
        after_help = "Examples:\n  scope-profiler run --track-threads examples/threaded_pipeline.py\n  scope-profiler run -o out/run1.h5 my_script.py --my-flag 3\n  scope-profiler run -o run.json my_script.py  # a JSON profile instead of HDF5\n  scope-profiler run --track-threads -m http.server 8000  # a module, as python -m\n  scope-profiler run --no-follow pool_script.py  # this process only, not its workers"
    )]
    Run(RunArgs),
    /// Print the region and thread summary of one or more runs
    ///
    /// The per-region summary (calls, total/average/min/max, inclusive and exclusive time),
    /// regions by inclusive time (--sort), and, for runs recorded with threads, the
    /// per-thread summary and the busiest tasks (--all-tasks for every one).
    #[command(
        after_help = "Examples:\n  scope-profiler summary profiling_data.h5\n  scope-profiler summary --sort exclusive --top 10 profiling_data.h5\n  scope-profiler summary --merge worker_*.h5"
    )]
    Summary {
        #[command(flatten)]
        summary: SummaryArgs,
        /// Combine the files into one run first, each file its own block of ranks (file k's
        /// ranks follow file k-1's), e.g. the per-process files of one job; each file keeps
        /// its own threads, tasks and call graph.
        #[arg(long)]
        merge: bool,
        /// One or more `.h5` files written by scope-profiler (any schema 1-3).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write the file a killed `run --flush-interval` did not write, from its sidecar
    ///
    /// Write the `.h5` file that a process recording with `flush_interval` (`run
    /// --flush-interval`) did not write because it was killed (SIGKILL, OOM killer, power
    /// loss), from the sidecar it streamed to (`.NAME.<tag>-<pid>.partial` beside FILE): every
    /// intact frame (a torn last frame is left out), the last thread and task tables.
    /// Written atomically through the normal writer; the sidecar is then removed. FILE is
    /// never replaced by fewer calls than it holds: when its own process wrote it and then
    /// streamed more (calls recorded after its exit-time finalize), those are added to it;
    /// another recording's smaller sidecar is refused (`-o` writes it elsewhere). For a run
    /// that wrote JSON or HTML (`run -o k.json`, recorded into `k.json.scope-profiler.h5`), `recover
    /// k.json` recovers that recording and renders `k.json` from it, as the run would have.
    /// Without a sidecar, the followed processes' recordings a `run` left beside FILE
    /// (`FILE.procs-<pid>/`, its process gone before it merged them) are merged into FILE.
    #[command(
        after_help = "Examples:\n  scope-profiler recover profiling_data.h5\n  scope-profiler recover run.h5 -o recovered.h5\n  scope-profiler recover k.json   # a killed `run -o k.json --flush-interval 5`"
    )]
    Recover {
        /// The `.h5` file the killed process was recording into (it may not exist), or the
        /// `.json` file a killed `run -o k.json` was to write.
        file: PathBuf,
        /// Write the recovered run there instead of FILE (the sidecar is then kept).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Recover from this sidecar (default: the newest one of FILE whose process is gone).
        #[arg(long = "from", value_name = "SIDECAR")]
        from: Option<PathBuf>,
    },
    /// Write a self-contained HTML report of one or more runs
    ///
    /// One self-contained HTML file (no server, no network: open it in a browser) with
    /// the region summary (calls, total/mean/min/max, exclusive time; held and await time for
    /// runs recorded with --track-async), the thread and task tables, the lane timeline and an
    /// interactive flame graph. Several files give one section each.
    #[command(
        after_help = "Examples:\n  scope-profiler report profiling_data.h5 -o report.html\n  scope-profiler report before.h5 after.h5 -o compare.html\n  scope-profiler report mpi_run.h5 --rank 0 -o rank0.html\n  scope-profiler run --track-async -o run.html my_app.py   # record and write the report"
    )]
    Report {
        /// One or more `.h5` files written by scope-profiler.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The HTML file to write.
        #[arg(short = 'o', long = "output", default_value = "report.html")]
        output: PathBuf,
        /// Only these ranks (repeatable; default: every rank).
        #[arg(short = 'r', long = "rank", value_name = "RANK")]
        ranks: Vec<u32>,
    },
    /// List the threads and tasks of a run, with their times
    ///
    /// The threads (and tasks) a run recorded, each with its wall, CPU and region time.
    #[command(after_help = "Example:\n  scope-profiler threads profiling_data.h5")]
    Threads {
        /// A `.h5` file written by scope-profiler.
        file: PathBuf,
        /// One row per asyncio task or greenlet (by default the 20 that held their thread
        /// longest, and how many more there are).
        #[arg(long)]
        all_tasks: bool,
    },
    /// Convert many files in parallel into one or more export formats
    ///
    /// The `.h5` files are converted in parallel; the outputs of each input go to DIR, named
    /// after the input's stem. A file that fails gets one error line and the batch goes on;
    /// the exit code is then 2 if a file failed for a usage error (a `--rank` it lacks, not a
    /// profile), else 1. A progress bar is drawn on stderr when it is a terminal. Calls that do not nest in their lane (a generator peeked inside a
    /// region) are set aside and left out of the exports: each file with some gets a
    /// `note:` line naming them, and the total is printed at the end.
    #[command(
        after_help = formats_then("Examples:\n  scope-profiler export speedscope runs/*.h5 -o speedscope/\n  scope-profiler export folded,flamegraph,timeline run.h5 -o out/\n  scope-profiler export parquet runs/*.h5 -o parquet/ -j 4\n  scope-profiler export chrome,perfetto,pprof,prof run.h5 -o traces/\n  scope-profiler export json runs/*.h5 -o json/\n  scope-profiler export timeline mpi_run.h5 --rank 0 --rank 3 -o out/\n  duckdb -c \"select region, sum(exclusive_ns) from 'parquet/run.parquet' group by 1\"")
    )]
    Export {
        /// Output format(s), comma-separated (the list below).
        #[arg(value_parser = parse_formats, value_name = "FORMAT[,FORMAT...]")]
        formats: Formats,
        /// Input `.h5` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output directory (created if missing).
        #[arg(short = 'o', long = "output-dir")]
        output_dir: PathBuf,
        /// Only these ranks (repeatable; default: every rank of each file).
        #[arg(short = 'r', long = "rank", value_name = "RANK")]
        ranks: Vec<u32>,
        /// Worker threads (default: one per core).
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
    },
    /// Gather many runs into one Parquet dataset (DuckDB, Polars, Dask, Spark)
    ///
    /// Each run file (`.h5`, JSON profile; directories are searched for them) becomes Hive
    /// partitions `DIR/calls/run=<id>/` (also `threads`, `tasks`, `regions`) and a row of
    /// `DIR/runs.parquet` with the run's metadata; call times are ns from the run's start.
    /// Files are converted in parallel. A file that cannot be read gets an error line and
    /// the others are written (exit code 1). docs/datasets.md describes the tables.
    #[command(
        after_help = "Examples:\n  scope-profiler dataset runs/ -o study/\n  scope-profiler dataset nightly/*.h5 -o study/ --append\n  duckdb -c \"select r.mpi_size, c.region, sum(c.exclusive_ns)/1e9 from 'study/calls/*/*.parquet' c join 'study/runs.parquet' r using (run) group by all\""
    )]
    Dataset {
        /// Run files (`.h5`, `.json`, `.json.gz`) or directories searched for them.
        #[arg(required = true, value_name = "RUNS")]
        runs: Vec<PathBuf>,
        /// The dataset directory (created if missing).
        #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
        output_dir: PathBuf,
        /// Add the runs to an existing dataset; runs already in it are skipped.
        #[arg(long)]
        append: bool,
        /// Worker threads (default: one per core).
        #[arg(short = 'j', long)]
        jobs: Option<usize>,
    },
    #[command(
        about = "Compare two runs (or directories of repeated runs): what got slower or faster",
        long_about = crate::diff::LONG_ABOUT,
        after_help = crate::diff::EXAMPLES
    )]
    Diff(crate::diff::DiffArgs),
    /// Draw the lane timeline of one run as SVG
    ///
    /// One row per thread and task, calls as nested bars on a time axis in ms from the run
    /// start, await time of task calls hatched, a tooltip on every bar. Open it in a browser.
    ///
    /// The picture is never more than 32,767 px tall or wide (browsers and rsvg refuse larger
    /// SVG images): at most --lanes rows (the busiest lanes by top-level call time) plus one
    /// summary row for the others, at most --max-depth levels per row (deeper calls become
    /// markers under their callers); rows that would still not fit are drawn lower (down to
    /// 2 px a level), then the least busy lanes join the summary row. A caption under the
    /// title says what was left out.
    #[command(
        after_help = "Examples:\n  scope-profiler timeline profiling_data.h5\n  scope-profiler timeline async_run.h5 -o timeline.svg --width 2000\n  scope-profiler timeline mpi_run.h5 --rank 1 -o rank1.svg\n  scope-profiler timeline server.h5 --window 12.5:13 --lanes 200\n  scope-profiler timeline pool.h5 --include 'fetch*' --exclude 'fetch_cache*' --max-depth 8\n  scope-profiler timeline deep.h5 --lanes 0 --max-depth 0   # everything that fits in 32,767 px"
    )]
    Timeline {
        /// A `.h5` file written by scope-profiler.
        file: PathBuf,
        /// The SVG to write (default: `<stem>.timeline.svg` in the current directory).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Only these ranks (repeatable; default: every rank).
        #[arg(short = 'r', long = "rank", value_name = "RANK")]
        ranks: Vec<u32>,
        /// Width of the picture in px (at most 32,767).
        #[arg(long, default_value_t = 1400.0)]
        width: f64,
        #[command(flatten)]
        limits: TimelineLimits,
    },
}

/// `run`'s options and the script or module it runs (the subcommand's help is
/// [`Command::Run`]'s).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Record the thread of every call and the thread table (`track_threads=True`).
    #[arg(long)]
    pub track_threads: bool,
    /// Also record asyncio and trio tasks (anyio's on either backend) and greenlets as
    /// lanes, with per-call await time (`track_async=True`; implies --track-threads).
    /// Needed for async programs: without it, calls of interleaved tasks share their
    /// thread's stack.
    #[arg(long)]
    pub track_async: bool,
    /// The file to write, its kind by its suffix: `.h5`/`.hdf5` (HDF5), a JSON profile
    /// (`.json`, `.json.gz`) or the HTML report (`.html`, `.htm`); any other suffix is
    /// refused. For JSON and HTML the run records into `<output>.scope-profiler.h5` beside
    /// it, which is rendered and removed (kept and named if that fails). The file written
    /// beside it is named after the output's stem: the flame graph (`run.h5` ->
    /// `run.flamegraph.svg`; none beside an HTML report, which shows it), or with
    /// --speedscope the speedscope file (`run.speedscope.json`). Default: the `file_path` of
    /// the --config file, else `profiling_data.h5`.
    #[arg(short = 'o', long = "output", visible_alias = "outfile", conflicts_with = "no_output")]
    pub output: Option<PathBuf>,
    /// Write the full timeline of every call, `<stem>.speedscope.json` (speedscope's format,
    /// about 108 bytes per call), instead of the flame graph `<stem>.flamegraph.svg` written
    /// by default (its size follows the program's shape, not its number of calls).
    #[arg(long)]
    pub speedscope: bool,
    /// No speedscope file (the default; accepted for command lines that pass it).
    #[arg(long, conflicts_with = "speedscope")]
    pub no_speedscope: bool,
    /// Do not print the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// Profile only this process. By default the Python processes the script starts
    /// (`multiprocessing` under fork, spawn and forkserver, `ProcessPoolExecutor`,
    /// `subprocess` running Python, and theirs in turn) record with the same options, each
    /// into its own file, and the output holds one rank block per process that recorded
    /// calls: this process rank 0, the others in the order they began recording (metadata
    /// `processes` names each rank's process).
    #[arg(long)]
    pub no_follow: bool,
    /// Every SECONDS (at least 0.01), append the calls completed since the last flush to a sidecar
    /// file beside the output (`flush_interval`), so that a process killed by SIGKILL or
    /// the OOM killer loses at most about one interval: `scope-profiler recover` then
    /// writes the `.h5` from the sidecar.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval, allow_negative_numbers = true)]
    pub flush_interval: Option<f64>,
    /// Record every Python function call of the script's own code (with -m: also the
    /// module's package, wherever installed) as a call of the region `module.qualname`, without markers (`recursive_profile=True`; a C-level
    /// tracer, on every thread and task lane). It implies --track-threads: the calls of
    /// concurrent threads cannot share one stack. `--all`, `--include`, `--exclude` and
    /// `--entrypoint` imply it.
    #[arg(long)]
    pub recursive: bool,
    /// With --recursive: trace the standard library and installed packages too.
    #[arg(long)]
    pub all: bool,
    /// With --recursive: trace only functions whose `module.qualname` matches GLOB, wherever
    /// they are (the standard library and installed packages too; fnmatch; repeatable: any of them).
    #[arg(long = "include", value_name = "GLOB")]
    pub include: Vec<String>,
    /// With --recursive: do not trace functions whose `module.qualname` matches GLOB
    /// (repeatable).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// With --recursive: record the function named NAME (`co_name`) as the region NAME.
    #[arg(long, value_name = "NAME")]
    pub entrypoint: Option<String>,
    /// Keep the results in memory and write no file (`deactivate_file_output=True`): the
    /// summary is printed (unless -q), no `.h5`, flame graph or speedscope file is written, and the
    /// processes the script starts are not followed.
    #[arg(long)]
    pub no_output: bool,
    /// Read settings from this TOML file's `[profiling]` table (`config_path`, the
    /// reference's format); the options given here override it.
    #[arg(long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// No function-level tracing, even if the --config file turns it on
    /// (`recursive_profile=False`).
    #[arg(long, conflicts_with_all = ["recursive", "all", "include", "exclude", "entrypoint"])]
    pub no_recursive: bool,
    /// A short label stored with the profile (metadata `label`), for comparison and
    /// reporting.
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Record only the regions defined with this tag (`region_tags`; repeatable: any of
    /// them); untagged regions are not recorded.
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Record the regions behind this opt-in tag (`register_opt_in_tag`), such as a
    /// library's own instrumentation; `*` enables every opt-in tag (`enable_tags`;
    /// repeatable; `SCOPE_PROFILER_ENABLE_TAGS` adds to them).
    #[arg(long = "enable-tag", value_name = "TAG")]
    pub enable_tags: Vec<String>,
    /// Initial capacity per region, in calls (`buffer_limit`; the buffers grow as needed).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub buffer_limit: Option<u64>,
    /// Do not profile mpi4py's communication calls (the default; `profile_mpi_calls=False`).
    #[arg(long)]
    pub no_mpi_calls: bool,
    /// Not supported by this edition (the reference's line_profiler timings): refused.
    #[arg(long, hide_short_help = true)]
    pub line_profile: bool,
    /// Not supported by this edition (the reference's Memray capture): refused.
    #[arg(long, hide_short_help = true)]
    pub memory_profile: bool,
    /// Not supported by this edition (the reference's aggregate-only mode): refused.
    #[arg(long, hide_short_help = true)]
    pub aggregation_mode: bool,
    /// Not supported by this edition (the reference's mpi4py call profiling): refused.
    #[arg(long, hide_short_help = true, conflicts_with = "no_mpi_calls")]
    pub mpi_calls: bool,
    /// Run a module instead of a script, as `python -m MODULE` does (`sys.argv[0]` is its
    /// file, `sys.path[0]` the working directory); everything after `-m MODULE` is the
    /// module's arguments (`scope-profiler run -m pytest -x tests/`).
    #[arg(short = 'm', long = "module", value_name = "MODULE")]
    pub module: Option<String>,
    /// The Python script to run (as `__main__`).
    #[arg(required_unless_present = "module")]
    pub script: Option<PathBuf>,
    #[command(flatten)]
    pub summary: SummaryArgs,
    /// Arguments passed to the script (its `sys.argv[1:]`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// What `timeline` draws of the run: bounds that keep the picture within 32,767 px.
#[derive(Debug, Clone, clap::Args)]
pub struct TimelineLimits {
    /// Draw at most N lanes as rows, the busiest by top-level call time (in the window); the
    /// others are summed up in one summary row. 0: every lane (that fits in 32,767 px).
    #[arg(long, value_name = "N", default_value_t = scope_profiler_formats::timeline::TimelineOptions::DEFAULT_LANES)]
    pub lanes: usize,
    /// Draw at most D depth levels per row; deeper calls become dark markers under their
    /// callers. 0: every level (that fits in 32,767 px).
    #[arg(long, value_name = "D", default_value_t = scope_profiler_formats::timeline::TimelineOptions::DEFAULT_MAX_DEPTH)]
    pub max_depth: usize,
    /// Only the calls overlapping START..END, in seconds from the run start (either may be
    /// empty: `2:`, `:0.5`), clipped to it; the axis keeps ms since the run start.
    #[arg(long, value_name = "START:END", value_parser = scope_profiler_formats::timeline::parse_window)]
    pub window: Option<(f64, f64)>,
    /// Only regions whose name matches GLOB (`*`, `?`, `[...]`; repeatable: any of them).
    /// Calls inside a region left out hang from the nearest kept caller.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out regions whose name matches GLOB (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
}
