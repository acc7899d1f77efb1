//! Shared plumbing of the lane-based exports (folded stacks, flame graph, timeline, Parquet):
//! per-rank reconstruction of a [`Selection`], lane order and root-frame names, and the
//! atomic file write (temp file beside the target, then rename).
use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use scope_profiler_analysis::{rank_call_arrays, split_by_lane, CallArrays, LaneLabels, Run};

use crate::ExportError;

/// One selected rank, reconstructed.
pub(crate) struct RankLanes {
    pub rank: u32,
    /// Positions in `run.regions` indexed by `calls.region_index`.
    pub rows: Vec<usize>,
    pub calls: CallArrays,
    /// (lane, call ids ascending) for the lanes with calls, in [`lane_order`].
    pub lanes: Vec<(i64, Vec<usize>)>,
}

impl RankLanes {
    /// Region name of call `id`.
    pub fn name<'r>(&self, run: &'r Run, id: usize) -> &'r str {
        let row = &run.regions[self.rows[self.calls.region_index[id] as usize]];
        run.region_names.get(row.region as usize).map(String::as_str).unwrap_or("?")
    }
}

/// Display order of lanes: main thread first (thread lanes by ascending thread index), then
/// the unknown lane -1, then task lanes ascending (the speedscope export's order).
pub(crate) fn lane_order(lane: i64) -> (u8, i64) {
    if lane <= -2 {
        (0, -2 - lane)
    } else if lane == -1 {
        (1, 0)
    } else {
        (2, lane)
    }
}

/// Reconstruct every selected rank of `run` (already restricted with `Selection::apply`).
/// Errors before anything is written: the first rank's `NestingError`, or `NoCalls` when
/// no selected rank has a call.
pub(crate) fn reconstruct(run: &Run, ranks: &[u32]) -> Result<Vec<RankLanes>, ExportError> {
    let mut all = Vec::with_capacity(ranks.len());
    for &rank in ranks {
        let (rows, calls) = rank_call_arrays(run, rank)?;
        let mut lanes = split_by_lane(&calls);
        lanes.retain(|(_, ids)| !ids.is_empty());
        lanes.sort_by_key(|(lane, _)| lane_order(*lane));
        all.push(RankLanes { rank, rows, calls, lanes });
    }
    if all.iter().all(|r| r.calls.is_empty()) {
        return Err(ExportError::NoCalls);
    }
    Ok(all)
}

/// Root-frame / row names of the lanes of one rank: the lane label (`"MainThread"`,
/// `"Task-2 (fetch) on MainThread"`), `"rank R"` for the unknown lane -1 (untracked runs),
/// prefixed `"rank R - "` when several ranks are exported. A label that two lanes share
/// gets `" [lane L]"` so their stacks stay apart.
pub(crate) fn lane_names(run: &Run, r: &RankLanes, multi_rank: bool) -> HashMap<i64, String> {
    let labels = LaneLabels::new(run, r.rank);
    let mut names: Vec<(i64, String)> = r
        .lanes
        .iter()
        .map(|(lane, _)| {
            let label = if *lane == -1 {
                format!("rank {}", r.rank)
            } else if multi_rank {
                format!("rank {} - {}", r.rank, labels.label(*lane))
            } else {
                labels.label(*lane)
            };
            (*lane, label)
        })
        .collect();
    let mut count: HashMap<String, usize> = HashMap::new();
    for (_, n) in &names {
        *count.entry(n.clone()).or_default() += 1;
    }
    for (lane, n) in &mut names {
        if count[n.as_str()] > 1 {
            *n = format!("{n} [lane {lane}]");
        }
    }
    names.into_iter().collect()
}

/// Origin of "time since run start": metadata `start_time_ns` when it is not after the
/// first call, else the earliest selected call.
pub(crate) fn run_origin(run: &Run, all: &[RankLanes]) -> i64 {
    let first = all.iter().flat_map(|r| r.calls.start_ns.iter().copied()).min().unwrap_or(0);
    match run.meta_int("start_time_ns") {
        Some(s) if s <= first => s,
        _ => first,
    }
}

fn process_umask() -> u32 {
    if let Ok(status) = fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("Umask:") {
                if let Ok(m) = u32::from_str_radix(v.trim(), 8) {
                    return m;
                }
            }
        }
    }
    0o022
}

/// Write `path` atomically: `fill` writes into a temp file beside it, which is renamed over
/// `path` on success (parent directories are created). On error nothing is left behind.
pub(crate) fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let io = |e: std::io::Error| ExportError::Io(format!("could not write {}: {e}", path.display()));
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(|e| ExportError::Io(format!("could not create {}: {e}", dir.display())))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(&dir).map_err(io)?;
    fill(tmp.as_file_mut())?;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = 0o666 & !process_umask();
        let _ = fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode));
    }
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// An `io::Error` while writing `path`, as [`ExportError::Io`].
pub(crate) fn io_err(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |e| ExportError::Io(format!("could not write {}: {e}", path.display()))
}
