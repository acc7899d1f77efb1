//! The run's `/metadata` at `setup()` (spec-hdf5 §2; a serial run: `mpi_size = num_nodes =
//! 1`): the reference's keys, values and order, `metadata_detail="full"` adding the host,
//! the user, the working directory and the environment of a cluster job.
//!
//! The facts only Python knows (its version, and what Python computes itself where this
//! crate cannot: `platform.platform()` off glibc Linux, `platform.uname()`, the processor of
//! a CPU without a model name) are given by the caller ([`PythonFacts`]).

use std::ffi::CStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// Environment variables `metadata_detail="full"` records when set and non-empty (the
/// reference's list), before every `SLURM_*` / `SLURMD_*` one.
pub const ENVIRONMENT_VARIABLES: [&str; 12] = [
    "LD_LIBRARY_PATH",
    "LOADEDMODULES",
    "MODULEPATH",
    "MODULESHOME",
    "MODULES_CMD",
    "MODULES_RUN_QUARANTINE",
    "PATH",
    "PYTHON_HOME",
    "PYTHON_INC",
    "PYTHON_INCLUDE",
    "PYTHON_LIB",
    "VIRTUAL_ENV",
];

/// Longest text value kept (in characters); longer ones end in [`TRUNCATION_MARKER`].
pub const MAX_VALUE_CHARS: usize = 60_000;
/// Python's `posixpath.normpath`: `.` and empty components dropped, `..` folded lexically,
/// a leading `//` (exactly two slashes) kept; `.` for an empty result.
pub fn py_normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let slashes =
        if path.starts_with("//") && !path.starts_with("///") { 2 } else { usize::from(path.starts_with('/')) };
    let mut comps: Vec<&str> = Vec::new();
    for comp in path.split('/') {
        if comp.is_empty() || comp == "." {
            continue;
        }
        if comp != ".." || (slashes == 0 && comps.is_empty()) || comps.last() == Some(&"..") {
            comps.push(comp);
        } else {
            comps.pop();
        }
    }
    let joined = "/".repeat(slashes) + &comps.join("/");
    if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// Python's `os.path.abspath` with the working directory `cwd`.
pub fn py_abspath(path: &str, cwd: &str) -> String {
    if path.starts_with('/') {
        py_normpath(path)
    } else if cwd.ends_with('/') {
        py_normpath(&format!("{cwd}{path}"))
    } else {
        py_normpath(&format!("{cwd}/{path}"))
    }
}

fn parts(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty() && *c != ".").collect()
}

/// How `metadata_detail="minimal"` records a source file (the reference's rule):
/// `filename` relative to the working directory `cwd`, else to the deepest `sys_path` entry
/// containing it (longest first, `sys.path` order on a tie), else its base name.
pub fn relative_source_path(filename: &str, cwd: &str, sys_path: &[String]) -> String {
    let path = py_abspath(filename, cwd);
    let path_parts = parts(&path);
    let mut roots: Vec<String> = sys_path.iter().filter(|e| !e.is_empty()).map(|e| py_abspath(e, cwd)).collect();
    roots.sort_by_key(|r| std::cmp::Reverse(r.chars().count()));
    for root in std::iter::once(cwd.to_string()).chain(roots) {
        let root_parts = parts(&root);
        // os.path.commonpath([path, root]) == root, both absolute
        let common = path_parts.iter().zip(&root_parts).take_while(|(a, b)| a == b).count();
        let commonpath = format!("/{}", path_parts[..common].join("/"));
        if path.starts_with('/') && root.starts_with('/') && commonpath == root && path != root {
            return path_parts[root_parts.len()..].join("/");
        }
    }
    filename.rsplit('/').next().unwrap_or(filename).to_string()
}

/// What ends a truncated text value.
pub const TRUNCATION_MARKER: &str = "...[truncated]";

/// One metadata value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A str.
    Text(String),
    /// An int.
    Int(i64),
    /// A list of str.
    List(Vec<String>),
}

/// What the caller (Python) knows: `python_version` (`sys.version`'s first word), this
/// build's version, and Python's own answers where the host facts have none.
#[derive(Debug, Clone, Default)]
pub struct PythonFacts {
    /// `sys.version.split()[0]`.
    pub python_version: String,
    /// `scope_profiler.__version__`.
    pub package_version: String,
    /// `platform.platform()`, used when [`crate::host::platform_string`] has none.
    pub platform: Option<String>,
    /// `platform.processor() or platform.machine() or "unknown"`, used when the CPU has no
    /// model name in `/proc/cpuinfo`.
    pub processor: Option<String>,
}

/// The host's part of the metadata that does not change during a process: `platform`,
/// `chip_information`, `omp_num_threads` (system calls; `None` where Python must answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// `platform.platform()` computed from `uname(2)`, None off glibc Linux.
    pub platform: Option<String>,
    /// The CPU's model name (`model name` / `cpu model` of `/proc/cpuinfo`).
    pub chip: Option<String>,
    /// `omp_get_max_threads()` ([`crate::host::omp_num_threads`]).
    pub omp_num_threads: i64,
}

impl HostFacts {
    /// Read now (the caller keeps them for the process: a few ms, OpenMP runtimes loaded).
    pub fn read() -> HostFacts {
        HostFacts {
            platform: crate::host::platform_string(),
            chip: std::fs::read("/proc/cpuinfo").ok().and_then(|b| cpu_model(&String::from_utf8_lossy(&b))),
            omp_num_threads: crate::host::omp_num_threads(),
        }
    }
}

/// The first `model name` / `cpu model` value of a `/proc/cpuinfo` text, trimmed.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':').unwrap_or((line, ""));
        let key = key.trim().to_lowercase();
        (key == "model name" || key == "cpu model").then(|| value.trim().to_string())
    })
}

/// `datetime.now(UTC).isoformat()` of `time`: `2026-12-03T12:39:52.123456+00:00`, the
/// microseconds left out when they are 0 (as Python does).
pub fn iso_timestamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() as i64;
    let micros = since.subsec_micros();
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // days -> civil date (H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    let fraction = if micros == 0 { String::new() } else { format!(".{micros:06}") };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}+00:00")
}

/// The metadata of a run set up now, in the reference's key order: `timestamp`,
/// `platform`, `chip_information`, `python_version`, `scope_profiler_version`,
/// `omp_num_threads`, `mpi_size`, `total_cores`, `num_nodes`; with `full` also
/// [`full_details`]. Text values longer than [`MAX_VALUE_CHARS`] are truncated.
pub fn collect(host: &HostFacts, python: &PythonFacts, full: Option<FullDetails>) -> Vec<(String, Item)> {
    let text = |s: &str| Item::Text(s.to_string());
    let mut out: Vec<(String, Item)> = vec![
        ("timestamp".into(), Item::Text(iso_timestamp(SystemTime::now()))),
        ("platform".into(), text(host.platform.as_deref().or(python.platform.as_deref()).unwrap_or("unknown"))),
        ("chip_information".into(), text(host.chip.as_deref().or(python.processor.as_deref()).unwrap_or("unknown"))),
        ("python_version".into(), text(&python.python_version)),
        ("scope_profiler_version".into(), text(&python.package_version)),
        ("omp_num_threads".into(), Item::Int(host.omp_num_threads)),
        ("mpi_size".into(), Item::Int(1)),
        ("total_cores".into(), Item::Int(host.omp_num_threads)),
        ("num_nodes".into(), Item::Int(1)),
    ];
    if let Some(full) = full {
        out.extend(full.items());
    }
    for (_, value) in &mut out {
        if let Item::Text(s) = value {
            truncate(s);
        }
    }
    out
}

fn truncate(s: &mut String) {
    if s.chars().nth(MAX_VALUE_CHARS).is_some() {
        let keep = MAX_VALUE_CHARS - TRUNCATION_MARKER.chars().count();
        let at = s.char_indices().nth(keep).map(|(i, _)| i).unwrap_or(s.len());
        s.truncate(at);
        s.push_str(TRUNCATION_MARKER);
    }
}

/// What `metadata_detail="full"` adds: `hostname`, `uname` (`" ".join(platform.uname())`,
/// from the caller), `working_directory`, `user`, `modules` (`LOADEDMODULES`), then
/// [`ENVIRONMENT_VARIABLES`] and every `SLURM_*` / `SLURMD_*` variable that is set and
/// non-empty (environment order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullDetails {
    /// `socket.gethostname()`.
    pub hostname: String,
    /// `" ".join(platform.uname())`.
    pub uname: String,
    /// `os.getcwd()`.
    pub working_directory: String,
    /// `getpass.getuser()`.
    pub user: String,
    /// The environment (name, value), in its order.
    pub environment: Vec<(String, String)>,
}

impl FullDetails {
    fn items(self) -> Vec<(String, Item)> {
        let env = |name: &str| self.environment.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let modules = env("LOADEDMODULES").unwrap_or("").split(':').filter(|m| !m.is_empty()).map(String::from);
        let mut out = vec![
            ("hostname".into(), Item::Text(self.hostname.clone())),
            ("uname".into(), Item::Text(self.uname.clone())),
            ("working_directory".into(), Item::Text(self.working_directory.clone())),
            ("user".into(), Item::Text(self.user.clone())),
            ("modules".into(), Item::List(modules.collect())),
        ];
        for name in ENVIRONMENT_VARIABLES {
            if let Some(value) = env(name).filter(|v| !v.is_empty()) {
                out.push((name.into(), Item::Text(value.into())));
            }
        }
        for (name, value) in &self.environment {
            if (name.starts_with("SLURM_") || name.starts_with("SLURMD_")) && !value.is_empty() {
                out.push((name.clone(), Item::Text(value.clone())));
            }
        }
        out
    }
}

/// `socket.gethostname()` (`gethostname(2)`); None when the call fails.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its length; gethostname NUL-terminates within it on success
    // (the last byte stays 0 for a name that fills it).
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) } != 0 {
        return None;
    }
    let name = CStr::from_bytes_until_nul(&buf).ok()?;
    Some(name.to_string_lossy().into_owned())
}

/// `getpass.getuser()`: the first non-empty of `LOGNAME`, `USER`, `LNAME`, `USERNAME`,
/// else the password database's name of the real user id; None when neither exists (Python
/// raises then: the caller asks it).
pub fn user_name() -> Option<String> {
    for name in ["LOGNAME", "USER", "LNAME", "USERNAME"] {
        if let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) {
            return Some(value.to_string_lossy().into_owned());
        }
    }
    // SAFETY: getpwuid_r writes into `entry` and `buf` (their sizes given) and sets `found`
    // to &entry or null; the name points into `buf`, read before it goes out of scope.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16 * 1024];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(libc::getuid(), &mut entry, buf.as_mut_ptr(), buf.len(), &mut found);
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        Some(CStr::from_ptr(entry.pw_name).to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Expected values from Python's `posixpath` and the old Python `_relative_source_path`.
    #[test]
    fn source_paths_as_python_shows_them() {
        assert_eq!(py_normpath("//a//b/../c/."), "//a/c");
        assert_eq!(py_normpath("///a/../.."), "/");
        assert_eq!(py_normpath("../x/../../y"), "../../y");
        assert_eq!(py_normpath(""), ".");
        assert_eq!(py_abspath("x/../y.py", "/w"), "/w/y.py");
        let sys_path: Vec<String> =
            ["", "/opt/lib", "/opt/lib/python3.11/site-packages", "rel"].map(String::from).to_vec();
        assert_eq!(relative_source_path("app/main.py", "/w", &sys_path), "app/main.py");
        assert_eq!(relative_source_path("/w/app/main.py", "/w", &sys_path), "app/main.py");
        assert_eq!(relative_source_path("/opt/lib/python3.11/site-packages/pkg/m.py", "/w", &sys_path), "pkg/m.py");
        assert_eq!(relative_source_path("/opt/lib/tool.py", "/w", &sys_path), "tool.py");
        assert_eq!(relative_source_path("/elsewhere/x/y.py", "/w", &sys_path), "y.py");
        assert_eq!(relative_source_path("<string>", "/", &[]), "<string>");
        assert_eq!(relative_source_path("/w", "/w", &[]), "w");
    }

    #[test]
    fn timestamps_as_python_writes_them() {
        // datetime.fromtimestamp(1796301592.123456, UTC).isoformat()
        let t = UNIX_EPOCH + Duration::from_micros(1_796_301_592_123_456);
        assert_eq!(iso_timestamp(t), "2026-12-03T12:39:52.123456+00:00");
        assert_eq!(iso_timestamp(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00+00:00");
        assert_eq!(iso_timestamp(UNIX_EPOCH + Duration::from_nanos(1_500)), "1970-01-01T00:00:00.000001+00:00");
    }

    #[test]
    fn cpu_model_of_cpuinfo() {
        assert_eq!(
            cpu_model("processor\t: 0\nvendor_id\t: X\nmodel name\t: Some CPU @ 2.0GHz \n"),
            Some("Some CPU @ 2.0GHz".into())
        );
        assert_eq!(cpu_model("system type : MIPS\ncpu model : R4000\n"), Some("R4000".into()));
        assert_eq!(cpu_model("processor : 0\nBogoMIPS : 50\n"), None);
    }

    fn facts() -> (HostFacts, PythonFacts) {
        let host = HostFacts { platform: None, chip: Some("cpu".into()), omp_num_threads: 4 };
        let python = PythonFacts {
            python_version: "3.11.2".into(),
            package_version: "0.1.0".into(),
            platform: Some("Python-platform".into()),
            processor: Some("x86_64".into()),
        };
        (host, python)
    }

    #[test]
    fn minimal_metadata_in_the_references_order() {
        let (host, python) = facts();
        let m = collect(&host, &python, None);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "timestamp",
                "platform",
                "chip_information",
                "python_version",
                "scope_profiler_version",
                "omp_num_threads",
                "mpi_size",
                "total_cores",
                "num_nodes"
            ]
        );
        assert_eq!(m[1].1, Item::Text("Python-platform".into()));
        assert_eq!(m[2].1, Item::Text("cpu".into()));
        assert_eq!(m[7].1, Item::Int(4));
    }

    #[test]
    fn full_details_and_truncation() {
        let (host, python) = facts();
        let long = "x".repeat(MAX_VALUE_CHARS + 1);
        let full = FullDetails {
            hostname: "node1".into(),
            uname: "Linux node1 6.1 #1 x86_64 ".into(),
            working_directory: "/w".into(),
            user: "me".into(),
            environment: vec![
                ("SLURM_JOB_ID".into(), "7".into()),
                ("PATH".into(), long),
                ("LOADEDMODULES".into(), "gcc/12::mpi".into()),
                ("SLURMD_NODENAME".into(), "".into()),
                ("HOME".into(), "/home/me".into()),
                ("VIRTUAL_ENV".into(), "".into()),
            ],
        };
        let m = collect(&host, &python, Some(full));
        let keys: Vec<&str> = m.iter().skip(9).map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["hostname", "uname", "working_directory", "user", "modules", "LOADEDMODULES", "PATH", "SLURM_JOB_ID"]
        );
        assert_eq!(m[13].1, Item::List(vec!["gcc/12".into(), "mpi".into()]));
        let Item::Text(path) = &m[15].1 else { panic!("text") };
        assert_eq!(path.chars().count(), MAX_VALUE_CHARS);
        assert!(path.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn hostname_and_user_are_found() {
        assert!(hostname().is_some_and(|h| !h.is_empty()));
        assert!(user_name().is_some());
    }
}
