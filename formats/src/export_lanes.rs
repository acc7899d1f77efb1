//! The lanes of the lane-aware export writers (speedscope, pstats, Chrome trace, Perfetto,
//! pprof, folded stacks, flame graph, timeline, Parquet): reconstruction of the selected
//! ranks, lane order and names, the time origin. Crate-internal.
use std::collections::HashMap;

use scope_profiler_analysis::{rank_call_arrays, split_by_lane, CallArrays, LaneLabels, Run};

use crate::ExportError;

/// Lane order of every export: main thread first (thread lanes by ascending thread index),
/// then the unknown lane -1, then task lanes ascending.
pub(crate) fn lane_order(lane: i64) -> (u8, i64) {
    if lane <= -2 {
        (0, -2 - lane)
    } else if lane == -1 {
        (1, 0)
    } else {
        (2, lane)
    }
}

/// One reconstructed rank.
pub(crate) struct RankCalls {
    pub rank: u32,
    /// Positions in `run.regions`; `calls.region_index` indexes this.
    pub rows: Vec<usize>,
    pub calls: CallArrays,
    /// (lane, call ids in sorted order) for lanes with calls, in [`lane_order`].
    pub lanes: Vec<(i64, Vec<usize>)>,
}

impl RankCalls {
    /// Region name of call `id`.
    pub fn name<'a>(&self, run: &'a Run, id: usize) -> &'a str {
        let row = &run.regions[self.rows[self.calls.region_index[id] as usize]];
        run.region_names.get(row.region as usize).map(String::as_str).unwrap_or("?")
    }
    /// Source location of call `id`'s region, when it has both file and line.
    pub fn source<'a>(&self, run: &'a Run, id: usize) -> Option<(&'a str, i64)> {
        let row = &run.regions[self.rows[self.calls.region_index[id] as usize]];
        match (&row.source_file, row.source_line) {
            (Some(f), Some(l)) if !f.is_empty() => Some((f.as_str(), l)),
            _ => None,
        }
    }
    /// await ns of call `id` (0 without an await column).
    pub fn await_ns(&self, run: &Run, id: usize) -> i64 {
        let row = &run.regions[self.rows[self.calls.region_index[id] as usize]];
        row.await_ns.as_ref().map(|a| a.value(self.calls.call_index[id] as usize)).unwrap_or(0).max(0)
    }
}

/// The lanes of `calls` with their call ids, in [`lane_order`] (lanes without calls left out).
/// Calls set aside by the reconstruction ([`CallArrays::set_aside`]: they do not nest in
/// their lane) are left out: every exporter can rely on proper nesting.
pub(crate) fn export_lanes(calls: &CallArrays) -> Vec<(i64, Vec<usize>)> {
    let aside: std::collections::HashSet<u32> = calls.set_aside.iter().map(|a| a.call).collect();
    let mut lanes: Vec<(i64, Vec<usize>)> = split_by_lane(calls)
        .iter()
        .map(|(lane, ids)| (lane, ids.iter().filter(|i| !aside.contains(i)).map(|&i| i as usize).collect::<Vec<_>>()))
        .filter(|(_, ids)| !ids.is_empty())
        .collect();
    lanes.sort_by_key(|(lane, _)| lane_order(*lane));
    lanes
}

/// Reconstruct every rank of `ranks` (in the given order) before anything is written.
/// Errors: `Nesting` for the first rank that fails, `NoCalls` when no rank has a call.
pub(crate) fn reconstruct(run: &Run, ranks: &[u32]) -> Result<Vec<RankCalls>, ExportError> {
    let mut all = Vec::with_capacity(ranks.len());
    for &rank in ranks {
        let (rows, calls) = rank_call_arrays(run, rank)?;
        let lanes = export_lanes(&calls);
        all.push(RankCalls { rank, rows, calls, lanes });
    }
    if all.iter().all(|r| r.calls.is_empty()) {
        return Err(ExportError::NoCalls);
    }
    Ok(all)
}

/// Display name of a lane: `"rank R"` for lane -1 (untracked run / unknown thread), else
/// the lane label (`"MainThread"`, `"Task-2 (fetch) on MainThread"`).
pub(crate) fn lane_name(labels: &LaneLabels<'_>, rank: u32, lane: i64) -> String {
    if lane == -1 {
        format!("rank {rank}")
    } else {
        labels.label(lane)
    }
}

/// Root-frame / row names of the lanes of one rank: [`lane_name`], prefixed `"rank R - "`
/// when several ranks are exported (lane -1 stays `"rank R"`). A name that two lanes share
/// gets `" [lane L]"` so their stacks stay apart.
pub(crate) fn lane_names(run: &Run, r: &RankCalls, multi_rank: bool) -> HashMap<i64, String> {
    let labels = LaneLabels::new(run, r.rank);
    let mut names: Vec<(i64, String)> = r
        .lanes
        .iter()
        .map(|&(lane, _)| {
            let name = lane_name(&labels, r.rank, lane);
            if multi_rank && lane != -1 {
                (lane, format!("rank {} - {name}", r.rank))
            } else {
                (lane, name)
            }
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

/// Time origin of a run, ns on the recording clock: `metadata.start_time_ns` when it is not
/// after the earliest selected call, else the earliest selected call's start.
pub(crate) fn origin_ns(run: &Run, all: &[RankCalls]) -> i64 {
    let first = all.iter().flat_map(|r| r.calls.start_ns.iter().copied()).min().unwrap_or(0);
    match run.meta_int("start_time_ns") {
        Some(t) if t <= first => t,
        _ => first,
    }
}
