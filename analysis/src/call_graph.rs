//! `ProfilingResults.call_graph()` on the stored call ids ([`call_graph`]).
//!
//! At `finalize()` every call gets a call id unique per rank (its position in the rank's
//! sorted call order plus a base) and the id of its enclosing call on the same lane
//! (`parent_ids`, `-1` for a root): see spec-callstack §7. The call graph is those links
//! restricted to the kept regions, a call under an excluded one re-parented to its nearest
//! kept ancestor.
use crate::run::Run;

/// One kept call of [`call_graph`] (one dict of `call_graph()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallGraphRow {
    /// The call's stored call id.
    pub call_id: i64,
    /// Call id of the nearest kept ancestor; `None` at the top.
    pub parent_id: Option<i64>,
    /// Region id (index into [`Run::region_names`]; `name` of the Python dict).
    pub region: u32,
    /// Position of the call in its region row's arrays (recorded order).
    pub call_index: i64,
    /// Number of kept ancestors (0 = top).
    pub depth: i64,
}

/// A call of the walk: (call id, parent id, `Some((region, call index))` when kept).
type Call = (i64, i64, Option<(u32, i64)>);

/// The call graph of `rank` from the stored ids, keeping the regions whose name `kept`
/// accepts: every kept call, ascending `call_id`.
///
/// All calls of the rank (kept or not) are walked in ascending id; a call's ancestor is its
/// parent when kept, else the parent's own nearest kept ancestor; depth = ancestor's depth +
/// 1 (0 without one). A parent id that is not a call of the rank counts as no parent; a parent
/// id above the call's own id (finalize never writes one) gives no inherited ancestor, and a
/// kept such parent contributes depth 0. Ids are unique per rank (finalize); with duplicates
/// the walk order among equal ids is the rows' order.
///
/// `None` when the rank has no rows or a row lacks `call_ids`/`parent_ids` (the explicit path
/// does not apply; the caller falls back to the reconstruction, `call_stack()`).
/// O(n log n) in the rank's calls.
pub fn call_graph(run: &Run, rank: u32, kept: &dyn Fn(&str) -> bool) -> Option<Vec<CallGraphRow>> {
    let rows: Vec<_> = run.rank_rows(rank).collect();
    if rows.is_empty() || rows.iter().any(|r| r.call_ids.is_none() || r.parent_ids.is_none()) {
        return None;
    }
    let mut calls: Vec<Call> = Vec::with_capacity(rows.iter().map(|r| r.len()).sum());
    for row in rows {
        let keep = run.region_names.get(row.region as usize).is_some_and(|n| kept(n));
        let ids = row.call_ids.as_ref()?.to_vec();
        let parents = row.parent_ids.as_ref()?.to_vec();
        for (index, (&id, &parent)) in ids.iter().zip(parents.iter()).enumerate() {
            calls.push((id, parent, keep.then_some((row.region, index as i64))));
        }
    }
    calls.sort_by_key(|c| c.0);
    // per position: the nearest kept ancestor's position, and the depth (kept calls only)
    let mut nearest: Vec<Option<usize>> = Vec::with_capacity(calls.len());
    let mut depth: Vec<i64> = Vec::with_capacity(calls.len());
    let mut out = Vec::new();
    for (i, &(id, parent, keep)) in calls.iter().enumerate() {
        let ancestor = if parent < 0 {
            None
        } else {
            match calls.binary_search_by_key(&parent, |c| c.0) {
                Ok(j) if calls[j].2.is_some() => Some(j),
                Ok(j) if j < i => nearest[j],
                _ => None,
            }
        };
        nearest.push(ancestor);
        let d = match ancestor {
            Some(j) if j < i => depth[j] + 1,
            _ => 0,
        };
        depth.push(d);
        if let Some((region, call_index)) = keep {
            out.push(CallGraphRow {
                call_id: id,
                parent_id: ancestor.map(|j| calls[j].0),
                region,
                call_index,
                depth: d,
            });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RegionCalls;
    use arrow_array::Int64Array;

    fn row(region: u32, rank: u32, ids: Option<(Vec<i64>, Vec<i64>)>) -> RegionCalls {
        let n = ids.as_ref().map_or(1, |(c, _)| c.len());
        let starts: Vec<i64> = (0..n as i64).collect();
        let mut r = RegionCalls::new(region, rank, Int64Array::from(starts.clone()), Int64Array::from(starts));
        if let Some((c, p)) = ids {
            r.call_ids = Some(Int64Array::from(c).into());
            r.parent_ids = Some(Int64Array::from(p).into());
        }
        r
    }

    /// Rank 0, one lane:
    /// ```text
    /// 0 main
    ///   1 step          3 step
    ///     2 kernel        4 io
    ///                       5 kernel
    /// 6 main
    /// ```
    /// rank 1 holds other ids that must not mix in.
    fn nested() -> Run {
        Run {
            region_names: vec!["main".into(), "step".into(), "kernel".into(), "io".into()],
            regions: vec![
                row(0, 0, Some((vec![0, 6], vec![-1, -1]))),
                row(1, 0, Some((vec![1, 3], vec![0, 0]))),
                row(2, 0, Some((vec![2, 5], vec![1, 4]))),
                row(3, 0, Some((vec![4], vec![3]))),
                row(2, 1, Some((vec![0, 1], vec![-1, 0]))),
            ],
            num_ranks: 2,
            ..Default::default()
        }
    }

    fn tuples(rows: &[CallGraphRow]) -> Vec<(i64, Option<i64>, u32, i64, i64)> {
        rows.iter().map(|r| (r.call_id, r.parent_id, r.region, r.call_index, r.depth)).collect()
    }

    #[test]
    fn every_call_kept_gives_the_stored_links_and_depths() {
        let run = nested();
        let g = call_graph(&run, 0, &|_| true).unwrap();
        assert_eq!(
            tuples(&g),
            vec![
                (0, None, 0, 0, 0),
                (1, Some(0), 1, 0, 1),
                (2, Some(1), 2, 0, 2),
                (3, Some(0), 1, 1, 1),
                (4, Some(3), 3, 0, 2),
                (5, Some(4), 2, 1, 3),
                (6, None, 0, 1, 0),
            ]
        );
        assert_eq!(tuples(&call_graph(&run, 1, &|_| true).unwrap()), vec![(0, None, 2, 0, 0), (1, Some(0), 2, 1, 1)]);
    }

    #[test]
    fn calls_under_excluded_regions_go_to_the_nearest_kept_ancestor() {
        let run = nested();
        // without step and io: kernels hang from main directly
        let g = call_graph(&run, 0, &|n| n == "main" || n == "kernel").unwrap();
        assert_eq!(
            tuples(&g),
            vec![(0, None, 0, 0, 0), (2, Some(0), 2, 0, 1), (5, Some(0), 2, 1, 1), (6, None, 0, 1, 0)]
        );
        // without main: the steps become tops, kernel 5 sits under io under step 3
        let g = call_graph(&run, 0, &|n| n != "main").unwrap();
        assert_eq!(
            tuples(&g),
            vec![
                (1, None, 1, 0, 0),
                (2, Some(1), 2, 0, 1),
                (3, None, 1, 1, 0),
                (4, Some(3), 3, 0, 1),
                (5, Some(4), 2, 1, 2)
            ]
        );
        // only kernels: all tops
        let g = call_graph(&run, 0, &|n| n == "kernel").unwrap();
        assert_eq!(tuples(&g), vec![(2, None, 2, 0, 0), (5, None, 2, 1, 0)]);
        assert_eq!(call_graph(&run, 0, &|_| false).unwrap(), vec![]);
    }

    #[test]
    fn a_rank_without_stored_ids_gives_none() {
        let mut run = nested();
        run.regions[3] = row(3, 0, None);
        assert!(call_graph(&run, 0, &|_| true).is_none());
        assert!(call_graph(&run, 1, &|_| true).is_some(), "rank 1 still has every id");
        assert!(call_graph(&run, 5, &|_| true).is_none(), "no rows on the rank");
    }

    #[test]
    fn packed_ids_and_dangling_parents() {
        let mut run = nested();
        let ids = Int64Array::from(vec![10, 11, 12]);
        let parents = Int64Array::from(vec![-1, 99, 10]);
        let mut r = row(0, 0, None);
        r.start_ns = Int64Array::from(vec![0, 1, 2]);
        r.end_ns = Int64Array::from(vec![0, 1, 2]);
        r.call_ids = Some(crate::IdColumn::rows_of(&ids, &[(0, 3)]).remove(0));
        r.parent_ids = Some(crate::IdColumn::rows_of(&parents, &[(0, 3)]).remove(0));
        assert!(r.call_ids.as_ref().unwrap().is_packed());
        run.regions = vec![r];
        let g = call_graph(&run, 0, &|_| true).unwrap();
        assert_eq!(tuples(&g), vec![(10, None, 0, 0, 0), (11, None, 0, 1, 0), (12, Some(10), 0, 2, 1)]);
    }
}
