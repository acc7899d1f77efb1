//! What the tests find outside the repository: the shared spec examples and the consumers our
//! files are handed to (the reference package's interpreter, speedscope's own importer), through
//! the variables `tests/run_all.sh` exports, never a fixed path. A missing one skips the test
//! with a `SKIPPED:` line, or, under CI (`CI=true`, where `run_all.sh` installs every one),
//! fails it naming what is missing.
#![allow(dead_code)]
use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// A `Command` for a consumer, to be run with [`consumer_output`]: the child keeps none of the
/// process's descriptors past `exec`.
pub fn consumer_command(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    // SAFETY: the closure runs in the child between fork and exec and only makes system calls
    // that are async-signal-safe (close_range, fcntl); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            close_on_exec_from(3);
            Ok(())
        });
    }
    command
}

/// Run a consumer made by [`consumer_command`] to its end and collect its output.
///
/// Other tests of the binary have HDF5 files open meanwhile: HDF5 opens files without
/// `O_CLOEXEC` and locks them with `flock`, and a child holding an inherited descriptor keeps
/// the lock after the test closed the file, so that the test's next open of it fails ("unable
/// to lock file"). The child drops every inherited descriptor at `exec`, and it is started
/// under HDF5's library lock, so that no file is closed or opened between its fork and its
/// `exec` (`spawn` returns once the child has exec'd).
pub fn consumer_output(command: &mut Command) -> std::io::Result<Output> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = hdf5::sync::sync(|| command.spawn())?;
    child.wait_with_output()
}

/// Mark every descriptor from `first` on close-on-exec (in a forked child).
fn close_on_exec_from(first: libc::c_int) {
    #[cfg(target_os = "linux")]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: close_range only changes the flags of this process's descriptors.
        let marked = unsafe {
            libc::syscall(libc::SYS_close_range, first as libc::c_uint, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC)
        };
        if marked == 0 {
            return;
        }
    }
    // kernels before 5.11: one descriptor at a time (a descriptor not open is EBADF, ignored)
    for fd in first..4096 {
        // SAFETY: F_SETFD on a descriptor number only changes its flags (or fails).
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
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
        consumer_output(consumer_command(p).args(["-c", "import scope_profiler, h5py"]))
            .map(|o| o.status.success())
            .unwrap_or(false)
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
    let node_ok =
        consumer_output(consumer_command("node").arg("--version")).map(|o| o.status.success()).unwrap_or(false);
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
