//! Why a subcommand failed, and its exit code: 2 for a usage error (a bad option value, an
//! input or output of the wrong kind - what clap itself exits 2 for), 1 for a runtime
//! failure (a file missing, unreadable, damaged, or not written). Our own checks and clap's
//! agree: a usage error is 2 whoever finds it.
use std::fmt;
use std::path::Path;

use scope_profiler_analysis::Run;
use scope_profiler_formats::json_profile::{read_json, JsonError, NOT_A_PROFILE};
use scope_profiler_formats::Format;
use scope_profiler_formats::{read_h5_noting, NOT_A_PROFILE_H5};

/// A failed subcommand: its message (naming the file and the problem) and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// A usage error (exit 2) rather than a runtime failure (exit 1).
    pub usage: bool,
    pub message: String,
}

impl Failure {
    /// A usage error: the request itself is wrong (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure { usage: true, message: message.into() }
    }
    /// A runtime failure: the request is right, carrying it out failed (exit 1).
    pub fn runtime(message: impl Into<String>) -> Self {
        Failure { usage: false, message: message.into() }
    }
    /// The process exit code: 2 for a usage error, 1 otherwise.
    pub fn code(&self) -> i32 {
        if self.usage {
            2
        } else {
            1
        }
    }
    /// The same failure with `prefix: ` before the message.
    pub fn context(self, prefix: impl fmt::Display) -> Self {
        Failure { message: format!("{prefix}: {}", self.message), ..self }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Suffixes of the HDF5 profiles the reading subcommands take.
const HDF5_SUFFIXES: [&str; 2] = [".h5", ".hdf5"];

/// Read the profile `path` for a subcommand: an HDF5 file, or a JSON profile (`run -o
/// run.json`, `export_json`; by its contents, plain or gzip-compressed: the CLI reads the JSON
/// profiles its own `run` writes). A file that is
/// there but of another kind - JSON that is not a scope-profiler profile, an HTML report, or
/// a name without `.h5`/`.hdf5` and no HDF5 signature (a script, a text file) - is a usage
/// error naming what it is; a missing, empty, truncated or damaged profile is a runtime
/// failure (the reader's message, naming the file).
pub fn read_input(path: &Path) -> Result<Run, Failure> {
    if path.is_dir() {
        return Err(Failure::usage(format!(
            "{} is a directory, not a profile file: give the files (e.g. DIR/*.h5)",
            path.display()
        )));
    }
    if !named_h5(path) && Format::sniff_profile(path).ok() == Some(Format::Json) {
        return read_json(path).map_err(|e| match e {
            JsonError::Invalid(m) if m.contains(NOT_A_PROFILE) => Failure::usage(format!(
                "{} is JSON but not a scope-profiler profile: this command reads the .h5 files and JSON profiles \
                 that `run` and finalize() write",
                path.display()
            )),
            e => Failure::runtime(e.to_string()),
        });
    }
    let (run, notes) = read_h5_noting(path).map_err(|e| match wrong_kind(path) {
        Some(kind) => Failure::usage(format!(
            "{} is {kind}, not an HDF5 profile: this command reads the .h5 files that `run` and finalize() write",
            path.display()
        )),
        // HDF5 of another program: a file of another kind, not a damaged profile
        None if e.to_string().contains(NOT_A_PROFILE_H5) => Failure::usage(e.to_string()),
        None => Failure::runtime(e.to_string()),
    })?;
    // what the read left out (a row's unreadable per-call metadata): the rest is read
    for note in notes {
        eprintln!("warning: {note}");
    }
    Ok(run)
}

/// What `path` is when it is a non-empty file that is not HDF5: `"a JSON profile"`, `"an
/// HTML file"`, or `"not an HDF5 file"` for a name without an HDF5 suffix. `None` for a
/// missing or empty file, an HDF5 signature, or an `.h5`/`.hdf5` name (damaged, not foreign).
fn wrong_kind(path: &Path) -> Option<&'static str> {
    if std::fs::metadata(path).ok()?.len() == 0 {
        return None;
    }
    let named_h5 = named_h5(path);
    let mut head = [0u8; 8];
    let sniffed = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).ok()?;
    if head[..sniffed].starts_with(b"\x89HDF\r\n\x1a\n") {
        return None;
    }
    match Format::sniff_profile(path).ok()? {
        Format::Json if !named_h5 => Some("a JSON profile"),
        Format::HtmlReport if !named_h5 => Some("an HTML file"),
        _ if !named_h5 => Some("not an HDF5 file"),
        _ => None,
    }
}

/// Whether `path`'s name ends in an HDF5 suffix ([`HDF5_SUFFIXES`], case-insensitive).
fn named_h5(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    HDF5_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Outputs `run -o` writes, by suffix (case-insensitive): HDF5, a JSON profile, the HTML report.
pub const RUN_OUTPUT_SUFFIXES: [&str; 6] = [".h5", ".hdf5", ".json", ".json.gz", ".html", ".htm"];

/// Check `run -o OUTPUT` before the script runs, so that it does not run for a profile that
/// cannot be written:
/// * its name must end in one of [`RUN_OUTPUT_SUFFIXES`] (0.7.5 silently writes HDF5 into
///   `run -o out.txt`) - a usage error;
/// * neither it nor `recording` (the HDF5 file recorded into) may be a directory - a usage
///   error; its directory is created if missing and must take a new file - else a runtime
///   failure, an `error:` line before the script runs (not a Python traceback after it).
pub fn check_run_output(output: &Path, recording: &Path) -> Result<(), Failure> {
    let name = output.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if !RUN_OUTPUT_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return Err(Failure::usage(format!(
            "run -o {}: unknown output kind; the name must end in .h5 or .hdf5 (HDF5), .json or .json.gz (a JSON \
             profile) or .html or .htm (the HTML report)",
            output.display()
        )));
    }
    for path in [output, recording] {
        if path.is_dir() {
            return Err(Failure::usage(format!("the output is a directory: {}", path.display())));
        }
    }
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    writable_directory(parent)
        .map_err(|why| Failure::runtime(format!("cannot write the output {}: {why}", output.display())))
}

/// Check `recover -o OUTPUT` before recovering: `recover` writes HDF5, so the name must end
/// in `.h5` or `.hdf5` (not HDF5 under a JSON name), and it may not be a directory - usage
/// errors; its directory is created if missing (so the temporary file can be made there) and
/// must take a new file - else
/// a runtime failure.
pub fn check_recover_output(output: &Path) -> Result<(), Failure> {
    let name = output.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if ![".h5", ".hdf5"].iter().any(|s| name.ends_with(s)) {
        return Err(Failure::usage(format!(
            "recover -o {}: recover writes HDF5, so the name must end in .h5 or .hdf5 (convert the \
             recovered file afterwards with `scope-profiler export`)",
            output.display()
        )));
    }
    if output.is_dir() {
        return Err(Failure::usage(format!("the output is a directory: {}", output.display())));
    }
    let parent = output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    writable_directory(parent)
        .map_err(|why| Failure::runtime(format!("cannot write the output {}: {why}", output.display())))
}

/// Create `dir` if missing and check that it takes a new file (a probe file, removed);
/// `Err(why)` otherwise.
fn writable_directory(dir: &Path) -> Result<(), String> {
    if let Some(file) = dir.ancestors().find(|a| a.is_file()) {
        return Err(format!("{} is not a directory", file.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| os_reason(&e))?;
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".scope-profiler-check-{}-{n}", std::process::id()));
    std::fs::OpenOptions::new().write(true).create_new(true).open(&probe).map_err(|e| os_reason(&e))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// An I/O error's reason without Rust's `(os error N)` suffix.
fn os_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Check `report -o OUTPUT`: an `.html`/`.htm` name (it writes HTML whatever the name says).
pub fn check_report_output(output: &Path) -> Result<(), Failure> {
    match Format::of_profile_path(output) {
        Format::HtmlReport => Ok(()),
        _ => Err(Failure::usage(format!(
            "report -o {}: the report is an HTML file; give a name ending in .html or .htm",
            output.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{dispatch, Outcome};

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sp-failure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn code(argv: &[&str]) -> i32 {
        match dispatch(argv.iter().copied()) {
            Outcome::Exit(code) => code,
            Outcome::Run(req) => panic!("{argv:?}: ran {req:?}"),
        }
    }

    /// An output under a file, in an unwritable place or that is a directory is an `error:`
    /// line before the script runs, never a Python traceback.
    #[test]
    fn run_output_that_cannot_be_written_is_refused_before_the_script() {
        let dir = std::env::temp_dir().join(format!("sp-run-output-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("adir.h5")).unwrap();
        std::fs::write(dir.join("afile"), b"").unwrap();
        let ok = dir.join("new/sub/run.h5");
        assert_eq!(check_run_output(&ok, &ok), Ok(()));
        assert!(dir.join("new/sub").is_dir()); // created
        assert_eq!(std::fs::read_dir(dir.join("new/sub")).unwrap().count(), 0); // probe removed
        let under_file = dir.join("afile/x.h5");
        let e = check_run_output(&under_file, &under_file).unwrap_err();
        assert_eq!(e.code(), 1);
        assert_eq!(
            e.message,
            format!(
                "cannot write the output {}: {} is not a directory",
                under_file.display(),
                dir.join("afile").display()
            )
        );
        let a_dir = dir.join("adir.h5");
        let e = check_run_output(&a_dir, &a_dir).unwrap_err();
        assert_eq!((e.code(), e.message.clone()), (2, format!("the output is a directory: {}", a_dir.display())));
        let json = dir.join("adir.h5.json");
        std::fs::create_dir_all(dir.join("adir.h5.json.scope-profiler.h5")).unwrap();
        let recording = dir.join("adir.h5.json.scope-profiler.h5");
        assert_eq!(check_run_output(&json, &recording).unwrap_err().code(), 2);
        let e = check_run_output(Path::new("/proc/nope/run.h5"), Path::new("/proc/nope/run.h5")).unwrap_err();
        assert_eq!(e.code(), 1);
        assert!(e.message.starts_with("cannot write the output /proc/nope/run.h5: "), "{e}");
        assert!(!e.message.contains("os error"), "{e}");
    }

    /// `recover -o rx.json` is refused (HDF5 under a JSON name), and `recover -o
    /// nodir/deep/out.h5` creates its directory.
    #[test]
    fn recover_output_is_hdf5_and_its_directory_is_created() {
        let dir = std::env::temp_dir().join(format!("sp-recover-output-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let e = check_recover_output(&dir.join("rx.json")).unwrap_err();
        assert!(e.usage && e.message.contains("must end in .h5 or .hdf5"), "{}", e.message);
        assert_eq!(code(&["sp", "recover", "x.h5", "-o", dir.join("rx.json").to_str().unwrap()]), 2);
        let deep = dir.join("nodir/deep/out.H5");
        check_recover_output(&deep).unwrap();
        assert!(deep.parent().unwrap().is_dir());
        std::fs::create_dir_all(dir.join("adir.h5")).unwrap();
        assert!(check_recover_output(&dir.join("adir.h5")).unwrap_err().usage);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file of another kind is a usage error (2); a missing or damaged `.h5` a runtime
    /// failure (1).
    #[test]
    fn a_file_of_the_wrong_kind_is_a_usage_error() {
        let html = temp("report.html", b"<!doctype html><html></html>");
        let json = temp("run.json", b"{\"regions\": {}}");
        let script = temp("script.py", b"print('hi')\n");
        let junk = temp("junk.h5", b"this is not an HDF5 file");
        let empty = temp("empty.txt", b"");
        for (path, kind) in
            [(&html, "an HTML file"), (&json, "JSON but not a scope-profiler profile"), (&script, "not an HDF5 file")]
        {
            let e = read_input(path).unwrap_err();
            assert!(e.usage && e.code() == 2, "{e}");
            assert!(e.message.starts_with(&format!("{} is {kind}", path.display())), "{e}");
            assert_eq!(code(&["sp", "summary", path.to_str().unwrap()]), 2);
            assert_eq!(code(&["sp", "threads", path.to_str().unwrap()]), 2);
        }
        for path in [&junk, &empty, &junk.with_file_name("missing.h5")] {
            let e = read_input(path).unwrap_err();
            assert!(!e.usage && e.code() == 1, "{e}");
            assert_eq!(code(&["sp", "summary", path.to_str().unwrap()]), 1);
        }
    }

    /// `summary DIR` is a usage error: a directory given for a file is a wrong request, like a
    /// file of another kind.
    #[test]
    fn a_directory_for_a_file_is_a_usage_error() {
        let dir = std::env::temp_dir().join(format!("sp-dir-input-{}.h5", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_input(&dir).unwrap_err();
        assert!(e.usage && e.message.ends_with("is a directory, not a profile file: give the files (e.g. DIR/*.h5)"));
        assert_eq!(code(&["sp", "summary", dir.to_str().unwrap()]), 2);
        assert_eq!(code(&["sp", "threads", dir.to_str().unwrap()]), 2);
        std::fs::remove_dir(&dir).unwrap();
    }

    /// The reading subcommands read the JSON profiles `run -o run.json` writes (plain or
    /// gzip, any name); a damaged JSON profile is a runtime failure naming the file.
    #[test]
    fn json_profiles_are_read_by_the_subcommands() {
        let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/compat/json-v1.json");
        let bytes = std::fs::read(&dataset).unwrap();
        let first = read_input(&dataset).unwrap();
        assert!(!first.regions.is_empty());
        let gz = {
            use std::io::Write as _;
            let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            z.write_all(&bytes).unwrap();
            temp("run.json.gz", &z.finish().unwrap())
        };
        let renamed = temp("profile.data", &bytes);
        for path in [&dataset, &gz, &renamed] {
            let run = read_input(path).unwrap();
            assert_eq!(run.region_names, first.region_names, "{}", path.display());
            assert_eq!(run.regions.len(), first.regions.len());
            for cmd in ["summary", "threads"] {
                assert_eq!(code(&["sp", cmd, path.to_str().unwrap()]), 0, "{cmd} {}", path.display());
            }
        }
        let cut = temp("cut.json", &bytes[..bytes.len() / 2]);
        let e = read_input(&cut).unwrap_err();
        assert!(!e.usage && e.message.contains("cut.json"), "{e}");
        assert_eq!(code(&["sp", "summary", cut.to_str().unwrap()]), 1);
    }

    /// `run -o out.txt` is refused (0.7.5 silently writes HDF5 into `out.txt`), naming the
    /// accepted suffixes, exit 2 like clap's errors.
    #[test]
    fn run_refuses_an_unknown_output_kind() {
        assert_eq!(code(&["sp", "run", "-o", "out.txt", "x.py"]), 2);
        let e = check_run_output(Path::new("out.txt"), Path::new("out.txt")).unwrap_err();
        assert!(e.message.contains(".h5 or .hdf5") && e.message.contains(".json.gz") && e.message.contains(".htm"));
        let base = std::env::temp_dir().join(format!("sp-run-kinds-{}", std::process::id()));
        for ok in ["a.h5", "a.HDF5", "a.json", "a.json.gz", "a.html", "A.HTM", "dir/run.h5"] {
            let out = base.join(ok);
            assert!(check_run_output(&out, &crate::recording_path(&out)).is_ok(), "{ok}");
            let out = out.to_str().unwrap();
            assert!(matches!(dispatch(["sp", "run", "-o", out, "x.py"]), Outcome::Run(_)), "{ok}");
        }
        assert_eq!(code(&["sp", "report", "x.h5", "-o", "r.txt"]), 2);
    }
}
