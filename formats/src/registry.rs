//! Every format a run is written in, one [`Entry`] per [`Format`]: its name, how its files
//! are named, its writer and what opens it.
//!
//! The command line (`export`, the format list of its `--help`, the files `run` writes) and
//! the Python `export_*` functions read this table; no other place lists the formats. Which
//! format a profile path is in (HDF5, a JSON profile, an HTML report) is
//! [`crate::profile_format`]; which files an export writes is [`crate::export_plan`].
use std::path::{Path, PathBuf};

use scope_profiler_analysis::Run;

use crate::export_plan::Naming;
use crate::{ExportError, Selection};

/// A format a run is written in. The order is the order of the `export` format list (and
/// of a batch's formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// speedscope evented profiles, one per lane (thread / task).
    Speedscope,
    /// Folded stacks `lane;a;b;c <self time>`.
    Folded,
    /// Flame graph SVG rendered by inferno, one tower per lane.
    FlamegraphSvg,
    /// Lane timeline SVG: one row per thread and task, await time hatched.
    TimelineSvg,
    /// Parquet events (one row per call) and lanes tables.
    Parquet,
    /// cProfile / pstats files, one per rank with calls.
    Prof,
    /// Chrome Trace Event JSON, one track per lane.
    ChromeTrace,
    /// Perfetto protobuf trace: thread and task tracks with awaiting slices.
    Perfetto,
    /// pprof profile of self wall time per stack.
    Pprof,
    /// The JSON profile: lossless, read back by every command and by `read_json`.
    Json,
    /// The self-contained HTML report ([`crate::html_report`]).
    HtmlReport,
    /// The HDF5 profile in the reference's layout ([`crate::hdf5`]), written whole by
    /// [`crate::write_h5`]: it has no writer of a selection.
    Hdf5,
}

/// A writer of a selection: `(run, selection, output path) -> every path written`, in
/// writing order. Errors: the writer's [`ExportError`]; nothing is left at a path on error.
pub type WriteFn = fn(&Run, &Selection, &Path) -> Result<Vec<PathBuf>, ExportError>;

/// What the registry knows of one format.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The format this entry describes (the table is in [`Format`] order).
    pub format: Format,
    /// The format's name: the `scope-profiler export` argument for the formats it writes,
    /// and the reference's `FORMAT_*` value for the profile formats (`"hdf5"`, `"json"`,
    /// `"html"`).
    pub name: &'static str,
    /// Whether `scope-profiler export` writes it.
    pub cli: bool,
    /// How a requested file name becomes the format's file names ([`Naming`]).
    pub naming: Naming,
    /// The suffix a requested file name without one gets (`out` -> `out.pftrace`).
    pub suffix: &'static str,
    /// The suffix of the format's default file `<stem><file_suffix>` in a directory target
    /// (`export -o DIR`, `run.h5` -> `DIR/run.speedscope.json`); distinct per format.
    pub file_suffix: &'static str,
    /// The writer with the format's default options; `None` for HDF5.
    pub write: Option<WriteFn>,
    /// One line saying what opens the files; `{path}` stands for the file written.
    pub viewer: &'static str,
    /// Whether the selection always carries the selected region names, even unfiltered:
    /// formats whose output follows the `get_regions` order (speedscope's ties, pstats'
    /// entry order).
    pub keeps_region_order: bool,
    /// Whether a run without calls on the requested ranks is written (saying so) rather
    /// than refused when no filter is given.
    pub reports_empty_runs: bool,
}

/// `[path]` for `Ok`: the result of a writer that writes exactly its target, as a
/// [`WriteFn`]'s.
pub fn only(path: &Path, r: Result<(), ExportError>) -> Result<Vec<PathBuf>, ExportError> {
    r.map(|()| vec![path.to_path_buf()])
}

/// An entry written by `export`, one file per run under its default naming, no flags.
const fn per_run(
    format: Format,
    name: &'static str,
    suffix: &'static str,
    write: WriteFn,
    viewer: &'static str,
) -> Entry {
    Entry {
        format,
        name,
        cli: true,
        naming: Naming::PerRun,
        suffix,
        file_suffix: suffix,
        write: Some(write),
        viewer,
        keeps_region_order: false,
        reports_empty_runs: false,
    }
}

/// The table, in [`Format`] order.
static REGISTRY: [Entry; 12] = {
    use crate::*;
    [
        Entry {
            keeps_region_order: true,
            ..per_run(
                Format::Speedscope,
                "speedscope",
                ".speedscope.json",
                |run, sel, p| only(p, speedscope::write_speedscope_selection(run, sel, p)),
                "view at https://www.speedscope.app",
            )
        },
        per_run(
            Format::Folded,
            "folded",
            ".folded",
            |run, sel, p| only(p, folded::write_folded(run, sel, p)),
            "folded stacks: inferno-flamegraph, flamegraph.pl, speedscope",
        ),
        Entry {
            naming: Naming::PerRank,
            file_suffix: ".flamegraph.svg",
            ..per_run(
                Format::FlamegraphSvg,
                "flamegraph",
                ".svg",
                |run, sel, p| only(p, flamegraph::write_flamegraph_svg(run, sel, p)),
                "flame graph, open in a browser",
            )
        },
        per_run(
            Format::TimelineSvg,
            "timeline",
            ".timeline.svg",
            |run, sel, p| only(p, timeline::write_timeline_svg(run, sel, p)),
            "lane timeline, open in a browser",
        ),
        per_run(
            Format::Parquet,
            "parquet",
            ".parquet",
            parquet_export::write_parquet,
            "Parquet: DuckDB, Polars, pyarrow",
        ),
        Entry {
            naming: Naming::PerRunStem,
            keeps_region_order: true,
            ..per_run(
                Format::Prof,
                "prof",
                ".prof",
                |run, sel, p| pstats::write_prof(run, sel, p, pstats::ProfOptions::default()),
                "view with: snakeviz {path}",
            )
        },
        per_run(
            Format::ChromeTrace,
            "chrome",
            ".trace.json",
            |run, sel, p| only(p, chrome_trace::write_chrome_trace(run, sel, p)),
            "open with Perfetto or chrome://tracing",
        ),
        per_run(
            Format::Perfetto,
            "perfetto",
            ".pftrace",
            |run, sel, p| only(p, perfetto::write_perfetto(run, sel, p)),
            "open with https://ui.perfetto.dev",
        ),
        per_run(
            Format::Pprof,
            "pprof",
            ".pb.gz",
            |run, sel, p| only(p, pprof::write_pprof(run, sel, p)),
            "open with: go tool pprof -http=: FILE",
        ),
        per_run(
            Format::Json,
            "json",
            ".json",
            |run, sel, p| only(p, json_profile::write_json(run, sel, None, p)),
            "the lossless JSON profile: read back by every command and by read_json",
        ),
        Entry {
            cli: false,
            reports_empty_runs: true,
            ..per_run(
                Format::HtmlReport,
                "html",
                ".html",
                |run, sel, p| only(p, html_report::write_html_report(run, sel, p)),
                "HTML report, open in a browser",
            )
        },
        Entry {
            format: Format::Hdf5,
            name: "hdf5",
            cli: false,
            naming: Naming::PerRun,
            suffix: ".h5",
            file_suffix: ".h5",
            write: None,
            viewer: "read back by every command and by read_h5",
            keeps_region_order: false,
            reports_empty_runs: false,
        },
    ]
};

impl Format {
    /// Every format, in order.
    pub const ALL: [Format; 12] = [
        Format::Speedscope,
        Format::Folded,
        Format::FlamegraphSvg,
        Format::TimelineSvg,
        Format::Parquet,
        Format::Prof,
        Format::ChromeTrace,
        Format::Perfetto,
        Format::Pprof,
        Format::Json,
        Format::HtmlReport,
        Format::Hdf5,
    ];

    /// This format's entry.
    pub fn entry(self) -> &'static Entry {
        &REGISTRY[self as usize]
    }

    /// The formats with a writer of a selection (every format but HDF5), in order.
    pub fn exports() -> impl Iterator<Item = Format> {
        Format::ALL.into_iter().filter(|f| f.entry().write.is_some())
    }

    /// The formats `scope-profiler export` writes, in order.
    pub fn cli_formats() -> impl Iterator<Item = Format> {
        Format::ALL.into_iter().filter(|f| f.entry().cli)
    }

    /// The `export` format named `name` (ASCII case-insensitive); `None` for a name
    /// `export` does not take.
    pub fn from_cli_name(name: &str) -> Option<Format> {
        Format::cli_formats().find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// [`Entry::name`].
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// [`Entry::naming`].
    pub fn naming(self) -> Naming {
        self.entry().naming
    }

    /// [`Entry::suffix`].
    pub fn suffix(self) -> &'static str {
        self.entry().suffix
    }

    /// [`Entry::file_suffix`].
    pub fn file_suffix(self) -> &'static str {
        self.entry().file_suffix
    }

    /// [`Entry::viewer`], `{path}` replaced by `path`.
    pub fn viewer(self, path: &str) -> String {
        self.entry().viewer.replace("{path}", path)
    }

    /// [`Entry::keeps_region_order`].
    pub fn keeps_region_order(self) -> bool {
        self.entry().keeps_region_order
    }

    /// [`Entry::reports_empty_runs`].
    pub fn reports_empty_runs(self) -> bool {
        self.entry().reports_empty_runs
    }

    /// [`Entry::write`].
    pub fn writer(self) -> Option<WriteFn> {
        self.entry().write
    }

    /// Write `sel` of `run` to `path` in this format with its default options; returns every
    /// path written. Errors: the writer's; [`ExportError::Request`] for HDF5, which is
    /// written whole by [`crate::write_h5`].
    pub fn write(self, run: &Run, sel: &Selection, path: &Path) -> Result<Vec<PathBuf>, ExportError> {
        match self.writer() {
            Some(write) => write(run, sel, path),
            None => Err(ExportError::Request(format!("{} files are written whole, not of a selection", self.name()))),
        }
    }
}

/// The `export --help` paragraph of the formats: one line naming them all, then one line per
/// format with its default file name and what opens it.
pub fn cli_formats_help() -> String {
    let names: Vec<&str> = Format::cli_formats().map(Format::name).collect();
    let mut out = format!("Formats: {} (comma-separated for several)", names.join(", "));
    for f in Format::cli_formats() {
        let file = format!("<stem>{}", f.file_suffix());
        out.push_str(&format!("\n  {:<11} {file:<24} {}", f.name(), f.viewer("FILE")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_format_order_with_distinct_names_and_suffixes() {
        for f in Format::ALL {
            assert_eq!(f.entry().format, f);
        }
        for field in [Format::name as fn(Format) -> &'static str, Format::file_suffix] {
            let mut all: Vec<&str> = Format::ALL.iter().map(|&f| field(f)).collect();
            all.sort();
            all.dedup();
            assert_eq!(all.len(), Format::ALL.len());
        }
    }

    #[test]
    fn cli_names_are_case_insensitive_and_cover_the_cli_formats_only() {
        assert_eq!(Format::from_cli_name("Timeline"), Some(Format::TimelineSvg));
        assert_eq!(Format::from_cli_name("CHROME"), Some(Format::ChromeTrace));
        assert_eq!(Format::from_cli_name("html"), None);
        assert_eq!(Format::from_cli_name("hdf5"), None);
        assert_eq!(Format::cli_formats().count(), 10);
        assert_eq!(Format::exports().count(), 11);
    }

    #[test]
    fn the_help_lists_every_cli_format_with_its_viewer() {
        let help = cli_formats_help();
        assert!(help.lines().next().unwrap().ends_with("json (comma-separated for several)"), "{help}");
        assert!(help.contains("<stem>.flamegraph.svg"), "{help}");
        assert!(help.contains("view with: snakeviz FILE"), "{help}");
        assert_eq!(help.lines().count(), 11);
    }

    #[test]
    fn hdf5_has_no_selection_writer() {
        let e = Format::Hdf5.write(&Run::default(), &Selection::new(vec![0], ""), Path::new("x.h5")).unwrap_err();
        assert!(matches!(e, ExportError::Request(_)), "{e:?}");
    }
}
