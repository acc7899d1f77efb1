//! What an export writes: which ranks, which regions, under which label.
//!
//! Every writer of this crate takes the same arguments,
//! `write_X(run: &Run, sel: &Selection, path: &Path) -> Result<_, ExportError>`, so the CLI
//! and the Python glue call them uniformly. A `Selection` is built by the caller from the
//! user's choices (Python: `ranks=`, `include=`/`exclude=` through `get_regions`, the run's
//! display label; CLI: `--rank`, the file stem) — writers never parse regexes themselves.
use std::borrow::Cow;

use scope_profiler_analysis::Run;

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

    /// Whether region `name` is kept.
    pub fn keeps(&self, name: &str) -> bool {
        match &self.regions {
            None => true,
            Some(names) => names.iter().any(|n| n == name),
        }
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
        let keep: Vec<bool> = run.region_names.iter().map(|n| names.iter().any(|k| k == n)).collect();
        if run.regions.iter().all(|r| keep.get(r.region as usize).copied().unwrap_or(false)) {
            return Cow::Borrowed(run);
        }
        Cow::Owned(Run {
            region_names: run.region_names.clone(),
            regions: run
                .regions
                .iter()
                .filter(|r| keep.get(r.region as usize).copied().unwrap_or(false))
                .cloned()
                .collect(),
            threads: run.threads.clone(),
            tasks: run.tasks.clone(),
            metadata: run.metadata.clone(),
            num_ranks: run.num_ranks,
        })
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
        let ids: Vec<usize> = names.iter().filter_map(|n| run.region_names.iter().position(|k| k == n)).collect();
        let mut regions = Vec::with_capacity(run.regions.len());
        for rank in ranks {
            for &id in &ids {
                regions.extend(run.regions.iter().filter(|r| r.rank == rank && r.region as usize == id).cloned());
            }
        }
        // rows of one (rank, region) keep their table order, so equal keys mean equal rows
        if regions.len() == run.regions.len()
            && regions.iter().zip(&run.regions).all(|(a, b)| (a.rank, a.region) == (b.rank, b.region))
        {
            return Cow::Borrowed(run);
        }
        Cow::Owned(Run {
            region_names: run.region_names.clone(),
            regions,
            threads: run.threads.clone(),
            tasks: run.tasks.clone(),
            metadata: run.metadata.clone(),
            num_ranks: run.num_ranks,
        })
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
}
