//! Reconstruction of one rank of a [`Run`], and what is derived from it: call ids at
//! finalize, per-call exclusive time per row.
use crate::callstack::{CallArrays, NestingError};
use crate::run::Run;

/// Reconstruct all rows of `rank` (rows in file order). `CallArrays::region_index` then
/// indexes `rows`, the returned list of positions in `run.regions`.
pub fn rank_call_arrays(run: &Run, rank: u32) -> Result<(Vec<usize>, CallArrays), NestingError> {
    let _ = (run, rank);
    todo!("analysis helper implements this")
}

/// At finalize: give every call of `rank` a call id `base + sorted position` and a parent id
/// (`-1` for roots), set each row's `exclusive_total_ns`. Returns the next base.
/// On `NestingError` nothing is changed (the caller drops the call graph and warns).
pub fn assign_call_ids(run: &mut Run, rank: u32, base: i64) -> Result<i64, NestingError> {
    let _ = (run, rank, base);
    todo!("analysis helper implements this")
}

/// Per-call exclusive ns of every row of `rank`: `(position in run.regions, values in the
/// row's recorded order)`.
pub fn exclusive_by_row(run: &Run, rank: u32) -> Result<Vec<(usize, Vec<i64>)>, NestingError> {
    let _ = (run, rank);
    todo!("analysis helper implements this")
}
