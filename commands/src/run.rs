//! `scope-profiler run`: the request Python carries out ([`RunRequest`]), read from the
//! command line. `run ... -m MODULE ARGS` and `run ... SCRIPT ARGS` leave everything after
//! the module or script to it ([`module_args_last`]); the reference's options this edition
//! does not implement are refused by name.
use std::path::PathBuf;

use scope_profiler_analysis::summary_order::RUN_PRINTOUT_TOP;
use scope_profiler_session::run_command::{RunRequest, RunSettings, TracingRequest};
use scope_profiler_session::settings::recording_path;

use crate::args::{Cli, RunArgs};
use crate::failure::check_run_output;
use crate::Outcome;

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
pub(crate) fn module_args_last(mut argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
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

/// The output of `run` when neither `-o` nor the --config file names one (`file_path`'s
/// default).
pub const DEFAULT_RUN_OUTPUT: &str = "profiling_data.h5";

/// The request of `run` with `args`: `Run`, or `Exit(2)` (with `error: ...` on stderr) for
/// an option this edition refuses or an output of the wrong kind.
pub fn request(args: RunArgs) -> Outcome {
    let RunArgs {
        track_threads,
        track_async,
        output,
        speedscope,
        no_speedscope: _,
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
        summary,
        args,
    } = args;
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
    // not given: the --config file's file_path (Python reads that file), else the default
    let output_given = output.is_some();
    let output = output.unwrap_or_else(|| PathBuf::from(DEFAULT_RUN_OUTPUT));
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
        output_given,
        speedscope,
        quiet,
        flush_interval,
        tracing,
        follow: !no_follow && !no_output,
        settings: RunSettings { no_output, config, no_recursive, label, region_tags: tags, enable_tags, buffer_limit },
        summary: summary.options(Some(RUN_PRINTOUT_TOP)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{dispatch, Outcome};
    use scope_profiler_session::run_command::{session_settings, SessionValue};

    /// The `run` request `argv` parses to (panics on a usage exit).
    pub(crate) fn request(argv: &[&str]) -> RunRequest {
        match dispatch(argv.iter().copied()) {
            Outcome::Run(req) => *req,
            Outcome::Exit(code) => panic!("{argv:?}: exit {code}"),
        }
    }

    /// Without `-o` the output is the default, marked as not given: a --config file's
    /// `file_path` replaces it.
    #[test]
    fn an_output_not_given_is_the_default_and_marked_so() {
        let req = request(&["sp", "run", "--config", "c.toml", "app.py"]);
        assert_eq!((req.output, req.output_given), (PathBuf::from(DEFAULT_RUN_OUTPUT), false));
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

    /// `run -m module`: everything after `-m MODULE` is the module's, as with `python -m`
    /// (its `--help` is not ours), options before it are ours.
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

    /// `run --flush-interval -1 x.py` says what is wrong with the value (not "unexpected
    /// argument '-1' found").
    #[test]
    fn a_negative_flush_interval_is_named_as_such() {
        use clap::Parser;
        let err = Cli::try_parse_from(["sp", "run", "--flush-interval", "-1", "x.py"]).unwrap_err();
        assert!(err.to_string().contains("'-1' is not a positive number of seconds"), "{err}");
    }

    /// 0.7.5's `run` options (`--outfile`, `--label`, `--tag`, `--enable-tag`, `--config`,
    /// `--no-output`, `--buffer-limit`, `--no-recursive`, ...) are accepted as the
    /// reference's settings; a value of one is not read as the script. The ones this edition
    /// does not implement are refused by name.
    #[test]
    fn the_references_run_options_are_accepted() {
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
        assert!(req.output_given);
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

    /// `run` follows the script's processes unless `--no-follow`; the script's own
    /// `--no-follow` is its argument.
    #[test]
    fn run_writes_the_speedscope_file_only_when_asked_for() {
        assert!(!request(&["sp", "run", "x.py"]).speedscope);
        assert!(!request(&["sp", "run", "--no-speedscope", "x.py"]).speedscope);
        assert!(request(&["sp", "run", "--speedscope", "x.py"]).speedscope);
        use clap::Parser;
        let err = Cli::try_parse_from(["sp", "run", "--speedscope", "--no-speedscope", "x.py"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn run_follows_processes_unless_no_follow() {
        assert!(request(&["sp", "run", "x.py"]).follow);
        assert!(!request(&["sp", "run", "--no-follow", "x.py"]).follow);
        let req = request(&["sp", "run", "x.py", "--no-follow"]);
        assert!(req.follow && req.args == ["--no-follow"]);
    }

    /// `run` prints the 30 regions with the most inclusive time unless `--top` says
    /// otherwise (`--top 0`: every one); `--sort` and `--all-tasks` are `run`'s own options,
    /// the same words after the script are the script's.
    #[test]
    fn run_prints_the_top_thirty_regions_unless_told() {
        use scope_profiler_analysis::SortKey;
        let req = request(&["sp", "run", "x.py"]);
        assert_eq!((req.summary.top, req.summary.sort, req.summary.all_tasks), (Some(30), SortKey::Total, false));
        let req = request(&["sp", "run", "--top", "0", "--sort", "calls", "--all-tasks", "x.py", "--top", "5"]);
        assert_eq!((req.summary.top, req.summary.sort, req.summary.all_tasks), (None, SortKey::Calls, true));
        assert_eq!(req.args, ["--top", "5"]);
        assert_eq!(request(&["sp", "run", "--top", "7", "x.py"]).summary.top, Some(7));
    }

    #[test]
    fn run_without_script_or_module_is_a_usage_error() {
        assert!(matches!(dispatch(["sp", "run"]), Outcome::Exit(2)));
    }
}
