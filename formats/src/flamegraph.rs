//! Flame-graph SVG of the folded stacks ([`crate::folded`]), rendered by the `inferno`
//! crate (the Rust port of `flamegraph.pl`): one tower per lane (thread / task) under
//! inferno's `all` root, widths = self + children time in ns, interactive (search, zoom)
//! when opened in a browser.
//!
//! Colours are chosen from a hash of the frame name (`deterministic`), so the same input
//! always gives the same bytes.
use std::io::{BufWriter, Write};
use std::path::Path;

use inferno::flamegraph::{self, Options};
use scope_profiler_analysis::Run;

use crate::export_output::{io_err, write_atomic};
use crate::folded::{folded_stacks, folded_stacks_within, FoldedUnit};
use crate::{ExportError, Selection};

fn title(sel: &Selection) -> String {
    match sel.ranks.as_slice() {
        [r] => format!("{} — rank {r}", sel.label),
        _ => sel.label.clone(),
    }
}

fn options(sel: &Selection) -> Options<'static> {
    let mut opt = Options::default();
    opt.title = title(sel);
    opt.subtitle = Some("wall time per region path in ns (self + children), one tower per thread / task".into());
    opt.count_name = "ns".into();
    opt.name_type = "Region:".into();
    opt.deterministic = true;
    opt
}

/// Render the flame graph of `sel` to `out`.
///
/// Errors: [`ExportError::Nesting`], [`ExportError::NoCalls`] (also when every path has
/// zero self time), [`ExportError::Io`].
pub fn write_flamegraph_svg_to<W: Write>(run: &Run, sel: &Selection, out: W) -> Result<(), ExportError> {
    render(run, sel, options(sel), out)
}

/// [`write_flamegraph_svg_to`] unless the folded stacks it draws would take more than
/// `max_bytes` ([`folded_stacks_within`]): then `Ok(Err(bytes))`, nothing drawn (a deep
/// recursion's paths grow with the square of its depth).
pub fn write_flamegraph_svg_within<W: Write>(
    run: &Run,
    sel: &Selection,
    max_bytes: u64,
    out: W,
) -> Result<Result<(), u64>, ExportError> {
    match folded_stacks_within(run, sel, FoldedUnit::Nanoseconds, max_bytes)? {
        Ok(lines) => render_lines(lines, options(sel), out).map(Ok),
        Err(bytes) => Ok(Err(bytes)),
    }
}

/// [`write_flamegraph_svg_to`] drawn `width` px wide instead of filling the window (inferno's
/// "fluid" drawing measures its window when it loads, which an `<iframe>` that is still being
/// laid out reports as 0 px wide: the HTML report embeds this one), with at most
/// `max_lanes` towers: the busiest lanes (by their time in the graph), the others merged into
/// one tower `N other lanes` ([`merge_quiet_lanes`]), so its size does not grow with the
/// number of tasks.
pub fn write_flamegraph_svg_fixed_to<W: Write>(
    run: &Run,
    sel: &Selection,
    width: usize,
    max_lanes: usize,
    out: W,
) -> Result<(), ExportError> {
    let mut opt = options(sel);
    opt.image_width = Some(width);
    let lines = merge_quiet_lanes(folded_stacks(run, sel, FoldedUnit::Nanoseconds)?, max_lanes);
    render_lines(lines, opt, out)
}

/// Folded `lines` (`lane;frame;...`, count) with at most `max_lanes` towers: the lanes with
/// the most time keep theirs, the paths of the others are summed under one root, `N other
/// lanes`. Unchanged when there are no more lanes than that.
pub fn merge_quiet_lanes(lines: Vec<(String, u64)>, max_lanes: usize) -> Vec<(String, u64)> {
    use std::collections::HashMap;
    let root = |p: &str| p.split(';').next().unwrap_or("").to_string();
    let mut time: HashMap<String, u64> = HashMap::new();
    for (p, c) in &lines {
        *time.entry(root(p)).or_default() += c;
    }
    if time.len() <= max_lanes {
        return lines;
    }
    let mut lanes: Vec<(String, u64)> = time.into_iter().collect();
    lanes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let kept: std::collections::HashSet<String> = lanes.iter().take(max_lanes).map(|(l, _)| l.clone()).collect();
    let other = format!("{} other lanes", lanes.len() - max_lanes);
    let mut merged: HashMap<String, u64> = HashMap::new();
    let mut out = Vec::new();
    for (p, c) in lines {
        let lane = root(&p);
        if kept.contains(&lane) {
            out.push((p, c));
        } else {
            *merged.entry(format!("{other}{}", &p[lane.len()..])).or_default() += c;
        }
    }
    out.extend(merged);
    out
}

fn render<W: Write>(run: &Run, sel: &Selection, opt: Options<'_>, out: W) -> Result<(), ExportError> {
    render_lines(folded_stacks(run, sel, FoldedUnit::Nanoseconds)?, opt, out)
}

fn render_lines<W: Write>(mut lines: Vec<(String, u64)>, mut opt: Options<'_>, out: W) -> Result<(), ExportError> {
    if lines.is_empty() {
        return Err(ExportError::NoCalls);
    }
    // inferno's from_lines expects sorted input (it merges adjacent equal prefixes)
    lines.sort();
    let text: Vec<String> = lines.iter().map(|(p, c)| format!("{p} {c}")).collect();
    let mut w = BufWriter::with_capacity(1 << 16, out);
    flamegraph::from_lines(&mut opt, text.iter().map(String::as_str), &mut w)
        .map_err(|e| ExportError::Io(format!("inferno: {e}")))?;
    w.flush().map_err(|e| ExportError::Io(e.to_string()))
}

/// Render the flame graph of `sel` to `path` (atomically, parent directories created).
/// Errors as [`write_flamegraph_svg_to`]; I/O errors name the path.
pub fn write_flamegraph_svg(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    // render first so a failure never creates the file
    let mut buf = Vec::new();
    write_flamegraph_svg_to(run, sel, &mut buf)?;
    write_atomic(path, |f| f.write_all(&buf).map_err(io_err(path)))
}
