//! Files a writer leaves beside its target while it works, named so that a later process
//! can tell whose they are and whether that process is gone.
//!
//! * Temporary files of [`publish_h5`](super::write::publish_h5):
//!   `.<name>.<tag>-<pid>.<random>.tmp`. A process killed during the write leaves one; the
//!   next publication into that directory removes it ([`remove_stale`]).
//! * Sidecars of a streamed recording (`flush_interval`, `scope_profiler_finalize::stream`):
//!   `.<name>.<tag>-<pid>.partial`.
//!
//! `<tag>` names the pid namespace of this boot of this machine (8 hex digits, a hash of
//! the kernel's boot id and `/proc/self/ns/pid`), so a pid is only ever judged by a process
//! that shares its namespace: a live writer on another host of a shared filesystem, or in
//! another container, has a different tag and its files are never touched.
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

/// Leftovers younger than this are never removed (whatever their writer's state).
pub const MIN_AGE: Duration = Duration::from_secs(5);

/// What a leftover file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftoverKind {
    /// A temporary file of an HDF5 publication (`.tmp`).
    Temp,
    /// The sidecar of a streamed recording (`.partial`).
    Sidecar,
}

/// A leftover file name, parsed ([`parse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub kind: LeftoverKind,
    /// The file name of the target it belongs to (`run.h5`).
    pub target: String,
    /// The writer's namespace tag ([`process_tag`]).
    pub tag: String,
    /// The writer's process id.
    pub pid: u32,
}

fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// This process's namespace tag: 8 hex digits of a hash of the boot id and the pid
/// namespace (the host name when `/proc` does not tell them).
pub fn process_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let boot = fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let ns =
            fs::read_link("/proc/self/ns/pid").map(|p| p.into_os_string().into_encoded_bytes()).unwrap_or_default();
        if boot.is_empty() && ns.is_empty() {
            let mut name = [0u8; 256];
            // SAFETY: the buffer is writable for its length.
            if unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0 {
                h = fnv1a(&name, h);
            }
        }
        h = fnv1a(&boot, h);
        h = fnv1a(&ns, h);
        format!("{:08x}", (h ^ (h >> 32)) as u32)
    })
}

/// Whether process `pid` runs in this pid namespace: `kill(pid, 0)` is not `ESRCH`, and it
/// is not a zombie (ended, not yet reaped by its parent: a killed writer whose supervisor
/// has not called `wait()` yet, which `recover` must not call "still writing").
pub fn process_alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else { return false };
    if p <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(p, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    process_state(pid) != Some('Z')
}

/// The state letter of process `pid` (`/proc/<pid>/stat` field 3: `R`, `S`, `Z`, ...);
/// None when it cannot be read.
fn process_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces and parentheses
    stat[stat.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22);
/// None when it cannot be read. With the pid it names one process, even after the pid is
/// reused.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces and parentheses
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process that wrote a file is still running: `pid` exists and, when
/// `start_ticks` is known (non-zero), it is the same process (not a reuse of the pid).
pub fn writer_alive(pid: u32, start_ticks: u64) -> bool {
    if !process_alive(pid) {
        return false;
    }
    match (start_ticks, process_start_ticks(pid)) {
        (0, _) | (_, None) => true,
        (want, Some(now)) => want == now,
    }
}

/// The prefix of this process's temporary files for target file name `target`
/// (`.<target>.<tag>-<pid>.`; the random part and `.tmp` follow).
pub fn temp_prefix(target: &str) -> String {
    format!(".{target}.{}-{}.", process_tag(), std::process::id())
}

/// The sidecar of process `pid` (of this namespace) for `target`: `.<name>.<tag>-<pid>.partial`
/// in the target's directory.
pub fn sidecar_path(target: &Path, pid: u32) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.{}-{pid}.partial", process_tag()))
}

/// Parse a leftover name (see the module docs); None for any other file name.
pub fn parse(name: &str) -> Option<Leftover> {
    let body = name.strip_prefix('.')?;
    let (kind, rest) = if let Some(r) = body.strip_suffix(".tmp") {
        let (rest, random) = r.rsplit_once('.')?;
        if random.len() != 6 || !random.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        (LeftoverKind::Temp, rest)
    } else {
        (LeftoverKind::Sidecar, body.strip_suffix(".partial")?)
    };
    let (target, id) = rest.rsplit_once('.')?;
    let (tag, pid) = id.split_once('-')?;
    if target.is_empty() || tag.len() != 8 || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Leftover { kind, target: target.to_string(), tag: tag.to_string(), pid: pid.parse().ok()? })
}

/// Every leftover in `dir` (unreadable directories give none), with its path.
pub fn list(dir: &Path) -> Vec<(PathBuf, Leftover)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name();
            let parsed = parse(name.to_str()?)?;
            Some((e.path(), parsed))
        })
        .collect()
}

fn modified(path: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(path).ok().filter(|m| m.is_file()).and_then(|m| m.modified().ok())
}

/// Remove what dead writers of this namespace left in `dir`: temporary files, and sidecars
/// that are older than their target (their calls were published, or a later writer's
/// file replaced them). Never a file of a live process, of another namespace, a sidecar
/// newer than its target (it can still be recovered) or anything younger than
/// [`MIN_AGE`]. Best effort: errors are ignored. Returns the files removed.
pub fn remove_stale(dir: &Path) -> Vec<PathBuf> {
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for (path, l) in list(dir) {
        if l.tag != process_tag() || l.pid == std::process::id() || process_alive(l.pid) {
            continue;
        }
        let Some(mtime) = modified(&path) else { continue };
        if now.duration_since(mtime).unwrap_or_default() < MIN_AGE {
            continue;
        }
        if l.kind == LeftoverKind::Sidecar {
            let superseded = modified(&dir.join(&l.target)).is_some_and(|t| t > mtime);
            if !superseded {
                continue;
            }
        }
        if fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let prefix = temp_prefix("run.h5");
        let name = format!("{prefix}Ab3xZ9.tmp");
        let l = parse(&name).unwrap();
        assert_eq!(l.kind, LeftoverKind::Temp);
        assert_eq!(l.target, "run.h5");
        assert_eq!(l.tag, process_tag());
        assert_eq!(l.pid, std::process::id());
        let side = sidecar_path(Path::new("/d/a.b.h5"), 42);
        let l = parse(side.file_name().unwrap().to_str().unwrap()).unwrap();
        assert_eq!((l.kind, l.target.as_str(), l.pid), (LeftoverKind::Sidecar, "a.b.h5", 42));
        for other in [".run.h5.Ab3xZ9.tmp", "run.h5.x-1.partial", ".run.h5.0000000g-1.partial", ".x.0000000a-.partial"]
        {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn this_process_is_alive_and_its_start_is_known() {
        let me = std::process::id();
        assert!(process_alive(me));
        // an ended, unreaped child (a zombie) is not alive
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_state(child.id()) != Some('Z') && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_alive(child.id()), "a zombie counts as running");
        child.wait().expect("reap");
        let start = process_start_ticks(me).unwrap();
        assert!(writer_alive(me, start));
        assert!(!writer_alive(me, start + 1), "another process with the same pid");
        assert!(!process_alive(0));
    }
}
