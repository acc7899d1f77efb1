//! What `scope-profiler run` writes when not asked for more, and the bound of those files:
//! proportionate to what a person can open, whatever the run.
//!
//! A run writes its profile (the `.h5`) and, beside it, the run's flame graph
//! (`<stem>.flamegraph.svg`): the call paths aggregated, drawn by inferno, which leaves out
//! frames narrower than a tenth of a pixel, so its size follows the program's shape, not its
//! number of calls. The full timeline of every call (the speedscope file, about 108 bytes
//! per call: 5 GB for 50 M calls) is written only when asked for (`--speedscope`,
//! `scope-profiler export speedscope`).
//!
//! The bound, [`byte_budget`]: at most [`BYTES_PER_CALL`] per recorded call (at least
//! [`FIXED_BYTES`], the part of a file that does not grow with the calls: HDF5's headers,
//! the flame graph's script) and at most [`MAX_BYTES`]. A flame graph over it is not
//! written; the run's line says so. The `.h5` is the recording itself and is not cut: about
//! 3 bytes per call, within the bound per call, it passes [`MAX_BYTES`] beyond about 30 M
//! calls.
use std::path::{Path, PathBuf};

use scope_profiler_analysis::Run;
use scope_profiler_formats::export_plan::{default_file, display_label, path_stem};
use scope_profiler_formats::flamegraph::write_flamegraph_svg_within;
use scope_profiler_formats::{ExportError, Format, Selection};

/// The most bytes per recorded call a file written by default may take.
pub const BYTES_PER_CALL: u64 = 40;
/// The most bytes a file written by default may take, whatever the run (a browser opens it).
pub const MAX_BYTES: u64 = 100_000_000;
/// A file this small is within the bound whatever the number of calls.
pub const FIXED_BYTES: u64 = 1 << 20;

/// The most bytes a file written by default may take for a run of `calls` recorded calls.
pub fn byte_budget(calls: u64) -> u64 {
    calls.saturating_mul(BYTES_PER_CALL).clamp(FIXED_BYTES, MAX_BYTES)
}

/// The calls `run` recorded (every rank's).
pub fn recorded_calls(run: &Run) -> u64 {
    run.regions.iter().map(|r| r.len() as u64).sum()
}

/// Why the flame graph beside a run's output was not written.
#[derive(Debug)]
pub enum NoFlameGraph {
    /// It could not be drawn (calls that do not nest: the error says why).
    NotDrawn(ExportError),
    /// Its call paths (their folded text, or the drawing) would take `bytes`, over the run's
    /// [`byte_budget`] `budget`.
    OverBudget { bytes: u64, budget: u64 },
    /// It could not be written (the error names the file).
    NotWritten(String),
}

/// The file of the flame graph of a run whose output is `output`: `<stem>.flamegraph.svg`
/// beside it.
pub fn flame_graph_path(output: &Path) -> PathBuf {
    default_file(output.parent().unwrap_or(Path::new("")), &path_stem(output), Format::FlamegraphSvg)
}

/// Write the flame graph of every rank of `run` beside `output` ([`flame_graph_path`])
/// when it takes at most `budget` bytes; it is drawn in memory first, so a graph over the
/// budget or one that cannot be drawn leaves no file. Call paths whose folded text alone
/// would take more than `budget` (a deep recursion: they grow with the square of its depth)
/// are not drawn at all. Returns its path.
pub fn write_flame_graph_beside(run: &Run, output: &Path, budget: u64) -> Result<PathBuf, NoFlameGraph> {
    let sel = Selection::new((0..run.num_ranks.max(1)).collect(), display_label(run, &path_stem(output)));
    let mut svg = Vec::new();
    if let Err(bytes) = write_flamegraph_svg_within(run, &sel, budget, &mut svg).map_err(NoFlameGraph::NotDrawn)? {
        return Err(NoFlameGraph::OverBudget { bytes, budget });
    }
    let bytes = svg.len() as u64;
    if bytes > budget {
        return Err(NoFlameGraph::OverBudget { bytes, budget });
    }
    let path = flame_graph_path(output);
    std::fs::write(&path, &svg).map_err(|e| NoFlameGraph::NotWritten(format!("{}: {e}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::end_of_run::tests::two_calls;
    use arrow_array::Int64Array;
    use scope_profiler_analysis::RegionCalls;

    #[test]
    fn the_budget_is_forty_bytes_a_call_between_one_mebibyte_and_a_hundred_megabytes() {
        assert_eq!(byte_budget(0), 1 << 20);
        assert_eq!(byte_budget(10), 1 << 20);
        assert_eq!(byte_budget(1_000_000), 40_000_000);
        assert_eq!(byte_budget(2_500_000), 100_000_000);
        assert_eq!(byte_budget(50_000_000), 100_000_000);
        assert_eq!(byte_budget(u64::MAX), 100_000_000);
    }

    #[test]
    fn the_flame_graph_is_written_beside_the_output_named_after_its_stem() {
        let dir = tempfile::tempdir().unwrap();
        let run = two_calls();
        assert_eq!(recorded_calls(&run), 3);
        let path = write_flame_graph_beside(&run, &dir.path().join("run.h5"), byte_budget(3)).unwrap();
        assert_eq!(path, dir.path().join("run.flamegraph.svg"));
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("outer") && svg.contains("inner"), "{svg}");
    }

    #[test]
    fn a_flame_graph_over_the_budget_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.h5");
        match write_flame_graph_beside(&two_calls(), &out, 1000) {
            Err(NoFlameGraph::OverBudget { bytes, budget }) => assert!(bytes > 1000 && budget == 1000, "{bytes}"),
            other => panic!("{other:?}"),
        }
        assert!(!flame_graph_path(&out).exists());
    }

    /// A recursion 3,000 deep: its folded paths take ~27 MB (the square of the depth), over
    /// the 1 MiB its 3,000 calls allow; found before any path is made, no file.
    #[test]
    fn the_call_paths_of_a_deep_recursion_are_not_drawn() {
        let depth = 3000i64;
        let run = Run {
            region_names: vec!["__main__.down".into()],
            regions: vec![RegionCalls::new(
                0,
                0,
                Int64Array::from((0..depth).collect::<Vec<_>>()),
                Int64Array::from((0..depth).map(|i| 2 * depth - i).collect::<Vec<_>>()),
            )],
            num_ranks: 1,
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("deep.h5");
        match write_flame_graph_beside(&run, &out, byte_budget(recorded_calls(&run))) {
            Err(NoFlameGraph::OverBudget { bytes, budget }) => {
                assert_eq!(budget, 1 << 20);
                // Σ over depths d of (root + d frames of 14 bytes with their `;`) > depth² * 7
                assert!(bytes > (depth * depth * 7) as u64, "{bytes}");
            }
            other => panic!("{other:?}"),
        }
        assert!(!flame_graph_path(&out).exists());
    }
}
