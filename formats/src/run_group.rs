//! A group of repeated runs given as one path: a run file stands for itself, a directory for
//! the run files in it (`scope-profiler diff BASE_DIR NEW_DIR`, `compare("base/", "new/")`).
//!
//! The run files of a directory are its `.h5`/`.hdf5` files and its JSON profiles
//! (`.json`, `.json.gz`) other than the exports that share the suffix (`.speedscope.json`,
//! `.trace.json`, which `run` and `export` write beside a run), not in subdirectories, hidden
//! files (a streamed run's sidecar) left out, in name order.
use std::io;
use std::path::{Path, PathBuf};

/// Suffixes of run files (lower case).
const RUN_SUFFIXES: [&str; 4] = [".h5", ".hdf5", ".json", ".json.gz"];
/// JSON exports that are not runs.
const EXPORT_SUFFIXES: [&str; 2] = [".speedscope.json", ".trace.json"];

/// Whether a file named `name` in a directory is taken for a run file.
pub fn is_run_file_name(name: &str) -> bool {
    let lower = name.to_lowercase();
    !lower.starts_with('.')
        && RUN_SUFFIXES.iter().any(|s| lower.ends_with(s))
        && !EXPORT_SUFFIXES.iter().any(|s| lower.ends_with(s))
}

/// The run files `path` stands for: itself when it is not a directory (whether it exists is
/// for the reader to say), else the run files in it, in name order.
///
/// Errors: the directory cannot be listed, or holds no run file (`InvalidInput`, the message
/// naming the directory and what is looked for).
pub fn run_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot list the directory {}: {e}", path.display())))?
    {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_run_file_name(&name) && entry.path().is_file() {
            files.push(entry.path());
        }
    }
    if files.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} holds no run file (.h5, .hdf5, .json or .json.gz profiles written by scope-profiler)",
                path.display()
            ),
        ));
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_stands_for_its_run_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "b.h5",
            "a.json",
            "c.JSON.GZ",
            "d.hdf5",
            "a.speedscope.json",
            "a.trace.json",
            ".x.h5.partial",
            ".h.h5",
            "n.txt",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.h5")).unwrap();
        let names: Vec<String> = run_files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a.json", "b.h5", "c.JSON.GZ", "d.hdf5"]);
        let one = dir.path().join("b.h5");
        assert_eq!(run_files(&one).unwrap(), std::slice::from_ref(&one));
        let missing = dir.path().join("missing.h5");
        assert_eq!(run_files(&missing).unwrap(), [missing]);
        let empty = dir.path().join("sub.h5");
        let e = run_files(&empty).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().starts_with(&format!("{} holds no run file", empty.display())), "{e}");
    }
}
