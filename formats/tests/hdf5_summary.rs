//! `read_h5_summary` against the full reader: the summary of each reference file has one
//! row per region row with calls, carrying the same region, rank, call count, source,
//! tags and stored exclusive total, and the same names, lane tables, metadata and rank
//! count. (Guards the reader's split into index and row steps, formats-split.)
mod export_support;

use export_support::datasets;
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
