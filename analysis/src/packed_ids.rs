//! Call-id and parent-id columns kept bit-packed in memory.
//!
//! A loaded run rarely needs its stored call graph ids (the reconstruction recomputes the
//! nesting; the ids are read for `Region.call_ids`, frames and re-writes), yet as `i64` they
//! are two of a run's four per-call columns. Stored ids move in small steps (sorted positions,
//! per thread in entry order), so they are kept as zigzag-encoded deltas, bit-packed in blocks
//! of 128 (`bitpacking`'s SIMD `BitPacker4x`), with each block's first value stored whole so
//! any range decodes on its own: 0.5-2 bytes per id instead of 8. [`IdColumn`] is what a
//! [`crate::RegionCalls`] holds: plain Arrow values, or its slice of a packed column shared by
//! all rows (cloning or moving rows between runs keeps the data). Values come back exactly
//! ([`IdColumn::to_array`]).
use std::sync::Arc;

use arrow_array::Int64Array;
use bitpacking::{BitPacker, BitPacker4x};

const BLOCK: usize = BitPacker4x::BLOCK_LEN;

/// An `i64` column bit-packed in blocks (see the module documentation).
#[derive(Debug)]
pub struct PackedColumn {
    len: usize,
    /// First value of each block.
    first: Vec<i64>,
    /// Bits per packed delta, per block.
    bits: Vec<u8>,
    /// Byte offset of each block in `data` (plus the end).
    offsets: Vec<usize>,
    data: Vec<u8>,
}

#[inline]
fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

#[inline]
fn unzigzag(z: u32) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

impl PackedColumn {
    /// Pack `values`; `None` when a step between neighbours does not fit 32 bits once
    /// zigzag-encoded (keep such a column plain).
    pub fn pack(values: &[i64]) -> Option<PackedColumn> {
        let blocks = values.len().div_ceil(BLOCK);
        let mut col = PackedColumn {
            len: 0,
            first: Vec::with_capacity(blocks),
            bits: Vec::with_capacity(blocks),
            offsets: Vec::with_capacity(blocks + 1),
            data: Vec::new(),
        };
        for block in values.chunks(BLOCK) {
            col.push_block(block)?;
        }
        Some(col.finish())
    }

    /// Append one block (at most [`BLOCK`] values; only the last block may be shorter).
    /// `None` (nothing appended) when a step does not fit 32 bits once zigzag-encoded.
    fn push_block(&mut self, block: &[i64]) -> Option<()> {
        let packer = BitPacker4x::new();
        let mut deltas = [0u32; BLOCK];
        let mut out = [0u8; 4 * BLOCK];
        for i in 1..block.len() {
            let z = zigzag(block[i].wrapping_sub(block[i - 1]));
            deltas[i] = u32::try_from(z).ok()?;
        }
        let bits = packer.num_bits(&deltas);
        let n = packer.compress(&deltas, &mut out, bits);
        self.first.push(block[0]);
        self.bits.push(bits);
        self.offsets.push(self.data.len());
        self.data.extend_from_slice(&out[..n]);
        self.len += block.len();
        Some(())
    }

    /// The column once every block is in: the end offset, no spare capacity.
    fn finish(mut self) -> PackedColumn {
        self.offsets.push(self.data.len());
        self.data.shrink_to_fit();
        self.first.shrink_to_fit();
        self.bits.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held (for reports and tests).
    pub fn heap_bytes(&self) -> usize {
        self.data.len() + self.first.len() * 8 + self.bits.len() + self.offsets.len() * 8
    }

    /// Values `offset..offset + len` (within bounds) appended to `out`.
    fn decode_into(&self, offset: usize, len: usize, out: &mut Vec<i64>) {
        let at = out.len();
        out.resize(at + len, 0);
        self.decode_to(offset, &mut out[at..]);
    }

    /// Values `offset..offset + out.len()` (within bounds) into `out`.
    fn decode_to(&self, offset: usize, out: &mut [i64]) {
        let packer = BitPacker4x::new();
        let mut deltas = [0u32; BLOCK];
        let end = offset + out.len();
        let mut at = offset;
        while at < end {
            let b = at / BLOCK;
            let data = &self.data[self.offsets[b]..self.offsets[b + 1]];
            packer.decompress(data, &mut deltas, self.bits[b]);
            let block_start = b * BLOCK;
            let mut v = self.first[b];
            let stop = end.min(block_start + BLOCK);
            for (i, &d) in deltas.iter().enumerate().take(stop - block_start) {
                if i > 0 {
                    v = v.wrapping_add(unzigzag(d));
                }
                if block_start + i >= at {
                    out[block_start + i - offset] = v;
                }
            }
            at = stop;
        }
    }
}

/// An id column built one value at a time, packed a block at a time (the whole column is
/// never held plain, unless a step does not fit 32 bits: then it is kept plain).
#[derive(Debug, Default)]
pub struct IdColumnBuilder {
    packed: Option<PackedColumn>,
    /// The values of the block being filled, or every value once the column went plain.
    pending: Vec<i64>,
    plain: bool,
}

impl IdColumnBuilder {
    /// An empty column.
    pub fn new() -> Self {
        IdColumnBuilder {
            packed: Some(PackedColumn { len: 0, first: vec![], bits: vec![], offsets: vec![], data: vec![] }),
            pending: Vec::with_capacity(BLOCK),
            plain: false,
        }
    }

    /// Append `v`.
    #[inline]
    pub fn push(&mut self, v: i64) {
        self.pending.push(v);
        if !self.plain && self.pending.len() == BLOCK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let Some(col) = self.packed.as_mut() else { return };
        if self.pending.is_empty() || col.push_block(&self.pending).is_some() {
            self.pending.clear();
            return;
        }
        // a step beyond 32 bits: the whole column plain from here
        let mut all = Vec::with_capacity(col.len + self.pending.len());
        col.offsets.push(col.data.len());
        col.decode_into(0, col.len, &mut all);
        all.append(&mut self.pending);
        self.pending = all;
        self.packed = None;
        self.plain = true;
    }

    /// The column: packed, or plain when it did not pack.
    pub fn finish(mut self) -> IdColumn {
        self.flush();
        match self.packed {
            Some(col) if !self.plain => {
                let len = col.len;
                IdColumn::Packed { column: Arc::new(col.finish()), offset: 0, len }
            }
            _ => IdColumn::Plain(Int64Array::from(self.pending)),
        }
    }
}

/// The call ids or parent ids of one region row: plain values, or the row's slice of a
/// packed column (shared by the rows of a run).
#[derive(Debug, Clone)]
pub enum IdColumn {
    Plain(Int64Array),
    Packed { column: Arc<PackedColumn>, offset: usize, len: usize },
}

impl From<Int64Array> for IdColumn {
    fn from(values: Int64Array) -> Self {
        IdColumn::Plain(values)
    }
}

impl IdColumn {
    /// Number of ids.
    pub fn len(&self) -> usize {
        match self {
            IdColumn::Plain(a) => a.len(),
            IdColumn::Packed { len, .. } => *len,
        }
    }

    /// Whether the row has no ids.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids as an Arrow array (a cheap clone when plain, decoded when packed).
    pub fn to_array(&self) -> Int64Array {
        match self {
            IdColumn::Plain(a) => a.clone(),
            IdColumn::Packed { .. } => Int64Array::from(self.to_vec()),
        }
    }

    /// The ids as a new vector.
    pub fn to_vec(&self) -> Vec<i64> {
        match self {
            IdColumn::Plain(a) => a.values().to_vec(),
            IdColumn::Packed { column, offset, len } => {
                let mut out = Vec::with_capacity(*len);
                column.decode_into(*offset, *len, &mut out);
                out
            }
        }
    }

    /// Ids `at..at + out.len()` (within `0..len()`) into `out`, without decoding the rest.
    pub fn copy_range(&self, at: usize, out: &mut [i64]) {
        match self {
            IdColumn::Plain(a) => out.copy_from_slice(&a.values()[at..at + out.len()]),
            IdColumn::Packed { column, offset, .. } => column.decode_to(offset + at, out),
        }
    }

    /// Whether the ids are held packed.
    pub fn is_packed(&self) -> bool {
        matches!(self, IdColumn::Packed { .. })
    }

    /// The row slices `(offset, len)` of one packed column, or each row's plain slice of
    /// `values` when it does not pack.
    pub fn rows_of(values: &Int64Array, spans: &[(usize, usize)]) -> Vec<IdColumn> {
        match PackedColumn::pack(values.values()) {
            Some(column) => {
                let column = Arc::new(column);
                spans
                    .iter()
                    .map(|&(offset, len)| IdColumn::Packed { column: Arc::clone(&column), offset, len })
                    .collect()
            }
            None => spans.iter().map(|&(offset, len)| IdColumn::Plain(values.slice(offset, len))).collect(),
        }
    }
}

impl PartialEq for IdColumn {
    fn eq(&self, other: &Self) -> bool {
        self.to_array() == other.to_array()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids packed as they come (finalize) equal their values, a step beyond 32
    /// bits keeps the column plain.
    #[test]
    fn builder_packs_as_values_come() {
        for values in [
            (0..1000).map(|i| 5 + 4 * i).collect::<Vec<i64>>(),
            (0..300).map(|i| if i == 200 { 1 << 40 } else { i }).collect(),
            vec![],
            vec![-1; 129],
        ] {
            let mut b = IdColumnBuilder::new();
            for &v in &values {
                b.push(v);
            }
            let col = b.finish();
            assert_eq!(col.to_vec(), values);
            assert_eq!(col.is_packed(), !values.contains(&(1 << 40)), "{}", values.len());
            let mut part = vec![0; values.len().saturating_sub(3)];
            col.copy_range(values.len().min(3), &mut part);
            assert_eq!(part, values[values.len().min(3)..]);
        }
    }

    fn roundtrip(values: &[i64]) {
        let col = PackedColumn::pack(values).expect("packs");
        let mut all = Vec::new();
        col.decode_into(0, values.len(), &mut all);
        assert_eq!(all, values);
        // every sub-range decodes on its own
        for (lo, len) in [(0, 0), (1, 5), (127, 2), (128, 128), (200, values.len().saturating_sub(200))] {
            if lo + len <= values.len() {
                let mut part = Vec::new();
                col.decode_into(lo, len, &mut part);
                assert_eq!(part, &values[lo..lo + len], "{lo}+{len}");
            }
        }
    }

    #[test]
    fn exact_for_steps_of_every_kind() {
        roundtrip(&(0..1000).map(|i| 4 * i).collect::<Vec<_>>());
        roundtrip(&(0..777).map(|i| if i % 3 == 0 { -1 } else { 1_000_000 + i * 7 }).collect::<Vec<_>>());
        roundtrip(&[i64::MAX - 5, i64::MAX - 3, i64::MAX, i64::MAX - 100]);
        roundtrip(&[5]);
        let mut x: u64 = 9;
        let noisy: Vec<i64> = (0..5000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                ((x >> 40) as i64) - (1 << 23)
            })
            .collect();
        roundtrip(&noisy);
    }

    #[test]
    fn steps_beyond_32_bits_stay_plain() {
        assert!(PackedColumn::pack(&[0, 1 << 40, 0]).is_none());
        let values = Int64Array::from(vec![0, 1 << 40, 3, 4]);
        let rows = IdColumn::rows_of(&values, &[(0, 2), (2, 2)]);
        assert!(!rows[0].is_packed());
        assert_eq!(rows[1].to_array(), Int64Array::from(vec![3, 4]));
    }

    #[test]
    fn regular_ids_take_a_fraction_of_their_plain_size() {
        let ids: Vec<i64> = (0..2_000_000).map(|i| 4 * i + 1).collect();
        let col = PackedColumn::pack(&ids).unwrap();
        assert!(col.heap_bytes() * 10 < ids.len() * 8, "{} bytes", col.heap_bytes());
        let rows = IdColumn::rows_of(&Int64Array::from(ids.clone()), &[(0, 1_000_000), (1_000_000, 1_000_000)]);
        assert_eq!(rows[1].to_array().values(), &ids[1_000_000..]);
    }
}
