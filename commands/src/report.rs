//! `scope-profiler report`: one self-contained HTML file from one or more `.h5` files
//! ([`scope_profiler_formats::html_report`]), one section per file.
use std::path::{Path, PathBuf};

use scope_profiler_formats::html_report::HtmlReport;

use scope_profiler_formats::export_plan::{display_label, path_stem};

use crate::export::cli_selection;
use crate::failure::{check_report_output, read_input, Failure};

/// `scope-profiler report FILES -o OUTPUT [--rank R]`: [`write_report`], then `wrote PATH`.
/// The exit code: 0, or the failure's ([`Failure::code`]).
pub fn execute(files: &[PathBuf], output: &Path, ranks: &[u32]) -> i32 {
    match write_report(files, output, ranks) {
        Ok(out) => {
            outln!("wrote {}", out.display());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            e.code()
        }
    }
}

/// Write the report of `files` (each one section, labelled by its metadata `label` or its
/// stem; `ranks`, or every rank when empty) to `output`. Returns the path written.
///
/// Errors (the message names the file): an unreadable input, a rank the run does not have,
/// an input without calls on the selected ranks, a failed write. Nothing is written on error.
/// Usage errors (exit 2): an output not named `.html`/`.htm`, an input of another kind, a
/// rank the run does not have.
pub fn write_report(files: &[PathBuf], output: &Path, ranks: &[u32]) -> Result<PathBuf, Failure> {
    check_report_output(output)?;
    let title = match files {
        [one] => format!("scope-profiler report: {}", one.display()),
        _ => format!("scope-profiler report: {} runs", files.len()),
    };
    let mut report = HtmlReport::new(title);
    for f in files {
        let run = read_input(f)?;
        let sel = cli_selection(&run, ranks, display_label(&run, &path_stem(f))).map_err(|e| e.context(f.display()))?;
        report.add(&run, &sel).map_err(|e| Failure::runtime(format!("{}: {e}", f.display())))?;
    }
    report.write(output).map_err(|e| Failure::runtime(e.to_string()))?;
    Ok(output.to_path_buf())
}
