//! One reconstruction per rank, computed once and shared by every analysis of a run.
//!
//! [`RunAnalysis`] owns an `Arc<Run>` and lazily reconstructs each rank ([`rank_call_arrays`])
//! the first time anything needs it: exclusive durations, thread summaries, lane splits,
//! call graphs and exports all read the same [`Reconstruction`]. Ranks are reconstructed in
//! parallel (rayon) by [`RunAnalysis::all`]; concurrent requests for one rank wait for the
//! single computation instead of repeating it.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::Int64Array;
use rayon::prelude::*;

use crate::callstack::{split_by_lane, CallArrays, LaneSplit, NestingError};
use crate::lane_summary::{task_summary_split, thread_summary_split, TaskSummaryRow, ThreadSummaryRow};
use crate::rank_reconstruction::{exclusive_from, rank_reconstruction};
use crate::run::Run;

/// A rank's reconstruction: the rows it covers (positions in `run.regions`, the order
/// `calls.region_index` indexes) and the calls in sorted (call id) order.
#[derive(Debug)]
pub struct Reconstruction {
    pub rank: u32,
    pub rows: Vec<usize>,
    pub calls: CallArrays,
    lanes: OnceLock<LaneSplit>,
}

impl Reconstruction {
    /// [`split_by_lane`] of the calls, computed once (the reconstruction's own split when it
    /// made one).
    pub fn lanes(&self) -> &LaneSplit {
        self.lanes.get_or_init(|| split_by_lane(&self.calls))
    }
}

type Slot = Arc<OnceLock<Result<Arc<Reconstruction>, NestingError>>>;
/// Per-call exclusive ns of every row of one rank, indexed by position in `run.regions`
/// (`None` for rows of other ranks).
type ExclusiveRows = Arc<Vec<Option<Int64Array>>>;
type ExclusiveSlot = Arc<OnceLock<Result<ExclusiveRows, NestingError>>>;

/// A run plus its per-rank reconstructions (cached).
#[derive(Debug)]
pub struct RunAnalysis {
    pub run: Arc<Run>,
    slots: Mutex<HashMap<u32, Slot>>,
    exclusive: Mutex<HashMap<u32, ExclusiveSlot>>,
    /// Ranks whose set-aside calls were reported already ([`RunAnalysis::set_aside_notice`]).
    noticed: Mutex<std::collections::HashSet<u32>>,
}

impl RunAnalysis {
    pub fn new(run: Arc<Run>) -> Self {
        RunAnalysis {
            run,
            slots: Mutex::new(HashMap::new()),
            exclusive: Mutex::new(HashMap::new()),
            noticed: Mutex::new(Default::default()),
        }
    }

    /// Per-call exclusive ns of row `row` (position in `run.regions`), recorded order, from
    /// the cached reconstruction of its rank; the arrays of a rank are built once and shared.
    ///
    /// Errors: the rank's [`NestingError`]. Panics if `row` is out of range.
    pub fn exclusive(&self, row: usize) -> Result<Int64Array, NestingError> {
        let rank = self.run.regions[row].rank;
        let slot = {
            let mut slots = self.exclusive.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(slots.entry(rank).or_default())
        };
        let rows = slot
            .get_or_init(|| {
                let per_row = self.exclusive_by_row(rank)?;
                let mut all: Vec<Option<Int64Array>> = vec![None; self.run.regions.len()];
                for (pos, values) in per_row {
                    all[pos] = Some(Int64Array::from(values));
                }
                Ok(Arc::new(all))
            })
            .clone()?;
        Ok(rows[row].clone().unwrap_or_else(|| Int64Array::from(Vec::<i64>::new())))
    }

    fn slot(&self, rank: u32) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(slots.entry(rank).or_default())
    }

    /// The reconstruction of `rank` (computed on first use; a rank without rows has no calls).
    ///
    /// Errors: the rank's [`NestingError`] (also cached).
    pub fn rank(&self, rank: u32) -> Result<Arc<Reconstruction>, NestingError> {
        let slot = self.slot(rank);
        slot.get_or_init(|| {
            rank_reconstruction(&self.run, rank).map(|(rows, calls, split)| {
                let lanes = OnceLock::new();
                if let Some(split) = split {
                    let _ = lanes.set(split);
                }
                Arc::new(Reconstruction { rank, rows, calls, lanes })
            })
        })
        .clone()
    }

    /// [`crate::set_aside_report`] of `rank`, once: the first call after the rank was
    /// reconstructed with set-aside calls returns the message, later calls `None` (one
    /// warning per rank and run). `None` while the rank is not reconstructed.
    pub fn set_aside_notice(&self, rank: u32) -> Option<String> {
        let rec = self.slots.lock().unwrap_or_else(|e| e.into_inner()).get(&rank)?.get()?.as_ref().ok()?.clone();
        if rec.calls.set_aside.is_empty() || !self.noticed.lock().unwrap_or_else(|e| e.into_inner()).insert(rank) {
            return None;
        }
        crate::rank_reconstruction::set_aside_report(&self.run, rank, &rec.rows, &rec.calls)
    }

    /// Whether `rank` has been reconstructed already.
    pub fn is_cached(&self, rank: u32) -> bool {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).get(&rank).is_some_and(|s| s.get().is_some())
    }

    /// Ranks that have rows, ascending.
    pub fn ranks(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = self.run.regions.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Reconstruct every rank with rows, in parallel across ranks (each rank's sort is itself
    /// parallel when large). Returns `(rank, result)` in ascending rank order.
    pub fn all(&self) -> Vec<(u32, Result<Arc<Reconstruction>, NestingError>)> {
        crate::pool::install(|| self.ranks().into_par_iter().map(|r| (r, self.rank(r))).collect())
    }

    /// Per-call exclusive ns of every row of `rank`, `(row position, values in recorded
    /// order)`, rows in ascending position. See [`crate::exclusive_by_row`].
    pub fn exclusive_by_row(&self, rank: u32) -> Result<Vec<(usize, Vec<i64>)>, NestingError> {
        let rec = self.rank(rank)?;
        Ok(exclusive_from(&self.run, &rec.rows, &rec.calls))
    }

    /// [`crate::thread_summary`] from the cached reconstruction.
    pub fn thread_summary(&self, rank: u32) -> Result<Vec<ThreadSummaryRow>, NestingError> {
        if self.run.rank_threads(rank).next().is_none() {
            return Ok(Vec::new());
        }
        let rec = self.rank(rank)?;
        Ok(thread_summary_split(&self.run, rank, &rec.calls, rec.lanes()))
    }

    /// [`crate::task_summary`] from the cached reconstruction.
    pub fn task_summary(&self, rank: u32) -> Result<Vec<TaskSummaryRow>, NestingError> {
        if self.run.rank_tasks(rank).next().is_none() {
            return Ok(Vec::new());
        }
        let rec = self.rank(rank)?;
        Ok(task_summary_split(&self.run, rank, &rec.calls, rec.lanes()))
    }
}
