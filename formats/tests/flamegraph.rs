//! Flame-graph SVG (inferno): deterministic bytes, inferno's per-frame totals equal the
//! reconstruction (lane towers = Σ root durations, `all` = everything), golden titles.
mod export_support;

use std::collections::BTreeMap;

use export_support::*;
use scope_profiler_analysis::*;
use scope_profiler_formats::flamegraph::{write_flamegraph_svg, write_flamegraph_svg_to};
use scope_profiler_formats::{ExportError, Selection};

fn svg(run: &Run, sel: &Selection) -> String {
    let mut buf = Vec::new();
    write_flamegraph_svg_to(run, sel, &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

/// inferno's tooltips: `name (N ns, P%)` -> (name, N) in document order.
fn titles(svg: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for part in svg.split("<title>").skip(1) {
        let t = part.split("</title>").next().unwrap();
        let t = t.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&quot;", "\"");
        if let Some((name, rest)) = t.rsplit_once(" (") {
            if let Some(n) = rest.split(" ns").next() {
                if let Ok(v) = n.replace(',', "").parse::<u64>() {
                    out.push((name.to_string(), v));
                }
            }
        }
    }
    out
}

#[test]
fn towers_equal_lane_totals_and_output_is_deterministic() {
    for name in ["threads", "async", "pool", "single"] {
        let run = reference(name);
        let sel = Selection::new(vec![0], name);
        let a = svg(&run, &sel);
        assert_eq!(a, svg(&run, &sel), "{name}: same input, same bytes");
        assert!(a.starts_with("<?xml"), "{name}");
        assert!(a.contains(&format!("{name} — rank 0")), "title");
        let t = titles(&a);
        let totals = lane_totals(&run, 0);
        let all: i64 = totals.roots.values().sum();
        assert!(t.contains(&("all".to_string(), all as u64)), "{name}: root 'all' = Σ lane roots");
        let labels = LaneLabels::new(&run, 0);
        for (lane, ns) in &totals.roots {
            let root = if *lane == -1 { "rank 0".to_string() } else { labels.label(*lane) };
            assert!(t.contains(&(root.clone(), *ns as u64)), "{name}: tower {root} = {ns} ns");
        }
        // inclusive per region, summed over its rectangles = Σ inclusive of its calls (no
        // region of these runs nests inside itself)
        let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
        for (n, v) in &t {
            *by_name.entry(n.clone()).or_default() += v;
        }
        let mut per_region: BTreeMap<String, i64> = BTreeMap::new();
        for regions in totals.by_name.values() {
            for (region, (_, incl, _)) in regions {
                *per_region.entry(region.clone()).or_default() += incl;
            }
        }
        for (region, incl) in per_region {
            assert_eq!(by_name.get(&region).copied().unwrap_or(0) as i64, incl, "{name}/{region} inclusive");
        }
        let listing: Vec<String> = t.iter().map(|(n, v)| format!("{n} {v}")).collect();
        insta::assert_snapshot!(format!("{name}_flame_titles"), listing.join("\n"));
    }
}

#[test]
fn written_atomically_and_errors_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/dir/f.svg");
    let run = reference("async");
    write_flamegraph_svg(&run, &Selection::new(vec![0], "async"), &path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), svg(&run, &Selection::new(vec![0], "async")));
    let empty = Run { region_names: vec!["a".into()], num_ranks: 1, ..Default::default() };
    let p2 = dir.path().join("none.svg");
    assert_eq!(write_flamegraph_svg(&empty, &Selection::new(vec![0], "x"), &p2), Err(ExportError::NoCalls));
    assert!(!p2.exists());
}
