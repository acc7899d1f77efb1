//! pprof export: decoded with the writer's prost structs; per-lane stacks rooted at the
//! lane name; flat = exclusive, cum = inclusive against the reconstruction; gzip; golden dump.
mod export_support;

use std::collections::BTreeMap;
use std::io::Read;

use export_support::*;
use prost::Message;
use scope_profiler_formats::pprof::proto::Profile;
use scope_profiler_formats::pprof::{pprof_profile, write_pprof};
use scope_profiler_formats::{ExportError, Selection};

/// (flat, cum) per function name, as `go tool pprof -top` computes them; and stacks.
fn top(p: &Profile) -> (BTreeMap<String, (i64, i64)>, Vec<String>) {
    let s = |i: i64| p.string_table[i as usize].clone();
    let fname = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).unwrap();
        let f = p.function.iter().find(|f| f.id == l.line[0].function_id).unwrap();
        s(f.name)
    };
    let mut out: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut stacks = Vec::new();
    for smp in &p.sample {
        let v = smp.value[0];
        let names: Vec<String> = smp.location_id.iter().map(|&l| fname(l)).collect();
        out.entry(names[0].clone()).or_default().0 += v;
        let mut seen = std::collections::HashSet::new();
        for n in &names {
            if seen.insert(n.clone()) {
                out.entry(n.clone()).or_default().1 += v;
            }
        }
        let mut rev = names.clone();
        rev.reverse();
        stacks.push(format!("{} {}", rev.join(";"), v));
    }
    (out, stacks)
}

#[test]
fn flat_and_cum_match_the_reconstruction() {
    for name in ["threads", "async", "single", "pool"] {
        let run = reference(name);
        let p = pprof_profile(&run, &Selection::new(vec![0], name)).unwrap();
        let p = Profile::decode(&p.encode_to_vec()[..]).unwrap();
        assert_eq!(p.string_table[0], "");
        let st = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!((st(p.sample_type[0].r#type), st(p.sample_type[0].unit)), ("wall", "nanoseconds"));
        let (t, _) = top(&p);
        let totals = lane_totals(&run, 0);
        let labels = scope_profiler_analysis::LaneLabels::new(&run, 0);
        let mut want: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (lane, names) in &totals.by_name {
            let lname = if *lane == -1 { "rank 0".to_string() } else { labels.label(*lane) };
            want.entry(lname).or_default().1 += totals.roots[lane];
            for (n, (_, incl, excl)) in names {
                let w = want.entry(n.clone()).or_default();
                w.0 += excl;
                // no region of these runs nests inside itself: cum = Σ inclusive
                w.1 += incl;
            }
        }
        assert_eq!(t, want, "{name}");
    }
}

#[test]
fn gzip_or_plain_by_name() {
    let run = reference("threads");
    let sel = Selection::new(vec![0], "threads");
    let dir = tempfile::tempdir().unwrap();
    write_pprof(&run, &sel, &dir.path().join("a.pb.gz")).unwrap();
    write_pprof(&run, &sel, &dir.path().join("a.pb")).unwrap();
    let gz = std::fs::read(dir.path().join("a.pb.gz")).unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b]);
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
    assert_eq!(plain, std::fs::read(dir.path().join("a.pb")).unwrap());
    assert_eq!(Profile::decode(&plain[..]).unwrap(), pprof_profile(&run, &sel).unwrap());
}

#[test]
fn several_ranks_get_a_rank_frame() {
    for (name, lane) in [("single", ""), ("threads", "MainThread;")] {
        let mut run = reference(name);
        let mut r1 = run.regions.clone();
        for r in &mut r1 {
            r.rank = 1;
        }
        let mut t1 = run.threads.clone();
        for t in &mut t1 {
            t.rank = 1;
        }
        run.regions.extend(r1);
        run.threads.extend(t1);
        run.num_ranks = 2;
        let p = pprof_profile(&run, &Selection::new(vec![0, 1], "two")).unwrap();
        let (_, stacks) = top(&p);
        let want = format!("rank 1;{lane}scope_profiler.session ");
        assert!(stacks.iter().any(|s| s.starts_with(&want)), "{stacks:?}");
        assert!(!stacks.iter().any(|s| s.starts_with("rank 1;rank 1")), "{stacks:?}");
    }
}

#[test]
fn errors() {
    let run = reference("single");
    let none = Selection::new(vec![0], "x").with_regions(vec!["nope".into()]);
    assert_eq!(pprof_profile(&run, &none), Err(ExportError::NoCalls));
}

#[test]
fn golden_stacks() {
    for name in ["async", "threads"] {
        let run = reference(name);
        let p = pprof_profile(&run, &Selection::new(vec![0], name)).unwrap();
        insta::assert_snapshot!(format!("{name}_stacks"), top(&p).1.join("\n"));
        write_pprof(&run, &Selection::new(vec![0], name), &out_dir().join(format!("{name}.pb.gz"))).unwrap();
    }
}
