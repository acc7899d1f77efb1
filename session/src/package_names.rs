//! The names of the Python package that are not bound at `import scope_profiler`: the ones
//! loaded from their module on first use (so that the import stays light), and the public
//! names of scope-profiler 0.7.5 that this package cannot honour, each with its reason
//! (`docs/api-coverage.md` lists them).

/// Names loaded from their module on first use, as `(name, module, attribute)`; the module
/// is relative to the package (`_options` is `scope_profiler._options`). The exporters, the
/// comparison of runs, the dataset's `scan`, and the option dataclasses, whose `dataclasses`
/// import pulls `inspect`.
pub const LAZY: [(&str, &str, &str); 23] = [
    ("GPUOptions", "_options", "GPUOptions"),
    ("HDF5Options", "_options", "HDF5Options"),
    ("MemrayOptions", "_options", "MemrayOptions"),
    ("ProfilingOptions", "_options", "ProfilingOptions"),
    ("export_speedscope", "speedscope_export", "export_speedscope"),
    ("load", "profile_io", "load"),
    ("read_profile", "profile_io", "read_profile"),
    ("sniff_profile_format", "profile_io", "sniff_profile_format"),
    ("write_profile", "profile_io", "write_profile"),
    ("load_prof", "prof_export", "load_prof"),
    ("to_pstats", "prof_export", "to_pstats"),
    ("export_prof", "prof_export", "export_prof"),
    ("export_flamegraph_svg", "prof_export", "export_flamegraph_svg"),
    ("export_chrome_trace", "chrome_trace_export", "export_chrome_trace"),
    ("export_perfetto", "exports", "export_perfetto"),
    ("export_pprof", "exports", "export_pprof"),
    ("export_folded", "exports", "export_folded"),
    ("export_timeline_svg", "exports", "export_timeline_svg"),
    ("export_parquet", "exports", "export_parquet"),
    ("export_html", "exports", "export_html"),
    ("create_html_report", "exports", "create_html_report"),
    ("scan", "dataset", "scan"),
    ("compare", "comparison", "compare"),
];

/// Names of `scope_profiler._options` (dataclasses, loaded on first use) that
/// `scope_profiler._settings` also answers, on first use.
pub const SETTINGS_LAZY: [&str; 5] =
    ["GPUOptions", "HDF5Options", "MemrayOptions", "ProfilingOptions", "load_profiling_config"];

const NO_LIKWID: &str = "LIKWID hardware counters (use_likwid) are not supported";
const NO_MPI_CALLS: &str = "MPI call profiling (profile_mpi_calls, the mpi4py wrappers) is not supported";
const NO_PERF: &str = "perf event counters (perf_events) are not supported";
const NO_PLOTS: &str = "the matplotlib plots are not part of this package; draw with export_timeline_svg, \
                        export_flamegraph_svg or create_html_report (or 'scope-profiler timeline/export')";
const NO_INSPECT: &str =
    "the file inspector is not supported; use 'scope-profiler summary FILE' or read_h5(FILE).metadata";

/// Public names of scope-profiler 0.7.5 that this package cannot honour, with the reason,
/// as `(name, reason)`: accessing one raises `NotImplementedError` ([`unsupported_message`]).
pub const UNSUPPORTED: [(&str, &str); 29] = [
    ("LikwidRegionResult", NO_LIKWID),
    ("MPIRegionMetadata", NO_MPI_CALLS),
    ("ProfiledMPIComm", NO_MPI_CALLS),
    ("ProfiledMPIRequest", NO_MPI_CALLS),
    ("format_mpi_region", NO_MPI_CALLS),
    ("message_nbytes", NO_MPI_CALLS),
    ("parse_mpi_region", NO_MPI_CALLS),
    ("profile_mpi4py", NO_MPI_CALLS),
    ("profile_mpi_comm", NO_MPI_CALLS),
    ("PerfEventError", NO_PERF),
    ("PerfEventTotals", NO_PERF),
    ("collect_file_metadata", NO_INSPECT),
    ("inspect_file", NO_INSPECT),
    ("collect_region_statistics", NO_PLOTS),
    ("collect_roofline_points", NO_PLOTS),
    ("plot_duration_timeseries", NO_PLOTS),
    ("plot_durations", NO_PLOTS),
    ("plot_flame", NO_PLOTS),
    ("plot_flame_chart", NO_PLOTS),
    ("plot_flame_graph", NO_PLOTS),
    ("plot_gantt", NO_PLOTS),
    ("plot_perf_events", NO_PLOTS),
    ("plot_rank_heatmap", NO_PLOTS),
    ("plot_roofline", NO_PLOTS),
    ("plot_scaling_efficiency", NO_PLOTS),
    ("plot_speedup", NO_PLOTS),
    ("plot_weak_scaling", NO_PLOTS),
    ("plot_weak_scaling_efficiency", NO_PLOTS),
    ("write_region_statistics_json", NO_PLOTS),
];

/// The `NotImplementedError` message for an unsupported name (one of [`UNSUPPORTED`]), or
/// `None` for any other name.
pub fn unsupported_message(name: &str) -> Option<String> {
    let (_, reason) = UNSUPPORTED.iter().find(|(n, _)| *n == name)?;
    Some(format!(
        "scope_profiler.{name} (scope-profiler 0.7.5) is not available in this package: {reason} \
         (docs/api-coverage.md)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_apart() {
        let mut names: Vec<&str> = LAZY.iter().map(|e| e.0).chain(UNSUPPORTED.iter().map(|e| e.0)).collect();
        let count = names.len();
        assert!(SETTINGS_LAZY
            .iter()
            .all(|n| *n == "load_profiling_config" || LAZY.iter().any(|e| e.0 == *n && e.1 == "_options")));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
    }

    #[test]
    fn unsupported_message_names_the_reason() {
        let message = unsupported_message("plot_gantt").unwrap();
        assert!(message.starts_with("scope_profiler.plot_gantt (scope-profiler 0.7.5) is not available"));
        assert!(message.contains("matplotlib") && message.ends_with("(docs/api-coverage.md)"));
        assert_eq!(unsupported_message("profile"), None);
    }

    #[test]
    fn api_coverage_lists_every_unsupported_name() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api-coverage.md")).unwrap();
        for (name, _) in UNSUPPORTED {
            assert!(doc.contains(name), "{name} missing from docs/api-coverage.md");
        }
    }
}
