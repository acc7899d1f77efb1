//! Standalone `scope-profiler` binary. `run` needs Python: it re-executes
//! `python3 -m scope_profiler` (override the interpreter with `SCOPE_PROFILER_PYTHON`).
use scope_profiler_commands::{dispatch, Outcome};

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    match dispatch(argv.clone()) {
        Outcome::Exit(code) => std::process::exit(code),
        Outcome::Run(_) => {
            let python = std::env::var("SCOPE_PROFILER_PYTHON").unwrap_or_else(|_| "python3".into());
            let status = std::process::Command::new(&python).args(["-m", "scope_profiler"]).args(&argv[1..]).status();
            match status {
                Ok(s) => std::process::exit(s.code().unwrap_or(1)),
                Err(e) => {
                    eprintln!("error: `run` needs the scope_profiler Python package; could not start {python}: {e}");
                    std::process::exit(1)
                }
            }
        }
    }
}
