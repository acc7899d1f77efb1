//! Perfetto protobuf trace export (`.pftrace`), loadable by ui.perfetto.dev and
//! trace_processor.
//!
//! Layout (one packet sequence, `trusted_packet_sequence_id` 1):
//! * the first packet clears the incremental state and interns every region name (plus
//!   `"awaiting"`) as `InternedData.event_names`; slices refer to names by `name_iid`;
//! * per selected rank a process track (`ProcessDescriptor` pid `rank + 1`, name
//!   `"rank R"`, children ordered explicitly), per thread lane a thread track
//!   (`ThreadDescriptor` pid, tid `(rank + 1) * 100000 + thread index + 1`, name = the
//!   thread name; lane -1 gets tid `(rank + 1) * 100000` and name `"rank R"`), per task lane
//!   a named track (`"Task-2 (fetch) on MainThread"`) parented to the thread track the task
//!   ran on (to the process track when unknown). Tracks are ordered main thread first;
//! * per lane, a `TYPE_SLICE_BEGIN` / `TYPE_SLICE_END` pair per call, depth first, so
//!   slices nest exactly like the reconstructed calls. Timestamps are ns since the run start
//!   (`metadata.start_time_ns`, or the earliest selected call). A call with await time
//!   carries a debug annotation `await_ns`.
//!
//! **Await periods.** The recorder keeps only each call's total suspended time
//! (`await_ns`), not when the suspensions happened. The suspended time of a call that is not
//! inside one of its children, `own = await_ns − Σ children's await_ns`, necessarily lies in
//! the call's *self-time gaps* (between its start, its children and its end). It is shown as
//! child slices named `"awaiting"` of total length `own` (clamped to the gaps' total),
//! filling the call's gaps from its end backwards (the placement inside the gaps is a
//! convention, the amount is exact). So per task track, Σ `"awaiting"` = Σ `await_ns` of the
//! lane's root calls, and a call's self time minus its awaiting children is time it ran.
use std::collections::HashMap;
use std::path::Path;

use scope_profiler_analysis::{LaneLabels, Run};

use crate::export_common::{io_err, lane_name, origin_ns, reconstruct, write_atomic};
use crate::{ExportError, Selection};

/// The subset of Perfetto's `perfetto_trace.proto` this writer emits (field numbers as
/// upstream).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<TracePacket>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacket {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        #[prost(message, optional, tag = "11")]
        pub track_event: Option<TrackEvent>,
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<InternedData>,
        #[prost(uint32, optional, tag = "13")]
        pub sequence_flags: Option<u32>,
        #[prost(message, optional, tag = "60")]
        pub track_descriptor: Option<TrackDescriptor>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackDescriptor {
        #[prost(uint64, optional, tag = "1")]
        pub uuid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub process: Option<ProcessDescriptor>,
        #[prost(message, optional, tag = "4")]
        pub thread: Option<ThreadDescriptor>,
        #[prost(uint64, optional, tag = "5")]
        pub parent_uuid: Option<u64>,
        /// `ChildTracksOrdering`: 3 = EXPLICIT (children by `sibling_order_rank`).
        #[prost(int32, optional, tag = "11")]
        pub child_ordering: Option<i32>,
        #[prost(int32, optional, tag = "12")]
        pub sibling_order_rank: Option<i32>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProcessDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, optional, tag = "6")]
        pub process_name: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ThreadDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(int64, optional, tag = "2")]
        pub tid: Option<i64>,
        #[prost(string, optional, tag = "5")]
        pub thread_name: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackEvent {
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        /// 1 = TYPE_SLICE_BEGIN, 2 = TYPE_SLICE_END.
        #[prost(int32, optional, tag = "9")]
        pub r#type: Option<i32>,
        #[prost(uint64, optional, tag = "10")]
        pub name_iid: Option<u64>,
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        #[prost(int64, optional, tag = "4")]
        pub int_value: Option<i64>,
        #[prost(string, optional, tag = "6")]
        pub string_value: Option<String>,
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InternedData {
        #[prost(message, repeated, tag = "2")]
        pub event_names: Vec<EventName>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct EventName {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
    }
}

use proto::*;

const SEQ: u32 = 1;
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;
const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
/// Name of the await child slices.
pub const AWAITING: &str = "awaiting";

fn track_packet(d: TrackDescriptor) -> TracePacket {
    TracePacket { trusted_packet_sequence_id: Some(SEQ), track_descriptor: Some(d), ..Default::default() }
}

fn event(ts: i64, track: u64, kind: i32, name_iid: Option<u64>, annotations: Vec<DebugAnnotation>) -> TracePacket {
    TracePacket {
        timestamp: Some(ts.max(0) as u64),
        trusted_packet_sequence_id: Some(SEQ),
        sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
        track_event: Some(TrackEvent {
            r#type: Some(kind),
            track_uuid: Some(track),
            name_iid,
            debug_annotations: annotations,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An open call while a lane is walked: (call id, its await pieces, next piece to emit).
type OpenCall = (usize, Vec<(i64, i64)>, usize);

/// Await child pieces of one call: `own` ns placed in `gaps` (ascending, disjoint) from the
/// end backwards; returned ascending.
fn await_pieces(gaps: &[(i64, i64)], own: i64) -> Vec<(i64, i64)> {
    let mut left = own;
    let mut out = Vec::new();
    for &(s, e) in gaps.iter().rev() {
        if left <= 0 {
            break;
        }
        let take = left.min(e - s);
        if take > 0 {
            out.push((e - take, e));
            left -= take;
        }
    }
    out.reverse();
    out
}

/// The trace of `sel` as a message (see the module docs).
///
/// Errors: `Nesting`, `NoCalls`.
pub fn perfetto_trace(run: &Run, sel: &Selection) -> Result<Trace, ExportError> {
    let mut packet = Vec::new();
    emit_packets(run, sel, &mut |ps| {
        packet.extend_from_slice(ps);
        Ok(())
    })?;
    Ok(Trace { packet })
}

/// Packets are handed to `sink` in batches of this many, so a large run is streamed to the
/// file instead of being held as one message.
const BATCH: usize = 4096;

/// Build the trace of `sel` and hand its packets, in order, to `sink` in batches.
fn emit_packets(
    run: &Run,
    sel: &Selection,
    sink: &mut dyn FnMut(&[TracePacket]) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let origin = origin_ns(run, &all);

    // interned names: region names in first-use order, then "awaiting"
    let mut iid_of: HashMap<String, u64> = HashMap::new();
    let mut names: Vec<EventName> = Vec::new();
    fn intern(n: &str, iid_of: &mut HashMap<String, u64>, names: &mut Vec<EventName>) -> u64 {
        if let Some(&i) = iid_of.get(n) {
            return i;
        }
        let i = names.len() as u64 + 1;
        names.push(EventName { iid: Some(i), name: Some(n.to_string()) });
        iid_of.insert(n.to_string(), i);
        i
    }
    let row_iids: Vec<Vec<u64>> = all
        .iter()
        .map(|rc| {
            rc.rows
                .iter()
                .map(|&row| {
                    let r = &run.regions[row];
                    let name = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?");
                    intern(name, &mut iid_of, &mut names)
                })
                .collect()
        })
        .collect();
    let await_iid = intern(AWAITING, &mut iid_of, &mut names);

    let mut packets = vec![TracePacket {
        trusted_packet_sequence_id: Some(SEQ),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        interned_data: Some(InternedData { event_names: names }),
        ..Default::default()
    }];

    for (rc, iids) in all.iter().zip(&row_iids) {
        if rc.calls.is_empty() {
            continue;
        }
        let labels = LaneLabels::new(run, rc.rank);
        let pid = rc.rank as i32 + 1;
        let base = (rc.rank as u64 + 1) << 32;
        let process_uuid = base;
        packets.push(track_packet(TrackDescriptor {
            uuid: Some(process_uuid),
            process: Some(ProcessDescriptor { pid: Some(pid), process_name: Some(format!("rank {}", rc.rank)) }),
            child_ordering: Some(3),
            ..Default::default()
        }));
        let tid_base = (rc.rank as i64 + 1) * 100_000;
        let thread_uuid = |index: i64| base + 1 + (index as u64 + 1);
        let mut declared: Vec<u64> = Vec::new();
        let mut order = 0i32;
        let mut declare_thread = |index: i64, packets: &mut Vec<TracePacket>, declared: &mut Vec<u64>| -> u64 {
            // index -1: the unknown lane
            let uuid = if index < 0 { base + 1 } else { thread_uuid(index) };
            if !declared.contains(&uuid) {
                declared.push(uuid);
                let name = if index < 0 { format!("rank {}", rc.rank) } else { labels.label(-2 - index) };
                packets.push(track_packet(TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(process_uuid),
                    thread: Some(ThreadDescriptor {
                        pid: Some(pid),
                        tid: Some(tid_base + if index < 0 { 0 } else { index + 1 }),
                        thread_name: Some(name),
                    }),
                    sibling_order_rank: Some(order),
                    ..Default::default()
                }));
                order += 1;
            }
            uuid
        };
        // lane -> track uuid
        let mut lane_track: Vec<u64> = Vec::with_capacity(rc.lanes.len());
        for (lane, _) in &rc.lanes {
            let uuid = if *lane <= -2 {
                declare_thread(-2 - lane, &mut packets, &mut declared)
            } else if *lane == -1 {
                declare_thread(-1, &mut packets, &mut declared)
            } else {
                let parent = match run.rank_tasks(rc.rank).find(|t| t.index == *lane) {
                    Some(t) if t.thread_index >= 0 => declare_thread(t.thread_index, &mut packets, &mut declared),
                    _ => process_uuid,
                };
                let uuid = base + (1 << 31) + *lane as u64;
                packets.push(track_packet(TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(parent),
                    name: Some(lane_name(&labels, rc.rank, *lane)),
                    // after every thread track (UIs that list tasks beside their thread)
                    sibling_order_rank: Some(1_000_000 + (*lane).min(i32::MAX as i64 - 1_000_000) as i32),
                    ..Default::default()
                }));
                uuid
            };
            lane_track.push(uuid);
        }

        // direct children per call (ids ascending = start order)
        let c = &rc.calls;
        let mut first_child = vec![usize::MAX; c.len()];
        let mut next_sibling = vec![usize::MAX; c.len()];
        let mut last_child = vec![usize::MAX; c.len()];
        for i in 0..c.len() {
            let p = c.parent[i];
            if p >= 0 {
                let p = p as usize;
                if first_child[p] == usize::MAX {
                    first_child[p] = i;
                } else {
                    next_sibling[last_child[p]] = i;
                }
                last_child[p] = i;
            }
        }
        let children = |i: usize| {
            let mut v = Vec::new();
            let mut k = first_child[i];
            while k != usize::MAX {
                v.push(k);
                k = next_sibling[k];
            }
            v
        };

        for ((_, ids), &track) in rc.lanes.iter().zip(&lane_track) {
            // stack of (call, its await pieces, next piece)
            let mut stack: Vec<OpenCall> = Vec::new();
            let flush = |entry: &mut OpenCall, until: i64, packets: &mut Vec<TracePacket>| {
                while entry.2 < entry.1.len() && entry.1[entry.2].0 < until {
                    let (s, e) = entry.1[entry.2];
                    packets.push(event(s - origin, track, SLICE_BEGIN, Some(await_iid), vec![]));
                    packets.push(event(e - origin, track, SLICE_END, None, vec![]));
                    entry.2 += 1;
                }
            };
            let close = |entry: &mut OpenCall, packets: &mut Vec<TracePacket>| {
                flush(entry, i64::MAX, packets);
                packets.push(event(c.end_ns[entry.0] - origin, track, SLICE_END, None, vec![]));
            };
            for &i in ids {
                let p = c.parent[i];
                while let Some(top) = stack.last_mut() {
                    if p >= 0 && top.0 == p as usize {
                        break;
                    }
                    let mut e = stack.pop().expect("non-empty");
                    close(&mut e, &mut packets);
                }
                if let Some(top) = stack.last_mut() {
                    flush(top, c.start_ns[i], &mut packets);
                }
                let await_ns = rc.await_ns(run, i);
                let mut pieces = Vec::new();
                let mut ann = Vec::new();
                if await_ns > 0 {
                    ann.push(DebugAnnotation {
                        name: Some("await_ns".into()),
                        int_value: Some(await_ns),
                        ..Default::default()
                    });
                    let kids = children(i);
                    let own = await_ns - kids.iter().map(|&k| rc.await_ns(run, k)).sum::<i64>();
                    if own > 0 {
                        let mut gaps = Vec::with_capacity(kids.len() + 1);
                        let mut t = c.start_ns[i];
                        for &k in &kids {
                            gaps.push((t, c.start_ns[k].max(t)));
                            t = t.max(c.end_ns[k]);
                        }
                        gaps.push((t, c.end_ns[i].max(t)));
                        pieces = await_pieces(&gaps, own);
                    }
                }
                packets.push(event(
                    c.start_ns[i] - origin,
                    track,
                    SLICE_BEGIN,
                    Some(iids[c.region_index[i] as usize]),
                    ann,
                ));
                stack.push((i, pieces, 0));
                if packets.len() >= BATCH {
                    sink(&packets)?;
                    packets.clear();
                }
            }
            while let Some(mut e) = stack.pop() {
                close(&mut e, &mut packets);
            }
        }
    }
    sink(&packets)
}

/// Write the Perfetto trace of `sel` to `path` atomically (parent directories created).
///
/// Errors: `Nesting`, `NoCalls`, `Io` naming the path.
/// Packets are streamed (each encoded as `Trace.packet`, field 1), so memory stays
/// proportional to the reconstructed calls, not to the file.
pub fn write_perfetto(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_atomic(path, |w| {
        let mut buf = Vec::with_capacity(256);
        emit_packets(run, sel, &mut |ps| {
            for p in ps {
                buf.clear();
                prost::encoding::message::encode(1, p, &mut buf);
                w.write_all(&buf).map_err(io_err(path))?;
            }
            Ok(())
        })
    })
}
