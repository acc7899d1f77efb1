//! TEMPORARY: merge_results' two modes until the merge helper's unified `stack_runs` lands.
use crate::run::{MetaValue, Run};
use crate::stack::stack_runs;

/// Stack (`stack`) or unite `runs`; metadata: union, earlier wins; `merged_from` when stacking.
pub fn merge(runs: Vec<Run>, stack: bool, paths: &[String]) -> Result<Run, String> {
    let mut metadata: Vec<(String, MetaValue)> = Vec::new();
    for r in &runs {
        for (k, v) in &r.metadata {
            if !metadata.iter().any(|(m, _)| m == k) {
                metadata.push((k.clone(), v.clone()));
            }
        }
    }
    if stack {
        let mut parts = Vec::new();
        let mut offset = 0u32;
        for r in runs {
            let span = r.num_ranks.max(1);
            parts.push((offset, r));
            offset += span;
        }
        let mut out = stack_runs(parts, Some(offset))?;
        let mpi = out.meta_int("mpi_size");
        out.metadata = metadata;
        out.metadata.retain(|(k, _)| k != "merged_from" && k != "mpi_size");
        out.metadata.push(("mpi_size".into(), MetaValue::Int(mpi.unwrap_or(1).max(offset as i64))));
        out.metadata.push(("merged_from".into(), MetaValue::StrList(paths.to_vec())));
        return Ok(out);
    }
    let mut out = Run { metadata, ..Run::default() };
    for r in runs {
        let t_off: Vec<(u32, i64, i64)> = Vec::new();
        let _ = t_off;
        let base = out.region_names.len() as u32;
        out.region_names.extend(r.region_names.iter().cloned());
        let mut threads_off = std::collections::HashMap::new();
        for rank in r.regions.iter().map(|x| x.rank).chain(r.threads.iter().map(|t| t.rank)) {
            let mine: Vec<_> = r.rank_threads(rank).map(|t| (t.index, t.name.clone())).collect();
            let have: Vec<_> = out.rank_threads(rank).map(|t| (t.index, t.name.clone())).collect();
            let off = if have.is_empty() || have == mine { 0 } else { have.len() as i64 };
            threads_off.insert(rank, (off, if off == 0 { 0 } else { out.rank_tasks(rank).count() as i64 }, !have.is_empty() && have == mine));
        }
        for mut row in r.regions {
            let (t, k, _) = threads_off[&row.rank];
            row.region += base;
            if t > 0 {
                row.thread_ids = row.thread_ids.map(|a| a.values().iter().map(|&v| if v >= 0 { v + t } else { v }).collect());
            }
            if k > 0 {
                row.task_ids = row.task_ids.map(|a| a.values().iter().map(|&v| if v >= 0 { v + k } else { v }).collect());
            }
            out.num_ranks = out.num_ranks.max(row.rank + 1).max(r.num_ranks);
            out.regions.push(row);
        }
        for mut th in r.threads {
            let (t, _, shared) = threads_off[&th.rank];
            if shared {
                continue;
            }
            th.index += t;
            out.threads.push(th);
        }
        for mut task in r.tasks {
            let (t, k, shared) = threads_off[&task.rank];
            if shared {
                continue;
            }
            task.index += k;
            if task.thread_index >= 0 {
                task.thread_index += t;
            }
            out.tasks.push(task);
        }
    }
    out.regions.sort_by_key(|r| r.rank);
    out.threads.sort_by_key(|t| t.rank);
    out.tasks.sort_by_key(|t| t.rank);
    Ok(out)
}
