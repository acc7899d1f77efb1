//! Several runs as one ([`merge_runs`]): the one merge behind MPI rank gathering, the
//! stacking of per-process files (`summary --merge`, `merge_results(stack=True)`) and the
//! union of disjoint region sets of one run (`merge_results`, e.g. a Python driver and its
//! native code).
//!
//! Each part `(offset, run)` has its ranks shifted by `offset`. Stacked parts (the default)
//! own disjoint blocks of ranks: each keeps its own rank numbers, thread and task tables and
//! call ids, so lanes and call graphs stay distinct per source. United parts
//! ([`MergeOptions::union`]) may share ranks; a shared rank then holds the rows of every part
//! (a region name on it in two parts is refused: its statistics would be counted twice), and
//! a part whose lane tables for that rank differ from those already there gets its thread and
//! task indices renumbered after them, while identical tables (two views of one run) are
//! shared.
//!
//! Rows are moved, never decoded: stored exclusive totals, stored statistics and bit-packed
//! call ids are kept as they are.
use std::collections::HashMap;

use crate::run::{MetaValue, RegionCalls, Run, TaskRow, ThreadRow};

/// How [`merge_runs`] combines its parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MergeOptions {
    /// The merged run's rank count; `None` = computed (see [`merge_runs`]).
    pub num_ranks: Option<u32>,
    /// Parts may share ranks (the reference's union of disjoint region sets). `false` (MPI
    /// gathering, per-process stacking): two parts on one rank is [`MergeError::RankClaimed`].
    pub union: bool,
    /// File paths of the parts, one per part in the order the parts are given; stored as
    /// metadata `merged_from` (a string list) in rank-block order. `None` = no `merged_from`
    /// added (an existing one from the parts' metadata is kept under the metadata rule).
    pub merged_from: Option<Vec<String>>,
}

/// Why parts could not be merged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    /// Two parts have rows or thread rows on one rank while [`MergeOptions::union`] is off.
    #[error(
        "cannot stack runs: rank {rank} is claimed by two parts (a previous part covers ranks up to {covered_to})"
    )]
    RankClaimed { rank: u32, covered_to: u32 },
    /// Region `name` has rows on `rank` in two parts (union): merging would double-count it.
    #[error("region {name:?} appears on rank {rank} in more than one part; merging them would double-count it")]
    SharedRegion { name: String, rank: u32 },
    /// A row's region id is not an index of its part's `region_names`.
    #[error("cannot merge runs: a row refers to region id {region} of a run with {names} names")]
    BadRegionId { region: u32, names: usize },
    /// [`MergeOptions::merged_from`] does not have one path per part.
    #[error("cannot merge runs: {paths} merged_from paths for {parts} parts")]
    MergedFromLength { paths: usize, parts: usize },
    /// [`merge_sets`] uniting (not stacking) sets that share the region `name`.
    #[error(
        "region {} appears in more than one result set; merging them would double-count it. Give the regions \
         distinct names (a 'fortran:' prefix, say) before merging, or stack them as separate ranks (stack=True).",
        crate::py_repr(.0)
    )]
    SharedAcrossSets(String),
}

/// One result set given to [`merge_sets`].
#[derive(Debug, Clone)]
pub struct MergeSet {
    /// The set's run (a copy: merging moves its rows).
    pub run: Run,
    /// The set's region names, in its order.
    pub names: Vec<String>,
    /// The set's file path (`""` without a file).
    pub path: String,
}

/// Several result sets as one run, `merge_results`' rule. `stack`: `Some(true)` stacks the
/// sets as blocks of ranks (set `k`'s rank `r` becomes `offset_k + r`, `offset_k` the sum of
/// the previous sets' `max(num_ranks, 1)`; `merged_from` lists the sets' paths),
/// `Some(false)` unites them rank by rank ([`MergeOptions::union`]); `None` stacks when a
/// region name appears in two sets, else unites. `label` replaces the metadata `label` (then
/// the last key).
///
/// Errors: [`MergeError::SharedAcrossSets`] naming the first region name found in two sets
/// when `stack` is `Some(false)`; otherwise as [`merge_runs`].
pub fn merge_sets(sets: Vec<MergeSet>, stack: Option<bool>, label: Option<String>) -> Result<Run, MergeError> {
    let mut shared: Option<&str> = None;
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (k, set) in sets.iter().enumerate() {
        for name in &set.names {
            let first = *seen.entry(name.as_str()).or_insert(k);
            if first != k && shared.is_none() {
                shared = Some(name.as_str());
            }
        }
    }
    let stack = stack.unwrap_or(shared.is_some());
    if let (false, Some(name)) = (stack, shared) {
        return Err(MergeError::SharedAcrossSets(name.to_string()));
    }
    let paths: Vec<String> = sets.iter().map(|s| s.path.clone()).collect();
    let mut parts: Vec<(u32, Run)> = Vec::with_capacity(sets.len());
    let mut offset = 0u32;
    for set in sets {
        let span = set.run.num_ranks.max(1);
        parts.push((if stack { offset } else { 0 }, set.run));
        offset += span;
    }
    let options =
        MergeOptions { num_ranks: stack.then_some(offset), union: !stack, merged_from: stack.then_some(paths) };
    let mut run = merge_runs(parts, &options)?;
    if let Some(label) = label {
        run.metadata.retain(|(k, _)| k != "label");
        run.metadata.push(("label".into(), MetaValue::Str(label)));
    }
    Ok(run)
}

/// Combine `parts` into one run; part `(offset, run)` has its ranks shifted by `offset`
/// (rank `r` of that part becomes `offset + r`). Parts are taken in ascending offset, ties
/// in argument order ("earlier" below).
///
/// * Region names: the union, first-seen order (earlier parts first, then each part's own
///   order); region ids are remapped.
/// * Rows, thread and task rows: grouped by rank (ranks ascending, a rank's rows back to
///   back as the file layout requires); within a rank, earlier parts first, each in its
///   own order.
/// * Lanes (union only, on a rank that already has thread or task rows from earlier parts):
///   when the part's tables for that rank equal the ones there (ignoring the rank), they are
///   shared and nothing changes; otherwise its thread indices are shifted by the number of
///   thread rows already there and its task indices by the number of task rows, and so are
///   its rows' `thread_ids`/`task_ids` (values >= 0) and its tasks' `thread_index` (>= 0).
/// * Metadata, one rule for every use: the union of the parts' keys, the earlier part's value
///   winning (the first part's keys in its order, then keys new in later parts appended);
///   then `merged_from` set from [`MergeOptions::merged_from`] when given; then, when the
///   merged run has more than one rank, `mpi_size` raised to the rank count if it is smaller
///   (added if absent).
/// * `num_ranks`: [`MergeOptions::num_ranks`] if given, else `max(offset + max(part.num_ranks,
///   last rank + 1, 1))` over parts that have rows (0 when no part has any).
///
/// Errors: [`MergeError`] (two parts on one rank without union, a region name on one rank in
/// two parts, a bad region id, a `merged_from` of the wrong length).
pub fn merge_runs(parts: Vec<(u32, Run)>, options: &MergeOptions) -> Result<Run, MergeError> {
    let mut parts: Vec<(usize, u32, Run)> = parts.into_iter().enumerate().map(|(k, (o, r))| (k, o, r)).collect();
    if let Some(paths) = &options.merged_from {
        if paths.len() != parts.len() {
            return Err(MergeError::MergedFromLength { paths: paths.len(), parts: parts.len() });
        }
    }
    parts.sort_by_key(|(k, offset, _)| (*offset, *k));
    if !options.union {
        check_disjoint(&parts)?;
    }
    let mut out = Run::default();
    let mut name_ids: HashMap<String, u32> = HashMap::new();
    // (rank, merged region id) -> position of the part that brought it
    let mut claimed: HashMap<(u32, u32), usize> = HashMap::new();
    let mut any_rows = false;
    let mut computed_ranks = 0u32;
    let mut order = Vec::with_capacity(parts.len());
    // stacking: (first rank, the part's `processes` labels or None), per part
    let mut labelled: Vec<(u32, Option<Vec<String>>, u32, usize)> = Vec::new();
    for (pos, (k, offset, run)) in parts.into_iter().enumerate() {
        order.push(k);
        if !options.union {
            let span = run.num_ranks.max(1);
            let names = match run.meta(PROCESSES) {
                Some(MetaValue::StrList(names)) if names.len() == span as usize => Some(names.clone()),
                _ => None,
            };
            labelled.push((offset, names, span, k));
        }
        merge_metadata(&mut out.metadata, run.metadata);
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
        let shifts = add_lanes(&mut out, run.threads, run.tasks, offset, options.union);
        out.loop_blocks.extend(run.loop_blocks.into_iter().map(|mut b| {
            b.rank += offset;
            if let Some(&(t_off, k_off)) = shifts.get(&b.rank) {
                b.thread += if b.thread >= 0 { t_off } else { 0 };
                b.task += if b.task >= 0 { k_off } else { 0 };
            }
            b
        }));
        for mut row in run.regions {
            row.region = *remap
                .get(row.region as usize)
                .ok_or(MergeError::BadRegionId { region: row.region, names: remap.len() })?;
            row.rank += offset;
            if *claimed.entry((row.rank, row.region)).or_insert(pos) != pos {
                return Err(MergeError::SharedRegion {
                    name: out.region_names[row.region as usize].clone(),
                    rank: row.rank,
                });
            }
            if let Some(&(t_off, k_off)) = shifts.get(&row.rank) {
                shift_lanes(&mut row, t_off, k_off);
            }
            out.regions.push(row);
        }
    }
    // stable: a rank's rows keep the parts' order
    out.regions.sort_by_key(|r| r.rank);
    out.threads.sort_by_key(|t| t.rank);
    out.tasks.sort_by_key(|t| t.rank);
    out.loop_blocks.sort_by_key(|b| b.rank);
    if let Some(paths) = &options.merged_from {
        let ordered: Vec<String> = order.iter().map(|&k| paths[k].clone()).collect();
        set_meta(&mut out.metadata, "merged_from", MetaValue::StrList(ordered));
    }
    out.num_ranks = options.num_ranks.unwrap_or(if any_rows { computed_ranks } else { 0 });
    if labelled.iter().any(|(_, names, _, _)| names.is_some()) {
        let processes = stacked_processes(&labelled, out.num_ranks, options.merged_from.as_deref());
        set_meta(&mut out.metadata, PROCESSES, MetaValue::StrList(processes));
    }
    if out.num_ranks > 1 {
        match out.metadata.iter_mut().find(|(k, _)| k == "mpi_size") {
            Some((_, MetaValue::Int(v))) if *v < out.num_ranks as i64 => *v = out.num_ranks as i64,
            Some(_) => {}
            None => out.metadata.push(("mpi_size".into(), MetaValue::Int(out.num_ranks as i64))),
        }
    }
    Ok(out)
}

/// [`MergeError::RankClaimed`] when two parts (sorted by offset) cover one rank.
fn check_disjoint(parts: &[(usize, u32, Run)]) -> Result<(), MergeError> {
    let mut covered_to = 0u32;
    for (i, (_, offset, run)) in parts.iter().enumerate() {
        if i > 0 && *offset < covered_to {
            return Err(MergeError::RankClaimed { rank: *offset, covered_to: covered_to - 1 });
        }
        let last_rank = run.regions.iter().map(|r| r.rank).chain(run.threads.iter().map(|t| t.rank)).max();
        covered_to = offset + last_rank.map_or(1, |r| r + 1);
    }
    Ok(())
}

/// Keys of `later` not yet in `merged` are appended; existing keys keep their value.
fn merge_metadata(merged: &mut Vec<(String, MetaValue)>, later: Vec<(String, MetaValue)>) {
    for (k, v) in later {
        if !merged.iter().any(|(have, _)| *have == k) {
            merged.push((k, v));
        }
    }
}

/// The metadata key naming the process of each rank (`scope-profiler run` following the
/// script's processes): a string list, one per rank.
pub const PROCESSES: &str = "processes";

/// `processes` of a stacked run, one label per rank (the first part's list alone would be
/// shorter than the ranks): each part's labels at its ranks; a
/// part without them is named by its `merged_from` path (`path` or `path rank r`), else "".
fn stacked_processes(
    parts: &[(u32, Option<Vec<String>>, u32, usize)],
    num_ranks: u32,
    paths: Option<&[String]>,
) -> Vec<String> {
    let mut out = vec![String::new(); num_ranks as usize];
    for (offset, names, span, k) in parts {
        for r in 0..*span {
            let Some(slot) = out.get_mut((offset + r) as usize) else { continue };
            *slot = match (names, paths.and_then(|p| p.get(*k))) {
                (Some(names), _) => names[r as usize].clone(),
                (None, Some(path)) if *span == 1 => path.clone(),
                (None, Some(path)) => format!("{path} rank {r}"),
                (None, None) => String::new(),
            };
        }
    }
    out
}

fn set_meta(meta: &mut Vec<(String, MetaValue)>, key: &str, value: MetaValue) {
    match meta.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value,
        None => meta.push((key.to_string(), value)),
    }
}

/// Add one part's lane tables (ranks shifted by `offset`) to `out`; returns, per shifted
/// rank, the `(thread, task)` index offsets its rows must get (only ranks renumbered).
fn add_lanes(
    out: &mut Run,
    threads: Vec<ThreadRow>,
    tasks: Vec<TaskRow>,
    offset: u32,
    union: bool,
) -> HashMap<u32, (i64, i64)> {
    let mut by_rank: std::collections::BTreeMap<u32, (Vec<ThreadRow>, Vec<TaskRow>)> = Default::default();
    for mut t in threads {
        t.rank += offset;
        by_rank.entry(t.rank).or_default().0.push(t);
    }
    for mut t in tasks {
        t.rank += offset;
        by_rank.entry(t.rank).or_default().1.push(t);
    }
    let mut shifts = HashMap::new();
    for (rank, (mut mine_t, mut mine_k)) in by_rank {
        let (have_t, have_k) = if union {
            let count_t = out.threads.iter().filter(|t| t.rank == rank).count() as i64;
            (count_t, out.tasks.iter().filter(|t| t.rank == rank).count() as i64)
        } else {
            (0, 0)
        };
        if have_t > 0 || have_k > 0 {
            let same_t = out.threads.iter().filter(|t| t.rank == rank).eq(mine_t.iter());
            let same_k = out.tasks.iter().filter(|t| t.rank == rank).eq(mine_k.iter());
            if same_t && same_k {
                continue; // the same tables (two views of one run): shared
            }
            for t in &mut mine_t {
                t.index += have_t;
            }
            for t in &mut mine_k {
                t.index += have_k;
                if t.thread_index >= 0 {
                    t.thread_index += have_t;
                }
            }
            shifts.insert(rank, (have_t, have_k));
        }
        out.threads.extend(mine_t);
        out.tasks.extend(mine_k);
    }
    shifts
}

/// Shift a row's thread ids (>= 0) by `t_off` and task ids (>= 0) by `k_off`.
fn shift_lanes(row: &mut RegionCalls, t_off: i64, k_off: i64) {
    let shift = |a: &arrow_array::Int64Array, by: i64| {
        arrow_array::Int64Array::from_iter_values(a.values().iter().map(|&v| if v >= 0 { v + by } else { v }))
    };
    if t_off != 0 {
        if let Some(t) = &row.thread_ids {
            row.thread_ids = Some(shift(t, t_off));
        }
    }
    if k_off != 0 {
        if let Some(t) = &row.task_ids {
            row.task_ids = Some(shift(t, k_off));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RegionCalls, TaskRow, ThreadRow};
    use arrow_array::Int64Array;

    fn row(region: u32, rank: u32, starts: Vec<i64>, threads: Option<Vec<i64>>) -> RegionCalls {
        let ends: Vec<i64> = starts.iter().map(|s| s + 5).collect();
        let mut row = RegionCalls::new(region, rank, Int64Array::from(starts), Int64Array::from(ends));
        row.thread_ids = threads.map(Int64Array::from);
        row
    }

    fn thread(rank: u32, index: i64, name: &str) -> ThreadRow {
        ThreadRow { ident: 1, native_id: 2, cpu_ns: 3, cpu_start_ns: 1, ..ThreadRow::new(rank, index, name) }
    }

    fn single(names: &[&str], rows: Vec<RegionCalls>, threads: Vec<ThreadRow>) -> Run {
        Run {
            region_names: names.iter().map(|s| s.to_string()).collect(),
            num_ranks: if rows.is_empty() { 0 } else { 1 },
            regions: rows,
            threads,
            tasks: vec![],
            metadata: vec![("mpi_size".into(), MetaValue::Int(1))],
            loop_blocks: vec![],
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
        let run = merge_runs(vec![(1, b), (0, a)], &MergeOptions::default()).unwrap();
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
        assert!(merge_runs(vec![(0, a.clone()), (0, b)], &MergeOptions::default()).is_err());
        let empty = single(&[], vec![], vec![]);
        let run = merge_runs(vec![(0, empty), (1, a)], &MergeOptions::default()).unwrap();
        assert_eq!(run.num_ranks, 2);
        assert_eq!(run.regions[0].rank, 1);
        assert_eq!(merge_runs(vec![], &MergeOptions::default()).unwrap().num_ranks, 0);
    }

    fn set(names: &[&str], path: &str) -> MergeSet {
        let rows = (0..names.len() as u32).map(|i| row(i, 0, vec![10 * i64::from(i)], None)).collect();
        MergeSet {
            run: single(names, rows, vec![]),
            names: names.iter().map(|s| s.to_string()).collect(),
            path: path.into(),
        }
    }

    #[test]
    fn result_sets_sharing_a_name_stack_unless_told_to_unite() {
        let stacked =
            merge_sets(vec![set(&["a", "b"], "x.h5"), set(&["b"], "y.h5")], None, Some("both".into())).unwrap();
        assert_eq!(stacked.num_ranks, 2);
        assert_eq!(
            stacked.regions.iter().map(|r| (r.rank, r.region)).collect::<Vec<_>>(),
            vec![(0, 0), (0, 1), (1, 1)]
        );
        assert_eq!(stacked.meta("merged_from"), Some(&MetaValue::StrList(vec!["x.h5".into(), "y.h5".into()])));
        assert_eq!(stacked.metadata.last(), Some(&("label".to_string(), MetaValue::Str("both".into()))));
        let e = merge_sets(vec![set(&["a", "b"], "x.h5"), set(&["c", "b"], "y.h5")], Some(false), None).unwrap_err();
        assert_eq!(e, MergeError::SharedAcrossSets("b".into()));
        assert!(e.to_string().starts_with("region 'b' appears in more than one result set;"), "{e}");
        let united = merge_sets(vec![set(&["a"], "x.h5"), set(&["c"], "y.h5")], None, None).unwrap();
        assert_eq!(united.num_ranks, 1);
        assert_eq!(united.region_names, vec!["a", "c"]);
        assert_eq!(united.meta("merged_from"), None);
    }

    fn task(rank: u32, index: i64, thread_index: i64, name: &str, coro: &str) -> TaskRow {
        TaskRow::new(rank, index, "task", name, coro).on_thread(thread_index).lifetime(1, -1).timing(2, 3, 4)
    }

    fn ids(a: &Option<Int64Array>) -> Vec<i64> {
        a.as_ref().unwrap().values().to_vec()
    }

    fn union() -> MergeOptions {
        MergeOptions { union: true, ..Default::default() }
    }

    /// A Python driver (threads MainThread + w, one task) and its native code (its own
    /// thread table and task) on rank 0, united: the second part's lanes come after.
    fn driver_and_native() -> (Run, Run) {
        let mut py = single(
            &["py"],
            vec![row(0, 0, vec![1, 2, 3], Some(vec![0, 1, -1]))],
            vec![thread(0, 0, "MainThread"), thread(0, 1, "w")],
        );
        py.regions[0].task_ids = Some(Int64Array::from(vec![-1, 0, -1]));
        py.tasks = vec![task(0, 0, 0, "Task-1", "app.main")];
        py.metadata.push(("label".into(), MetaValue::Str("driver".into())));
        let mut native = single(&["native"], vec![row(0, 0, vec![4, 5], Some(vec![0, -1]))], vec![thread(0, 0, "OMP")]);
        native.regions[0].task_ids = Some(Int64Array::from(vec![0, -1]));
        native.regions[0].exclusive_total_ns = Some(7);
        native.tasks = vec![task(0, 0, 0, "Task-9", "lib.fetch")];
        native.metadata = vec![("label".into(), MetaValue::Str("native".into())), ("tool".into(), MetaValue::Int(5))];
        (py, native)
    }

    /// Loop blocks go with their part: stacked, to the part's ranks; united, with the thread
    /// and task indices of the part's lanes renumbered as its calls' are.
    #[test]
    fn loop_blocks_follow_their_part_and_its_renumbered_lanes() {
        let block = |thread: i64, task: i64| crate::LoopBlockRow {
            rank: 0,
            thread,
            task,
            start_ns: 10,
            end_ns: 2_000_010,
            delayed_tasks: 3,
        };
        let (mut py, mut native) = driver_and_native();
        py.loop_blocks = vec![block(0, 0)];
        native.loop_blocks = vec![block(0, 0), block(0, -1)];
        let stacked = merge_runs(vec![(0, py.clone()), (1, native.clone())], &MergeOptions::default()).unwrap();
        let shape: Vec<(u32, i64, i64, i64)> =
            stacked.loop_blocks.iter().map(|b| (b.rank, b.thread, b.task, b.delayed_tasks)).collect();
        assert_eq!(shape, [(0, 0, 0, 3), (1, 0, 0, 3), (1, 0, -1, 3)]);
        // united on rank 0: the native part's thread 0 and task 0 come after the driver's
        // two threads and one task; a plain callback's block stays task -1
        let united = merge_runs(vec![(0, py), (0, native)], &union()).unwrap();
        let shape: Vec<(u32, i64, i64)> = united.loop_blocks.iter().map(|b| (b.rank, b.thread, b.task)).collect();
        assert_eq!(shape, [(0, 0, 0), (0, 2, 1), (0, 2, -1)]);
        assert_eq!(crate::loop_blocks(&united, 0, crate::BLOCK_FLOOR_NS).unwrap().len(), 3);
    }

    #[test]
    fn union_renumbers_the_later_lanes_after_the_tables_already_there() {
        let (py, native) = driver_and_native();
        let run = merge_runs(vec![(0, py), (0, native)], &union()).unwrap();
        assert_eq!(run.region_names, vec!["py", "native"]);
        assert_eq!(run.num_ranks, 1);
        assert_eq!(run.regions.len(), 2);
        // the driver's ids unchanged, the native ones shifted by 2 threads / 1 task
        assert_eq!(ids(&run.regions[0].thread_ids), vec![0, 1, -1]);
        assert_eq!(ids(&run.regions[0].task_ids), vec![-1, 0, -1]);
        assert_eq!(ids(&run.regions[1].thread_ids), vec![2, -1]);
        assert_eq!(ids(&run.regions[1].task_ids), vec![1, -1]);
        assert_eq!(run.regions[1].exclusive_total_ns, Some(7));
        let thread_index: Vec<i64> = run.threads.iter().map(|t| t.index).collect();
        assert_eq!(thread_index, vec![0, 1, 2]);
        assert_eq!(run.tasks[1].index, 1);
        assert_eq!(run.tasks[1].thread_index, 2);
        assert_eq!(crate::lane_label(&run, -2 - 2, 0), "OMP");
        assert_eq!(crate::lane_label(&run, -2 - 1, 0), "w");
        assert_eq!(crate::lane_label(&run, 0, 0), "Task-1 (main) on MainThread");
        assert_eq!(crate::lane_label(&run, 1, 0), "Task-9 (fetch) on OMP");
        // metadata: earlier part wins, later keys added; one rank: mpi_size untouched
        assert_eq!(run.meta("label"), Some(&MetaValue::Str("driver".into())));
        assert_eq!(run.meta_int("tool"), Some(5));
        assert_eq!(run.meta_int("mpi_size"), Some(1));
        let keys: Vec<&str> = run.metadata.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, vec!["mpi_size", "label", "tool"]);
    }

    #[test]
    fn identical_tables_are_shared_not_renumbered() {
        let (py, _) = driver_and_native();
        // a second view of the same run: other regions, the same lane tables
        let mut view = py.clone();
        view.region_names = vec!["other".into()];
        view.regions[0].thread_ids = Some(Int64Array::from(vec![1, 1, 0]));
        let run = merge_runs(vec![(0, py), (0, view)], &union()).unwrap();
        assert_eq!(run.threads.len(), 2);
        assert_eq!(run.tasks.len(), 1);
        assert_eq!(ids(&run.regions[1].thread_ids), vec![1, 1, 0]);
        assert_eq!(ids(&run.regions[1].task_ids), vec![-1, 0, -1]);
    }

    #[test]
    fn union_refuses_a_region_name_on_one_rank_in_two_parts() {
        let (py, _) = driver_and_native();
        let mut again = single(&["x", "py"], vec![row(1, 0, vec![9], None)], vec![]);
        again.metadata.clear();
        let err = merge_runs(vec![(0, py.clone()), (0, again.clone())], &union()).unwrap_err();
        assert_eq!(err, MergeError::SharedRegion { name: "py".into(), rank: 0 });
        assert!(err.to_string().contains("\"py\" appears on rank 0"), "{err}");
        // the same name on different ranks is a union, not a double count
        let run = merge_runs(vec![(0, py), (1, again)], &union()).unwrap();
        assert_eq!(run.num_ranks, 2);
        let ranks: Vec<(u32, u32)> = run.regions.iter().map(|r| (r.rank, r.region)).collect();
        assert_eq!(ranks, vec![(0, 0), (1, 0)]);
    }

    #[test]
    fn stacked_files_get_rank_blocks_merged_from_and_mpi_size() {
        // three per-process files: a 2-rank one and two serial ones, given out of order
        let mut a = single(&["w"], vec![row(0, 0, vec![1], None), row(0, 1, vec![2], None)], vec![]);
        a.num_ranks = 2;
        a.metadata = vec![("mpi_size".into(), MetaValue::Int(2)), ("label".into(), MetaValue::Str("a".into()))];
        let mut b = single(&["w"], vec![row(0, 0, vec![3], None)], vec![thread(0, 0, "MainThread")]);
        b.metadata.push(("label".into(), MetaValue::Str("b".into())));
        b.metadata.push(("host".into(), MetaValue::Str("n2".into())));
        let mut c = single(&["w", "v"], vec![row(1, 0, vec![4], None)], vec![thread(0, 0, "MainThread")]);
        c.metadata = vec![("host".into(), MetaValue::Str("n3".into())), ("pid".into(), MetaValue::Int(3))];
        let options = MergeOptions {
            num_ranks: Some(4),
            merged_from: Some(vec!["c.h5".into(), "a.h5".into(), "b.h5".into()]),
            ..Default::default()
        };
        let run = merge_runs(vec![(3, c), (0, a), (2, b)], &options).unwrap();
        assert_eq!(run.num_ranks, 4);
        let rows: Vec<(u32, &str)> =
            run.regions.iter().map(|r| (r.rank, run.region_names[r.region as usize].as_str())).collect();
        assert_eq!(rows, vec![(0, "w"), (1, "w"), (2, "w"), (3, "v")]);
        let thread_ranks: Vec<(u32, i64)> = run.threads.iter().map(|t| (t.rank, t.index)).collect();
        assert_eq!(thread_ranks, vec![(2, 0), (3, 0)], "each file keeps its own table");
        assert_eq!(run.meta_int("mpi_size"), Some(4));
        assert_eq!(run.meta("label"), Some(&MetaValue::Str("a".into())));
        assert_eq!(run.meta("host"), Some(&MetaValue::Str("n2".into())));
        assert_eq!(run.meta_int("pid"), Some(3));
        assert_eq!(
            run.meta("merged_from"),
            Some(&MetaValue::StrList(vec!["a.h5".into(), "b.h5".into(), "c.h5".into()]))
        );
        let bad = MergeOptions { merged_from: Some(vec![]), ..Default::default() };
        assert_eq!(merge_runs(vec![(0, run)], &bad).unwrap_err(), MergeError::MergedFromLength { paths: 0, parts: 1 });
    }

    #[test]
    fn mpi_gather_refuses_overlapping_ranks_even_with_distinct_regions() {
        let (py, native) = driver_and_native();
        let err = merge_runs(vec![(0, py.clone()), (0, native)], &MergeOptions::default()).unwrap_err();
        assert_eq!(err, MergeError::RankClaimed { rank: 0, covered_to: 0 });
        // a part covering ranks 0-1 and one placed at 1
        let mut two = py.clone();
        two.regions[0].rank = 1;
        let err = merge_runs(vec![(0, two), (1, py)], &MergeOptions::default()).unwrap_err();
        assert_eq!(err, MergeError::RankClaimed { rank: 1, covered_to: 1 });
    }
}
