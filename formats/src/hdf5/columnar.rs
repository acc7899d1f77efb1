//! Schema-2/3 files: the shared event columns sliced per region row (zero copy), the
//! region index, and the thread and task tables.
use arrow_array::Int64Array;
use hdf5::Group;
use scope_profiler_analysis::{call_metadata, IdColumn, RegionCalls, Run, TaskRow, ThreadRow};

use super::read::Prefetched;
use super::typed::*;
use super::{py_repr, R};

/// An int64 column shared by all rows, sliced per row without copying.
pub(crate) fn shared(v: Vec<i64>) -> Int64Array {
    Int64Array::from(v)
}

/// Schema-3 decoding in place: within each row span `[lo, hi)`, `starts` (the start
/// deltas) becomes the running sum and `ends` (the durations) becomes `start + duration`.
/// Spans are disjoint (checked by the caller); rows are decoded in parallel.
/// Returns whether a row holds a negative duration (a call that ends before it starts: no
/// valid file has one).
fn decode_deltas(starts: &mut [i64], ends: &mut [i64], spans: &[(i128, i128)]) -> bool {
    use rayon::prelude::*;
    let mut order: Vec<(usize, usize)> =
        spans.iter().map(|&(lo, hi)| (lo as usize, hi as usize)).filter(|s| s.1 > s.0).collect();
    order.sort_unstable();
    // split both columns into the rows' disjoint sub-slices
    let mut parts: Vec<(&mut [i64], &mut [i64])> = Vec::with_capacity(order.len());
    let (mut rest_s, mut rest_e, mut at) = (starts, ends, 0usize);
    for (lo, hi) in order {
        let (_, s) = std::mem::take(&mut rest_s).split_at_mut(lo - at);
        let (_, e) = std::mem::take(&mut rest_e).split_at_mut(lo - at);
        let (row_s, s) = s.split_at_mut(hi - lo);
        let (row_e, e) = e.split_at_mut(hi - lo);
        parts.push((row_s, row_e));
        (rest_s, rest_e, at) = (s, e, hi);
    }
    let decode = |(s, e): (&mut [i64], &mut [i64])| {
        let mut acc = 0i64;
        let mut negative = false;
        for (x, d) in s.iter_mut().zip(e.iter_mut()) {
            acc = acc.wrapping_add(*x);
            *x = acc;
            negative |= *d < 0;
            *d = acc.wrapping_add(*d);
        }
        negative
    };
    scope_profiler_analysis::pool::install(|| parts.into_par_iter().map(decode).reduce(|| false, |a, b| a || b))
}

/// Whether a call in the rows `spans` of absolute `starts`/`ends` ends before it starts.
fn ends_before_start(starts: &[i64], ends: &[i64], spans: &[(i128, i128)]) -> bool {
    spans.iter().any(|&(lo, hi)| {
        let (lo, hi) = (lo as usize, hi as usize);
        starts[lo..hi].iter().zip(&ends[lo..hi]).any(|(s, e)| e < s)
    })
}

const IX: &str = "rank_region_index";

/// Read a schema-2/3 file's regions into `run` (`region_names` and `regions`), in steps:
/// the region index ([`RegionIndex::read`]), the event columns ([`EventColumns::read`],
/// validated against the index), then one [`RegionCalls`] per index row ([`region_row`]).
/// Columns already read ahead are taken from `prefetched`.
///
/// Errors: `Corrupt` naming the file and the missing, short or inconsistent column.
pub(crate) fn read_columnar(file: &hdf5::File, ctx: &Ctx, run: &mut Run, prefetched: &mut Prefetched) -> R<()> {
    for g in ["region_table", "rank_region_index", "events"] {
        if !has(file, g) {
            return Err(ctx.corrupt(format!(
                "is not a scope-profiler profile: it has no {g} group (a schema-2/3 file needs region_table, rank_region_index and events)."
            )));
        }
    }
    let names =
        dataset_strings(&file.group("region_table").map_err(ctx.h5("region_table"))?, "names", ctx, "region_table")?;
    let index = file.group("rank_region_index").map_err(ctx.h5("rank_region_index"))?;
    let events = file.group("events").map_err(ctx.h5("events"))?;
    let ix = RegionIndex::read(&index, ctx)?;
    let mut ev = EventColumns::read(&mut EventReader { events: &events, ctx, prefetched }, &ix)?;
    unique_names(&names, ctx)?;
    for r in 0..ix.region_ids.len() {
        run.regions.push(region_row(&ix, &mut ev, r, &names, ctx)?);
    }
    unique_rows(&run.regions, &names, ctx)?;
    run.region_names = names;
    Ok(())
}

/// `Corrupt` when `region_table/names` lists a name twice (rows of both would become one
/// region, and one of them would be lost).
fn unique_names(names: &[String], ctx: &Ctx) -> R<()> {
    let mut seen = std::collections::HashSet::with_capacity(names.len());
    match names.iter().find(|n| !seen.insert(n.as_str())) {
        Some(dup) => Err(ctx.corrupt(format!(
            "lists the region name {} twice in region_table/names. The file is damaged.",
            py_repr(dup)
        ))),
        None => Ok(()),
    }
}

/// `Corrupt` when two index rows are the same region on the same rank (one would hide the
/// other).
fn unique_rows(rows: &[RegionCalls], names: &[String], ctx: &Ctx) -> R<()> {
    let mut seen = std::collections::HashSet::with_capacity(rows.len());
    match rows.iter().find(|r| !seen.insert((r.region, r.rank))) {
        Some(r) => Err(ctx.corrupt(format!(
            "has two {IX} rows for region {} on rank {}. The file is damaged.",
            py_repr(&names[r.region as usize]),
            r.rank
        ))),
        None => Ok(()),
    }
}

/// `Corrupt` unless the index column `name` has a value for each of `rows` region rows.
fn need<T>(v: &[T], rows: usize, name: &str, ctx: &Ctx) -> R<()> {
    if v.len() < rows {
        return Err(ctx.corrupt(format!(
            "has {} values in {IX}/{name} for {rows} region rows. The file is truncated or damaged.",
            v.len()
        )));
    }
    Ok(())
}

/// The `rank_region_index` columns, one value per region row (checked on reading).
struct RegionIndex {
    region_ids: Vec<i64>,
    ranks: Vec<i64>,
    offsets: Vec<i64>,
    counts: Vec<i64>,
    source_lines: Vec<i64>,
    source_files: Vec<String>,
    source_texts: Vec<String>,
    tags: Vec<String>,
    event_metadata: Option<Vec<String>>,
    totals: Option<Vec<i64>>,
}

impl RegionIndex {
    fn read(index: &Group, ctx: &Ctx) -> R<Self> {
        let region_ids = dataset_ints(index, "region_ids", ctx, IX)?;
        let rows = region_ids.len();
        let ints = |name: &str| -> R<Vec<i64>> {
            let v = dataset_ints(index, name, ctx, IX)?;
            need(&v, rows, name, ctx).map(|()| v)
        };
        let strings = |name: &str| -> R<Vec<String>> {
            let v = dataset_strings(index, name, ctx, IX)?;
            need(&v, rows, name, ctx).map(|()| v)
        };
        Ok(RegionIndex {
            ranks: ints("ranks")?,
            offsets: ints("event_offsets")?,
            counts: ints("event_counts")?,
            source_lines: ints("source_lines")?,
            source_files: strings("source_files")?,
            source_texts: strings("source_texts")?,
            tags: strings("tags")?,
            event_metadata: if has(index, "event_metadata") { Some(strings("event_metadata")?) } else { None },
            totals: if has(index, "exclusive_totals") { Some(ints("exclusive_totals")?) } else { None },
            region_ids,
        })
    }

    /// Event span `[offset, offset + count)` of each row, validated against `num_events`
    /// (reference `_validate_event_index`): no negative offset or count, none past the
    /// columns, no two rows overlapping.
    fn spans(&self, num_events: usize, ctx: &Ctx) -> R<Vec<(i128, i128)>> {
        let mut spans: Vec<(i128, i128)> = Vec::with_capacity(self.region_ids.len());
        for r in 0..self.region_ids.len() {
            let (offset, count) = (self.offsets[r], self.counts[r]);
            if offset < 0 || count < 0 {
                return Err(
                    ctx.corrupt("has negative event offsets or counts in its event index. The file is damaged.")
                );
            }
            spans.push((offset as i128, offset as i128 + count as i128));
        }
        if let Some(max_end) = spans.iter().map(|s| s.1).max() {
            if max_end > num_events as i128 {
                return Err(ctx.corrupt(format!(
                    "claims {max_end} recorded events but its event columns hold {num_events}. The file is truncated or damaged."
                )));
            }
            let mut ordered = spans.clone();
            ordered.sort_by_key(|s| s.0); // stable, like np.argsort(kind="stable")
            if ordered.windows(2).any(|w| w[1].0 < w[0].1) {
                return Err(ctx.corrupt("has overlapping region rows in its event index. The file is damaged."));
            }
        }
        Ok(spans)
    }
}

/// Reads `events` columns, taking those read ahead from `prefetched`.
struct EventReader<'a> {
    events: &'a Group,
    ctx: &'a Ctx,
    prefetched: &'a mut Prefetched,
}

impl EventReader<'_> {
    fn ints(&mut self, name: &str) -> R<Vec<i64>> {
        match self.prefetched.remove(name) {
            Some(v) => Ok(v),
            None => dataset_ints(self.events, name, self.ctx, "events"),
        }
    }

    /// An optional column, `Corrupt` when it is shorter than `max_end` events.
    fn optional(&mut self, name: &str, max_end: usize) -> R<Option<Int64Array>> {
        if !has(self.events, name) {
            return Ok(None);
        }
        let v = self.ints(name)?;
        if v.len() < max_end {
            return Err(self.ctx.corrupt(format!(
                "claims {max_end} recorded events but its events/{name} column holds {}. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(Some(shared(v)))
    }
}

/// The event columns, whole (rows slice them); absolute starts and ends in ns.
struct EventColumns {
    /// `[offset, offset + count)` per region row.
    spans: Vec<(i128, i128)>,
    starts: Int64Array,
    ends: Int64Array,
    gpu: Option<Int64Array>,
    thread_ids: Option<Int64Array>,
    task_ids: Option<Int64Array>,
    await_ns: Option<Int64Array>,
    ready_wait_ns: Option<Int64Array>,
    task_step_ns: Option<Int64Array>,
    /// Stored call graph ids per row, bit-packed; taken by [`region_row`].
    call_id_rows: Option<Vec<IdColumn>>,
    parent_id_rows: Option<Vec<IdColumn>>,
}

impl EventColumns {
    fn read(rd: &mut EventReader<'_>, ix: &RegionIndex) -> R<Self> {
        // Timing columns: the encoding is decided by the column names, not the version.
        let delta_encoded = has(rd.events, "start_deltas");
        let (a, b) = if delta_encoded { ("start_deltas", "durations") } else { ("start_times", "end_times") };
        let mut col_a = rd.ints(a)?;
        let mut col_b = rd.ints(b)?;
        let num_events = col_a.len().min(col_b.len());
        let spans = ix.spans(num_events, rd.ctx)?;
        let max_end = spans.iter().map(|s| s.1).max().unwrap_or(0) as usize;
        let gpu = rd.optional("gpu_durations", max_end)?;
        let thread_ids = rd.optional("thread_ids", max_end)?;
        let task_ids = rd.optional("task_ids", max_end)?;
        for (name, ids) in [("thread_ids", &thread_ids), ("task_ids", &task_ids)] {
            if let Some(bad) = ids.as_ref().and_then(|a| a.values().iter().copied().find(|&v| v > i32::MAX as i64)) {
                return Err(rd.ctx.corrupt(format!(
                    "holds {bad} in events/{name}, beyond any thread or task table (at most {}). The file is damaged.",
                    i32::MAX
                )));
            }
        }
        let await_ns = rd.optional("await_ns", max_end)?;
        let ready_wait_ns = rd.optional("ready_wait_ns", max_end)?;
        let task_step_ns = rd.optional("task_step_ns", max_end)?;
        // Absolute starts and ends for every event, decoded per row (schema 3: cumsum), in
        // place: the deltas become the starts and the durations the ends (rows in parallel).
        // Events outside every row keep their stored values; no row refers to them.
        col_a.truncate(num_events);
        col_b.truncate(num_events);
        let backwards = if delta_encoded {
            decode_deltas(&mut col_a, &mut col_b, &spans)
        } else {
            ends_before_start(&col_a, &col_b, &spans)
        };
        if backwards {
            return Err(rd.ctx.corrupt(format!(
                "has a call that ends before it starts (events/{b}). No recording has one: the file is damaged."
            )));
        }
        let (starts, ends) = (shared(col_a), shared(col_b));
        // Stored call graph ids are kept bit-packed (see `scope_profiler_analysis::packed_ids`):
        // one packed column per id column, each row a slice of it.
        let row_spans: Vec<(usize, usize)> =
            spans.iter().zip(&ix.counts).map(|(s, &c)| (s.0 as usize, c as usize)).collect();
        let call_ids = rd.optional("call_ids", max_end)?;
        let parent_ids = rd.optional("parent_ids", max_end)?;
        let (call_id_rows, parent_id_rows) = scope_profiler_analysis::pool::install(|| {
            rayon::join(
                || call_ids.as_ref().map(|a| IdColumn::rows_of(a, &row_spans)),
                || parent_ids.as_ref().map(|a| IdColumn::rows_of(a, &row_spans)),
            )
        });
        // The plain columns go now; packed rows hold their own copy. (They were read with the
        // other event columns, ahead of the heap check: large buffers allocated together are
        // returned to the system together when freed, which keeps the resident size down.)
        drop((call_ids, parent_ids));
        Ok(EventColumns {
            spans,
            starts,
            ends,
            gpu,
            thread_ids,
            task_ids,
            await_ns,
            ready_wait_ns,
            task_step_ns,
            call_id_rows,
            parent_id_rows,
        })
    }
}

/// Region row `r`: its index values and its slices of the event columns (its packed id
/// rows are moved out of `ev`). `names`: the region table.
fn region_row(ix: &RegionIndex, ev: &mut EventColumns, r: usize, names: &[String], ctx: &Ctx) -> R<RegionCalls> {
    let (rid, n_names) = (ix.region_ids[r], names.len());
    if rid < 0 || rid as usize >= n_names {
        return Err(ctx.corrupt(format!(
            "refers to region id {rid} but its region table holds {n_names} names. The file is damaged."
        )));
    }
    let rank = u32::try_from(ix.ranks[r])
        .map_err(|_| ctx.corrupt(format!("has rank {} in its event index. The file is damaged.", ix.ranks[r])))?;
    let (lo, n) = (ev.spans[r].0 as usize, ix.counts[r] as usize);
    let slice = |a: &Option<Int64Array>| a.as_ref().map(|a| a.slice(lo, n));
    let take = |rows: &mut Option<Vec<IdColumn>>| {
        rows.as_mut().map(|rows| std::mem::replace(&mut rows[r], IdColumn::Plain(Int64Array::from(Vec::<i64>::new()))))
    };
    Ok(RegionCalls {
        region: rid as u32,
        rank,
        start_ns: ev.starts.slice(lo, n),
        end_ns: ev.ends.slice(lo, n),
        gpu_ns: slice(&ev.gpu).filter(|g| g.values().iter().any(|&v| v >= 0)),
        call_ids: take(&mut ev.call_id_rows),
        parent_ids: take(&mut ev.parent_id_rows),
        thread_ids: slice(&ev.thread_ids),
        task_ids: slice(&ev.task_ids),
        await_ns: slice(&ev.await_ns),
        ready_wait_ns: slice(&ev.ready_wait_ns),
        task_step_ns: slice(&ev.task_step_ns),
        source_file: Some(ix.source_files[r].clone()).filter(|s| !s.is_empty()),
        source_line: Some(ix.source_lines[r]).filter(|&l| l >= 0),
        source_text: Some(ix.source_texts[r].clone()).filter(|s| !s.is_empty()),
        tags: row_tags(&ix.tags[r], r, ctx)?,
        event_metadata: ix.event_metadata.as_ref().and_then(|m| {
            let row = MetadataRow { r, name: &names[rid as usize], rank, calls: n };
            row_metadata(&m[r], &row, ctx)
        }),
        exclusive_total_ns: ix.totals.as_ref().map(|t| t[r]).filter(|&t| t >= 0),
        stored: None,
    })
}

/// Tags of index row `r` from their JSON list (empty text: no tags).
pub(crate) fn row_tags(tags_json: &str, r: usize, ctx: &Ctx) -> R<Vec<String>> {
    if tags_json.is_empty() {
        return Ok(Vec::new());
    }
    serde_json::from_str(tags_json).map_err(|e| {
        ctx.corrupt(format!("has unreadable tags {} in row {r}: {e}. The file is damaged.", py_repr(tags_json)))
    })
}

/// Which index row a per-call metadata text belongs to.
struct MetadataRow<'a> {
    r: usize,
    name: &'a str,
    rank: u32,
    calls: usize,
}

/// Index row `r`'s per-call metadata text, `None` when it is empty (blank, `[]`, `{}`,
/// `null` or `""`) or unreadable. It is kept when it is a JSON list of one object per call
/// in Python's dialect (`NaN`, `Infinity`, lone surrogates: what the reference and
/// `finalize()` write, [`call_metadata`]). An unreadable one costs only that row's
/// metadata: the read goes on, with a note naming the region, the rank and the call.
fn row_metadata(m: &str, row: &MetadataRow<'_>, ctx: &Ctx) -> Option<String> {
    if call_metadata::is_empty(m) {
        return None;
    }
    let MetadataRow { r, name, rank, calls: n } = *row;
    let why = match call_metadata::calls(m) {
        Ok(list) if list.len() == n => return Some(m.to_string()),
        Ok(list) => format!("{} entries for {n} calls", list.len()),
        Err(e) => e.reason,
    };
    ctx.note(format!(
        "region {} on rank {rank} has unreadable per-call metadata ({IX}/event_metadata row {r}: {why}); \
         its calls are read without it",
        py_repr(name)
    ));
    None
}

/// Thread and task tables (schema ≥ 2), rows ordered by rank (stable).
pub(crate) fn read_lane_tables(file: &hdf5::File, ctx: &Ctx, run: &mut Run) -> R<()> {
    if has(file, "thread_table") {
        let g = file.group("thread_table").map_err(ctx.h5("thread_table"))?;
        run.threads.extend(read_thread_table(&g, ctx)?);
        run.threads.sort_by_key(|t| t.rank);
    }
    if has(file, "task_table") {
        let g = file.group("task_table").map_err(ctx.h5("task_table"))?;
        run.tasks.extend(read_task_table(&g, ctx)?);
        run.tasks.sort_by_key(|t| t.rank);
    }
    if has(file, "loop_blocks") {
        let g = file.group("loop_blocks").map_err(ctx.h5("loop_blocks"))?;
        run.loop_blocks = read_loop_blocks(&g, ctx)?;
    }
    Ok(())
}

/// `/loop_blocks` (not in the reference's layout): one row per event-loop block.
fn read_loop_blocks(g: &Group, ctx: &Ctx) -> R<Vec<scope_profiler_analysis::LoopBlockRow>> {
    let (iv, _, n) = columns(g, ctx, "loop_blocks", &["thread", "task", "start_ns", "end_ns", "delayed_tasks"], &[])?;
    let mut rows = (0..n)
        .map(|i| {
            Ok(scope_profiler_analysis::LoopBlockRow {
                rank: lane_rank(ctx, iv[0][i])?,
                thread: iv[1][i],
                task: iv[2][i],
                start_ns: iv[3][i],
                end_ns: iv[4][i],
                delayed_tasks: iv[5][i],
            })
        })
        .collect::<R<Vec<_>>>()?;
    rows.sort_by_key(|b| b.rank);
    Ok(rows)
}

/// Columns of a lane table: `ranks` then `ints`, the `strs`, and the row count.
type Columns = (Vec<Vec<i64>>, Vec<Vec<String>>, usize);

/// The `ranks`, `ints` and `strs` columns of lane table `g` (`what`: its name), all present
/// and of one length.
fn columns(g: &Group, ctx: &Ctx, what: &str, ints: &[&str], strs: &[&str]) -> R<Columns> {
    let ranks = dataset_ints(g, "ranks", ctx, what)?;
    let n = ranks.len();
    let mut iv = vec![ranks];
    for name in ints {
        if !has(g, name) {
            return Err(ctx.corrupt(format!("has no {what}/{name} column. The file is damaged.")));
        }
        iv.push(dataset_ints(g, name, ctx, what)?);
    }
    let mut sv = Vec::new();
    for name in strs {
        if !has(g, name) {
            return Err(ctx.corrupt(format!("has no {what}/{name} column. The file is damaged.")));
        }
        sv.push(dataset_strings(g, name, ctx, what)?);
    }
    if iv.iter().any(|c| c.len() != n) || sv.iter().any(|c| c.len() != n) {
        return Err(ctx.corrupt(format!("has {what} columns of different lengths. The file is truncated or damaged.")));
    }
    Ok((iv, sv, n))
}

fn lane_rank(ctx: &Ctx, v: i64) -> R<u32> {
    u32::try_from(v).map_err(|_| ctx.corrupt(format!("has rank {v} in a lane table. The file is damaged.")))
}

fn read_thread_table(g: &Group, ctx: &Ctx) -> R<Vec<ThreadRow>> {
    let (iv, sv, n) = columns(
        g,
        ctx,
        "thread_table",
        &["index", "ident", "native_id", "daemon", "start_ns", "end_ns", "cpu_ns"],
        &["name"],
    )?;
    let mut names = sv.into_iter().next().unwrap_or_default().into_iter();
    // the CPU clock at registration: absent in the reference's files
    let cpu_start = optional_thread_column(g, "cpu_start_ns", n, ctx)?;
    // the time in task steps: written by runs with track_async
    let task_steps = optional_thread_column(g, "task_step_ns", n, ctx)?;
    // the ready wait of an event loop's thread: written by runs with track_async
    let ready_wait = optional_thread_column(g, "ready_wait_ns", n, ctx)?;
    // the idle wait of an event loop's thread: written by runs with track_async
    let loop_idle = optional_thread_column(g, "loop_idle_ns", n, ctx)?;
    (0..n)
        .map(|i| {
            Ok(ThreadRow {
                cpu_start_ns: cpu_start[i],
                task_step_ns: task_steps[i],
                ready_wait_ns: ready_wait[i],
                loop_idle_ns: loop_idle[i],
                rank: lane_rank(ctx, iv[0][i])?,
                index: iv[1][i],
                ident: iv[2][i],
                native_id: iv[3][i],
                daemon: iv[4][i] != 0,
                start_ns: iv[5][i],
                end_ns: iv[6][i],
                cpu_ns: iv[7][i],
                name: names.next().unwrap_or_default(),
            })
        })
        .collect()
}

/// Column `name` of `thread_table` (`n` rows), one the reference's layout does not have:
/// [`UNKNOWN`](scope_profiler_analysis::UNKNOWN) for every row when absent.
fn optional_thread_column(g: &Group, name: &str, n: usize, ctx: &Ctx) -> R<Vec<i64>> {
    if !has(g, name) {
        return Ok(vec![scope_profiler_analysis::UNKNOWN; n]);
    }
    let c = dataset_ints(g, name, ctx, "thread_table")?;
    if c.len() != n {
        return Err(ctx.corrupt("has thread_table columns of different lengths. The file is truncated or damaged."));
    }
    Ok(c)
}

fn read_task_table(g: &Group, ctx: &Ctx) -> R<Vec<TaskRow>> {
    let (iv, sv, n) = columns(
        g,
        ctx,
        "task_table",
        &["index", "thread_index", "created_ns", "done_ns", "steps", "running_ns", "suspended_ns"],
        &["kind", "name", "coro_name"],
    )?;
    // ready wait: absent in the reference's files
    let ready = if has(g, "ready_wait_ns") {
        let c = dataset_ints(g, "ready_wait_ns", ctx, "task_table")?;
        if c.len() != n {
            return Err(ctx.corrupt("has task_table columns of different lengths. The file is truncated or damaged."));
        }
        c
    } else {
        vec![scope_profiler_analysis::UNKNOWN; n]
    };
    let mut sv = sv.into_iter();
    let (mut kinds, mut names, mut coros) = (
        sv.next().unwrap_or_default().into_iter(),
        sv.next().unwrap_or_default().into_iter(),
        sv.next().unwrap_or_default().into_iter(),
    );
    (0..n)
        .map(|i| {
            let (kind, name, coro_name) =
                (kinds.next().unwrap_or_default(), names.next().unwrap_or_default(), coros.next().unwrap_or_default());
            Ok(TaskRow::new(lane_rank(ctx, iv[0][i])?, iv[1][i], kind, name, coro_name)
                .on_thread(iv[2][i])
                .lifetime(iv[3][i], iv[4][i])
                .timing(iv[5][i], iv[6][i], iv[7][i])
                .ready_wait(ready[i]))
        })
        .collect()
}
