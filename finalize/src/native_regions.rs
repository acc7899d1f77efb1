//! `finalize(native_traces=...)`: the regions one rank of a C/Fortran program recorded
//! (`.spt` traces, per-rank HDF5 profiles; `formats::native_trace`), as the
//! [`ForeignRegion`]s a checkpoint adds to the Python run.

use scope_profiler_analysis::{secs, Run};
use scope_profiler_formats::native_trace::Trace;

use crate::ForeignRegion;

/// `rank`'s regions of a `.spt` trace, in file order (none when the trace is another rank's).
pub fn of_trace(trace: &Trace, rank: i64) -> Vec<ForeignRegion> {
    if i64::from(trace.rank) != rank {
        return Vec::new();
    }
    trace
        .regions
        .iter()
        .map(|r| ForeignRegion {
            name: r.name.clone(),
            start_ns: r.start_ns.clone(),
            end_ns: r.end_ns.clone(),
            source_file: r.source_file.clone(),
            source_line: r.source_line,
        })
        .collect()
}

/// `rank`'s regions of a run read from a per-rank HDF5 profile, in the order its results
/// list them (`get_regions()`: by the region's earliest start over its ranks, s, file order
/// on a tie; a name listed twice counts once, its first rows).
pub fn of_run(run: &Run, rank: i64) -> Vec<ForeignRegion> {
    let mut listed: Vec<(f64, u32)> = Vec::new();
    for (id, name) in run.region_names.iter().enumerate() {
        let id = id as u32;
        if run.region_names[..id as usize].contains(name) {
            continue;
        }
        let firsts = run.regions.iter().filter(|r| r.region == id).map(|r| match &r.stored {
            Some(s) => secs(s.start_minimum),
            None => secs(r.start_min().unwrap_or(0)),
        });
        if let Some(first) = firsts.reduce(f64::min) {
            listed.push((first, id));
        }
    }
    listed.sort_by(|a, b| a.0.total_cmp(&b.0));
    listed
        .into_iter()
        .filter_map(|(_, id)| run.regions.iter().find(|r| r.region == id && i64::from(r.rank) == rank))
        .map(|r| ForeignRegion {
            name: run.region_names[r.region as usize].clone(),
            start_ns: r.start_ns.values().to_vec(),
            end_ns: r.end_ns.values().to_vec(),
            source_file: r.source_file.clone(),
            source_line: r.source_line,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;
    use scope_profiler_formats::native_trace::TraceRegion;

    fn row(region: u32, rank: u32, starts: &[i64]) -> RegionCalls {
        let ends: Vec<i64> = starts.iter().map(|s| s + 1).collect();
        RegionCalls::new(region, rank, Int64Array::from(starts.to_vec()), Int64Array::from(ends))
    }

    #[test]
    fn trace_regions_of_its_own_rank_only() {
        let trace = Trace {
            version: 2,
            rank: 1,
            little_endian: true,
            regions: vec![TraceRegion {
                name: "solve".into(),
                source_file: Some("s.f90".into()),
                source_line: Some(3),
                start_ns: vec![5, 1],
                end_ns: vec![6, 2],
            }],
        };
        assert!(of_trace(&trace, 0).is_empty());
        let got = of_trace(&trace, 1);
        assert_eq!(
            (got[0].name.as_str(), got[0].start_ns.as_slice(), got[0].source_line),
            ("solve", &[5, 1][..], Some(3))
        );
    }

    #[test]
    fn run_regions_in_the_order_of_their_first_start() {
        let run = Run {
            region_names: vec!["late".into(), "early".into(), "other_rank".into()],
            regions: vec![row(0, 0, &[50, 60]), row(1, 0, &[20]), row(1, 1, &[10]), row(2, 1, &[1])],
            ..Run::default()
        };
        let names = |rank| of_run(&run, rank).into_iter().map(|f| f.name).collect::<Vec<_>>();
        // "other_rank" (first start 1, rank 1) sorts first but has nothing on rank 0
        assert_eq!(names(0), ["early", "late"]);
        assert_eq!(names(1), ["other_rank", "early"]);
        assert_eq!(of_run(&run, 0)[1].start_ns, [50, 60]);
    }
}
