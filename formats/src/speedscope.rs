//! speedscope export: one evented profile per lane (`spec-exports.md` §1).
//!
//! Differences from the reference (issue-driven): profiles are ordered main thread first
//! (thread lanes by ascending thread index, then lane -1, then tasks ascending) instead of
//! ascending lane value, frames carry `file`/`line` when the region has a source location,
//! and `activeProfileIndex` points at the main thread's profile.
//!
//! The document is streamed (no in-memory JSON tree), so memory stays proportional to the
//! reconstructed calls, not to the output size.
use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use scope_profiler_analysis::{CallArrays, LaneLabels, Run};

use crate::export_lanes::{lane_name, reconstruct, RankCalls};
use crate::export_output::{json_f64, json_str, write_atomic};
use crate::{ExportError, Selection};

/// `"exporter"` of the documents this crate writes: `scope-profiler@<version>`, the prefix
/// 0.7.5 writes and tools match on, with `+rust` (semver build metadata) naming this edition.
pub const EXPORTER: &str = concat!("scope-profiler@", env!("CARGO_PKG_VERSION"), "+rust");
const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

/// Decimal digits of `n`.
fn write_usize<W: Write>(w: &mut W, mut n: usize) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    w.write_all(&buf[i..])
}

/// Frames shared document-wide: one per region name, in order of first "O" emission.
#[derive(Default)]
struct Frames<'a> {
    of_name: HashMap<&'a str, usize>,
    /// (name, file, line)
    list: Vec<(&'a str, Option<&'a str>, Option<i64>)>,
}

impl<'a> Frames<'a> {
    /// Frame id of every row of `r` (`usize::MAX` for rows without calls), registering new
    /// names as they are first met. A lane's calls in sorted order are exactly its depth-first
    /// open order, so walking them gives the order of first emission.
    fn add(&mut self, run: &'a Run, r: &RankCalls) -> Vec<usize> {
        let mut ids = vec![usize::MAX; r.rows.len()];
        for (_, lane_calls) in &r.lanes {
            for &c in lane_calls {
                let ri = r.calls.region_index[c] as usize;
                if ids[ri] != usize::MAX {
                    continue;
                }
                let row = &run.regions[r.rows[ri]];
                let name = r.name(run, c);
                let list = &mut self.list;
                ids[ri] = *self.of_name.entry(name).or_insert_with(|| {
                    list.push((name, row.source_file.as_deref(), row.source_line));
                    list.len() - 1
                });
            }
        }
        ids
    }

    fn write<W: Write>(&self, w: &mut W) -> io::Result<()> {
        for (i, (name, file, line)) in self.list.iter().enumerate() {
            if i > 0 {
                w.write_all(b", ")?;
            }
            write!(w, "{{\"name\": {}", json_str(name))?;
            if let Some(f) = file {
                write!(w, ", \"file\": {}", json_str(f))?;
            }
            if let Some(l) = line {
                write!(w, ", \"line\": {l}")?;
            }
            w.write_all(b"}")?;
        }
        Ok(())
    }
}

/// One speedscope document: ranks are [`add`](Self::add)ed in export order (their frames are
/// registered on the way), then [`write`](Self::write) streams the document.
struct Document<'a> {
    run: &'a Run,
    frames: Frames<'a>,
    /// Each added rank with the frame id of each of its rows.
    ranks: Vec<(RankCalls, Vec<usize>)>,
}

impl<'a> Document<'a> {
    fn new(run: &'a Run) -> Self {
        Document { run, frames: Frames::default(), ranks: Vec::new() }
    }

    fn add(&mut self, r: RankCalls) {
        let ids = self.frames.add(self.run, &r);
        self.ranks.push((r, ids));
    }

    /// Time origin: the earliest selected call (first call of each profile), seconds.
    fn origin(&self) -> f64 {
        self.ranks
            .iter()
            .flat_map(|(r, _)| r.lanes.iter().map(move |(_, ids)| r.calls.start_ns[ids[0]] as f64 / 1e9))
            .fold(f64::INFINITY, f64::min)
    }

    /// Index of the main thread's profile (lane -2), else 0.
    fn active_profile(&self) -> usize {
        self.ranks.iter().flat_map(|(r, _)| r.lanes.iter()).position(|(lane, _)| *lane == -2).unwrap_or(0)
    }

    fn write<W: Write>(&self, label: &str, w: &mut W) -> io::Result<()> {
        write!(
            w,
            "{{\"$schema\": {}, \"exporter\": {}, \"name\": {}, \"activeProfileIndex\": {}, \"shared\": {{\"frames\": [",
            json_str(SCHEMA_URL),
            json_str(EXPORTER),
            json_str(label),
            self.active_profile()
        )?;
        self.frames.write(w)?;
        w.write_all(b"]}, \"profiles\": [")?;
        let origin = self.origin();
        let mut profile = ProfileWriter { origin, first_event: true, end_value: 0.0, stack: Vec::new() };
        let mut first_profile = true;
        for (r, fids) in &self.ranks {
            let labels = r.lanes.iter().any(|(l, _)| *l != -1).then(|| LaneLabels::new(self.run, r.rank));
            for (lane, ids) in &r.lanes {
                let name = match &labels {
                    Some(labels) if *lane != -1 => format!("rank {} - {}", r.rank, lane_name(labels, r.rank, *lane)),
                    _ => format!("rank {}", r.rank),
                };
                if !first_profile {
                    w.write_all(b", ")?;
                }
                first_profile = false;
                profile.write(w, &name, &r.calls, ids, fids)?;
            }
        }
        w.write_all(b"]}")
    }
}

/// Streams one evented profile: its calls opened and closed depth-first.
struct ProfileWriter {
    /// Time origin, seconds.
    origin: f64,
    first_event: bool,
    /// `at` of the last close event, seconds.
    end_value: f64,
    stack: Vec<usize>,
}

impl ProfileWriter {
    fn write<W: Write>(
        &mut self,
        w: &mut W,
        name: &str,
        c: &CallArrays,
        ids: &[usize],
        fids: &[usize],
    ) -> io::Result<()> {
        let start_value = self.at(c.start_ns[ids[0]]);
        self.end_value = start_value;
        self.first_event = true;
        self.stack.clear();
        write!(w, "{{\"type\": \"evented\", \"name\": {}, \"unit\": \"seconds\", \"events\": [", json_str(name))?;
        for &i in ids {
            let p = c.parent[i];
            while let Some(&top) = self.stack.last() {
                if p >= 0 && top == p as usize {
                    break;
                }
                self.close(w, c, fids)?;
            }
            self.event(w, "O", fids[c.region_index[i] as usize], self.at(c.start_ns[i]))?;
            self.stack.push(i);
        }
        while !self.stack.is_empty() {
            self.close(w, c, fids)?;
        }
        write!(w, "], \"startValue\": {}, \"endValue\": {}}}", json_f64(start_value), json_f64(self.end_value))
    }

    fn at(&self, ns: i64) -> f64 {
        ns as f64 / 1e9 - self.origin
    }

    /// Close the call on top of the stack.
    fn close<W: Write>(&mut self, w: &mut W, c: &CallArrays, fids: &[usize]) -> io::Result<()> {
        let top = self.stack.pop().expect("close with an open call");
        let t = self.at(c.end_ns[top]);
        self.end_value = t;
        self.event(w, "C", fids[c.region_index[top] as usize], t)
    }

    /// One event, streamed piece by piece: no formatting machinery and no allocation per
    /// event (4M events for 2M calls).
    fn event<W: Write>(&mut self, w: &mut W, kind: &str, frame: usize, t: f64) -> io::Result<()> {
        if !self.first_event {
            w.write_all(b", ")?;
        }
        self.first_event = false;
        w.write_all(b"{\"type\": \"")?;
        w.write_all(kind.as_bytes())?;
        w.write_all(b"\", \"frame\": ")?;
        write_usize(w, frame)?;
        w.write_all(b", \"at\": ")?;
        serde_json::to_writer(&mut *w, &t).map_err(io::Error::from)?;
        w.write_all(b"}")
    }
}

/// Write `run`'s `ranks` as one speedscope document named `label` to `out`.
///
/// See [`write_speedscope`] for the content. Errors as there.
pub fn write_speedscope_to<W: Write>(run: &Run, ranks: &[u32], label: &str, out: W) -> Result<(), ExportError> {
    // Reconstruct every requested rank first: errors surface before anything is written.
    let mut doc = Document::new(run);
    for r in reconstruct(run, ranks)? {
        doc.add(r);
    }
    let mut w = BufWriter::with_capacity(1 << 16, out);
    doc.write(label, &mut w).and_then(|()| w.flush()).map_err(|e| ExportError::Io(e.to_string()))
}

/// Write `run`'s `ranks` as one speedscope document named `label` to `path`.
///
/// For each rank in the given order: its calls are reconstructed per lane
/// ([`rank_call_arrays`](scope_profiler_analysis::rank_call_arrays)) and each lane with calls becomes one evented profile named
/// `"rank R"` (lane -1 / untracked run) or `"rank R - <lane_label>"`, main thread first
/// (thread lanes by ascending thread index, then -1, then tasks ascending). Frames are
/// shared document-wide, one per region name in order of first emission, with `file` and
/// `line` when the region has a source location. Events open/close depth-first; `at` =
/// `start_ns/1e9 − origin` in seconds, origin = the earliest selected call's start, never
/// decreasing within a profile. `activeProfileIndex` is the main thread's profile (lane -2)
/// if any, else 0. `exporter` is [`EXPORTER`]. Parent directories are created.
///
/// Errors: `Nesting` (the rank's `NestingError` message); `NoCalls`; `Io` naming the path.
/// Nothing is left at `path` on error.
pub fn write_speedscope(run: &Run, ranks: &[u32], label: &str, path: &Path) -> Result<(), ExportError> {
    write_atomic(path, |w| {
        write_speedscope_to(run, ranks, label, w).map_err(|e| match e {
            ExportError::Io(m) => ExportError::Io(format!("could not write {}: {m}", path.display())),
            e => e,
        })
    })
}

/// Whether recording with `track_threads` (`--track-threads`) would have let `run` be drawn
/// after [`write_speedscope`] failed with `error`: the calls do not nest
/// ([`ExportError::Nesting`]) and the run has no thread data (no thread ids, no thread
/// table) - what the calls of several threads recorded into one untracked stack give. Never
/// for a failure to write the file, nor for a run with thread data (its calls are on their
/// lanes already: tracking would not change them).
pub fn thread_tracking_would_help(run: &Run, error: &ExportError) -> bool {
    matches!(error, ExportError::Nesting(_))
        && run.threads.is_empty()
        && run.regions.iter().all(|r| r.thread_ids.is_none())
}

/// [`write_speedscope`] in the shape every writer has: `sel.ranks`, `sel.label`, and only
/// the regions `sel` keeps, each rank's rows in the order of `sel.regions`
/// ([`Selection::apply_in_order`]: exact ties follow it).
pub fn write_speedscope_selection(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_speedscope(&sel.apply_in_order(run), &sel.ranks, &sel.label, path)
}
