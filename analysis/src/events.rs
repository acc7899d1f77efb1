//! The per-call events table: one row per call, the columns of `ProfilingResults.events()`.
//! (TEMPORARY home until the events helper's module lands.)
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_schema::{ArrowError, Field, Schema};

use crate::region_stats::secs;
use crate::run::{RegionCalls, Run};

/// One call per row for the region rows `rows` (positions in `run.regions`, in this order),
/// each row's calls in recorded order: `name, rank, call_index, start, end, duration`
/// (s, starts/ends minus `origin`), then when any selected row has them: `gpu_duration`
/// (rows whose GPU column holds no value >= 0 count as none), `call_id` + `parent_id`,
/// `thread`, `task` + `await_duration` (s) - the keys of `ProfilingResults.events()`;
/// rows lacking a column give nulls there.
pub fn events_batch(run: &Run, rows: &[usize], origin: f64) -> Result<RecordBatch, ArrowError> {
    for &r in rows {
        if r >= run.regions.len() {
            return Err(ArrowError::InvalidArgumentError(format!("row {r} out of range")));
        }
    }
    let sel: Vec<&RegionCalls> = rows.iter().map(|&r| &run.regions[r]).collect();
    let n: usize = sel.iter().map(|r| r.len()).sum();
    let gpu_of = |r: &RegionCalls| {
        r.gpu_ns.as_ref().filter(|g| g.values().iter().any(|&v| v >= 0)).cloned()
    };
    let ids_of = |r: &RegionCalls| match (&r.call_ids, &r.parent_ids) {
        (Some(c), Some(p)) => Some((c.to_array(), p.to_array())),
        _ => None,
    };
    let tasks_of = |r: &RegionCalls| match (&r.task_ids, &r.await_ns) {
        (Some(t), Some(a)) => Some((t.clone(), a.clone())),
        _ => None,
    };
    let mut name = StringBuilder::with_capacity(n, n * 8);
    let mut rank = Vec::with_capacity(n);
    let mut call_index = Vec::with_capacity(n);
    let mut start = Vec::with_capacity(n);
    let mut end = Vec::with_capacity(n);
    let mut duration = Vec::with_capacity(n);
    let any_gpu = sel.iter().any(|r| gpu_of(r).is_some());
    let any_ids = sel.iter().any(|r| ids_of(r).is_some());
    let any_thread = sel.iter().any(|r| r.thread_ids.is_some());
    let any_task = sel.iter().any(|r| tasks_of(r).is_some());
    let mut gpu: Vec<Option<f64>> = Vec::with_capacity(if any_gpu { n } else { 0 });
    let mut call_id: Vec<Option<i64>> = Vec::with_capacity(if any_ids { n } else { 0 });
    let mut parent_id: Vec<Option<i64>> = Vec::with_capacity(if any_ids { n } else { 0 });
    let mut thread: Vec<Option<i64>> = Vec::with_capacity(if any_thread { n } else { 0 });
    let mut task: Vec<Option<i64>> = Vec::with_capacity(if any_task { n } else { 0 });
    let mut await_s: Vec<Option<f64>> = Vec::with_capacity(if any_task { n } else { 0 });
    for r in &sel {
        let m = r.len();
        let nm = run.region_names.get(r.region as usize).map(String::as_str).unwrap_or("");
        for _ in 0..m {
            name.append_value(nm);
        }
        rank.extend(std::iter::repeat_n(r.rank as i64, m));
        call_index.extend(0..m as i64);
        for (&s, &e) in r.start_ns.values().iter().zip(r.end_ns.values().iter()) {
            let (a, b) = (secs(s) - origin, secs(e) - origin);
            start.push(a);
            end.push(b);
            duration.push(b - a);
        }
        if any_gpu {
            match gpu_of(r) {
                Some(g) => gpu.extend(g.values().iter().map(|&v| Some(secs(v)))),
                None => gpu.extend(std::iter::repeat_n(None, m)),
            }
        }
        if any_ids {
            match ids_of(r) {
                Some((c, p)) => {
                    call_id.extend(c.values().iter().map(|&v| Some(v)));
                    parent_id.extend(p.values().iter().map(|&v| Some(v)));
                }
                None => {
                    call_id.extend(std::iter::repeat_n(None, m));
                    parent_id.extend(std::iter::repeat_n(None, m));
                }
            }
        }
        if any_thread {
            match &r.thread_ids {
                Some(t) => thread.extend(t.values().iter().map(|&v| Some(v))),
                None => thread.extend(std::iter::repeat_n(None, m)),
            }
        }
        if any_task {
            match tasks_of(r) {
                Some((t, a)) => {
                    task.extend(t.values().iter().map(|&v| Some(v)));
                    await_s.extend(a.values().iter().map(|&v| Some(secs(v))));
                }
                None => {
                    task.extend(std::iter::repeat_n(None, m));
                    await_s.extend(std::iter::repeat_n(None, m));
                }
            }
        }
    }
    let mut cols: Vec<(&str, ArrayRef)> = vec![
        ("name", Arc::new(name.finish())),
        ("rank", Arc::new(Int64Array::from(rank))),
        ("call_index", Arc::new(Int64Array::from(call_index))),
        ("start", Arc::new(Float64Array::from(start))),
        ("end", Arc::new(Float64Array::from(end))),
        ("duration", Arc::new(Float64Array::from(duration))),
    ];
    if any_gpu {
        cols.push(("gpu_duration", Arc::new(Float64Array::from(gpu))));
    }
    if any_ids {
        cols.push(("call_id", Arc::new(Int64Array::from(call_id))));
        cols.push(("parent_id", Arc::new(Int64Array::from(parent_id))));
    }
    if any_thread {
        cols.push(("thread", Arc::new(Int64Array::from(thread))));
    }
    if any_task {
        cols.push(("task", Arc::new(Int64Array::from(task))));
        cols.push(("await_duration", Arc::new(Float64Array::from(await_s))));
    }
    let fields: Vec<Field> =
        cols.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), a.null_count() > 0)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols.into_iter().map(|(_, a)| a).collect())
}

