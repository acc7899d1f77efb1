//! Perfetto protobuf export: decoded with the writer's own prost structs and replayed as
//! Perfetto does (tracks, interned names, begin/end per track); totals against the
//! reconstruction; await slices; golden dump.
mod export_support;

use std::collections::{BTreeMap, HashMap};

use export_support::*;
use prost::Message;
use scope_profiler_formats::perfetto::proto::Trace;
use scope_profiler_formats::perfetto::{perfetto_trace, write_perfetto, AWAITING};
use scope_profiler_formats::{ExportError, Selection};

struct Replayed {
    /// track uuid -> name
    tracks: BTreeMap<u64, String>,
    parents: HashMap<u64, u64>,
    /// track name -> slice name -> (count, Σ ns)
    totals: BTreeMap<String, BTreeMap<String, (i64, i64)>>,
    dump: String,
}

fn replay(t: &Trace) -> Replayed {
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut r =
        Replayed { tracks: BTreeMap::new(), parents: HashMap::new(), totals: BTreeMap::new(), dump: String::new() };
    let mut stacks: HashMap<u64, Vec<(String, u64)>> = HashMap::new();
    let mut last: HashMap<u64, u64> = HashMap::new();
    for p in &t.packet {
        assert_eq!(p.trusted_packet_sequence_id, Some(1));
        if let Some(i) = &p.interned_data {
            for n in &i.event_names {
                names.insert(n.iid.unwrap(), n.name.clone().unwrap());
            }
        }
        if let Some(d) = &p.track_descriptor {
            let name = d
                .thread
                .as_ref()
                .and_then(|t| t.thread_name.clone())
                .or_else(|| d.process.as_ref().and_then(|p| p.process_name.clone()))
                .or_else(|| d.name.clone())
                .unwrap();
            if let Some(parent) = d.parent_uuid {
                assert!(r.tracks.contains_key(&parent), "parent declared first");
                r.parents.insert(d.uuid.unwrap(), parent);
            }
            r.dump += &format!("track {} {:?}\n", name, d.thread.as_ref().map(|t| (t.pid, t.tid)));
            assert!(r.tracks.insert(d.uuid.unwrap(), name).is_none());
        }
        if let Some(e) = &p.track_event {
            let track = e.track_uuid.unwrap();
            let tname = r.tracks[&track].clone();
            let ts = p.timestamp.unwrap();
            assert!(ts >= *last.get(&track).unwrap_or(&0), "monotonic per track");
            last.insert(track, ts);
            let st = stacks.entry(track).or_default();
            match e.r#type {
                Some(1) => {
                    let n = names[&e.name_iid.unwrap()].clone();
                    r.dump += &format!("{}{} B {} {}\n", "  ".repeat(st.len() + 1), ts, n, tname);
                    st.push((n, ts));
                }
                Some(2) => {
                    let (n, b) = st.pop().expect("balanced");
                    r.dump += &format!("{}{} E {}\n", "  ".repeat(st.len() + 1), ts, n);
                    let t = r.totals.entry(tname).or_default().entry(n).or_default();
                    t.0 += 1;
                    t.1 += (ts - b) as i64;
                }
                other => panic!("type {other:?}"),
            }
        }
    }
    assert!(stacks.values().all(|s| s.is_empty()), "every slice ended");
    r
}

#[test]
fn tracks_and_totals_match_the_reconstruction() {
    for name in ["threads", "async", "single", "pool"] {
        let run = reference(name);
        let t = perfetto_trace(&run, &Selection::new(vec![0], name)).unwrap();
        // round trip through the wire format
        let t = Trace::decode(&t.encode_to_vec()[..]).unwrap();
        let r = replay(&t);
        let totals = lane_totals(&run, 0);
        let labels = scope_profiler_analysis::LaneLabels::new(&run, 0);
        for (lane, names) in &totals.by_name {
            let lname = if *lane == -1 { "rank 0".to_string() } else { labels.label(*lane) };
            let mut got = r.totals[&lname].clone();
            let aw = got.remove(AWAITING);
            let want: BTreeMap<String, (i64, i64)> = names.iter().map(|(k, v)| (k.clone(), (v.0, v.1))).collect();
            assert_eq!(got, want, "{name} {lname}");
            // awaiting time on a lane = Σ await_ns of its root calls
            assert_eq!(
                aw.map(|a| a.1).unwrap_or(0),
                totals.root_await.get(lane).copied().unwrap_or(0),
                "{name} {lname}"
            );
        }
    }
}

#[test]
fn task_tracks_hang_off_their_thread() {
    let run = reference("async");
    let r = replay(&perfetto_trace(&run, &Selection::new(vec![0], "async")).unwrap());
    let main = *r.tracks.iter().find(|(_, n)| *n == "MainThread").unwrap().0;
    let tasks: Vec<_> = r.tracks.iter().filter(|(_, n)| n.starts_with("Task-")).collect();
    assert_eq!(tasks.len(), 7);
    for (uuid, _) in tasks {
        assert_eq!(r.parents[uuid], main);
    }
    let aw: i64 = r.totals.values().filter_map(|m| m.get(AWAITING)).map(|a| a.1).sum();
    assert!(aw > 0, "await periods visible");
}

/// Await pieces sit in the call's self-time gaps, latest first, and never overlap children.
#[test]
fn await_pieces_fill_gaps_from_the_end() {
    // task 0: t [0,100] (await 50) > c [10,20] (await 5), c [60,90] (await 0)
    // own await of t = 45: gaps [0,10],[20,60],[90,100] -> [90,100] (10) + [25,60] (35)
    let run = scope_profiler_analysis::Run {
        region_names: vec!["t".into(), "c".into()],
        regions: vec![
            lane_row(0, &[0], &[100], &[0], Some(&[0]), Some(&[50])),
            lane_row(1, &[10, 60], &[20, 90], &[0, 0], Some(&[0, 0]), Some(&[5, 0])),
        ],
        threads: vec![thread(0, "MainThread")],
        num_ranks: 1,
        ..Default::default()
    };
    let r = replay(&perfetto_trace(&run, &Selection::new(vec![0], "x")).unwrap());
    insta::assert_snapshot!("await_pieces", r.dump);
}

#[test]
fn streamed_file_equals_the_message() {
    let run = reference("threads");
    let sel = Selection::new(vec![0], "threads");
    let dir = tempfile::tempdir().unwrap();
    write_perfetto(&run, &sel, &dir.path().join("t.pftrace")).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("t.pftrace")).unwrap(),
        perfetto_trace(&run, &sel).unwrap().encode_to_vec()
    );
}

#[test]
fn errors() {
    let run = reference("single");
    let none = Selection::new(vec![0], "x").with_regions(vec!["nope".into()]);
    assert_eq!(perfetto_trace(&run, &none), Err(ExportError::NoCalls));
}

#[test]
fn golden_async() {
    let run = reference("async");
    let r = replay(&perfetto_trace(&run, &Selection::new(vec![0], "async")).unwrap());
    insta::assert_snapshot!("async_slices", r.dump);
    let out = out_dir();
    write_perfetto(&run, &Selection::new(vec![0], "async"), &out.join("async.pftrace")).unwrap();
    write_perfetto(&reference("threads"), &Selection::new(vec![0], "threads"), &out.join("threads.pftrace")).unwrap();
}
