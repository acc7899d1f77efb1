//! Settings of a profiling run (the keywords of `setup()` / `session()`): their names,
//! defaults and validation, in scope-profiler 0.7.5's order and words.
//!
//! The PyO3 crate turns each Python value into a [`Setting`] (its kind, and its Python
//! `repr` for the messages) and builds the Python objects; every decision is here: which
//! names exist ([`ALL_DEFAULTS`]), the "did you mean" of an unknown one
//! ([`unknown_settings_message`], `difflib.get_close_matches`' own algorithm), and the
//! checks of [`check`] (the error kinds map to `TypeError`, `ValueError`,
//! `NotImplementedError`, `OverflowError`).

use std::path::{Path, PathBuf};

use scope_profiler_analysis::py_repr;
use scope_profiler_formats::Format;

/// A default value of a setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// Python `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A str.
    Str(&'static str),
}

use Accepts::{Count, Flag, Label, Level, Names, OneOf, Path as P, Seconds, Size, Text};
use DefaultValue::{Bool as B, Int as I, None as N, Str as S};

/// What a setting accepts besides `None` (which keeps its default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Accepts {
    /// `True` or `False` (or the ints 1 and 0, which equal them).
    Flag,
    /// A path: a `str` or an `os.PathLike` giving one; not empty, without NUL.
    Path,
    /// A `str`.
    Text,
    /// A `str` or a number (`label`: the reference takes any value; a number is its text).
    Label,
    /// A `str` or an iterable of `str`.
    Names,
    /// One of these strings (`hdf5_compression`: lower case, surrounding blanks ignored).
    OneOf(&'static [&'static str]),
    /// An integer from 1 to [`MAX_COUNT`].
    Count,
    /// A positive integer.
    Size,
    /// An integer (`hdf5_compression_level`).
    Level,
    /// A number of seconds ([`scope_profiler_finalize::stream::check_interval`]).
    Seconds,
}

impl Accepts {
    /// What the setting accepts, as a message and the documentation say it.
    pub fn text(self) -> String {
        match self {
            Flag => "True or False".into(),
            P => "a str or os.PathLike path".into(),
            Text => "a str".into(),
            Label => "a str or a number".into(),
            Names => "a str or an iterable of str".into(),
            OneOf(values) => values.iter().map(|v| py_repr(v)).collect::<Vec<_>>().join(", "),
            Count => format!("an integer from 1 to {MAX_COUNT}"),
            Size => "a positive integer".into(),
            Level => "an integer".into(),
            Seconds => "a number of seconds from 0.01 to 86400".into(),
        }
    }
}

/// The largest count a setting takes (`buffer_limit`, `recursive_call_limit`): 2**63 - 1.
pub const MAX_COUNT: i64 = i64::MAX;

/// One setting: its name, its default and what it accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    pub name: &'static str,
    pub default: DefaultValue,
    pub accepts: Accepts,
}

const fn spec(name: &'static str, default: DefaultValue, accepts: Accepts) -> Spec {
    Spec { name, default, accepts }
}

/// Every setting of `setup()`: the reference's `ProfilingConfig.__init__` ones in its order
/// (the first 29, [`DEFAULTS`]), then this package's own ([`OWN_DEFAULTS`]).
pub const SETTINGS: [Spec; 35] = [
    spec("file_path", S("profiling_data.h5"), P),
    spec("label", N, Label),
    spec("use_likwid", B(false), Flag),
    spec("perf_events", N, Names),
    spec("use_line_profiler", B(false), Flag),
    spec("use_memray", B(false), Flag),
    spec("memory_profile_path", N, P),
    spec("memray_native_traces", B(false), Flag),
    spec("memray_trace_python_allocators", B(false), Flag),
    spec("memray_follow_fork", B(false), Flag),
    spec("deactivate_profiling", B(false), Flag),
    spec("use_nvtx", B(false), Flag),
    spec("use_gpu_timing", B(false), Flag),
    spec("gpu_timing_backend", S("auto"), Text),
    spec("deactivate_file_output", B(false), Flag),
    spec("recursive_profile", B(false), Flag),
    spec("aggregation_mode", B(false), Flag),
    spec("profile_mpi_calls", B(false), Flag),
    spec("track_threads", B(false), Flag),
    spec("track_async", B(false), Flag),
    spec("capture_region_source", B(false), Flag),
    spec("metadata_detail", S("minimal"), OneOf(&METADATA_DETAILS)),
    spec("buffer_limit", I(1024), Count),
    spec("output_mode", S("auto"), OneOf(&OUTPUT_MODES)),
    spec("hdf5_compression", N, OneOf(&COMPRESSIONS)),
    spec("hdf5_compression_level", N, Level),
    spec("hdf5_chunk_size", N, Size),
    spec("gpu_sync_on_exit", B(false), Flag),
    spec("enable_tags", N, Names),
    // this package's own: flush_interval streams completed calls to a sidecar beside
    // file_path (docs/recovery.md); the recursive_* options say what recursive_profile=True
    // traces and how many calls it records at most (docs/tracing.md)
    spec("flush_interval", N, Seconds),
    spec("recursive_all", B(false), Flag),
    spec("recursive_include", N, Names),
    spec("recursive_exclude", N, Names),
    spec("recursive_entrypoint", N, Text),
    spec("recursive_call_limit", I(20_000_000), Count),
];

/// `(name, default)` of `SETTINGS[from..from + N]`.
const fn defaults<const LEN: usize>(from: usize) -> [(&'static str, DefaultValue); LEN] {
    let mut out = [("", N); LEN];
    let mut i = 0;
    while i < LEN {
        out[i] = (SETTINGS[from + i].name, SETTINGS[from + i].default);
        i += 1;
    }
    out
}

/// Every setting of the reference's `ProfilingConfig.__init__` with its default, in that
/// order (29 settings).
pub const DEFAULTS: [(&str, DefaultValue); 29] = defaults(0);

/// Settings of this package that the reference does not have, with their defaults.
pub const OWN_DEFAULTS: [(&str, DefaultValue); 6] = defaults(29);

/// [`DEFAULTS`] then [`OWN_DEFAULTS`]: every setting name `setup()` accepts.
pub fn all_defaults() -> impl Iterator<Item = (&'static str, DefaultValue)> {
    SETTINGS.iter().map(|s| (s.name, s.default))
}

/// Whether `name` is a setting ([`SETTINGS`]).
pub fn is_setting(name: &str) -> bool {
    spec_of(name).is_some()
}

/// The setting `name`, if it is one.
pub fn spec_of(name: &str) -> Option<&'static Spec> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The values `output_mode` accepts.
pub const OUTPUT_MODES: [&str; 3] = ["auto", "direct", "parallel"];

/// The values `hdf5_compression` accepts (`None`, `""` and `"none"` too: no compression).
pub const COMPRESSIONS: [&str; 4] = ["auto", "gzip", "lzf", "zstd"];

/// The values `metadata_detail` accepts.
pub const METADATA_DETAILS: [&str; 2] = ["minimal", "full"];

/// Settings accepted but not implemented: true is refused with `NotImplementedError`.
pub const NOT_IMPLEMENTED: [&str; 7] = [
    "use_line_profiler",
    "use_gpu_timing",
    "use_nvtx",
    "use_likwid",
    "aggregation_mode",
    "use_memray",
    "profile_mpi_calls",
];

/// The reference's refusal of thread tracking beside the modes it cannot combine with.
pub const THREADS_INCOMPATIBLE: &str = "track_threads/track_async cannot be combined with line, GPU, \
     NVTX, LIKWID, perf events, or aggregation profiling";

/// What a setting's Python value is, as far as the checks need to know.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `None`.
    None,
    /// A `bool`.
    Bool(bool),
    /// An `int` (not `bool`) that fits in i64.
    Int(i64),
    /// An `int` beyond i64: its sign and `float(value)`, `None` when that overflows.
    BigInt { negative: bool, as_float: Option<f64> },
    /// A `float` (or subclass).
    Float(f64),
    /// A `str` (or subclass).
    Str(String),
    /// What `os.fspath()` gave for an `os.PathLike` (not a `str` itself): a `str` path.
    Path(PathBuf),
    /// A non-`str` iterable's items (for a setting taking names): the `str` ones' text,
    /// `None` for the others.
    Items(Vec<Option<String>>),
    /// Anything else.
    Other,
}

/// One setting's value: its kind, its truth value (that of a `bool`; `false` for
/// anything else, which a flag does not accept) and its `repr` (for messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The value's kind.
    pub value: Value,
    /// `bool(value)`.
    pub truthy: bool,
    /// `repr(value)`.
    pub repr: String,
}

impl Setting {
    /// A setting given as `value`, shown as `repr` (true: `True`, or the int 1 a flag
    /// also takes).
    pub fn new(value: Value, repr: String) -> Setting {
        Setting { truthy: matches!(value, Value::Bool(true) | Value::Int(1)), value, repr }
    }
}

/// The option groups of `ProfilingOptions` and of a settings file's `[profiling.<group>]`
/// tables: group name -> (field, flat setting) pairs.
pub const OPTION_GROUPS: [(&str, &[(&str, &str)]); 3] = [
    (
        "memray",
        &[
            ("enabled", "use_memray"),
            ("path", "memory_profile_path"),
            ("native_traces", "memray_native_traces"),
            ("trace_python_allocators", "memray_trace_python_allocators"),
            ("follow_fork", "memray_follow_fork"),
        ],
    ),
    (
        "gpu",
        &[
            ("timing", "use_gpu_timing"),
            ("backend", "gpu_timing_backend"),
            ("nvtx", "use_nvtx"),
            ("sync_on_exit", "gpu_sync_on_exit"),
        ],
    ),
    (
        "hdf5",
        &[
            ("compression", "hdf5_compression"),
            ("compression_level", "hdf5_compression_level"),
            ("chunk_size", "hdf5_chunk_size"),
        ],
    ),
];

/// The fields of the option group `name` (`memray`, `gpu`, `hdf5`), each with the flat
/// setting it sets, in the group dataclass's field order; None for another name.
pub fn option_group(name: &str) -> Option<&'static [(&'static str, &'static str)]> {
    OPTION_GROUPS.iter().find(|(group, _)| *group == name).map(|(_, fields)| *fields)
}

/// A group entry of a settings file's `[profiling]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEntry {
    /// A table with these keys (file order).
    Table(Vec<String>),
    /// Anything else.
    NotTable,
}

/// Where a flat setting of a settings file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlatSource {
    /// The `[profiling]` table's own key of that name.
    Direct(String),
    /// `[profiling.<group>]`'s `key`.
    Group { group: &'static str, key: String },
}

/// The flat settings of a settings file's `[profiling]` table (or top-level table) with
/// its keys `keys` (file order) and its group tables `group(name)` (None when absent): its
/// own keys but the group names, then each group's keys as their flat settings. Errors
/// (`ValueError`, the words of `load_profiling_config`): a group that is not a table, an
/// unknown key in a group, a setting given both directly and in a group, unknown settings.
pub fn flatten_settings_table(
    keys: &[String],
    group: impl Fn(&str) -> Option<GroupEntry>,
) -> Result<Vec<(String, FlatSource)>, SettingsError> {
    let is_group = |k: &str| OPTION_GROUPS.iter().any(|(g, _)| *g == k);
    let mut flat: Vec<(String, FlatSource)> =
        keys.iter().filter(|k| !is_group(k)).map(|k| (k.clone(), FlatSource::Direct(k.clone()))).collect();
    for (name, fields) in OPTION_GROUPS {
        let table = match group(name) {
            None => continue,
            Some(GroupEntry::NotTable) => {
                return Err(value_error(format!("Profiling setting {} must be a TOML table", py_repr(name))))
            }
            Some(GroupEntry::Table(table)) => table,
        };
        let mut unknown: Vec<&str> =
            table.iter().map(String::as_str).filter(|k| !fields.iter().any(|(f, _)| f == k)).collect();
        unknown.sort_unstable();
        unknown.dedup();
        if !unknown.is_empty() {
            return Err(value_error(format!("Unknown [{name}] profiling setting(s): {}", unknown.join(", "))));
        }
        for key in table {
            let flat_key = fields.iter().find(|(f, _)| *f == key).map(|(_, s)| *s).unwrap_or_default();
            if flat.iter().any(|(k, _)| k == flat_key) {
                return Err(value_error(format!(
                    "Profiling setting {} is set both directly and as {name}.{key}",
                    py_repr(flat_key)
                )));
            }
            flat.push((flat_key.to_string(), FlatSource::Group { group: name, key }));
        }
    }
    let unknown: Vec<&str> = flat.iter().map(|(k, _)| k.as_str()).filter(|k| !is_setting(k)).collect();
    if !unknown.is_empty() {
        return Err(value_error(unknown_settings_message(&unknown)));
    }
    Ok(flat)
}

/// The `ValueError` message of `ProfilingOptions.to_kwargs()` for a setting given twice:
/// `direct` the flat settings the bag sets itself, `groups` each option group set (in
/// `memray`, `gpu`, `hdf5` order) with the flat settings it sets (its fields' order). The
/// first of a group's settings that `direct` or an earlier group already sets is named;
/// `None` when every setting is given once.
pub fn option_bag_conflict(direct: &[String], groups: &[(String, Vec<String>)]) -> Option<String> {
    let mut seen: Vec<&str> = direct.iter().map(String::as_str).collect();
    for (name, keys) in groups {
        for key in keys {
            if seen.contains(&key.as_str()) {
                return Some(format!(
                    "{} is set both directly and on the {} option group; set it in one place",
                    py_repr(key),
                    py_repr(name)
                ));
            }
            seen.push(key);
        }
    }
    None
}

/// The HDF5 file a run with `output=` writes: `output` itself, or for another format
/// ([`Format::of_profile_path`]: a JSON profile, an HTML report) `<output>.scope-profiler.h5`
/// beside it (the reference's name: same directory, so publishing stays a rename), rendered
/// to `output` after each finalize.
pub fn recording_path(output: &Path) -> PathBuf {
    match Format::of_profile_path(output) {
        Format::Hdf5 => output.to_path_buf(),
        _ => {
            let mut name = output.as_os_str().to_owned();
            name.push(".scope-profiler.h5");
            PathBuf::from(name)
        }
    }
}

/// `setup(output=...)`'s settings: `file_path` (the [`recording_path`] of `requested`;
/// None for `output=None`) and `deactivate_file_output`. A `TypeError` when the keywords
/// also gave `file_path` or `deactivate_file_output` (`given`).
pub fn output_settings(requested: Option<&Path>, given: &[&str]) -> Result<(Option<PathBuf>, bool), SettingsError> {
    let mut conflicts: Vec<&str> =
        ["file_path", "deactivate_file_output"].into_iter().filter(|n| given.contains(n)).collect();
    conflicts.sort_unstable();
    if !conflicts.is_empty() {
        return Err(SettingsError {
            kind: ErrorKind::Type,
            message: format!("output cannot be combined with {}", conflicts.join(", ")),
        });
    }
    Ok(match requested {
        None => (None, true),
        Some(output) => (Some(recording_path(output)), false),
    })
}

/// Which Python exception a refused setting raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `TypeError` (unknown names).
    Type,
    /// `ValueError`.
    Value,
    /// `NotImplementedError` (a mode this package does not have).
    NotImplemented,
    /// `OverflowError` (an int too large for a float, as `math.isfinite` raises).
    Overflow,
}

/// A refused setting: the exception kind and the reference's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// The exception to raise.
    pub kind: ErrorKind,
    /// Its message.
    pub message: String,
}

fn value_error(message: impl Into<String>) -> SettingsError {
    SettingsError { kind: ErrorKind::Value, message: message.into() }
}

/// What [`check`] derives from valid settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// `hdf5_compression` normalized: lower case, `""`/`"none"`/None -> None.
    pub hdf5_compression: Option<&'static str>,
    /// `flush_interval` in seconds, None = off.
    pub flush_interval: Option<f64>,
}

/// The reference's message for unknown setting names: each name's `repr` (sorted), with
/// the closest setting name when one is close enough (`difflib.get_close_matches(name,
/// sorted(names), n=1)`).
pub fn unknown_settings_message<S: AsRef<str>>(names: &[S]) -> String {
    let mut sorted: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    let mut candidates: Vec<&str> = all_defaults().map(|(n, _)| n).collect();
    candidates.sort_unstable();
    let parts: Vec<String> = sorted
        .iter()
        .map(|name| match close_match(name, &candidates, 0.6) {
            Some(close) => format!("{} (did you mean {}?)", py_repr(name), py_repr(close)),
            None => py_repr(name),
        })
        .collect();
    format!("Unknown profiling setting(s): {}", parts.join(", "))
}

/// `difflib.get_close_matches(word, possibilities, n=1, cutoff)`: the possibility with the
/// highest `SequenceMatcher(None, possibility, word).ratio()` of at least `cutoff`, the
/// greater string on a tie.
pub fn close_match<'a>(word: &str, possibilities: &[&'a str], cutoff: f64) -> Option<&'a str> {
    let b: Vec<char> = word.chars().collect();
    let matcher = Matcher::new(&b);
    let mut best: Option<(f64, &str)> = None;
    for &x in possibilities {
        let a: Vec<char> = x.chars().collect();
        let ratio = matcher.ratio(&a);
        if ratio >= cutoff && best.is_none_or(|(r, s)| (ratio, x) > (r, s)) {
            best = Some((ratio, x));
        }
    }
    best.map(|(_, x)| x)
}

/// `difflib.SequenceMatcher` with `isjunk=None`, `autojunk=True` and a fixed second
/// sequence `b`.
struct Matcher<'b> {
    b: &'b [char],
    /// Positions of each element of `b`, popular ones left out.
    b2j: std::collections::HashMap<char, Vec<usize>>,
}

impl<'b> Matcher<'b> {
    fn new(b: &'b [char]) -> Matcher<'b> {
        let mut b2j: std::collections::HashMap<char, Vec<usize>> = std::collections::HashMap::new();
        for (i, &c) in b.iter().enumerate() {
            b2j.entry(c).or_default().push(i);
        }
        if b.len() >= 200 {
            let ntest = b.len() / 100 + 1;
            b2j.retain(|_, idxs| idxs.len() <= ntest);
        }
        Matcher { b, b2j }
    }

    /// `ratio()`: 2 M / T, M the matched elements, T both lengths.
    fn ratio(&self, a: &[char]) -> f64 {
        let total = a.len() + self.b.len();
        if total == 0 {
            return 1.0;
        }
        let mut matches = 0;
        let mut queue = vec![(0, a.len(), 0, self.b.len())];
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.find_longest_match(a, alo, ahi, blo, bhi);
            if k > 0 {
                matches += k;
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        2.0 * matches as f64 / total as f64
    }

    /// `find_longest_match` (no junk: its junk-extension passes do nothing).
    fn find_longest_match(&self, a: &[char], alo: usize, ahi: usize, blo: usize, bhi: usize) -> (usize, usize, usize) {
        let b = self.b;
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
        let mut j2len: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for (i, c) in a.iter().enumerate().take(ahi).skip(alo) {
            let mut next = std::collections::HashMap::new();
            for &j in self.b2j.get(c).map(Vec::as_slice).unwrap_or(&[]) {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j.checked_sub(1).and_then(|p| j2len.get(&p)).copied().unwrap_or(0) + 1;
                next.insert(j, k);
                if k > bestsize {
                    (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                }
            }
            j2len = next;
        }
        // popular elements are not junk: a match extends over them
        while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
            (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
        }
        while besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] == b[bestj + bestsize] {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }
}

/// Python's `str.strip()` whitespace (`str.isspace`: Unicode White_Space and the
/// separators `\x1c`-`\x1f`).
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// `hdf5_compression` lower-cased and stripped, `""`/`"none"`/None -> None; a `ValueError`
/// for anything else than `auto`, `gzip`, `lzf`, `zstd`.
pub fn normalized_compression(value: &Setting) -> Result<Option<&'static str>, SettingsError> {
    const KNOWN: [&str; 4] = ["auto", "gzip", "lzf", "zstd"];
    let shown = match &value.value {
        Value::None => return Ok(None),
        Value::Str(s) => {
            let s = s.trim_matches(is_py_space).to_lowercase();
            if s.is_empty() || s == "none" {
                return Ok(None);
            }
            if let Some(known) = KNOWN.iter().find(|k| **k == s) {
                return Ok(Some(known));
            }
            py_repr(&s)
        }
        _ => value.repr.clone(),
    };
    Err(value_error(format!("hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got {shown}")))
}

fn as_int(value: &Value) -> Option<i128> {
    match value {
        Value::Int(i) => Some(i128::from(*i)),
        Value::BigInt { negative: true, .. } => Some(i128::MIN),
        Value::BigInt { negative: false, .. } => Some(i128::MAX),
        _ => None,
    }
}

fn positive_int(value: &Value) -> bool {
    as_int(value).is_some_and(|i| i > 0)
}

/// What a run records with: the settings [`validate`] accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSettings {
    /// What the reference's checks derive ([`check`]).
    pub checked: Checked,
    /// `file_path` as given, else the default.
    pub file_path: PathBuf,
    /// `label`, None when unset or empty.
    pub label: Option<String>,
    /// `track_threads`, or `track_async` (which implies it).
    pub track_threads: bool,
    pub track_async: bool,
    /// `perf_events` and `enable_tags` as lists (a single `str` is one name).
    pub perf_events: Vec<String>,
    pub enable_tags: Vec<String>,
}

/// The settings `given` (name and value; a `None` value is left out: it keeps the default)
/// checked, nothing else done: unknown names (`TypeError`), each value against what
/// [`SETTINGS`] says it accepts (table order; `TypeError` for a wrong type, `ValueError`
/// for a wrong value), the reference's checks in its order and words ([`check`]), what this
/// package does not implement (`NotImplementedError`), and last, when the run writes a
/// file, whether `file_path`'s directory takes it ([`unwritable`], `ValueError`).
pub fn validate(given: &[(String, Setting)]) -> Result<RunSettings, SettingsError> {
    let unknown: Vec<&str> = given.iter().map(|(n, _)| n.as_str()).filter(|n| !is_setting(n)).collect();
    if !unknown.is_empty() {
        return Err(SettingsError { kind: ErrorKind::Type, message: unknown_settings_message(&unknown) });
    }
    for spec in &SETTINGS {
        if let Some((_, setting)) = given.iter().find(|(n, _)| n == spec.name) {
            check_accepted(spec, setting)?;
        }
    }
    let get = |name: &str| match given.iter().find(|(n, _)| n == name) {
        Some((_, s)) => s.clone(),
        None => default_setting(name),
    };
    let (perf_events, enable_tags) = (names_of(&get("perf_events").value), names_of(&get("enable_tags").value));
    let checked = check(get, !perf_events.is_empty())?;
    let file_path = path_of(&get("file_path").value).unwrap_or_default();
    let on = |name: &str| get(name).truthy;
    if !on("deactivate_profiling") && !on("deactivate_file_output") {
        if let Some(refusal) = path_refusal("file_path", &file_path) {
            return Err(value_error(refusal));
        }
    }
    let label = label_of(&get("label"));
    let track_async = on("track_async");
    Ok(RunSettings {
        checked,
        file_path,
        label,
        track_threads: on("track_threads") || track_async,
        track_async,
        perf_events,
        enable_tags,
    })
}

/// The setting a default stands for.
fn default_setting(name: &str) -> Setting {
    let value = match spec_of(name).map_or(DefaultValue::None, |s| s.default) {
        DefaultValue::None => Value::None,
        DefaultValue::Bool(b) => Value::Bool(b),
        DefaultValue::Int(i) => Value::Int(i),
        DefaultValue::Str(s) => Value::Str(s.to_string()),
    };
    Setting::new(value, String::new())
}

/// A wrong type or value of `spec`'s setting, by what [`SETTINGS`] says it accepts. The
/// kinds the reference checks itself (choices, levels, sizes, seconds, counts below 1) are
/// left to [`check`], which says it in its words.
fn check_accepted(spec: &Spec, setting: &Setting) -> Result<(), SettingsError> {
    let name = spec.name;
    let wrong_type = || SettingsError {
        kind: ErrorKind::Type,
        message: format!("{name} must be {}, got {}", spec.accepts.text(), setting.repr),
    };
    match (spec.accepts, &setting.value) {
        (Flag, Value::Bool(_) | Value::Int(0 | 1)) | (Text, Value::Str(_)) | (Names, Value::Str(_)) => Ok(()),
        (Names, Value::Items(items)) if items.iter().all(Option::is_some) => Ok(()),
        (P, Value::Str(_) | Value::Path(_)) => match path_of(&setting.value).as_deref().and_then(path_problem) {
            Some(problem) => Err(value_error(format!("{name} {problem}"))),
            None => Ok(()),
        },
        (Label, Value::Str(_) | Value::Int(_) | Value::BigInt { .. } | Value::Float(_)) => Ok(()),
        (Flag | Text | Label | Names | P, _) => Err(wrong_type()),
        (Seconds, Value::Str(_) | Value::Path(_) | Value::Items(_) | Value::Other) => Err(wrong_type()),
        (Count, Value::BigInt { negative: false, .. }) => {
            Err(value_error(format!("{name} must be {}, got {}", spec.accepts.text(), setting.repr)))
        }
        _ => Ok(()),
    }
}

/// The run's label: `label`'s text (a number's as Python shows it); None when unset,
/// empty or zero (the reference keeps a label only when it is true).
fn label_of(setting: &Setting) -> Option<String> {
    match &setting.value {
        Value::Str(s) if !s.is_empty() => Some(s.clone()),
        Value::Int(0) => None,
        Value::Float(f) if *f == 0.0 => None,
        Value::Int(_) | Value::BigInt { .. } | Value::Float(_) => Some(setting.repr.clone()),
        _ => None,
    }
}

/// A path setting's value as a path (`None` for another kind of value).
fn path_of(value: &Value) -> Option<PathBuf> {
    match value {
        Value::Str(s) => Some(PathBuf::from(s)),
        Value::Path(p) => Some(p.clone()),
        _ => None,
    }
}

/// What is wrong with a path before anything is written: empty, or with a NUL character
/// (no file name holds one).
fn path_problem(path: &Path) -> Option<&'static str> {
    if path.as_os_str().is_empty() {
        Some("must not be empty")
    } else if path.as_os_str().as_encoded_bytes().contains(&0) {
        Some("contains a NUL character, which no file name can hold")
    } else {
        None
    }
}

/// Why a file cannot be written at `path`, found without creating it (one `stat` and one
/// `access(2)`): it is a directory, its directory is missing, is not a directory, or
/// refuses this process; `None` when it can be (a later failure still raises at
/// `finalize()`, keeping the run).
pub fn unwritable(path: &Path) -> Option<String> {
    if let Some(problem) = path_problem(path) {
        return Some(problem.to_string());
    }
    if path.is_dir() {
        return Some("is a directory; name the file to write".into());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let shown = py_repr(&dir.to_string_lossy());
    if !dir.exists() {
        return Some(format!("cannot be written: the directory {shown} does not exist"));
    }
    if !dir.is_dir() {
        return Some(format!("cannot be written: {shown} is not a directory"));
    }
    let c_dir = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    if unsafe { libc::access(c_dir.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let reason = std::io::Error::last_os_error();
        return Some(format!("cannot be written: the directory {shown} refuses it ({reason})"));
    }
    None
}

/// The names of a setting taking names: a `str` is one, an iterable its items.
fn names_of(value: &Value) -> Vec<String> {
    match value {
        Value::Str(s) => vec![s.clone()],
        Value::Items(items) => items.iter().flatten().cloned().collect(),
        _ => Vec::new(),
    }
}

/// `setup(region_tags=...)`: the tags (a `str` is one tag), `TypeError` unless a `str` or
/// an iterable of `str`.
pub fn region_tags(setting: &Setting) -> Result<Vec<String>, SettingsError> {
    let spec = Spec { name: "region_tags", default: DefaultValue::None, accepts: Names };
    check_accepted(&spec, setting)?;
    Ok(names_of(&setting.value))
}

/// `setup(output=...)`: the path asked for, refused as `file_path` is ([`unwritable`]) but
/// naming `output`: `TypeError` for another type than a path, `ValueError` for a path that
/// cannot be written.
pub fn output_path(setting: &Setting) -> Result<PathBuf, SettingsError> {
    let spec = Spec { name: "output", default: DefaultValue::None, accepts: P };
    check_accepted(&spec, setting)?;
    let path = path_of(&setting.value).unwrap_or_default();
    match path_refusal("output", &path) {
        Some(refusal) => Err(value_error(refusal)),
        None => Ok(path),
    }
}

/// Why the setting `name` cannot be `path`, as the refusal says it: `{name} '{path}'
/// {why}` ([`unwritable`]); None when a file can be written there.
pub fn path_refusal(name: &str, path: &Path) -> Option<String> {
    unwritable(path).map(|why| format!("{name} {} {why}", py_repr(&path.to_string_lossy())))
}

/// The checks of every setting, in the reference's order and words; `get(name)` is the
/// setting's value (defaults filled in). `perf_events_given`: `perf_events` names at least
/// one event.
pub fn check(get: impl Fn(&str) -> Setting, perf_events_given: bool) -> Result<Checked, SettingsError> {
    let hdf5_compression = normalized_compression(&get("hdf5_compression"))?;
    check_output(&get, hdf5_compression)?;
    check_modes(&get, perf_events_given)?;
    if !positive_int(&get("buffer_limit").value) {
        return Err(value_error("buffer_limit must be a positive integer"));
    }
    let limit = get("recursive_call_limit");
    if !positive_int(&limit.value) {
        return Err(value_error(format!("recursive_call_limit must be a positive integer, got {}", limit.repr)));
    }
    let flush_interval = checked_flush_interval(&get)?;
    Ok(Checked { hdf5_compression, flush_interval })
}

/// The output settings' checks.
fn check_output(get: &impl Fn(&str) -> Setting, compression: Option<&str>) -> Result<(), SettingsError> {
    if get("gpu_sync_on_exit").truthy && !get("use_gpu_timing").truthy {
        return Err(value_error("gpu_sync_on_exit requires use_gpu_timing=True"));
    }
    let mode = get("output_mode");
    if !matches!(&mode.value, Value::Str(s) if ["auto", "direct", "parallel"].contains(&s.as_str())) {
        return Err(value_error(format!("output_mode must be 'auto', 'direct', or 'parallel', got {}", mode.repr)));
    }
    let chunk = get("hdf5_chunk_size").value;
    if chunk != Value::None && !positive_int(&chunk) {
        return Err(value_error("hdf5_chunk_size must be a positive integer or None"));
    }
    let level = get("hdf5_compression_level").value;
    if level != Value::None && as_int(&level).is_none() {
        return Err(value_error("hdf5_compression_level must be an integer or None"));
    }
    if let Some(level) = as_int(&level) {
        match compression {
            Some("gzip") if !(0..=9).contains(&level) => {
                return Err(value_error("GZIP compression level must be between 0 and 9"))
            }
            Some("zstd") if !(1..=22).contains(&level) => {
                return Err(value_error("Zstandard compression level must be between 1 and 22"))
            }
            Some("lzf") => return Err(value_error("LZF compression does not accept a compression level")),
            _ => {}
        }
    }
    let detail = get("metadata_detail");
    if !matches!(&detail.value, Value::Str(s) if METADATA_DETAILS.contains(&s.as_str())) {
        return Err(value_error(format!("metadata_detail must be one of ('minimal', 'full'), got {}", detail.repr)));
    }
    Ok(())
}

/// Mode combinations the reference refuses, then the modes this package does not have.
fn check_modes(get: &impl Fn(&str) -> Setting, perf_events_given: bool) -> Result<(), SettingsError> {
    let on = |name: &str| get(name).truthy;
    let other_modes =
        on("use_line_profiler") || on("use_gpu_timing") || on("use_likwid") || on("use_nvtx") || perf_events_given;
    if on("aggregation_mode") && other_modes {
        return Err(value_error("aggregation_mode cannot be combined with line, GPU, NVTX, LIKWID, or perf events"));
    }
    if (on("track_threads") || on("track_async")) && (other_modes || on("aggregation_mode")) {
        return Err(value_error(THREADS_INCOMPATIBLE));
    }
    // not implemented by this package: refused clearly rather than recording something else
    if let Some(name) = NOT_IMPLEMENTED.iter().find(|n| on(n)) {
        return Err(SettingsError {
            kind: ErrorKind::NotImplemented,
            message: format!("{name}=True is not supported by scope-profiler (Rust edition)"),
        });
    }
    if perf_events_given {
        return Err(SettingsError {
            kind: ErrorKind::NotImplemented,
            message: "perf_events is not supported by scope-profiler (Rust edition)".into(),
        });
    }
    Ok(())
}

/// `flush_interval` as seconds (None = off): a finite number of at least 0.01 s
/// ([`scope_profiler_finalize::stream::check_interval`]), and only with file output (a
/// sidecar only makes sense beside a file).
fn checked_flush_interval(get: &impl Fn(&str) -> Setting) -> Result<Option<f64>, SettingsError> {
    let setting = get("flush_interval");
    let seconds = match setting.value {
        Value::None => return Ok(None),
        Value::Int(i) => i as f64,
        Value::Float(f) => f,
        Value::BigInt { as_float: Some(f), .. } => f,
        Value::BigInt { as_float: None, .. } => {
            return Err(SettingsError {
                kind: ErrorKind::Overflow,
                message: "int too large to convert to float".into(),
            })
        }
        _ => f64::NAN,
    };
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(value_error(format!("flush_interval must be a positive number of seconds, got {}", setting.repr)));
    }
    scope_profiler_finalize::stream::check_interval(seconds).map_err(value_error)?;
    if get("deactivate_file_output").truthy && !get("deactivate_profiling").truthy {
        return Err(value_error(
            "flush_interval streams calls to a sidecar of the output file; it cannot be combined with \
             deactivate_file_output (or output=None)",
        ));
    }
    Ok(Some(seconds))
}

#[cfg(test)]
mod tests {

    #[test]
    fn option_groups_list_their_fields_in_dataclass_order() {
        let gpu = option_group("gpu").unwrap();
        let fields: Vec<&str> = gpu.iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["timing", "backend", "nvtx", "sync_on_exit"]);
        assert_eq!(gpu[2], ("nvtx", "use_nvtx"));
        assert_eq!(option_group("memray").unwrap()[1], ("path", "memory_profile_path"));
        assert_eq!(option_group("hdf5").unwrap().len(), 3);
        assert!(option_group("profiling").is_none());
        // every field sets a setting of its own
        for (_, fields) in OPTION_GROUPS {
            assert!(fields.iter().all(|(_, setting)| is_setting(setting)));
        }
    }

    #[test]
    fn option_bag_conflict_names_the_setting_and_its_group() {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let groups = vec![
            ("gpu".to_string(), strings(&["use_gpu_timing"])),
            ("hdf5".to_string(), strings(&["hdf5_compression"])),
        ];
        assert_eq!(option_bag_conflict(&strings(&["file_path"]), &groups), None);
        assert_eq!(
            option_bag_conflict(&strings(&["hdf5_compression"]), &groups).unwrap(),
            "'hdf5_compression' is set both directly and on the 'hdf5' option group; set it in one place"
        );
        let twice = vec![("gpu".to_string(), strings(&["x"])), ("hdf5".to_string(), strings(&["x"]))];
        assert!(option_bag_conflict(&[], &twice).unwrap().contains("on the 'hdf5' option group"));
    }

    use super::*;
    use std::collections::HashMap;

    impl Setting {
        /// A setting with `value`, its truth value and `repr` as Python gives them.
        fn of(value: Value) -> Setting {
            let (truthy, repr) = match &value {
                Value::None => (false, "None".to_string()),
                Value::Bool(b) => (*b, if *b { "True" } else { "False" }.to_string()),
                Value::Int(i) => (*i != 0, i.to_string()),
                Value::BigInt { negative, .. } => (true, if *negative { "-1e999" } else { "1e999" }.to_string()),
                Value::Float(f) => (*f != 0.0, if f.is_infinite() { "inf".to_string() } else { format!("{f:?}") }),
                Value::Str(s) => (!s.is_empty(), py_repr(s)),
                Value::Path(p) => (true, format!("PosixPath({})", py_repr(&p.to_string_lossy()))),
                Value::Items(items) => (!items.is_empty(), format!("{items:?}")),
                Value::Other => (true, "<object>".to_string()),
            };
            Setting { value, truthy, repr }
        }

        /// The setting a default stands for.
        fn from_default(value: DefaultValue) -> Setting {
            Setting::of(match value {
                DefaultValue::None => Value::None,
                DefaultValue::Bool(b) => Value::Bool(b),
                DefaultValue::Int(i) => Value::Int(i),
                DefaultValue::Str(s) => Value::Str(s.to_string()),
            })
        }
    }

    fn checked(given: &[(&str, Value)], perf: bool) -> Result<Checked, SettingsError> {
        let given: HashMap<&str, Setting> = given.iter().map(|(n, v)| (*n, Setting::of(v.clone()))).collect();
        let get = |name: &str| {
            given.get(name).cloned().unwrap_or_else(|| {
                Setting::from_default(all_defaults().find(|(n, _)| *n == name).expect("a setting").1)
            })
        };
        check(get, perf)
    }

    fn message(result: Result<Checked, SettingsError>) -> (ErrorKind, String) {
        let e = result.expect_err("refused");
        (e.kind, e.message)
    }

    #[test]
    fn thirty_five_names_and_the_references_defaults() {
        assert_eq!(all_defaults().count(), 35);
        assert!(is_setting("track_threads") && is_setting("flush_interval") && !is_setting("track_thread"));
        assert_eq!(DEFAULTS[22], ("buffer_limit", DefaultValue::Int(1024)));
    }

    #[test]
    fn the_defaults_pass() {
        let c = checked(&[], false).unwrap();
        assert_eq!(c, Checked { hdf5_compression: None, flush_interval: None });
    }

    /// Expected values from Python 3.11's `difflib.get_close_matches(name, sorted(names), n=1)`.
    #[test]
    fn suggestions_follow_difflib() {
        assert_eq!(
            unknown_settings_message(&["track_thread"]),
            "Unknown profiling setting(s): 'track_thread' (did you mean 'track_threads'?)"
        );
        assert_eq!(unknown_settings_message(&["zzz"]), "Unknown profiling setting(s): 'zzz'");
        assert_eq!(
            unknown_settings_message(&["outputmode", "bufer_limit"]),
            "Unknown profiling setting(s): 'bufer_limit' (did you mean 'buffer_limit'?), 'outputmode' (did you \
             mean 'output_mode'?)"
        );
        let mut names: Vec<&str> = all_defaults().map(|(n, _)| n).collect();
        names.sort_unstable();
        for (word, expected) in [
            ("compression", Some("hdf5_compression")),
            ("recursive", Some("recursive_all")),
            ("tracks", Some("track_async")),
            ("trace", None),
            ("gpu", None),
        ] {
            assert_eq!(close_match(word, &names, 0.6), expected, "{word}");
        }
        assert_eq!(close_match("ab", &["abc", "abd"], 0.6), Some("abd"), "a tie goes to the greater string");
        assert_eq!(close_match("", &["a"], 0.6), None);
        assert_eq!(close_match("", &[""], 0.6), Some(""));
        let long = "e".repeat(250) + "track_threads";
        assert_eq!(close_match(&long, &["track_threads"], 0.0), Some("track_threads"));
    }

    /// Ratios as Python computes them (`SequenceMatcher(None, a, b).ratio()`), popular
    /// elements of a long `b` included.
    #[test]
    fn ratio_matches_sequence_matcher() {
        let ratio = |a: &str, b: &str| {
            let b: Vec<char> = b.chars().collect();
            Matcher::new(&b).ratio(&a.chars().collect::<Vec<_>>())
        };
        assert_eq!(ratio("track_threads", "track_thread"), 0.96);
        assert_eq!(ratio("abcd", "bcde"), 0.75);
        assert_eq!(ratio("", ""), 1.0);
        // popular "a" of a b of 300+ elements: left out of the index, matched by extension
        assert_eq!(ratio("xaay", &("a".repeat(300) + "xaay")), 0.025974025974025976);
        assert_eq!(ratio("xaay", &("a".repeat(150) + "xy" + &"a".repeat(150))), 0.013071895424836602);
    }

    #[test]
    fn compression_is_normalized_or_refused() {
        let c = |v: Value| normalized_compression(&Setting::of(v));
        assert_eq!(c(Value::Str(" GZIP\u{1f}".into())), Ok(Some("gzip")));
        assert_eq!(c(Value::Str("None".into())), Ok(None));
        assert_eq!(c(Value::Str("".into())), Ok(None));
        assert_eq!(
            c(Value::Str(" Brotli ".into())).unwrap_err().message,
            "hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got 'brotli'"
        );
        assert_eq!(
            c(Value::Int(3)).unwrap_err().message,
            "hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got 3"
        );
    }

    #[test]
    fn output_checks_in_the_references_order() {
        let v = ErrorKind::Value;
        assert_eq!(
            message(checked(&[("gpu_sync_on_exit", Value::Bool(true)), ("output_mode", Value::Other)], false)),
            (v, "gpu_sync_on_exit requires use_gpu_timing=True".into())
        );
        assert_eq!(
            message(checked(&[("output_mode", Value::Str("fast".into()))], false)),
            (v, "output_mode must be 'auto', 'direct', or 'parallel', got 'fast'".into())
        );
        for chunk in [Value::Int(0), Value::Bool(true), Value::Float(4.0)] {
            assert_eq!(
                message(checked(&[("hdf5_chunk_size", chunk)], false)).1,
                "hdf5_chunk_size must be a positive integer or None"
            );
        }
        assert!(checked(&[("hdf5_chunk_size", Value::BigInt { negative: false, as_float: None })], false).is_ok());
        assert_eq!(
            message(checked(&[("hdf5_compression_level", Value::Bool(false))], false)).1,
            "hdf5_compression_level must be an integer or None"
        );
        let level = |comp: &str, level: i64| {
            checked(
                &[("hdf5_compression", Value::Str(comp.into())), ("hdf5_compression_level", Value::Int(level))],
                false,
            )
        };
        assert_eq!(message(level("gzip", 10)).1, "GZIP compression level must be between 0 and 9");
        assert!(level("gzip", 0).is_ok());
        assert_eq!(message(level("zstd", 0)).1, "Zstandard compression level must be between 1 and 22");
        assert_eq!(message(level("lzf", 1)).1, "LZF compression does not accept a compression level");
        assert_eq!(level("auto", 99).unwrap().hdf5_compression, Some("auto"));
        assert_eq!(
            message(checked(&[("metadata_detail", Value::Str("all".into()))], false)).1,
            "metadata_detail must be one of ('minimal', 'full'), got 'all'"
        );
    }

    #[test]
    fn modes_refused_with_the_references_errors() {
        let on = |n: &'static str| (n, Value::Bool(true));
        assert_eq!(
            message(checked(&[on("aggregation_mode"), on("use_nvtx"), on("track_threads")], false)).1,
            "aggregation_mode cannot be combined with line, GPU, NVTX, LIKWID, or perf events"
        );
        assert_eq!(message(checked(&[on("track_async")], true)), (ErrorKind::Value, THREADS_INCOMPATIBLE.into()));
        assert_eq!(
            message(checked(&[on("use_memray")], false)),
            (ErrorKind::NotImplemented, "use_memray=True is not supported by scope-profiler (Rust edition)".into())
        );
        assert_eq!(
            message(checked(&[], true)),
            (ErrorKind::NotImplemented, "perf_events is not supported by scope-profiler (Rust edition)".into())
        );
    }

    #[test]
    fn limits_and_flush_interval() {
        assert_eq!(
            message(checked(&[("buffer_limit", Value::Int(0))], false)).1,
            "buffer_limit must be a positive integer"
        );
        assert_eq!(
            message(checked(&[("recursive_call_limit", Value::Str("5".into()))], false)).1,
            "recursive_call_limit must be a positive integer, got '5'"
        );
        assert_eq!(checked(&[("flush_interval", Value::Int(2))], false).unwrap().flush_interval, Some(2.0));
        assert_eq!(
            message(checked(&[("flush_interval", Value::Bool(true))], false)).1,
            "flush_interval must be a positive number of seconds, got True"
        );
        assert_eq!(
            message(checked(&[("flush_interval", Value::Float(f64::INFINITY))], false)).1,
            "flush_interval must be a positive number of seconds, got inf"
        );
        assert_eq!(
            message(checked(&[("flush_interval", Value::BigInt { negative: false, as_float: None })], false)).0,
            ErrorKind::Overflow
        );
        assert!(message(checked(&[("flush_interval", Value::Float(0.001))], false)).1.contains("at least 0.01 s"));
        assert_eq!(
            message(checked(&[("flush_interval", Value::Float(1e20))], false)).1,
            "flush_interval must be at most 86400 s (a day), got 1e+20"
        );
        let no_file = [("flush_interval", Value::Float(1.0)), ("deactivate_file_output", Value::Bool(true))];
        assert!(message(checked(&no_file, false)).1.starts_with("flush_interval streams calls to a sidecar"));
        let inactive = [no_file[0].clone(), no_file[1].clone(), ("deactivate_profiling", Value::Bool(true))];
        assert_eq!(checked(&inactive, false).unwrap().flush_interval, Some(1.0));
    }

    #[test]
    fn settings_files_flatten_as_load_profiling_config() {
        let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let groups = |name: &str| match name {
            "hdf5" => Some(GroupEntry::Table(keys(&["compression", "compression_level"]))),
            _ => None,
        };
        let flat = flatten_settings_table(&keys(&["file_path", "hdf5"]), groups).unwrap();
        let names: Vec<&str> = flat.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["file_path", "hdf5_compression", "hdf5_compression_level"]);
        assert_eq!(flat[1].1, FlatSource::Group { group: "hdf5", key: "compression".into() });
        let err = |k: &[&str], g: &dyn Fn(&str) -> Option<GroupEntry>| {
            flatten_settings_table(&keys(k), g).unwrap_err().message
        };
        assert_eq!(
            err(&["hdf5_compression", "hdf5"], &|n| (n == "hdf5").then(|| GroupEntry::Table(keys(&["compression"])))),
            "Profiling setting 'hdf5_compression' is set both directly and as hdf5.compression"
        );
        assert_eq!(
            err(&["hdf5"], &|n| (n == "hdf5").then(|| GroupEntry::Table(keys(&["colour", "b"])))),
            "Unknown [hdf5] profiling setting(s): b, colour"
        );
        assert_eq!(
            err(&["gpu"], &|n| (n == "gpu").then_some(GroupEntry::NotTable)),
            "Profiling setting 'gpu' must be a TOML table"
        );
        assert_eq!(
            err(&["track_thread"], &|_| None),
            "Unknown profiling setting(s): 'track_thread' (did you mean 'track_threads'?)"
        );
    }

    #[test]
    fn output_names_the_recording() {
        assert_eq!(recording_path(Path::new("a/p.JSON")), PathBuf::from("a/p.JSON.scope-profiler.h5"));
        assert_eq!(recording_path(Path::new("p.html")), PathBuf::from("p.html.scope-profiler.h5"));
        assert_eq!(recording_path(Path::new("p.h5")), PathBuf::from("p.h5"));
        assert_eq!(output_settings(None, &[]).unwrap(), (None, true));
        assert_eq!(
            output_settings(Some(Path::new("x.json.gz")), &["label"]).unwrap(),
            (Some("x.json.gz.scope-profiler.h5".into()), false)
        );
        let e = output_settings(None, &["deactivate_file_output", "file_path"]).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Type, "output cannot be combined with deactivate_file_output, file_path")
        );
    }

    fn validated(given: &[(&str, Value)]) -> Result<RunSettings, SettingsError> {
        let given: Vec<(String, Setting)> =
            given.iter().map(|(n, v)| (n.to_string(), Setting::of(v.clone()))).collect();
        validate(&given)
    }

    fn refusal(given: &[(&str, Value)]) -> (ErrorKind, String) {
        let e = validated(given).expect_err("refused");
        (e.kind, e.message)
    }

    /// No file output: `validate` does not look at the file system.
    const NO_FILE: (&str, Value) = ("deactivate_file_output", Value::Bool(true));

    #[test]
    fn the_table_lists_each_setting_once_with_what_it_accepts() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 35);
        assert_eq!(spec_of("track_async").map(|s| s.accepts), Some(Accepts::Flag));
        assert_eq!(spec_of("file_path").map(|s| s.default), Some(DefaultValue::Str("profiling_data.h5")));
        assert_eq!(OWN_DEFAULTS[0], ("flush_interval", DefaultValue::None));
        assert_eq!(Accepts::OneOf(&OUTPUT_MODES).text(), "'auto', 'direct', 'parallel'");
        // every flag defaults to False, every path to a str or None
        for s in &SETTINGS {
            match s.accepts {
                Accepts::Flag => assert_eq!(s.default, DefaultValue::Bool(false), "{}", s.name),
                Accepts::Path => assert!(matches!(s.default, DefaultValue::Str(_) | DefaultValue::None)),
                _ => {}
            }
        }
    }

    #[test]
    fn flags_take_true_or_false_only() {
        for (name, value, shown) in [
            ("track_async", Value::Str("no".into()), "'no'"),
            ("track_threads", Value::Int(2), "2"),
            ("use_nvtx", Value::Float(1.0), "1.0"),
        ] {
            assert_eq!(
                refusal(&[(name, value), NO_FILE]),
                (ErrorKind::Type, format!("{name} must be True or False, got {shown}"))
            );
        }
        let run = validated(&[("track_async", Value::Bool(true)), NO_FILE]).unwrap();
        assert!(run.track_async && run.track_threads);
        let run = validated(&[("track_threads", Value::Bool(false)), NO_FILE]).unwrap();
        assert!(!run.track_async && !run.track_threads);
        // the ints 1 and 0 equal True and False
        let given = [("track_threads".to_string(), Setting::new(Value::Int(1), "1".into()))];
        assert!(
            validate(&[given[0].clone(), ("deactivate_file_output".into(), Setting::new(Value::Int(1), "1".into()))])
                .unwrap()
                .track_threads
        );
        assert!(!validated(&[("track_async", Value::Int(0)), NO_FILE]).unwrap().track_async);
    }

    #[test]
    fn paths_are_str_or_path_like_not_empty_without_nul() {
        let bytes = Setting { value: Value::Other, truthy: true, repr: "b'x.h5'".into() };
        let e =
            validate(&[("file_path".into(), bytes), ("deactivate_file_output".into(), Setting::of(Value::Bool(true)))])
                .unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::Type, "file_path must be a str or os.PathLike path, got b'x.h5'")
        );
        assert_eq!(
            refusal(&[("file_path", Value::Str(String::new())), NO_FILE]),
            (ErrorKind::Value, "file_path must not be empty".into())
        );
        assert_eq!(
            refusal(&[("memory_profile_path", Value::Str("a\0b".into())), NO_FILE]).1,
            "memory_profile_path contains a NUL character, which no file name can hold"
        );
        let run = validated(&[("file_path", Value::Path("runs/a.h5".into())), NO_FILE]).unwrap();
        assert_eq!(run.file_path, PathBuf::from("runs/a.h5"));
        assert_eq!(validated(&[NO_FILE]).unwrap().file_path, PathBuf::from("profiling_data.h5"));
    }

    #[test]
    fn a_file_that_cannot_be_written_is_refused_before_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let at = |p: &std::path::Path| Value::Str(p.to_string_lossy().into_owned());
        let missing = dir.path().join("missing").join("run.h5");
        let (kind, message) = refusal(&[("file_path", at(&missing))]);
        assert_eq!(kind, ErrorKind::Value);
        assert!(
            message.ends_with(
                "cannot be written: the directory '{}' does not exist"
                    .replace("{}", &missing.parent().unwrap().to_string_lossy())
                    .as_str()
            ),
            "{message}"
        );
        assert!(refusal(&[("file_path", at(dir.path()))]).1.ends_with("is a directory; name the file to write"));
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        assert!(refusal(&[("file_path", at(&file.join("run.h5")))]).1.contains("is not a directory"));
        assert!(validated(&[("file_path", at(&dir.path().join("run.h5")))]).is_ok());
        // nothing written: no file check
        assert!(validated(&[("file_path", at(&missing)), NO_FILE]).is_ok());
        assert!(validated(&[("file_path", at(&missing)), ("deactivate_profiling", Value::Bool(true))]).is_ok());
        assert!(!missing.parent().unwrap().exists(), "nothing is created");
        assert_eq!(unwritable(std::path::Path::new("")), Some("must not be empty".into()));
    }

    #[test]
    fn names_are_a_str_or_an_iterable_of_str() {
        let run = validated(&[("enable_tags", Value::Str("io".into())), NO_FILE]).unwrap();
        assert_eq!(run.enable_tags, ["io"]);
        let items = Value::Items(vec![Some("a".into()), Some("b".into())]);
        assert_eq!(validated(&[("enable_tags", items), NO_FILE]).unwrap().enable_tags, ["a", "b"]);
        let (kind, message) = refusal(&[("recursive_include", Value::Items(vec![Some("a".into()), None])), NO_FILE]);
        assert_eq!(kind, ErrorKind::Type);
        assert!(message.starts_with("recursive_include must be a str or an iterable of str, got "), "{message}");
        let five = Setting::of(Value::Int(5));
        assert_eq!(region_tags(&five).unwrap_err().message, "region_tags must be a str or an iterable of str, got 5");
        assert_eq!(region_tags(&Setting::of(Value::Str("gpu".into()))).unwrap(), ["gpu"]);
        assert_eq!(
            refusal(&[("label", Value::Other), NO_FILE]),
            (ErrorKind::Type, "label must be a str or a number, got <object>".into())
        );
        assert_eq!(validated(&[("label", Value::Int(3)), NO_FILE]).unwrap().label.as_deref(), Some("3"));
        assert_eq!(validated(&[("label", Value::Str(String::new())), NO_FILE]).unwrap().label, None);
    }

    #[test]
    fn a_flush_interval_is_a_number() {
        assert_eq!(
            refusal(&[("flush_interval", Value::Str("1".into()))]),
            (ErrorKind::Type, "flush_interval must be a number of seconds from 0.01 to 86400, got '1'".into())
        );
    }

    #[test]
    fn counts_beyond_64_bits_name_the_setting() {
        let huge = Value::BigInt { negative: false, as_float: Some(1.2e21) };
        assert_eq!(
            refusal(&[("buffer_limit", huge.clone()), NO_FILE]),
            (ErrorKind::Value, "buffer_limit must be an integer from 1 to 9223372036854775807, got 1e999".into())
        );
        assert_eq!(refusal(&[("recursive_call_limit", huge.clone()), NO_FILE]).0, ErrorKind::Value);
        // a chunk size is ignored by the writer: any positive integer
        assert!(validated(&[("hdf5_chunk_size", huge), NO_FILE]).is_ok());
    }

    #[test]
    fn compressions_are_checked_as_the_reference_checks_them_then_left_to_the_writer() {
        for (given, normalized) in [("zstd", "zstd"), (" LZF", "lzf"), ("GZIP", "gzip")] {
            let run = validated(&[("hdf5_compression", Value::Str(given.into())), NO_FILE]).unwrap();
            assert_eq!(run.checked.hdf5_compression, Some(normalized));
        }
        assert_eq!(
            refusal(&[("hdf5_compression", Value::Str("brotli".into())), NO_FILE]),
            (ErrorKind::Value, "hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got 'brotli'".into())
        );
        assert_eq!(
            refusal(&[
                ("hdf5_compression", Value::Str("zstd".into())),
                ("hdf5_compression_level", Value::Int(0)),
                NO_FILE
            ])
            .1,
            "Zstandard compression level must be between 1 and 22"
        );
    }

    #[test]
    fn unknown_names_come_first_then_types_then_the_references_checks() {
        assert_eq!(
            refusal(&[("track_thread", Value::Bool(true)), ("track_async", Value::Str("x".into()))]),
            (ErrorKind::Type, "Unknown profiling setting(s): 'track_thread' (did you mean 'track_threads'?)".into())
        );
        assert_eq!(
            refusal(&[("output_mode", Value::Str("fast".into())), ("use_nvtx", Value::Str("yes".into())), NO_FILE]).1,
            "use_nvtx must be True or False, got 'yes'"
        );
        let output = Setting::of(Value::Int(7));
        assert_eq!(output_path(&output).unwrap_err().message, "output must be a str or os.PathLike path, got 7");
    }
}
