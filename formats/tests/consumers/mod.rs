//! What the tests find outside the repository: the shared spec examples and the consumers our
//! files are handed to (the reference package's interpreter, speedscope's own importer), through
//! the variables `tests/run_all.sh` exports, never a fixed path. A missing one skips the test
//! with a `SKIPPED:` line, or, under CI (`CI=true`, where `run_all.sh` installs every one),
//! fails it naming what is missing.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::Command;

/// `$SCOPE_PROFILER_SHARED`, else `shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("SCOPE_PROFILER_SHARED") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

/// Report a missing consumer: a panic naming it under `CI=true`, else a `SKIPPED:` line (the
/// caller then returns).
pub fn unavailable(what: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{what} (required under CI=true)");
    }
    println!("SKIPPED: {what}");
}

/// The reference's example files (`shared/spec/examples`), or None after [`unavailable`].
pub fn spec_examples() -> Option<PathBuf> {
    let dir = shared_dir().join("spec/examples");
    if dir.is_dir() {
        return Some(dir);
    }
    unavailable(&format!("{} not found (set SCOPE_PROFILER_SHARED to the shared directory)", dir.display()));
    None
}

/// `$SCOPE_PROFILER_REF_PYTHON` when it imports the reference package and h5py, or None after
/// [`unavailable`].
pub fn reference_python() -> Option<PathBuf> {
    let python = std::env::var_os("SCOPE_PROFILER_REF_PYTHON").filter(|p| !p.is_empty()).map(PathBuf::from);
    let imports = |p: &PathBuf| {
        Command::new(p).args(["-c", "import scope_profiler, h5py"]).status().map(|s| s.success()).unwrap_or(false)
    };
    match python {
        Some(p) if imports(&p) => Some(p),
        p => {
            let shown = p.map_or("(unset)".to_string(), |p| p.display().to_string());
            unavailable(&format!(
                "reference package not available: SCOPE_PROFILER_REF_PYTHON={shown} does not import \
                 scope_profiler 0.7.5 and h5py (tests/run_all.sh sets it up)"
            ));
            None
        }
    }
}

/// speedscope's importer check: the script in `shared/clients` and the node_modules directory
/// holding npm speedscope and ajv.
pub struct SpeedscopeImporter {
    pub check: PathBuf,
    pub node_dir: PathBuf,
}

/// speedscope's own importer (`$CLIENTS_NODE_DIR` with speedscope and ajv, node on PATH), or
/// None after [`unavailable`].
pub fn speedscope_importer() -> Option<SpeedscopeImporter> {
    let check = shared_dir().join("clients/speedscope/speedscope_check.cjs");
    let node_dir = std::env::var_os("CLIENTS_NODE_DIR").filter(|d| !d.is_empty()).map(PathBuf::from);
    let node_ok = Command::new("node").arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    let packages_ok = node_dir
        .as_ref()
        .is_some_and(|d| d.join("node_modules/speedscope").is_dir() && d.join("node_modules/ajv").is_dir());
    match node_dir {
        Some(node_dir) if node_ok && packages_ok && check.is_file() => Some(SpeedscopeImporter { check, node_dir }),
        d => {
            let shown = d.map_or("(unset)".to_string(), |d| d.display().to_string());
            unavailable(&format!(
                "speedscope importer not available: needs node (found: {node_ok}), npm speedscope@1.25.0 and \
                 ajv in CLIENTS_NODE_DIR={shown} and {} (tests/run_all.sh sets them up)",
                check.display()
            ));
            None
        }
    }
}
