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

use scope_profiler_analysis::{rank_call_arrays, CallArrays, LaneLabels, Run};

use crate::export_common::write_atomic;
use crate::{ExportError, Selection};

/// `"exporter"` of the documents this crate writes.
pub const EXPORTER: &str = concat!("scope-profiler-rs@", env!("CARGO_PKG_VERSION"));
const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

struct RankCalls {
    rank: u32,
    rows: Vec<usize>,
    calls: CallArrays,
    /// (lane, call ids) in profile order.
    lanes: Vec<(i64, Vec<usize>)>,
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

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

fn json_f64(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_else(|_| "0.0".into())
}

/// Write `run`'s `ranks` as one speedscope document named `label` to `out`.
///
/// See [`write_speedscope`] for the content. Errors as there.
pub fn write_speedscope_to<W: Write>(run: &Run, ranks: &[u32], label: &str, out: W) -> Result<(), ExportError> {
    // Reconstruct every requested rank first: errors surface before anything is written.
    let mut all: Vec<RankCalls> = Vec::with_capacity(ranks.len());
    for &rank in ranks {
        let (rows, calls) = rank_call_arrays(run, rank)?;
        let lanes = crate::export_common::export_lanes(&calls);
        all.push(RankCalls { rank, rows, calls, lanes });
    }
    if all.iter().all(|r| r.calls.is_empty()) {
        return Err(ExportError::NoCalls);
    }

    // Time origin: the earliest selected call (first call of each profile), seconds.
    let origin = all
        .iter()
        .flat_map(|r| r.lanes.iter().map(move |(_, ids)| r.calls.start_ns[ids[0]] as f64 / 1e9))
        .fold(f64::INFINITY, f64::min);

    // Frames in order of first "O" emission (a lane's calls in sorted order are exactly its
    // depth-first open order).
    let mut frame_of_name: HashMap<&str, usize> = HashMap::new();
    let mut frames: Vec<(&str, Option<&str>, Option<i64>)> = Vec::new();
    // frame id per (rank position, region_index) for the event pass
    let mut frame_ids: Vec<Vec<usize>> = Vec::with_capacity(all.len());
    for r in &all {
        let mut ids = vec![usize::MAX; r.rows.len()];
        for (_, lane_calls) in &r.lanes {
            for &c in lane_calls {
                let ri = r.calls.region_index[c] as usize;
                if ids[ri] != usize::MAX {
                    continue;
                }
                let row = &run.regions[r.rows[ri]];
                let name = run.region_names.get(row.region as usize).map(String::as_str).unwrap_or("?");
                let id = *frame_of_name.entry(name).or_insert_with(|| {
                    frames.push((name, row.source_file.as_deref(), row.source_line));
                    frames.len() - 1
                });
                ids[ri] = id;
            }
        }
        frame_ids.push(ids);
    }

    let mut active = 0usize;
    let mut found_main = false;
    let mut k = 0usize;
    for r in &all {
        for (lane, _) in &r.lanes {
            if !found_main && *lane == -2 {
                active = k;
                found_main = true;
            }
            k += 1;
        }
    }

    let mut w = BufWriter::with_capacity(1 << 16, out);
    let io = |e: io::Error| ExportError::Io(e.to_string());
    write!(
        w,
        "{{\"$schema\": {}, \"exporter\": {}, \"name\": {}, \"activeProfileIndex\": {active}, \"shared\": {{\"frames\": [",
        json_str(SCHEMA_URL),
        json_str(EXPORTER),
        json_str(label)
    )
    .map_err(io)?;
    for (i, (name, file, line)) in frames.iter().enumerate() {
        if i > 0 {
            w.write_all(b", ").map_err(io)?;
        }
        write!(w, "{{\"name\": {}", json_str(name)).map_err(io)?;
        if let Some(f) = file {
            write!(w, ", \"file\": {}", json_str(f)).map_err(io)?;
        }
        if let Some(l) = line {
            write!(w, ", \"line\": {l}").map_err(io)?;
        }
        w.write_all(b"}").map_err(io)?;
    }
    w.write_all(b"]}, \"profiles\": [").map_err(io)?;

    let labels_needed = all.iter().any(|r| r.lanes.iter().any(|(l, _)| *l != -1));
    let mut first_profile = true;
    let mut stack: Vec<usize> = Vec::new();
    for (r, fids) in all.iter().zip(&frame_ids) {
        let labels = if labels_needed { Some(LaneLabels::new(run, r.rank)) } else { None };
        let c = &r.calls;
        let at = |ns: i64| ns as f64 / 1e9 - origin;
        for (lane, ids) in &r.lanes {
            let name = if *lane == -1 {
                format!("rank {}", r.rank)
            } else {
                format!("rank {} - {}", r.rank, labels.as_ref().map(|l| l.label(*lane)).unwrap_or_default())
            };
            let start_value = at(c.start_ns[ids[0]]);
            let mut end_value = start_value;
            if !first_profile {
                w.write_all(b", ").map_err(io)?;
            }
            first_profile = false;
            write!(w, "{{\"type\": \"evented\", \"name\": {}, \"unit\": \"seconds\", \"events\": [", json_str(&name))
                .map_err(io)?;
            let mut first_event = true;
            let mut emit = |w: &mut BufWriter<W>, kind: &str, frame: usize, t: f64| -> Result<(), ExportError> {
                if !first_event {
                    w.write_all(b", ").map_err(io)?;
                }
                first_event = false;
                // streamed piece by piece, no formatting machinery and no allocation per
                // event (4M events for 2M calls)
                w.write_all(b"{\"type\": \"").map_err(io)?;
                w.write_all(kind.as_bytes()).map_err(io)?;
                w.write_all(b"\", \"frame\": ").map_err(io)?;
                write_usize(w, frame).map_err(io)?;
                w.write_all(b", \"at\": ").map_err(io)?;
                serde_json::to_writer(&mut *w, &t).map_err(|e| ExportError::Io(e.to_string()))?;
                w.write_all(b"}").map_err(io)
            };
            stack.clear();
            for &i in ids {
                let p = c.parent[i];
                while let Some(&top) = stack.last() {
                    if p >= 0 && top == p as usize {
                        break;
                    }
                    stack.pop();
                    let t = at(c.end_ns[top]);
                    end_value = t;
                    emit(&mut w, "C", fids[c.region_index[top] as usize], t)?;
                }
                emit(&mut w, "O", fids[c.region_index[i] as usize], at(c.start_ns[i]))?;
                stack.push(i);
            }
            while let Some(top) = stack.pop() {
                let t = at(c.end_ns[top]);
                end_value = t;
                emit(&mut w, "C", fids[c.region_index[top] as usize], t)?;
            }
            write!(w, "], \"startValue\": {}, \"endValue\": {}}}", json_f64(start_value), json_f64(end_value))
                .map_err(io)?;
        }
    }
    w.write_all(b"]}").map_err(io)?;
    w.flush().map_err(io)?;
    Ok(())
}

/// Write `run`'s `ranks` as one speedscope document named `label` to `path`.
///
/// For each rank in the given order: its calls are reconstructed per lane
/// ([`rank_call_arrays`]) and each lane with calls becomes one evented profile named
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

/// [`write_speedscope`] in the shape every writer has: `sel.ranks`, `sel.label`, and only
/// the regions `sel` keeps.
pub fn write_speedscope_selection(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_speedscope(&sel.apply(run), &sel.ranks, &sel.label, path)
}
