//! Which format a profile path is in (the reference's `profile_io`): HDF5 (the default),
//! a JSON profile (`.json`, `.json.gz`) or an HTML report (`.html`, `.htm`, write-only).
//! The three are [`Format::Hdf5`], [`Format::Json`] and [`Format::HtmlReport`] of the
//! registry; their [`Format::name`]s are the reference's `FORMAT_*` values.
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::registry::Format;

impl Format {
    /// The format `path`'s name asks for (case-insensitive): `.json`/`.json.gz` -> JSON,
    /// `.html`/`.htm` -> HTML, anything else HDF5.
    pub fn of_profile_path(path: &Path) -> Self {
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        if name.ends_with(".json") || name.ends_with(".json.gz") {
            Format::Json
        } else if name.ends_with(".html") || name.ends_with(".htm") {
            Format::HtmlReport
        } else {
            Format::Hdf5
        }
    }

    /// The format of `path`'s contents by its first 8 bytes: the HDF5 signature, the gzip
    /// magic (JSON: the only gzipped shape written), `{` or `<` after ASCII whitespace;
    /// otherwise [`Format::of_profile_path`]. Errors: the file cannot be opened or read
    /// (`NotFound` for a missing file).
    pub fn sniff_profile(path: &Path) -> io::Result<Self> {
        let mut head = Vec::with_capacity(8);
        File::open(path)?.take(8).read_to_end(&mut head)?;
        if head.starts_with(b"\x89HDF\r\n\x1a\n") {
            return Ok(Format::Hdf5);
        }
        if head.starts_with(&[0x1f, 0x8b]) {
            return Ok(Format::Json);
        }
        // Python's bytes.lstrip(): ASCII whitespace (space, \t, \n, \r, \x0b, \x0c)
        let start = head.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
        match start.map(|i| head[i]) {
            Some(b'{') => Ok(Format::Json),
            Some(b'<') => Ok(Format::HtmlReport),
            _ => Ok(Format::of_profile_path(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_contents() {
        assert_eq!(Format::of_profile_path(Path::new("a/B.JSON.GZ")), Format::Json);
        assert_eq!(Format::of_profile_path(Path::new("r.htm")), Format::HtmlReport);
        assert_eq!(Format::of_profile_path(Path::new("x.dat")), Format::Hdf5);
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes, want) in [
            ("a.h5", &b"  {\"format\": 1}"[..], Format::Json),
            ("b.json", &b"\x89HDF\r\n\x1a\nrest"[..], Format::Hdf5),
            ("c.h5", &[0x1f, 0x8b, 8][..], Format::Json),
            ("d", &b"\n<html>"[..], Format::HtmlReport),
            ("e.json", &b"xx"[..], Format::Json),
            ("f.bin", &b""[..], Format::Hdf5),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            assert_eq!(Format::sniff_profile(&p).unwrap(), want, "{name}");
        }
        assert_eq!(Format::sniff_profile(&dir.path().join("none")).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
