//! `run --recursive` and the options that imply it: what the request asks Python
//! to trace.
use scope_profiler_commands::{dispatch, Outcome, TracingRequest};

fn tracing_of(args: &[&str]) -> Option<TracingRequest> {
    let argv = std::iter::once("scope-profiler").chain(args.iter().copied());
    match dispatch(argv) {
        Outcome::Run(req) => req.tracing,
        Outcome::Exit(code) => panic!("{args:?} exited with {code}"),
    }
}

#[test]
fn plain_run_traces_nothing() {
    assert_eq!(tracing_of(&["run", "app.py"]), None);
}

#[test]
fn recursive_alone_traces_user_code() {
    assert_eq!(tracing_of(&["run", "--recursive", "app.py"]), Some(TracingRequest::default()));
}

#[test]
fn all_include_exclude_entrypoint_imply_recursive_and_are_kept() {
    assert_eq!(tracing_of(&["run", "--all", "app.py"]), Some(TracingRequest { all: true, ..Default::default() }));
    let t = tracing_of(&[
        "run",
        "--include",
        "__main__.a*",
        "--include",
        "*.b",
        "--exclude",
        "*helper",
        "--entrypoint",
        "main",
        "app.py",
    ])
    .unwrap();
    assert_eq!(t.include, vec!["__main__.a*", "*.b"]);
    assert_eq!(t.exclude, vec!["*helper"]);
    assert_eq!(t.entrypoint.as_deref(), Some("main"));
    assert!(!t.all);
}

#[test]
fn options_after_the_script_belong_to_the_script() {
    let argv = ["scope-profiler", "run", "--recursive", "app.py", "--all", "--include", "x"];
    match dispatch(argv) {
        Outcome::Run(req) => {
            assert_eq!(req.tracing, Some(TracingRequest::default()));
            assert_eq!(req.args, vec!["--all", "--include", "x"]);
        }
        Outcome::Exit(code) => panic!("exited with {code}"),
    }
}

// Tracing implies thread tracking; a plain run does not. (`run --recursive` without
// --track-threads would trace every thread onto one stack, and a script whose threads
// overlap would get no exclusive times, no call graph and no speedscope file.)
#[test]
fn tracing_implies_track_threads() {
    let track_threads = |args: &[&str]| {
        let argv = std::iter::once("scope-profiler").chain(args.iter().copied());
        match dispatch(argv) {
            Outcome::Run(req) => (req.track_threads, req.track_async),
            Outcome::Exit(code) => panic!("{args:?} exited with {code}"),
        }
    };
    assert_eq!(track_threads(&["run", "app.py"]), (false, false));
    assert_eq!(track_threads(&["run", "--recursive", "app.py"]), (true, false));
    assert_eq!(track_threads(&["run", "--include", "x*", "app.py"]), (true, false));
    assert_eq!(track_threads(&["run", "--recursive", "--track-async", "app.py"]), (true, true));
}
