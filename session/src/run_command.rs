//! What `run` asks of the Python package and says around it: the [`RunRequest`] the
//! command line hands over, the `session(...)` keywords it gives, the check of the script
//! before anything starts, the names of the files of the processes it follows and how each
//! process is described, and the texts of the end of the run (the note after a run that
//! imported an event loop without `--track-async`, the lines of a profile not written).
//! No I/O but [`script_problem`]'s look at the script.

use std::path::{Path, PathBuf};

use scope_profiler_formats::Format;

/// A `run` subcommand to be carried out by Python.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// The script to run; empty with [`RunRequest::module`].
    pub script: PathBuf,
    /// `-m MODULE`: run this module as `__main__` (`runpy.run_module`) instead of a script.
    pub module: Option<String>,
    pub args: Vec<String>,
    /// `track_threads=True`: `--track-threads`, `--track-async`, or function tracing.
    pub track_threads: bool,
    /// `track_async=True` (implies `track_threads`).
    pub track_async: bool,
    pub output: PathBuf,
    /// `-o` was given; else `output` is the default, which the --config file's `file_path`
    /// replaces.
    pub output_given: bool,
    pub speedscope: bool,
    pub quiet: bool,
    /// `flush_interval` in seconds (`--flush-interval`), if given.
    pub flush_interval: Option<f64>,
    /// Function-level tracing (`--recursive` and the options implying it), if asked for.
    pub tracing: Option<TracingRequest>,
    /// Profile the Python processes the script starts too (not `--no-follow`, not
    /// `--no-output`).
    pub follow: bool,
    /// The reference's other `run` options, as settings.
    pub settings: RunSettings,
    /// What the printed summary shows (`--sort`, `--top`, `--all-tasks`).
    pub summary: scope_profiler_formats::text_summary::SummaryOptions,
}

/// The settings of `run` given by the reference's options (scope-profiler 0.7.5's `run`
/// accepts them; a drop-in must too), passed to the run's `session(...)` under their
/// setting names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSettings {
    /// `--no-output`: `deactivate_file_output=True`, the summary printed from memory.
    pub no_output: bool,
    /// `--config FILE`: `config_path`.
    pub config: Option<PathBuf>,
    /// `--no-recursive`: `recursive_profile=False` (over the config file).
    pub no_recursive: bool,
    /// `--label`: `label`.
    pub label: Option<String>,
    /// `--tag` (repeatable): `region_tags`.
    pub region_tags: Vec<String>,
    /// `--enable-tag` (repeatable): `enable_tags`.
    pub enable_tags: Vec<String>,
    /// `--buffer-limit N`: `buffer_limit` (at least 1).
    pub buffer_limit: Option<u64>,
}

/// What `run --recursive` traces (`recursive_profile=True` and the `recursive_*` settings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TracingRequest {
    /// `--all`: the standard library and installed packages too.
    pub all: bool,
    /// `--include GLOB` (any of; empty = every function).
    pub include: Vec<String>,
    /// `--exclude GLOB`.
    pub exclude: Vec<String>,
    /// `--entrypoint NAME`.
    pub entrypoint: Option<String>,
}

/// A `session(...)` keyword's value.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionValue {
    /// Python `None`: not given (a `--config` file's setting stands).
    None,
    /// A bool.
    Bool(bool),
    /// An int.
    Int(u64),
    /// A float (seconds).
    Float(f64),
    /// A str.
    Text(String),
    /// A list of str.
    Texts(Vec<String>),
}

/// The keywords of the session `run` records the script in, in this order: `track_threads`,
/// `track_async` (None when not asked for, so that a `--config` file's setting stands),
/// `flush_interval`, with `--recursive` `recursive_profile=True` and the `recursive_*`
/// options (empty globs: None), then the reference's other options given
/// ([`RunSettings`]: `deactivate_file_output`, `config_path`, `recursive_profile`,
/// `label`, `region_tags`, `enable_tags`, `buffer_limit`).
pub fn session_settings(req: &RunRequest) -> Vec<(&'static str, SessionValue)> {
    use SessionValue as V;
    let flag = |on: bool| if on { V::Bool(true) } else { V::None };
    let globs = |g: &[String]| if g.is_empty() { V::None } else { V::Texts(g.to_vec()) };
    let mut out = vec![
        ("track_threads", flag(req.track_threads)),
        ("track_async", flag(req.track_async)),
        ("flush_interval", req.flush_interval.map_or(V::None, V::Float)),
    ];
    if let Some(t) = &req.tracing {
        out.extend([
            ("recursive_profile", V::Bool(true)),
            ("recursive_all", V::Bool(t.all)),
            ("recursive_include", globs(&t.include)),
            ("recursive_exclude", globs(&t.exclude)),
            ("recursive_entrypoint", t.entrypoint.clone().map_or(V::None, V::Text)),
        ]);
    }
    let s = &req.settings;
    if s.no_output {
        out.push(("deactivate_file_output", V::Bool(true)));
    }
    if let Some(path) = &s.config {
        out.push(("config_path", V::Text(path.to_string_lossy().into_owned())));
    }
    if s.no_recursive {
        out.push(("recursive_profile", V::Bool(false)));
    }
    if let Some(label) = &s.label {
        out.push(("label", V::Text(label.clone())));
    }
    if !s.region_tags.is_empty() {
        out.push(("region_tags", V::Texts(s.region_tags.clone())));
    }
    if !s.enable_tags.is_empty() {
        out.push(("enable_tags", V::Texts(s.enable_tags.clone())));
    }
    if let Some(limit) = s.buffer_limit {
        out.push(("buffer_limit", V::Int(limit)));
    }
    // a later key replaces an earlier one (`--no-recursive` after `--recursive`), in the
    // earlier one's place, as a Python dict built from these pairs has it
    let mut merged: Vec<(&'static str, SessionValue)> = Vec::with_capacity(out.len());
    for (name, value) in out {
        match merged.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => merged.push((name, value)),
        }
    }
    merged
}

/// Why `script` cannot be run (`run` exits 2 with `error: {this}`): `script not found: X`,
/// or `script is a directory, not a script: X`; None for a file.
pub fn script_problem(script: &Path) -> Option<String> {
    if script.is_file() {
        return None;
    }
    let what = if script.is_dir() { "is a directory, not a script" } else { "not found" };
    Some(format!("script {what}: {}", script.display()))
}

/// Python's `shlex.quote`: `s` as is when it is made of ASCII letters, digits and
/// `@%+=:,./-_` only, `''` when empty, else single-quoted (a `'` inside as `'"'"'`).
pub fn shell_quote(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c)) {
        return s.into();
    }
    format!("'{}'", s.replace('\'', "'\"'\"'"))
}

/// Python's `shlex.join`.
pub fn shell_join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter().map(|a| shell_quote(a.as_ref())).collect::<Vec<_>>().join(" ")
}

/// The description of `run`'s own process in a merged run's `processes` metadata:
/// `pid N: script args` (`-m module args` for a module).
pub fn process_label(pid: u32, argv: &[String], module: bool) -> String {
    let mut shown: Vec<&str> = Vec::with_capacity(argv.len() + 1);
    if module {
        shown.push("-m");
    }
    shown.extend(argv.iter().map(String::as_str));
    format!("pid {pid}: {}", shell_join(&shown))
}

/// After a run without `--track-async` whose program imported `loaded` (of asyncio and
/// gevent, which this package imports only for `track_async`): a note that an event loop's
/// tasks interleave their calls on one thread without it; None when none was.
pub fn untracked_event_loop_note<S: AsRef<str>>(loaded: &[S]) -> Option<String> {
    if loaded.is_empty() {
        return None;
    }
    let names: Vec<&str> = loaded.iter().map(AsRef::as_ref).collect();
    Some(format!(
        "note: the program imported {} but was recorded without --track-async: if it runs an event loop, \
         its tasks' calls interleave on one thread and their times are not per task. Record it with \
         --track-async for one lane per task and its await time.",
        names.join(" and ")
    ))
}

/// What a followed process is, as Python knows it (`scope_profiler._follow`).
#[derive(Debug, Clone, Default)]
pub struct ProcessFacts {
    /// Its pid.
    pub pid: u32,
    /// Its parent's pid; None for `run`'s own process.
    pub parent_pid: Option<u32>,
    /// `multiprocessing.current_process().name`, when multiprocessing is loaded.
    pub multiprocessing_name: Option<String>,
    /// A process multiprocessing started (`parent_process()` is not None).
    pub multiprocessing_child: bool,
    /// Forked (`os.fork()`) from a followed process: it runs its parent's program.
    pub forked: bool,
    /// `sys.argv`.
    pub argv: Vec<String>,
    /// `sys.orig_argv` (the interpreter's command line).
    pub orig_argv: Vec<String>,
}

/// Longest description of what a process runs (in characters).
pub const MAX_PROCESS_TEXT: usize = 200;

/// A followed process as the merged run's `processes` metadata and the profiler's warnings
/// name it: `pid N (child of P): WHAT` (`pid N: WHAT` for `run`'s own), `WHAT` being a
/// multiprocessing process's name (`multiprocessing SpawnProcess-1`), `fork: ARGV` for a
/// forked one, `multiprocessing spawn child` for a spawn child before it has its name, else
/// its command line (`python` for the interpreter's path), on one line and shortened to
/// [`MAX_PROCESS_TEXT`] characters.
pub fn describe_process(p: &ProcessFacts) -> String {
    let child = p.parent_pid.is_some();
    let who = match p.parent_pid {
        Some(parent) => format!("pid {} (child of {parent})", p.pid),
        None => format!("pid {}", p.pid),
    };
    let name = p.multiprocessing_name.as_deref().unwrap_or("");
    let what = if child && p.multiprocessing_child {
        format!("multiprocessing {name}")
    } else if child && p.forked {
        format!("fork: {}", shell_join(&p.argv))
    } else if child && p.orig_argv.iter().any(|a| a == "--multiprocessing-fork") {
        // a spawn child before BaseProcess._bootstrap: its name once spawn.prepare() set it
        if !name.is_empty() && name != "MainProcess" {
            format!("multiprocessing {name}")
        } else {
            "multiprocessing spawn child".to_string()
        }
    } else {
        let mut argv = p.orig_argv.clone();
        if let Some(first) = argv.first_mut() {
            let base = first.rsplit('/').next().unwrap_or(first);
            if base.starts_with("python") {
                *first = "python".into();
            }
        }
        shell_join(&argv)
    };
    let mut what = what.replace('\n', "\\n");
    if what.chars().count() > MAX_PROCESS_TEXT {
        what = what.chars().take(MAX_PROCESS_TEXT - 3).collect::<String>() + "...";
    }
    format!("{who}: {what}")
}

/// Whether `argv` (`sys.orig_argv`) starts one of multiprocessing's own server processes
/// (`python -c 'from multiprocessing.forkserver import main; ...'`, the resource tracker)
/// or loky's resource tracker (joblib's default backend: `python -c 'from
/// joblib.externals.loky.backend.resource_tracker import main; ...'`), not a process of the
/// program. Such a process records nothing and ends after the program (it would be named as
/// still running at the end).
pub fn multiprocessing_helper<S: AsRef<str>>(argv: &[S]) -> bool {
    let argv: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
    if argv.contains(&"--multiprocessing-fork") {
        return false;
    }
    let helper = |code: &str| {
        code.starts_with("from multiprocessing.")
            || (code.starts_with("from ") && code.contains("loky.backend.resource_tracker import main"))
    };
    match argv.iter().position(|a| *a == "-c") {
        Some(i) => argv.get(i + 1).is_some_and(|code| helper(code)),
        None => false,
    }
}

/// A hosted script's own `setup()` asking for more tracking than `run`'s session
/// (`script` and `host`: `(track_threads, track_async)`): the settings the run restarts
/// with (sorted names) and the line `run` prints about it, naming `host_file`; None when
/// the script asks for nothing more.
pub fn tracking_upgrade(
    script: (bool, bool),
    host: (bool, bool),
    host_file: &str,
) -> Option<(Vec<&'static str>, String)> {
    let mut names = Vec::new();
    if script.1 && !host.1 {
        names.push("track_async");
    }
    if script.0 && !host.0 {
        names.push("track_threads");
    }
    if names.is_empty() {
        return None;
    }
    let note = format!(
        "scope-profiler run: the script's own setup asks for {}; the run restarts with it ({host_file} has what is \
         recorded from now on)",
        names.join(", ")
    );
    Some((names, note))
}

/// The directory the processes `run` follows record into, beside `output` (`run`'s process
/// `pid`): `<output>.procs-<pid>`.
pub fn private_directory(output: &str, pid: u32) -> String {
    format!("{output}.procs-{pid}")
}

/// The file a followed process (`pid`) records into in `dir`, named by its start (`ns`
/// since the epoch, 20 digits) so that the name order is the start order:
/// `<dir>/<ns>-<pid>.h5`.
pub fn followed_recording(dir: &str, start_ns: u128, pid: u32) -> String {
    let name = format!("{start_ns:020}-{pid}.h5");
    // os.path.join(dir, name)
    if dir.is_empty() || dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The `.started` marker beside a followed process's recording (Python's
/// `os.path.splitext(recording)[0] + ".started"`): the parent names a process that never
/// wrote its file from it.
pub fn started_marker(recording: &str) -> String {
    let base_at = recording.rfind('/').map_or(0, |i| i + 1);
    let base = &recording[base_at..];
    let leading_dots = base.len() - base.trim_start_matches('.').len();
    let stem = match base.rfind('.') {
        Some(dot) if dot >= leading_dots => &recording[..base_at + dot],
        _ => recording,
    };
    format!("{stem}.started")
}

/// Why [`profile_command_argv`] refuses a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandError {
    /// No script (`ValueError`).
    NoScript,
    /// `mpi_calls=True` (`NotImplementedError`).
    MpiCalls,
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CommandError::NoScript => "profile_command() requires a Python script path",
            CommandError::MpiCalls => {
                "profile_command(mpi_calls=True): MPI call profiling (profile_mpi_calls) is not supported"
            }
        })
    }
}

/// `ProfileManager.profile_command`'s child command line: `EXECUTABLE -m scope_profiler run
/// -q -o OUTPUT [--recursive] [--all] SCRIPT ARGS...` (`all` implies `--recursive`; OUTPUT
/// `profiling_data.h5` by default), a leading Python interpreter of `command` (the
/// executable itself, `python`, `python3`) dropped; with the output path.
pub fn profile_command_argv(
    command: &[String],
    executable: &str,
    output: Option<&str>,
    recursive: bool,
    all: bool,
    mpi_calls: bool,
) -> Result<(Vec<String>, String), CommandError> {
    let is_python = |p: &str| p == executable || matches!(p.rsplit('/').next(), Some("python" | "python3"));
    let command = match command.first() {
        Some(first) if is_python(first) => &command[1..],
        _ => command,
    };
    if command.is_empty() {
        return Err(CommandError::NoScript);
    }
    if mpi_calls {
        return Err(CommandError::MpiCalls);
    }
    let output = output.unwrap_or("profiling_data.h5").to_string();
    let mut argv: Vec<String> =
        [executable, "-m", "scope_profiler", "run", "-q", "-o", &output].iter().map(|s| s.to_string()).collect();
    if recursive || all {
        argv.push("--recursive".into());
    }
    if all {
        argv.push("--all".into());
    }
    argv.extend(command.iter().cloned());
    Ok((argv, output))
}

/// A warning the profiler raises from its own code, as `run` prints it (without the
/// profiler's file and line): `scope-profiler: Category: message`, or in a process `run`
/// follows `scope-profiler [<its description>]: Category: message`; one line.
pub fn plain_warning(process: Option<&str>, category: &str, message: &str) -> String {
    match process {
        Some(who) => format!("scope-profiler [{who}]: {category}: {message}\n"),
        None => format!("scope-profiler: {category}: {message}\n"),
    }
}

/// The line of a process `run` follows whose file could not be written (its exit status
/// stands).
pub fn followed_write_failure(pid: u32, error: &str) -> String {
    format!("scope-profiler: process {pid} could not write its profile: {error}")
}

/// The line when finishing the profile before `os._exit` failed (the exit goes ahead).
pub fn exit_write_failure(error: &str) -> String {
    format!("scope-profiler: the profile was not written: {error}")
}

/// What a run wrote beside its output, for the line after its summary ([`written_line`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Beside {
    /// The speedscope file asked for (`--speedscope`): the full timeline.
    Timeline(PathBuf),
    /// The flame graph written by default.
    FlameGraph(PathBuf),
    /// No flame graph: its call paths take `bytes`, over the bound of a file written by
    /// default ([`crate::default_outputs::byte_budget`]), `budget`.
    OverBudget { bytes: u64, budget: u64 },
    /// Nothing beside: the output is the HTML report, whose page holds the flame graph.
    Nothing,
}

/// Megabytes, to one decimal.
fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The one line after the summary of a run that wrote `output` and, `beside` it, the
/// speedscope file asked for or what it wrote instead: without `--speedscope` it names the
/// flag and the command that write the full timeline (`export` reads a JSON profile too;
/// an HTML report is not read back, so then only the flag).
pub fn written_line(output: &Path, beside: &Beside) -> String {
    let out = output.display();
    let timeline = match Format::of_profile_path(output) {
        Format::HtmlReport => "the full call timeline: --speedscope".to_string(),
        _ => format!("the full call timeline: --speedscope, or scope-profiler export speedscope {out}"),
    };
    match beside {
        Beside::Timeline(speedscope) => format!("wrote {out} and {}", speedscope.display()),
        Beside::FlameGraph(svg) => format!("wrote {out} and its flame graph {} ({timeline})", svg.display()),
        Beside::OverBudget { bytes, budget } => format!(
            "wrote {out}; no flame graph: its call paths take {}, over the {} a file written by default may take \
             ({timeline})",
            megabytes(*bytes),
            megabytes(*budget)
        ),
        Beside::Nothing => format!("wrote {out} ({timeline})"),
    }
}

/// The warning of a run whose profile `output` was written but whose speedscope file (or,
/// by default, flame graph: `what`) could not be drawn or written (`error`), with how to
/// record concurrent code when that would have drawn it (`suggest_tracking`:
/// [`thread_tracking_would_help`](scope_profiler_formats::speedscope::thread_tracking_would_help)).
pub fn not_drawn_warning(output: &Path, what: &str, error: &str, suggest_tracking: bool) -> String {
    let hint = if suggest_tracking {
        " (concurrent code: record with --track-threads, or --track-async for asyncio)"
    } else {
        ""
    };
    format!("warning: {} was written, but no {what}: {error}{hint}", output.display())
}

/// `; the other processes' profiles are kept in DIR` when the followed processes' directory
/// `kept` stays after a failure, else nothing.
fn kept_processes(kept: Option<&str>) -> String {
    kept.map(|dir| format!("; the other processes' profiles are kept in {dir}")).unwrap_or_default()
}

/// The error line of a run whose end failed (`error`: merging, rendering or reading its
/// recording `h5`), naming the followed processes' directory when it stays (`kept`) and the
/// command that merges it into `h5` (`scope-profiler recover H5`).
pub fn end_of_run_failure(error: &str, kept: Option<&str>, h5: &Path) -> String {
    let merge = match kept {
        Some(_) => format!(" (`scope-profiler recover {}` merges them into it)", shell_quote(&h5.to_string_lossy())),
        None => String::new(),
    };
    format!("error: {error}{}{merge}", kept_processes(kept))
}

/// How long the end of a run waits for the followed processes that announced themselves,
/// wrote no file yet and still run, before it merges the files: none when the script ended
/// (its `multiprocessing` children were joined; one still running is named and left out),
/// [`SETTLE_AFTER_SIGNAL`] when the run ends by a signal (sent to the process group - GNU
/// `timeout`, Ctrl-C, `kill -- -PGID` - it ends them too, and they are writing their files).
pub fn settle_time(ends_by_signal: bool) -> std::time::Duration {
    if ends_by_signal {
        SETTLE_AFTER_SIGNAL
    } else {
        std::time::Duration::ZERO
    }
}

/// The longest a run ending by a signal waits for its followed processes ([`settle_time`]).
pub const SETTLE_AFTER_SIGNAL: std::time::Duration = std::time::Duration::from_secs(2);

/// The line of `run` when SIGTERM ends the script or its end (`signum`): the profile is
/// written first, then the run ends by the signal.
pub fn terminated_line(signum: i32) -> String {
    format!("scope-profiler: terminated by signal {signum}; writing the profile")
}

/// The line of `run` when a signal (`name`, number `signum`) arrives while the profile is
/// written or the followed processes' files are merged: that goes on, then the run ends by
/// the signal.
pub fn signal_while_writing(signum: i32, name: &str) -> String {
    format!(
        "scope-profiler: {name} (signal {signum}) while the profile is written; the run ends by it once it is written"
    )
}

/// The line at the exit of `run` when `calls` calls were recorded after the profile was
/// written (by daemon threads still running, or by code the interpreter runs at its exit
/// after `run` wrote the file): they are not in it. None for none.
pub fn calls_after_the_profile(calls: usize) -> Option<String> {
    (calls > 0).then(|| {
        format!(
            "scope-profiler: {calls} call(s) recorded after the profile was written are not in it (daemon threads \
             still running, or code run at the interpreter's exit after the script's atexit handlers)"
        )
    })
}

/// The error line of a run whose session could not write its file (`error`), naming the
/// followed processes' directory when it stays (`kept`).
pub fn profile_not_written(error: &str, kept: Option<&str>) -> String {
    format!("error: the profile was not written: {error}{}", kept_processes(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain_request() -> RunRequest {
        RunRequest {
            script: PathBuf::from("x.py"),
            module: None,
            args: vec![],
            track_threads: false,
            track_async: false,
            output: PathBuf::from("out.h5"),
            output_given: true,
            speedscope: true,
            quiet: false,
            flush_interval: None,
            tracing: None,
            follow: true,
            settings: RunSettings::default(),
            summary: Default::default(),
        }
    }

    #[test]
    fn tracking_not_asked_for_is_left_to_a_config_file() {
        assert_eq!(
            session_settings(&plain_request()),
            [
                ("track_threads", SessionValue::None),
                ("track_async", SessionValue::None),
                ("flush_interval", SessionValue::None)
            ]
        );
    }

    #[test]
    fn a_later_keyword_replaces_an_earlier_one_in_its_place() {
        let mut req = plain_request();
        req.track_threads = true;
        req.tracing = Some(TracingRequest { include: vec!["app.*".into()], ..TracingRequest::default() });
        req.settings.no_recursive = true;
        req.settings.buffer_limit = Some(9);
        let s = session_settings(&req);
        let names: Vec<&str> = s.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "track_threads",
                "track_async",
                "flush_interval",
                "recursive_profile",
                "recursive_all",
                "recursive_include",
                "recursive_exclude",
                "recursive_entrypoint",
                "buffer_limit"
            ]
        );
        assert_eq!(s[0].1, SessionValue::Bool(true));
        assert_eq!(s[3].1, SessionValue::Bool(false), "--no-recursive after --recursive");
        assert_eq!(s[5].1, SessionValue::Texts(vec!["app.*".into()]));
        assert_eq!(s[6].1, SessionValue::None);
        assert_eq!(s[8].1, SessionValue::Int(9));
    }

    /// Expected values from Python's `shlex.join`.
    #[test]
    fn shell_join_as_shlex() {
        assert_eq!(shell_join(&["app.py", "--n=3", "a b", "", "it's", "é"]), "app.py --n=3 'a b' '' 'it'\"'\"'s' 'é'");
        assert_eq!(process_label(42, &["json.tool".into(), "-h".into()], true), "pid 42: -m json.tool -h");
        assert_eq!(process_label(7, &["/tmp/x y.py".into()], false), "pid 7: '/tmp/x y.py'");
    }

    #[test]
    fn script_problems_and_note() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.py");
        std::fs::write(&file, "").unwrap();
        assert_eq!(script_problem(&file), None);
        assert_eq!(
            script_problem(dir.path()),
            Some(format!("script is a directory, not a script: {}", dir.path().display()))
        );
        assert_eq!(
            script_problem(&dir.path().join("no.py")).unwrap(),
            format!("script not found: {}", dir.path().join("no.py").display())
        );
        assert_eq!(untracked_event_loop_note::<&str>(&[]), None);
        assert!(untracked_event_loop_note(&["asyncio", "gevent"])
            .unwrap()
            .starts_with("note: the program imported asyncio and gevent but"));
    }

    fn facts(parent: Option<u32>, orig: &[&str]) -> ProcessFacts {
        ProcessFacts {
            pid: 10,
            parent_pid: parent,
            orig_argv: orig.iter().map(|s| s.to_string()).collect(),
            argv: vec!["app.py".into(), "x".into()],
            ..ProcessFacts::default()
        }
    }

    #[test]
    fn processes_described_as_before() {
        assert_eq!(describe_process(&facts(None, &["/usr/bin/python3.11", "app.py"])), "pid 10: python app.py");
        assert_eq!(
            describe_process(&facts(Some(9), &["/opt/py/bin/python", "-c", "print(1)\nprint(2)"])),
            "pid 10 (child of 9): python -c 'print(1)\\nprint(2)'"
        );
        let mut forked = facts(Some(9), &["python", "app.py"]);
        forked.forked = true;
        assert_eq!(describe_process(&forked), "pid 10 (child of 9): fork: app.py x");
        let mut mp =
            facts(Some(9), &["python", "-c", "from multiprocessing.spawn import spawn_main", "--multiprocessing-fork"]);
        assert_eq!(describe_process(&mp), "pid 10 (child of 9): multiprocessing spawn child");
        mp.multiprocessing_name = Some("SpawnProcess-2".into());
        assert_eq!(describe_process(&mp), "pid 10 (child of 9): multiprocessing SpawnProcess-2");
        mp.multiprocessing_child = true;
        mp.multiprocessing_name = Some("ForkPoolWorker-1".into());
        assert_eq!(describe_process(&mp), "pid 10 (child of 9): multiprocessing ForkPoolWorker-1");
        let long = "a".repeat(300);
        let d = describe_process(&facts(None, &["prog", &long]));
        assert_eq!(d.chars().count(), "pid 10: ".len() + MAX_PROCESS_TEXT);
        assert!(d.ends_with("aaa..."));
    }

    #[test]
    fn multiprocessing_helpers() {
        assert!(multiprocessing_helper(&["python", "-c", "from multiprocessing.forkserver import main; main()"]));
        assert!(!multiprocessing_helper(&[
            "python",
            "-c",
            "from multiprocessing.spawn import x",
            "--multiprocessing-fork"
        ]));
        assert!(multiprocessing_helper(&[
            "python",
            "-B",
            "-c",
            "from joblib.externals.loky.backend.resource_tracker import main; main(3, False)"
        ]));
        assert!(!multiprocessing_helper(&[
            "python",
            "-m",
            "joblib.externals.loky.backend.popen_loky_posix",
            "--process-name",
            "LokyProcess-1"
        ]));
        assert!(!multiprocessing_helper(&["python", "-c"]));
        assert!(!multiprocessing_helper(&["python", "app.py"]));
    }

    #[test]
    fn profile_command_lines() {
        let cmd = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (argv, out) = profile_command_argv(
            &cmd(&["/usr/bin/python3", "app.py", "-n"]),
            "/v/bin/python",
            None,
            false,
            true,
            false,
        )
        .unwrap();
        assert_eq!(out, "profiling_data.h5");
        assert_eq!(
            argv,
            cmd(&[
                "/v/bin/python",
                "-m",
                "scope_profiler",
                "run",
                "-q",
                "-o",
                "profiling_data.h5",
                "--recursive",
                "--all",
                "app.py",
                "-n"
            ])
        );
        let (argv, _) =
            profile_command_argv(&cmd(&["/v/bin/python", "a.py"]), "/v/bin/python", Some("o.h5"), true, false, false)
                .unwrap();
        assert_eq!(argv[6..], cmd(&["o.h5", "--recursive", "a.py"]));
        assert_eq!(profile_command_argv(&cmd(&["python"]), "x", None, false, false, true), Err(CommandError::NoScript));
        assert_eq!(profile_command_argv(&cmd(&["a.py"]), "x", None, false, false, true), Err(CommandError::MpiCalls));
    }

    #[test]
    fn restart_note_and_followed_names() {
        assert_eq!(tracking_upgrade((true, false), (true, false), "o.h5"), None);
        let (names, note) = tracking_upgrade((true, true), (false, false), "/t/o.h5").unwrap();
        assert_eq!(names, ["track_async", "track_threads"]);
        assert_eq!(
            note,
            "scope-profiler run: the script's own setup asks for track_async, track_threads; the run restarts with \
             it (/t/o.h5 has what is recorded from now on)"
        );
        assert_eq!(private_directory("/t/o.h5", 42), "/t/o.h5.procs-42");
        assert_eq!(
            followed_recording("/t/o.h5.procs-42", 1_700_000_000_000_000_000, 7),
            "/t/o.h5.procs-42/01700000000000000000-7.h5"
        );
        assert_eq!(started_marker("/t/d.x/01-7.h5"), "/t/d.x/01-7.started");
        assert_eq!(started_marker("/t/d.x/.h5"), "/t/d.x/.h5.started");
        assert_eq!(started_marker("noext"), "noext.started");
    }

    #[test]
    fn profiler_lines_name_the_process_and_the_failure() {
        assert_eq!(
            plain_warning(None, "RuntimeWarning", "1 call(s) still open"),
            "scope-profiler: RuntimeWarning: 1 call(s) still open\n"
        );
        assert_eq!(
            plain_warning(Some("pid 7 (child of 3): python -c x"), "RuntimeWarning", "m"),
            "scope-profiler [pid 7 (child of 3): python -c x]: RuntimeWarning: m\n"
        );
        assert_eq!(
            followed_write_failure(42, "disk full"),
            "scope-profiler: process 42 could not write its profile: disk full"
        );
        assert_eq!(exit_write_failure("boom"), "scope-profiler: the profile was not written: boom");
    }

    #[test]
    fn the_end_of_a_run_says_what_it_wrote_and_what_failed() {
        let (out, speedscope) = (Path::new("o/run.json"), Path::new("o/run.speedscope.json"));
        assert_eq!(
            written_line(out, &Beside::Timeline(speedscope.into())),
            "wrote o/run.json and o/run.speedscope.json"
        );
        assert_eq!(
            written_line(Path::new("o/run.h5"), &Beside::FlameGraph("o/run.flamegraph.svg".into())),
            "wrote o/run.h5 and its flame graph o/run.flamegraph.svg (the full call timeline: --speedscope, or \
             scope-profiler export speedscope o/run.h5)"
        );
        assert_eq!(
            written_line(out, &Beside::OverBudget { bytes: 123_456_789, budget: 100_000_000 }),
            "wrote o/run.json; no flame graph: its call paths take 123.5 MB, over the 100.0 MB a file written by \
             default may take (the full call timeline: --speedscope, or scope-profiler export speedscope o/run.json)"
        );
        assert_eq!(
            written_line(Path::new("r.HTML"), &Beside::Nothing),
            "wrote r.HTML (the full call timeline: --speedscope)"
        );
        assert_eq!(
            not_drawn_warning(Path::new("r.h5"), "speedscope file", "calls overlap", true),
            "warning: r.h5 was written, but no speedscope file: calls overlap (concurrent code: record with \
             --track-threads, or --track-async for asyncio)"
        );
        assert_eq!(
            not_drawn_warning(Path::new("r.h5"), "flame graph", "calls overlap", false),
            "warning: r.h5 was written, but no flame graph: calls overlap"
        );
        let h5 = Path::new("/t/my run.h5");
        assert_eq!(end_of_run_failure("bad file", None, h5), "error: bad file");
        assert_eq!(
            end_of_run_failure("bad file", Some("/t/my run.h5.procs-7"), h5),
            "error: bad file; the other processes' profiles are kept in /t/my run.h5.procs-7 (`scope-profiler \
             recover '/t/my run.h5'` merges them into it)"
        );
        assert_eq!(
            profile_not_written("disk full", Some("d")),
            "error: the profile was not written: disk full; the other processes' profiles are kept in d"
        );
        assert_eq!(profile_not_written("disk full", None), "error: the profile was not written: disk full");
        assert_eq!(terminated_line(15), "scope-profiler: terminated by signal 15; writing the profile");
        assert_eq!(
            signal_while_writing(2, "SIGINT"),
            "scope-profiler: SIGINT (signal 2) while the profile is written; the run ends by it once it is written"
        );
        assert_eq!(settle_time(false), std::time::Duration::ZERO);
        assert_eq!(settle_time(true), SETTLE_AFTER_SIGNAL);
        assert_eq!(calls_after_the_profile(0), None);
        assert!(calls_after_the_profile(3)
            .unwrap()
            .starts_with("scope-profiler: 3 call(s) recorded after the profile"));
    }
}
