//! What an export writes: which ranks, which regions, under which label.
//!
//! Every writer of this crate takes the same arguments,
//! `write_X(run: &Run, sel: &Selection, path: &Path) -> Result<_, ExportError>`, so the CLI
//! and the Python glue call them uniformly. A `Selection` is built by the caller from the
//! user's choices (Python: `ranks=`, `include=`/`exclude=` through `get_regions`, the run's
//! display label; CLI: `--rank`, the file stem) — writers never parse regexes themselves.
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use scope_profiler_analysis::{RegionCalls, Run};

/// The part of a run an export writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Ranks to write, in the given order (duplicates are the caller's business). The
    /// Python exporters default to `[0]`; validation (`0 <= r < num_ranks`) is the caller's.
    pub ranks: Vec<u32>,
    /// Region names to keep (`get_regions(include=, exclude=)` result); `None` = all
    /// regions. Filtering happens *before* reconstruction, exactly like the reference's
    /// `build_call_arrays(get_regions(...))`: a call whose enclosing region was filtered
    /// out becomes a child of the nearest kept ancestor (or a root). Names that are not in
    /// the run are ignored.
    pub regions: Option<Vec<String>>,
    /// The run's display label: document name / root frame name (e.g. pstats'
    /// `<label rank R>`, Chrome trace `metadata.name`).
    pub label: String,
}

impl Selection {
    /// All regions of `ranks`, labelled `label`.
    pub fn new(ranks: Vec<u32>, label: impl Into<String>) -> Self {
        Selection { ranks, regions: None, label: label.into() }
    }

    /// Keep only the regions named in `names` (builder style).
    pub fn with_regions(mut self, names: Vec<String>) -> Self {
        self.regions = Some(names);
        self
    }

    /// `run` restricted to the kept regions (borrowed unchanged when every region is kept).
    ///
    /// The result keeps `region_names` (ids stay valid), the lane tables, the metadata and
    /// `num_ranks`; only region rows of dropped names go. Per-call columns are Arrow arrays,
    /// so the copy shares their buffers.
    pub fn apply<'a>(&self, run: &'a Run) -> Cow<'a, Run> {
        let Some(names) = &self.regions else {
            return Cow::Borrowed(run);
        };
        let kept: HashSet<&str> = names.iter().map(String::as_str).collect();
        let keep: Vec<bool> = run.region_names.iter().map(|n| kept.contains(n.as_str())).collect();
        if run.regions.iter().all(|r| keep.get(r.region as usize).copied().unwrap_or(false)) {
            return Cow::Borrowed(run);
        }
        let kept_rows = run.regions.iter().filter(|r| keep.get(r.region as usize).copied().unwrap_or(false));
        Cow::Owned(with_rows(run, kept_rows.cloned().collect()))
    }

    /// `run` restricted to the kept regions with the rows of each rank (ranks ascending)
    /// in the order of [`Selection::regions`] (rows of one name in table order); borrowed
    /// unchanged when every region is kept in table order. For writers whose ties follow
    /// the `get_regions` order (speedscope). Names not in the run are ignored.
    pub fn apply_in_order<'a>(&self, run: &'a Run) -> Cow<'a, Run> {
        let Some(names) = &self.regions else {
            return Cow::Borrowed(run);
        };
        let mut ranks: Vec<u32> = run.regions.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        // one pass each (a name lookup per region and a row scan per name would make 40,000
        // regions take seconds)
        let mut id_of: HashMap<&str, usize> = HashMap::with_capacity(run.region_names.len());
        for (i, name) in run.region_names.iter().enumerate() {
            id_of.entry(name.as_str()).or_insert(i);
        }
        let ids: Vec<usize> = names.iter().filter_map(|n| id_of.get(n.as_str()).copied()).collect();
        let mut rows_of: HashMap<(u32, usize), Vec<usize>> = HashMap::new();
        for (row, r) in run.regions.iter().enumerate() {
            rows_of.entry((r.rank, r.region as usize)).or_default().push(row);
        }
        let mut regions = Vec::with_capacity(run.regions.len());
        for rank in ranks {
            for &id in &ids {
                if let Some(rows) = rows_of.get(&(rank, id)) {
                    regions.extend(rows.iter().map(|&row| run.regions[row].clone()));
                }
            }
        }
        // rows of one (rank, region) keep their table order, so equal keys mean equal rows
        if regions.len() == run.regions.len()
            && regions.iter().zip(&run.regions).all(|(a, b)| (a.rank, a.region) == (b.rank, b.region))
        {
            return Cow::Borrowed(run);
        }
        Cow::Owned(with_rows(run, regions))
    }
}

/// `run` with the region rows `regions` instead of its own (names, lane tables, metadata and
/// rank count copied).
fn with_rows(run: &Run, regions: Vec<RegionCalls>) -> Run {
    Run {
        region_names: run.region_names.clone(),
        regions,
        threads: run.threads.clone(),
        tasks: run.tasks.clone(),
        metadata: run.metadata.clone(),
        num_ranks: run.num_ranks,
        loop_blocks: run.loop_blocks.clone(),
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;

    use super::*;

    fn row(region: u32, rank: u32, start: i64) -> RegionCalls {
        RegionCalls::new(region, rank, Int64Array::from(vec![start]), Int64Array::from(vec![start + 1]))
    }

    /// (rank, region name, first start) of every row.
    fn rows(run: &Run) -> Vec<(u32, &str, i64)> {
        run.regions
            .iter()
            .map(|r| (r.rank, run.region_names[r.region as usize].as_str(), r.start_ns.value(0)))
            .collect()
    }

    #[test]
    fn apply_in_order_follows_the_names_within_each_rank() {
        let run = Run {
            region_names: vec!["a".into(), "b".into(), "c".into()],
            regions: vec![row(0, 0, 1), row(1, 0, 2), row(2, 0, 3), row(0, 1, 4), row(1, 1, 5)],
            num_ranks: 2,
            ..Run::default()
        };
        let sel = Selection::new(vec![0, 1], "x").with_regions(vec!["b".into(), "a".into(), "zzz".into()]);
        let ordered = sel.apply_in_order(&run);
        assert_eq!(rows(&ordered), vec![(0, "b", 2), (0, "a", 1), (1, "b", 5), (1, "a", 4)]);
        // table order for `apply`
        assert_eq!(rows(&sel.apply(&run)), vec![(0, "a", 1), (0, "b", 2), (1, "a", 4), (1, "b", 5)]);
        let all = Selection::new(vec![0], "x").with_regions(vec!["a".into(), "b".into(), "c".into()]);
        assert!(matches!(all.apply_in_order(&run), Cow::Borrowed(_)));
        assert!(matches!(Selection::new(vec![0], "x").apply_in_order(&run), Cow::Borrowed(_)));
    }

    // Many one-call regions are grouped in one pass (a name lookup and a row scan per region
    // would take `export_speedscope` / `export_json` of 40,000 regions 7 s), and the
    // grouping keeps the order rules: ranks ascending, then the names' order (a repeated
    // name twice), rows of one (rank, region) in table order.
    #[test]
    fn apply_in_order_of_many_regions_keeps_every_row_once_in_name_order() {
        let n = 5_000u32;
        let mut regions = Vec::new();
        for rank in [1u32, 0] {
            for id in 0..n {
                regions.push(row(id, rank, i64::from(id) * 10 + i64::from(rank)));
                if id % 1000 == 0 {
                    regions.push(row(id, rank, i64::from(id) * 10 + 5)); // a second row of the pair
                }
            }
        }
        let run =
            Run { region_names: (0..n).map(|i| format!("r{i}")).collect(), regions, num_ranks: 2, ..Run::default() };
        let names: Vec<String> = (0..n).rev().map(|i| format!("r{i}")).chain(["r7".to_string()]).collect();
        let sel = Selection::new(vec![0, 1], "x").with_regions(names);
        let ordered = sel.apply_in_order(&run);
        let got = rows(&ordered);
        assert_eq!(got.len(), 2 * (n as usize + 5) + 2); // every row, r7's twice per rank
        assert_eq!(&got[..3], &[(0, "r4999", 49990), (0, "r4998", 49980), (0, "r4997", 49970)]);
        let r4000: Vec<_> = got.iter().filter(|r| r.0 == 0 && r.1 == "r4000").collect();
        assert_eq!(r4000, vec![&(0, "r4000", 40000), &(0, "r4000", 40005)]);
        assert_eq!(got[n as usize + 5], (0, "r7", 70)); // the repeated name, at the end of rank 0
        assert_eq!(got[n as usize + 6], (1, "r4999", 49991));
        let kept = Selection::new(vec![0, 1], "x").with_regions(vec!["r3".into(), "r1".into()]);
        assert_eq!(rows(&kept.apply(&run)), vec![(1, "r1", 11), (1, "r3", 31), (0, "r1", 10), (0, "r3", 30)]);
    }
}
