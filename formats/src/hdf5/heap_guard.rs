//! A guard against one kind of damaged global heap on which HDF5's parser loops forever.
use std::fs;
use std::io;
use std::path::Path;

/// Whether a global heap collection ("GCOL", where HDF5 keeps variable-length strings) in
/// the file is damaged in the one way that makes HDF5's own parser loop forever instead of
/// failing (`H5HG__cache_heap_deserialize`: an object 0 of size 0 never advances the cursor).
/// Such a file must be refused before HDF5 touches its strings. Scans the file once,
/// skipping `skip` (sorted `(address, length)` ranges of numeric dataset storage: a heap is
/// never there, while int64 values can spell a heap's signature and header). Only regular
/// files are scanned.
pub(crate) fn global_heap_would_hang(path: &Path, skip: &[(u64, u64)]) -> io::Result<bool> {
    let file = fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(false);
    }
    let len = meta.len();
    let skipped = |at: u64| {
        let k = skip.partition_point(|&(addr, _)| addr <= at);
        k > 0 && at < skip[k - 1].0.saturating_add(skip[k - 1].1)
    };
    scan_file(&file, len, |at| {
        if skipped(at) {
            return Ok(false);
        }
        Ok(read_heap(&file, len, at)?.is_some_and(|heap| heap_loops(&heap)))
    })
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

/// [`scan`] the `len` bytes of `file`: a read-only mapping searched with a SIMD substring
/// search (the scan is part of every load, so it must run near memory bandwidth); buffered
/// reads when it cannot be mapped.
fn scan_file(file: &fs::File, len: u64, mut check: impl FnMut(u64) -> io::Result<bool>) -> io::Result<bool> {
    use std::io::Read;
    if len > 0 && len <= isize::MAX as u64 {
        use std::os::unix::io::AsRawFd;
        // SAFETY: a private read-only mapping of a file we hold open; unmapped below.
        let map = unsafe {
            libc::mmap(std::ptr::null_mut(), len as usize, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0)
        };
        if map != libc::MAP_FAILED {
            // SAFETY: the mapping is `len` readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(map as *const u8, len as usize) };
            let found = scan(bytes, |at| check(at as u64));
            // SAFETY: unmapping what was mapped above; `bytes` is not used afterwards.
            unsafe { libc::munmap(map, len as usize) };
            return found;
        }
    }
    let mut all = Vec::new();
    io::BufReader::new(file).read_to_end(&mut all)?;
    scan(&all, |at| check(at as u64))
}

/// Call `check` at every offset of "GCOL" in `bytes` until it returns true.
fn scan(bytes: &[u8], mut check: impl FnMut(usize) -> io::Result<bool>) -> io::Result<bool> {
    for at in memchr::memmem::find_iter(bytes, b"GCOL") {
        if check(at)? {
            return Ok(true);
        }
    }
    Ok(false)
}
