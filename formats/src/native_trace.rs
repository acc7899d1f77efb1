//! The binary region traces (`.spt`) that the reference package's C and Fortran region APIs
//! write at `sp_finalize()`, one file per rank.
//!
//! Layout (either byte order; the version field tells which, since exactly one reading of
//! it is a known version), as the reference documents it in `native_trace.py`:
//!
//! ```text
//! char[8]  "SCOPEPRF"
//! int32    format version (1 or 2)
//! int32    rank
//! int64    number of regions
//! per region:
//!     int32   name length in bytes, then the name (UTF-8)
//!     version 2 only: int32 source path length (0 = unknown), the path, int32 line (-1 = unknown)
//!     int64   number of calls
//!     int64[] start timestamps, ns (the clock of `time.perf_counter_ns`)
//!     int64[] end timestamps, ns
//! ```
//!
//! Every count is checked against the bytes left before anything is allocated, so a damaged
//! header cannot make the reader allocate more than the file holds.
use std::path::Path;

/// File signature.
pub const MAGIC: &[u8; 8] = b"SCOPEPRF";
/// The newest trace layout (the C API's); version 1 is the Fortran API's.
pub const FORMAT_VERSION: i32 = 2;
/// Versions this reader accepts.
pub const KNOWN_FORMAT_VERSIONS: [i32; 2] = [1, 2];

/// One region of a trace: its calls' starts and ends (ns), and its source location when the
/// trace carries one (version 2, a region registered with `sp_region_at()`).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRegion {
    pub name: String,
    pub source_file: Option<String>,
    pub source_line: Option<i64>,
    pub start_ns: Vec<i64>,
    pub end_ns: Vec<i64>,
}

/// One rank's trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub version: i32,
    pub rank: i32,
    pub little_endian: bool,
    pub regions: Vec<TraceRegion>,
}

/// Why a file is not a readable trace; the message names the file (the reference's
/// `TraceFormatError` texts).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct TraceFormatError(pub String);

/// Extension of a binary trace.
pub const TRACE_SUFFIX: &str = ".spt";
/// Extension of a directly written per-rank HDF5 profile (`SP_USE_HDF5`).
pub const HDF5_SUFFIX: &str = ".h5";

/// Whether a file name is per-rank HDF5 output as [`find_traces`] recognizes it in a
/// directory (the glob `*_rank[0-9]*.h5`): a merged profile beside them is not an input.
pub fn is_rank_h5(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(HDF5_SUFFIX) else { return false };
    stem.match_indices("_rank").any(|(i, _)| stem.as_bytes().get(i + 5).is_some_and(u8::is_ascii_digit))
}

/// The native output files among `inputs`: files as given, directories searched
/// (non-recursively) for `*.spt` and `*_rank<N>.h5`; sorted, without duplicates. Errors
/// (a `FileNotFoundError` message): an input that does not exist, a directory with neither.
pub fn find_traces(inputs: &[std::path::PathBuf]) -> Result<Vec<std::path::PathBuf>, String> {
    let mut found = Vec::new();
    for path in inputs {
        if path.is_dir() {
            let mut in_dir: Vec<std::path::PathBuf> = std::fs::read_dir(path)
                .map(|entries| {
                    entries
                        .flatten()
                        .filter(|e| {
                            let name = e.file_name().to_string_lossy().into_owned();
                            name.ends_with(TRACE_SUFFIX) || is_rank_h5(&name)
                        })
                        .map(|e| e.path())
                        .collect()
                })
                .unwrap_or_default();
            if in_dir.is_empty() {
                return Err(format!(
                    "no {TRACE_SUFFIX} traces and no per-rank {HDF5_SUFFIX} profiles in {}",
                    path.display()
                ));
            }
            in_dir.sort();
            found.extend(in_dir);
        } else if path.exists() {
            found.push(path.clone());
        } else {
            return Err(format!("no such file or directory: {}", path.display()));
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// Read and parse the trace at `path`. Errors: `Err(io)` when the file cannot be read,
/// `Ok(Err(format))` when it is not a valid trace.
pub fn read_trace(path: &Path) -> std::io::Result<Result<Trace, TraceFormatError>> {
    let bytes = std::fs::read(path)?;
    Ok(parse_trace(&bytes, &path.display().to_string()))
}

/// A cursor over the trace bytes in the file's byte order.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    little: bool,
    shown: &'a str,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], TraceFormatError> {
        match self.at.checked_add(n).filter(|&end| end <= self.bytes.len()) {
            Some(end) => {
                let out = &self.bytes[self.at..end];
                self.at = end;
                Ok(out)
            }
            None => Err(TraceFormatError(format!(
                "{}: truncated trace file ({what}: {n} byte(s) needed at offset {}, {} left)",
                self.shown,
                self.at,
                self.bytes.len() - self.at
            ))),
        }
    }
    fn i32(&mut self, what: &str) -> Result<i32, TraceFormatError> {
        let b: [u8; 4] = self.take(4, what)?.try_into().expect("4 bytes");
        Ok(if self.little { i32::from_le_bytes(b) } else { i32::from_be_bytes(b) })
    }
    fn i64(&mut self, what: &str) -> Result<i64, TraceFormatError> {
        let b: [u8; 8] = self.take(8, what)?.try_into().expect("8 bytes");
        Ok(if self.little { i64::from_le_bytes(b) } else { i64::from_be_bytes(b) })
    }
    /// A length-prefixed UTF-8 string.
    fn string(&mut self, what: &str) -> Result<String, TraceFormatError> {
        let len = self.i32(what)?;
        let len = usize::try_from(len)
            .map_err(|_| TraceFormatError(format!("{}: negative {what} length {len}", self.shown)))?;
        let raw = self.take(len, what)?;
        String::from_utf8(raw.to_vec())
            .map_err(|e| TraceFormatError(format!("{}: {what} is not UTF-8 ({e})", self.shown)))
    }
    /// `n` int64 values (checked against the bytes left first).
    fn i64s(&mut self, n: usize, what: &str) -> Result<Vec<i64>, TraceFormatError> {
        let raw = self.take(n.saturating_mul(8), what)?;
        let little = self.little;
        Ok(raw
            .chunks_exact(8)
            .map(|c| {
                let b: [u8; 8] = c.try_into().expect("8 bytes");
                if little {
                    i64::from_le_bytes(b)
                } else {
                    i64::from_be_bytes(b)
                }
            })
            .collect())
    }
}

/// Parse a trace held in `bytes`; `shown` names the file in messages.
pub fn parse_trace(bytes: &[u8], shown: &str) -> Result<Trace, TraceFormatError> {
    if bytes.len() < 24 {
        return Err(TraceFormatError(format!("{shown}: too short to be a trace file")));
    }
    if &bytes[..8] != MAGIC {
        return Err(TraceFormatError(format!(
            "{shown}: not a scope-profiler Fortran trace (expected b'SCOPEPRF', found {})",
            py_bytes(&bytes[..8])
        )));
    }
    let field: [u8; 4] = bytes[8..12].try_into().expect("4 bytes");
    let (little, version) = if KNOWN_FORMAT_VERSIONS.contains(&i32::from_le_bytes(field)) {
        (true, i32::from_le_bytes(field))
    } else if KNOWN_FORMAT_VERSIONS.contains(&i32::from_be_bytes(field)) {
        (false, i32::from_be_bytes(field))
    } else {
        return Err(TraceFormatError(format!(
            "{shown}: unsupported trace format version {} (this scope-profiler reads versions (1, 2))",
            i32::from_le_bytes(field)
        )));
    };
    let mut c = Cursor { bytes, at: 12, little, shown };
    let rank = c.i32("rank")?;
    let num_regions = c.i64("number of regions")?;
    // a region takes at least 12 bytes (name length + call count): more cannot fit
    if num_regions < 0 || num_regions as u128 * 12 > (bytes.len() - c.at) as u128 {
        return Err(TraceFormatError(format!(
            "{shown}: truncated trace file (claims {num_regions} regions in {} bytes)",
            bytes.len()
        )));
    }
    let mut regions: Vec<TraceRegion> = Vec::with_capacity(num_regions as usize);
    for _ in 0..num_regions {
        let name = c.string("region name")?;
        let (mut source_file, mut source_line) = (None, None);
        if version >= 2 {
            source_file = Some(c.string("source file path")?).filter(|s| !s.is_empty());
            source_line = Some(c.i32("source line")? as i64).filter(|&l| l >= 0);
        }
        let calls = c.i64("number of calls")?;
        let calls = usize::try_from(calls)
            .map_err(|_| TraceFormatError(format!("{shown}: negative call count {calls} for region {name:?}")))?;
        let start_ns = c.i64s(calls, "start timestamps")?;
        let end_ns = c.i64s(calls, "end timestamps")?;
        if regions.iter().any(|r| r.name == name) {
            return Err(TraceFormatError(format!(
                "{shown}: region {name:?} appears twice (its calls would be merged silently)"
            )));
        }
        regions.push(TraceRegion { name, source_file, source_line, start_ns, end_ns });
    }
    if c.at != bytes.len() {
        return Err(TraceFormatError(format!(
            "{shown}: {} trailing byte(s) after the last region",
            bytes.len() - c.at
        )));
    }
    Ok(Trace { version, rank, little_endian: little, regions })
}

/// Python's `repr` of a `bytes` value (for the signature message).
fn py_bytes(b: &[u8]) -> String {
    let mut s = String::from("b'");
    for &x in b {
        match x {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(x as char),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            _ => s.push_str(&format!("\\x{x:02x}")),
        }
    }
    s.push('\'');
    s
}

/// Write `trace` in the layout above (tests; tools that make traces).
pub fn encode_trace(trace: &Trace) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let le = trace.little_endian;
    let i32b = |v: i32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
    let i64b = |v: i64| if le { v.to_le_bytes() } else { v.to_be_bytes() };
    out.extend(i32b(trace.version));
    out.extend(i32b(trace.rank));
    out.extend(i64b(trace.regions.len() as i64));
    for r in &trace.regions {
        out.extend(i32b(r.name.len() as i32));
        out.extend(r.name.as_bytes());
        if trace.version >= 2 {
            let file = r.source_file.as_deref().unwrap_or("");
            out.extend(i32b(file.len() as i32));
            out.extend(file.as_bytes());
            out.extend(i32b(r.source_line.unwrap_or(-1) as i32));
        }
        out.extend(i64b(r.start_ns.len() as i64));
        r.start_ns.iter().for_each(|&v| out.extend(i64b(v)));
        r.end_ns.iter().for_each(|&v| out.extend(i64b(v)));
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn rank_h5_names_as_the_glob() {
        for yes in ["run_rank00000.h5", "a_rank1x.h5", "x.h5_rank2.h5", "_rank9.h5"] {
            assert!(is_rank_h5(yes), "{yes}");
        }
        for no in ["run_rank.h5", "merged.h5", "run_rank1.H5", "run_rank1.h5.bak", "run_rankA1.h5"] {
            assert!(!is_rank_h5(no), "{no}");
        }
    }

    #[test]
    fn find_traces_lists_dirs_and_files_sorted_once() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b_rank1.spt", "a_rank0.spt", "p_rank00001.h5", "merged.h5", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let d = dir.path().to_path_buf();
        let found = find_traces(&[d.clone(), d.join("a_rank0.spt"), d.join("merged.h5")]).unwrap();
        let names: Vec<String> = found.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["a_rank0.spt", "b_rank1.spt", "merged.h5", "p_rank00001.h5"]);
        assert_eq!(
            find_traces(&[d.join("gone.spt")]).unwrap_err(),
            format!("no such file or directory: {}", d.join("gone.spt").display())
        );
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            find_traces(&[empty.path().to_path_buf()]).unwrap_err(),
            format!("no .spt traces and no per-rank .h5 profiles in {}", empty.path().display())
        );
    }

    use super::*;

    fn sample(version: i32, little_endian: bool) -> Trace {
        Trace {
            version,
            rank: 3,
            little_endian,
            regions: vec![
                TraceRegion {
                    name: "solve".into(),
                    source_file: (version >= 2).then(|| "solver.f90".into()),
                    source_line: (version >= 2).then_some(42),
                    start_ns: vec![100, 300],
                    end_ns: vec![250, 900],
                },
                TraceRegion {
                    name: "io".into(),
                    source_file: None,
                    source_line: None,
                    start_ns: vec![],
                    end_ns: vec![],
                },
            ],
        }
    }

    #[test]
    fn both_versions_and_byte_orders_round_trip() {
        for version in [1, 2] {
            for le in [true, false] {
                let t = sample(version, le);
                assert_eq!(parse_trace(&encode_trace(&t), "x.spt").unwrap(), t, "v{version} le={le}");
            }
        }
        // a big-endian version-2 header, byte for byte
        let b = encode_trace(&sample(2, false));
        assert_eq!(&b[8..16], &[0, 0, 0, 2, 0, 0, 0, 3]);
    }

    #[test]
    fn damaged_traces_are_refused_with_the_file_named() {
        let good = encode_trace(&sample(2, true));
        let err = |b: &[u8]| parse_trace(b, "r.spt").unwrap_err().0;
        assert_eq!(err(&good[..10]), "r.spt: too short to be a trace file");
        let mut bad = good.clone();
        bad[0] = b'X';
        assert_eq!(err(&bad), "r.spt: not a scope-profiler Fortran trace (expected b'SCOPEPRF', found b'XCOPEPRF')");
        let mut v9 = good.clone();
        v9[8] = 9;
        assert_eq!(err(&v9), "r.spt: unsupported trace format version 9 (this scope-profiler reads versions (1, 2))");
        assert!(err(&good[..good.len() - 3]).starts_with("r.spt: truncated trace file (number of calls"));
        let mut trailing = good.clone();
        trailing.extend([0, 0]);
        assert_eq!(err(&trailing), "r.spt: 2 trailing byte(s) after the last region");
        // a call count that cannot fit is refused before allocating
        let mut huge = encode_trace(&sample(1, true));
        let at = 24 + 4 + 5; // first region's call count
        huge[at..at + 8].copy_from_slice(&(i64::MAX / 16).to_le_bytes());
        assert!(err(&huge).contains("truncated trace file (start timestamps"));
        let mut regions = good.clone();
        regions[16..24].copy_from_slice(&i64::MAX.to_le_bytes());
        assert!(err(&regions).contains("claims 9223372036854775807 regions"));
        let mut dup = sample(1, true);
        dup.regions[1].name = "solve".into();
        assert!(err(&encode_trace(&dup)).contains("region \"solve\" appears twice"));
    }
}
