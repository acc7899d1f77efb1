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

use scope_profiler_analysis::{CallArrays, LaneLabels, Run};

use crate::export_lanes::{lane_name, origin_ns, reconstruct, RankCalls};
use crate::export_output::{io_err, write_atomic};
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

/// Where packets go, in order, in batches.
type Sink<'s> = &'s mut dyn FnMut(&[TracePacket]) -> Result<(), ExportError>;

/// Build the trace of `sel` and hand its packets, in order, to `sink` in batches.
fn emit_packets(run: &Run, sel: &Selection, sink: Sink<'_>) -> Result<(), ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let mut names = Names::default();
    let row_iids: Vec<Vec<u64>> = all.iter().map(|rc| names.add_rows(run, rc)).collect();
    let mut trace = PacketStream::new(run, origin_ns(run, &all), names, sink);
    for (rc, iids) in all.iter().zip(&row_iids) {
        trace.add(rc, iids)?;
    }
    trace.write()
}

/// Interned event names: region names in first-use order, then [`AWAITING`].
#[derive(Default)]
struct Names {
    iid_of: HashMap<String, u64>,
    list: Vec<EventName>,
}

impl Names {
    /// iid of `n`, interned on first use (iids from 1).
    fn add(&mut self, n: &str) -> u64 {
        if let Some(&i) = self.iid_of.get(n) {
            return i;
        }
        let i = self.list.len() as u64 + 1;
        self.list.push(EventName { iid: Some(i), name: Some(n.to_string()) });
        self.iid_of.insert(n.to_string(), i);
        i
    }

    /// iid of the region name of each row of `rc`.
    fn add_rows(&mut self, run: &Run, rc: &RankCalls) -> Vec<u64> {
        rc.rows
            .iter()
            .map(|&row| {
                let r = &run.regions[row];
                self.add(run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?"))
            })
            .collect()
    }
}

/// The track descriptors of one rank: its process track, then thread and task tracks as its
/// lanes need them (each thread track declared once, in order of first need).
struct RankTracks<'a> {
    rank: u32,
    labels: LaneLabels<'a>,
    /// Process track uuid; thread and task uuids are offsets from it.
    base: u64,
    declared: Vec<u64>,
    order: i32,
}

impl<'a> RankTracks<'a> {
    fn new(run: &'a Run, rank: u32, packets: &mut Vec<TracePacket>) -> Self {
        let base = (rank as u64 + 1) << 32;
        packets.push(track_packet(TrackDescriptor {
            uuid: Some(base),
            process: Some(ProcessDescriptor { pid: Some(rank as i32 + 1), process_name: Some(run.rank_label(rank)) }),
            child_ordering: Some(3),
            ..Default::default()
        }));
        RankTracks { rank, labels: LaneLabels::new(run, rank), base, declared: Vec::new(), order: 0 }
    }

    /// Track uuid of `lane`, declaring the tracks it needs.
    fn lane(&mut self, run: &Run, lane: i64, packets: &mut Vec<TracePacket>) -> u64 {
        if lane <= -2 {
            return self.thread(-2 - lane, packets);
        }
        if lane == -1 {
            return self.thread(-1, packets);
        }
        let parent = match run.rank_tasks(self.rank).find(|t| t.index == lane) {
            Some(t) if t.thread_index >= 0 => self.thread(t.thread_index, packets),
            _ => self.base,
        };
        let uuid = self.base + (1 << 31) + lane as u64;
        packets.push(track_packet(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(parent),
            name: Some(lane_name(&self.labels, self.rank, lane)),
            // after every thread track (UIs that list tasks beside their thread)
            sibling_order_rank: Some(1_000_000 + lane.min(i32::MAX as i64 - 1_000_000) as i32),
            ..Default::default()
        }));
        uuid
    }

    /// Track uuid of thread `index` (-1: the unknown lane), declared on first use.
    fn thread(&mut self, index: i64, packets: &mut Vec<TracePacket>) -> u64 {
        let uuid = if index < 0 { self.base + 1 } else { self.base + 1 + (index as u64 + 1) };
        if self.declared.contains(&uuid) {
            return uuid;
        }
        self.declared.push(uuid);
        let name = if index < 0 { format!("rank {}", self.rank) } else { self.labels.label(-2 - index) };
        let pid = self.rank as i32 + 1;
        let tid = (self.rank as i64 + 1) * 100_000 + if index < 0 { 0 } else { index + 1 };
        packets.push(track_packet(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(self.base),
            thread: Some(ThreadDescriptor { pid: Some(pid), tid: Some(tid), thread_name: Some(name) }),
            sibling_order_rank: Some(self.order),
            ..Default::default()
        }));
        self.order += 1;
        uuid
    }
}

/// Direct children per call (ids ascending = start order), as linked lists.
struct Children {
    first: Vec<usize>,
    next: Vec<usize>,
}

impl Children {
    fn new(c: &CallArrays) -> Self {
        let mut first = vec![usize::MAX; c.len()];
        let mut next = vec![usize::MAX; c.len()];
        let mut last = vec![usize::MAX; c.len()];
        for i in 0..c.len() {
            let p = c.parent[i];
            if p >= 0 {
                let p = p as usize;
                if first[p] == usize::MAX {
                    first[p] = i;
                } else {
                    next[last[p]] = i;
                }
                last[p] = i;
            }
        }
        Children { first, next }
    }

    fn of(&self, i: usize) -> Vec<usize> {
        let mut v = Vec::new();
        let mut k = self.first[i];
        while k != usize::MAX {
            v.push(k);
            k = self.next[k];
        }
        v
    }
}

/// The `await_ns` annotation of call `i` and its await pieces (see the module docs), both
/// empty without await time.
fn await_of_call(run: &Run, rc: &RankCalls, children: &Children, i: usize) -> (Vec<DebugAnnotation>, Vec<(i64, i64)>) {
    let await_ns = rc.await_ns(run, i);
    if await_ns <= 0 {
        return (Vec::new(), Vec::new());
    }
    let ann = vec![DebugAnnotation { name: Some("await_ns".into()), int_value: Some(await_ns), ..Default::default() }];
    let c = &rc.calls;
    let kids = children.of(i);
    let own = await_ns - kids.iter().map(|&k| rc.await_ns(run, k)).sum::<i64>();
    if own <= 0 {
        return (ann, Vec::new());
    }
    let mut gaps = Vec::with_capacity(kids.len() + 1);
    let mut t = c.start_ns[i];
    for &k in &kids {
        gaps.push((t, c.start_ns[k].max(t)));
        t = t.max(c.end_ns[k]);
    }
    gaps.push((t, c.end_ns[i].max(t)));
    (ann, await_pieces(&gaps, own))
}

/// The packet sequence: the interned names first, then each [`add`](Self::add)ed rank's
/// tracks and slices; handed to the sink in batches of [`BATCH`].
struct PacketStream<'r, 's> {
    run: &'r Run,
    /// Time origin, ns on the recording clock.
    origin: i64,
    await_iid: u64,
    packets: Vec<TracePacket>,
    sink: Sink<'s>,
}

impl<'r, 's> PacketStream<'r, 's> {
    fn new(run: &'r Run, origin: i64, mut names: Names, sink: Sink<'s>) -> Self {
        let await_iid = names.add(AWAITING);
        let packets = vec![TracePacket {
            trusted_packet_sequence_id: Some(SEQ),
            sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
            interned_data: Some(InternedData { event_names: names.list }),
            ..Default::default()
        }];
        PacketStream { run, origin, await_iid, packets, sink }
    }

    /// The tracks and slices of one rank; `iids` is the name iid of each of its rows.
    fn add(&mut self, rc: &RankCalls, iids: &[u64]) -> Result<(), ExportError> {
        if rc.calls.is_empty() {
            return Ok(());
        }
        let mut tracks = RankTracks::new(self.run, rc.rank, &mut self.packets);
        let lane_track: Vec<u64> =
            rc.lanes.iter().map(|(lane, _)| tracks.lane(self.run, *lane, &mut self.packets)).collect();
        let children = Children::new(&rc.calls);
        for ((_, ids), &track) in rc.lanes.iter().zip(&lane_track) {
            self.add_lane(rc, iids, &children, track, ids)?;
        }
        Ok(())
    }

    /// Slices of one lane's calls `ids`, depth first, on `track`.
    fn add_lane(
        &mut self,
        rc: &RankCalls,
        iids: &[u64],
        children: &Children,
        track: u64,
        ids: &[usize],
    ) -> Result<(), ExportError> {
        let c = &rc.calls;
        let mut stack: Vec<OpenCall> = Vec::new();
        for &i in ids {
            let p = c.parent[i];
            while let Some(top) = stack.last_mut() {
                if p >= 0 && top.0 == p as usize {
                    break;
                }
                let mut e = stack.pop().expect("non-empty");
                self.close(&mut e, c, track);
            }
            if let Some(top) = stack.last_mut() {
                self.flush(top, c.start_ns[i], track);
            }
            let (ann, pieces) = await_of_call(self.run, rc, children, i);
            let name = Some(iids[c.region_index[i] as usize]);
            self.packets.push(event(c.start_ns[i] - self.origin, track, SLICE_BEGIN, name, ann));
            stack.push((i, pieces, 0));
            if self.packets.len() >= BATCH {
                (self.sink)(&self.packets)?;
                self.packets.clear();
            }
        }
        while let Some(mut e) = stack.pop() {
            self.close(&mut e, c, track);
        }
        Ok(())
    }

    /// The await pieces of `entry` that start before `until`.
    fn flush(&mut self, entry: &mut OpenCall, until: i64, track: u64) {
        while entry.2 < entry.1.len() && entry.1[entry.2].0 < until {
            let (s, e) = entry.1[entry.2];
            self.packets.push(event(s - self.origin, track, SLICE_BEGIN, Some(self.await_iid), vec![]));
            self.packets.push(event(e - self.origin, track, SLICE_END, None, vec![]));
            entry.2 += 1;
        }
    }

    /// The remaining await pieces of `entry`, then its end.
    fn close(&mut self, entry: &mut OpenCall, c: &CallArrays, track: u64) {
        self.flush(entry, i64::MAX, track);
        self.packets.push(event(c.end_ns[entry.0] - self.origin, track, SLICE_END, None, vec![]));
    }

    /// Hand the remaining packets to the sink.
    fn write(self) -> Result<(), ExportError> {
        (self.sink)(&self.packets)
    }
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
