//! `read_h5_summary` against the full reader: the summary of each reference file has one
//! row per region row with calls, carrying the same region, rank, call count, source,
//! tags and stored exclusive total, and the same names, lane tables, metadata and rank
//! count: the reader's index and row steps agree.
mod export_support;

use export_support::{datasets, thread};
use scope_profiler_analysis::{MetaValue, Run};
use scope_profiler_formats::{read_h5, read_h5_summary};

#[test]
fn summary_rows_match_the_full_read() {
    for name in ["single", "threads", "async", "pool"] {
        let path = datasets().join(format!("reference/{name}.h5"));
        let run = read_h5(&path).unwrap();
        let summary = read_h5_summary(&path).unwrap().expect("schema-3 reference files have summary_statistics");
        assert_eq!(summary.region_names, run.region_names, "{name}");
        let full: Vec<_> = run.regions.iter().filter(|r| !r.is_empty()).collect();
        assert_eq!(summary.rows.len(), full.len(), "{name}");
        for (s, r) in summary.rows.iter().zip(&full) {
            assert_eq!((s.region, s.rank, s.stats.count), (r.region, r.rank, r.len() as i64), "{name}");
            assert_eq!(
                (&s.source_file, s.source_line, &s.source_text),
                (&r.source_file, r.source_line, &r.source_text)
            );
            assert_eq!(s.tags, r.tags, "{name}");
            assert_eq!(s.exclusive_total_ns, r.exclusive_total_ns, "{name}");
        }
        assert_eq!(summary.threads, run.threads, "{name}");
        assert_eq!(summary.tasks, run.tasks, "{name}");
        assert_eq!(summary.metadata, run.metadata, "{name}");
        assert_eq!(summary.num_ranks, run.num_ranks, "{name}");
    }
}

/// A tracked run that recorded no region writes its thread table and `num_ranks` 1 to the
/// file, as in memory (the reference's file has neither: a defect we do not copy).
#[test]
fn a_tracked_run_without_regions_keeps_its_thread_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idle.h5");
    let run = Run {
        metadata: vec![("mpi_size".into(), MetaValue::Int(1))],
        threads: vec![thread(0, "MainThread"), thread(1, "idle")],
        num_ranks: 1,
        ..Default::default()
    };
    scope_profiler_formats::write_h5(&run, &out).unwrap();
    let back = scope_profiler_formats::read_h5(&out).unwrap();
    assert_eq!(back.num_ranks, 1);
    assert!(back.regions.is_empty());
    let names: Vec<&str> = back.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["MainThread", "idle"]);
    let summary = scope_profiler_formats::hdf5::read_h5_summary(&out).unwrap().unwrap();
    assert_eq!((summary.num_ranks, summary.threads.len()), (1, 2));
}

/// The stored statistics equal those computed from the calls, read from the reference's
/// files (its `_timing_summary`) and from files written here; the written compound has the
/// reference's type (the same 8-byte fields in the same order, 88 bytes).
#[test]
fn stored_statistics_match_the_calls_and_the_reference_compound() {
    use scope_profiler_analysis::StoredStats;
    use scope_profiler_formats::write_h5;
    let compound = |p: &std::path::Path| {
        let file = hdf5::File::open(p).unwrap();
        file.dataset("rank_region_index/summary_statistics").unwrap().dtype().unwrap().to_descriptor().unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    for name in ["single", "threads", "async", "pool"] {
        let reference = datasets().join(format!("reference/{name}.h5"));
        let run = read_h5(&reference).unwrap();
        let ours = dir.path().join(format!("{name}.h5"));
        write_h5(&run, &ours).unwrap();
        assert_eq!(compound(&ours), compound(&reference), "{name}");
        assert_eq!(compound(&ours).size(), 88, "{name}");
        let full: Vec<_> = run.regions.iter().filter(|r| !r.is_empty()).collect();
        for path in [&reference, &ours] {
            let summary = read_h5_summary(path).unwrap().unwrap();
            assert_eq!(summary.rows.len(), full.len(), "{name}");
            for (s, r) in summary.rows.iter().zip(&full) {
                let gpu = r.gpu_ns.as_ref().map(|g| &g.values()[..]);
                let want = StoredStats::of_calls(r.start_ns.values(), r.end_ns.values(), gpu);
                assert_eq!(s.stats, want, "{name} {}", path.display());
                assert_eq!(s.stats.count, r.len() as i64);
            }
        }
    }
}
