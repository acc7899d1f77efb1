//! HDF5 in the reference's layout (`spec-hdf5.md`): read schemas 1-3, write schema 3.
//!
//! Reading never panics on bad input: every HDF5 failure, inconsistent index or
//! out-of-range value becomes an [`H5Error`] naming the file (and a panic inside the HDF5
//! bindings is caught and reported as [`H5Error::Corrupt`]).
//!
//! * [`read`]: entry point [`read_h5`], schema check, metadata, rank groups;
//! * [`read_summary`]: [`read_h5_summary`], statistics and lane tables without `/events`;
//! * [`typed`]: typed reads of datasets and attributes with size checks;
//! * [`columnar`]: schema-2/3 event columns, region index and lane tables;
//! * [`schema1`]: schema-1 per-rank groups;
//! * [`heap_guard`]: refuse files whose global heap makes HDF5 loop forever;
//! * `summary_statistics`: the `summary_statistics` compound (reference's `_timing_summary`);
//! * [`write`]: [`write_h5`] (schema 3, atomic publication);
//! * [`chunks`]: compressed chunks (shuffle + deflate) encoded in parallel for direct writes,
//!   and columns as self-contained compressed blobs ([`chunks::encode_column`]);
//! * [`working_files`]: the temporary files and sidecars a writer leaves beside its target.
use thiserror::Error;

pub mod chunks;
pub mod columnar;
pub mod heap_guard;
mod huffman;
pub mod read;
pub mod read_summary;
pub mod schema1;
mod summary_statistics;
pub mod typed;
pub mod vlen;
pub mod working_files;
pub mod write;

pub use read::{read_h5, read_h5_noting};
pub use read_summary::{read_h5_summary, RunSummary, SummaryFilter, SummaryRow};
pub(crate) use write::process_umask;
pub use write::{python_json_str_list, write_h5};

/// Why a profile file could not be read or written. Every message names the file.
#[derive(Debug, Error)]
pub enum H5Error {
    /// The file does not exist: "HDF5 file not found: <path>".
    #[error("{0}")]
    NotFound(String),
    /// Not HDF5, truncated, damaged index, not a scope-profiler file (Python: `CorruptProfileError`).
    #[error("{0}")]
    Corrupt(String),
    /// Schema attribute invalid or newer than supported (Python: `HDF5SchemaError`).
    #[error("{0}")]
    Schema(String),
    /// Writing failed (Python: `OSError`).
    #[error("{0}")]
    Write(String),
}

pub(crate) type R<T> = Result<T, H5Error>;

/// Part of the message of an [`H5Error::Corrupt`] for an HDF5 file that is not a
/// scope-profiler profile (a file of another kind: the CLI's usage error, exit 2).
pub const NOT_A_PROFILE: &str = "is an HDF5 file but not a scope-profiler profile";

/// Newest schema this crate reads (and the one it writes).
pub const SCHEMA_VERSION: i64 = 3;
pub(crate) const SCHEMA_ATTRIBUTE: &str = "scope_profiler_schema";

/// Python's `repr()` of a string (shared with the analysis crate's error messages).
pub(crate) use scope_profiler_analysis::py_repr;

/// Mark the file descriptor behind `file` close-on-exec. HDF5 opens files without
/// `O_CLOEXEC` and holds an advisory lock (`flock`) on them; a child process started by any
/// thread while the file is open (a `subprocess.run` in the profiled program, a pool
/// worker) would inherit the descriptor and with it the lock, and every later open of the
/// file - reading a profile just written - would fail with "unable to lock file" for as long
/// as that child lives. Best effort: nothing happens if the handle cannot be had.
pub(crate) fn close_on_exec(file: &hdf5::File) {
    let Some(fd) = descriptor(file) else { return };
    // SAFETY: fcntl on a descriptor the library holds open.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// The descriptor HDF5 holds `file` open with (the default sec2 driver), if it can be had.
fn descriptor(file: &hdf5::File) -> Option<libc::c_int> {
    let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: a valid file id and an out-pointer; the library lock serializes the call.
    let status = hdf5::sync::sync(|| unsafe {
        hdf5_sys::h5f::H5Fget_vfd_handle(file.id(), hdf5_sys::h5p::H5P_DEFAULT, &mut handle)
    });
    if status < 0 || handle.is_null() {
        return None;
    }
    // SAFETY: the default (sec2) driver's handle points at its `int` file descriptor.
    Some(unsafe { *(handle as *const libc::c_int) })
}

/// Whether HDF5's `file` is the same file (device and inode) as `other`; `true` when that
/// cannot be told (no descriptor to ask).
pub(crate) fn same_file(file: &hdf5::File, other: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::io::FromRawFd;
    let (Some(fd), Ok(theirs)) = (descriptor(file), other.metadata()) else { return true };
    // SAFETY: a borrowed view of HDF5's descriptor, never closed here (ManuallyDrop).
    let mine = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    mine.metadata().map_or(true, |m| m.dev() == theirs.dev() && m.ino() == theirs.ino())
}

#[cfg(test)]
mod tests {
    /// Descriptors of this process open on `path`, with whether each is close-on-exec.
    fn fds_on(path: &std::path::Path) -> Vec<bool> {
        let want = std::fs::canonicalize(path).unwrap();
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            let Ok(target) = std::fs::read_link(entry.path()) else { continue };
            if target == want {
                let fd: i32 = entry.file_name().to_string_lossy().parse().unwrap();
                // SAFETY: F_GETFD on a descriptor number; harmless if it closed meanwhile.
                let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                out.push(flags >= 0 && flags & libc::FD_CLOEXEC != 0);
            }
        }
        out
    }

    #[test]
    fn hdf5_descriptors_are_close_on_exec() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.h5");
        let created = hdf5::File::create(&path).unwrap();
        assert_eq!(fds_on(&path), vec![false], "HDF5 alone leaves its descriptor inheritable");
        super::close_on_exec(&created);
        assert_eq!(fds_on(&path), vec![true]);
        drop(created);
        crate::hdf5::write_h5(&scope_profiler_analysis::Run::default(), &path).unwrap();
        let ctx = super::typed::Ctx::open(&path, path.display().to_string()).unwrap();
        let opened = super::read::open_file(&ctx).unwrap();
        // the read's own descriptor (std opens with O_CLOEXEC) and HDF5's
        assert_eq!(fds_on(&path), vec![true, true], "read path");
        drop(opened);
    }
}
