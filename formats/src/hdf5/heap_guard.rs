//! A guard against one kind of damaged global heap on which HDF5's parser loops forever.
use std::fs;
use std::io;
use std::path::Path;

/// Whether a global heap collection ("GCOL", where HDF5 keeps variable-length strings) in
/// the file is damaged in the one way that makes HDF5's own parser loop forever instead of
/// failing (`H5HG__cache_heap_deserialize`: an object 0 of size 0 never advances the cursor).
/// Such a file must be refused before HDF5 touches its strings. Scans the file once.
pub(crate) fn global_heap_would_hang(path: &Path) -> io::Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    const HDR: usize = 16; // magic 4 + version 1 + reserved 3 + size 8 (8-byte lengths)
    const OBJHDR: usize = 16; // index 2 + refs 2 + reserved 4 + size 8
    let file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    let check_heap = |at: u64| -> io::Result<bool> {
        let mut head = [0u8; HDR];
        if at + HDR as u64 > len || file.read_at(&mut head, at)? < HDR || head[4] != 1 {
            return Ok(false);
        }
        let size = u64::from_le_bytes(head[8..16].try_into().unwrap());
        if size < HDR as u64 || at.saturating_add(size) > len {
            return Ok(false); // HDF5 fails on this heap (no loop)
        }
        let mut heap = vec![0u8; size as usize];
        file.read_exact_at(&mut heap, at)?;
        let end = heap.len();
        let mut p = HDR;
        while p < end {
            if p + OBJHDR > end {
                break; // trailing free space: HDF5 jumps to the end
            }
            let idx = u16::from_le_bytes([heap[p], heap[p + 1]]);
            let obj = u64::from_le_bytes(heap[p + 8..p + 16].try_into().unwrap());
            let need = if idx > 0 { (OBJHDR as u64).saturating_add(obj.saturating_add(7) / 8 * 8) } else { obj };
            if need == 0 {
                return Ok(true);
            }
            if need > (end - p) as u64 {
                break; // HDF5 reports an overflow
            }
            p += need as usize;
        }
        Ok(false)
    };
    let mut reader = io::BufReader::with_capacity(1 << 20, &file);
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    let mut base: u64 = 0; // file offset of carry[0]
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(false);
        }
        carry.extend_from_slice(&buf[..n]);
        let mut i = 0;
        while let Some(off) = carry[i..].iter().position(|&b| b == b'G') {
            let at = i + off;
            if at + 4 > carry.len() {
                break;
            }
            if &carry[at..at + 4] == b"GCOL" && check_heap(base + at as u64)? {
                return Ok(true);
            }
            i = at + 1;
        }
        let keep = carry.len().min(3);
        let drop_n = carry.len() - keep;
        carry.drain(..drop_n);
        base += drop_n as u64;
    }
}
