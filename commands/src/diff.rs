//! `scope-profiler diff BASE NEW`: what changed between two runs, or two directories of
//! repeated runs, with intervals that count the noise ([`scope_profiler_analysis::compare`]).
//!
//! Exit status: 0, or 1 when `--fail-on-regression PCT` finds a region "slower" with the low
//! end of its interval above PCT % (each named on stderr); 2 for a usage error or an input
//! that cannot be read (one line naming the file).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use scope_profiler_analysis::compare::display::{format_calls, format_change, format_interval, format_seconds};
use scope_profiler_analysis::compare::{
    compare, CompareBy, Comparison, Group, RunCallStats, Verdict, NO_TIME, TOO_FEW_CALLS,
};
use scope_profiler_analysis::RunAnalysis;
use scope_profiler_formats::dataset::run_id;
use scope_profiler_formats::run_group::run_files;
use scope_profiler_formats::Format;

use crate::failure::{read_input, Failure};
use scope_profiler_formats::text_summary::{cell_text, display_width};

/// `diff`'s help beyond its one line.
pub const LONG_ABOUT: &str = "Compare two runs of a program: for every region (or call path, --by path), \
the time per run on each side, the change in percent, its 95 % interval and a verdict. \"slower\" or \"faster\" \
only when the whole interval is beyond the threshold: two runs of the same program come out \"unchanged\".

BASE and NEW are each a run file (.h5, JSON profile) or a directory of run files: a group of repeated runs of \
one version, whose variation from run to run is counted. The interval counts the noise of the calls within each \
run (their spread, and slow stretches of neighbouring calls), and with several runs per side the spread between \
runs; a region with one call in a single run cannot be declared changed. The intervals of all rows hold together \
at 95 %. Rows are sorted by the size of the change of time per run. docs/compare.md describes the method.

Exit status: 0; 1 when --fail-on-regression finds a regression; 2 for a usage error or an unreadable input.";

/// `diff`'s examples.
pub const EXAMPLES: &str = "Examples:\n  scope-profiler diff before.h5 after.h5\n  scope-profiler diff runs/main/ runs/branch/ --threshold 2\n  scope-profiler diff nightly/prev/ nightly/last/ --fail-on-regression 10   # CI gate\n  scope-profiler diff a.h5 b.h5 --by path -o diff.html\n  scope-profiler diff a.json b.json --json | jq '.regions[] | select(.verdict != \"unchanged\")'";

/// Rows per region or per call path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffBy {
    /// one row per region name
    Region,
    /// one row per call path (callers' regions, then the region)
    Path,
}

impl From<DiffBy> for CompareBy {
    fn from(by: DiffBy) -> Self {
        match by {
            DiffBy::Region => CompareBy::Region,
            DiffBy::Path => CompareBy::Path,
        }
    }
}

/// A percentage >= 0 (`5`, `2.5`, `5%`).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a percentage >= 0")),
    }
}

/// `diff`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// The base: a run file (.h5, JSON profile) or a directory of repeated runs.
    pub base: PathBuf,
    /// The new side, as BASE.
    pub new: PathBuf,
    /// Print one JSON object (`base`, `new`, `regions`: one object per row) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Changes whose interval reaches within ±PCT % are "unchanged".
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = parse_percent, allow_negative_numbers = true)]
    pub threshold: f64,
    /// Exit 1 when a row is "slower" with the low end of its interval above PCT %, naming
    /// each on stderr.
    #[arg(long, value_name = "PCT", value_parser = parse_percent, allow_negative_numbers = true)]
    pub fail_on_regression: Option<f64>,
    /// One row per region, or per call path.
    #[arg(long, value_enum, default_value_t = DiffBy::Region)]
    pub by: DiffBy,
    /// Also write the comparison as a self-contained HTML page: the table and a differential
    /// flame graph (width: the new side's time, colour: the change).
    #[arg(short = 'o', long = "output", value_name = "HTML")]
    pub output: Option<PathBuf>,
}

/// One run file read: its statistics by the requested key, and by call path for the flame
/// graph when asked (`Err`: why its call paths cannot be built).
struct Loaded {
    stats: RunCallStats,
    paths: Option<Result<RunCallStats, String>>,
    /// The run's identity ([`run_id`]): a run's `.h5` and its JSON export share it.
    id: String,
}

/// Read `file` and reduce it to call statistics; the run itself is dropped. Every failure
/// is a usage-level one here (exit 2), naming the file.
fn load(file: &Path, by: CompareBy, flame: bool) -> Result<Loaded, Failure> {
    let run = read_input(file).map_err(|e| Failure::usage(e.message))?;
    let name = file.display().to_string();
    let id = run_id(&run);
    let analysis = RunAnalysis::new(std::sync::Arc::new(run));
    let by_path = || {
        RunCallStats::by_path(name.clone(), &analysis).map_err(|e| format!("{name}: cannot build its call paths: {e}"))
    };
    match by {
        CompareBy::Region => {
            Ok(Loaded { stats: RunCallStats::by_region(name.clone(), &analysis.run), paths: flame.then(by_path), id })
        }
        CompareBy::Path => {
            let stats = by_path().map_err(Failure::usage)?;
            Ok(Loaded { paths: flame.then(|| Ok(stats.clone())), stats, id })
        }
    }
}

/// The two sides read (all files in parallel): the groups by the requested key, and the
/// groups by call path for the flame graph (or why there are none).
type Sides = ((Group, Group), Option<Result<(Group, Group), String>>);

fn read_sides(args: &DiffArgs, by: CompareBy) -> Result<Sides, Failure> {
    let list = |p: &Path| run_files(p).map_err(|e| Failure::usage(e.to_string()));
    let (base_files, new_files) = (list(&args.base)?, list(&args.new)?);
    let flame = args.output.is_some();
    let files: Vec<&PathBuf> = base_files.iter().chain(&new_files).collect();
    let loaded: Vec<Result<Loaded, Failure>> =
        scope_profiler_analysis::pool::install(|| files.par_iter().map(|f| load(f, by, flame)).collect());
    let mut loaded: Vec<Loaded> = loaded.into_iter().collect::<Result<_, _>>()?;
    let new = distinct_runs(&new_files, loaded.split_off(base_files.len()));
    let base = distinct_runs(&base_files, loaded);
    let (base, new) = (&base[..], &new[..]);
    let group = |label: &Path, part: &[Loaded]| Group {
        label: label.display().to_string(),
        runs: part.iter().map(|l| l.stats.clone()).collect(),
    };
    let path_group = |label: &Path, part: &[Loaded]| -> Option<Result<Group, String>> {
        let runs: Option<Result<Vec<RunCallStats>, String>> = part.iter().map(|l| l.paths.clone()).collect();
        runs.map(|r| r.map(|runs| Group { label: label.display().to_string(), runs }))
    };
    let paths = match (path_group(&args.base, base), path_group(&args.new, new)) {
        (Some(b), Some(n)) => Some(b.and_then(|b| n.map(|n| (b, n)))),
        _ => None,
    };
    Ok(((group(&args.base, base), group(&args.new, new)), paths))
}

/// The runs of one side, each once: files holding a run already read on that side (a run's
/// `.h5` and its JSON export, same [`run_id`]) are left out, named in a `note:` on stderr,
/// so that one run is not counted as two.
fn distinct_runs(files: &[PathBuf], loaded: Vec<Loaded>) -> Vec<Loaded> {
    let mut seen: Vec<(String, &Path)> = Vec::new();
    let mut out = Vec::new();
    for (file, l) in files.iter().zip(loaded) {
        match seen.iter().find(|(id, _)| *id == l.id) {
            Some((_, first)) => {
                eprintln!("note: {} holds the same run as {}; counted once", file.display(), first.display())
            }
            None => {
                seen.push((l.id.clone(), file));
                out.push(l);
            }
        }
    }
    out
}

/// Carry out `diff`; the exit status.
pub fn run(args: &DiffArgs) -> i32 {
    match diff(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn diff(args: &DiffArgs) -> Result<i32, Failure> {
    if let Some(out) = &args.output {
        if Format::of_profile_path(out) != Format::HtmlReport {
            return Err(Failure::usage(format!(
                "diff -o {}: the page is an HTML file; give a name ending in .html or .htm",
                out.display()
            )));
        }
    }
    let by = CompareBy::from(args.by);
    let ((base, new), paths) = read_sides(args, by)?;
    let threshold = args.threshold / 100.0;
    let c = compare(&base, &new, by, threshold).map_err(|e| Failure::usage(e.to_string()))?;
    if args.json {
        outln!("{:#}", c.to_json());
    } else {
        out!("{}", diff_text(&c));
    }
    if let Some(out) = &args.output {
        let flame = match paths {
            Some(Ok((b, n))) => compare(&b, &n, CompareBy::Path, threshold).map_err(|e| e.to_string()),
            Some(Err(why)) => Err(why),
            None => Err("no call paths".to_string()),
        };
        scope_profiler_formats::diff_html::write_diff_html(&c, flame.as_ref().map_err(Clone::clone), out)
            .map_err(|e| Failure::usage(e.to_string()))?;
        if !args.json {
            outln!("\nwrote {}", out.display());
        }
    }
    let Some(limit) = args.fail_on_regression else { return Ok(0) };
    let regressions = c.regressions(limit / 100.0);
    for r in &regressions {
        eprintln!(
            "regression: {} {} {} (above {limit}%): {} -> {} per run",
            cell_text(&r.name),
            format_change(r.change.unwrap_or(0.0)),
            format_interval(r.ci_low.unwrap_or(0.0), r.ci_high.unwrap_or(0.0)),
            format_seconds(r.base_time),
            format_seconds(r.new_time)
        );
    }
    Ok(if regressions.is_empty() { 0 } else { 1 })
}

/// `label (N runs)`.
fn side_line(what: &str, label: &str, runs: usize) -> String {
    format!("{what}: {label} ({runs} run{})", if runs == 1 { "" } else { "s" })
}

/// The text table: a heading (the sides, how the intervals are made), one line per row.
pub fn diff_text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", side_line("base", &c.base.label, c.base.runs.len()));
    let _ = writeln!(out, "{}", side_line("new ", &c.new.label, c.new.runs.len()));
    let with_interval = c.rows.iter().filter(|r| r.ci_low.is_some()).count();
    let _ = writeln!(
        out,
        "change = new/base - 1 of the time per run; 95% intervals, {with_interval} together ({:.3}% each); \
         verdict beyond ±{}%",
        c.row_level * 100.0,
        c.threshold * 100.0
    );
    if c.rows.is_empty() {
        let _ = writeln!(out, "\nno region has calls on either side");
        return out;
    }
    let names: Vec<String> = c.rows.iter().map(|r| cell_text(&r.name)).collect();
    let name_w = names.iter().map(|n| display_width(n)).max().unwrap_or(6).max(6);
    let cells: Vec<[String; 7]> = c
        .rows
        .iter()
        .map(|r| {
            let (bc, nc) = match r.verdict {
                Verdict::New => ("-".into(), format_calls(r.new_calls)),
                Verdict::Gone => (format_calls(r.base_calls), "-".into()),
                _ => (format_calls(r.base_calls), format_calls(r.new_calls)),
            };
            let bt = if r.verdict == Verdict::New { "-".into() } else { format_seconds(r.base_time) };
            let nt = if r.verdict == Verdict::Gone { "-".into() } else { format_seconds(r.new_time) };
            let change = r.change.map_or_else(|| "-".into(), format_change);
            let interval = match (r.ci_low, r.ci_high) {
                (Some(lo), Some(hi)) => format_interval(lo, hi),
                _ => "-".into(),
            };
            [bc, nc, bt, nt, change, interval, r.verdict.name().to_string() + if r.note.is_some() { " *" } else { "" }]
        })
        .collect();
    let heads = ["base calls", "new calls", "base time", "new time", "change", "95% interval", "verdict"];
    let widths: Vec<usize> =
        (0..7).map(|k| cells.iter().map(|c| c[k].chars().count()).max().unwrap_or(0).max(heads[k].len())).collect();
    let _ = writeln!(out);
    let mut line = |first: &str, cols: &[&str]| {
        let mut l = format!("  {}{}", first, " ".repeat(name_w.saturating_sub(display_width(first))));
        for (k, v) in cols.iter().enumerate() {
            let pad = widths[k].saturating_sub(v.chars().count());
            if k == 6 {
                let _ = write!(l, "  {v}");
            } else {
                let _ = write!(l, "  {}{v}", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", l.trim_end());
    };
    line(c.by.name(), &heads);
    for (name, row) in names.iter().zip(&cells) {
        let cols: Vec<&str> = row.iter().map(String::as_str).collect();
        line(name, &cols);
    }
    for note in [TOO_FEW_CALLS, NO_TIME] {
        if c.rows.iter().any(|r| r.note == Some(note)) {
            let _ = writeln!(out, "  * {note}: not declared changed");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{dispatch, Outcome};
    use scope_profiler_analysis::compare::{DiffRow, SideInfo};

    fn code(argv: &[&str]) -> i32 {
        match dispatch(argv.iter().copied()) {
            Outcome::Exit(code) => code,
            Outcome::Run(req) => panic!("{argv:?}: ran {req:?}"),
        }
    }

    fn dataset(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets").join(name).display().to_string()
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5"), Ok(5.0));
        assert_eq!(parse_percent("2.5%"), Ok(2.5));
        assert!(parse_percent("-1").unwrap_err().contains("'-1' is not a percentage >= 0"));
        assert!(parse_percent("x").is_err() && parse_percent("inf").is_err());
    }

    #[test]
    fn exit_codes() {
        let threads = dataset("reference/threads.h5");
        assert_eq!(code(&["sp", "diff", &threads, &threads]), 0);
        assert_eq!(code(&["sp", "diff", &threads, &threads, "--fail-on-regression", "0", "--json"]), 0);
        assert_eq!(code(&["sp", "diff", &threads, &dataset("compat/json-v1.json"), "--by", "path"]), 0);
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().display().to_string();
        let missing = dir.path().join("missing.h5").display().to_string();
        let txt = dir.path().join("page.txt").display().to_string();
        for argv in [
            vec!["sp", "diff", &threads, &empty],
            vec!["sp", "diff", &missing, &threads],
            vec!["sp", "diff", &threads, &threads, "-o", &txt],
            vec!["sp", "diff", &threads, &threads, "--threshold", "-3"],
            vec!["sp", "diff", &threads],
        ] {
            assert_eq!(code(&argv), 2, "{argv:?}");
        }
        assert!(!Path::new(&txt).exists());
        let page = dir.path().join("d.html");
        assert_eq!(code(&["sp", "diff", &threads, &threads, "-o", page.to_str().unwrap()]), 0);
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(html.contains("<svg class=\"diff-flame\"") && html.contains("<table class=\"diff\">"));
    }

    /// A run's `.h5` and its JSON export on one side are one run: counted once.
    #[test]
    fn a_run_and_its_json_export_count_once() {
        use scope_profiler_formats::json_profile::write_json;
        use scope_profiler_formats::selection::Selection;
        let dir = tempfile::tempdir().unwrap();
        let h5 = PathBuf::from(dataset("reference/threads.h5"));
        let run = read_input(&h5).unwrap();
        let json = dir.path().join("threads.json");
        write_json(&run, &Selection::new((0..run.num_ranks).collect(), "threads"), None, &json).unwrap();
        let other = PathBuf::from(dataset("reference/pool.h5"));
        let files = vec![h5, json, other];
        let loaded = files.iter().map(|f| load(f, CompareBy::Region, false).unwrap()).collect();
        let kept: Vec<String> = distinct_runs(&files, loaded).into_iter().map(|l| l.stats.name).collect();
        assert_eq!(kept, [files[0].display().to_string(), files[2].display().to_string()]);
    }

    #[test]
    fn the_text_table_aligns_its_columns() {
        let row = |name: &str, base: f64, new: f64, verdict: Verdict, ci: Option<(f64, f64)>| DiffRow {
            name: name.into(),
            key: vec![name.into()],
            base_calls: if verdict == Verdict::New { 0.0 } else { 100.0 },
            new_calls: if verdict == Verdict::Gone { 0.0 } else { 12.5 },
            base_time: base,
            new_time: new,
            change: (base > 0.0 && new > 0.0).then(|| new / base - 1.0),
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            verdict,
            note: (ci.is_none() && base > 0.0 && new > 0.0).then_some(TOO_FEW_CALLS),
        };
        let c = Comparison {
            base: SideInfo { label: "a.h5".into(), runs: vec!["a.h5".into()] },
            new: SideInfo { label: "runs/".into(), runs: vec!["runs/1.h5".into(), "runs/2.h5".into()] },
            by: CompareBy::Region,
            threshold: 0.05,
            row_level: 0.99,
            rows: vec![
                row("slow\tone", 1.0, 1.3, Verdict::Slower, Some((0.281, 0.316))),
                row("added", 0.0, 0.000512, Verdict::New, None),
                row("root", 0.002, 0.002, Verdict::Unchanged, None),
            ],
        };
        let text = diff_text(&c);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "base: a.h5 (1 run)");
        assert_eq!(lines[1], "new : runs/ (2 runs)");
        assert!(lines[2].contains("1 together (99.000% each); verdict beyond ±5%"), "{}", lines[2]);
        assert_eq!(lines[3], "");
        assert_eq!(
            &lines[4..],
            [
                "  region     base calls  new calls  base time  new time  change      95% interval  verdict",
                "  slow\\tone         100       12.5     1.00 s    1.30 s  +30.0%  [+28.1%, +31.6%]  slower",
                "  added               -       12.5          -    512 µs       -                 -  new",
                "  root              100       12.5    2.00 ms   2.00 ms   +0.0%                 -  unchanged *",
                "  * too few calls to estimate the noise (one call in a single run): not declared changed",
            ]
        );
    }
}
