//! A guard against one kind of damaged global heap on which HDF5's parser loops forever.
use std::fs;
use std::io;

/// Whether a global heap collection ("GCOL", where HDF5 keeps variable-length strings) in
/// `file` (`len` bytes) is damaged in the one way that makes HDF5's own parser loop forever
/// instead of failing (`H5HG__cache_heap_deserialize`: an object 0 of size 0 never advances
/// the cursor). Such a file must be refused before HDF5 touches its strings. Reads the file
/// once, except `skip` (`(address, length)` ranges of numeric dataset storage: a heap is
/// never there, while int64 values can spell a heap's signature and header), with `pread`
/// into a buffer: no mapping, so a file truncated or rewritten meanwhile gives a short read
/// (an `Err`), never a `SIGBUS`.
pub(crate) fn global_heap_would_hang(file: &fs::File, len: u64, skip: &[(u64, u64)]) -> io::Result<bool> {
    for (lo, hi) in gaps(len, skip) {
        if scan_range(file, len, lo, hi, |at| Ok(read_heap(file, len, at)?.is_some_and(|heap| heap_loops(&heap))))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The parts of `0..len` outside the `skip` ranges, ascending.
fn gaps(len: u64, skip: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = skip.iter().map(|&(a, l)| (a.min(len), a.saturating_add(l).min(len))).collect();
    ranges.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0u64;
    for (lo, hi) in ranges {
        if lo > at {
            out.push((at, lo));
        }
        at = at.max(hi);
    }
    if at < len {
        out.push((at, len));
    }
    out
}

const HDR: usize = 16; // magic 4 + version 1 + reserved 3 + size 8 (8-byte lengths)
const OBJHDR: usize = 16; // index 2 + refs 2 + reserved 4 + size 8

/// The whole collection whose signature is at `at`, `None` when it is not a version-1
/// collection that fits in the file (HDF5 fails on those; no loop).
fn read_heap(file: &fs::File, len: u64, at: u64) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; HDR];
    if at + HDR as u64 > len || file.read_at(&mut head, at)? < HDR || head[4] != 1 {
        return Ok(None);
    }
    let size = u64::from_le_bytes(head[8..16].try_into().unwrap());
    if size < HDR as u64 || at.saturating_add(size) > len {
        return Ok(None);
    }
    let mut heap = vec![0u8; size as usize];
    file.read_exact_at(&mut heap, at)?;
    Ok(Some(heap))
}

/// Whether HDF5's walk over the objects of collection `heap` never advances (an object
/// that takes 0 bytes).
fn heap_loops(heap: &[u8]) -> bool {
    let end = heap.len();
    let mut p = HDR;
    while p < end {
        if p + OBJHDR > end {
            return false; // trailing free space: HDF5 jumps to the end
        }
        let idx = u16::from_le_bytes([heap[p], heap[p + 1]]);
        let obj = u64::from_le_bytes(heap[p + 8..p + 16].try_into().unwrap());
        let need = if idx > 0 { (OBJHDR as u64).saturating_add(obj.saturating_add(7) / 8 * 8) } else { obj };
        if need == 0 {
            return true;
        }
        if need > (end - p) as u64 {
            return false; // HDF5 reports an overflow
        }
        p += need as usize;
    }
    false
}

/// Bytes read per `pread` of the scan.
const PIECE: u64 = 4 << 20;

/// Call `check` at every offset in `lo..hi` where "GCOL" starts (its last bytes may lie
/// past `hi`), until it returns true.
fn scan_range(
    file: &fs::File,
    len: u64,
    lo: u64,
    hi: u64,
    mut check: impl FnMut(u64) -> io::Result<bool>,
) -> io::Result<bool> {
    use std::os::unix::fs::FileExt;
    const SIG: &[u8; 4] = b"GCOL";
    let mut buf = vec![0u8; (PIECE.min(hi - lo) + SIG.len() as u64 - 1) as usize];
    let mut p = lo;
    while p < hi {
        let starts_end = (p + PIECE).min(hi);
        let read_end = (starts_end + SIG.len() as u64 - 1).min(len);
        let bytes = &mut buf[..(read_end - p) as usize];
        file.read_exact_at(bytes, p)?;
        for at in memchr::memmem::find_iter(bytes, SIG) {
            let at = p + at as u64;
            if at >= starts_end {
                break;
            }
            if check(at)? {
                return Ok(true);
            }
        }
        p = starts_end;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_the_complement_of_the_skipped_ranges() {
        assert_eq!(gaps(100, &[]), vec![(0, 100)]);
        assert_eq!(gaps(100, &[(10, 20), (25, 5), (50, 100)]), vec![(0, 10), (30, 50)]);
        assert_eq!(gaps(100, &[(0, 100)]), Vec::<(u64, u64)>::new());
        assert_eq!(gaps(0, &[]), Vec::<(u64, u64)>::new());
    }

    /// A signature across a piece boundary is found once; one that starts in a skipped range
    /// is not looked at; one that starts just before a skipped range is.
    #[test]
    fn scan_finds_every_signature_start_outside_skipped_ranges() {
        use std::io::Write;
        let len = (PIECE * 2 + 100) as usize;
        let mut bytes = vec![0u8; len];
        let at = [0usize, PIECE as usize - 2, PIECE as usize + 7, len - 4];
        for &a in &at {
            bytes[a..a + 4].copy_from_slice(b"GCOL");
        }
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&bytes).unwrap();
        let mut seen = Vec::new();
        for (lo, hi) in gaps(len as u64, &[(PIECE + 5, 10)]) {
            scan_range(&f, len as u64, lo, hi, |a| {
                seen.push(a);
                Ok(false)
            })
            .unwrap();
        }
        assert_eq!(seen, vec![0, PIECE - 2, (len - 4) as u64]);
    }

    /// A file shorter than the length the scan was told (truncated meanwhile) is an error,
    /// not a crash.
    #[test]
    fn a_file_that_shrank_is_an_error() {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[7u8; 1000]).unwrap();
        assert!(global_heap_would_hang(&f, 1 << 20, &[]).is_err());
    }
}
