//! The `scope-profiler` command line (clap): `summary`, `threads`, `export`, `timeline`,
//! `recover` (a killed streamed recording's file, `scope_profiler_finalize::stream`), and `run`.
//!
//! `run` needs a Python interpreter: [`dispatch`] hands it back as a [`RunRequest`] and the
//! Python package's console script carries it out (the standalone binary re-executes
//! `python3 -m scope_profiler`). Everything that reads files runs here, in Rust.

/// `println!` to standard output that drops what it cannot write instead of panicking: a
/// reader that closed the pipe (`scope-profiler summary f.h5 | head -3`) ends the output, not
/// the command (issue 14, third new-user trial: a Rust panic and a Python traceback).
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
pub mod export;
pub mod failure;
pub mod html;
pub mod merge;

use std::path::{Path, PathBuf};

use clap::Parser;
use scope_profiler_formats::read_h5;
use scope_profiler_formats::text_summary;

use scope_profiler_finalize::{end_of_run, followed};

use crate::failure::{check_run_output, read_input};

pub use args::{Cli, Command, Format, Formats};
/// What `run` asks of the Python package (`finalize::run_session`).
pub use scope_profiler_finalize::run_session::{RunRequest, RunSettings, TracingRequest};
/// The HDF5 file a run writing `output` records into (`finalize::settings::recording_path`).
pub use scope_profiler_finalize::settings::recording_path;

/// The refusal of a reference `run` option this edition does not implement, naming it and
/// what it did; `None` when none was given.
fn unsupported_run_option(
    line_profile: bool,
    memory_profile: bool,
    aggregation: bool,
    mpi_calls: bool,
) -> Option<String> {
    let (flag, what) = [
        (line_profile, ("--line-profile", "line-by-line timings with line_profiler")),
        (memory_profile, ("--memory-profile", "allocation capture with Memray")),
        (aggregation, ("--aggregation-mode", "aggregate-only recording without per-call events")),
        (mpi_calls, ("--mpi-calls", "profiling of mpi4py communication calls")),
    ]
    .into_iter()
    .find(|(given, _)| *given)?
    .1;
    Some(format!(
        "{flag} ({what}) is not supported by scope-profiler (Rust edition); run without it (docs/migration.md lists what differs from 0.7.5)"
    ))
}

/// What the command line asked for.
#[derive(Debug)]
pub enum Outcome {
    /// Done; exit with this code.
    Exit(i32),
    /// Python must run a script (then `finalize::end_of_run::after_run`).
    Run(Box<RunRequest>),
}

/// `run`'s options that take a value, as written on a command line (`-o`, `--output`,
/// `--outfile`, ...), from its clap definition: so that a value is not read as `-m`.
fn run_value_options() -> Vec<String> {
    use clap::CommandFactory;
    let cli = Cli::command();
    let Some(run) = cli.find_subcommand("run") else { return Vec::new() };
    let mut names = Vec::new();
    for arg in run.get_arguments().filter(|a| !a.is_positional() && a.get_action().takes_values()) {
        names.extend(arg.get_short().map(|c| format!("-{c}")));
        names.extend(arg.get_long().map(|l| format!("--{l}")));
        names.extend(arg.get_all_aliases().unwrap_or_default().into_iter().map(|l| format!("--{l}")));
    }
    names
}

/// In `run ... -m MODULE ARGS...`, everything after the module name is the module's, as
/// with `python -m`: rewritten to `run ... --module MODULE -- ARGS...` so that clap reads
/// none of it (`run -m json.tool --help` is json.tool's `--help`). `-mMODULE` too. Likewise
/// `run ... SCRIPT ARGS...` becomes `run ... -- SCRIPT ARGS...`: the script's own `-m` is
/// its argument.
fn module_args_last(mut argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some(run) = argv.iter().skip(1).position(|a| a == "run").map(|i| i + 1) else { return argv };
    let value_options = run_value_options();
    let mut i = run + 1;
    while i < argv.len() {
        let token = argv[i].to_string_lossy().into_owned();
        if token == "--" {
            return argv;
        }
        if !token.starts_with('-') {
            // the script: it and all after it are the script's (its own -m included)
            argv.insert(i, "--".into());
            return argv;
        }
        let module = match token.as_str() {
            "-m" | "--module" => argv.get(i + 1).map(|m| (m.clone(), 2)),
            t if t.starts_with("-m") => Some((t[2..].into(), 1)),
            t if t.starts_with("--module=") => Some((t["--module=".len()..].into(), 1)),
            _ => None,
        };
        if let Some((module, used)) = module {
            let rest = argv.split_off(i + used);
            argv.truncate(i);
            argv.extend(["--module".into(), module, "--".into()]);
            argv.extend(rest);
            return argv;
        }
        i += if value_options.contains(&token) { 2 } else { 1 };
    }
    argv
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
    let cli = match Cli::try_parse_from(module_args_last(argv.into_iter().map(Into::into).collect())) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return Outcome::Exit(code);
        }
    };
    match cli.command {
        Command::Run {
            track_threads,
            track_async,
            output,
            no_speedscope,
            quiet,
            no_follow,
            flush_interval,
            recursive,
            all,
            include,
            exclude,
            entrypoint,
            no_output,
            config,
            no_recursive,
            label,
            tags,
            enable_tags,
            buffer_limit,
            no_mpi_calls: _,
            line_profile,
            memory_profile,
            aggregation_mode,
            mpi_calls,
            module,
            script,
            args,
        } => {
            if let Some(flag) = unsupported_run_option(line_profile, memory_profile, aggregation_mode, mpi_calls) {
                eprintln!("error: {flag}");
                return Outcome::Exit(2);
            }
            // with -m, what clap took for the script is the module's first argument
            let (script, args) = match (&module, script) {
                (Some(_), Some(first)) => {
                    (PathBuf::new(), std::iter::once(first.to_string_lossy().into_owned()).chain(args).collect())
                }
                (_, script) => (script.unwrap_or_default(), args),
            };
            if !no_output {
                if let Err(e) = check_run_output(&output, &recording_path(&output)) {
                    eprintln!("error: {e}");
                    return Outcome::Exit(e.code());
                }
            }
            let traced = recursive || all || !include.is_empty() || !exclude.is_empty() || entrypoint.is_some();
            let tracing = traced.then_some(TracingRequest { all, include, exclude, entrypoint });
            Outcome::Run(Box::new(RunRequest {
                script,
                module,
                args,
                // a traced function runs on whichever thread calls it: one lane per thread
                track_threads: track_threads || track_async || traced,
                track_async,
                output,
                speedscope: !no_speedscope,
                quiet,
                flush_interval,
                tracing,
                follow: !no_follow && !no_output,
                settings: RunSettings {
                    no_output,
                    config,
                    no_recursive,
                    label,
                    region_tags: tags,
                    enable_tags,
                    buffer_limit,
                },
            }))
        }
        Command::Recover { file, output, from } => {
            use scope_profiler_finalize::stream::{describe, pending_sidecar, recover, RecoverError};
            if let Some(Err(f)) = output.as_deref().map(failure::check_recover_output) {
                eprintln!("error: {}", f.message);
                return Outcome::Exit(f.code());
            }
            match recover(&file, from.as_deref(), output.as_deref()) {
                Ok((recovery, written)) => {
                    outln!("{}", describe(&recovery, &written));
                    if let Some(pid) = recovery.pid {
                        if let Some(note) = followed::recover_followed(&file, pid, &written) {
                            outln!("{note}");
                        }
                    }
                    Outcome::Exit(0)
                }
                Err(RecoverError::Nothing(why)) if recording_path(&file) != file && from.is_none() => {
                    // `run -o k.json` records into `k.json.scope-profiler.h5` (stop 24 new-user
                    // trial: `recover k.json` said nothing was streamed): that recording is
                    // recovered, and `k.json` rendered from it as the run would have
                    let h5 = recording_path(&file);
                    if pending_sidecar(&h5).is_none() {
                        eprintln!("error: {why}");
                        return Outcome::Exit(1);
                    }
                    match recover_rendered(&h5, &file, output.as_deref()) {
                        Ok(()) => Outcome::Exit(0),
                        Err(e) => {
                            eprintln!("error: {e}");
                            Outcome::Exit(1)
                        }
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    Outcome::Exit(1)
                }
            }
        }
        Command::Summary { files, merge: true } => match merge::read_merged(&files) {
            Ok(run) => {
                out!("{}", text_summary::summary_text(&run, &format!("{} file(s), merged", files.len())));
                Outcome::Exit(0)
            }
            Err(e) => {
                eprintln!("error: {e}");
                Outcome::Exit(e.code())
            }
        },
        Command::Summary { files, merge: false } => {
            let mut code = 0;
            for (k, f) in files.iter().enumerate() {
                match read_input(f) {
                    Ok(run) => {
                        if k > 0 {
                            outln!();
                        }
                        out!("{}", text_summary::summary_text(&run, &f.display().to_string()));
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        code = code.max(e.code());
                    }
                }
            }
            Outcome::Exit(code)
        }
        Command::Report { files, output, ranks } => match html::write_report(&files, &output, &ranks) {
            Ok(out) => {
                outln!("wrote {}", out.display());
                Outcome::Exit(0)
            }
            Err(e) => {
                eprintln!("error: {e}");
                Outcome::Exit(e.code())
            }
        },
        Command::Threads { file } => match read_input(&file) {
            Ok(run) => {
                if run.threads.is_empty() && run.regions.iter().all(|r| r.is_empty()) {
                    // a run without calls has no thread table whether or not it tracked
                    // threads: the file cannot tell (stop 25 new-user trial, finding 3)
                    outln!("{}: no thread recorded (the run has no calls)", file.display());
                } else if run.threads.is_empty() {
                    outln!("{}: no thread table (the run was not recorded with track_threads)", file.display());
                } else {
                    // each rank's table starts with a blank line (it follows the regions in
                    // `summary`); the first one here has nothing above it
                    let mut first = true;
                    for rank in 0..run.num_ranks {
                        if run.rank_threads(rank).next().is_some() {
                            let text = text_summary::threads_text(&run, rank, &file.display().to_string());
                            out!("{}", if first { text.trim_start_matches('\n') } else { &text });
                            first = false;
                        }
                    }
                }
                Outcome::Exit(0)
            }
            Err(e) => {
                eprintln!("error: {e}");
                Outcome::Exit(e.code())
            }
        },
        Command::Export { formats, files, output_dir, ranks, jobs } => {
            match export::export_many(&files, &output_dir, &formats.0, &ranks, jobs) {
                Ok(done) => {
                    if done.set_aside > 0 {
                        eprintln!(
                            "{} call(s) in {} file(s) were set aside (they do not nest in their lane) and left out of the exports",
                            done.set_aside, done.files_with_set_aside
                        );
                    }
                    if done.failed_files == 0 {
                        eprintln!("exported {} file(s) to {}", files.len(), output_dir.display());
                        Outcome::Exit(0)
                    } else {
                        eprintln!("{} of {} file(s) failed", done.failed_files, files.len());
                        Outcome::Exit(if done.usage_failures > 0 { 2 } else { 1 })
                    }
                }
                Err(msg) => {
                    eprintln!("error: {msg}");
                    Outcome::Exit(1)
                }
            }
        }
        Command::Dataset { runs, output_dir, append, jobs } => {
            Outcome::Exit(dataset::dataset(&runs, &output_dir, append, jobs))
        }
        Command::Timeline { file, output, ranks, width, limits } => {
            match export::timeline(&file, output.as_deref(), &ranks, width, &limits) {
                Ok(out) => {
                    outln!("wrote {}", out.display());
                    Outcome::Exit(0)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    Outcome::Exit(e.code())
                }
            }
        }
    }
}

/// `recover FILE` of a run that wrote another format than HDF5 (`run -o k.json`): recover
/// its recording `h5` (`k.json.scope-profiler.h5`, [`recording_path`]), with the processes
/// it followed, then render `file` from it ([`end_of_run::render_output`], which removes `h5`), as the
/// run would have. With `output` (an `.h5` name) the recovered run is written there and
/// nothing is rendered. Errors: the recovery's, or the rendering's (naming `file` and
/// saying that `h5` is kept).
fn recover_rendered(h5: &Path, file: &Path, output: Option<&Path>) -> Result<(), String> {
    use scope_profiler_finalize::stream::{describe, recover};
    let (recovery, written) = recover(h5, None, output).map_err(|e| e.to_string())?;
    outln!("{}", describe(&recovery, &written));
    if let Some(pid) = recovery.pid {
        if let Some(note) = followed::recover_followed(h5, pid, &written) {
            outln!("{note}");
        }
    }
    if output.is_some() {
        return Ok(());
    }
    let run = read_h5(&written).map_err(|e| e.to_string())?;
    end_of_run::render_output(&run, &written, file)?;
    outln!("wrote {}", file.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use scope_profiler_finalize::run_session::{session_settings, SessionValue};

    /// The `run` request `argv` parses to (panics on a usage exit).
    pub(crate) fn request(argv: &[&str]) -> RunRequest {
        match dispatch(argv.iter().copied()) {
            Outcome::Run(req) => *req,
            Outcome::Exit(code) => panic!("{argv:?}: exit {code}"),
        }
    }

    #[test]
    fn session_settings_of_a_plain_run() {
        let s = session_settings(&request(&["sp", "run", "x.py"]));
        assert_eq!(
            s,
            [
                ("track_threads", SessionValue::None),
                ("track_async", SessionValue::None),
                ("flush_interval", SessionValue::None)
            ]
        );
    }

    #[test]
    fn session_settings_with_tracing_and_reference_options() {
        let req = request(&[
            "sp",
            "run",
            "--track-async",
            "--flush-interval",
            "0.5",
            "--recursive",
            "--include",
            "app.*",
            "--label",
            "L",
            "--buffer-limit",
            "9",
            "--tag",
            "io",
            "x.py",
        ]);
        let s = session_settings(&req);
        let get = |n: &str| s.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone());
        assert_eq!(get("track_threads"), Some(SessionValue::Bool(true)));
        assert_eq!(get("track_async"), Some(SessionValue::Bool(true)));
        assert_eq!(get("flush_interval"), Some(SessionValue::Float(0.5)));
        assert_eq!(get("recursive_profile"), Some(SessionValue::Bool(true)));
        assert_eq!(get("recursive_include"), Some(SessionValue::Texts(vec!["app.*".into()])));
        assert_eq!(get("recursive_exclude"), Some(SessionValue::None));
        assert_eq!(get("label"), Some(SessionValue::Text("L".into())));
        assert_eq!(get("region_tags"), Some(SessionValue::Texts(vec!["io".into()])));
        assert_eq!(get("buffer_limit"), Some(SessionValue::Int(9)));
        let names: Vec<&str> = s.iter().map(|(n, _)| *n).collect();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
    }

    /// issue 11: "`run -m module`": everything after `-m MODULE` is the module's, as with
    /// `python -m` (its `--help` is not ours), options before it are ours.
    #[test]
    fn run_dash_m_gives_the_rest_to_the_module() {
        let req = request(&["sp", "run", "--track-threads", "-o", "x.h5", "-m", "json.tool", "--help", "-o", "y"]);
        assert_eq!(req.module.as_deref(), Some("json.tool"));
        assert_eq!(req.script, PathBuf::new());
        assert_eq!(req.args, ["--help", "-o", "y"]);
        assert_eq!(req.output, PathBuf::from("x.h5"));
        assert!(req.track_threads);
        let req = request(&["sp", "run", "-mhttp.server"]);
        assert_eq!((req.module.as_deref(), req.args.len()), (Some("http.server"), 0));
        let req = request(&["sp", "run", "--module=pkg.tool", "a"]);
        assert_eq!((req.module.as_deref(), req.args.as_slice()), (Some("pkg.tool"), &["a".to_string()][..]));
        // a value of our option is not taken for -m; a script's own -m is the script's
        let req = request(&["sp", "run", "--include", "m*", "script.py", "-m", "x"]);
        assert_eq!((req.script, req.module), (PathBuf::from("script.py"), None));
        assert_eq!(req.args, ["-m", "x"]);
    }

    /// Found by a new-user trial (stop 19): `run --flush-interval -1 x.py` said
    /// "unexpected argument '-1' found" instead of what is wrong with the value.
    #[test]
    fn a_negative_flush_interval_is_named_as_such() {
        use clap::Parser;
        let err = Cli::try_parse_from(["sp", "run", "--flush-interval", "-1", "x.py"]).unwrap_err();
        assert!(err.to_string().contains("'-1' is not a positive number of seconds"), "{err}");
    }

    /// stop 25 new-user trial (recording), finding 1: "`scope-profiler run` rejects most of
    /// 0.7.5's `run` options (`--outfile`, `--label`, `--tag`, `--enable-tag`, `--config`,
    /// `--no-output`, `--buffer-limit`, `--no-recursive`, ...) with exit 2". They are
    /// accepted as the reference's settings; a value of one is not read as the script.
    #[test]
    fn stop_25_the_references_run_options_are_accepted() {
        let req = request(&[
            "sp",
            "run",
            "--outfile",
            "o.h5",
            "--label",
            "L",
            "--tag",
            "a",
            "--tag",
            "b",
            "--enable-tag",
            "*",
            "--config",
            "c.toml",
            "--buffer-limit",
            "64",
            "--no-recursive",
            "--no-mpi-calls",
            "app.py",
            "--label",
            "x",
        ]);
        assert_eq!(req.output, PathBuf::from("o.h5"));
        assert_eq!(req.script, PathBuf::from("app.py"));
        assert_eq!(req.args, ["--label", "x"], "the script's own options are the script's");
        let want = RunSettings {
            no_output: false,
            config: Some(PathBuf::from("c.toml")),
            no_recursive: true,
            label: Some("L".into()),
            region_tags: vec!["a".into(), "b".into()],
            enable_tags: vec!["*".into()],
            buffer_limit: Some(64),
        };
        assert_eq!(req.settings, want);
        assert!(req.follow);
        let req = request(&["sp", "run", "--no-output", "--label", "m", "-m", "pkg.app"]);
        assert!(req.settings.no_output && !req.follow, "no file: no process to merge into it");
        assert_eq!((req.settings.label.as_deref(), req.module.as_deref()), (Some("m"), Some("pkg.app")));
        for (flag, what) in [
            ("--line-profile", "line_profiler"),
            ("--memory-profile", "Memray"),
            ("--aggregation-mode", "aggregate-only"),
            ("--mpi-calls", "mpi4py"),
        ] {
            assert!(matches!(dispatch(["sp", "run", flag, "app.py"]), Outcome::Exit(2)), "{flag}");
            let message = unsupported_run_option(
                flag == "--line-profile",
                flag == "--memory-profile",
                flag == "--aggregation-mode",
                flag == "--mpi-calls",
            )
            .unwrap();
            assert!(message.starts_with(flag) && message.contains(what), "{message}");
        }
        for refused in
            [&["sp", "run", "--no-output", "-o", "x.h5", "a.py"][..], &["sp", "run", "--buffer-limit", "0", "a.py"]]
        {
            assert!(matches!(dispatch(refused.iter().copied()), Outcome::Exit(2)), "{refused:?}");
        }
    }

    /// issue 11: `run` follows the script's processes unless `--no-follow`; the script's
    /// own `--no-follow` is its argument.
    #[test]
    fn run_follows_processes_unless_no_follow() {
        assert!(request(&["sp", "run", "x.py"]).follow);
        assert!(!request(&["sp", "run", "--no-follow", "x.py"]).follow);
        let req = request(&["sp", "run", "x.py", "--no-follow"]);
        assert!(req.follow && req.args == ["--no-follow"]);
    }

    #[test]
    fn run_without_script_or_module_is_a_usage_error() {
        assert!(matches!(dispatch(["sp", "run"]), Outcome::Exit(2)));
    }
}
