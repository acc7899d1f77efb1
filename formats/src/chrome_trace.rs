//! Chrome Trace Event JSON export (`spec-exports.md` §4), for Perfetto, chrome://tracing,
//! the DevTools Performance panel and speedscope's trace-event importer.
//!
//! Document: `{"displayTimeUnit":"ms","metadata":{"name":label,"exporter":EXPORTER},
//! "traceEvents":[...]}`, compact separators. Per selected rank (`pid` = rank):
//! * `process_name` (`"rank R"`) and `process_sort_index` metadata;
//! * one track (`tid`) per lane with calls, numbered from 0 in the export lane order (main
//!   thread first, then the unknown lane, then tasks ascending), each with `thread_name`
//!   (the lane label: `"MainThread"`, `"Task-2 (fetch) on MainThread"`, `"rank R"` for
//!   lane -1) and `thread_sort_index` metadata; thread lanes carry `lane`, `thread_index`
//!   and (when in the table) `native_id`, `ident`, `cpu_time_s`; task lanes `lane`,
//!   `task_index` in the metadata args;
//! * one complete `"X"` event per call, depth-first per lane (non-decreasing `ts`):
//!   `{"name","cat":"scope-profiler","ph":"X","ts","dur","pid","tid"}` plus
//!   `"args":{"source_file","source_line"}` when the region has a source location.
//!
//! Differences from the reference: no per-call `args` (`call_index`, `call_id`,
//! `duration_s`, ... made every call a frame of its own in speedscope and defeated
//! aggregation; identical calls now share name and args); tasks and threads are ordered
//! main thread first; `ts`/`dur` are exact: integer ns printed as µs with three decimals
//! (`ts` from the run start `metadata.start_time_ns`, or from the earliest selected call
//! when the run has no start time).
use std::io::{self, Write};
use std::path::Path;

use scope_profiler_analysis::{LaneLabels, Run};

use crate::export_lanes::{lane_name, origin_ns, reconstruct, RankCalls};
use crate::export_output::{io_err, json_f64, json_str, write_atomic};
use crate::speedscope::EXPORTER;
use crate::{ExportError, Selection};

/// ns as µs with exactly three decimals (non-negative input).
fn micros(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// Write the Chrome trace of `sel` to `out` (see the module docs).
///
/// Errors: `Nesting`, `NoCalls`, `Io`.
pub fn write_chrome_trace_to(run: &Run, sel: &Selection, out: &mut dyn Write) -> Result<(), ExportError> {
    let run = sel.apply(run);
    let run: &Run = &run;
    let all = reconstruct(run, &sel.ranks)?;
    let mut trace = TraceWriter::new(run, origin_ns(run, &all), &sel.label, out).map_err(io)?;
    for rc in &all {
        trace.add(rc).map_err(io)?;
    }
    trace.write().map_err(io)
}

fn io(e: std::io::Error) -> ExportError {
    ExportError::Io(e.to_string())
}

/// Streams the document: the header on creation, each [`add`](Self::add)ed rank's
/// metadata and calls, the closing brackets on [`write`](Self::write).
struct TraceWriter<'r, 'w> {
    run: &'r Run,
    /// Time origin, ns on the recording clock.
    origin: i64,
    out: &'w mut dyn Write,
    /// No event written yet (no separator before the next).
    first: bool,
}

impl<'r, 'w> TraceWriter<'r, 'w> {
    fn new(run: &'r Run, origin: i64, label: &str, out: &'w mut dyn Write) -> io::Result<Self> {
        write!(
            out,
            "{{\"displayTimeUnit\":\"ms\",\"metadata\":{{\"name\":{},\"exporter\":{}}},\"traceEvents\":[",
            json_str(label),
            json_str(EXPORTER)
        )?;
        Ok(TraceWriter { run, origin, out, first: true })
    }

    /// One element of `traceEvents`.
    fn event(&mut self, e: std::fmt::Arguments<'_>) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        self.out.write_fmt(e)
    }

    /// The process and lane metadata and the `"X"` events of one rank (nothing without calls).
    fn add(&mut self, rc: &RankCalls) -> io::Result<()> {
        if rc.calls.is_empty() {
            return Ok(());
        }
        let pid = rc.rank;
        let name = json_str(&self.run.rank_label(pid));
        self.event(format_args!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{name}}}}}"
        ))?;
        self.event(format_args!(
            "{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"sort_index\":{pid}}}}}"
        ))?;
        let labels = LaneLabels::new(self.run, rc.rank);
        for (tid, (lane, _)) in rc.lanes.iter().enumerate() {
            let args = self.lane_args(&labels, rc.rank, *lane);
            self.event(format_args!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{args}}}"
            ))?;
            self.event(format_args!(
                "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}}"
            ))?;
        }
        self.calls(rc)
    }

    /// `args` of a lane's `thread_name` metadata: its name and what the lane is.
    fn lane_args(&self, labels: &LaneLabels<'_>, rank: u32, lane: i64) -> String {
        let mut args = format!("{{\"name\":{}", json_str(&lane_name(labels, rank, lane)));
        if lane >= 0 {
            args.push_str(&format!(",\"lane\":\"async task\",\"task_index\":{lane}"));
        } else if lane <= -2 {
            let index = -2 - lane;
            args.push_str(&format!(",\"lane\":\"thread\",\"thread_index\":{index}"));
            if let Some(t) = self.run.rank_threads(rank).find(|t| t.index == index) {
                args.push_str(&format!(
                    ",\"native_id\":{},\"ident\":{},\"cpu_time_s\":{}",
                    t.native_id,
                    t.ident,
                    json_f64(t.cpu_ns as f64 / 1e9)
                ));
            }
        } else {
            args.push_str(",\"lane\":\"rank\"");
        }
        args.push('}');
        args
    }

    /// One `"X"` event per call of `rc`, lane by lane (`tid` = lane position).
    fn calls(&mut self, rc: &RankCalls) -> io::Result<()> {
        // per-row constant parts: name and args
        let heads: Vec<(String, String)> = rc
            .rows
            .iter()
            .map(|&row| {
                let r = &self.run.regions[row];
                let name = self.run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("?");
                let args = match (&r.source_file, r.source_line) {
                    (Some(f), Some(l)) if !f.is_empty() => {
                        format!(",\"args\":{{\"source_file\":{},\"source_line\":{l}}}", json_str(f))
                    }
                    _ => String::new(),
                };
                (json_str(name), args)
            })
            .collect();
        let (c, pid) = (&rc.calls, rc.rank);
        for (tid, (_, ids)) in rc.lanes.iter().enumerate() {
            for &i in ids {
                let (name, args) = &heads[c.region_index[i] as usize];
                self.event(format_args!(
                    "{{\"name\":{name},\"cat\":\"scope-profiler\",\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{tid}{args}}}",
                    micros(c.start_ns[i] - self.origin),
                    micros(c.end_ns[i] - c.start_ns[i]),
                ))?;
            }
        }
        Ok(())
    }

    fn write(self) -> io::Result<()> {
        self.out.write_all(b"]}\n")
    }
}

/// Write the Chrome trace of `sel` to `path` atomically (parent directories created).
///
/// Errors: `Nesting`, `NoCalls`, `Io` naming the path.
pub fn write_chrome_trace(run: &Run, sel: &Selection, path: &Path) -> Result<(), ExportError> {
    write_atomic(path, |w| {
        write_chrome_trace_to(run, sel, w).map_err(|e| match e {
            ExportError::Io(m) => io_err(path)(std::io::Error::other(m)),
            e => e,
        })
    })
}
