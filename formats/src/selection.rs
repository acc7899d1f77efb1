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
}
