//! The differential flame graph of a comparison by call path: one frame per call path,
//! callers below their callees (roots at the bottom), each frame as wide as the path's time
//! per run in the new side and coloured by its change: red slower, blue faster (deeper the
//! larger the change), grey unchanged or not known, purple new. Paths gone in the new side
//! have no width there and are not drawn (the table lists them).
//!
//! Plain inline SVG with a `<title>` per frame (the tooltip); the page's script
//! ([`ZOOM_SCRIPT`]) zooms into a frame on a click, from the `data-*` positions.
use std::collections::BTreeMap;
use std::fmt::Write as _;

use scope_profiler_analysis::compare::display::{format_calls, format_change, format_interval, format_seconds};
use scope_profiler_analysis::compare::{Comparison, DiffRow, Verdict};

use crate::export_output::markup_escape as esc;

/// Height of a frame, px.
const FRAME_H: f64 = 17.0;
/// Frames narrower than this share of the whole are not drawn (0.1 px at 1200 px).
const MIN_SHARE: f64 = 1.0 / 12_000.0;

/// A frame to draw: its position (share of the width) and depth, its name, row and path.
struct Frame<'a> {
    x: f64,
    w: f64,
    depth: usize,
    name: &'a str,
    row: Option<&'a DiffRow>,
    path: String,
}

/// One frame: the path's row and its children by name.
#[derive(Default)]
struct Node<'a> {
    row: Option<&'a DiffRow>,
    children: BTreeMap<&'a str, Node<'a>>,
}

impl<'a> Node<'a> {
    /// Width value: the path's new time per run.
    fn value(&self) -> f64 {
        self.row.map_or_else(|| self.children.values().map(Node::value).sum(), |r| r.new_time)
    }
}

/// The tree of the comparison's rows (keyed by call path).
fn tree(c: &Comparison) -> Node<'_> {
    let mut root = Node::default();
    for row in &c.rows {
        let mut at = &mut root;
        for name in &row.key {
            at = at.children.entry(name.as_str()).or_default();
        }
        at.row = Some(row);
    }
    root
}

/// The fill of a frame: hue by verdict, depth by the size of the change (saturating at 50 %).
pub fn frame_colour(row: Option<&DiffRow>) -> String {
    let Some(row) = row else { return "hsl(0,0%,82%)".into() };
    let strength = row.change.map_or(0.0, |c| (c.abs() / 0.5).min(1.0));
    match row.verdict {
        Verdict::Slower => format!("hsl(4,{:.0}%,{:.0}%)", 55.0 + 30.0 * strength, 78.0 - 26.0 * strength),
        Verdict::Faster => format!("hsl(214,{:.0}%,{:.0}%)", 55.0 + 30.0 * strength, 78.0 - 26.0 * strength),
        Verdict::New => "hsl(280,55%,62%)".into(),
        Verdict::Gone | Verdict::Unchanged => "hsl(0,0%,82%)".into(),
    }
}

/// The tooltip of a frame.
fn frame_title(path: &str, row: Option<&DiffRow>) -> String {
    let Some(r) = row else { return path.to_string() };
    let mut t = format!(
        "{path}\nbase {} per run ({} calls), new {} per run ({} calls)",
        format_seconds(r.base_time),
        format_calls(r.base_calls),
        format_seconds(r.new_time),
        format_calls(r.new_calls)
    );
    if let Some(c) = r.change {
        let _ = write!(t, "\nchange {}", format_change(c));
        if let (Some(lo), Some(hi)) = (r.ci_low, r.ci_high) {
            let _ = write!(t, " {}", format_interval(lo, hi));
        }
    }
    let _ = write!(t, "\n{}", r.verdict.name());
    if let Some(note) = r.note {
        let _ = write!(t, " ({note})");
    }
    t
}

/// The label that fits `width` px (7 px a character, `..` when cut), empty when under 3.
fn label(name: &str, width: f64) -> String {
    let fits = ((width - 6.0) / 7.0).floor();
    if fits < 3.0 {
        return String::new();
    }
    let fits = fits as usize;
    if name.chars().count() <= fits {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(fits - 2).collect();
        s.push_str("..");
        s
    }
}

/// The flame graph SVG of `c` (a comparison by call path), `width` px wide, or `None` when
/// nothing has time in the new side. Also returns how many frames were too narrow to draw.
pub fn diff_flamegraph_svg(c: &Comparison, width: f64) -> Option<(String, usize)> {
    let root = tree(c);
    let total = root.value();
    if total <= 0.0 {
        return None;
    }
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let mut skipped = 0usize;
    let mut stack: Vec<(&Node<'_>, f64, usize, String)> = vec![(&root, 0.0, 0, String::new())];
    while let Some((node, x, depth, path)) = stack.pop() {
        let mut cx = x;
        for (name, child) in &node.children {
            let v = child.value();
            let share = v / total;
            let child_path = if path.is_empty() { name.to_string() } else { format!("{path};{name}") };
            if share < MIN_SHARE {
                skipped += usize::from(v > 0.0);
                cx += share;
                continue;
            }
            frames.push(Frame { x: cx, w: share, depth, name, row: child.row, path: child_path.clone() });
            stack.push((child, cx, depth + 1, child_path));
            cx += share;
        }
    }
    let max_depth = frames.iter().map(|f| f.depth).max().unwrap_or(0);
    let height = (max_depth + 1) as f64 * FRAME_H + 4.0;
    let mut out = String::with_capacity(frames.len() * 300 + 512);
    let _ = write!(
        out,
        "<svg class=\"diff-flame\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" data-width=\"{width}\" data-depth=\"{max_depth}\">"
    );
    for Frame { x, w, depth, name, row, path } in &frames {
        let (px, pw) = (x * width, (w * width).max(0.5));
        let py = height - 2.0 - (*depth as f64 + 1.0) * FRAME_H;
        let _ = write!(
            out,
            "<g class=\"f v-{}\" data-x=\"{x}\" data-w=\"{w}\" data-d=\"{depth}\" data-name=\"{}\"><title>{}</title>\
             <rect x=\"{px:.2}\" y=\"{py:.1}\" width=\"{pw:.2}\" height=\"{:.1}\" rx=\"2\" fill=\"{}\"/>\
             <text x=\"{:.2}\" y=\"{:.1}\">{}</text></g>",
            row.map_or("none", |r| r.verdict.name()),
            esc(name),
            esc(&frame_title(path, *row)),
            FRAME_H - 1.0,
            frame_colour(*row),
            px + 3.0,
            py + 12.0,
            esc(&label(name, pw)),
        );
    }
    out.push_str("</svg>");
    Some((out, skipped))
}

/// Click a frame to zoom into it (its callers stretched over the width, dimmed), click the
/// bottom frame or "reset zoom" to go back; labels are re-fitted to the new widths.
pub const ZOOM_SCRIPT: &str = "
(function(){
  var svg=document.querySelector('svg.diff-flame');if(!svg)return;
  var W=parseFloat(svg.dataset.width),frames=Array.prototype.slice.call(svg.querySelectorAll('g.f'));
  function fit(name,w){var n=Math.floor((w-6)/7);if(n<3)return '';return name.length<=n?name:name.slice(0,n-2)+'..'}
  function zoom(X,Wz,D){
    frames.forEach(function(g){
      var x=parseFloat(g.dataset.x),w=parseFloat(g.dataset.w),d=parseInt(g.dataset.d,10),e=1e-12;
      var r=g.querySelector('rect'),t=g.querySelector('text'),px,pw;
      if(d<D&&x<=X+e&&x+w>=X+Wz-e){px=0;pw=W;g.classList.add('anc')}
      else if(d>=D&&x>=X-e&&x+w<=X+Wz+e){px=(x-X)/Wz*W;pw=Math.max(w/Wz*W,0.5);g.classList.remove('anc')}
      else{g.style.display='none';return}
      g.style.display='';r.setAttribute('x',px.toFixed(2));r.setAttribute('width',pw.toFixed(2));
      t.setAttribute('x',(px+3).toFixed(2));t.textContent=fit(g.dataset.name,pw);
    });
    var reset=document.getElementById('flame-reset');if(reset)reset.disabled=(Wz>=1&&X<=0);
  }
  frames.forEach(function(g){g.addEventListener('click',function(){
    var x=parseFloat(g.dataset.x),w=parseFloat(g.dataset.w),d=parseInt(g.dataset.d,10);
    if(g.classList.contains('anc')||(d===0&&w>=1-1e-9)){zoom(0,1,0)}else{zoom(x,w,d)}
  })});
  var reset=document.getElementById('flame-reset');
  if(reset){reset.addEventListener('click',function(){zoom(0,1,0)});reset.disabled=true}
})();
";

#[cfg(test)]
mod tests {
    use super::*;
    use scope_profiler_analysis::compare::{CompareBy, SideInfo};

    fn row(path: &[&str], base: f64, new: f64, verdict: Verdict) -> DiffRow {
        DiffRow {
            name: path.join(";"),
            key: path.iter().map(|s| s.to_string()).collect(),
            base_calls: 1.0,
            new_calls: 1.0,
            base_time: base,
            new_time: new,
            change: (base > 0.0 && new > 0.0).then(|| new / base - 1.0),
            ci_low: None,
            ci_high: None,
            verdict,
            note: None,
        }
    }

    #[test]
    fn frames_are_as_wide_as_the_new_time_and_coloured_by_the_change() {
        let c = Comparison {
            base: SideInfo::default(),
            new: SideInfo::default(),
            by: CompareBy::Path,
            threshold: 0.05,
            row_level: 0.95,
            rows: vec![
                row(&["main"], 1.0, 1.0, Verdict::Unchanged),
                row(&["main", "slow"], 0.4, 0.6, Verdict::Slower),
                row(&["main", "fast"], 0.5, 0.3, Verdict::Faster),
                row(&["main", "gone"], 0.1, 0.0, Verdict::Gone),
                row(&["main", "fast", "<new & odd>"], 0.0, 0.1, Verdict::New),
            ],
        };
        let (svg, skipped) = diff_flamegraph_svg(&c, 1000.0).unwrap();
        assert_eq!(skipped, 0);
        assert_eq!(svg.matches("<g class=\"f").count(), 4, "gone has no width: {svg}");
        // main spans the width; fast then slow side by side above it (names in order)
        assert!(svg.contains("data-x=\"0\" data-w=\"1\" data-d=\"0\" data-name=\"main\""));
        assert!(svg.contains("data-x=\"0\" data-w=\"0.3\" data-d=\"1\" data-name=\"fast\""));
        assert!(svg.contains("data-w=\"0.6\" data-d=\"1\" data-name=\"slow\""));
        assert!(svg.contains(
            "class=\"f v-new\" data-x=\"0\" data-w=\"0.1\" data-d=\"2\" data-name=\"&lt;new &amp; odd&gt;\""
        ));
        // +50 % slower is the deepest red, -40 % faster a deep blue
        assert!(svg.contains("fill=\"hsl(4,85%,52%)\""));
        assert!(svg.contains("fill=\"hsl(214,79%,57%)\""));
        assert_eq!(label("a_long_region_name", 60.0), "a_lon..");
        assert_eq!(label("abc", 20.0), "");
    }
}
