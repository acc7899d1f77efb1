//! cProfile/pstats `.prof` export (`spec-exports.md` §2), marshal written here.
//!
//! A `.prof` file is Python's `marshal.dump` of the pstats dict: key
//! `(filename, lineno, funcname)` → `(cc, nc, tt, ct, callers)`, `callers` mapping a caller
//! key to `(nc, cc, tt, ct)` (cProfile's order for an edge), times in float seconds. It
//! loads with `pstats.Stats`, snakeviz and gprof2dot.
//!
//! Keys, `call_paths` naming, synthetic root inserted last and dict order are the
//! reference's; the counting is cProfile's, which the reference does not
//! do:
//! * **Recursion is collapsed.** With `call_paths` (default) a call of a region that is
//!   already on its parent's path joins the entry of that earlier path (`a > b > a` counts
//!   as `a`, called from `a > b`); the reference gives every depth a path of its own, so a
//!   3,000-deep recursion was 3,000 entries named `"rec > rec > ..."` (27 MB without, 54 MB
//!   with a source file). Now it is one entry with a self-edge, as cProfile writes it.
//! * `cc` counts primitive calls — no enclosing call of the same entry **on its own lane**
//!   (the reference tests "an earlier call of the region, on any lane, that has not ended",
//!   so a call inside a same-named call on another thread counted as recursion) — and `ct`
//!   sums only their durations (a recursion's outermost call); `nc` and `tt` count every call.
//! * A caller edge is `(nc, cc, tt, ct)` with cProfile's per-edge recursion: a call is
//!   primitive on the edge when no enclosing call on its lane has the same caller and callee
//!   (a 4-deep recursion `f > f > f > f`: edge `f -> f` is `(3, 1, ...)`, its `ct` the
//!   duration of the second-level call). The reference wrote `(cc, nc, ...)` with the
//!   entry's primitive test (`(0, 2999, ..., 0.0)` for that self-edge).
//!
//! Times are summed as integer ns and converted to seconds once per entry (the reference
//! sums per-call float seconds).
//!
//! With [`ProfOptions::per_lane`] each lane gets its own file whose root is
//! `<label rank R - lane label>`; otherwise all lanes of a rank hang off one root
//! `<label rank R>` (as the reference: the root's `ct` is the sum over lanes).
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use scope_profiler_analysis::{LaneLabels, Run};

use crate::export_lanes::{lane_name, reconstruct, RankCalls};
use crate::export_output::{io_err, slug, write_atomic};
use crate::export_plan::ProfNaming;
use crate::{ExportError, Selection};

/// pstats key: `(filename, lineno, funcname)`.
pub type StatKey = (String, i64, String);

/// How the stats are built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfOptions {
    /// One entry per distinct root-to-call path without a repeated region, funcname
    /// `"a > b > c"` (default `true`; recursion joins the earlier path); `false`: one entry
    /// per region (its `(file, line, name)`), as cProfile keys functions.
    pub call_paths: bool,
    /// One file (and one root) per lane instead of one per rank.
    pub per_lane: bool,
}

impl Default for ProfOptions {
    fn default() -> Self {
        ProfOptions { call_paths: true, per_lane: false }
    }
}

/// One pstats entry: `key: (cc, nc, tt, ct, callers)`.
#[derive(Debug, Clone, PartialEq)]
pub struct StatEntry {
    pub key: StatKey,
    /// Primitive calls (calls without an enclosing call of this entry on their lane).
    pub cc: i64,
    /// All calls.
    pub nc: i64,
    /// Total self time, s.
    pub tt: f64,
    /// Cumulative time of the primitive calls, s.
    pub ct: f64,
    /// `(caller key, (nc, cc, tt, ct))` in dict order — cProfile's order for a caller edge
    /// (calls first, then primitive calls *of that edge*: a call is primitive on the edge
    /// when no enclosing call on its lane has the same caller and callee entries; `ct` sums
    /// the durations of those).
    pub callers: Vec<(StatKey, (i64, i64, f64, f64))>,
}

/// The stats of one output file.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfStats {
    pub rank: u32,
    /// The lane of a per-lane file, `None` for a whole-rank file.
    pub lane: Option<i64>,
    /// Lane display name of a per-lane file (`"MainThread"`, `"rank 0"` for lane -1).
    pub lane_name: Option<String>,
    /// Entries in dict order (root last).
    pub entries: Vec<StatEntry>,
}

fn key_of(name: &str, source: Option<(&str, i64)>) -> StatKey {
    match source {
        Some((f, l)) => (f.to_string(), l, name.to_string()),
        None => ("~".to_string(), 0, name.to_string()),
    }
}

const NS: f64 = 1e9;

/// Integer accumulator of an entry, (cc, nc, tt ns, ct ns), or of a caller edge,
/// (nc, cc, tt ns, ct ns).
type Acc = [i64; 4];

fn add_acc(a: &mut Acc, v: Acc) {
    (0..4).for_each(|j| a[j] += v[j]);
}

/// No entry: the caller of a top-level call (the synthetic root).
const ROOT: usize = usize::MAX;

/// The entries of one dict being summed: entries in first-use order, each with its
/// integer totals and its callers (`ROOT`: the synthetic root) in first-use order.
#[derive(Default)]
struct Entries {
    entries: Vec<StatEntry>,
    entry_of_key: HashMap<StatKey, usize>,
    acc: Vec<Acc>,
    callers: Vec<Vec<(usize, Acc)>>,
}

impl Entries {
    /// Position of the entry of `key`, added empty on first use.
    fn entry(&mut self, key: StatKey) -> usize {
        *self.entry_of_key.entry(key.clone()).or_insert_with(|| {
            self.entries.push(StatEntry { key, cc: 0, nc: 0, tt: 0.0, ct: 0.0, callers: Vec::new() });
            self.acc.push([0; 4]);
            self.callers.push(Vec::new());
            self.entries.len() - 1
        })
    }

    /// Add `v` to entry `e` and `edge` to its edge from `caller`.
    fn add(&mut self, e: usize, caller: usize, v: Acc, edge: Acc) {
        add_acc(&mut self.acc[e], v);
        let list = &mut self.callers[e];
        match list.iter_mut().find(|(k, _)| *k == caller) {
            Some((_, a)) => add_acc(a, edge),
            None => list.push((caller, edge)),
        }
    }

    /// The entries in seconds, callers keyed, with the synthetic root (`root_total` ns) last.
    fn write(self, root_name: &str, root_total: i64) -> Vec<StatEntry> {
        let root_key = key_of(root_name, None);
        let keys: Vec<StatKey> = self.entries.iter().map(|e| e.key.clone()).collect();
        let mut entries = self.entries;
        for ((entry, [cc, nc, tt, ct]), callers) in entries.iter_mut().zip(self.acc).zip(self.callers) {
            entry.cc = cc;
            entry.nc = nc;
            entry.tt = tt as f64 / NS;
            entry.ct = ct as f64 / NS;
            entry.callers = callers
                .into_iter()
                .map(|(k, v)| {
                    let key = if k == ROOT { root_key.clone() } else { keys[k].clone() };
                    (key, (v[0], v[1], v[2] as f64 / NS, v[3] as f64 / NS))
                })
                .collect();
        }
        entries.push(StatEntry {
            key: root_key,
            cc: 1,
            nc: 1,
            tt: 0.0,
            ct: root_total as f64 / NS,
            callers: Vec::new(),
        });
        entries
    }
}

/// Per-call working space of one rank, grown to its call count and reused for every file
/// of the rank (no call reads a slot that was not written for its own file first: parents
/// come before their children, on the same lane).
#[derive(Default)]
struct Scratch {
    /// Entry of each call.
    entry: Vec<usize>,
    /// Path node of each call (`call_paths`).
    path: Vec<usize>,
    /// Caller edge (dense id) of each call.
    edge: Vec<usize>,
    /// Bit 0: primitive call of its entry; bit 1: primitive on its caller edge.
    primitive: Vec<u8>,
}

impl Scratch {
    fn grow(&mut self, n: usize) {
        if self.entry.len() < n {
            self.entry.resize(n, ROOT);
            self.path.resize(n, ROOT);
            self.edge.resize(n, 0);
            self.primitive.resize(n, 0);
        }
    }
}

/// Entries for the calls of `lanes` (each lane's calls in sorted call order; `ids`: all of
/// them in sorted call order) of one rank.
#[allow(clippy::too_many_arguments)]
fn build_entries(
    run: &Run,
    rc: &RankCalls,
    ids: &[usize],
    lanes: &[&[usize]],
    root_name: &str,
    call_paths: bool,
    name_order: Option<&[String]>,
    scratch: &mut Scratch,
) -> Vec<StatEntry> {
    let c = &rc.calls;
    let root_total: i64 = ids.iter().filter(|&&i| c.parent[i] < 0).map(|&i| c.end_ns[i] - c.start_ns[i]).sum();
    let mut entries = Entries::default();
    scratch.grow(c.len());
    // the region row of each by-region entry (caller order), empty for paths
    let mut row_of_entry: Vec<usize> = Vec::new();
    if call_paths {
        path_entries(&mut entries, run, rc, ids, scratch);
    } else {
        let row_entry = region_entries(&mut entries, run, rc, ids, name_order);
        row_of_entry = vec![usize::MAX; entries.entries.len()];
        for (ri, &e) in row_entry.iter().enumerate().rev().filter(|(_, &e)| e != ROOT) {
            row_of_entry[e] = ri;
        }
        for &i in ids {
            scratch.entry[i] = row_entry[c.region_index[i] as usize];
        }
    }
    mark_primitive(entries.entries.len(), rc, lanes, call_paths, scratch);
    add_calls(&mut entries, rc, ids, scratch);
    if !call_paths {
        // callers ordered root first, then by the caller's region row (the reference's
        // bincount order)
        for list in &mut entries.callers {
            list.sort_by_key(|&(k, _)| if k == ROOT { -1 } else { row_of_entry[k] as i64 });
        }
    }
    entries.write(root_name, root_total)
}

/// One entry per distinct root-to-call path (funcname `"a > b > c"`), with recursion
/// collapsed: a call of a region that is already on its parent's path joins the entry of
/// that earlier path (`a > b > a` is `a`, a 3,000-deep recursion one entry with a
/// self-edge), so the paths are those without a repeated region and their number does not
/// grow with recursion depth. Sets `scratch.entry` and `scratch.edge` for `ids`.
fn path_entries(entries: &mut Entries, run: &Run, rc: &RankCalls, ids: &[usize], scratch: &mut Scratch) {
    struct PathNode {
        parent: usize,
        region: u32,
        entry: usize,
        name: String,
    }
    let c = &rc.calls;
    let mut nodes: Vec<PathNode> = Vec::new();
    // (parent path, region) -> (path, caller edge)
    let mut memo: HashMap<(usize, u32), (usize, usize)> = HashMap::new();
    let mut edge_id: HashMap<(usize, usize), usize> = HashMap::new();
    for &i in ids {
        let p = c.parent[i];
        let parent_path = if p < 0 { ROOT } else { scratch.path[p as usize] };
        let region = run.regions[rc.rows[c.region_index[i] as usize]].region;
        let (pid, edge) = match memo.get(&(parent_path, region)) {
            Some(&known) => known,
            None => {
                let mut q = parent_path;
                while q != ROOT && nodes[q].region != region {
                    q = nodes[q].parent;
                }
                let pid = if q != ROOT {
                    q // recursion: the path that already ends in this region
                } else {
                    let name = rc.name(run, i);
                    let full = if parent_path == ROOT {
                        name.to_string()
                    } else {
                        format!("{} > {}", nodes[parent_path].name, name)
                    };
                    let entry = entries.entry(key_of(&full, rc.source(run, i)));
                    nodes.push(PathNode { parent: parent_path, region, entry, name: full });
                    nodes.len() - 1
                };
                let caller = if parent_path == ROOT { ROOT } else { nodes[parent_path].entry };
                let n_edges = edge_id.len();
                let edge = *edge_id.entry((caller, nodes[pid].entry)).or_insert(n_edges);
                memo.insert((parent_path, region), (pid, edge));
                (pid, edge)
            }
        };
        scratch.path[i] = pid;
        scratch.entry[i] = nodes[pid].entry;
        scratch.edge[i] = edge;
    }
}

/// Which calls of `lanes` are primitive, as cProfile counts: a call is primitive when no
/// enclosing call *on its own lane* has the same entry, and primitive on its caller edge
/// when no enclosing call has the same (caller, callee) entries. Sets `scratch.primitive`,
/// and `scratch.edge` unless `edges_known` (set by [`path_entries`]).
fn mark_primitive(n_entries: usize, rc: &RankCalls, lanes: &[&[usize]], edges_known: bool, scratch: &mut Scratch) {
    let c = &rc.calls;
    let mut edge_id: HashMap<(usize, usize), usize> = HashMap::new();
    // open calls of each entry / edge on the lane's stack
    let mut open = vec![0u32; n_entries];
    let mut open_edge: Vec<u32> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for lane in lanes {
        for &i in lane.iter() {
            let p = c.parent[i];
            while let Some(&top) = stack.last() {
                if p >= 0 && top == p as usize {
                    break;
                }
                stack.pop();
                open[scratch.entry[top]] -= 1;
                open_edge[scratch.edge[top]] -= 1;
            }
            let e = scratch.entry[i];
            let edge = if edges_known {
                scratch.edge[i]
            } else {
                let k = if p < 0 { ROOT } else { scratch.entry[p as usize] };
                let n_edges = edge_id.len();
                let edge = *edge_id.entry((k, e)).or_insert(n_edges);
                scratch.edge[i] = edge;
                edge
            };
            if edge >= open_edge.len() {
                open_edge.resize(edge + 1, 0);
            }
            scratch.primitive[i] = u8::from(open[e] == 0) | (u8::from(open_edge[edge] == 0) << 1);
            open[e] += 1;
            open_edge[edge] += 1;
            stack.push(i);
        }
        for top in stack.drain(..) {
            open[scratch.entry[top]] -= 1;
            open_edge[scratch.edge[top]] -= 1;
        }
    }
}

/// Sum the calls `ids` into their entries and caller edges: `nc`, `tt` every call, `cc`
/// and `ct` the primitive ones ([`mark_primitive`]; only primitive calls add cumulative
/// time: a recursion's outermost call).
fn add_calls(entries: &mut Entries, rc: &RankCalls, ids: &[usize], scratch: &Scratch) {
    let c = &rc.calls;
    for &i in ids {
        let p = c.parent[i];
        let (e, k) = (scratch.entry[i], if p < 0 { ROOT } else { scratch.entry[p as usize] });
        let (primitive, edge_primitive) = (scratch.primitive[i] & 1 != 0, scratch.primitive[i] & 2 != 0);
        let (dur, excl) = (c.end_ns[i] - c.start_ns[i], c.exclusive_ns[i]);
        entries.add(
            e,
            k,
            [primitive as i64, 1, excl, if primitive { dur } else { 0 }],
            [1, edge_primitive as i64, excl, if edge_primitive { dur } else { 0 }],
        );
    }
}

/// Entry position of each row of `rc` with calls among `ids` (`usize::MAX` for the others),
/// entries added in the order of `name_order` when given (the reference's `get_regions`
/// order), else region-row order.
fn region_entries(
    entries: &mut Entries,
    run: &Run,
    rc: &RankCalls,
    ids: &[usize],
    name_order: Option<&[String]>,
) -> Vec<usize> {
    let n_rows = rc.rows.len();
    let mut has_calls = vec![false; n_rows];
    for &i in ids {
        has_calls[rc.calls.region_index[i] as usize] = true;
    }
    let mut order: Vec<usize> = (0..n_rows).collect();
    if let Some(names) = name_order {
        let pos = |ri: usize| {
            let n = run.region_names.get(run.regions[rc.rows[ri]].region as usize);
            n.and_then(|n| names.iter().position(|k| k == n)).unwrap_or(usize::MAX)
        };
        order.sort_by_key(|&ri| pos(ri));
    }
    let mut row_entry: Vec<usize> = vec![usize::MAX; n_rows];
    for ri in order.into_iter().filter(|&ri| has_calls[ri]) {
        let r = &run.regions[rc.rows[ri]];
        let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?");
        let src = match (&r.source_file, r.source_line) {
            (Some(f), Some(l)) if !f.is_empty() => Some((f.as_str(), l)),
            _ => None,
        };
        row_entry[ri] = entries.entry(key_of(name, src));
    }
    row_entry
}

/// The pstats dicts of `sel` (one per rank with calls, or one per lane with calls when
/// `opts.per_lane`), without writing anything. With `call_paths: false` the entries follow
/// the order of `sel.regions` when given (Python passes `get_regions` order, as the
/// reference), else region-table order. Root name `<{label} rank {R}>` (per lane:
/// `<{label} rank {R} - {lane name}>`).
///
/// Errors: `Nesting` when a rank cannot be reconstructed, `NoCalls` when nothing is selected.
pub fn prof_stats(run: &Run, sel: &Selection, opts: ProfOptions) -> Result<Vec<ProfStats>, ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let mut out = Vec::new();
    let mut scratch = Scratch::default();
    for rc in &all {
        if rc.calls.is_empty() {
            continue;
        }
        let regions = sel.regions.as_deref();
        if opts.per_lane {
            let labels = LaneLabels::new(run, rc.rank);
            for (lane, ids) in &rc.lanes {
                let lname = lane_name(&labels, rc.rank, *lane);
                let root = format!("<{} rank {} - {}>", sel.label, rc.rank, lname);
                let lanes = [ids.as_slice()];
                out.push(ProfStats {
                    rank: rc.rank,
                    lane: Some(*lane),
                    lane_name: Some(lname),
                    entries: build_entries(run, rc, ids, &lanes, &root, opts.call_paths, regions, &mut scratch),
                });
            }
        } else {
            // the calls of every lane (calls set aside by the reconstruction are in none)
            let mut ids: Vec<usize> = rc.lanes.iter().flat_map(|(_, ids)| ids.iter().copied()).collect();
            ids.sort_unstable();
            let lanes: Vec<&[usize]> = rc.lanes.iter().map(|(_, ids)| ids.as_slice()).collect();
            let root = format!("<{} rank {}>", sel.label, rc.rank);
            out.push(ProfStats {
                rank: rc.rank,
                lane: None,
                lane_name: None,
                entries: build_entries(run, rc, &ids, &lanes, &root, opts.call_paths, regions, &mut scratch),
            });
        }
    }
    Ok(out)
}

// ---- marshal (format version 4 subset, readable by every Python 3 marshal) ----

fn m_int(out: &mut Vec<u8>, v: i64) {
    if let Ok(x) = i32::try_from(v) {
        out.push(b'i');
        out.extend_from_slice(&x.to_le_bytes());
    } else {
        // TYPE_LONG: signed digit count, then 15-bit digits, least significant first
        let mut m = v.unsigned_abs();
        let mut digits = Vec::new();
        while m > 0 {
            digits.push((m & 0x7fff) as u16);
            m >>= 15;
        }
        let n = digits.len() as i32 * if v < 0 { -1 } else { 1 };
        out.push(b'l');
        out.extend_from_slice(&n.to_le_bytes());
        for d in digits {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }
}

fn m_float(out: &mut Vec<u8>, v: f64) {
    out.push(b'g');
    out.extend_from_slice(&v.to_le_bytes());
}

fn m_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'u');
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn m_tuple(out: &mut Vec<u8>, n: usize) {
    out.push(b'(');
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

fn m_key(out: &mut Vec<u8>, k: &StatKey) {
    m_tuple(out, 3);
    m_str(out, &k.0);
    m_int(out, k.1);
    m_str(out, &k.2);
}

/// `marshal.dumps(stats_dict)` of `entries` (dict order kept).
pub fn marshal_stats(entries: &[StatEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * entries.len() + 2);
    out.push(b'{');
    for e in entries {
        m_key(&mut out, &e.key);
        m_tuple(&mut out, 5);
        m_int(&mut out, e.cc);
        m_int(&mut out, e.nc);
        m_float(&mut out, e.tt);
        m_float(&mut out, e.ct);
        out.push(b'{');
        for (k, (cc, nc, tt, ct)) in &e.callers {
            m_key(&mut out, k);
            m_tuple(&mut out, 4);
            m_int(&mut out, *cc);
            m_int(&mut out, *nc);
            m_float(&mut out, *tt);
            m_float(&mut out, *ct);
        }
        out.push(b'0');
    }
    out.push(b'0');
    out
}

/// File of one [`ProfStats`]: `path`'s stem + `_rank{R}` (+ `_{lane slug}`) + its extension
/// (`out.prof` → `out_rank0.prof`, `out_rank0_MainThread.prof`).
pub fn prof_path(path: &Path, stats: &ProfStats) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    let mut name = format!("{stem}_rank{}", stats.rank);
    if let Some(l) = &stats.lane_name {
        name.push('_');
        name.push_str(&slug(l));
    }
    name.push_str(&ext);
    path.with_file_name(name)
}

/// Write the `.prof` files of `sel` and return them in order (ranks as given, lanes main
/// thread first): one file is `path` itself; several (several ranks with calls, or lanes
/// with `per_lane`) go next to it, named by [`prof_path`]. Ranks without calls get no file.
/// Everything is reconstructed before the first file is written.
///
/// Errors: `Nesting`, `NoCalls`, `Io` (naming the path).
pub fn write_prof(run: &Run, sel: &Selection, path: &Path, opts: ProfOptions) -> Result<Vec<PathBuf>, ExportError> {
    write_prof_named(run, sel, path, opts, ProfNaming::OneFileAsGiven)
}

/// [`write_prof`] with the files named as `naming` says: with [`ProfNaming::Reference`]
/// every file is named by [`prof_path`] (`profile.prof` -> `profile_rank0.prof`), as 0.7.5's
/// `export_prof` names them.
pub fn write_prof_named(
    run: &Run,
    sel: &Selection,
    path: &Path,
    opts: ProfOptions,
    naming: ProfNaming,
) -> Result<Vec<PathBuf>, ExportError> {
    let files = prof_stats(run, sel, opts)?;
    let mut written = Vec::with_capacity(files.len());
    let single = files.len() == 1 && naming == ProfNaming::OneFileAsGiven;
    for f in &files {
        let p = if single { path.to_path_buf() } else { prof_path(path, f) };
        let bytes = marshal_stats(&f.entries);
        write_atomic(&p, |w| w.write_all(&bytes).map_err(io_err(&p)))?;
        written.push(p);
    }
    Ok(written)
}
