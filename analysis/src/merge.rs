//! Several runs as one: each part becomes a block of ranks ([`stack_runs`]).
//!
//! This is how the ranks of an MPI job end up in one [`Run`] (every rank's single-rank run
//! placed at its own rank), and how per-process files of one job (a `multiprocessing` pool,
//! independent workers) are analysed together: each file keeps its own rank numbers, its
//! own thread and task tables and its own call ids, so lanes and call graphs stay distinct
//! per source.
use std::collections::HashMap;

use crate::run::{MetaValue, Run};

/// Combine `parts` into one run; part `(offset, run)` has its ranks shifted by `offset`
/// (rank `r` of that part becomes `offset + r`).
///
/// * Region names: the union, first-seen order (part order, then each part's own order);
///   region ids are remapped.
/// * Rows, thread and task rows: parts in ascending offset, each part's own order
///   (a rank's rows stay back to back, ranks ascending, as the file layout requires).
/// * Metadata: the first part's (lowest offset), with `mpi_size` raised to the number of
///   ranks when it is smaller.
/// * `num_ranks`: `num_ranks` if given, else `max(offset + max(part.num_ranks, 1))` over
///   parts that have rows (0 when no part has any).
///
/// Errors: two parts with rows or thread rows for the same rank.
pub fn stack_runs(mut parts: Vec<(u32, Run)>, num_ranks: Option<u32>) -> Result<Run, String> {
    parts.sort_by_key(|(offset, _)| *offset);
    let mut covered_to = 0u32;
    for (k, (offset, run)) in parts.iter().enumerate() {
        if k > 0 && *offset < covered_to {
            return Err(format!(
                "cannot stack runs: rank {offset} is claimed by two parts (a previous part covers ranks up to {})",
                covered_to - 1
            ));
        }
        let last_rank = run.regions.iter().map(|r| r.rank).chain(run.threads.iter().map(|t| t.rank)).max();
        covered_to = offset + last_rank.map_or(1, |r| r + 1);
    }
    let mut out = Run::default();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    let mut any_rows = false;
    let mut computed_ranks = 0u32;
    for (k, (offset, run)) in parts.into_iter().enumerate() {
        if k == 0 {
            out.metadata = run.metadata.clone();
        }
        let remap: Vec<u32> = run
            .region_names
            .iter()
            .map(|name| {
                *name_ids.entry(name.clone()).or_insert_with(|| {
                    out.region_names.push(name.clone());
                    (out.region_names.len() - 1) as u32
                })
            })
            .collect();
        if !run.regions.is_empty() {
            any_rows = true;
            let last_rank = run.regions.iter().map(|r| r.rank).max().unwrap_or(0);
            computed_ranks = computed_ranks.max(offset + run.num_ranks.max(last_rank + 1).max(1));
        }
        for mut row in run.regions {
            row.region = *remap.get(row.region as usize).ok_or_else(|| {
                format!(
                    "cannot stack runs: a row refers to region id {} of a run with {} names",
                    row.region,
                    remap.len()
                )
            })?;
            row.rank += offset;
            out.regions.push(row);
        }
        out.threads.extend(run.threads.into_iter().map(|mut t| {
            t.rank += offset;
            t
        }));
        out.tasks.extend(run.tasks.into_iter().map(|mut t| {
            t.rank += offset;
            t
        }));
    }
    out.num_ranks = num_ranks.unwrap_or(if any_rows { computed_ranks } else { 0 });
    if out.num_ranks > 1 {
        match out.metadata.iter_mut().find(|(k, _)| k == "mpi_size") {
            Some((_, MetaValue::Int(v))) if *v < out.num_ranks as i64 => *v = out.num_ranks as i64,
            Some(_) => {}
            None => out.metadata.push(("mpi_size".into(), MetaValue::Int(out.num_ranks as i64))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RegionCalls, ThreadRow};
    use arrow_array::Int64Array;

    fn row(region: u32, rank: u32, starts: Vec<i64>, threads: Option<Vec<i64>>) -> RegionCalls {
        let ends: Vec<i64> = starts.iter().map(|s| s + 5).collect();
        RegionCalls {
            region,
            rank,
            start_ns: Int64Array::from(starts),
            end_ns: Int64Array::from(ends),
            gpu_ns: None,
            call_ids: None,
            parent_ids: None,
            thread_ids: threads.map(Int64Array::from),
            task_ids: None,
            await_ns: None,
            source_file: None,
            source_line: None,
            source_text: None,
            tags: vec![],
            event_metadata: None,
            exclusive_total_ns: None,
            stored: None,
        }
    }

    fn thread(rank: u32, index: i64, name: &str) -> ThreadRow {
        ThreadRow {
            rank,
            index,
            ident: 1,
            native_id: 2,
            daemon: false,
            start_ns: 0,
            end_ns: -1,
            cpu_ns: 3,
            name: name.into(),
        }
    }

    fn single(names: &[&str], rows: Vec<RegionCalls>, threads: Vec<ThreadRow>) -> Run {
        Run {
            region_names: names.iter().map(|s| s.to_string()).collect(),
            num_ranks: if rows.is_empty() { 0 } else { 1 },
            regions: rows,
            threads,
            tasks: vec![],
            metadata: vec![("mpi_size".into(), MetaValue::Int(1))],
        }
    }

    #[test]
    fn parts_become_rank_blocks_with_their_own_lanes() {
        let a = single(
            &["a", "b"],
            vec![row(0, 0, vec![1, 2], Some(vec![0, 1])), row(1, 0, vec![3], Some(vec![1]))],
            vec![thread(0, 0, "MainThread"), thread(0, 1, "w")],
        );
        let b = single(
            &["b", "c"],
            vec![row(0, 0, vec![7], Some(vec![0])), row(1, 0, vec![8], Some(vec![0]))],
            vec![thread(0, 0, "MainThread")],
        );
        let run = stack_runs(vec![(1, b), (0, a)], None).unwrap();
        assert_eq!(run.region_names, vec!["a", "b", "c"]);
        assert_eq!(run.num_ranks, 2);
        assert_eq!(run.meta_int("mpi_size"), Some(2));
        let ranks: Vec<u32> = run.regions.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, vec![0, 0, 1, 1]);
        let regions: Vec<u32> = run.regions.iter().map(|r| r.region).collect();
        assert_eq!(regions, vec![0, 1, 1, 2]);
        assert_eq!(run.rank_threads(1).count(), 1);
        assert_eq!(run.rank_threads(0).count(), 2);
    }

    #[test]
    fn overlapping_parts_are_refused_and_empty_parts_keep_their_rank() {
        let a = single(&["a"], vec![row(0, 0, vec![1], None)], vec![]);
        let b = single(&["a"], vec![row(0, 0, vec![1], None)], vec![]);
        assert!(stack_runs(vec![(0, a.clone()), (0, b)], None).is_err());
        let empty = single(&[], vec![], vec![]);
        let run = stack_runs(vec![(0, empty), (1, a)], None).unwrap();
        assert_eq!(run.num_ranks, 2);
        assert_eq!(run.regions[0].rank, 1);
        assert_eq!(stack_runs(vec![], None).unwrap().num_ranks, 0);
    }
}
