//! Compressed chunks as HDF5 stores them: byte-shuffled (the shuffle filter) and
//! zlib-deflated (the deflate filter), encoded here in parallel, so that the writer hands
//! them to `H5Dwrite_chunk` as they are (HDF5's own filter pipeline compresses one chunk
//! after the other on one core: most of `finalize()`).
//!
//! An event column is a [`ColumnSource`]: it fills any range of its values, so a chunk is
//! produced straight into a per-worker buffer, shuffled into a second one and deflated;
//! no column is ever materialised whole, which keeps `finalize()`'s peak memory down.
use rayon::prelude::*;

use super::huffman;

/// An `i64` column produced a range at a time.
pub(crate) trait ColumnSource: Sync {
    /// Number of values.
    fn len(&self) -> usize;
    /// Values `at..at + out.len()` (within `0..len()`) into `out`.
    fn fill(&self, at: usize, out: &mut [i64]);
}

/// The whole column as a vector (for datasets written without chunks).
pub(crate) fn to_vec(src: &dyn ColumnSource) -> Vec<i64> {
    let mut v = vec![0i64; src.len()];
    src.fill(0, &mut v);
    v
}

/// HDF5's shuffle of one chunk of `i64`: byte `j` of element `i` at `j * values.len() + i`.
/// Eight values at a time as an 8x8 byte matrix transposed in registers ([`transpose8`]),
/// each plane taking eight bytes per store (a byte-by-byte loop would be a tenth of
/// `finalize()`).
pub(crate) fn shuffle_i64(values: &[i64], out: &mut [u8]) {
    let n = values.len();
    assert_eq!(out.len(), n * 8, "a shuffled chunk holds 8 bytes per value");
    #[cfg(target_arch = "x86_64")]
    let done = {
        // SAFETY: SSE2 is part of x86_64; `out` holds 8 * n bytes (asserted above).
        unsafe { shuffle16_sse2(values, out) }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    let whole = done + (n - done) / 8 * 8;
    for (block, eight) in values[done..whole].chunks_exact(8).enumerate() {
        let block = done / 8 + block;
        let mut rows: [u64; 8] = std::array::from_fn(|i| eight[i] as u64);
        transpose8(&mut rows);
        for (j, plane) in rows.iter().enumerate() {
            let at = j * n + block * 8;
            out[at..at + 8].copy_from_slice(&plane.to_le_bytes());
        }
    }
    for (i, &v) in values.iter().enumerate().skip(whole) {
        for j in 0..8 {
            out[j * n + i] = (v >> (8 * j)) as u8;
        }
    }
}

/// [`shuffle_i64`] of the first `values.len() / 16 * 16` values, sixteen at a time: the
/// 16x8 byte matrix transposed with SSE2 unpacks (bytes, then 16-, 32- and 64-bit lanes).
/// Returns how many values it shuffled.
///
/// # Safety
/// `out.len() == 8 * values.len()`.
#[cfg(target_arch = "x86_64")]
unsafe fn shuffle16_sse2(values: &[i64], out: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let n = values.len();
    let whole = n / 16 * 16;
    let src = values.as_ptr().cast::<__m128i>();
    let dst = out.as_mut_ptr();
    for base in (0..whole).step_by(16) {
        // t[k]: word j = byte j of values base+2k and base+2k+1
        let t: [__m128i; 8] = std::array::from_fn(|k| {
            let r = _mm_loadu_si128(src.add(base / 2 + k));
            _mm_unpacklo_epi8(r, _mm_shuffle_epi32::<0x4e>(r))
        });
        let u: [__m128i; 8] = std::array::from_fn(|k| {
            let (a, b) = (t[k / 2 * 2], t[k / 2 * 2 + 1]);
            if k % 2 == 0 {
                _mm_unpacklo_epi16(a, b)
            } else {
                _mm_unpackhi_epi16(a, b)
            }
        });
        // w[k] (k < 4 from u0..u3, else u4..u7): words 2(k%4) and 2(k%4)+1 of four t's
        let w: [__m128i; 8] = std::array::from_fn(|k| {
            let g = k / 4 * 4;
            let (a, b) = (u[g + (k % 4) / 2], u[g + (k % 4) / 2 + 2]);
            if k % 2 == 0 {
                _mm_unpacklo_epi32(a, b)
            } else {
                _mm_unpackhi_epi32(a, b)
            }
        });
        for j in 0..8 {
            let (a, b) = (w[j / 2], w[j / 2 + 4]);
            let plane = if j % 2 == 0 { _mm_unpacklo_epi64(a, b) } else { _mm_unpackhi_epi64(a, b) };
            _mm_storeu_si128(dst.add(j * n + base).cast::<__m128i>(), plane);
        }
    }
    whole
}

/// Transpose the 8x8 byte matrix whose row `i` is `rows[i]` (byte `c` = column `c`, little
/// endian): afterwards byte `i` of `rows[c]` is what byte `c` of `rows[i]` was. Three rounds
/// swap the off-diagonal 4x4, 2x2 and 1x1 blocks.
fn transpose8(rows: &mut [u64; 8]) {
    for (s, low) in [(4, 0x0000_0000_ffff_ffff_u64), (2, 0x0000_ffff_0000_ffff), (1, 0x00ff_00ff_00ff_00ff)] {
        let shift = 8 * s as u32;
        for i in (0..8).filter(|i| i & s == 0) {
            let (a, b) = (rows[i], rows[i + s]);
            rows[i] = (a & low) | ((b & low) << shift);
            rows[i + s] = ((a >> shift) & low) | (b & !low);
        }
    }
}

/// HDF5's shuffle of `chunk` elements of `size` bytes from `raw` (shorter for the last
/// chunk of a dataset: the rest stays zero, as HDF5 stores edge chunks whole).
pub(crate) fn shuffle_bytes(raw: &[u8], chunk: usize, size: usize) -> Vec<u8> {
    let mut shuffled = vec![0u8; chunk * size];
    for (i, element) in raw.chunks_exact(size).enumerate() {
        for (j, &b) in element.iter().enumerate() {
            shuffled[j * chunk + i] = b;
        }
    }
    shuffled
}

/// A zlib stream of `bytes` at `level` (what HDF5's deflate filter stores), with a reused
/// compressor.
fn deflate_with(z: &mut flate2::Compress, bytes: &[u8]) -> Vec<u8> {
    z.reset();
    let mut out = Vec::with_capacity(bytes.len() / 4 + 64);
    loop {
        let status = z.compress_vec(&bytes[z.total_in() as usize..], &mut out, flate2::FlushCompress::Finish);
        match status {
            Ok(flate2::Status::StreamEnd) => return out,
            Ok(_) => out.reserve(out.capacity().max(4096)),
            // compressing from memory into a growing vector cannot fail
            Err(e) => unreachable!("deflate into memory: {e}"),
        }
    }
}

/// A zlib stream of `bytes` at `level`.
pub(crate) fn deflate(bytes: &[u8], level: u8) -> Vec<u8> {
    deflate_with(&mut flate2::Compress::new(flate2::Compression::new(level.into()), true), bytes)
}

/// Sampled bytes per plane ([`plane_kind`]).
const SAMPLE_STEP: usize = 64;

/// How a shuffled byte plane goes into its chunk's stream ([`plane_kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PlaneKind {
    /// Close to random (the low bytes of timestamps): stored blocks. deflate would spend
    /// most of a chunk's time on it to save little.
    Stored,
    /// Dense small values without repeats (the low bytes of start deltas and durations):
    /// one block of Huffman-coded literals ([`huffman::literal_block`]) made from the
    /// plane's histogram, about as small as deflate's level 1 makes it at a tenth of the time.
    Literals(Box<[u32; 256]>),
    /// The rest (high bytes, counters, constants): deflated.
    Deflated,
}

/// Sampled-entropy bits per step from which a plane may be coded as literals
/// ([`PlaneKind::Literals`]; ids counting up have spread bytes but one step, which deflate
/// packs to nothing).
const SAMPLED_MIN_STEP_BITS: f64 = 0.7;

/// Share of sampled bytes equal to their successor up to which a plane may be coded as
/// literals (beyond, runs: deflate packs them to a fraction of a bit per byte).
const SAMPLED_MAX_SAME: f64 = 0.85;

/// Entropy of a plane's bytes (bits per byte, from its whole histogram) from which it is
/// coded as literals: a Huffman code takes at least one bit per byte, deflate less on a
/// plane of mostly one value. Measured on the time columns of 1M calls, literal
/// blocks from 0.7 bits on were within ~15 % of level 1's size, mostly smaller, at a
/// quarter of its time or less.
const LITERAL_MIN_BITS: f64 = 0.7;

/// Entropy in bits per item of `counts` (of `n` items in all).
fn entropy(counts: &[u32; 256], n: u32) -> f64 {
    counts.iter().filter(|&&c| c > 0).map(|&c| c as f64 / n as f64).map(|p| -p * p.log2()).sum()
}

/// The [`PlaneKind`] of a plane, estimated from every [`SAMPLE_STEP`]th byte and its
/// successor: the entropy of the bytes and of their steps (a counter's low byte takes every
/// value, yet deflate packs it to nothing). Over 7 bits each: [`PlaneKind::Stored`]. Steps
/// of over [`SAMPLED_MIN_STEP_BITS`], at most [`SAMPLED_MAX_SAME`] of them zero, and
/// [`LITERAL_MIN_BITS`] over the whole plane: [`PlaneKind::Literals`].
fn plane_kind(plane: &[u8]) -> PlaneKind {
    let (mut values, mut steps) = ([0u32; 256], [0u32; 256]);
    let mut n = 0u32;
    for pair in plane.chunks_exact(SAMPLE_STEP) {
        values[pair[0] as usize] += 1;
        steps[pair[1].wrapping_sub(pair[0]) as usize] += 1;
        n += 1;
    }
    if n < 256 {
        return PlaneKind::Deflated;
    }
    let (v, s) = (entropy(&values, n), entropy(&steps, n));
    // a sample of 1024 (a 64 KiB plane) from 256 equally likely values estimates ~7.8 bits
    if v > 7.0 && s > 7.0 {
        return PlaneKind::Stored;
    }
    if s > SAMPLED_MIN_STEP_BITS && (steps[0] as f64) <= SAMPLED_MAX_SAME * n as f64 {
        let hist = histogram(plane);
        if entropy(&hist, plane.len() as u32) >= LITERAL_MIN_BITS {
            return PlaneKind::Literals(Box::new(hist));
        }
    }
    PlaneKind::Deflated
}

/// Whether a plane is stored as it is ([`PlaneKind::Stored`]).
#[cfg(test)]
fn plane_is_noise(plane: &[u8]) -> bool {
    plane_kind(plane) == PlaneKind::Stored
}

/// How often each byte occurs in `bytes` (four tables interleaved: no store waits on the
/// previous one to the same counter).
fn histogram(bytes: &[u8]) -> [u32; 256] {
    let mut h = [[0u32; 256]; 4];
    let mut quads = bytes.chunks_exact(4);
    for q in &mut quads {
        for k in 0..4 {
            h[k][q[k] as usize] += 1;
        }
    }
    for &b in quads.remainder() {
        h[0][b as usize] += 1;
    }
    std::array::from_fn(|b| h[0][b] + h[1][b] + h[2][b] + h[3][b])
}

/// A deflated stream being built, in a buffer kept from chunk to chunk: its bytes were
/// zeroed once, when it grew, so deflating into it touches no fresh page (flate2's
/// `compress_vec` zeroes a vector's whole spare capacity on every call; into a new
/// vector per chunk that would be most of the page faults of `finalize()`).
#[derive(Default)]
struct Sink {
    buf: Vec<u8>,
    len: usize,
}

impl Sink {
    fn clear(&mut self) {
        self.len = 0;
    }
    /// The unwritten rest of the buffer, at least `at_least` bytes (grown, doubling).
    fn spare(&mut self, at_least: usize) -> &mut [u8] {
        if self.buf.len() - self.len < at_least {
            let n = (self.buf.len() * 2).max(self.len + at_least);
            self.buf.resize(n, 0);
        }
        &mut self.buf[self.len..]
    }
    /// Count `n` more bytes of [`Sink::spare`] as written.
    fn advance(&mut self, n: usize) {
        self.len += n;
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.spare(bytes.len())[..bytes.len()].copy_from_slice(bytes);
        self.advance(bytes.len());
    }
    fn push(&mut self, byte: u8) {
        self.extend(&[byte]);
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Feed `input` to `z` with `flush` into `out`, growing it until all of it is in and, for a
/// flush, the flush had room to complete (`Finish`: until the stream end).
fn feed(z: &mut flate2::Compress, input: &[u8], out: &mut Sink, flush: flate2::FlushCompress) {
    let start = z.total_in();
    loop {
        let at = (z.total_in() - start) as usize;
        let before = z.total_out();
        let spare = out.spare(4096);
        let room = spare.len();
        let status = z.compress(&input[at..], spare, flush);
        let wrote = (z.total_out() - before) as usize;
        out.advance(wrote);
        match status {
            Ok(flate2::Status::StreamEnd) => return,
            Ok(_) if flush == flate2::FlushCompress::Finish => {}
            // all input in and room left: nothing more pending for this flush
            Ok(_) if z.total_in() - start == input.len() as u64 && wrote < room => return,
            Ok(_) => {}
            // compressing from memory into a buffer with room cannot fail
            Err(e) => unreachable!("deflate into memory: {e}"),
        }
    }
}

/// A zlib stream of a shuffled chunk made plane by plane ([`plane_kind`]): planes that are
/// close to random as stored blocks, dense ones as a block of Huffman-coded literals, the
/// others deflated at `level` by one raw deflate stream (`z`), flushed in full
/// (byte-aligned, no match reaching back across it) only where a stored or literal plane
/// follows deflated ones, then its final block (or an empty final stored block) and the
/// Adler-32 of the whole chunk. Any zlib decoder (HDF5's deflate filter) reads it as one
/// stream.
fn deflate_planes(z: &mut flate2::Compress, bytes: &[u8], plane: usize, out: &mut Sink) -> Vec<u8> {
    z.reset();
    out.clear();
    out.extend(&[0x78, 0x01]); // zlib header: deflate, 32 KiB window, fastest
    let mut fed = false; // `z` has input since its start or last full flush
    for p in bytes.chunks(plane.max(1)) {
        let kind = plane_kind(p);
        if kind == PlaneKind::Deflated {
            feed(z, p, out, flate2::FlushCompress::None);
            fed = true;
            continue;
        }
        if fed {
            feed(z, &[], out, flate2::FlushCompress::Full);
            fed = false;
        }
        if let PlaneKind::Literals(hist) = &kind {
            let n = huffman::literal_block(p, hist, out.spare(huffman::bound(p.len())));
            out.advance(n);
            continue;
        }
        for block in p.chunks(u16::MAX as usize) {
            let len = block.len() as u16;
            out.push(0); // not final, stored (byte-aligned: at the start or after a full flush)
            out.extend(&len.to_le_bytes());
            out.extend(&(!len).to_le_bytes());
            out.extend(block);
        }
    }
    if fed {
        feed(z, &[], out, flate2::FlushCompress::Finish); // its last block is final
    } else {
        out.extend(&[0x01, 0x00, 0x00, 0xff, 0xff]); // final empty stored block
    }
    let mut adler = simd_adler32::Adler32::new();
    adler.write(bytes);
    out.extend(&adler.finish().to_be_bytes());
    out.bytes().to_vec()
}

/// What one thread encoding chunks reuses from chunk to chunk and column to column: a
/// chunk of values, its shuffled bytes, the stream being deflated and the compressor
/// (made afresh per job, their first-touched pages would cost ~10 ns per call in
/// `finalize()`).
struct Worker {
    values: Vec<i64>,
    bytes: Vec<u8>,
    out: Sink,
    z: flate2::Compress,
    level: u8,
    /// The last chunk of one repeated value it stored: (value, chunk length, stored bytes).
    /// A column of one value (the thread id of a one-thread run, -1 task ids, 0 await) is
    /// then deflated once per worker rather than once per chunk.
    constant: Option<(i64, usize, Vec<u8>)>,
}

impl Worker {
    fn new(chunk: usize, level: u8) -> Self {
        Worker {
            values: vec![0; chunk],
            bytes: vec![0; chunk * 8],
            out: Sink::default(),
            z: flate2::Compress::new(flate2::Compression::new(level.into()), false),
            level,
            constant: None,
        }
    }
    /// Ready for chunks of `chunk` values deflated at `level`.
    fn fit(&mut self, chunk: usize, level: u8) {
        self.values.resize(chunk, 0);
        self.bytes.resize(chunk * 8, 0);
        if self.level != level {
            self.z = flate2::Compress::new(flate2::Compression::new(level.into()), false);
            self.level = level;
            self.constant = None;
        }
    }
    /// Stored chunk `k` of `src`.
    fn encode(&mut self, src: &dyn ColumnSource, chunk: usize, k: usize) -> Vec<u8> {
        let at = k * chunk;
        let len = chunk.min(src.len() - at);
        src.fill(at, &mut self.values[..len]);
        self.values[len..chunk].fill(0);
        let first = self.values[0];
        let repeated = self.values[..chunk].iter().all(|&v| v == first);
        if let Some((value, n, stored)) = &self.constant {
            if repeated && (*value, *n) == (first, chunk) {
                return stored.clone();
            }
        }
        shuffle_i64(&self.values[..chunk], &mut self.bytes[..chunk * 8]);
        let stored = deflate_planes(&mut self.z, &self.bytes[..chunk * 8], chunk, &mut self.out);
        if repeated {
            self.constant = Some((first, chunk, stored.clone()));
        }
        stored
    }
}

/// One [`Worker`] per thread of the pool, made on first use and kept for one write (one
/// `Workers` per file written; dropped with it).
#[derive(Default)]
pub(crate) struct Workers(std::sync::OnceLock<Vec<std::sync::Mutex<Option<Worker>>>>);

impl Workers {
    /// Chunk `k` of `src`, on the calling pool thread's worker.
    fn encode(&self, src: &dyn ColumnSource, chunk: usize, level: u8, k: usize) -> Vec<u8> {
        let slots =
            self.0.get_or_init(|| (0..rayon::current_num_threads().max(1)).map(|_| Default::default()).collect());
        let i = rayon::current_thread_index().unwrap_or(0) % slots.len();
        // each pool thread has its own slot: never contended, poisoned only by a panic there
        let mut slot = slots[i].lock().unwrap_or_else(|e| e.into_inner());
        let worker = slot.get_or_insert_with(|| Worker::new(chunk, level));
        worker.fit(chunk, level);
        worker.encode(src, chunk, k)
    }
}

/// Every stored chunk (shuffled, then deflated at `level` plane by plane,
/// [`deflate_planes`]) of `src` in chunks of `chunk` elements, encoded in parallel on
/// `workers` (their buffers reused); the last is zero-padded to `chunk` elements.
pub(crate) fn encode_i64_chunks(src: &dyn ColumnSource, chunk: usize, level: u8, workers: &Workers) -> Vec<Vec<u8>> {
    let n = src.len();
    // on this process's pool, safe across fork() (`analysis::pool`), as every parallel job
    scope_profiler_analysis::pool::install(|| {
        (0..n.div_ceil(chunk)).into_par_iter().map(|k| workers.encode(src, chunk, level, k)).collect()
    })
}

/// Values per chunk of a column blob ([`encode_column`]): 512 KiB of `i64`, one chunk of
/// the HDF5 writer's event columns.
const BLOB_CHUNK: usize = 65_536;

/// A column held whole, as a [`ColumnSource`].
struct Slice<'a>(&'a [i64]);

impl ColumnSource for Slice<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn fill(&self, at: usize, out: &mut [i64]) {
        out.copy_from_slice(&self.0[at..at + out.len()]);
    }
}

/// `values` as one self-contained blob, compressed as the HDF5 writer stores its event
/// columns: chunks of up to [`BLOB_CHUNK`] values (a shorter column is one chunk of its
/// length), each byte-shuffled and deflated plane by plane at level 1 (in parallel).
/// Layout (little-endian): chunk length `u32`, then per chunk its byte length `u32` and
/// its zlib stream. [`decode_column`] reads it back.
pub fn encode_column(values: &[i64]) -> Vec<u8> {
    let chunk = values.len().clamp(1, BLOB_CHUNK);
    let chunks = encode_i64_chunks(&Slice(values), chunk, 1, &Workers::default());
    let mut out = Vec::with_capacity(4 + chunks.iter().map(|c| c.len() + 4).sum::<usize>());
    out.extend_from_slice(&(chunk as u32).to_le_bytes());
    for c in &chunks {
        out.extend_from_slice(&(c.len() as u32).to_le_bytes());
        out.extend_from_slice(c);
    }
    out
}

/// The `n` values of a blob [`encode_column`] made.
///
/// Errors: the blob is truncated or damaged (a chunk that does not inflate to its size, a
/// length past the end, bytes after the last chunk); the message says which.
pub fn decode_column(blob: &[u8], n: usize) -> Result<Vec<i64>, String> {
    let word = |at: usize| -> Result<usize, String> {
        let b = blob.get(at..at + 4).ok_or("the column is truncated")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let chunk = word(0)?;
    if chunk == 0 || chunk > BLOB_CHUNK {
        return Err(format!("the column claims chunks of {chunk} values"));
    }
    let mut out = Vec::with_capacity(n.min(blob.len().saturating_mul(64)));
    let (mut at, mut bytes) = (4, vec![0u8; chunk * 8]);
    let mut z = flate2::Decompress::new(true);
    while out.len() < n {
        let len = word(at)?;
        let stream = blob.get(at + 4..at + 4 + len).ok_or("the column is truncated")?;
        z.reset(true);
        match z.decompress(stream, &mut bytes, flate2::FlushDecompress::Finish) {
            Ok(flate2::Status::StreamEnd) if z.total_out() as usize == bytes.len() => {}
            _ => return Err(format!("chunk {} of the column is damaged", out.len() / chunk)),
        }
        let take = chunk.min(n - out.len());
        out.extend((0..take).map(|i| {
            let mut v = [0u8; 8];
            for (j, b) in v.iter_mut().enumerate() {
                *b = bytes[j * chunk + i];
            }
            i64::from_le_bytes(v)
        }));
        at += 4 + len;
    }
    if at != blob.len() {
        return Err("the column has bytes after its last chunk".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_blob_decodes_to_its_values() {
        let mut x = 1u64;
        for n in [0usize, 1, 5, 16, 1000, BLOB_CHUNK, BLOB_CHUNK + 3, 3 * BLOB_CHUNK + 100] {
            let values: Vec<i64> = (0..n)
                .map(|i| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (i as i64) * 1000 + (x >> 54) as i64 - 500
                })
                .collect();
            let blob = encode_column(&values);
            assert_eq!(decode_column(&blob, n).unwrap(), values, "{n} values");
            if n > 0 {
                assert!(decode_column(&blob[..blob.len() - 1], n).is_err());
                let mut bad = blob.clone();
                let mid = bad.len() / 2;
                bad[mid] ^= 0x55;
                assert_ne!(decode_column(&bad, n).ok(), Some(values.clone()), "{n}: damage is noticed");
            }
        }
        assert!(decode_column(&[0, 0, 0, 0], 1).is_err());
        // sorted timestamps' steps: about a byte per value
        let steps: Vec<i64> = (0..100_000).map(|i| 1500 + (i * 7919) % 97).collect();
        assert!(encode_column(&steps).len() < 150_000, "{}", encode_column(&steps).len());
    }

    /// A column held whole.
    struct Values(Vec<i64>);
    impl ColumnSource for Values {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn fill(&self, at: usize, out: &mut [i64]) {
            out.copy_from_slice(&self.0[at..at + out.len()]);
        }
    }

    struct Ramp(usize);
    impl ColumnSource for Ramp {
        fn len(&self) -> usize {
            self.0
        }
        fn fill(&self, at: usize, out: &mut [i64]) {
            for (k, o) in out.iter_mut().enumerate() {
                *o = ((at + k) as i64 * 7919) ^ ((at + k) as i64) << 40;
            }
        }
    }

    fn inflate(z: &[u8]) -> Vec<u8> {
        use std::io::Read as _;
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(z).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn i64_shuffle_is_the_byte_shuffle() {
        // blocks of sixteen, of eight, a tail, fewer than eight
        for n in [1000, 1003, 1016, 1024, 24, 5, 0] {
            let values: Vec<i64> = (0..n).map(|i| i * 0x0102_0304_0506_0709 - 77).collect();
            let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut out = vec![0u8; n as usize * 8];
            shuffle_i64(&values, &mut out);
            assert_eq!(out, shuffle_bytes(&raw, n as usize, 8), "{n} values");
        }
    }

    #[test]
    fn chunks_decode_to_the_padded_shuffled_values() {
        let src = Ramp(2500);
        let chunks = encode_i64_chunks(&src, 1024, 1, &Workers::default());
        assert_eq!(chunks.len(), 3);
        let all = to_vec(&src);
        for (k, c) in chunks.iter().enumerate() {
            let mut values = all[k * 1024..((k + 1) * 1024).min(2500)].to_vec();
            values.resize(1024, 0);
            let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(inflate(c), shuffle_bytes(&raw, 1024, 8), "chunk {k}");
        }
        assert_eq!(inflate(&deflate(b"abcabcabc", 4)), b"abcabcabc");
    }

    /// One write's workers, reused by columns of other chunk sizes, encode each
    /// as fresh ones would (buffers resized, nothing of an earlier chunk left in a later one).
    #[test]
    fn reused_workers_encode_columns_of_any_chunk_size() {
        let workers = Workers::default();
        for (len, chunk) in [(2500, 1024), (70_000, 65_536), (2500, 1024), (100, 64)] {
            let src = Ramp(len);
            let reused = encode_i64_chunks(&src, chunk, 1, &workers);
            assert_eq!(reused, encode_i64_chunks(&src, chunk, 1, &Workers::default()), "{len} in {chunk}");
            let all = to_vec(&src);
            for (k, c) in reused.iter().enumerate() {
                let mut values = all[k * chunk..((k + 1) * chunk).min(len)].to_vec();
                values.resize(chunk, 0);
                let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                assert_eq!(inflate(c), shuffle_bytes(&raw, chunk, 8), "{len} in {chunk}: chunk {k}");
            }
        }
    }

    /// A column of one value (a one-thread run's thread ids) is deflated once per
    /// worker and its stored chunk reused; every chunk still decodes to its values, the
    /// padded last one included, and a column that changes value is encoded afresh.
    #[test]
    fn chunks_of_one_repeated_value_are_reused_and_decode() {
        let workers = Workers::default();
        let chunk = 1024;
        let mut changes = vec![7i64; 3 * chunk];
        changes[2 * chunk + 5] = 8;
        for values in [vec![7i64; 5 * chunk + 10], vec![0; 4 * chunk + 1], vec![-1; 3 * chunk], changes] {
            let col = Values(values.clone());
            let stored = encode_i64_chunks(&col, chunk, 1, &workers);
            for (k, c) in stored.iter().enumerate() {
                let mut want = values[k * chunk..((k + 1) * chunk).min(values.len())].to_vec();
                want.resize(chunk, 0);
                let raw: Vec<u8> = want.iter().flat_map(|v| v.to_le_bytes()).collect();
                assert_eq!(inflate(c), shuffle_bytes(&raw, chunk, 8), "chunk {k} of {:?}", &values[..2]);
            }
        }
    }

    /// Random low bytes go into stored blocks, the rest deflated; one stream.
    #[test]
    fn noisy_planes_are_stored_and_decode() {
        let mut x = 88172645463325252u64;
        let noisy: Vec<i64> = (0..70_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (i as i64) << 16 | (x & 0xffff) as i64
            })
            .collect();
        // random second byte after a constant first: a stored plane after a deflated one
        let workers = Workers::default(); // reused across columns, as by a write
        let second: Vec<i64> = noisy.iter().map(|v| (v & 0xff00) | 7).collect();
        let chunks = encode_i64_chunks(&Values(second.clone()), 65_536, 1, &workers);
        let raw: Vec<u8> = second[..65_536].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(inflate(&chunks[0]), shuffle_bytes(&raw, 65_536, 8));
        assert!(chunks[0].len() > 65_536 && chunks[0].len() < 65_536 + 4096, "{}", chunks[0].len());
        let chunks = encode_i64_chunks(&Values(noisy.clone()), 65_536, 1, &workers);
        for (k, c) in chunks.iter().enumerate() {
            let mut values = noisy[k * 65_536..((k + 1) * 65_536).min(noisy.len())].to_vec();
            values.resize(65_536, 0);
            let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let shuffled = shuffle_bytes(&raw, 65_536, 8);
            if k == 0 {
                assert!(plane_is_noise(&shuffled[..65_536]) && !plane_is_noise(&shuffled[7 * 65_536..]));
            }
            assert_eq!(inflate(c), shuffled, "chunk {k}");
        }
        // the two random planes stored (a little over their size), the counter's deflated
        assert!(chunks[0].len() > 2 * 65_536 && chunks[0].len() < 2 * 65_536 + 8192, "{}", chunks[0].len());
    }
}
