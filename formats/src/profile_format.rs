//! Which format a profile path is in (the reference's `profile_io`): HDF5 (the default),
//! a JSON profile (`.json`, `.json.gz`) or an HTML report (`.html`, `.htm`, write-only).
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The three shapes a run is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileFormat {
    Hdf5,
    Json,
    Html,
}

impl ProfileFormat {
    /// `"hdf5"`, `"json"`, `"html"` (the reference's `FORMAT_*` values).
    pub fn name(self) -> &'static str {
        match self {
            ProfileFormat::Hdf5 => "hdf5",
            ProfileFormat::Json => "json",
            ProfileFormat::Html => "html",
        }
    }

    /// The format `path`'s name asks for (case-insensitive): `.json`/`.json.gz` -> JSON,
    /// `.html`/`.htm` -> HTML, anything else HDF5.
    pub fn by_name(path: &Path) -> Self {
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        if name.ends_with(".json") || name.ends_with(".json.gz") {
            ProfileFormat::Json
        } else if name.ends_with(".html") || name.ends_with(".htm") {
            ProfileFormat::Html
        } else {
            ProfileFormat::Hdf5
        }
    }

    /// The format of `path`'s contents by its first 8 bytes: the HDF5 signature, the gzip
    /// magic (JSON: the only gzipped shape written), `{` or `<` after ASCII whitespace;
    /// otherwise [`ProfileFormat::by_name`]. Errors: the file cannot be opened or read
    /// (`NotFound` for a missing file).
    pub fn sniff(path: &Path) -> io::Result<Self> {
        let mut head = Vec::with_capacity(8);
        File::open(path)?.take(8).read_to_end(&mut head)?;
        if head.starts_with(b"\x89HDF\r\n\x1a\n") {
            return Ok(ProfileFormat::Hdf5);
        }
        if head.starts_with(&[0x1f, 0x8b]) {
            return Ok(ProfileFormat::Json);
        }
        // Python's bytes.lstrip(): ASCII whitespace (space, \t, \n, \r, \x0b, \x0c)
        let start = head.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
        match start.map(|i| head[i]) {
            Some(b'{') => Ok(ProfileFormat::Json),
            Some(b'<') => Ok(ProfileFormat::Html),
            _ => Ok(ProfileFormat::by_name(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_contents() {
        assert_eq!(ProfileFormat::by_name(Path::new("a/B.JSON.GZ")), ProfileFormat::Json);
        assert_eq!(ProfileFormat::by_name(Path::new("r.htm")), ProfileFormat::Html);
        assert_eq!(ProfileFormat::by_name(Path::new("x.dat")), ProfileFormat::Hdf5);
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes, want) in [
            ("a.h5", &b"  {\"format\": 1}"[..], ProfileFormat::Json),
            ("b.json", &b"\x89HDF\r\n\x1a\nrest"[..], ProfileFormat::Hdf5),
            ("c.h5", &[0x1f, 0x8b, 8][..], ProfileFormat::Json),
            ("d", &b"\n<html>"[..], ProfileFormat::Html),
            ("e.json", &b"xx"[..], ProfileFormat::Json),
            ("f.bin", &b""[..], ProfileFormat::Hdf5),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            assert_eq!(ProfileFormat::sniff(&p).unwrap(), want, "{name}");
        }
        assert_eq!(ProfileFormat::sniff(&dir.path().join("none")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
