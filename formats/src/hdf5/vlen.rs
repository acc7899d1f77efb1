//! Variable-length strings read straight from the file, without HDF5's per-string heap
//! lookups (the task table of an asyncio run holds three strings per task: 300k strings for
//! 100k tasks).
//!
//! A contiguous or chunked, unfiltered dataset of variable-length strings stores, per value, a 16-byte
//! descriptor: length (u32), global heap collection address (u64) and object index (u32).
//! Each referenced collection ("GCOL": 16-byte header, then objects of a 16-byte header and
//! their data padded to 8 bytes) is read and indexed once; every string is then a slice of
//! it. Only files with 8-byte addresses and lengths take this path, and any inconsistency
//! makes [`raw_vlen_strings`] return `None` so the caller reads the dataset through HDF5
//! (after the global-heap guard, so that cannot hang). Like HDF5's conversion to C strings,
//! a value ends at its first NUL byte; bytes are decoded as UTF-8 with replacement.
use std::collections::HashMap;
use std::os::unix::fs::FileExt;

use hdf5::types::TypeDescriptor;

use super::typed::{chunk_plan, fetch_raw, Ctx};

/// Bytes of one stored value (length u32 + address u64 + index u32).
const DESCRIPTOR: usize = 16;
/// Bytes of a collection header and of an object header.
const HEADER: usize = 16;

/// One global heap collection: its bytes and, per object index, `(offset, size)`.
struct Collection {
    bytes: Vec<u8>,
    objects: Vec<Option<(usize, usize)>>,
}

/// Read and index the collection at `addr` (`None` when it is not a well-formed collection).
fn collection(file: &std::fs::File, addr: u64, ctx: &Ctx) -> Option<Collection> {
    let mut head = [0u8; HEADER];
    if addr.checked_add(HEADER as u64)? > ctx.file_len {
        return None;
    }
    file.read_exact_at(&mut head, addr).ok()?;
    if &head[..4] != b"GCOL" || head[4] != 1 {
        return None;
    }
    let size = u64::from_le_bytes(head[8..16].try_into().ok()?);
    if size < HEADER as u64 || addr.checked_add(size)? > ctx.file_len {
        return None;
    }
    let mut bytes = vec![0u8; size as usize];
    file.read_exact_at(&mut bytes, addr).ok()?;
    let mut objects: Vec<Option<(usize, usize)>> = Vec::new();
    let mut p = HEADER;
    while p + HEADER <= bytes.len() {
        let index = u16::from_le_bytes([bytes[p], bytes[p + 1]]) as usize;
        if index == 0 {
            break; // free space: the rest of the collection
        }
        let len = u64::from_le_bytes(bytes[p + 8..p + 16].try_into().ok()?);
        let data = p + HEADER;
        let padded = usize::try_from(len.checked_add(7)? / 8 * 8).ok()?;
        if padded > bytes.len() - data {
            return None;
        }
        if objects.len() <= index {
            objects.resize(index + 1, None);
        }
        objects[index] = Some((data, len as usize));
        p = data + padded; // always advances: HEADER > 0
    }
    Some(Collection { bytes, objects })
}

/// The values of a 1-D variable-length string dataset, read without HDF5's string machinery
/// (see the module documentation); `Ok(None)` when the dataset or file does not qualify.
///
/// Errors (a description of the damage) when a stored length cannot be true: longer than its
/// heap object, or the lengths add up to more than the file holds. Falling back to HDF5
/// there would allocate what the damaged length claims (4 GiB for `0xffffffff`) before failing.
pub(crate) fn raw_vlen_strings(ds: &hdf5::Dataset, ctx: &Ctx) -> Result<Option<Vec<String>>, String> {
    raw_strings(ds, ctx).transpose()
}

/// [`raw_vlen_strings`]: `None` = does not qualify, `Some(Err)` = damaged.
fn raw_strings(ds: &hdf5::Dataset, ctx: &Ctx) -> Option<Result<Vec<String>, String>> {
    let descriptor = ds.dtype().ok()?.to_descriptor().ok()?;
    if !matches!(descriptor, TypeDescriptor::VarLenUnicode | TypeDescriptor::VarLenAscii) {
        return None;
    }
    let sizes = ds.file().ok()?.create_plist().ok()?.get_sizes().ok()?;
    if usize::from(sizes.sizeof_addr) != 8 || usize::from(sizes.sizeof_size) != 8 {
        return None;
    }
    let plan = chunk_plan(ds, DESCRIPTOR, ctx)?;
    let raw: Vec<[u8; DESCRIPTOR]> = fetch_raw(&plan, ctx)?;
    let claimed: u64 = raw.iter().map(|d| u64::from(u32::from_le_bytes([d[0], d[1], d[2], d[3]]))).sum();
    if claimed > ctx.file_len {
        return Some(Err(format!("{} values claim {claimed} bytes in all, the file has {}", raw.len(), ctx.file_len)));
    }
    let file = &ctx.file;
    let mut collections: Vec<Collection> = Vec::new();
    let mut by_addr: HashMap<u64, usize> = HashMap::new();
    let mut last: Option<(u64, usize)> = None; // consecutive values share a collection
    let mut out = Vec::with_capacity(raw.len());
    for (i, d) in raw.iter().enumerate() {
        let len = u32::from_le_bytes(d[0..4].try_into().ok()?) as usize;
        let addr = u64::from_le_bytes(d[4..12].try_into().ok()?);
        let index = u32::from_le_bytes(d[12..16].try_into().ok()?) as usize;
        if len == 0 {
            out.push(String::new());
            continue;
        }
        let k = match last {
            Some((a, k)) if a == addr => k,
            _ => {
                let k = match by_addr.get(&addr) {
                    Some(&k) => k,
                    None => {
                        collections.push(collection(file, addr, ctx)?);
                        by_addr.insert(addr, collections.len() - 1);
                        collections.len() - 1
                    }
                };
                last = Some((addr, k));
                k
            }
        };
        let c = &collections[k];
        let (at, size) = (*c.objects.get(index)?)?;
        if len > size {
            return Some(Err(format!("value {i} claims {len} bytes, its heap object holds {size}")));
        }
        let value = &c.bytes[at..at + len];
        let value = value.iter().position(|&b| b == 0).map_or(value, |nul| &value[..nul]);
        out.push(String::from_utf8_lossy(value).into_owned());
    }
    Some(Ok(out))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::hdf5::typed::read_strings;

    fn ctx(path: &Path) -> Ctx {
        Ctx::open(path, path.display().to_string()).unwrap()
    }

    /// Every 1-D variable-length string dataset of `path`: (name, raw values, HDF5's values).
    fn both_readers(path: &Path) -> Vec<(String, Option<Vec<String>>, Vec<String>)> {
        let file = hdf5::File::open(path).unwrap();
        let c = ctx(path);
        let mut names = Vec::new();
        for group in file.member_names().unwrap() {
            let Ok(g) = file.group(&group) else { continue };
            for name in g.member_names().unwrap() {
                names.push(format!("{group}/{name}"));
            }
        }
        let mut out = Vec::new();
        for name in names {
            let Ok(ds) = file.dataset(&name) else { continue };
            let d = ds.dtype().unwrap().to_descriptor().unwrap();
            if ds.ndim() != 1 || !matches!(d, TypeDescriptor::VarLenUnicode | TypeDescriptor::VarLenAscii) {
                continue;
            }
            out.push((name.clone(), raw_vlen_strings(&ds, &c).unwrap(), read_strings(&ds, &c, &name).unwrap()));
        }
        out
    }

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn raw_strings_equal_hdf5_strings_in_reference_files() {
        let mut raw_used = 0;
        for f in [
            "reference/async.h5",
            "reference/threads.h5",
            "reference/pool.h5",
            "reference/single.h5",
            "compat/schema-2.h5",
            "compat/schema-3.h5",
        ] {
            let path = repo().join("datasets").join(f);
            for (name, raw, hdf5) in both_readers(&path) {
                if let Some(raw) = raw {
                    assert_eq!(raw, hdf5, "{f}: {name}");
                    raw_used += 1;
                }
            }
        }
        assert!(raw_used > 10, "the raw path ran for {raw_used} datasets only");
    }

    #[test]
    fn raw_strings_equal_hdf5_strings_for_exotic_values() {
        let mut run = crate::hdf5::read_h5(&repo().join("datasets/reference/async.h5")).unwrap();
        assert!(run.tasks.len() >= 4);
        let long = "x".repeat(200_000); // larger than a collection of small strings
        let names = ["", "ünïcödé 🚀", long.as_str(), "plain"];
        for (t, name) in run.tasks.iter_mut().zip(names) {
            t.name = name.to_string();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exotic.h5");
        crate::hdf5::write_h5(&run, &path).unwrap();
        let checked = both_readers(&path);
        let names = checked.iter().find(|c| c.0 == "task_table/name").expect("task_table/name");
        let raw = names.1.as_ref().expect("the raw path reads task names");
        assert_eq!(raw, &names.2);
        assert_eq!(&raw[..3], &["", "ünïcödé 🚀", long.as_str()]);
        for (name, raw, hdf5) in &checked {
            if let Some(raw) = raw {
                assert_eq!(raw, hdf5, "{name}");
            }
        }
    }
}
