//! The sorted call order of a reconstruction: start ascending, end descending, then input
//! position (region order, then call order) — `spec-callstack.md` §3 step 3 — produced as
//! the output columns (start, end, region index, call index).
//!
//! Two strategies, both linear-ish and parallel on large inputs:
//! * **k-way merge** when the input is at most [`MERGE_MAX_RUNS`] sorted runs (a recording
//!   of one thread is one run per region): the output is cut into parts at splitter keys
//!   from the longest run (each run's cut found by binary search), the parts merged in
//!   parallel, writing the output columns directly — one pass, no key buffer;
//! * **bucket sort** otherwise: every call becomes a key `(start, region << 32 | call)`
//!   (16 bytes), scattered into buckets by the high bits of `start - min(start)` (a
//!   histogram per input piece gives every piece its own slots, so pieces scatter in
//!   parallel), then each bucket — a few hundred keys, in cache — is sorted on its own,
//!   buckets in parallel; runs of equal start are put in end-descending order. A skewed
//!   start distribution only makes some buckets larger (sorted in parallel themselves).
//!
//! Both are checked against a straightforward stable sort in `tests/callstack.rs`.
use rayon::prelude::*;

use crate::callstack::RegionInput;
use crate::column_memory::{Column, ColumnPtr};

/// A call's sort key: `(start_ns, region << 32 | call)`.
pub(crate) type Key = (i64, u64);

/// Below this many calls everything runs on the calling thread.
pub(crate) const PARALLEL_MIN: usize = 1 << 15;

/// Calls per input piece (the unit of parallel histogram and scatter work).
const PIECE: usize = 1 << 16;

/// Keys per bucket aimed at (the bucket count is a power of two near `n / BUCKET_TARGET`).
const BUCKET_TARGET: usize = 256;

/// Buckets above this size are sorted with the parallel sort.
const BIG_BUCKET: usize = 1 << 17;

/// All calls of `regions` (`n` calls in total, every region's `start_ns`/`end_ns` of equal
/// length, fewer than 2^31 calls) as keys in sorted order.
fn sorted_keys(regions: &[RegionInput<'_>], n: usize) -> Vec<Key> {
    if n < PARALLEL_MIN {
        let mut keys: Vec<Key> = Vec::with_capacity(n);
        for (ri, r) in regions.iter().enumerate() {
            let hi = (ri as u64) << 32;
            keys.extend(r.start_ns.iter().enumerate().map(|(c, &s)| (s, hi | c as u64)));
        }
        sort_bucket(regions, &mut keys);
        return keys;
    }
    bucket_sort(regions, n)
}

/// Sort keys: start ascending, then end descending, then input position.
fn sort_bucket(regions: &[RegionInput<'_>], keys: &mut [Key]) {
    // Stable sorts find the sorted runs a bucket is made of (recorded data: one per region
    // and thread) and merge them; keys are unique, so stable and unstable orders agree.
    if keys.len() > BIG_BUCKET {
        keys.par_sort();
    } else {
        keys.sort();
    }
    // Runs of equal start: end descending, input position on exact ties.
    let end = |k: &Key| regions[(k.1 >> 32) as usize].end_ns[(k.1 & 0xffff_ffff) as usize];
    let mut i = 0;
    while i + 1 < keys.len() {
        if keys[i + 1].0 != keys[i].0 {
            i += 1;
            continue;
        }
        let mut j = i + 2;
        while j < keys.len() && keys[j].0 == keys[i].0 {
            j += 1;
        }
        keys[i..j].sort_unstable_by(|a, b| end(b).cmp(&end(a)).then(a.1.cmp(&b.1)));
        i = j;
    }
}

/// Call `f(region, call)` for the calls at global positions `lo..hi` of the concatenated
/// input (`first[r]` = global position of region `r`'s first call, `first` ascending).
#[inline]
fn for_range(regions: &[RegionInput<'_>], first: &[usize], lo: usize, hi: usize, mut f: impl FnMut(usize, usize)) {
    let mut r = first.partition_point(|&x| x <= lo) - 1;
    let mut at = lo;
    while at < hi {
        let len = regions[r].start_ns.len();
        let end = (first[r] + len).min(hi);
        for g in at..end {
            f(r, g - first[r]);
        }
        at = end;
        r += 1;
    }
}

fn bucket_sort(regions: &[RegionInput<'_>], n: usize) -> Vec<Key> {
    let mut first = Vec::with_capacity(regions.len());
    let mut at = 0usize;
    for r in regions {
        first.push(at);
        at += r.start_ns.len();
    }
    // At most ~128 pieces: the per-piece histograms stay small.
    let piece = PIECE.max(n.div_ceil(128));
    let pieces: Vec<(usize, usize)> = (0..n.div_ceil(piece)).map(|p| (p * piece, ((p + 1) * piece).min(n))).collect();
    let first = &first;
    let (min, max) = pieces
        .par_iter()
        .map(|&(lo, hi)| {
            let (mut a, mut b) = (i64::MAX, i64::MIN);
            for_range(regions, first, lo, hi, |r, c| {
                let x = regions[r].start_ns[c];
                a = a.min(x);
                b = b.max(x);
            });
            (a, b)
        })
        .reduce(|| (i64::MAX, i64::MIN), |a, b| (a.0.min(b.0), a.1.max(b.1)));
    let range = (max as i128 - min as i128) as u64; // 0 ..= 2^64 - 1
    let bucket_bits = (n / BUCKET_TARGET).max(2).ilog2().clamp(4, 14);
    let range_bits = 64 - range.leading_zeros();
    let shift = range_bits.saturating_sub(bucket_bits);
    let num_buckets = 1usize << bucket_bits;
    let bucket = |s: i64| ((s.wrapping_sub(min) as u64) >> shift) as usize;

    // Histogram per piece, turned into each piece's first slot in every bucket (its cursor).
    let mut cursors: Vec<Vec<usize>> = pieces
        .par_iter()
        .map(|&(lo, hi)| {
            let mut c = vec![0usize; num_buckets];
            for_range(regions, first, lo, hi, |r, i| c[bucket(regions[r].start_ns[i])] += 1);
            c
        })
        .collect();
    let mut bucket_start = vec![0usize; num_buckets + 1];
    let mut at = 0usize;
    for b in 0..num_buckets {
        bucket_start[b] = at;
        for c in cursors.iter_mut() {
            let k = c[b];
            c[b] = at;
            at += k;
        }
    }
    bucket_start[num_buckets] = at;
    debug_assert_eq!(at, n);

    let mut keys: Column<Key> = Column::new(n);
    let out = keys.ptr();
    pieces.par_iter().zip(cursors.par_iter_mut()).for_each(|(&(lo, hi), cursor)| {
        for_range(regions, first, lo, hi, |r, c| {
            let s = regions[r].start_ns[c];
            let b = bucket(s);
            let at = cursor[b];
            cursor[b] += 1;
            // SAFETY: `at` is inside this piece's reserved slots of bucket `b` (disjoint
            // from every other piece's, all < n).
            unsafe { out.write(at, (s, (r as u64) << 32 | c as u64)) };
        });
    });
    // SAFETY: the pieces' slots cover 0..n exactly once, all written above.
    let mut keys = unsafe { keys.finish() };

    // Sort every bucket (disjoint sub-slices), buckets in parallel.
    let mut rest: &mut [Key] = &mut keys;
    let mut buckets: Vec<&mut [Key]> = Vec::with_capacity(num_buckets);
    for b in 0..num_buckets {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(bucket_start[b + 1] - bucket_start[b]);
        if head.len() > 1 {
            buckets.push(head);
        }
        rest = tail;
    }
    buckets.into_par_iter().with_min_len(16).for_each(|b| sort_bucket(regions, b));
    keys
}

/// The sorted order as columns: start, end, region index, call index.
pub(crate) struct SortedColumns {
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    pub region: Vec<i32>,
    pub call: Vec<i32>,
}

/// [`SortedColumns`] under construction: allocated, written once at every position by
/// parallel parts (disjoint positions), then finished.
struct SortedBuilder {
    start: Column<i64>,
    end: Column<i64>,
    region: Column<i32>,
    call: Column<i32>,
}

/// Shared write access to a [`SortedBuilder`].
#[derive(Clone, Copy)]
struct SortedPtrs(ColumnPtr<i64>, ColumnPtr<i64>, ColumnPtr<i32>, ColumnPtr<i32>);

impl SortedPtrs {
    /// Position `o`: the call `id = region << 32 | call` with its start and end.
    ///
    /// # Safety
    /// `o < n`, and no other writer writes position `o`.
    #[inline(always)]
    unsafe fn write(self, o: usize, start: i64, end: i64, id: u64) {
        // SAFETY: forwarded to the caller.
        unsafe {
            self.0.write(o, start);
            self.1.write(o, end);
            self.2.write(o, (id >> 32) as i32);
            self.3.write(o, (id & 0xffff_ffff) as i32);
        }
    }
}

impl SortedBuilder {
    fn new(n: usize) -> Self {
        SortedBuilder { start: Column::new(n), end: Column::new(n), region: Column::new(n), call: Column::new(n) }
    }
    fn ptrs(&mut self) -> SortedPtrs {
        SortedPtrs(self.start.ptr(), self.end.ptr(), self.region.ptr(), self.call.ptr())
    }
    /// # Safety
    /// Every position `0..n` was written.
    unsafe fn finish(self) -> SortedColumns {
        // SAFETY: forwarded to the caller.
        unsafe {
            SortedColumns {
                start: self.start.finish(),
                end: self.end.finish(),
                region: self.region.finish(),
                call: self.call.finish(),
            }
        }
    }
}

/// Merge (instead of bucket-sort) when the input is at most this many sorted runs: one
/// thread's recording is one run per region, and a k-way merge writes the output columns
/// directly, in one pass, with no key buffer.
const MERGE_MAX_RUNS: usize = 8;

/// Calls per chunk of the parallel column passes.
pub(crate) const CHUNK: usize = 1 << 14;

/// The calls of `regions` (`n` in total, fewer than 2^31) as columns in sorted order;
/// `None` when a call ends before it starts (checked in the same pass that finds the sorted
/// runs, so the input is read once before ordering).
pub(crate) fn sorted_columns(regions: &[RegionInput<'_>], n: usize) -> Option<SortedColumns> {
    let runs = sorted_runs(regions, MERGE_MAX_RUNS)?;
    Some(match runs {
        Some(runs) => merge_columns(regions, &runs, n),
        None => key_columns(regions, &sorted_keys(regions, n)),
    })
}

/// One pass over the input: `None` when a call ends before it starts, else the sorted runs
/// `(region, lo, hi)` (calls `lo..hi` of `region` in sorted order), `Some(None)` when there
/// are more than `max`. Regions are scanned in parallel pieces.
#[allow(clippy::type_complexity)]
fn sorted_runs(regions: &[RegionInput<'_>], max: usize) -> Option<Option<Vec<(usize, usize, usize)>>> {
    const PIECE: usize = 1 << 18;
    // (region, first call of the piece, end of the piece)
    let pieces: Vec<(usize, usize, usize)> = regions
        .iter()
        .enumerate()
        .flat_map(|(ri, r)| {
            (0..r.start_ns.len()).step_by(PIECE).map(move |lo| (ri, lo, (lo + PIECE).min(r.start_ns.len())))
        })
        .collect();
    // per piece: breaks (capped at max + 1), and whether every call ends at or after its start
    let scanned: Vec<(Vec<usize>, bool)> = pieces
        .par_iter()
        .map(|&(ri, lo, hi)| {
            let (st, en) = (regions[ri].start_ns, regions[ri].end_ns);
            let mut breaks = Vec::new();
            let mut valid = true;
            for c in lo..hi {
                valid &= en[c] >= st[c];
                if c > 0 && (st[c] < st[c - 1] || (st[c] == st[c - 1] && en[c] > en[c - 1])) && breaks.len() <= max {
                    breaks.push(c);
                }
            }
            (breaks, valid)
        })
        .collect();
    if !scanned.iter().all(|s| s.1) {
        return None;
    }
    let mut runs = Vec::new();
    let mut open: Option<(usize, usize)> = None; // (region, first call) of the run being built
    for (&(ri, lo, _), (breaks, _)) in pieces.iter().zip(&scanned) {
        if lo == 0 {
            if let Some((r, first)) = open.take() {
                runs.push((r, first, regions[r].start_ns.len()));
            }
            open = Some((ri, 0));
        }
        for &b in breaks {
            let (r, first) = open.expect("a piece continues its region's run");
            runs.push((r, first, b));
            open = Some((ri, b));
        }
        if runs.len() > max {
            return Some(None);
        }
    }
    if let Some((r, first)) = open {
        runs.push((r, first, regions[r].start_ns.len()));
    }
    Some((runs.len() <= max).then_some(runs))
}

/// `(start, end, region << 32 | call)` of `a` sorts before that of `b` (start ascending,
/// end descending, input position).
#[inline(always)]
fn before(a: (i64, i64, u64), b: (i64, i64, u64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && (a.1 > b.1 || (a.1 == b.1 && a.2 < b.2)))
}

/// k-way merge of `runs` (k <= [`MERGE_MAX_RUNS`]) into the output columns, cut into parts
/// at splitter keys taken from the longest run (each run's cut found by binary search), the
/// parts merged in parallel.
fn merge_columns(regions: &[RegionInput<'_>], runs: &[(usize, usize, usize)], n: usize) -> SortedColumns {
    let key = |ri: usize, c: usize| (regions[ri].start_ns[c], regions[ri].end_ns[c], (ri as u64) << 32 | c as u64);
    let parts = if n >= PARALLEL_MIN { (rayon::current_num_threads() * 4).min(n / 4096).max(1) } else { 1 };
    // cuts[p][j]: first position of run j in part p (cuts[0] = run starts, cuts[parts] = ends)
    let longest = (0..runs.len()).max_by_key(|&j| runs[j].2 - runs[j].1).unwrap_or(0);
    let mut cuts: Vec<Vec<usize>> = Vec::with_capacity(parts + 1);
    cuts.push(runs.iter().map(|r| r.1).collect());
    for p in 1..parts {
        let (lr, llo, lhi) = runs[longest];
        let splitter = key(lr, llo + (lhi - llo) * p / parts);
        let cut: Vec<usize> = runs
            .iter()
            .zip(&cuts[p - 1])
            .map(|(&(ri, _, hi), &from)| {
                // elements of run j before the splitter: a prefix (the run is sorted)
                let (mut a, mut b) = (from, hi);
                while a < b {
                    let m = a + (b - a) / 2;
                    if before(key(ri, m), splitter) {
                        a = m + 1;
                    } else {
                        b = m;
                    }
                }
                a
            })
            .collect();
        cuts.push(cut);
    }
    cuts.push(runs.iter().map(|r| r.2).collect());

    let mut out = SortedBuilder::new(n);
    let ptrs = out.ptrs();
    let offsets: Vec<usize> =
        cuts.iter().map(|cut| cut.iter().zip(runs).map(|(&c, r)| c - r.1).sum::<usize>()).collect();
    let merge_part = |p: usize| {
        let k = runs.len();
        let mut at = [0usize; MERGE_MAX_RUNS];
        let mut stop = [0usize; MERGE_MAX_RUNS];
        let mut head = [(i64::MAX, i64::MIN, u64::MAX); MERGE_MAX_RUNS];
        for j in 0..k {
            at[j] = cuts[p][j];
            stop[j] = cuts[p + 1][j];
            if at[j] < stop[j] {
                head[j] = key(runs[j].0, at[j]);
            }
        }
        for o in offsets[p]..offsets[p + 1] {
            let mut b = 0;
            for j in 1..k {
                if before(head[j], head[b]) {
                    b = j;
                }
            }
            let (s, e, id) = head[b];
            // SAFETY: o < n, inside this part's output range (parts are disjoint).
            unsafe { ptrs.write(o, s, e, id) };
            at[b] += 1;
            head[b] = if at[b] < stop[b] { key(runs[b].0, at[b]) } else { (i64::MAX, i64::MIN, u64::MAX) };
        }
    };
    if parts > 1 {
        (0..parts).into_par_iter().for_each(merge_part);
    } else {
        merge_part(0);
    }
    // SAFETY: the parts' output ranges tile 0..n and each part writes all of its range
    // (its runs' slices hold exactly `offsets[p + 1] - offsets[p]` calls).
    unsafe { out.finish() }
}

/// The columns of sorted `keys` (filled in parallel chunks).
fn key_columns(regions: &[RegionInput<'_>], keys: &[Key]) -> SortedColumns {
    let n = keys.len();
    let mut out = SortedBuilder::new(n);
    let ptrs = out.ptrs();
    let fill = |k: usize| {
        let lo = k * CHUNK;
        for (j, &key) in keys[lo..(lo + CHUNK).min(n)].iter().enumerate() {
            let j = lo + j;
            let (r, i) = ((key.1 >> 32) as usize, (key.1 & 0xffff_ffff) as usize);
            // SAFETY: j < n; chunks are disjoint.
            unsafe { ptrs.write(j, key.0, regions[r].end_ns[i], key.1) };
        }
    };
    if n >= PARALLEL_MIN {
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(fill);
    } else {
        (0..n.div_ceil(CHUNK)).for_each(fill);
    }
    // SAFETY: the chunks tile 0..n and every position was written.
    unsafe { out.finish() }
}
