//! Summary-only reading: region statistics, metadata and lane tables of a schema-2/3 file
//! without touching `/events` (the reference's `load_h5_summary`).
//!
//! The reference stores a fixed-size `rank_region_index/summary_statistics` compound per
//! region row; this reader returns those rows plus the index columns, the thread and task
//! tables and the metadata. A file that cannot answer this way (schema 1, or no
//! `summary_statistics`) gives `Ok(None)`: the caller falls back to [`super::read_h5`].
use std::path::Path;

use arrow_array::Int64Array;
use scope_profiler_analysis::{MetaValue, RegionCalls, Run, StoredStats, TaskRow, ThreadRow};

use super::columnar::{read_lane_tables, row_tags};
use super::read::{
    aggregate_error, num_ranks, open_file, read_metadata, read_schema_version, storage_layout, with_ctx,
};
use super::summary_statistics::SummaryCompound;
use super::typed::*;
use super::{H5Error, R};

/// One row of `rank_region_index`, statistics only.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// Index into [`RunSummary::region_names`].
    pub region: u32,
    pub rank: u32,
    /// The stored statistics: `count` from `event_counts`, the rest from the
    /// `summary_statistics` compound.
    pub stats: StoredStats,
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
    /// Event-loop blocks (`/loop_blocks`; empty without).
    pub loop_blocks: Vec<scope_profiler_analysis::LoopBlockRow>,
}

/// The rows a summary read keeps (`read_h5_summary(regions=, ranks=)`): regions named in
/// `names`, ranks in `ranks`; `None` keeps all.
#[derive(Debug, Clone, Default)]
pub struct SummaryFilter {
    pub names: Option<Vec<String>>,
    pub ranks: Option<Vec<u32>>,
}

impl SummaryFilter {
    fn keeps_rank(&self, rank: u32) -> bool {
        self.ranks.as_ref().is_none_or(|w| w.contains(&rank))
    }
    fn keeps_region(&self, names: &[String], id: u32) -> bool {
        self.names.as_ref().is_none_or(|w| names.get(id as usize).is_some_and(|n| w.contains(n)))
    }

    /// A full run restricted to the filter (the summary read of a schema-1 file, which has
    /// no summaries); stored exclusive totals are dropped when regions are filtered (the
    /// nesting they were computed over is gone).
    pub fn restrict(&self, mut run: Run) -> Run {
        let names = std::mem::take(&mut run.region_names);
        run.regions.retain(|r| self.keeps_rank(r.rank) && self.keeps_region(&names, r.region));
        if self.names.is_some() {
            run.regions.iter_mut().for_each(|r| r.exclusive_total_ns = None);
        }
        run.region_names = names;
        run
    }
}

impl RunSummary {
    /// The summary's rows `filter` keeps as a run of rows without calls (their stored
    /// statistics, exclusive totals, sources and tags; `""` sources as none), and the lane
    /// tables of the ranks it keeps.
    pub fn into_run(self, filter: &SummaryFilter) -> Run {
        let names = &self.region_names;
        let rows = self.rows.iter().filter(|r| filter.keeps_rank(r.rank) && filter.keeps_region(names, r.region));
        Run {
            regions: rows.map(SummaryRow::stored_row).collect(),
            threads: self.threads.into_iter().filter(|t| filter.keeps_rank(t.rank)).collect(),
            tasks: self.tasks.into_iter().filter(|t| filter.keeps_rank(t.rank)).collect(),
            metadata: self.metadata,
            num_ranks: self.num_ranks,
            region_names: self.region_names,
            loop_blocks: self.loop_blocks.into_iter().filter(|b| filter.keeps_rank(b.rank)).collect(),
        }
    }
}

impl SummaryRow {
    /// The row as a region row without events.
    fn stored_row(&self) -> RegionCalls {
        let empty = || Int64Array::from(Vec::<i64>::new());
        let mut row = RegionCalls::new(self.region, self.rank, empty(), empty());
        row.stored = Some(self.stats);
        row.exclusive_total_ns = self.exclusive_total_ns;
        row.source_file = self.source_file.clone().filter(|f| !f.is_empty());
        row.source_line = self.source_line;
        row.source_text = self.source_text.clone().filter(|t| !t.is_empty());
        row.tags = self.tags.clone();
        row
    }
}

fn read_summary_inner(ctx: &Ctx) -> R<Option<RunSummary>> {
    let file = open_file(ctx)?;
    let Some(index) = summary_index(&file, ctx)? else {
        return Ok(None);
    };
    let names =
        dataset_strings(&file.group("region_table").map_err(ctx.h5("region_table"))?, "names", ctx, "region_table")?;
    let ix = SummaryIndex::read(&index, ctx)?;
    let rows = ix.rows(names.len(), ctx)?;
    let metadata = read_metadata(&file, ctx)?;
    let mut lanes = scope_profiler_analysis::Run::default();
    read_lane_tables(&file, ctx, &mut lanes)?;
    let mut ranks = num_ranks(ctx, &metadata, rows.iter().map(|r| r.rank).max(), rows.len())?;
    if rows.is_empty() {
        // a tracked run that recorded no region: its lane tables' ranks (as read_h5)
        let lane_rank = lanes.threads.iter().map(|t| t.rank).chain(lanes.tasks.iter().map(|t| t.rank)).max();
        ranks = ranks.max(num_ranks(ctx, &metadata, lane_rank, usize::MAX)?);
    }
    Ok(Some(RunSummary {
        region_names: names,
        rows,
        threads: lanes.threads,
        tasks: lanes.tasks,
        metadata,
        num_ranks: ranks,
        loop_blocks: lanes.loop_blocks,
    }))
}

/// The `rank_region_index` group of a file that can answer a summary read, `None` for a
/// schema-1 file or one without `summary_statistics`.
fn summary_index(file: &hdf5::File, ctx: &Ctx) -> R<Option<hdf5::Group>> {
    let version = read_schema_version(file, ctx)?;
    if version < 2 {
        return Ok(None);
    }
    if storage_layout(file, ctx)? == "aggregate" {
        return Err(aggregate_error(ctx));
    }
    if !has(file, "rank_region_index") || !has(file, "region_table") {
        return Err(ctx.corrupt("is not a scope-profiler profile: it has no rank_region_index or region_table group."));
    }
    let index = file.group("rank_region_index").map_err(ctx.h5("rank_region_index"))?;
    Ok(has(&index, "summary_statistics").then_some(index))
}

const IX: &str = "rank_region_index";

/// `Schema` error (the reference's message) unless index column `name` has exactly `rows` values.
fn exact_rows<T>(v: Vec<T>, rows: usize, name: &str) -> R<Vec<T>> {
    if v.len() != rows {
        return Err(H5Error::Schema(format!(
            "{IX}/{name} must be one-dimensional with {rows} rows, got shape ({},)",
            v.len()
        )));
    }
    Ok(v)
}

/// The `rank_region_index` columns a summary needs, one value per region row.
struct SummaryIndex {
    region_ids: Vec<i64>,
    ranks: Vec<i64>,
    lines: Vec<i64>,
    files: Vec<String>,
    texts: Vec<String>,
    tags: Vec<String>,
    totals: Option<Vec<i64>>,
    /// The `summary_statistics` compounds with `count` from `event_counts`.
    stats: Vec<StoredStats>,
}

impl SummaryIndex {
    fn read(index: &hdf5::Group, ctx: &Ctx) -> R<Self> {
        let region_ids = dataset_ints(index, "region_ids", ctx, IX)?;
        let rows = region_ids.len();
        let ints = |name: &str| exact_rows(dataset_ints(index, name, ctx, IX)?, rows, name);
        let strs = |name: &str| exact_rows(dataset_strings(index, name, ctx, IX)?, rows, name);
        let ranks = ints("ranks")?;
        let counts = ints("event_counts")?;
        let (lines, files, texts, tags) =
            (ints("source_lines")?, strs("source_files")?, strs("source_texts")?, strs("tags")?);
        let totals = if has(index, "exclusive_totals") { Some(ints("exclusive_totals")?) } else { None };
        let ds = index.dataset("summary_statistics").map_err(ctx.h5("summary_statistics"))?;
        let compounds: Vec<SummaryCompound> = read_raw_checked(&ds, ctx, "rank_region_index/summary_statistics")?;
        let stats = exact_rows(compounds, rows, "summary_statistics")?
            .into_iter()
            .zip(&counts)
            .map(|(SummaryCompound(s), &count)| StoredStats { count, ..s })
            .collect();
        Ok(SummaryIndex { region_ids, ranks, lines, files, texts, tags, totals, stats })
    }

    /// The rows, checked: region ids within the `n_names` names, no duplicate
    /// (region, rank), ranks non-negative, tags readable, no stored exclusive total above the
    /// row's inclusive total.
    fn rows(&self, n_names: usize, ctx: &Ctx) -> R<Vec<SummaryRow>> {
        let mut seen = std::collections::HashSet::with_capacity(self.region_ids.len());
        let mut out = Vec::with_capacity(self.region_ids.len());
        for r in 0..self.region_ids.len() {
            let (rid, rank) = (self.region_ids[r], self.ranks[r]);
            if rid < 0 || rid as usize >= n_names {
                return Err(H5Error::Schema("summary index contains an out-of-range region id".into()));
            }
            if !seen.insert((rid, rank)) {
                return Err(H5Error::Schema("summary index contains a duplicate rank/region row".into()));
            }
            let rank = u32::try_from(rank)
                .map_err(|_| ctx.corrupt(format!("has rank {rank} in its event index. The file is damaged.")))?;
            let exclusive = self.totals.as_ref().map(|t| t[r]).filter(|&t| t >= 0);
            if let Some(t) = exclusive.filter(|&t| t > self.stats[r].total) {
                return Err(ctx.corrupt(format!(
                    "stores an exclusive total of {t} ns for row {r} (region id {rid}, rank {rank}), more than its inclusive total of {} ns. The file is damaged.",
                    self.stats[r].total
                )));
            }
            out.push(SummaryRow {
                region: rid as u32,
                rank,
                stats: self.stats[r],
                exclusive_total_ns: exclusive,
                source_file: Some(self.files[r].clone()).filter(|s| !s.is_empty()),
                source_line: Some(self.lines[r]).filter(|&l| l >= 0),
                source_text: Some(self.texts[r].clone()).filter(|s| !s.is_empty()),
                tags: row_tags(&self.tags[r], r, ctx)?,
            });
        }
        Ok(out)
    }
}

/// Read the statistics, metadata and lane tables of a schema-2/3 file without reading
/// its event columns. `Ok(None)` when the file has no fixed-size summary (schema 1, or a
/// schema-2 file written before `summary_statistics` existed).
///
/// Errors: as [`super::read_h5`] for missing, damaged or too-new files; [`H5Error::Schema`]
/// with the reference's messages for an inconsistent summary index.
pub fn read_h5_summary(path: &Path) -> Result<Option<RunSummary>, H5Error> {
    with_ctx(path, read_summary_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_row(region: u32, rank: u32, count: i64) -> SummaryRow {
        SummaryRow {
            region,
            rank,
            stats: StoredStats { count, total: 10 * count, ..StoredStats::default() },
            exclusive_total_ns: Some(5),
            source_file: Some(String::new()),
            source_line: Some(3),
            source_text: None,
            tags: vec!["io".into()],
        }
    }

    /// Rows and lane tables of the kept ranks and names only, as rows without calls.
    #[test]
    fn a_filtered_summary_keeps_the_rows_asked_for() {
        let summary = RunSummary {
            region_names: vec!["a".into(), "b".into()],
            rows: vec![summary_row(0, 0, 2), summary_row(1, 0, 3), summary_row(0, 1, 4)],
            threads: vec![ThreadRow { ident: 1, native_id: 1, ..ThreadRow::new(1, 0, "MainThread") }],
            num_ranks: 2,
            ..RunSummary::default()
        };
        let filter = SummaryFilter { names: Some(vec!["a".into()]), ranks: Some(vec![1]) };
        let run = summary.clone().into_run(&filter);
        assert_eq!(run.regions.len(), 1);
        let row = &run.regions[0];
        assert_eq!((row.region, row.rank, row.len()), (0, 1, 0));
        assert_eq!(row.stored.map(|s| s.count), Some(4));
        assert_eq!((row.exclusive_total_ns, row.source_file.as_deref(), row.source_line), (Some(5), None, Some(3)));
        assert_eq!((run.threads.len(), run.num_ranks), (1, 2));
        let all = summary.into_run(&SummaryFilter::default());
        assert_eq!(all.regions.iter().map(|r| r.stored.unwrap().count).collect::<Vec<_>>(), vec![2, 3, 4]);
    }

    /// A full run keeps its calls; filtering names drops the stored exclusive totals.
    #[test]
    fn restricting_a_run_by_name_drops_its_stored_exclusive_totals() {
        let row = |region: u32, rank: u32| {
            let mut r = RegionCalls::new(region, rank, Int64Array::from(vec![0]), Int64Array::from(vec![9]));
            r.exclusive_total_ns = Some(7);
            r
        };
        let run = Run {
            region_names: vec!["a".into(), "b".into()],
            regions: vec![row(0, 0), row(1, 0), row(0, 1)],
            ..Run::default()
        };
        let by_rank = SummaryFilter { names: None, ranks: Some(vec![0]) }.restrict(run.clone());
        assert_eq!(
            by_rank.regions.iter().map(|r| (r.region, r.exclusive_total_ns)).collect::<Vec<_>>(),
            vec![(0, Some(7)), (1, Some(7))]
        );
        let by_name = SummaryFilter { names: Some(vec!["b".into()]), ranks: None }.restrict(run);
        assert_eq!(
            by_name.regions.iter().map(|r| (r.region, r.exclusive_total_ns)).collect::<Vec<_>>(),
            vec![(1, None)]
        );
        assert_eq!(by_name.region_names, ["a", "b"]);
    }
}
