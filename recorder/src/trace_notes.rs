//! What function-level tracing tells the user (`scope_profiler._tracer`): the standard-library
//! prefixes it leaves out, and the texts of its `RuntimeWarning`s. Plain strings, so the
//! exact wording (tests match it) is checked without an interpreter.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The reference's `_system_path_prefixes` from the raw `sysconfig` / `site` directories:
/// each resolved like `os.path.realpath` ([`lenient_real_path`]), empty names skipped,
/// deduplicated and sorted (code-point order, as Python's `sorted`).
pub fn system_prefixes<S: AsRef<str>>(raw: impl IntoIterator<Item = S>) -> Vec<String> {
    let set: BTreeSet<String> =
        raw.into_iter().filter(|p| !p.as_ref().is_empty()).map(|p| lenient_real_path(p.as_ref())).collect();
    set.into_iter().collect()
}

/// `os.path.realpath` (non-strict): the longest existing ancestor resolved (symlinks,
/// `..`), the missing rest appended as written; relative names against the working directory.
pub fn lenient_real_path(path: &str) -> String {
    let p = Path::new(path);
    let abs: PathBuf = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().map(|d| d.join(p)).unwrap_or_else(|_| p.to_path_buf())
    };
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at: &Path = &abs;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            let full = missing.iter().rev().fold(real, |acc, part| acc.join(part));
            return full.to_string_lossy().into_owned();
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name);
                at = parent;
            }
            _ => return abs.to_string_lossy().into_owned(),
        }
    }
}

/// `n` with `,` between groups of three digits (Python's `f"{n:,}"`).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A run with `recursive_include` that recorded no call (`include_repr`: the patterns as
/// a Python list's `repr`).
pub fn no_match_warning(include_repr: &str) -> String {
    format!(
        "function-level tracing recorded no call: no function that ran matched \
         recursive_include={include_repr} (names are module.qualname, those of the script or \
         of `run -m` are __main__.*)"
    )
}

/// `recursive_call_limit` left out `dropped` calls.
pub fn dropped_warning(recorded: u64, dropped: u64, limit: u64) -> String {
    format!(
        "function-level tracing recorded {} calls and dropped {} more past recursive_call_limit={}; \
         the run lacks them (raise recursive_call_limit, or narrow the selection with \
         recursive_include/_exclude)",
        grouped(recorded),
        grouped(dropped),
        grouped(limit)
    )
}

/// 3.11: another tool replaced the frame evaluation function the tracer installed.
pub const EVAL_FRAME_DISPLACED: &str = "function-level tracing stopped early: another tool (a debugger) installed its \
own frame evaluation function (PEP 523) in place of scope-profiler's, so the calls after that are not in the run";

/// 3.11: another profiler replaced the tracer on the thread whose name's `repr` is `thread_repr`.
pub fn profile_displaced_warning(thread_repr: &str) -> String {
    format!(
        "function-level tracing stopped early on thread {thread_repr}: another profiler \
         (sys.setprofile, cProfile) replaced scope-profiler's on that thread, so its calls after \
         that are not in the run (on Python 3.11 a thread has one profile function; 3.12+ has no \
         such limit)"
    )
}

/// 3.11: the program replaced the thread-start hook (`threading.setprofile`).
pub const THREAD_HOOK_DISPLACED: &str = "function-level tracing missed threads: the program replaced \
scope-profiler's thread-start hook with threading.setprofile(), so threads started after that were not \
traced (Python 3.11; 3.12+ traces every thread)";

/// 3.11: the profiler whose `repr` is `previous_repr` is paused while the tracer runs.
pub fn paused_warning(previous_repr: &str) -> String {
    format!(
        "recursive_profile: the profiler running on this thread ({previous_repr}) is paused \
         while scope-profiler traces it (Python 3.11 gives a thread one profile function) \
         and resumed when the recording ends"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_matches_python_format() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(100000), "100,000");
    }

    #[test]
    fn prefixes_are_resolved_deduplicated_sorted() {
        let dir = std::env::temp_dir().join(format!("sp-prefixes-{}", std::process::id()));
        let real = dir.join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let real_s = std::fs::canonicalize(&real).unwrap().to_string_lossy().into_owned();
        let link_s = link.to_string_lossy().into_owned();
        let missing = format!("{link_s}/no/such");
        let got = system_prefixes([link_s.as_str(), "", real_s.as_str(), missing.as_str()]);
        assert_eq!(got, vec![real_s.clone(), format!("{real_s}/no/such")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn relative_missing_path_is_made_absolute() {
        let cwd = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        let want = cwd.join("definitely-missing-dir/x").to_string_lossy().into_owned();
        assert_eq!(lenient_real_path("definitely-missing-dir/x"), want);
    }

    #[test]
    fn warning_texts() {
        assert_eq!(
            dropped_warning(1000, 2500, 1000),
            "function-level tracing recorded 1,000 calls and dropped 2,500 more past \
             recursive_call_limit=1,000; the run lacks them (raise recursive_call_limit, or narrow \
             the selection with recursive_include/_exclude)"
        );
        assert_eq!(
            no_match_warning("['nomatch*']"),
            "function-level tracing recorded no call: no function that ran matched \
             recursive_include=['nomatch*'] (names are module.qualname, those of the script or of \
             `run -m` are __main__.*)"
        );
        assert!(profile_displaced_warning("'MainThread'").starts_with(
            "function-level tracing stopped early on thread 'MainThread': another profiler (sys.setprofile, cProfile) replaced"
        ));
        assert!(paused_warning("<x>")
            .starts_with("recursive_profile: the profiler running on this thread (<x>) is paused while"));
        assert!(EVAL_FRAME_DISPLACED.contains("(PEP 523) in place of scope-profiler's, so the calls after that"));
        assert!(THREAD_HOOK_DISPLACED.contains("thread-start hook with threading.setprofile(), so threads started"));
    }
}
