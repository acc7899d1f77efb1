//! A deflate block of literals only (RFC 1951 §3.2.7, dynamic Huffman codes, no
//! back-references), Huffman-coded with a code made for its bytes.
//!
//! For a shuffled byte plane of dense small values (the low byte of start deltas and
//! durations, a few hundred ns apart: 3-6 bits of entropy per byte, short and frequent LZ
//! matches), entropy coding alone packs as well as deflate level 1 (within a few percent, often
//! smaller) at a tenth of its time (deflating these planes would be the largest single part
//! of `finalize()`). Any inflater (HDF5's deflate filter, zlib) decodes the block as part
//! of its stream.

/// Longest literal/length code (deflate's limit).
const MAX_CODE_BITS: u32 = 15;
/// Longest code of the code-length alphabet (deflate's limit).
const MAX_CL_BITS: u32 = 7;
/// The order in which the code-length alphabet's code lengths are stored.
const CL_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
/// End-of-block symbol.
const EOB: usize = 256;

/// Bytes a block of `n` literals takes at most (15-bit codes, header, the aligning empty
/// stored block and a spare word for the 8-byte stores).
pub(crate) fn bound(n: usize) -> usize {
    n * MAX_CODE_BITS as usize / 8 + 512
}

/// Bits appended LSB first into `out` (which has room for all of them plus 8 bytes: words
/// are stored whole).
struct Bits<'a> {
    out: &'a mut [u8],
    at: usize,
    acc: u64,
    n: u32,
}

impl Bits<'_> {
    /// Append the low `len` bits of `v` (`len <= 32`, no higher bits set).
    #[inline(always)]
    fn put(&mut self, v: u32, len: u32) {
        self.acc |= (v as u64) << self.n;
        self.n += len;
        if self.n >= 32 {
            self.flush();
        }
    }
    /// Store the whole bytes held (at most 7 bits remain).
    #[inline(always)]
    fn flush(&mut self) {
        self.out[self.at..self.at + 8].copy_from_slice(&self.acc.to_le_bytes());
        let bytes = self.n / 8;
        self.at += bytes as usize;
        self.acc = if bytes == 8 { 0 } else { self.acc >> (8 * bytes) };
        self.n -= 8 * bytes;
    }
    /// Pad to a byte boundary with zero bits and store what is held; the bytes written.
    fn finish(mut self) -> usize {
        self.n = self.n.div_ceil(8) * 8;
        self.flush();
        self.at
    }
}

/// Optimal code lengths for the sorted frequencies `a` (ascending, none zero), in place:
/// `a[i]` becomes the code length of the `i`th (Moffat and Katajainen's in-place algorithm,
/// as zlib's and miniz's encoders use). Lengths are unbounded here.
fn minimum_redundancy(a: &mut [u32]) {
    let n = a.len();
    if n == 0 {
        return;
    }
    if n == 1 {
        a[0] = 1;
        return;
    }
    a[0] += a[1];
    let (mut root, mut leaf) = (0usize, 2usize);
    for next in 1..n - 1 {
        if leaf >= n || a[root] < a[leaf] {
            a[next] = a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] = a[leaf];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[root] < a[leaf]) {
            a[next] += a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] += a[leaf];
            leaf += 1;
        }
    }
    a[n - 2] = 0;
    for next in (0..n.saturating_sub(2)).rev() {
        a[next] = a[a[next] as usize] + 1;
    }
    let (mut avbl, mut used, mut depth) = (1usize, 0usize, 0u32);
    let (mut root, mut next) = (n as isize - 2, n as isize - 1);
    while avbl > 0 {
        while root >= 0 && a[root as usize] == depth {
            used += 1;
            root -= 1;
        }
        while avbl > used {
            a[next as usize] = depth;
            next -= 1;
            avbl -= 1;
        }
        avbl = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Code lengths (at most `limit` bits, 0 for an unused symbol) of a complete prefix code for
/// `freq`: optimal ones, lengthened where over `limit` (the Kraft sum rebalanced as zlib
/// does). Fewer than two used symbols get companions of frequency 1 (a complete code needs
/// two; inflaters refuse an incomplete code-length code), so `freq` must have two symbols.
fn code_lengths(freq: &[u32], limit: u32) -> Vec<u8> {
    let mut syms: Vec<(u32, usize)> = freq.iter().enumerate().filter(|(_, &f)| f > 0).map(|(s, &f)| (f, s)).collect();
    for (s, _) in freq.iter().enumerate().filter(|(_, &f)| f == 0) {
        if syms.len() >= 2 {
            break;
        }
        syms.push((1, s));
    }
    syms.sort_unstable();
    let mut lens: Vec<u32> = syms.iter().map(|&(f, _)| f).collect();
    minimum_redundancy(&mut lens);
    // codes per length, the overlong moved to `limit`, then the Kraft sum made exact again
    let mut count = [0u32; 64];
    for &l in &lens {
        count[(l as usize).min(63)] += 1;
    }
    let limit = limit as usize;
    for l in limit + 1..64 {
        count[limit] += count[l];
        count[l] = 0;
    }
    let mut kraft: u64 = (1..=limit).map(|l| (count[l] as u64) << (limit - l)).sum();
    while kraft > 1u64 << limit {
        count[limit] -= 1;
        for l in (1..limit).rev() {
            if count[l] > 0 {
                count[l] -= 1;
                count[l + 1] += 2;
                break;
            }
        }
        kraft -= 1;
    }
    // the shortest codes to the most frequent symbols
    let mut out = vec![0u8; freq.len()];
    let mut j = syms.len();
    for (l, &c) in count.iter().enumerate().take(limit + 1).skip(1) {
        for _ in 0..c {
            j -= 1;
            out[syms[j].1] = l as u8;
        }
    }
    out
}

/// Canonical codes of `lens` (RFC 1951 §3.2.2), bit-reversed for LSB-first output.
fn canonical_codes(lens: &[u8]) -> Vec<u32> {
    let mut count = [0u32; 16];
    for &l in lens {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0u32;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            c.reverse_bits() >> (32 - l as u32)
        })
        .collect()
}

/// The code-length sequence `lens` as code-length symbols: `(symbol, extra bits value, extra
/// bits)`, runs of zeros as 17/18, repeats of a length as 16.
fn length_symbols(lens: &[u8], out: &mut Vec<(u8, u8, u8)>) {
    let mut i = 0;
    while i < lens.len() {
        let v = lens[i];
        let mut run = lens[i..].iter().take_while(|&&l| l == v).count();
        i += run;
        if v == 0 {
            while run >= 11 {
                let m = run.min(138);
                out.push((18, (m - 11) as u8, 7));
                run -= m;
            }
            if run >= 3 {
                out.push((17, (run - 3) as u8, 3));
                run = 0;
            }
        } else {
            out.push((v, 0, 0));
            run -= 1;
            while run >= 3 {
                let m = run.min(6);
                out.push((16, (m - 3) as u8, 2));
                run -= m;
            }
        }
        out.extend(std::iter::repeat_n((v, 0, 0), run));
    }
}

/// Write `bytes` into `out` as one non-final deflate block of literals with a dynamic Huffman
/// code from `hist` (`hist[b]`: how often byte `b` occurs in `bytes`), followed by an empty
/// stored block so that the stream is byte-aligned after it (what a zlib full flush
/// leaves). `out` must hold [`bound`]`(bytes.len())` bytes. Returns the bytes written.
pub(crate) fn literal_block(bytes: &[u8], hist: &[u32; 256], out: &mut [u8]) -> usize {
    assert!(out.len() >= bound(bytes.len()), "room for a literal block");
    let mut freq = [0u32; 257];
    freq[..256].copy_from_slice(hist);
    freq[EOB] = 1;
    let lit_lens = code_lengths(&freq, MAX_CODE_BITS);
    let lit_codes = canonical_codes(&lit_lens);
    // two distance codes of one bit, never used (zlib's encoder does the same for a block
    // without matches: some inflaters want a distance code)
    let dist_lens = [1u8, 1];
    let mut symbols = Vec::with_capacity(64);
    length_symbols(&lit_lens, &mut symbols);
    length_symbols(&dist_lens, &mut symbols);
    let mut cl_freq = [0u32; 19];
    for &(s, _, _) in &symbols {
        cl_freq[s as usize] += 1;
    }
    let cl_lens = code_lengths(&cl_freq, MAX_CL_BITS);
    let cl_codes = canonical_codes(&cl_lens);
    let hclen = CL_ORDER.iter().rposition(|&s| cl_lens[s] > 0).map_or(4, |p| (p + 1).max(4));

    let mut w = Bits { out, at: 0, acc: 0, n: 0 };
    w.put(0b100, 3); // not final; BTYPE 2 (dynamic), LSB first
    w.put(0, 5); // HLIT - 257: 257 literal/length codes
    w.put(1, 5); // HDIST - 1: 2 distance codes
    w.put(hclen as u32 - 4, 4);
    for &s in &CL_ORDER[..hclen] {
        w.put(cl_lens[s] as u32, 3);
    }
    for &(s, extra, bits) in &symbols {
        w.put(cl_codes[s as usize], cl_lens[s as usize] as u32);
        if bits > 0 {
            w.put(extra as u32, bits as u32);
        }
    }
    // the literals: a table of (code | length << 16) per byte
    let table: [u32; 256] = std::array::from_fn(|b| lit_codes[b] | (lit_lens[b] as u32) << 16);
    w.flush();
    let mut three = bytes.chunks_exact(3);
    for t in &mut three {
        // three codes of at most 15 bits on top of at most 7 held: within 64 bits
        for &b in t {
            let e = table[b as usize];
            w.acc |= ((e & 0xffff) as u64) << w.n;
            w.n += e >> 16;
        }
        w.flush();
    }
    for &b in three.remainder() {
        let e = table[b as usize];
        w.put(e & 0xffff, e >> 16);
    }
    w.put(lit_codes[EOB], lit_lens[EOB] as u32);
    // an empty stored block: byte-aligned afterwards
    w.put(0, 3);
    let at = w.finish();
    out[at..at + 4].copy_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    at + 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inflate_raw(z: &[u8]) -> Vec<u8> {
        use std::io::Read as _;
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(z).read_to_end(&mut out).unwrap();
        out
    }

    /// A literal block then the final empty stored block: a whole raw deflate stream.
    fn stream(bytes: &[u8]) -> Vec<u8> {
        let mut hist = [0u32; 256];
        for &b in bytes {
            hist[b as usize] += 1;
        }
        let mut out = vec![0u8; bound(bytes.len())];
        let n = literal_block(bytes, &hist, &mut out);
        out.truncate(n);
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
        out
    }

    #[test]
    fn literal_blocks_inflate_to_their_bytes() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let dense: Vec<u8> = (0..70_000).map(|_| (180 + next() % 40) as u8).collect();
        let random: Vec<u8> = (0..5000).map(|_| next() as u8).collect();
        // frequencies 1, 1, 2, 3, 5, 8, ...: optimal lengths far over 15 bits, limited
        let mut skewed = Vec::new();
        let (mut a, mut b) = (1usize, 1usize);
        for s in 0..25u8 {
            skewed.extend(std::iter::repeat_n(s, a));
            (a, b) = (b, a + b);
        }
        for bytes in [dense, random, skewed, vec![7u8; 1000], vec![], vec![0, 255], (0..=255).collect()] {
            let z = stream(&bytes);
            assert_eq!(inflate_raw(&z), bytes, "{} bytes", bytes.len());
        }
    }

    #[test]
    fn dense_bytes_take_about_their_entropy() {
        // four values equally likely: 2 bits each (one of them 3 bits, beside the end of
        // block's code)
        let bytes: Vec<u8> = (0..65_536u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 30) as u8).collect();
        let z = stream(&bytes);
        assert!(z.len() < 65_536 * 2 / 8 * 9 / 8 + 200, "{}", z.len());
    }

    #[test]
    fn code_lengths_are_complete_and_limited() {
        let mut freq = vec![0u32; 257];
        let (mut a, mut b) = (1u32, 1u32);
        for f in freq.iter_mut().take(40) {
            *f = a;
            (a, b) = (b, a.saturating_add(b));
        }
        let lens = code_lengths(&freq, 15);
        assert!(lens.iter().all(|&l| l <= 15));
        let kraft: u64 = lens.iter().filter(|&&l| l > 0).map(|&l| 1u64 << (15 - l)).sum();
        assert_eq!(kraft, 1 << 15);
        // one used symbol gets a companion: two codes of one bit
        let mut one = [0u32; 19];
        one[5] = 9;
        let lens = code_lengths(&one, 7);
        assert_eq!(lens.iter().filter(|&&l| l == 1).count(), 2);
    }
}
