//! `scope-profiler timeline`: the lane timeline of one run as SVG
//! ([`scope_profiler_formats::timeline`]), its regions chosen by globs.
use std::path::{Path, PathBuf};

use scope_profiler_formats::export_plan::{self, display_label, path_stem};
use scope_profiler_formats::{ExportError, Format};

use crate::args::TimelineLimits;
use crate::export::{cli_selection, no_calls_text};
use crate::failure::{read_input, Failure};

/// `scope-profiler timeline`: [`timeline`], then `wrote PATH`. The exit code: 0, or the
/// failure's ([`Failure::code`]).
pub fn execute(file: &Path, output: Option<&Path>, ranks: &[u32], width: f64, limits: &TimelineLimits) -> i32 {
    match timeline(file, output, ranks, width, limits) {
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

/// `scope-profiler timeline`: write the timeline SVG of `file`; returns the path written.
/// `output` as the Python exports take a path ([`export_plan::run_paths`]): a directory
/// gets `<stem>.timeline.svg` inside, a name without suffix gets `.timeline.svg`; default:
/// `<stem>.timeline.svg` in the working directory. `limits`: lanes, depth, window and the
/// regions drawn (globs on region names).
pub fn timeline(
    file: &Path,
    output: Option<&Path>,
    ranks: &[u32],
    width: f64,
    limits: &TimelineLimits,
) -> Result<PathBuf, Failure> {
    use scope_profiler_formats::timeline::{write_timeline_svg_with, TimelineOptions};
    let opts = TimelineOptions {
        width,
        lanes: limits.lanes,
        max_depth: limits.max_depth,
        window: limits.window,
        ..TimelineOptions::default()
    };
    opts.check().map_err(Failure::usage)?;
    let run = read_input(file)?;
    let label = display_label(&run, &path_stem(file));
    let target = output.unwrap_or(Path::new("."));
    let out = export_plan::run_paths(Format::TimelineSvg, target, &[(label.clone(), path_stem(file))])
        .map_err(|e| Failure::usage(e.to_string()))?
        .remove(0);
    let mut sel = cli_selection(&run, ranks, label).map_err(|e| e.context(file.display()))?;
    if !limits.include.is_empty() || !limits.exclude.is_empty() {
        let keep = |name: &str| {
            (limits.include.is_empty() || limits.include.iter().any(|g| glob_match(g, name)))
                && !limits.exclude.iter().any(|g| glob_match(g, name))
        };
        let names: Vec<String> = run.region_names.iter().filter(|n| keep(n)).cloned().collect();
        if names.is_empty() {
            return Err(Failure::usage(format!("{}: No regions matched the selected filters.", file.display())));
        }
        sel = sel.with_regions(names);
    }
    write_timeline_svg_with(&run, &sel, &opts, &out).map_err(|e| match e {
        // a window past the run's end: the request is wrong, as a malformed one is
        ExportError::Request(m) => Failure::usage(format!("{}: {m}", file.display())),
        e => Failure::runtime(format!("{}: {}", file.display(), no_calls_text(&run, e))),
    })?;
    Ok(out)
}

/// Whether `name` matches the shell-style `pattern` as a whole: `*` any run of characters,
/// `?` one character, `[abc]` / `[a-z]` / `[!abc]` one of (not of) a set; anything else,
/// itself (as Python's `fnmatch.fnmatchcase`).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // iterative matching with one backtrack point (the last `*`)
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => match class_match(&p[pi..], n[ni]) {
                Some((true, len)) => Some(pi + len),
                Some((false, _)) => None,
                None => (n[ni] == '[').then_some(pi + 1), // no closing ']': a literal '['
            },
            Some(&c) => (c == n[ni]).then_some(pi + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                ni += 1;
            }
            (None, Some((sp, sn))) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// `[...]` at the start of `p` against `c`: `Some((matched, length of the class))`, `None`
/// when the class is not closed.
fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let &ch = p.get(i)?;
        if ch == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&e| e != ']') {
            hit |= ch <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= ch == c;
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_fnmatch() {
        for (p, n, want) in [
            ("fetch*", "fetch_url", true),
            ("fetch*", "prefetch", false),
            ("*", "", true),
            ("w?rk", "work", true),
            ("w?rk", "wrk", false),
            ("*_[0-9]", "step_7", true),
            ("*_[0-9]", "step_x", false),
            ("[!a]*", "bcd", true),
            ("[!a]*", "abc", false),
            ("[]]x", "]x", true),
            ("a[b", "a[b", true),
            ("*a*b*", "xxaYYbzz", true),
            ("*a*b", "xxaYYbzz", false),
            ("solve", "solve", true),
            ("solve", "solver", false),
            ("ä*", "äpfel", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} ~ {n}");
        }
    }
}
