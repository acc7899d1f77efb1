//! What the export writers put in their files: text escaped for JSON and markup, file-name
//! slugs, and the file itself written atomically. Crate-internal.
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::ExportError;

/// Write `path` atomically: `fill` streams into a temp file beside it which is renamed over
/// `path` on success (a failed export leaves nothing behind). Parent directories are created;
/// the file gets the usual `0o666 & !umask` mode. `fill` writes through a 64 KiB buffer that is
/// flushed afterwards; the writer is `Send` so it can back a Parquet `ArrowWriter`.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut (dyn Write + Send)) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let io = |e: std::io::Error| ExportError::io("could not write", path, &e);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(|e| ExportError::io("could not create", &dir, &e))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(&dir).map_err(io)?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, tmp.as_file());
        fill(&mut w)?;
        w.flush().map_err(io)?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = 0o666 & !crate::hdf5::process_umask();
        let _ = fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode));
    }
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// `s` as a JSON string literal (quoted, escaped).
pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

/// `x` as a JSON number (`serde_json`'s shortest round-trip form), `0.0` when not finite.
pub(crate) fn json_f64(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_else(|_| "0.0".into())
}

/// `io::Error` → `ExportError::Io` naming `path`.
pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |e| ExportError::io("could not write", path, &e)
}

/// `re.sub(r"[^\w.+-]+", "_", s).strip("_")` (Python's Unicode `\w`: alphanumerics and `_`),
/// or `s` itself when that is empty. For file names derived from lane labels.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_run = false;
    for ch in s.chars() {
        if ch.is_alphanumeric() || ch == '_' || ch == '.' || ch == '+' || ch == '-' {
            out.push(ch);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    let t = out.trim_matches('_');
    if t.is_empty() {
        s.to_string()
    } else {
        t.to_string()
    }
}

/// `s` escaped for XML/HTML text and double-quoted attribute values (the timeline SVG, the
/// HTML report): `& < > "` as entities, and the control characters XML 1.0 cannot carry
/// (all below U+0020 but newline and tab) as spaces.
pub(crate) fn markup_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // characters XML 1.0 cannot carry
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
