//! Folded ("collapsed") stacks: `lane;a;b;c COUNT`, one line per distinct call path per
//! lane, COUNT = the path's self (exclusive) time as an integer (ns by default, or µs).
//!
//! The input of Brendan Gregg's `flamegraph.pl`, inferno, speedscope's collapsed-stack
//! importer and most flame-graph tools. Each lane's label is the root frame, so threads
//! and tasks stay apart (see [`crate::export_lanes`] for the names). Lines are grouped by
//! lane in display order (main thread first, then other threads, the unknown lane, tasks)
//! and sorted within a lane; paths with zero self time are left out.
//!
//! Frame names never contain `;` (replaced by `:`) or line breaks (replaced by a space),
//! the two characters the format cannot carry.
use std::io::{BufWriter, Write};
use std::path::Path;

use rustc_hash::FxHashMap;
use scope_profiler_analysis::Run;

use crate::export_lanes::{lane_names, reconstruct, RankCalls};
use crate::export_output::{io_err, write_atomic};
use crate::{ExportError, Selection};

/// Unit of the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FoldedUnit {
    /// Exact self time in ns (the default): per-frame sums equal the exclusive totals.
    #[default]
    Nanoseconds,
    /// Self time per path in µs, rounded to nearest (sums can differ by rounding).
    Microseconds,
}

impl FoldedUnit {
    /// The count name flame-graph tools show (`"ns"`, `"us"`).
    pub fn count_name(self) -> &'static str {
        match self {
            FoldedUnit::Nanoseconds => "ns",
            FoldedUnit::Microseconds => "us",
        }
    }
}

/// A frame name the folded format can carry.
pub fn sanitize_frame(name: &str) -> String {
    if name.is_empty() {
        return "?".into();
    }
    name.chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' | '\t' => ' ',
            c => c,
        })
        .collect()
}

/// The folded stacks of `sel` in `run`: `(path, count)` per line, in file order.
///
/// Errors: [`ExportError::Nesting`] for a rank that cannot be reconstructed,
/// [`ExportError::NoCalls`] when the selection has no call.
pub fn folded_stacks(run: &Run, sel: &Selection, unit: FoldedUnit) -> Result<Vec<(String, u64)>, ExportError> {
    match folded_stacks_within(run, sel, unit, u64::MAX)? {
        Ok(lines) => Ok(lines),
        Err(bytes) => unreachable!("{bytes} bytes are within u64::MAX"),
    }
}

/// [`folded_stacks`] when their text (`path count` lines) takes at most `max_bytes`, else
/// `Ok(Err(bytes))`, the bytes it would take, found before any line is made: the text grows
/// with the square of a deep recursion's depth (a path of N frames per level), which
/// would take gigabytes and minutes to make.
pub fn folded_stacks_within(
    run: &Run,
    sel: &Selection,
    unit: FoldedUnit,
    max_bytes: u64,
) -> Result<Result<Vec<(String, u64)>, u64>, ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let multi = sel.ranks.len() > 1;
    let frame_name = |r: &RankCalls, row: u32| {
        let reg = &run.regions[r.rows[row as usize]];
        sanitize_frame(run.region_names.get(reg.region as usize).map(String::as_str).unwrap_or("?"))
    };
    let mut tries = Vec::with_capacity(all.len());
    let mut bytes = 0u64;
    for r in &all {
        let names = lane_names(run, r, multi);
        // trie node of every call (calls are in sorted order: a parent precedes its children)
        let mut node_of: Vec<u32> = vec![0; r.calls.len()];
        let frame_len: Vec<u64> = (0..r.rows.len() as u32).map(|row| frame_name(r, row).len() as u64).collect();
        let mut lanes = Vec::with_capacity(r.lanes.len());
        for (lane, ids) in &r.lanes {
            let trie = PathTrie::of_lane(r, ids, &mut node_of);
            let root = sanitize_frame(&names[lane]);
            bytes = bytes.saturating_add(trie.text_bytes(root.len() as u64, unit, &frame_len));
            lanes.push((root, trie));
        }
        tries.push(lanes);
    }
    if bytes > max_bytes {
        return Ok(Err(bytes));
    }
    let mut out = Vec::new();
    for (r, lanes) in all.iter().zip(tries) {
        // frame name of each of this rank's rows, sanitized on first use
        let mut frame_of_row: Vec<Option<String>> = vec![None; r.rows.len()];
        for (root, trie) in lanes {
            let mut lines = trie.lines(&root, unit, &mut frame_of_row, |row| frame_name(r, row));
            lines.sort();
            out.extend(lines);
        }
    }
    Ok(Ok(out))
}

/// Trie of one lane's call paths: node = (parent node, row); node 0 = the lane root.
struct PathTrie {
    parent_of: Vec<(u32, u32)>,
    /// Σ exclusive ns of the calls on each node's path.
    self_ns: Vec<u64>,
}

impl PathTrie {
    /// The trie of the lane's calls `ids`; `node_of` gets each call's node.
    fn of_lane(r: &RankCalls, ids: &[usize], node_of: &mut [u32]) -> Self {
        let mut trie = PathTrie { parent_of: vec![(u32::MAX, u32::MAX)], self_ns: vec![0] };
        // (parent node, row) -> node: one lookup per call, so a fast hash of the two ids
        let mut child: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        for &c in ids {
            let p = r.calls.parent[c];
            let pnode = if p < 0 { 0 } else { node_of[p as usize] };
            let row = r.calls.region_index[c] as u32;
            let next = trie.parent_of.len() as u32;
            let node = *child.entry((pnode, row)).or_insert(next);
            if node == next {
                trie.parent_of.push((pnode, row));
                trie.self_ns.push(0);
            }
            trie.self_ns[node as usize] += r.calls.exclusive_ns[c].max(0) as u64;
            node_of[c] = node;
        }
        trie
    }

    /// The bytes of [`PathTrie::lines`]' text (`path count\n` per line) with a root name of
    /// `root_len` bytes and frames of `frame_len[row]` bytes, in one pass over the nodes (a
    /// node comes after its parent).
    fn text_bytes(&self, root_len: u64, unit: FoldedUnit, frame_len: &[u64]) -> u64 {
        let mut path_len = vec![root_len; self.parent_of.len()];
        let mut bytes = 0u64;
        for (node, &own) in self.self_ns.iter().enumerate().skip(1) {
            let (parent, row) = self.parent_of[node];
            path_len[node] = path_len[parent as usize].saturating_add(1 + frame_len[row as usize]);
            let count = match unit {
                FoldedUnit::Nanoseconds => own,
                FoldedUnit::Microseconds => (own + 500) / 1000,
            };
            if count != 0 {
                let digits = count.checked_ilog10().unwrap_or(0) as u64 + 1;
                bytes = bytes.saturating_add(path_len[node] + 1 + digits + 1);
            }
        }
        bytes
    }

    /// `root;frame;...` and count per node with a non-zero count, in node order; a row's
    /// frame is `frames[row]`, filled by `frame(row)` on first use.
    fn lines(
        &self,
        root: &str,
        unit: FoldedUnit,
        frames: &mut [Option<String>],
        frame: impl Fn(u32) -> String,
    ) -> Vec<(String, u64)> {
        let mut lines: Vec<(String, u64)> = Vec::new();
        let mut path_rows: Vec<u32> = Vec::new();
        for (node, &own) in self.self_ns.iter().enumerate().skip(1) {
            let count = match unit {
                FoldedUnit::Nanoseconds => own,
                FoldedUnit::Microseconds => (own + 500) / 1000,
            };
            if count == 0 {
                continue;
            }
            path_rows.clear();
            let mut n = node as u32;
            while n != 0 {
                let (p, row) = self.parent_of[n as usize];
                path_rows.push(row);
                n = p;
            }
            let mut line = root.to_string();
            for &row in path_rows.iter().rev() {
                line.push(';');
                line.push_str(frames[row as usize].get_or_insert_with(|| frame(row)));
            }
            lines.push((line, count));
        }
        lines
    }
}

/// Write the folded stacks of `sel` (see [`folded_stacks`]) to `out`.
pub fn write_folded_to<W: Write>(run: &Run, sel: &Selection, unit: FoldedUnit, out: W) -> Result<(), ExportError> {
    let lines = folded_stacks(run, sel, unit)?;
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let io = |e: std::io::Error| ExportError::Io(e.to_string());
    for (path, count) in &lines {
        writeln!(w, "{path} {count}").map_err(io)?;
    }
    w.flush().map_err(io)
}

/// Write the folded stacks of `sel` in ns to `path` (atomically, parent directories
/// created). Errors as [`folded_stacks`], or [`ExportError::Io`] naming the path.
pub fn write_folded(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_folded_unit(run, sel, FoldedUnit::Nanoseconds, path)
}

/// [`write_folded`] with a choice of unit.
pub fn write_folded_unit(run: &Run, sel: &Selection, unit: FoldedUnit, path: &Path) -> Result<(), ExportError> {
    let lines = folded_stacks(run, sel, unit)?;
    write_atomic(path, |w| {
        for (p, count) in &lines {
            writeln!(w, "{p} {count}").map_err(io_err(path))?;
        }
        Ok(())
    })
}
