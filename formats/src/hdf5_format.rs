//! HDF5 in the reference's layout (`spec-hdf5.md`): read schemas 1-3, write schema 3.
//!
//! Reading never panics on bad input: every HDF5 failure, inconsistent index or
//! out-of-range value becomes an [`H5Error`] naming the file (and a panic inside the HDF5
//! bindings is caught and reported as [`H5Error::Corrupt`]).
use std::fs;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Container, Group, H5Type};
use arrow_array::Int64Array;
use scope_profiler_analysis::{MetaValue, RegionCalls, Run, TaskRow, ThreadRow};
use thiserror::Error;

/// Why a profile file could not be read or written. Every message names the file.
#[derive(Debug, Error)]
pub enum H5Error {
    /// The file does not exist: "HDF5 file not found: <path>".
    #[error("{0}")]
    NotFound(String),
    /// Not HDF5, truncated, damaged index, not a scope-profiler file (Python: `CorruptProfileError`).
    #[error("{0}")]
    Corrupt(String),
    /// Schema attribute invalid or newer than supported (Python: `HDF5SchemaError`).
    #[error("{0}")]
    Schema(String),
    /// Writing failed (Python: `OSError`).
    #[error("{0}")]
    Write(String),
}

type R<T> = Result<T, H5Error>;

/// Newest schema this crate reads (and the one it writes).
pub const SCHEMA_VERSION: i64 = 3;
const SCHEMA_ATTRIBUTE: &str = "scope_profiler_schema";

// ------------------------------------------------------------------------------------
// Reading

/// Context for error messages: the file as the caller named it.
struct Ctx {
    path: String,
    file_len: u64,
}

impl Ctx {
    fn corrupt(&self, what: impl std::fmt::Display) -> H5Error {
        H5Error::Corrupt(format!("{} {what}", self.path))
    }
    fn h5(&self, what: &str) -> impl Fn(hdf5::Error) -> H5Error + '_ {
        let what = what.to_string();
        move |e| self.corrupt(format!("could not be read ({what}): {e}. The file is truncated or damaged."))
    }
}

/// Python's `repr()` of a string.
fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn descriptor(c: &Container, ctx: &Ctx, what: &str) -> R<TypeDescriptor> {
    c.dtype().and_then(|t| t.to_descriptor()).map_err(ctx.h5(what))
}

/// Refuse to allocate for a dataspace larger than the file could plausibly hold
/// (a damaged header can claim any size; compression ratios beyond 4096 are not credible).
fn check_size(c: &Container, elem: usize, ctx: &Ctx, what: &str) -> R<usize> {
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

fn read_raw_checked<T: H5Type>(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<T>> {
    check_size(c, std::mem::size_of::<T>(), ctx, what)?;
    c.read_raw::<T>().map_err(ctx.h5(what))
}

/// Any integer dataset/attribute as i64 (values in memory order).
fn read_ints(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<i64>> {
    use hdf5::types::IntSize::*;
    use TypeDescriptor::*;
    let d = descriptor(c, ctx, what)?;
    let to_i64 = |v: Vec<u64>| -> R<Vec<i64>> {
        v.into_iter()
            .map(|x| i64::try_from(x).map_err(|_| ctx.corrupt(format!("holds {x} in {what}, out of range. The file is damaged."))))
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

fn read_floats(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<f64>> {
    use hdf5::types::FloatSize;
    match descriptor(c, ctx, what)? {
        TypeDescriptor::Float(FloatSize::U8) => read_raw_checked::<f64>(c, ctx, what),
        TypeDescriptor::Float(FloatSize::U4) => {
            Ok(read_raw_checked::<f32>(c, ctx, what)?.into_iter().map(f64::from).collect())
        }
        other => Err(ctx.corrupt(format!("has type {other} in {what} where floats belong. The file is damaged."))),
    }
}

fn is_string(d: &TypeDescriptor) -> bool {
    matches!(
        d,
        TypeDescriptor::VarLenUnicode
            | TypeDescriptor::VarLenAscii
            | TypeDescriptor::FixedAscii(_)
            | TypeDescriptor::FixedUnicode(_)
    )
}

/// Any string dataset/attribute (UTF-8 decoded with replacement, like the reference).
fn read_strings(c: &Container, ctx: &Ctx, what: &str) -> R<Vec<String>> {
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match descriptor(c, ctx, what)? {
        TypeDescriptor::VarLenUnicode => Ok(read_raw_checked::<VarLenUnicode>(c, ctx, what)?
            .iter()
            .map(|s| lossy(s.as_bytes()))
            .collect()),
        TypeDescriptor::VarLenAscii => Ok(read_raw_checked::<VarLenAscii>(c, ctx, what)?
            .iter()
            .map(|s| lossy(s.as_bytes()))
            .collect()),
        TypeDescriptor::FixedAscii(_) | TypeDescriptor::FixedUnicode(_) => {
            // Let HDF5 convert fixed-length to variable-length strings.
            check_size(c, 16, ctx, what)?;
            let v = c.as_reader().read_raw::<VarLenUnicode>().map_err(ctx.h5(what))?;
            Ok(v.iter().map(|s| lossy(s.as_bytes()).trim_end_matches('\0').to_string()).collect())
        }
        other => Err(ctx.corrupt(format!("has type {other} in {what} where strings belong. The file is damaged."))),
    }
}

fn one_d(c: &Container, ctx: &Ctx, what: &str) -> R<()> {
    if c.ndim() != 1 {
        return Err(ctx.corrupt(format!("has a {}-dimensional {what}; it must be one-dimensional. The file is damaged.", c.ndim())));
    }
    Ok(())
}

fn dataset_ints(g: &Group, name: &str, ctx: &Ctx, what: &str) -> R<Vec<i64>> {
    let what = format!("{what}/{name}");
    let ds = g.dataset(name).map_err(ctx.h5(&what))?;
    one_d(&ds, ctx, &what)?;
    read_ints(&ds, ctx, &what)
}

fn dataset_strings(g: &Group, name: &str, ctx: &Ctx, what: &str) -> R<Vec<String>> {
    let what = format!("{what}/{name}");
    let ds = g.dataset(name).map_err(ctx.h5(&what))?;
    one_d(&ds, ctx, &what)?;
    read_strings(&ds, ctx, &what)
}

fn has(g: &Group, name: &str) -> bool {
    g.link_exists(name)
}

/// Python's `repr` of an attribute value h5py would hand back (for schema messages).
fn attr_repr(a: &Container, ctx: &Ctx) -> String {
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
            format!("array([{}], dtype=object)", v.iter().map(|s| format!("b{}", py_repr(s))).collect::<Vec<_>>().join(", "))
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

/// `scope_profiler_schema` validation, with the reference's `HDF5SchemaError` messages.
fn read_schema_version(file: &hdf5::File, ctx: &Ctx) -> R<i64> {
    let names = file.attr_names().map_err(ctx.h5("root attributes"))?;
    if !names.iter().any(|n| n == SCHEMA_ATTRIBUTE) {
        return Ok(1);
    }
    let a = file.attr(SCHEMA_ATTRIBUTE).map_err(ctx.h5(SCHEMA_ATTRIBUTE))?;
    let d = descriptor(&a, ctx, SCHEMA_ATTRIBUTE)?;
    let integral = matches!(d, TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_));
    let value = if integral && a.is_scalar() { read_ints(&a, ctx, SCHEMA_ATTRIBUTE).ok().and_then(|v| v.first().copied()) } else { None };
    let version = match value {
        Some(v) => v,
        None => {
            return Err(H5Error::Schema(format!(
                "HDF5 schema version attribute '{SCHEMA_ATTRIBUTE}' must be an integer, got {}",
                attr_repr(&a, ctx)
            )))
        }
    };
    if version < 1 {
        return Err(H5Error::Schema(format!(
            "Unsupported scope-profiler HDF5 schema version {version}; versions must be positive"
        )));
    }
    if version > SCHEMA_VERSION {
        return Err(H5Error::Schema(format!(
            "Unsupported scope-profiler HDF5 schema version {version}; this package supports versions through {SCHEMA_VERSION}. Upgrade scope-profiler to read this file."
        )));
    }
    Ok(version)
}

/// One attribute as a [`MetaValue`]; `None` for types the run model cannot hold.
fn read_meta_value(a: &Container, ctx: &Ctx, name: &str) -> Option<MetaValue> {
    let d = descriptor(a, ctx, name).ok()?;
    let scalar = a.is_scalar();
    if is_string(&d) {
        let v = read_strings(a, ctx, name).ok()?;
        return Some(if scalar { MetaValue::Str(v.into_iter().next().unwrap_or_default()) } else { MetaValue::StrList(v) });
    }
    match d {
        TypeDescriptor::Float(_) => {
            let v = read_floats(a, ctx, name).ok()?;
            if scalar {
                Some(MetaValue::Float(*v.first()?))
            } else {
                Some(MetaValue::StrList(v.iter().map(|x| x.to_string()).collect()))
            }
        }
        TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_) | TypeDescriptor::Boolean | TypeDescriptor::Enum(_) => {
            let v = read_ints(a, ctx, name).ok()?;
            if scalar {
                Some(MetaValue::Int(*v.first()?))
            } else {
                Some(MetaValue::StrList(v.iter().map(|x| x.to_string()).collect()))
            }
        }
        _ => None,
    }
}

fn read_metadata(file: &hdf5::File, ctx: &Ctx) -> R<Vec<(String, MetaValue)>> {
    if !has(file, "metadata") {
        return Ok(Vec::new());
    }
    let g = file.group("metadata").map_err(ctx.h5("metadata"))?;
    let mut out = Vec::new();
    for name in g.attr_names().map_err(ctx.h5("metadata attributes"))? {
        let Ok(a) = g.attr(&name) else { continue };
        if let Some(v) = read_meta_value(&a, ctx, &name) {
            out.push((name, v));
        }
    }
    Ok(out)
}

fn mpi_size(metadata: &[(String, MetaValue)]) -> i64 {
    match metadata.iter().find(|(k, _)| k == "mpi_size").map(|(_, v)| v) {
        Some(MetaValue::Int(v)) => *v,
        Some(MetaValue::Float(v)) => *v as i64,
        Some(MetaValue::Str(s)) => s.trim().parse().unwrap_or(1),
        _ => 1,
    }
}

/// An int64 column shared by all rows, sliced per row without copying.
fn shared(v: Vec<i64>) -> Int64Array {
    Int64Array::from(v)
}

fn read_columnar(file: &hdf5::File, ctx: &Ctx, run: &mut Run) -> R<()> {
    for g in ["region_table", "rank_region_index", "events"] {
        if !has(file, g) {
            return Err(ctx.corrupt(format!(
                "is not a scope-profiler profile: it has no {g} group (a schema-2/3 file needs region_table, rank_region_index and events)."
            )));
        }
    }
    let names = dataset_strings(&file.group("region_table").map_err(ctx.h5("region_table"))?, "names", ctx, "region_table")?;
    let index = file.group("rank_region_index").map_err(ctx.h5("rank_region_index"))?;
    let events = file.group("events").map_err(ctx.h5("events"))?;
    const IX: &str = "rank_region_index";

    let region_ids = dataset_ints(&index, "region_ids", ctx, IX)?;
    let rows = region_ids.len();
    let need = |v: &[i64], name: &str| -> R<()> {
        if v.len() < rows {
            return Err(ctx.corrupt(format!(
                "has {} values in {IX}/{name} for {rows} region rows. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(())
    };
    let need_s = |v: &[String], name: &str| -> R<()> {
        if v.len() < rows {
            return Err(ctx.corrupt(format!(
                "has {} values in {IX}/{name} for {rows} region rows. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(())
    };
    let ranks = dataset_ints(&index, "ranks", ctx, IX)?;
    need(&ranks, "ranks")?;
    let offsets = dataset_ints(&index, "event_offsets", ctx, IX)?;
    need(&offsets, "event_offsets")?;
    let counts = dataset_ints(&index, "event_counts", ctx, IX)?;
    need(&counts, "event_counts")?;
    let source_lines = dataset_ints(&index, "source_lines", ctx, IX)?;
    need(&source_lines, "source_lines")?;
    let source_files = dataset_strings(&index, "source_files", ctx, IX)?;
    need_s(&source_files, "source_files")?;
    let source_texts = dataset_strings(&index, "source_texts", ctx, IX)?;
    need_s(&source_texts, "source_texts")?;
    let tags = dataset_strings(&index, "tags", ctx, IX)?;
    need_s(&tags, "tags")?;
    let event_metadata =
        if has(&index, "event_metadata") { Some(dataset_strings(&index, "event_metadata", ctx, IX)?) } else { None };
    if let Some(m) = &event_metadata {
        need_s(m, "event_metadata")?;
    }
    let totals = if has(&index, "exclusive_totals") { Some(dataset_ints(&index, "exclusive_totals", ctx, IX)?) } else { None };
    if let Some(t) = &totals {
        need(t, "exclusive_totals")?;
    }

    // Timing columns: the encoding is decided by the column names, not the version.
    let delta_encoded = has(&events, "start_deltas");
    let (a, b) = if delta_encoded { ("start_deltas", "durations") } else { ("start_times", "end_times") };
    let col_a = dataset_ints(&events, a, ctx, "events")?;
    let col_b = dataset_ints(&events, b, ctx, "events")?;
    let num_events = col_a.len().min(col_b.len());

    // Index validation (reference `_validate_event_index`).
    let mut spans: Vec<(i128, i128)> = Vec::with_capacity(rows);
    for r in 0..rows {
        if offsets[r] < 0 || counts[r] < 0 {
            return Err(ctx.corrupt("has negative event offsets or counts in its event index. The file is damaged."));
        }
        spans.push((offsets[r] as i128, offsets[r] as i128 + counts[r] as i128));
    }
    if let Some(max_end) = spans.iter().map(|s| s.1).max() {
        if max_end > num_events as i128 {
            return Err(ctx.corrupt(format!(
                "claims {max_end} recorded events but its event columns hold {num_events}. The file is truncated or damaged."
            )));
        }
        let mut ordered = spans.clone();
        ordered.sort_by_key(|s| s.0); // stable, like np.argsort(kind="stable")
        if ordered.windows(2).any(|w| w[1].0 < w[0].1) {
            return Err(ctx.corrupt("has overlapping region rows in its event index. The file is damaged."));
        }
    }
    let max_end = spans.iter().map(|s| s.1).max().unwrap_or(0) as usize;

    let optional = |name: &str| -> R<Option<Int64Array>> {
        if !has(&events, name) {
            return Ok(None);
        }
        let v = dataset_ints(&events, name, ctx, "events")?;
        if v.len() < max_end {
            return Err(ctx.corrupt(format!(
                "claims {max_end} recorded events but its events/{name} column holds {}. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(Some(shared(v)))
    };
    let gpu = optional("gpu_durations")?;
    let call_ids = optional("call_ids")?;
    let parent_ids = optional("parent_ids")?;
    let thread_ids = optional("thread_ids")?;
    let task_ids = optional("task_ids")?;
    let await_ns = optional("await_ns")?;

    // Absolute starts and ends for every event, decoded per row (schema 3: cumsum).
    let (starts, ends) = if delta_encoded {
        let mut starts = vec![0i64; num_events];
        let mut ends = vec![0i64; num_events];
        for &(lo, hi) in &spans {
            let (lo, hi) = (lo as usize, hi as usize);
            let mut acc = 0i64;
            for i in lo..hi {
                acc = acc.wrapping_add(col_a[i]);
                starts[i] = acc;
                ends[i] = acc.wrapping_add(col_b[i]);
            }
        }
        (shared(starts), shared(ends))
    } else {
        let mut col_a = col_a;
        let mut col_b = col_b;
        col_a.truncate(num_events);
        col_b.truncate(num_events);
        (shared(col_a), shared(col_b))
    };

    let slice = |a: &Option<Int64Array>, lo: usize, n: usize| a.as_ref().map(|a| a.slice(lo, n));
    for r in 0..rows {
        let rid = region_ids[r];
        if rid < 0 || rid as usize >= names.len() {
            return Err(ctx.corrupt(format!(
                "refers to region id {rid} but its region table holds {} names. The file is damaged.",
                names.len()
            )));
        }
        let rank = u32::try_from(ranks[r]).map_err(|_| ctx.corrupt(format!("has rank {} in its event index. The file is damaged.", ranks[r])))?;
        let (lo, n) = (spans[r].0 as usize, counts[r] as usize);
        let gpu_ns = slice(&gpu, lo, n).filter(|g| g.values().iter().any(|&v| v >= 0));
        let tags_json = tags[r].as_str();
        let tag_list: Vec<String> = if tags_json.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(tags_json)
                .map_err(|e| ctx.corrupt(format!("has unreadable tags {} in row {r}: {e}. The file is damaged.", py_repr(tags_json))))?
        };
        let metadata = event_metadata.as_ref().and_then(|m| {
            let s = m[r].trim();
            if s.is_empty() || s == "[]" || s == "{}" || s == "null" || s == "\"\"" {
                None
            } else {
                Some(m[r].clone())
            }
        });
        run.regions.push(RegionCalls {
            region: rid as u32,
            rank,
            start_ns: starts.slice(lo, n),
            end_ns: ends.slice(lo, n),
            gpu_ns,
            call_ids: slice(&call_ids, lo, n),
            parent_ids: slice(&parent_ids, lo, n),
            thread_ids: slice(&thread_ids, lo, n),
            task_ids: slice(&task_ids, lo, n),
            await_ns: slice(&await_ns, lo, n),
            source_file: Some(source_files[r].clone()).filter(|s| !s.is_empty()),
            source_line: Some(source_lines[r]).filter(|&l| l >= 0),
            source_text: Some(source_texts[r].clone()).filter(|s| !s.is_empty()),
            tags: tag_list,
            event_metadata: metadata,
            exclusive_total_ns: totals.as_ref().map(|t| t[r]).filter(|&t| t >= 0),
        });
    }
    run.region_names = names;
    Ok(())
}

/// Thread and task tables (schema ≥ 2), rows ordered by rank (stable).
fn read_lane_tables(file: &hdf5::File, ctx: &Ctx, run: &mut Run) -> R<()> {
    type Columns = (Vec<Vec<i64>>, Vec<Vec<String>>, usize);
    fn columns(g: &Group, ctx: &Ctx, what: &str, ints: &[&str], strs: &[&str]) -> R<Columns> {
        let ranks = dataset_ints(g, "ranks", ctx, what)?;
        let n = ranks.len();
        let mut iv = vec![ranks];
        for name in ints {
            if !has(g, name) {
                return Err(ctx.corrupt(format!("has no {what}/{name} column. The file is damaged.")));
            }
            iv.push(dataset_ints(g, name, ctx, what)?);
        }
        let mut sv = Vec::new();
        for name in strs {
            if !has(g, name) {
                return Err(ctx.corrupt(format!("has no {what}/{name} column. The file is damaged.")));
            }
            sv.push(dataset_strings(g, name, ctx, what)?);
        }
        if iv.iter().any(|c| c.len() != n) || sv.iter().any(|c| c.len() != n) {
            return Err(ctx.corrupt(format!("has {what} columns of different lengths. The file is truncated or damaged.")));
        }
        Ok((iv, sv, n))
    }
    let rank_of = |v: i64| u32::try_from(v).map_err(|_| ctx.corrupt(format!("has rank {v} in a lane table. The file is damaged.")));
    if has(file, "thread_table") {
        let g = file.group("thread_table").map_err(ctx.h5("thread_table"))?;
        let (iv, sv, n) = columns(
            &g,
            ctx,
            "thread_table",
            &["index", "ident", "native_id", "daemon", "start_ns", "end_ns", "cpu_ns"],
            &["name"],
        )?;
        for i in 0..n {
            run.threads.push(ThreadRow {
                rank: rank_of(iv[0][i])?,
                index: iv[1][i],
                ident: iv[2][i],
                native_id: iv[3][i],
                daemon: iv[4][i] != 0,
                start_ns: iv[5][i],
                end_ns: iv[6][i],
                cpu_ns: iv[7][i],
                name: sv[0][i].clone(),
            });
        }
        run.threads.sort_by_key(|t| t.rank);
    }
    if has(file, "task_table") {
        let g = file.group("task_table").map_err(ctx.h5("task_table"))?;
        let (iv, sv, n) = columns(
            &g,
            ctx,
            "task_table",
            &["index", "thread_index", "created_ns", "done_ns", "steps", "running_ns", "suspended_ns"],
            &["kind", "name", "coro_name"],
        )?;
        for i in 0..n {
            run.tasks.push(TaskRow {
                rank: rank_of(iv[0][i])?,
                index: iv[1][i],
                thread_index: iv[2][i],
                created_ns: iv[3][i],
                done_ns: iv[4][i],
                steps: iv[5][i],
                running_ns: iv[6][i],
                suspended_ns: iv[7][i],
                kind: sv[0][i].clone(),
                name: sv[1][i].clone(),
                coro_name: sv[2][i].clone(),
            });
        }
        run.tasks.sort_by_key(|t| t.rank);
    }
    Ok(())
}

/// `rank<N>` group names in numeric order.
fn rank_groups(file: &hdf5::File, ctx: &Ctx) -> R<Vec<(u32, String)>> {
    let mut out: Vec<(u32, String)> = file
        .member_names()
        .map_err(ctx.h5("root group"))?
        .into_iter()
        .filter_map(|n| {
            let digits = n.strip_prefix("rank")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((digits.parse::<u32>().ok()?, n))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Schema 1: `/rank<N>/regions/<name>/{start_times, end_times, ...}`.
fn read_schema1(file: &hdf5::File, ctx: &Ctx, run: &mut Run, groups: &[(u32, String)]) -> R<()> {
    let mut ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    for (rank, gname) in groups {
        let rg = file.group(gname).map_err(ctx.h5(gname))?;
        if !has(&rg, "regions") {
            continue;
        }
        let regions = rg.group("regions").map_err(ctx.h5(&format!("{gname}/regions")))?;
        for name in regions.member_names().map_err(ctx.h5(&format!("{gname}/regions")))? {
            let what = format!("{gname}/regions/{name}");
            let g = regions.group(&name).map_err(ctx.h5(&what))?;
            let starts = dataset_ints(&g, "start_times", ctx, &what)?;
            let ends = dataset_ints(&g, "end_times", ctx, &what)?;
            if starts.len() != ends.len() {
                return Err(ctx.corrupt(format!(
                    "has {} start times but {} end times in {what}. The file is truncated or damaged.",
                    starts.len(),
                    ends.len()
                )));
            }
            let opt = |col: &str| -> R<Option<Int64Array>> {
                if !has(&g, col) {
                    return Ok(None);
                }
                let v = dataset_ints(&g, col, ctx, &what)?;
                if v.len() != starts.len() {
                    return Err(ctx.corrupt(format!("has {} values in {what}/{col} for {} calls. The file is damaged.", v.len(), starts.len())));
                }
                Ok(Some(Int64Array::from(v)))
            };
            let gpu_ns = opt("gpu_durations")?;
            let call_ids = opt("call_ids")?;
            let parent_ids = opt("parent_ids")?;
            let attr_names = g.attr_names().map_err(ctx.h5(&what))?;
            let attr = |a: &str| -> Option<hdf5::Attribute> {
                if attr_names.iter().any(|n| n == a) {
                    g.attr(a).ok()
                } else {
                    None
                }
            };
            let str_attr = |a: &str| -> R<Option<String>> {
                match attr(a) {
                    None => Ok(None),
                    Some(at) => Ok(read_strings(&at, ctx, &format!("{what} attribute {a}"))?.into_iter().next()),
                }
            };
            let source_file = str_attr("source_file")?.filter(|s| !s.is_empty());
            let source_text = str_attr("source_text")?.filter(|s| !s.is_empty());
            let source_line = match attr("source_lineno") {
                None => None,
                Some(at) => read_ints(&at, ctx, &format!("{what} attribute source_lineno"))?.first().copied(),
            };
            let tags = match attr("tags") {
                None => Vec::new(),
                Some(at) => read_strings(&at, ctx, &format!("{what} attribute tags"))?,
            };
            let next = ids.len() as u32;
            let region = *ids.entry(name.clone()).or_insert_with(|| {
                run.region_names.push(name.clone());
                next
            });
            run.regions.push(RegionCalls {
                region,
                rank: *rank,
                start_ns: Int64Array::from(starts),
                end_ns: Int64Array::from(ends),
                gpu_ns,
                call_ids,
                parent_ids,
                thread_ids: None,
                task_ids: None,
                await_ns: None,
                source_file,
                source_line,
                source_text,
                tags,
                event_metadata: None,
                exclusive_total_ns: None,
            });
        }
    }
    run.num_ranks = groups.len() as u32;
    Ok(())
}

/// Whether a global heap collection ("GCOL", where HDF5 keeps variable-length strings) in
/// the file is damaged in the one way that makes HDF5's own parser loop forever instead of
/// failing (`H5HG__cache_heap_deserialize`: an object 0 of size 0 never advances the cursor).
/// Such a file must be refused before HDF5 touches its strings. Scans the file once.
fn global_heap_would_hang(path: &Path) -> io::Result<bool> {
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

fn read_inner(path: &Path, ctx: &Ctx) -> R<Run> {
    if global_heap_would_hang(path).unwrap_or(false) {
        return Err(ctx.corrupt(
            "has a damaged global heap (the storage of its strings). The file is truncated or damaged.",
        ));
    }
    let file = hdf5::File::open(path).map_err(|e| {
        H5Error::Corrupt(format!(
            "{} is not a readable HDF5 profiling file. A run that was interrupted while writing leaves a truncated file behind; the underlying error was: {e}",
            ctx.path
        ))
    })?;
    let version = read_schema_version(&file, ctx)?;
    let mut run = Run { metadata: read_metadata(&file, ctx)?, ..Default::default() };
    let groups = rank_groups(&file, ctx)?;
    if version >= 2 {
        let layout = if file.attr_names().map_err(ctx.h5("root attributes"))?.iter().any(|n| n == "storage_layout") {
            let a = file.attr("storage_layout").map_err(ctx.h5("storage_layout"))?;
            read_strings(&a, ctx, "storage_layout")?.into_iter().next().unwrap_or_default()
        } else {
            "columnar".to_string()
        };
        if layout == "aggregate" {
            return Err(H5Error::Schema(format!(
                "{} stores aggregate statistics only (storage_layout 'aggregate'); this version reads per-call (columnar) profiles only",
                ctx.path
            )));
        }
        if !has(&file, "region_table") && groups.is_empty() {
            return Err(ctx.corrupt("is an HDF5 file but not a scope-profiler profile: it has no region_table and no rank groups."));
        }
        read_columnar(&file, ctx, &mut run)?;
        read_lane_tables(&file, ctx, &mut run)?;
        run.num_ranks = match run.regions.iter().map(|r| r.rank).max() {
            None => 0,
            Some(max_rank) => {
                let inferred = max_rank as i64 + 1;
                mpi_size(&run.metadata).max(inferred).clamp(0, u32::MAX as i64) as u32
            }
        };
    } else {
        if groups.is_empty() && !has(&file, "region_table") {
            return Err(ctx.corrupt("is an HDF5 file but not a scope-profiler profile: it has no region_table and no rank groups."));
        }
        read_schema1(&file, ctx, &mut run, &groups)?;
    }
    Ok(run)
}

/// Read a file of schema 1, 2 or 3 into a [`Run`].
///
/// Per-call columns of schema-2/3 files are zero-copy slices of one Arrow buffer per column.
///
/// Errors:
/// * [`H5Error::NotFound`] `"HDF5 file not found: <path>"` when nothing exists at `path`;
/// * [`H5Error::Corrupt`] when the file is not HDF5 / truncated (`"<path> is not a readable HDF5
///   profiling file. …"`), its event index is inconsistent (`"<path> claims N recorded events but
///   its event columns hold M. The file is truncated or damaged."`, `"<path> has overlapping
///   region rows in its event index. The file is damaged."`), a column is missing, mistyped or
///   short, or it is HDF5 but not a scope-profiler profile;
/// * [`H5Error::Schema`] for an invalid or too new `scope_profiler_schema` attribute (reference
///   messages), or an aggregate-only file.
pub fn read_h5(path: &Path) -> Result<Run, H5Error> {
    let shown = path.display().to_string();
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(H5Error::NotFound(format!("HDF5 file not found: {shown}")))
        }
        Err(e) => {
            return Err(H5Error::Corrupt(format!(
                "{shown} is not a readable HDF5 profiling file. A run that was interrupted while writing leaves a truncated file behind; the underlying error was: {e}"
            )))
        }
    };
    let ctx = Ctx { path: shown.clone(), file_len: meta.len() };
    match catch_unwind(AssertUnwindSafe(|| read_inner(path, &ctx))) {
        Ok(r) => r,
        Err(_) => Err(H5Error::Corrupt(format!(
            "{shown} could not be read: the HDF5 reader failed on its contents. The file is truncated or damaged."
        ))),
    }
}

// ------------------------------------------------------------------------------------
// Writing

/// One row of `rank_region_index/summary_statistics` (88 bytes, the reference's compound).
#[derive(H5Type, Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct SummaryRecord {
    /// Σ durations, ns.
    pub total: i64,
    /// Shortest / longest duration, ns.
    pub minimum: i64,
    pub maximum: i64,
    /// Duration of the first / last call in recorded order, ns.
    pub first: i64,
    pub last: i64,
    /// Earliest start / latest end, ns.
    pub start_minimum: i64,
    pub end_maximum: i64,
    /// Calls with a GPU duration (>= 0) and their total, ns.
    pub gpu_count: u64,
    pub gpu_total: i64,
    /// Mean duration and Σ squared deviations (variance × count), ns and ns².
    pub mean: f64,
    pub m2: f64,
}

/// numpy's pairwise summation (`pairwise_sum` in `loops_utils.h`), so float statistics
/// match the reference bit for bit.
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = -0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

/// `np.add.reduce(int64 array, dtype=float64)`: cast in buffers of 8192, pairwise per buffer.
fn numpy_sum_cast(a: &[i64]) -> f64 {
    let mut total = 0.0;
    let mut buf = Vec::with_capacity(8192.min(a.len()));
    for chunk in a.chunks(8192) {
        buf.clear();
        buf.extend(chunk.iter().map(|&x| x as f64));
        total += pairwise_sum(&buf);
    }
    total
}

/// The reference's `_timing_summary` of one row.
pub fn summary_record(start: &[i64], end: &[i64], gpu: Option<&[i64]>) -> SummaryRecord {
    let mut s = SummaryRecord::default();
    let n = start.len().min(end.len());
    if n > 0 {
        let d: Vec<i64> = (0..n).map(|i| end[i].wrapping_sub(start[i])).collect();
        let count = n as f64;
        let mean = numpy_sum_cast(&d) / count;
        let sq: Vec<f64> = d.iter().map(|&x| {
            let y = x as f64 - mean;
            y * y
        }).collect();
        s.mean = mean;
        s.m2 = (pairwise_sum(&sq) / count) * count;
        s.total = d.iter().fold(0i64, |a, &x| a.wrapping_add(x));
        s.minimum = *d.iter().min().unwrap();
        s.maximum = *d.iter().max().unwrap();
        s.first = d[0];
        s.last = d[n - 1];
        s.start_minimum = *start[..n].iter().min().unwrap();
        s.end_maximum = *end[..n].iter().max().unwrap();
    }
    if let Some(g) = gpu {
        for &v in g.iter().filter(|&&v| v >= 0) {
            s.gpu_count += 1;
            s.gpu_total = s.gpu_total.wrapping_add(v);
        }
    }
    s
}

/// `json.dumps(list_of_str)` with Python's defaults (`", "` separator, ASCII escapes).
pub fn python_json_str_list(items: &[String]) -> String {
    let mut out = String::from("[");
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{08}' => out.push_str("\\b"),
                '\u{0c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{:04x}", unit));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push(']');
    out
}

/// Events from which event columns are compressed (the reference's `"auto"` policy).
const AUTO_COMPRESSION_MIN_EVENTS: usize = 1 << 14;
/// Datasets up to this many bytes stay contiguous (the reference's repack threshold).
const CONTIGUOUS_MAX_BYTES: usize = 64 * 1024;
/// Chunk length (elements) of compressed datasets.
const COMPRESSED_CHUNK: usize = 1 << 16;

struct W<'a> {
    path: &'a str,
    /// gzip level 4 + shuffle for datasets above [`CONTIGUOUS_MAX_BYTES`].
    compress: bool,
}

impl W<'_> {
    fn err(&self, what: &str) -> impl Fn(hdf5::Error) -> H5Error + '_ {
        let what = what.to_string();
        move |e| H5Error::Write(format!("could not write {} ({what}): {e}", self.path))
    }
    fn vlen(&self, v: &[String], what: &str) -> R<Vec<VarLenUnicode>> {
        v.iter()
            .map(|s| {
                s.parse::<VarLenUnicode>().map_err(|_| {
                    H5Error::Write(format!("could not write {} ({what}): the string {} contains a NUL character", self.path, py_repr(s)))
                })
            })
            .collect()
    }
    fn ints<T: H5Type>(&self, g: &Group, name: &str, v: &[T]) -> R<()> {
        let b = g.new_dataset_builder().with_data(v);
        if self.compress && std::mem::size_of_val(v) > CONTIGUOUS_MAX_BYTES {
            b.chunk(v.len().min(COMPRESSED_CHUNK)).shuffle().deflate(4).create(name).map_err(self.err(name))?;
        } else {
            b.create(name).map_err(self.err(name))?;
        }
        Ok(())
    }
    fn strs(&self, g: &Group, name: &str, v: &[String]) -> R<()> {
        let data = self.vlen(v, name)?;
        g.new_dataset_builder().with_data(&data).create(name).map_err(self.err(name))?;
        Ok(())
    }
}

fn write_contents(run: &Run, file: &hdf5::File, w: &W<'_>) -> R<()> {
    // Rows with calls only (the reference writes only regions with completed calls), and
    // only the region names they use, in region-table order.
    let rows: Vec<&RegionCalls> = run.regions.iter().filter(|r| !r.is_empty()).collect();
    let mut used = vec![false; run.region_names.len()];
    for r in &rows {
        match used.get_mut(r.region as usize) {
            Some(u) => *u = true,
            None => {
                return Err(H5Error::Write(format!(
                    "could not write {}: a row refers to region id {} but the run has {} region names",
                    w.path,
                    r.region,
                    run.region_names.len()
                )))
            }
        }
    }
    let mut new_id = vec![u32::MAX; used.len()];
    let mut names = Vec::new();
    for (i, &u) in used.iter().enumerate() {
        if u {
            new_id[i] = names.len() as u32;
            names.push(run.region_names[i].clone());
        }
    }

    let root = file.group("/").map_err(w.err("root"))?;
    root.new_attr::<i64>().create(SCHEMA_ATTRIBUTE).map_err(w.err(SCHEMA_ATTRIBUTE))?.write_scalar(&SCHEMA_VERSION).map_err(w.err(SCHEMA_ATTRIBUTE))?;
    let columnar: VarLenUnicode = "columnar".parse().unwrap();
    root.new_attr::<VarLenUnicode>().create("storage_layout").map_err(w.err("storage_layout"))?.write_scalar(&columnar).map_err(w.err("storage_layout"))?;

    // /metadata
    let meta = file.create_group("metadata").map_err(w.err("metadata"))?;
    for (key, value) in &run.metadata {
        let what = format!("metadata attribute {key}");
        match value {
            MetaValue::Int(v) => meta.new_attr::<i64>().create(key.as_str()).and_then(|a| a.write_scalar(v)),
            MetaValue::Float(v) => meta.new_attr::<f64>().create(key.as_str()).and_then(|a| a.write_scalar(v)),
            MetaValue::Str(s) => {
                let v = w.vlen(std::slice::from_ref(s), &what)?;
                meta.new_attr::<VarLenUnicode>().create(key.as_str()).and_then(|a| a.write_scalar(&v[0]))
            }
            MetaValue::StrList(list) => {
                let v = w.vlen(list, &what)?;
                meta.new_attr_builder().with_data(&v).create(key.as_str()).map(|_| ())
            }
        }
        .map_err(w.err(&what))?;
    }

    // /region_table
    let rt = file.create_group("region_table").map_err(w.err("region_table"))?;
    w.strs(&rt, "names", &names)?;

    // /events and /rank_region_index
    let total: usize = rows.iter().map(|r| r.len()).sum();
    let mut start_deltas = Vec::with_capacity(total);
    let mut durations = Vec::with_capacity(total);
    for r in &rows {
        let (s, e) = (r.start_ns.values(), r.end_ns.values());
        if s.len() != e.len() {
            return Err(H5Error::Write(format!(
                "could not write {}: region {} has {} starts but {} ends",
                w.path,
                py_repr(&run.region_names[r.region as usize]),
                s.len(),
                e.len()
            )));
        }
        let mut prev = 0i64;
        for i in 0..s.len() {
            start_deltas.push(s[i].wrapping_sub(prev));
            prev = s[i];
            durations.push(e[i].wrapping_sub(s[i]));
        }
    }
    let events = file.create_group("events").map_err(w.err("events"))?;
    w.ints(&events, "start_deltas", &start_deltas)?;
    w.ints(&events, "durations", &durations)?;
    drop(start_deltas);
    drop(durations);
    type Col = fn(&RegionCalls) -> Option<&Int64Array>;
    let optional: [(&str, Col, i64); 6] = [
        ("gpu_durations", |r| r.gpu_ns.as_ref(), -1),
        ("call_ids", |r| r.call_ids.as_ref(), -1),
        ("parent_ids", |r| r.parent_ids.as_ref(), -1),
        ("thread_ids", |r| r.thread_ids.as_ref(), -1),
        ("task_ids", |r| r.task_ids.as_ref(), -1),
        ("await_ns", |r| r.await_ns.as_ref(), 0),
    ];
    for (name, get, missing) in optional {
        if !rows.iter().any(|r| get(r).is_some()) {
            continue;
        }
        let mut col = Vec::with_capacity(total);
        for r in &rows {
            match get(r) {
                Some(a) if a.len() == r.len() => col.extend_from_slice(a.values()),
                Some(a) => {
                    return Err(H5Error::Write(format!(
                        "could not write {}: region {} has {} calls but {} values in {name}",
                        w.path,
                        py_repr(&run.region_names[r.region as usize]),
                        r.len(),
                        a.len()
                    )))
                }
                None => col.extend(std::iter::repeat_n(missing, r.len())),
            }
        }
        w.ints(&events, name, &col)?;
    }

    let index = file.create_group("rank_region_index").map_err(w.err("rank_region_index"))?;
    let region_ids: Vec<u32> = rows.iter().map(|r| new_id[r.region as usize]).collect();
    let ranks: Vec<u32> = rows.iter().map(|r| r.rank).collect();
    let counts: Vec<u64> = rows.iter().map(|r| r.len() as u64).collect();
    let mut offsets = Vec::with_capacity(rows.len());
    let mut acc = 0u64;
    for &c in &counts {
        offsets.push(acc);
        acc += c;
    }
    w.ints(&index, "region_ids", &region_ids)?;
    w.ints(&index, "ranks", &ranks)?;
    w.ints(&index, "event_offsets", &offsets)?;
    w.ints(&index, "event_counts", &counts)?;
    let lines: Vec<i64> = rows.iter().map(|r| r.source_line.filter(|&l| l >= 0).unwrap_or(-1)).collect();
    w.ints(&index, "source_lines", &lines)?;
    let totals: Vec<i64> = rows.iter().map(|r| r.exclusive_total_ns.filter(|&t| t >= 0).unwrap_or(-1)).collect();
    w.ints(&index, "exclusive_totals", &totals)?;
    let files: Vec<String> = rows.iter().map(|r| r.source_file.clone().unwrap_or_default()).collect();
    w.strs(&index, "source_files", &files)?;
    let texts: Vec<String> = rows.iter().map(|r| r.source_text.clone().unwrap_or_default()).collect();
    w.strs(&index, "source_texts", &texts)?;
    let tags: Vec<String> = rows.iter().map(|r| python_json_str_list(&r.tags)).collect();
    w.strs(&index, "tags", &tags)?;
    let metadata: Vec<String> = rows.iter().map(|r| r.event_metadata.clone().unwrap_or_else(|| "[]".into())).collect();
    w.strs(&index, "event_metadata", &metadata)?;
    let summaries: Vec<SummaryRecord> = rows
        .iter()
        .map(|r| summary_record(r.start_ns.values(), r.end_ns.values(), r.gpu_ns.as_ref().map(|g| &g.values()[..])))
        .collect();
    w.ints(&index, "summary_statistics", &summaries)?;

    // Lane tables, only when non-empty, and (like the reference, which writes a rank's lane
    // rows together with its regions) only for ranks that recorded calls.
    let ranks_with_calls: std::collections::HashSet<u32> = rows.iter().map(|r| r.rank).collect();
    let threads: Vec<&ThreadRow> = run.threads.iter().filter(|t| ranks_with_calls.contains(&t.rank)).collect();
    let tasks: Vec<&TaskRow> = run.tasks.iter().filter(|t| ranks_with_calls.contains(&t.rank)).collect();
    if !threads.is_empty() {
        let g = file.create_group("thread_table").map_err(w.err("thread_table"))?;
        let t = &threads;
        w.ints(&g, "ranks", &t.iter().map(|x| x.rank).collect::<Vec<u32>>())?;
        w.ints(&g, "index", &t.iter().map(|x| x.index).collect::<Vec<i64>>())?;
        w.ints(&g, "ident", &t.iter().map(|x| x.ident).collect::<Vec<i64>>())?;
        w.ints(&g, "native_id", &t.iter().map(|x| x.native_id).collect::<Vec<i64>>())?;
        w.ints(&g, "daemon", &t.iter().map(|x| x.daemon as i8).collect::<Vec<i8>>())?;
        w.ints(&g, "start_ns", &t.iter().map(|x| x.start_ns).collect::<Vec<i64>>())?;
        w.ints(&g, "end_ns", &t.iter().map(|x| x.end_ns).collect::<Vec<i64>>())?;
        w.ints(&g, "cpu_ns", &t.iter().map(|x| x.cpu_ns).collect::<Vec<i64>>())?;
        w.strs(&g, "name", &t.iter().map(|x| x.name.clone()).collect::<Vec<String>>())?;
    }
    if !tasks.is_empty() {
        let g = file.create_group("task_table").map_err(w.err("task_table"))?;
        let t = &tasks;
        w.ints(&g, "ranks", &t.iter().map(|x| x.rank).collect::<Vec<u32>>())?;
        w.ints(&g, "index", &t.iter().map(|x| x.index).collect::<Vec<i64>>())?;
        w.ints(&g, "thread_index", &t.iter().map(|x| x.thread_index).collect::<Vec<i64>>())?;
        w.ints(&g, "created_ns", &t.iter().map(|x| x.created_ns).collect::<Vec<i64>>())?;
        w.ints(&g, "done_ns", &t.iter().map(|x| x.done_ns).collect::<Vec<i64>>())?;
        w.ints(&g, "steps", &t.iter().map(|x| x.steps).collect::<Vec<i64>>())?;
        w.ints(&g, "running_ns", &t.iter().map(|x| x.running_ns).collect::<Vec<i64>>())?;
        w.ints(&g, "suspended_ns", &t.iter().map(|x| x.suspended_ns).collect::<Vec<i64>>())?;
        w.strs(&g, "kind", &t.iter().map(|x| x.kind.clone()).collect::<Vec<String>>())?;
        w.strs(&g, "name", &t.iter().map(|x| x.name.clone()).collect::<Vec<String>>())?;
        w.strs(&g, "coro_name", &t.iter().map(|x| x.coro_name.clone()).collect::<Vec<String>>())?;
    }
    Ok(())
}

/// The process umask, without changing it (Linux `/proc/self/status`; else set-and-restore).
pub(crate) fn process_umask() -> u32 {
    if let Ok(status) = fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("Umask:") {
                if let Ok(m) = u32::from_str_radix(v.trim(), 8) {
                    return m;
                }
            }
        }
    }
    // SAFETY: umask only swaps the process mask; restored immediately.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}

/// Write `run` as schema 3, atomically (temp file beside the target, then rename), umask respected.
///
/// Layout as the reference's writer (`spec-hdf5.md` §4-5): `start_deltas`/`durations` per row,
/// optional event columns only when some row has them (missing rows back-filled with -1, or 0
/// for `await_ns`), lane tables only when non-empty and only for ranks with calls (a tracked
/// run that recorded no region gets none, as in the reference), `/metadata` attributes, root attributes
/// `scope_profiler_schema = 3` (int64) and `storage_layout = "columnar"`. Rows without calls
/// are not written, and `region_table/names` holds only the names rows use (the reference
/// writes only regions with completed calls). Datasets are contiguous, except that from
/// 16384 events on (the reference's automatic compression) numeric datasets above 64 KiB are
/// chunked (65536 elements) with shuffle + gzip level 4.
///
/// Publication: written to `.<name>.<random>.tmp` in the target's directory, fsynced, given
/// mode `0o666 & !umask`, renamed over `path`, directory fsynced. On error the temp file is
/// removed and `path` is untouched.
///
/// Errors: [`H5Error::Write`] naming the file.
pub fn write_h5(run: &Run, path: &Path) -> Result<(), H5Error> {
    let shown = path.display().to_string();
    let werr = |what: &str, e: &dyn std::fmt::Display| H5Error::Write(format!("could not write {shown} ({what}): {e}"));
    let file_name = path
        .file_name()
        .ok_or_else(|| H5Error::Write(format!("could not write {shown}: the path names no file")))?
        .to_string_lossy()
        .into_owned();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{file_name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| werr("temporary file", &e))?;
    let total: usize = run.regions.iter().map(|r| r.len()).sum();
    let w = W { path: &shown, compress: total >= AUTO_COMPRESSION_MIN_EVENTS };
    let written = catch_unwind(AssertUnwindSafe(|| -> R<()> {
        let file = hdf5::File::create(tmp.path()).map_err(w.err("create"))?;
        write_contents(run, &file, &w)?;
        file.close().map_err(w.err("close"))?;
        Ok(())
    }));
    match written {
        Ok(r) => r?,
        Err(_) => return Err(H5Error::Write(format!("could not write {shown}: the HDF5 writer failed"))),
    }
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = 0o666 & !process_umask();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode)).map_err(|e| werr("permissions", &e))?;
        fs::File::open(tmp.path()).and_then(|f| f.sync_all()).map_err(|e| werr("fsync", &e))?;
    }
    tmp.persist(path).map_err(|e| werr("rename", &e.error))?;
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
