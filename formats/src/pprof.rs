//! pprof export (`profile.proto`), for `go tool pprof`, speedscope and pprof-compatible UIs.
//!
//! One sample per distinct call stack per lane. Sample type `wall`/`nanoseconds` (also the
//! period type, period 1): a sample's value is the **exclusive (self) wall time** in ns of
//! all calls on that stack, so pprof's `flat` is a region's self time and its `cum` the
//! inclusive time, without double counting (an inclusive per-stack value would be counted
//! again for every ancestor). The stack's root frame is the lane name (`"MainThread"`,
//! `"Task-2 (fetch) on MainThread"`, `"rank R"` for lane -1), like speedscope's profile
//! names; with more than one selected rank a `"rank R"` frame sits above it (lane -1, already
//! named `"rank R"`, gets none). Stacks with no
//! self time (a call fully covered by its children) still get a sample of value 0, so every
//! path is present.
//!
//! Functions: one per region (name, source file, start line) and one per lane/rank frame;
//! one location per function (`id` = function id, one `Line` with the source line).
//! `duration_nanos` spans the selected calls. Files whose name ends in `.gz` are
//! gzip-compressed (`go tool pprof` reads both).
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;
use scope_profiler_analysis::{CallArrays, LaneLabels, Run};

use crate::export_lanes::{lane_name, reconstruct, RankCalls};
use crate::export_output::{io_err, write_atomic};
use crate::{ExportError, Selection};

/// The subset of `profile.proto` (github.com/google/pprof) this writer emits.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Leaf first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

use proto::*;

/// The profile being built: string table, functions (one location each) and samples.
/// Ranks are [`add`](Self::add)ed in export order; [`write`](Self::write) gives the message.
#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ix: HashMap<String, i64>,
    functions: Vec<Function>,
    function_ix: HashMap<(String, String, i64), u64>,
    lines: Vec<i64>,
    samples: Vec<Sample>,
    /// Earliest start and latest end of the added calls, ns.
    lo: i64,
    hi: i64,
}

impl Builder {
    fn new() -> Self {
        Builder { lo: i64::MAX, hi: i64::MIN, ..Default::default() }
    }
    fn s(&mut self, v: &str) -> i64 {
        if self.strings.is_empty() {
            self.strings.push(String::new());
            self.string_ix.insert(String::new(), 0);
        }
        if let Some(&i) = self.string_ix.get(v) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(v.to_string());
        self.string_ix.insert(v.to_string(), i);
        i
    }
    /// Function (and location) id of (name, file, line).
    fn f(&mut self, name: &str, file: &str, line: i64) -> u64 {
        let key = (name.to_string(), file.to_string(), line);
        if let Some(&id) = self.function_ix.get(&key) {
            return id;
        }
        let (n, fl) = (self.s(name), self.s(file));
        let id = self.functions.len() as u64 + 1;
        self.functions.push(Function { id, name: n, system_name: n, filename: fl, start_line: line });
        self.lines.push(line);
        self.function_ix.insert(key, id);
        id
    }

    /// The samples of one rank; `multi_rank`: a `"rank R"` frame above each lane frame.
    fn add(&mut self, run: &Run, rc: &RankCalls, multi_rank: bool) {
        if rc.calls.is_empty() {
            return;
        }
        let labels = LaneLabels::new(run, rc.rank);
        let row_fn: Vec<u64> = rc
            .rows
            .iter()
            .map(|&row| {
                let r = &run.regions[row];
                let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?");
                self.f(name, r.source_file.as_deref().unwrap_or(""), r.source_line.unwrap_or(0))
            })
            .collect();
        let rank_frame = if multi_rank { Some(self.f(&format!("rank {}", rc.rank), "", 0)) } else { None };
        // path id per call id, shared by the lanes (a parent is on its child's lane)
        let mut path_of = vec![usize::MAX; rc.calls.len()];
        for (lane, ids) in &rc.lanes {
            let lane_fn = self.f(&lane_name(&labels, rc.rank, *lane), "", 0);
            let mut root_stack = vec![lane_fn];
            if *lane != -1 {
                // lane -1 is already named "rank R"
                root_stack.extend(rank_frame);
            }
            self.add_lane(&rc.calls, ids, &row_fn, &root_stack, &mut path_of);
        }
    }

    /// One sample per distinct stack of the lane's calls `ids` (leaf first, above
    /// `root_stack`), valued by the calls' exclusive time.
    fn add_lane(&mut self, c: &CallArrays, ids: &[usize], row_fn: &[u64], root_stack: &[u64], path_of: &mut [usize]) {
        // paths: (parent path, function) -> id; stacks stored leaf first
        let mut path_ix: HashMap<(usize, u64), usize> = HashMap::new();
        let mut stacks: Vec<Vec<u64>> = Vec::new();
        let mut values: Vec<i64> = Vec::new();
        for &i in ids {
            self.lo = self.lo.min(c.start_ns[i]);
            self.hi = self.hi.max(c.end_ns[i]);
            let p = c.parent[i];
            let parent_path = if p < 0 { usize::MAX } else { path_of[p as usize] };
            let f = row_fn[c.region_index[i] as usize];
            let pid = *path_ix.entry((parent_path, f)).or_insert_with(|| {
                let mut st = vec![f];
                if parent_path == usize::MAX {
                    st.extend(root_stack);
                } else {
                    st.extend(&stacks[parent_path]);
                }
                stacks.push(st);
                values.push(0);
                stacks.len() - 1
            });
            path_of[i] = pid;
            values[pid] += c.exclusive_ns[i];
        }
        self.samples
            .extend(stacks.into_iter().zip(values).map(|(location_id, v)| Sample { location_id, value: vec![v] }));
    }

    /// The message; `wall`: the sample and period type; comments: `label`, [`EXPORTER`].
    ///
    /// [`EXPORTER`]: crate::speedscope::EXPORTER
    fn write(mut self, wall: ValueType, label: &str) -> Profile {
        let exporter = self.s(crate::speedscope::EXPORTER);
        let label = self.s(label);
        let location = self
            .functions
            .iter()
            .zip(&self.lines)
            .map(|(f, &line)| Location { id: f.id, line: vec![Line { function_id: f.id, line }] })
            .collect();
        Profile {
            sample_type: vec![wall.clone()],
            sample: self.samples,
            location,
            function: self.functions,
            string_table: self.strings,
            time_nanos: 0,
            duration_nanos: if self.hi >= self.lo { self.hi - self.lo } else { 0 },
            period_type: Some(wall),
            period: 1,
            comment: vec![label, exporter],
            default_sample_type: 0,
        }
    }
}

/// The profile of `sel` as a message (see the module docs).
///
/// Errors: `Nesting`, `NoCalls`.
pub fn pprof_profile(run: &Run, sel: &Selection) -> Result<Profile, ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let mut b = Builder::new();
    let wall = ValueType { r#type: b.s("wall"), unit: b.s("nanoseconds") };
    let multi_rank = all.iter().filter(|r| !r.calls.is_empty()).count() > 1;
    for rc in &all {
        b.add(run, rc, multi_rank);
    }
    Ok(b.write(wall, &sel.label))
}

/// Write the pprof profile of `sel` to `path` atomically, gzip-compressed when the name
/// ends in `.gz` (parent directories created).
///
/// Errors: `Nesting`, `NoCalls`, `Io` naming the path.
pub fn write_pprof(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    let bytes = pprof_profile(run, sel)?.encode_to_vec();
    let gz = path.extension().is_some_and(|e| e == "gz");
    write_atomic(path, |w| {
        if gz {
            let mut enc = GzEncoder::new(w, Compression::default());
            enc.write_all(&bytes).map_err(io_err(path))?;
            enc.finish().map_err(io_err(path))?;
            Ok(())
        } else {
            w.write_all(&bytes).map_err(io_err(path))
        }
    })
}
