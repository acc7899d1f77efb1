//! Regions that C and Fortran programs recorded (`.spt` traces, per-rank HDF5 profiles;
//! `formats::native_trace`): one rank's as the [`ForeignRegion`]s a checkpoint adds to the
//! Python run (`finalize(native_traces=...)`), each file's per rank (`read_native_ranks`),
//! and every file's as one run (`load_traces`).

use std::collections::HashMap;

use arrow_array::Int64Array;
use scope_profiler_analysis::{secs, MetaValue, RegionCalls, Run};
use scope_profiler_formats::native_trace::{Trace, TraceRegion, FORMAT_VERSION};

use crate::ForeignRegion;

/// One native output file as read.
#[derive(Debug, Clone)]
pub enum NativeOutput {
    /// A `.spt` trace: one rank (listed even without regions), no metadata.
    Trace(Trace),
    /// The run of a per-rank HDF5 profile (any profile works): its ranks with rows, its metadata.
    Profile(Run),
}

/// One rank of a file: the rank and its regions, named, in the file's order.
pub type RankRegions = (i64, Vec<(String, RegionCalls)>);

impl NativeOutput {
    /// The file's metadata (none for a trace).
    pub fn metadata(&self) -> &[(String, MetaValue)] {
        match self {
            NativeOutput::Trace(_) => &[],
            NativeOutput::Profile(run) => &run.metadata,
        }
    }

    /// The file's regions per rank, as `read_native_ranks` gives them: a trace's one rank,
    /// its regions in file order, each a standalone row ([`trace_row`]); a profile's ranks
    /// as [`profile_ranks`] orders them, each row as read.
    pub fn ranks(&self) -> Vec<RankRegions> {
        match self {
            NativeOutput::Trace(t) => {
                vec![(i64::from(t.rank), t.regions.iter().map(|r| (r.name.clone(), trace_row(r))).collect())]
            }
            NativeOutput::Profile(run) => profile_ranks(run)
                .into_iter()
                .map(|(rank, rows)| {
                    let named = |pos: usize| {
                        let row = &run.regions[pos];
                        (run.region_names[row.region as usize].clone(), row.clone())
                    };
                    (i64::from(rank), rows.into_iter().map(named).collect())
                })
                .collect(),
        }
    }
}

/// A trace region as a standalone row (region 0, rank 0): its calls (ns) and source location.
pub fn trace_row(region: &TraceRegion) -> RegionCalls {
    let mut row =
        RegionCalls::new(0, 0, Int64Array::from(region.start_ns.clone()), Int64Array::from(region.end_ns.clone()));
    row.source_file = region.source_file.clone();
    row.source_line = region.source_line;
    row
}

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

/// The region ids of `run` in the order its results list them (`get_regions()`): by the
/// region's earliest start over its rows (s; a row read without events: its stored
/// earliest start), file order on a tie. Only ids with rows; a name listed twice counts
/// once (its first id with rows), as the results index it.
fn listed(run: &Run) -> Vec<u32> {
    let mut firsts: Vec<Option<f64>> = vec![None; run.region_names.len()];
    for r in &run.regions {
        let start = match &r.stored {
            Some(s) => secs(s.start_minimum),
            None => secs(r.start_min().unwrap_or(0)),
        };
        if let Some(slot) = firsts.get_mut(r.region as usize) {
            *slot = Some(slot.map_or(start, |f| f.min(start)));
        }
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut listed: Vec<(f64, u32)> = Vec::new();
    for (id, first) in firsts.into_iter().enumerate() {
        let name = run.region_names[id].as_str();
        if let Some(first) = first.filter(|_| !seen.contains(&name)) {
            seen.push(name);
            listed.push((first, id as u32));
        }
    }
    listed.sort_by(|a, b| a.0.total_cmp(&b.0));
    listed.into_iter().map(|(_, id)| id).collect()
}

/// A profile's rows per rank, as `read_native_h5` gives them: ranks in the order they first
/// appear over the regions in `get_regions()` order ([`listed`]), each with the positions
/// in `run.regions` of its rows in that order (a region with two rows on one rank: the
/// last, in the place of the first).
pub fn profile_ranks(run: &Run) -> Vec<(u32, Vec<usize>)> {
    let mut ranks: Vec<(u32, Vec<usize>)> = Vec::new();
    for id in listed(run) {
        for (pos, row) in run.regions.iter().enumerate().filter(|(_, r)| r.region == id) {
            let slot = match ranks.iter().position(|(rank, _)| *rank == row.rank) {
                Some(i) => &mut ranks[i].1,
                None => {
                    ranks.push((row.rank, Vec::new()));
                    &mut ranks.last_mut().expect("just pushed").1
                }
            };
            match slot.iter().position(|&p| run.regions[p].region == id) {
                Some(i) => slot[i] = pos,
                None => slot.push(pos),
            }
        }
    }
    ranks
}

/// `rank`'s regions of a run read from a per-rank HDF5 profile, in the order its results
/// list them ([`profile_ranks`]).
pub fn of_run(run: &Run, rank: i64) -> Vec<ForeignRegion> {
    let rows = profile_ranks(run).into_iter().find(|(r, _)| i64::from(*r) == rank).map(|(_, rows)| rows);
    rows.unwrap_or_default()
        .into_iter()
        .map(|pos| &run.regions[pos])
        .map(|r| ForeignRegion {
            name: run.region_names[r.region as usize].clone(),
            start_ns: r.start_ns.values().to_vec(),
            end_ns: r.end_ns.values().to_vec(),
            source_file: r.source_file.clone(),
            source_line: r.source_line,
        })
        .collect()
}

/// Every rank of some native output files as one run (`load_traces`).
#[derive(Debug, Clone)]
pub struct LoadedTraces {
    /// Region names in the order first met (files in the order given, each file's ranks
    /// ascending, each rank's regions in the file's order); a rank's rows back to back,
    /// ranks ascending, each rank's rows in name order. No thread or task table (rows keep
    /// their columns); exclusive totals dropped unless a row has stored statistics.
    /// Metadata: the file of the lowest rank among files with metadata, then `source` =
    /// `"native"`, `trace_format_version` = [`FORMAT_VERSION`], `start_time_ns` (the
    /// earliest first call start, ns; absent without calls) and `label` (when given).
    /// `num_ranks` = max([`LoadedTraces::num_ranks`], highest rank with rows + 1).
    pub run: Run,
    /// Number of ranks the files claim (a trace's rank counts even without regions).
    pub num_ranks: i64,
}

/// Why native output files cannot be one run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    /// Two files hold one rank: `(this file, the earlier one, rank)`, paths as shown.
    #[error("{0} and {1} both claim rank {2}; pass the MPI rank to sp_init() so each rank writes its own")]
    RankTwice(String, String, i64),
    /// A rank with regions that is negative or beyond `u32`.
    #[error("invalid rank {0}")]
    InvalidRank(i64),
}

/// `value` under `key`: in place when `metadata` has the key, else appended (`dict` order).
fn set_meta(metadata: &mut Vec<(String, MetaValue)>, key: &str, value: MetaValue) {
    match metadata.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => metadata.push((key.to_string(), value)),
    }
}

/// Native output files gathered into one run, a file at a time ([`TraceLoader::add`], in
/// `find_traces` order), then [`TraceLoader::finish`].
#[derive(Debug, Default)]
pub struct TraceLoader {
    names: Vec<String>,
    ids: HashMap<String, u32>,
    rows: Vec<(i64, RegionCalls)>,
    /// Ranks met so far, with the file (as shown) that holds each.
    seen: Vec<(i64, String)>,
    /// The lowest rank of a file with metadata so far, and that metadata.
    chosen: Option<(i64, Vec<(String, MetaValue)>)>,
    /// Earliest first call start over the regions so far, ns.
    earliest: Option<i64>,
}

impl TraceLoader {
    /// Adds `file` (`shown`: its path as messages name it): its ranks ascending, each
    /// rank's regions in the file's order. [`LoadError::RankTwice`] when a rank of it was
    /// met in an earlier file.
    pub fn add(&mut self, shown: &str, file: NativeOutput) -> Result<(), LoadError> {
        let mut ranks = file.ranks();
        ranks.sort_by_key(|(rank, _)| *rank);
        for (rank, regions) in ranks {
            if let Some((_, other)) = self.seen.iter().find(|(r, _)| *r == rank) {
                return Err(LoadError::RankTwice(shown.to_string(), other.clone(), rank));
            }
            self.seen.push((rank, shown.to_string()));
            if !file.metadata().is_empty() && self.chosen.as_ref().is_none_or(|(r, _)| rank < *r) {
                self.chosen = Some((rank, file.metadata().to_vec()));
            }
            for (name, calls) in regions {
                self.add_region(rank, name, calls);
            }
        }
        Ok(())
    }

    fn add_region(&mut self, rank: i64, name: String, mut calls: RegionCalls) {
        let next = self.names.len() as u32;
        calls.region = *self.ids.entry(name.clone()).or_insert_with(|| {
            self.names.push(name);
            next
        });
        if let Some(&first) = calls.start_ns.values().first() {
            self.earliest = Some(self.earliest.map_or(first, |e| e.min(first)));
        }
        if calls.stored.is_none() {
            calls.exclusive_total_ns = None;
        }
        self.rows.push((rank, calls));
    }

    /// The run of every file added (see [`LoadedTraces`]), labelled `label` when given.
    /// [`LoadError::InvalidRank`] for a rank with regions that cannot be one (the first
    /// by region name order, then rank).
    pub fn finish(self, label: Option<&str>) -> Result<LoadedTraces, LoadError> {
        let mut rows = self.rows;
        let invalid = rows.iter().filter(|(rank, _)| u32::try_from(*rank).is_err()).min_by_key(|(r, c)| (c.region, *r));
        if let Some((rank, _)) = invalid {
            return Err(LoadError::InvalidRank(*rank));
        }
        rows.sort_by_key(|(rank, calls)| (*rank, calls.region));
        let regions: Vec<RegionCalls> = rows
            .into_iter()
            .map(|(rank, mut calls)| {
                calls.rank = rank as u32; // in range: checked above
                calls
            })
            .collect();
        let mut metadata = self.chosen.map(|(_, m)| m).unwrap_or_default();
        set_meta(&mut metadata, "source", MetaValue::Str("native".into()));
        set_meta(&mut metadata, "trace_format_version", MetaValue::Int(FORMAT_VERSION.into()));
        if let Some(first) = self.earliest {
            set_meta(&mut metadata, "start_time_ns", MetaValue::Int(first));
        }
        if let Some(label) = label {
            set_meta(&mut metadata, "label", MetaValue::Str(label.into()));
        }
        let num_ranks = self.seen.len() as i64;
        let highest = regions.iter().map(|r| r.rank + 1).max().unwrap_or(0);
        let run = Run {
            region_names: self.names,
            regions,
            threads: Vec::new(),
            tasks: Vec::new(),
            metadata,
            num_ranks: u32::try_from(num_ranks).unwrap_or(u32::MAX).max(highest),
            loop_blocks: Vec::new(),
        };
        Ok(LoadedTraces { run, num_ranks })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn trace(rank: i32, regions: &[(&str, &[i64])]) -> NativeOutput {
        let regions = regions
            .iter()
            .map(|(name, starts)| TraceRegion {
                name: name.to_string(),
                source_file: None,
                source_line: None,
                start_ns: starts.to_vec(),
                end_ns: starts.iter().map(|s| s + 100).collect(),
            })
            .collect();
        NativeOutput::Trace(Trace { version: 2, rank, little_endian: true, regions })
    }

    fn load_traces(files: &[(String, NativeOutput)], label: Option<&str>) -> Result<LoadedTraces, LoadError> {
        let mut loader = TraceLoader::default();
        for (shown, file) in files {
            loader.add(shown, file.clone())?;
        }
        loader.finish(label)
    }

    fn meta_of<'a>(run: &'a Run, key: &str) -> Option<&'a MetaValue> {
        run.meta(key)
    }

    #[test]
    fn a_trace_region_is_a_standalone_row_with_its_source() {
        let region = TraceRegion {
            name: "solve".into(),
            source_file: Some("s.f90".into()),
            source_line: Some(7),
            start_ns: vec![10, 30],
            end_ns: vec![20, 45],
        };
        let row = trace_row(&region);
        assert_eq!((row.region, row.rank, row.start_ns.values().to_vec()), (0, 0, vec![10, 30]));
        assert_eq!(row.end_ns.values().to_vec(), [20, 45]);
        assert_eq!((row.source_file.as_deref(), row.source_line), (Some("s.f90"), Some(7)));
    }

    #[test]
    fn profile_ranks_in_order_of_first_appearance_over_listed_regions() {
        let run = Run {
            region_names: vec!["late".into(), "early".into(), "other_rank".into()],
            regions: vec![row(0, 0, &[50, 60]), row(1, 0, &[20]), row(1, 1, &[10]), row(2, 1, &[1])],
            ..Run::default()
        };
        // listed: other_rank (1), early (10), late (50): rank 1 is met first
        assert_eq!(profile_ranks(&run), [(1, vec![3, 2]), (0, vec![1, 0])]);
        let file = NativeOutput::Profile(run);
        let ranks = file.ranks();
        let names: Vec<Vec<&str>> =
            ranks.iter().map(|(_, regions)| regions.iter().map(|(n, _)| n.as_str()).collect()).collect();
        assert_eq!((ranks[0].0, ranks[1].0), (1, 0));
        assert_eq!(names, [vec!["other_rank", "early"], vec!["early", "late"]]);
        assert_eq!(ranks[1].1[1].1.start_ns.values().to_vec(), [50, 60]);
    }

    #[test]
    fn traces_load_as_one_run_with_native_metadata() {
        let files = vec![
            ("b_rank1.spt".to_string(), trace(1, &[("solve", &[2_000])])),
            ("a_rank0.spt".to_string(), trace(0, &[("solve", &[1_000, 5_000]), ("assemble", &[1_500])])),
        ];
        let loaded = load_traces(&files, Some("fortran run")).unwrap();
        let run = &loaded.run;
        assert_eq!((loaded.num_ranks, run.num_ranks), (2, 2));
        assert_eq!(run.region_names, ["solve", "assemble"]);
        let rows: Vec<(u32, u32, Vec<i64>)> =
            run.regions.iter().map(|r| (r.rank, r.region, r.start_ns.values().to_vec())).collect();
        assert_eq!(rows, [(0, 0, vec![1_000, 5_000]), (0, 1, vec![1_500]), (1, 0, vec![2_000])]);
        let keys: Vec<&str> = run.metadata.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["source", "trace_format_version", "start_time_ns", "label"]);
        assert_eq!(meta_of(run, "source"), Some(&MetaValue::Str("native".into())));
        assert_eq!(run.meta_int("trace_format_version"), Some(2));
        assert_eq!(run.meta_int("start_time_ns"), Some(1_000));
        assert_eq!(meta_of(run, "label"), Some(&MetaValue::Str("fortran run".into())));
    }

    #[test]
    fn the_lowest_rank_with_metadata_gives_it_and_an_empty_trace_still_counts() {
        let profile = |rank: u32, label: &str| {
            NativeOutput::Profile(Run {
                region_names: vec!["io".into()],
                regions: vec![row(0, rank, &[100 + i64::from(rank)])],
                metadata: vec![("label".into(), MetaValue::Str(label.into())), ("mpi_size".into(), MetaValue::Int(4))],
                num_ranks: rank + 1,
                ..Run::default()
            })
        };
        let files = vec![
            ("x_rank3.h5".to_string(), profile(3, "three")),
            ("y_rank2.h5".to_string(), profile(2, "two")),
            ("z.spt".to_string(), trace(0, &[])),
        ];
        let loaded = load_traces(&files, None).unwrap();
        assert_eq!((loaded.num_ranks, loaded.run.num_ranks), (3, 4));
        let keys: Vec<&str> = loaded.run.metadata.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["label", "mpi_size", "source", "trace_format_version", "start_time_ns"]);
        assert_eq!(meta_of(&loaded.run, "label"), Some(&MetaValue::Str("two".into())));
        assert_eq!(loaded.run.meta_int("start_time_ns"), Some(102));
        assert_eq!(loaded.run.regions.iter().map(|r| r.rank).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn a_rank_claimed_twice_or_negative_is_refused() {
        let files = vec![("a.spt".to_string(), trace(0, &[])), ("b.spt".to_string(), trace(0, &[("x", &[1])]))];
        let err = load_traces(&files, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "b.spt and a.spt both claim rank 0; pass the MPI rank to sp_init() so each rank writes its own"
        );
        assert_eq!(load_traces(&[("n.spt".to_string(), trace(-1, &[]))], None).unwrap().num_ranks, 1);
        let negative = [("n.spt".to_string(), trace(-1, &[("x", &[1])]))];
        assert_eq!(load_traces(&negative, None).unwrap_err(), LoadError::InvalidRank(-1));
    }
}
