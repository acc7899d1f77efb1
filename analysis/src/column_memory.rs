//! Large column buffers: written in parallel without being zeroed first, and backed by
//! transparent huge pages where the kernel offers them.
//!
//! Reconstructing or reading millions of calls writes hundreds of MB of fresh memory, and
//! the first touch of a page costs more than the work itself: with 4 KiB pages one fault and
//! one page clear per 512 values of an `i64` column. So output columns are never zero-filled
//! before being written ([`Column`]: capacity only, every value written exactly once by the
//! parallel pass that computes it, so the first touch happens on both cores), and buffers of
//! at least [`HUGE_MIN`] bytes are advised `MADV_HUGEPAGE` before their first write (2 MiB
//! pages: 512 times fewer faults). The advice is only advice: where THP is off ("never"),
//! unsupported or the call fails, nothing changes.

/// Buffers smaller than this are not advised (4 MiB: two huge pages).
pub const HUGE_MIN: usize = 4 << 20;

/// Advise the 2 MiB-aligned interior of `v`'s allocation (its whole capacity) for huge pages.
pub fn advise_huge<T>(v: &mut Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_MIN {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let lo = (start + HUGE - 1) & !(HUGE - 1);
        let hi = (start + bytes) & !(HUGE - 1);
        if hi > lo {
            // SAFETY: advice on whole pages inside an allocation we own; it changes how the
            // kernel backs the range, never its contents.
            unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        }
    }
}

/// An empty buffer of capacity `n` advised for huge pages (fill it, e.g. with `extend`).
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge(&mut v);
    v
}

/// A column of `n` values under construction: allocated (and advised for huge pages) but
/// not initialized. Parallel passes write it through [`Column::ptr`]; [`Column::finish`]
/// hands out the `Vec` once every position has been written.
pub struct Column<T> {
    v: Vec<T>,
    n: usize,
}

impl<T: Copy> Column<T> {
    /// Room for `n` values.
    pub fn new(n: usize) -> Self {
        Column { v: with_capacity(n), n }
    }
    /// A pointer to the buffer that parallel writers may share.
    pub fn ptr(&mut self) -> ColumnPtr<T> {
        ColumnPtr(self.v.as_mut_ptr())
    }
    /// The written column; when a writer failed, drop the `Column` instead (nothing of it
    /// is read).
    ///
    /// # Safety
    /// Every position `0..n` has been written (through [`ColumnPtr::write`]).
    pub unsafe fn finish(mut self) -> Vec<T> {
        // SAFETY: capacity >= n and all n values are initialized (caller's guarantee).
        unsafe { self.v.set_len(self.n) };
        self.v
    }
}

/// A raw pointer into a [`Column`], shared by parallel writers of disjoint positions.
pub struct ColumnPtr<T>(*mut T);

impl<T> Clone for ColumnPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ColumnPtr<T> {}
// SAFETY: writers only write disjoint positions (every user documents its partition), and
// the column outlives the parallel scope.
unsafe impl<T: Send> Send for ColumnPtr<T> {}
unsafe impl<T: Send> Sync for ColumnPtr<T> {}

impl<T: Copy> ColumnPtr<T> {
    /// The column's first byte, for writers that fill it with raw bytes (e.g. `pread`).
    pub fn as_bytes(self) -> *mut u8 {
        self.0 as *mut u8
    }

    /// Write position `i`.
    ///
    /// # Safety
    /// `i < n` of the column, and no other thread reads or writes position `i` meanwhile.
    #[inline(always)]
    pub unsafe fn write(self, i: usize, value: T) {
        // SAFETY: caller's guarantee.
        unsafe { self.0.add(i).write(value) }
    }
    /// Read position `i` (written earlier by the same thread).
    ///
    /// # Safety
    /// `i < n`, position `i` was written, and no other thread writes it meanwhile.
    #[inline(always)]
    pub unsafe fn read(self, i: usize) -> T {
        // SAFETY: caller's guarantee.
        unsafe { self.0.add(i).read() }
    }
}
