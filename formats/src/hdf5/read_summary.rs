//! Summary-only reading: region statistics, metadata and lane tables of a schema-2/3 file
//! without touching `/events` (the reference's `load_h5_summary`).
//!
//! The reference stores a fixed-size `rank_region_index/summary_statistics` compound per
//! region row; this reader returns those rows plus the index columns, the thread and task
//! tables and the metadata. A file that cannot answer this way (schema 1, or no
//! `summary_statistics`) gives `Ok(None)`: the caller falls back to [`super::read_h5`].
use std::path::Path;

use scope_profiler_analysis::{MetaValue, TaskRow, ThreadRow};

use super::columnar::read_lane_tables;
use super::read::{
    aggregate_error, num_ranks, open_file, read_metadata, read_schema_version, storage_layout, with_ctx,
};
use super::summary::SummaryRecord;
use super::typed::*;
use super::{py_repr, H5Error, R};

/// One row of `rank_region_index`, statistics only.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Index into [`RunSummary::region_names`].
    pub region: u32,
    pub rank: u32,
    /// Number of calls (`event_counts`).
    pub count: i64,
    /// The stored `summary_statistics` compound.
    pub stats: SummaryRecord,
    /// Stored Σ exclusive ns; `None` when absent or `-1`.
    pub exclusive_total_ns: Option<i64>,
    pub source_file: Option<String>,
    pub source_line: Option<i64>,
    pub source_text: Option<String>,
    pub tags: Vec<String>,
}

/// A run's statistics without per-call data.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The file's `region_table/names`.
    pub region_names: Vec<String>,
    /// Region rows in file order.
    pub rows: Vec<SummaryRow>,
    pub threads: Vec<ThreadRow>,
    pub tasks: Vec<TaskRow>,
    pub metadata: Vec<(String, MetaValue)>,
    /// As [`super::read_h5`]: `max(metadata.mpi_size, max rank + 1)`, 0 without rows.
    pub num_ranks: u32,
}

fn read_summary_inner(path: &Path, ctx: &Ctx) -> R<Option<RunSummary>> {
    let file = open_file(path, ctx)?;
    let version = read_schema_version(&file, ctx)?;
    if version < 2 {
        return Ok(None);
    }
    if storage_layout(&file, ctx)? == "aggregate" {
        return Err(aggregate_error(ctx));
    }
    if !has(&file, "rank_region_index") || !has(&file, "region_table") {
        return Err(ctx.corrupt("is not a scope-profiler profile: it has no rank_region_index or region_table group."));
    }
    let index = file.group("rank_region_index").map_err(ctx.h5("rank_region_index"))?;
    if !has(&index, "summary_statistics") {
        return Ok(None);
    }
    const IX: &str = "rank_region_index";
    let names =
        dataset_strings(&file.group("region_table").map_err(ctx.h5("region_table"))?, "names", ctx, "region_table")?;
    let region_ids = dataset_ints(&index, "region_ids", ctx, IX)?;
    let rows = region_ids.len();
    let ints = |name: &str| -> R<Vec<i64>> {
        let v = dataset_ints(&index, name, ctx, IX)?;
        if v.len() != rows {
            return Err(H5Error::Schema(format!(
                "rank_region_index/{name} must be one-dimensional with {rows} rows, got shape ({},)",
                v.len()
            )));
        }
        Ok(v)
    };
    let strs = |name: &str| -> R<Vec<String>> {
        let v = dataset_strings(&index, name, ctx, IX)?;
        if v.len() != rows {
            return Err(H5Error::Schema(format!(
                "rank_region_index/{name} must be one-dimensional with {rows} rows, got shape ({},)",
                v.len()
            )));
        }
        Ok(v)
    };
    let ranks = ints("ranks")?;
    let counts = ints("event_counts")?;
    let lines = ints("source_lines")?;
    let files = strs("source_files")?;
    let texts = strs("source_texts")?;
    let tags = strs("tags")?;
    let totals = if has(&index, "exclusive_totals") { Some(ints("exclusive_totals")?) } else { None };
    let ds = index.dataset("summary_statistics").map_err(ctx.h5("summary_statistics"))?;
    let stats: Vec<SummaryRecord> = read_raw_checked(&ds, ctx, "rank_region_index/summary_statistics")?;
    if stats.len() != rows {
        return Err(H5Error::Schema(format!(
            "rank_region_index/summary_statistics must be one-dimensional with {rows} rows, got shape ({},)",
            stats.len()
        )));
    }
    let mut out = RunSummary { region_names: names, ..Default::default() };
    let mut seen = std::collections::HashSet::with_capacity(rows);
    for r in 0..rows {
        let rid = region_ids[r];
        if rid < 0 || rid as usize >= out.region_names.len() {
            return Err(H5Error::Schema("summary index contains an out-of-range region id".into()));
        }
        if !seen.insert((rid, ranks[r])) {
            return Err(H5Error::Schema("summary index contains a duplicate rank/region row".into()));
        }
        let rank = u32::try_from(ranks[r])
            .map_err(|_| ctx.corrupt(format!("has rank {} in its event index. The file is damaged.", ranks[r])))?;
        let tag_list: Vec<String> = if tags[r].is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&tags[r]).map_err(|e| {
                ctx.corrupt(format!("has unreadable tags {} in row {r}: {e}. The file is damaged.", py_repr(&tags[r])))
            })?
        };
        out.rows.push(SummaryRow {
            region: rid as u32,
            rank,
            count: counts[r],
            stats: stats[r],
            exclusive_total_ns: totals.as_ref().map(|t| t[r]).filter(|&t| t >= 0),
            source_file: Some(files[r].clone()).filter(|s| !s.is_empty()),
            source_line: Some(lines[r]).filter(|&l| l >= 0),
            source_text: Some(texts[r].clone()).filter(|s| !s.is_empty()),
            tags: tag_list,
        });
    }
    out.metadata = read_metadata(&file, ctx)?;
    let mut lanes = scope_profiler_analysis::Run::default();
    read_lane_tables(&file, ctx, &mut lanes)?;
    out.threads = lanes.threads;
    out.tasks = lanes.tasks;
    out.num_ranks = num_ranks(ctx, &out.metadata, out.rows.iter().map(|r| r.rank).max(), out.rows.len())?;
    Ok(Some(out))
}

/// Read the statistics, metadata and lane tables of a schema-2/3 file without reading
/// its event columns. `Ok(None)` when the file has no fixed-size summary (schema 1, or a
/// schema-2 file written before `summary_statistics` existed).
///
/// Errors: as [`super::read_h5`] for missing, damaged or too-new files; [`H5Error::Schema`]
/// with the reference's messages for an inconsistent summary index.
pub fn read_h5_summary(path: &Path) -> Result<Option<RunSummary>, H5Error> {
    with_ctx(path, |ctx| read_summary_inner(path, ctx))
}
