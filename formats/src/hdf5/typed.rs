//! Typed reads of HDF5 datasets and attributes (any integer width, floats, strings), with
//! size checks against the file length, and error context naming the file.
use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Container, Group, H5Type};

use scope_profiler_analysis::column_memory::Column;

use super::{py_repr, H5Error, R, SCHEMA_ATTRIBUTE};

/// One read of one file: the file as the caller named it (for messages), and the
/// descriptor that raw column and string reads `pread`. HDF5 opens the path itself;
/// [`Ctx::replaced`] is set when what it opened is not this descriptor's file (the path was
/// replaced in between), and the read is then made again.
pub(crate) struct Ctx {
    pub(crate) path: String,
    pub(crate) file_len: u64,
    pub(crate) file: std::fs::File,
    /// The path as given (HDF5 opens it).
    pub(crate) source: std::path::PathBuf,
    /// HDF5 opened another file than [`Ctx::file`].
    pub(crate) replaced: std::sync::atomic::AtomicBool,
    /// What the read left out and why (a part of the file it could not use), for the caller.
    pub(crate) notes: std::sync::Mutex<Vec<String>>,
}

impl Ctx {
    /// Open `path` once for a read, with `shown` as its name in messages.
    pub(crate) fn open(path: &std::path::Path, shown: String) -> std::io::Result<Ctx> {
        let file = std::fs::File::open(path)?;
        let file_len = file.metadata()?.len();
        Ok(Ctx {
            path: shown,
            file_len,
            file,
            source: path.to_path_buf(),
            replaced: Default::default(),
            notes: Default::default(),
        })
    }
    /// Note that the read left out `what` (said after the file's name).
    pub(crate) fn note(&self, what: impl std::fmt::Display) {
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{}: {what}", self.path));
    }
    /// The notes so far, taken.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }
    pub(crate) fn corrupt(&self, what: impl std::fmt::Display) -> H5Error {
        H5Error::Corrupt(format!("{} {what}", self.path))
    }
    pub(crate) fn h5(&self, what: &str) -> impl Fn(hdf5::Error) -> H5Error + '_ {
        let what = what.to_string();
        move |e| self.corrupt(format!("could not be read ({what}): {e}. The file is truncated or damaged."))
    }
}

pub(crate) fn descriptor(c: &Container, ctx: &Ctx, what: &str) -> R<TypeDescriptor> {
    c.dtype().and_then(|t| t.to_descriptor()).map_err(ctx.h5(what))
}

/// Refuse to allocate for a dataspace larger than the file could plausibly hold
/// (a damaged header can claim any size; compression ratios beyond 4096 are not credible).
pub(crate) fn check_size(c: &Container, elem: usize, ctx: &Ctx, what: &str) -> R<usize> {
    let n = c.space().map_err(ctx.h5(what))?.size();
    let bytes = (n as u128) * (elem.max(1) as u128);
    let limit = (ctx.file_len as u128).saturating_mul(4096).max(1 << 30);
    if bytes > limit {
        return Err(ctx.corrupt(format!(
            "claims {n} values in {what}, more than the file can hold. The file is truncated or damaged."
        )));
    }
    Ok(n)
}

pub(crate) fn read_raw_checked<T: H5Type>(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<T>> {
    check_size(c, std::mem::size_of::<T>(), ctx, what)?;
    c.read_raw::<T>().map_err(ctx.h5(what))
}

/// Any integer dataset/attribute as i64 (values in memory order).
pub(crate) fn read_ints(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<i64>> {
    use hdf5::types::IntSize::*;
    use TypeDescriptor::*;
    let d = descriptor(c, ctx, what)?;
    let to_i64 = |v: Vec<u64>| -> R<Vec<i64>> {
        v.into_iter()
            .map(|x| {
                i64::try_from(x)
                    .map_err(|_| ctx.corrupt(format!("holds {x} in {what}, out of range. The file is damaged.")))
            })
            .collect()
    };
    Ok(match d {
        Integer(U8) => read_raw_checked::<i64>(c, ctx, what)?,
        Integer(U4) => read_raw_checked::<i32>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Integer(U2) => read_raw_checked::<i16>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Integer(U1) => read_raw_checked::<i8>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Unsigned(U8) => to_i64(read_raw_checked::<u64>(c, ctx, what)?)?,
        Unsigned(U4) => read_raw_checked::<u32>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Unsigned(U2) => read_raw_checked::<u16>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Unsigned(U1) => read_raw_checked::<u8>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Boolean => read_raw_checked::<bool>(c, ctx, what)?.into_iter().map(i64::from).collect(),
        Enum(e) => {
            // h5py stores numpy bools as an int8 enum {FALSE, TRUE}
            let size = e.size as usize;
            match (e.signed, size) {
                (true, 1) => read_raw_checked::<i8>(c, ctx, what)?.into_iter().map(i64::from).collect(),
                (false, 1) => read_raw_checked::<u8>(c, ctx, what)?.into_iter().map(i64::from).collect(),
                _ => return Err(ctx.corrupt(format!("has an unsupported enum type in {what}. The file is damaged."))),
            }
        }
        other => {
            return Err(ctx.corrupt(format!("has type {other} in {what} where integers belong. The file is damaged.")))
        }
    })
}

pub(crate) fn read_floats(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<f64>> {
    use hdf5::types::FloatSize;
    match descriptor(c, ctx, what)? {
        TypeDescriptor::Float(FloatSize::U8) => read_raw_checked::<f64>(c, ctx, what),
        TypeDescriptor::Float(FloatSize::U4) => {
            Ok(read_raw_checked::<f32>(c, ctx, what)?.into_iter().map(f64::from).collect())
        }
        other => Err(ctx.corrupt(format!("has type {other} in {what} where floats belong. The file is damaged."))),
    }
}

pub(crate) fn is_string(d: &TypeDescriptor) -> bool {
    matches!(
        d,
        TypeDescriptor::VarLenUnicode
            | TypeDescriptor::VarLenAscii
            | TypeDescriptor::FixedAscii(_)
            | TypeDescriptor::FixedUnicode(_)
    )
}

/// Any string dataset/attribute (UTF-8 decoded with replacement, like the reference).
pub(crate) fn read_strings(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<String>> {
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match descriptor(c, ctx, what)? {
        TypeDescriptor::VarLenUnicode => {
            Ok(read_raw_checked::<VarLenUnicode>(c, ctx, what)?.iter().map(|s| lossy(s.as_bytes())).collect())
        }
        TypeDescriptor::VarLenAscii => {
            Ok(read_raw_checked::<VarLenAscii>(c, ctx, what)?.iter().map(|s| lossy(s.as_bytes())).collect())
        }
        TypeDescriptor::FixedAscii(_) | TypeDescriptor::FixedUnicode(_) => read_fixed_strings(c, ctx, what),
        other => Err(ctx.corrupt(format!("has type {other} in {what} where strings belong. The file is damaged."))),
    }
}

/// A fixed-length string dataset or attribute (numpy `S<n>`, as other tools write): read in
/// its own file type (no conversion; HDF5 has none to variable-length strings), each value
/// up to its first NUL, trailing padding removed, UTF-8 decoded with replacement.
fn read_fixed_strings(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<String>> {
    use hdf5_sys::h5i::{H5I_type_t, H5Iget_type};
    let dtype = c.dtype().map_err(ctx.h5(what))?;
    let size = dtype.size().max(1);
    let n = check_size(c, size, ctx, what)?;
    let mut buf = vec![0u8; n * size];
    let id = c.id();
    // SAFETY: `buf` holds n values of the type's size; the memory type is the file type.
    let status = hdf5::sync::sync(|| unsafe {
        if H5Iget_type(id) == H5I_type_t::H5I_ATTR {
            hdf5_sys::h5a::H5Aread(id, dtype.id(), buf.as_mut_ptr() as *mut std::ffi::c_void)
        } else {
            hdf5_sys::h5d::H5Dread(
                id,
                dtype.id(),
                hdf5_sys::h5s::H5S_ALL,
                hdf5_sys::h5s::H5S_ALL,
                hdf5_sys::h5p::H5P_DEFAULT,
                buf.as_mut_ptr() as *mut std::ffi::c_void,
            )
        }
    });
    if status < 0 {
        return Err(
            ctx.corrupt(format!("could not be read ({what}: fixed-length strings). The file is truncated or damaged."))
        );
    }
    Ok(buf
        .chunks(size)
        .map(|v| {
            let v = v.iter().position(|&b| b == 0).map_or(v, |nul| &v[..nul]);
            String::from_utf8_lossy(v).into_owned()
        })
        .collect())
}

pub(crate) fn one_d(c: &Container, ctx: &Ctx, what: &str) -> R<()> {
    if c.ndim() != 1 {
        return Err(ctx.corrupt(format!(
            "has a {}-dimensional {what}; it must be one-dimensional. The file is damaged.",
            c.ndim()
        )));
    }
    Ok(())
}

pub(crate) fn dataset_ints(g: &Group, name: &str, ctx: &Ctx, what: &str) -> R<Vec<i64>> {
    let what = format!("{what}/{name}");
    let ds = g.dataset(name).map_err(ctx.h5(&what))?;
    one_d(&ds, ctx, &what)?;
    if let Some(v) = raw_chunked_i64(&ds, ctx) {
        return Ok(v);
    }
    read_ints(&ds, ctx, &what)
}

/// Fast path for the reference's large event columns: a 1-D, chunked, unfiltered dataset of
/// little-endian int64 whose chunks all lie inside the file is read by copying each chunk's
/// bytes straight from the file (one `pread` per run of adjacent chunks, in parallel)
/// instead of through HDF5's chunk machinery. `None` (use HDF5) for anything else or on any
/// inconsistency.
fn raw_chunked_i64(ds: &hdf5::Dataset, ctx: &Ctx) -> Option<Vec<i64>> {
    let plan = raw_plan(ds, ctx)?;
    fetch_raw(&plan, ctx)
}

/// Where a raw-readable int64 column's bytes are: `n` values, and `(first byte in the column,
/// file address, bytes)` per run of chunks that are adjacent in the file.
pub(crate) struct RawPlan {
    n: usize,
    elem: usize,
    pieces: Vec<(usize, u64, usize)>,
}

impl RawPlan {
    /// `(file address, bytes)` of every piece.
    pub(crate) fn file_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.pieces.iter().map(|&(_, addr, len)| (addr, len as u64))
    }
}

/// The [`RawPlan`] of `ds` (see [`raw_chunked_i64`]); reads only HDF5 metadata (chunk index),
/// never variable-length data.
pub(crate) fn raw_plan(ds: &hdf5::Dataset, ctx: &Ctx) -> Option<RawPlan> {
    let dtype = ds.dtype().ok()?;
    if dtype.to_descriptor().ok()? != TypeDescriptor::Integer(hdf5::types::IntSize::U8)
        || dtype.byte_order() != hdf5::datatype::ByteOrder::LittleEndian
    {
        return None;
    }
    chunk_plan(ds, 8, ctx)
}

/// Where the stored bytes of a 1-D, unfiltered dataset of `elem`-byte values are: one piece
/// for a contiguous dataset, else chunk by chunk (`None` for any other layout, e.g. compact
/// or filtered, or an inconsistent chunk index).
pub(crate) fn chunk_plan(ds: &hdf5::Dataset, elem: usize, ctx: &Ctx) -> Option<RawPlan> {
    if cfg!(target_endian = "big") || ds.ndim() != 1 || !ds.filters().is_empty() {
        return None;
    }
    let n = ds.space().ok()?.size();
    if ds.layout() == hdf5::dataset::Layout::Contiguous {
        let bytes = n.checked_mul(elem)?;
        let addr = ds.offset()?;
        if n == 0 || addr.checked_add(bytes as u64)? > ctx.file_len {
            return None;
        }
        return Some(RawPlan { n, elem, pieces: vec![(0, addr, bytes)] });
    }
    if !ds.is_chunked() {
        return None;
    }
    let chunk = *ds.chunk()?.first()?;
    if n == 0 || chunk == 0 || (n as u128) * (elem as u128) > (ctx.file_len as u128) + (elem * chunk) as u128 {
        return None;
    }
    let chunks = stored_chunks(ds, n, chunk)?;
    let pieces = chunk_pieces(&chunks, n, chunk, elem, ctx.file_len)?;
    Some(RawPlan { n, elem, pieces })
}

/// `(first element, address, bytes)` of every stored chunk of the `n`-element `ds`, sorted;
/// `None` unless each of the `n / chunk` (rounded up) chunks is there, unfiltered and aligned.
fn stored_chunks(ds: &hdf5::Dataset, n: usize, chunk: usize) -> Option<Vec<(u64, u64, u64)>> {
    let mut chunks: Vec<(u64, u64, u64)> = Vec::with_capacity(n / chunk + 1);
    let mut ok = true;
    ds.chunks_visit(|info| {
        let off = info.offset.first().copied().unwrap_or(u64::MAX);
        if info.filter_mask != 0 || off % chunk as u64 != 0 || off >= n as u64 {
            ok = false;
            return 1;
        }
        chunks.push((off, info.addr, info.size));
        0
    })
    .ok()?;
    if !ok || chunks.len() != n.div_ceil(chunk) {
        return None;
    }
    chunks.sort_unstable();
    Some(chunks)
}

/// The [`RawPlan::pieces`] of sorted `chunks`: runs of chunks that follow each other in the
/// file merged, cut into pieces of at most 4 MiB (the unit of parallel reads). `None` when
/// a chunk is missing, of another size, or past `file_len`.
fn chunk_pieces(
    chunks: &[(u64, u64, u64)],
    n: usize,
    chunk: usize,
    elem: usize,
    file_len: u64,
) -> Option<Vec<(usize, u64, usize)>> {
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chunks.len() {
        let (off, addr, size) = chunks[i];
        if off != (i * chunk) as u64 || size != (chunk * elem) as u64 {
            return None;
        }
        // extend over chunks that follow in the file without a gap
        let mut j = i + 1;
        while j < chunks.len() && chunks[j].1 == chunks[j - 1].1 + chunks[j - 1].2 && chunks[j].2 == size {
            j += 1;
        }
        let lo = i * chunk * elem;
        let hi = (j * chunk * elem).min(n * elem);
        if addr.checked_add((hi - lo) as u64)? > file_len {
            return None;
        }
        let mut at = lo;
        while at < hi {
            let len = (hi - at).min(4 << 20);
            pieces.push((at, addr + (at - lo) as u64, len));
            at += len;
        }
        i = j;
    }
    Some(pieces)
}

/// Read a [`RawPlan`] as `n` values of `T` (the plan's value size; `None` otherwise or when
/// a read fails): pieces in parallel, straight into the column (never zero-filled).
pub(crate) fn fetch_raw<T: Copy + Send>(plan: &RawPlan, ctx: &Ctx) -> Option<Vec<T>> {
    use rayon::prelude::*;
    use std::os::unix::io::AsRawFd;
    if std::mem::size_of::<T>() != plan.elem {
        return None;
    }
    let fd = ctx.file.as_raw_fd();
    let mut column: Column<T> = Column::new(plan.n);
    let ptr = column.ptr();
    let all_read = scope_profiler_analysis::pool::install(|| {
        plan.pieces.par_iter().all(|&(at, addr, len)| {
            let mut done = 0usize;
            while done < len {
                // SAFETY: `at + len <= n * elem` (checked in the plan); pieces are disjoint.
                let got = unsafe {
                    libc::pread(
                        fd,
                        ptr.as_bytes().add(at + done) as *mut libc::c_void,
                        len - done,
                        (addr + done as u64) as libc::off_t,
                    )
                };
                if got <= 0 {
                    return false;
                }
                done += got as usize;
            }
            true
        })
    });
    // The pieces tile 0..n*elem bytes; when a read failed the column is dropped unread.
    // SAFETY: every byte of the n values was written by the reads above.
    all_read.then(|| unsafe { column.finish() })
}

pub(crate) fn dataset_strings(g: &Group, name: &str, ctx: &Ctx, what: &str) -> R<Vec<String>> {
    let what = format!("{what}/{name}");
    let ds = g.dataset(name).map_err(ctx.h5(&what))?;
    one_d(&ds, ctx, &what)?;
    match super::vlen::raw_vlen_strings(&ds, ctx) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => read_strings(&ds, ctx, &what),
        Err(why) => Err(ctx.corrupt(format!("has damaged strings in {what} ({why}). The file is damaged."))),
    }
}

pub(crate) fn has(g: &Group, name: &str) -> bool {
    g.link_exists(name)
}

/// Python's `repr` of an attribute value h5py would hand back (for schema messages).
pub(crate) fn attr_repr(a: &Container, ctx: &Ctx) -> String {
    let d = match descriptor(a, ctx, SCHEMA_ATTRIBUTE) {
        Ok(d) => d,
        Err(_) => return "<unreadable>".into(),
    };
    let scalar = a.is_scalar();
    if is_string(&d) {
        let v = read_strings(a, ctx, SCHEMA_ATTRIBUTE).unwrap_or_default();
        return if scalar {
            py_repr(v.first().map(String::as_str).unwrap_or(""))
        } else {
            format!(
                "array([{}], dtype=object)",
                v.iter().map(|s| format!("b{}", py_repr(s))).collect::<Vec<_>>().join(", ")
            )
        };
    }
    if let TypeDescriptor::Float(_) = d {
        let v = read_floats(a, ctx, SCHEMA_ATTRIBUTE).unwrap_or_default();
        let f = |x: f64| if x.fract() == 0.0 && x.abs() < 1e16 { format!("{x:.1}") } else { format!("{x}") };
        return if scalar {
            format!("np.float64({})", v.first().map(|&x| f(x)).unwrap_or_default())
        } else {
            format!("array([{}])", v.iter().map(|&x| f(x)).collect::<Vec<_>>().join(", "))
        };
    }
    if matches!(d, TypeDescriptor::Boolean | TypeDescriptor::Enum(_)) {
        let v = read_ints(a, ctx, SCHEMA_ATTRIBUTE).unwrap_or_default();
        let b = |x: i64| if x != 0 { "np.True_" } else { "np.False_" };
        return if scalar { b(v.first().copied().unwrap_or(0)).to_string() } else { format!("{v:?}") };
    }
    match read_ints(a, ctx, SCHEMA_ATTRIBUTE) {
        Ok(v) => format!("array([{}])", v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
        Err(_) => format!("<{d}>"),
    }
}
