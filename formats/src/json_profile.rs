//! The JSON profile (spec-exports §5): a lossless JSON document of one run, `.gz` names
//! gzip-compressed.
//!
//! [`write_json`] writes the document the reference's `json_export.write_json` writes, byte
//! for byte where the values allow it: the reference's key order, Python's `json.dumps`
//! separators (`", "`/`": "`, or newlines with `indent`), `ensure_ascii` escapes and `repr`
//! floats ([`PyFormatter`]). [`read_json`] reads it (and the reference's files) back into a
//! [`Run`]. All `*_ns` values are integer ns: per-call columns absolute on the recording
//! clock, lane-table values relative to the run origin (`-1` = not known), as in [`Run`].
//! LIKWID and line-profiler sections are not part of [`Run`]: they are ignored on reading.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use arrow_array::Int64Array;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};
use scope_profiler_analysis::{py_float_repr, IdColumn, MetaValue, RegionCalls, Run, TaskRow, ThreadRow};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::export_output::write_atomic;
use crate::export_plan::PlanError;
use crate::{ExportError, Selection};

/// The `format` value of every document.
pub const FORMAT_NAME: &str = "scope-profiler-profile";
/// The newest `format_version` this crate reads (and the one it writes).
pub const FORMAT_VERSION: i64 = 1;
/// The `exporter` value written (the reference version whose layout this is).
pub const EXPORTER: &str = "scope-profiler@0.7.5";

/// Why a JSON profile could not be read. Every message names the file.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum JsonError {
    /// The file does not exist. Python: `FileNotFoundError`.
    #[error("JSON profile not found: {0}")]
    NotFound(String),
    /// Not a scope-profiler JSON profile, a newer format version, or malformed content.
    /// Python: `JSONProfileError` (a `ValueError`).
    #[error("{0}")]
    Invalid(String),
    /// The file could not be read. Python: `OSError`.
    #[error("{0}")]
    Io(String),
}

// ---------------------------------------------------------------------------------------
// Python-compatible JSON output

/// A `serde_json` formatter producing Python's `json.dumps(doc, indent=indent)` text:
/// `", "` and `": "` separators on one line without indent, else one value per line
/// indented `indent` spaces per level (`","` item separator); non-ASCII escaped as
/// `\uXXXX` (`ensure_ascii`); floats as Python's `repr`.
pub struct PyFormatter {
    indent: Option<usize>,
    level: usize,
    has_value: bool,
}

impl PyFormatter {
    pub fn new(indent: Option<usize>) -> Self {
        PyFormatter { indent, level: 0, has_value: false }
    }

    fn newline<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        if let Some(n) = self.indent {
            w.write_all(b"\n")?;
            for _ in 0..n * self.level {
                w.write_all(b" ")?;
            }
        }
        Ok(())
    }

    fn begin<W: ?Sized + Write>(&mut self, w: &mut W, open: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(open)
    }

    fn end<W: ?Sized + Write>(&mut self, w: &mut W, close: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        self.has_value = true;
        w.write_all(close)
    }

    fn item<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if !first {
            w.write_all(if self.indent.is_some() { b"," } else { b", " })?;
        }
        self.newline(w)
    }
}

impl serde_json::ser::Formatter for PyFormatter {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(py_float_repr(value).as_bytes())
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, value as f64)
    }
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        if fragment.is_ascii() {
            return w.write_all(fragment.as_bytes());
        }
        let mut buf = [0u16; 2];
        for ch in fragment.chars() {
            if ch.is_ascii() {
                w.write_all(&[ch as u8])?;
            } else {
                for unit in ch.encode_utf16(&mut buf) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"[")
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"]")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, b"{")
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, b"}")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.item(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `value` as Python's `json.dumps(value, indent=indent)` text.
pub fn to_py_json<T: Serialize + ?Sized>(value: &T, indent: Option<usize>) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFormatter::new(indent));
    value.serialize(&mut ser)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// An order-keeping JSON value (metadata, event metadata)

/// A JSON value whose objects keep their key order (serde_json's `Value` sorts them).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Python truthiness (`any(event_metadata)`).
    fn truthy(&self) -> bool {
        match self {
            Json::Null => false,
            Json::Bool(b) => *b,
            Json::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
            Json::String(s) => !s.is_empty(),
            Json::Array(a) => !a.is_empty(),
            Json::Object(o) => !o.is_empty(),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(a) => s.collect_seq(a),
            Json::Object(o) => {
                let mut m = s.serialize_map(Some(o.len()))?;
                for (k, v) in o {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
                Ok(serde_json::Number::from_f64(v).map(Json::Number).unwrap_or(Json::Null))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Json::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Json>()? {
                    // a repeated key keeps its first position and the last value (Python's dict)
                    match out.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => out.push((k, v)),
                    }
                }
                Ok(Json::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------------------
// Writing

/// An Int64 column as a JSON list.
struct Ints<'a>(&'a Int64Array);

impl Serialize for Ints<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for v in self.0.values().iter() {
            seq.serialize_element(v)?;
        }
        seq.end()
    }
}

/// Metadata in the run's order, non-finite floats as `null`.
struct Meta<'a>(&'a [(String, MetaValue)]);

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            match v {
                MetaValue::Int(i) => m.serialize_entry(k, i)?,
                MetaValue::Float(f) if f.is_finite() => m.serialize_entry(k, f)?,
                MetaValue::Float(_) => m.serialize_entry(k, &())?,
                MetaValue::Str(t) => m.serialize_entry(k, t)?,
                MetaValue::StrList(l) => m.serialize_entry(k, l)?,
            }
        }
        m.end()
    }
}

/// One (region, rank) row in the reference's key order.
struct RowOut<'a> {
    name: &'a str,
    row: &'a RegionCalls,
}

impl Serialize for RowOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.row;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("rank", &r.rank)?;
        if let Some(f) = &r.source_file {
            m.serialize_entry("source_file", f)?;
        }
        if let Some(l) = r.source_line {
            m.serialize_entry("source_lineno", &l)?;
        }
        if let Some(t) = &r.source_text {
            m.serialize_entry("source_text", t)?;
        }
        if !r.tags.is_empty() {
            m.serialize_entry("tags", &r.tags)?;
        }
        m.serialize_entry("start_times_ns", &Ints(&r.start_ns))?;
        m.serialize_entry("end_times_ns", &Ints(&r.end_ns))?;
        if let Some(meta) = event_metadata(r) {
            m.serialize_entry("event_metadata", &meta)?;
        }
        let ids = |c: &Option<IdColumn>| c.as_ref().map(IdColumn::to_array);
        let (call_ids, parent_ids) = (ids(&r.call_ids), ids(&r.parent_ids));
        for (key, col) in [
            ("gpu_durations_ns", r.gpu_ns.as_ref()),
            ("call_ids", call_ids.as_ref()),
            ("parent_ids", parent_ids.as_ref()),
            ("thread_ids", r.thread_ids.as_ref()),
            ("task_ids", r.task_ids.as_ref()),
            ("await_ns", r.await_ns.as_ref()),
            ("ready_wait_ns", r.ready_wait_ns.as_ref()),
            ("task_step_ns", r.task_step_ns.as_ref()),
        ] {
            if let Some(col) = col {
                m.serialize_entry(key, &Ints(col))?;
            }
        }
        if let Some(t) = r.exclusive_total_ns {
            m.serialize_entry("exclusive_total_ns", &t)?;
        }
        m.end()
    }
}

/// The row's per-call metadata list when any entry is truthy (`any(event_metadata)`).
fn event_metadata(r: &RegionCalls) -> Option<Json> {
    let text = r.event_metadata.as_deref()?;
    match serde_json::from_str::<Json>(text).ok()? {
        Json::Array(items) if items.iter().any(Json::truthy) => Some(Json::Array(items)),
        _ => None,
    }
}

#[derive(Serialize)]
struct ThreadOut<'a> {
    index: i64,
    name: &'a str,
    ident: i64,
    native_id: i64,
    daemon: bool,
    start_ns: i64,
    end_ns: i64,
    cpu_ns: i64,
    /// Not in the reference's format: written only when known.
    #[serde(skip_serializing_if = "is_unknown")]
    cpu_start_ns: i64,
    /// Not in the reference's format: written only when known.
    #[serde(skip_serializing_if = "is_unknown")]
    task_step_ns: i64,
    #[serde(skip_serializing_if = "is_unknown")]
    ready_wait_ns: i64,
    #[serde(skip_serializing_if = "is_unknown")]
    loop_idle_ns: i64,
}

fn is_unknown(v: &i64) -> bool {
    *v == scope_profiler_analysis::UNKNOWN
}

#[derive(Serialize)]
struct TaskOut<'a> {
    index: i64,
    kind: &'a str,
    name: &'a str,
    coro_name: &'a str,
    thread_index: i64,
    created_ns: i64,
    done_ns: i64,
    steps: i64,
    running_ns: i64,
    suspended_ns: i64,
    #[serde(skip_serializing_if = "is_unknown")]
    ready_wait_ns: i64,
}

/// One event-loop block (`loop_blocks`, per rank): absolute ns as the calls.
#[derive(Serialize, Deserialize)]
struct BlockJson {
    thread: i64,
    task: i64,
    start_ns: i64,
    end_ns: i64,
    delayed_tasks: i64,
}

#[derive(Serialize)]
struct DocOut<'a> {
    format: &'static str,
    format_version: i64,
    exporter: &'static str,
    time_unit: &'static str,
    num_ranks: u32,
    event_data_available: bool,
    metadata: Meta<'a>,
    regions: Vec<RowOut<'a>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    threads: BTreeMap<u32, Vec<ThreadOut<'a>>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    tasks: BTreeMap<u32, Vec<TaskOut<'a>>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    loop_blocks: BTreeMap<u32, Vec<BlockJson>>,
}

/// The document of `run` restricted to `sel` (ranks as a set; `sel.regions` names; the
/// label is not used). Regions in `region_names` order, each name's ranks ascending.
fn document<'a>(run: &'a Run, sel: &Selection) -> DocOut<'a> {
    let keep_rank = |rank: u32| sel.ranks.contains(&rank);
    let mut regions = Vec::new();
    // rows grouped by region in one pass, names looked up in a set (a scan per name would be
    // quadratic: 40,000 regions would take 7 s)
    let kept: Option<HashSet<&str>> = sel.regions.as_ref().map(|names| names.iter().map(String::as_str).collect());
    let mut rows_of: Vec<Vec<&RegionCalls>> = vec![Vec::new(); run.region_names.len()];
    for r in run.regions.iter().filter(|r| keep_rank(r.rank)) {
        if let Some(rows) = rows_of.get_mut(r.region as usize) {
            rows.push(r);
        }
    }
    for (id, name) in run.region_names.iter().enumerate() {
        if kept.as_ref().is_some_and(|k| !k.contains(name.as_str())) {
            continue;
        }
        let mut rows = std::mem::take(&mut rows_of[id]);
        rows.sort_by_key(|r| r.rank);
        regions.extend(rows.into_iter().map(|row| RowOut { name, row }));
    }
    let mut threads: BTreeMap<u32, Vec<ThreadOut>> = BTreeMap::new();
    for t in run.threads.iter().filter(|t| keep_rank(t.rank)) {
        threads.entry(t.rank).or_default().push(ThreadOut {
            index: t.index,
            name: &t.name,
            ident: t.ident,
            native_id: t.native_id,
            daemon: t.daemon,
            start_ns: t.start_ns,
            end_ns: t.end_ns,
            cpu_ns: t.cpu_ns,
            cpu_start_ns: t.cpu_start_ns,
            task_step_ns: t.task_step_ns,
            ready_wait_ns: t.ready_wait_ns,
            loop_idle_ns: t.loop_idle_ns,
        });
    }
    let mut tasks: BTreeMap<u32, Vec<TaskOut>> = BTreeMap::new();
    for t in run.tasks.iter().filter(|t| keep_rank(t.rank)) {
        tasks.entry(t.rank).or_default().push(TaskOut {
            index: t.index,
            kind: &t.kind,
            name: &t.name,
            coro_name: &t.coro_name,
            thread_index: t.thread_index,
            created_ns: t.created_ns,
            done_ns: t.done_ns,
            steps: t.steps,
            running_ns: t.running_ns,
            suspended_ns: t.suspended_ns,
            ready_wait_ns: t.ready_wait_ns,
        });
    }
    let mut loop_blocks: BTreeMap<u32, Vec<BlockJson>> = BTreeMap::new();
    for b in run.loop_blocks.iter().filter(|b| keep_rank(b.rank)) {
        loop_blocks.entry(b.rank).or_default().push(BlockJson {
            thread: b.thread,
            task: b.task,
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            delayed_tasks: b.delayed_tasks,
        });
    }
    DocOut {
        format: FORMAT_NAME,
        format_version: FORMAT_VERSION,
        exporter: EXPORTER,
        time_unit: "nanoseconds",
        num_ranks: run.num_ranks,
        event_data_available: run.regions.iter().all(|r| r.stored.is_none()),
        metadata: Meta(&run.metadata),
        regions,
        threads,
        tasks,
        loop_blocks,
    }
}

/// Write the JSON profile of `run` restricted to `sel` to `path` atomically (parent
/// directories created): rows of the ranks in `sel.ranks` (a set; pass every rank for the
/// reference's `ranks=None`) and of the regions `sel` keeps, in `region_names` order,
/// ranks ascending; lane tables of those ranks (sections left out when empty). `indent`
/// as Python's `json.dumps(indent=)`. A name ending in `.gz` (any case) is gzip-compressed
/// (level 9, mtime 0, no file name). Rows read without their events (`read_h5_summary`)
/// are written with empty event columns and `event_data_available: false`.
/// Errors: `ExportError::Io` naming the path.
pub fn write_json(run: &Run, sel: &Selection, indent: Option<usize>, path: &Path) -> Result<(), ExportError> {
    let doc = document(run, sel);
    let io = |e: io::Error| ExportError::Io(format!("could not write {}: {e}", path.display()));
    let gz = path.file_name().is_some_and(|n| n.to_string_lossy().to_lowercase().ends_with(".gz"));
    write_atomic(path, |w| {
        let emit = |w: &mut dyn Write| {
            let mut ser = serde_json::Serializer::with_formatter(w, PyFormatter::new(indent));
            doc.serialize(&mut ser).map_err(|e| ExportError::Io(format!("could not write {}: {e}", path.display())))
        };
        if gz {
            let mut enc: GzEncoder<&mut (dyn Write + Send)> =
                GzBuilder::new().mtime(0).operating_system(255).write(w, Compression::best());
            emit(&mut enc)?;
            enc.finish().map_err(io)?;
            Ok(())
        } else {
            emit(w)
        }
    })
}

// ---------------------------------------------------------------------------------------
// Reading

#[derive(Deserialize)]
struct DocIn {
    format: Option<Json>,
    format_version: Option<Json>,
    #[serde(default)]
    num_ranks: Option<u32>,
    #[serde(default)]
    metadata: Option<Json>,
    #[serde(default)]
    regions: Vec<RowIn>,
    #[serde(default)]
    threads: Option<BTreeMap<String, Vec<ThreadIn>>>,
    #[serde(default)]
    tasks: Option<BTreeMap<String, Vec<TaskIn>>>,
    #[serde(default)]
    loop_blocks: Option<BTreeMap<String, Vec<BlockJson>>>,
}

#[derive(Deserialize)]
struct RowIn {
    name: String,
    rank: u32,
    source_file: Option<String>,
    source_lineno: Option<i64>,
    source_text: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    aggregate: Option<Json>,
    #[serde(default)]
    start_times_ns: Vec<i64>,
    #[serde(default)]
    end_times_ns: Vec<i64>,
    event_metadata: Option<Json>,
    gpu_durations_ns: Option<Vec<i64>>,
    call_ids: Option<Vec<i64>>,
    parent_ids: Option<Vec<i64>>,
    thread_ids: Option<Vec<i64>>,
    task_ids: Option<Vec<i64>>,
    await_ns: Option<Vec<i64>>,
    ready_wait_ns: Option<Vec<i64>>,
    task_step_ns: Option<Vec<i64>>,
    exclusive_total_ns: Option<i64>,
}

fn minus_one() -> i64 {
    -1
}

#[derive(Deserialize)]
struct ThreadIn {
    index: i64,
    #[serde(default)]
    name: String,
    #[serde(default)]
    ident: i64,
    #[serde(default)]
    native_id: i64,
    #[serde(default)]
    daemon: bool,
    #[serde(default = "minus_one")]
    start_ns: i64,
    #[serde(default = "minus_one")]
    end_ns: i64,
    #[serde(default = "minus_one")]
    cpu_ns: i64,
    #[serde(default = "minus_one")]
    cpu_start_ns: i64,
    #[serde(default = "minus_one")]
    task_step_ns: i64,
    #[serde(default = "minus_one")]
    ready_wait_ns: i64,
    #[serde(default = "minus_one")]
    loop_idle_ns: i64,
}

#[derive(Deserialize)]
struct TaskIn {
    index: i64,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    coro_name: String,
    #[serde(default = "minus_one")]
    thread_index: i64,
    #[serde(default = "minus_one")]
    created_ns: i64,
    #[serde(default = "minus_one")]
    done_ns: i64,
    #[serde(default)]
    steps: i64,
    #[serde(default)]
    running_ns: i64,
    #[serde(default)]
    suspended_ns: i64,
    #[serde(default = "minus_one")]
    ready_wait_ns: i64,
}

/// The file's bytes, gunzipped when they start with the gzip magic.
fn read_bytes(path: &Path) -> Result<Vec<u8>, JsonError> {
    let shown = path.display();
    let file = File::open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => JsonError::NotFound(shown.to_string()),
        _ => JsonError::Io(format!("could not read {shown}: {e}")),
    })?;
    let mut raw = Vec::new();
    BufReader::new(file).read_to_end(&mut raw).map_err(|e| JsonError::Io(format!("could not read {shown}: {e}")))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|e| JsonError::Invalid(format!("{shown} is not a readable gzip file: {e}")))?;
        return Ok(out);
    }
    Ok(raw)
}

/// The words of [`JsonError::Invalid`] for a JSON document that is not a scope-profiler
/// profile at all (a foreign file, not a damaged profile).
pub const NOT_A_PROFILE: &str = "is not a scope-profiler JSON profile";

fn not_a_profile(path: &Path) -> JsonError {
    JsonError::Invalid(format!(
        "{} {NOT_A_PROFILE} (written by `scope-profiler export json` or `-o <name>.json`).",
        path.display()
    ))
}

/// `format` / `format_version` checks of the reference's reader.
fn check_header(path: &Path, format: Option<&Json>, version: Option<&Json>) -> Result<(), JsonError> {
    if !matches!(format, Some(Json::String(f)) if f == FORMAT_NAME) {
        return Err(not_a_profile(path));
    }
    let version = match version {
        None => 0,
        Some(Json::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)).unwrap_or(i64::MAX),
        Some(Json::String(s)) => s.trim().parse().map_err(|_| not_a_profile(path))?,
        Some(_) => return Err(not_a_profile(path)),
    };
    if version > FORMAT_VERSION {
        return Err(JsonError::Invalid(format!(
            "{} uses JSON profile format version {version}; this package supports versions through \
             {FORMAT_VERSION}. Upgrade scope-profiler to read this file.",
            path.display()
        )));
    }
    Ok(())
}

/// Metadata entry as a [`MetaValue`]: integers, floats, strings, lists of strings; booleans
/// as 0/1; `null` dropped; anything else kept as its JSON text.
fn meta_value(v: Json) -> Option<MetaValue> {
    Some(match v {
        Json::Null => return None,
        Json::Bool(b) => MetaValue::Int(b as i64),
        Json::Number(n) => match n.as_i64() {
            Some(i) => MetaValue::Int(i),
            None => MetaValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => MetaValue::Str(s),
        Json::Array(items) if items.iter().all(|i| matches!(i, Json::String(_))) => MetaValue::StrList(
            items
                .into_iter()
                .map(|i| match i {
                    Json::String(s) => s,
                    _ => unreachable!("checked above"),
                })
                .collect(),
        ),
        other => MetaValue::Str(String::from_utf8(to_py_json(&other, None).ok()?).ok()?),
    })
}

fn rank_key(path: &Path, key: &str) -> Result<u32, JsonError> {
    key.trim()
        .parse()
        .map_err(|_| JsonError::Invalid(format!("{}: lane table rank {key:?} is not a rank number", path.display())))
}

/// A region row as [`RegionCalls`] (region id `id`). Errors: columns of unequal length,
/// summary-only (`aggregate`) rows.
fn region_row(path: &Path, id: u32, r: RowIn) -> Result<RegionCalls, JsonError> {
    let bad =
        |what: String| JsonError::Invalid(format!("{}: region {:?} rank {}: {what}", path.display(), r.name, r.rank));
    if r.aggregate.is_some() {
        return Err(bad("summary-only rows (\"aggregate\") are not supported".into()));
    }
    let n = r.start_times_ns.len();
    let col = |key: &str, c: &Option<Vec<i64>>| -> Result<Option<Int64Array>, JsonError> {
        match c {
            Some(v) if v.len() != n => Err(bad(format!("{key} has {} values for {n} calls", v.len()))),
            Some(v) => Ok(Some(Int64Array::from(v.clone()))),
            None => Ok(None),
        }
    };
    if r.end_times_ns.len() != n {
        return Err(bad(format!("end_times_ns has {} values for {n} calls", r.end_times_ns.len())));
    }
    // as the HDF5 reader refuses it (read, `summary` would print a negative total for such a
    // JSON profile)
    if let Some(k) = r.start_times_ns.iter().zip(&r.end_times_ns).position(|(s, e)| e < s) {
        return Err(bad(format!(
            "call {k} ends before it starts ({} ns before). No recording has one: the file is damaged.",
            r.start_times_ns[k].saturating_sub(r.end_times_ns[k])
        )));
    }
    let event_metadata = match &r.event_metadata {
        Some(Json::Array(items)) if items.len() != n && !items.is_empty() => {
            return Err(bad(format!("event_metadata has {} entries for {n} calls", items.len())))
        }
        Some(m @ Json::Array(items)) if items.iter().any(Json::truthy) => {
            Some(String::from_utf8(to_py_json(m, None).map_err(|e| bad(e.to_string()))?).unwrap_or_default())
        }
        Some(Json::Array(_)) | Some(Json::Null) | None => None,
        Some(_) => return Err(bad("event_metadata is not a list".into())),
    };
    let mut row = RegionCalls::new(
        id,
        r.rank,
        Int64Array::from(r.start_times_ns.clone()),
        Int64Array::from(r.end_times_ns.clone()),
    );
    row.gpu_ns = col("gpu_durations_ns", &r.gpu_durations_ns)?;
    row.call_ids = col("call_ids", &r.call_ids)?.map(IdColumn::from);
    row.parent_ids = col("parent_ids", &r.parent_ids)?.map(IdColumn::from);
    row.thread_ids = col("thread_ids", &r.thread_ids)?;
    row.task_ids = col("task_ids", &r.task_ids)?;
    row.await_ns = col("await_ns", &r.await_ns)?;
    row.ready_wait_ns = col("ready_wait_ns", &r.ready_wait_ns)?;
    row.task_step_ns = col("task_step_ns", &r.task_step_ns)?;
    row.source_file = r.source_file;
    row.source_line = r.source_lineno;
    row.source_text = r.source_text;
    row.tags = r.tags;
    row.event_metadata = event_metadata;
    row.exclusive_total_ns = r.exclusive_total_ns;
    Ok(row)
}

/// Read the JSON profile at `path` (gzip-compressed or not, by content) into a [`Run`].
///
/// Region names in order of first appearance; a repeated (name, rank) row replaces the
/// earlier one (the reference's dict). Rows sorted by (rank, name id); lane tables by
/// (rank, index). `num_ranks` is the document's, raised to cover every rank present.
/// Errors: [`JsonError::NotFound`]; [`JsonError::Invalid`] when `format` is not
/// `"scope-profiler-profile"`, `format_version > 1`, the text is not JSON (truncated,
/// garbage) or a field has the wrong type or length; [`JsonError::Io`]. Every message names
/// the file.
pub fn read_json(path: &Path) -> Result<Run, JsonError> {
    let bytes = read_bytes(path)?;
    let doc: DocIn = match serde_json::from_slice(&bytes) {
        Ok(doc) => doc,
        Err(e) => {
            // a foreign document gets "not a profile", a broken profile the parser's message
            let head: Result<Json, _> = serde_json::from_slice(&bytes);
            if let Ok(Json::Object(fields)) = &head {
                let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v);
                check_header(path, get("format"), get("format_version"))?;
            } else if head.is_ok() || e.is_data() {
                return Err(not_a_profile(path));
            }
            return Err(JsonError::Invalid(format!("{} is not a valid JSON profile: {e}", path.display())));
        }
    };
    check_header(path, doc.format.as_ref(), doc.format_version.as_ref())?;

    let mut region_names: Vec<String> = Vec::new();
    let mut id_of: HashMap<String, u32> = HashMap::new();
    let mut regions: Vec<RegionCalls> = Vec::new();
    let mut slot_of: HashMap<(u32, u32), usize> = HashMap::new();
    for r in doc.regions {
        let id = *id_of.entry(r.name.clone()).or_insert_with(|| {
            region_names.push(r.name.clone());
            (region_names.len() - 1) as u32
        });
        let row = region_row(path, id, r)?;
        match slot_of.get(&(id, row.rank)) {
            Some(&slot) => regions[slot] = row,
            None => {
                slot_of.insert((id, row.rank), regions.len());
                regions.push(row);
            }
        }
    }
    regions.sort_by_key(|r| (r.rank, r.region));

    let mut threads = Vec::new();
    for (rank, rows) in doc.threads.unwrap_or_default() {
        let rank = rank_key(path, &rank)?;
        threads.extend(rows.into_iter().map(|t| ThreadRow {
            rank,
            index: t.index,
            ident: t.ident,
            native_id: t.native_id,
            daemon: t.daemon,
            start_ns: t.start_ns,
            end_ns: t.end_ns,
            cpu_ns: t.cpu_ns,
            cpu_start_ns: t.cpu_start_ns,
            task_step_ns: t.task_step_ns,
            ready_wait_ns: t.ready_wait_ns,
            loop_idle_ns: t.loop_idle_ns,
            name: t.name,
        }));
    }
    threads.sort_by_key(|t| (t.rank, t.index));
    let mut tasks = Vec::new();
    for (rank, rows) in doc.tasks.unwrap_or_default() {
        let rank = rank_key(path, &rank)?;
        tasks.extend(rows.into_iter().map(|t| {
            TaskRow::new(rank, t.index, t.kind, t.name, t.coro_name)
                .on_thread(t.thread_index)
                .lifetime(t.created_ns, t.done_ns)
                .timing(t.steps, t.running_ns, t.suspended_ns)
                .ready_wait(t.ready_wait_ns)
        }));
    }
    tasks.sort_by_key(|t| (t.rank, t.index));
    let mut loop_blocks = Vec::new();
    for (rank, rows) in doc.loop_blocks.unwrap_or_default() {
        let rank = rank_key(path, &rank)?;
        loop_blocks.extend(rows.into_iter().map(|b| scope_profiler_analysis::LoopBlockRow {
            rank,
            thread: b.thread,
            task: b.task,
            start_ns: b.start_ns,
            end_ns: b.end_ns,
            delayed_tasks: b.delayed_tasks,
        }));
    }
    loop_blocks.sort_by_key(|b| b.rank);

    let metadata = match doc.metadata {
        Some(Json::Object(fields)) => fields.into_iter().filter_map(|(k, v)| meta_value(v).map(|v| (k, v))).collect(),
        None | Some(Json::Null) => Vec::new(),
        Some(_) => return Err(JsonError::Invalid(format!("{}: metadata is not an object", path.display()))),
    };
    let max_rank = regions
        .iter()
        .map(|r| r.rank)
        .chain(threads.iter().map(|t| t.rank))
        .chain(tasks.iter().map(|t| t.rank))
        .max()
        .map(|r| r + 1);
    let num_ranks = doc.num_ranks.unwrap_or(0).max(max_rank.unwrap_or(0));
    Ok(Run { region_names, regions, threads, tasks, metadata, num_ranks, loop_blocks })
}

/// The target of each run (`(label, file stem)`) for `filepath` (the reference's
/// `export_json` naming, like speedscope's): the file name split at its first dot keeps the
/// tail as the suffix (default `.json`); with several runs the stem gets `_<slug>` of the
/// run's (de-duplicated) label; a directory gets `<file stem>.json` inside
/// ([`crate::export_plan`], the rules of every export).
///
/// Errors: [`PlanError`] (`EmptyName`, `IsADirectory`, `NotADirectory`).
pub fn json_paths(filepath: &Path, runs: &[(String, String)]) -> Result<Vec<PathBuf>, PlanError> {
    crate::export_plan::run_paths(crate::Format::Json, filepath, runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_separators_and_ascii_escapes() {
        let v: Json = serde_json::from_str(r#"{"b": [1, 2.5, "é😀"], "a": {}, "c": []}"#).unwrap();
        let s = String::from_utf8(to_py_json(&v, None).unwrap()).unwrap();
        assert_eq!(s, r#"{"b": [1, 2.5, "\u00e9\ud83d\ude00"], "a": {}, "c": []}"#);
        let s = String::from_utf8(to_py_json(&v, Some(1)).unwrap()).unwrap();
        assert_eq!(s, "{\n \"b\": [\n  1,\n  2.5,\n  \"\\u00e9\\ud83d\\ude00\"\n ],\n \"a\": {},\n \"c\": []\n}");
    }

    #[test]
    fn naming_follows_speedscope() {
        let run = ("run".to_string(), "run".to_string());
        let one = json_paths(Path::new("d/p.json.gz"), std::slice::from_ref(&run)).unwrap();
        assert_eq!(one, vec![PathBuf::from("d/p.json.gz")]);
        let two = json_paths(Path::new("d/p"), &[run.clone(), run.clone()]).unwrap();
        assert_eq!(two, vec![PathBuf::from("d/p_run.json"), PathBuf::from("d/p_run_2.json")]);
        assert_eq!(json_paths(Path::new("d/"), &[run]).unwrap(), vec![PathBuf::from("d/run.json")]);
    }
}
