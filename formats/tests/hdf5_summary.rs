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
            assert_eq!((s.region, s.rank, s.count), (r.region, r.rank, r.len() as i64), "{name}");
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
