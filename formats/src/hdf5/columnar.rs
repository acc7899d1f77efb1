//! Schema-2/3 files: the shared event columns sliced per region row (zero copy), the
//! region index, and the thread and task tables.
use arrow_array::Int64Array;
use hdf5::Group;
use scope_profiler_analysis::{IdColumn, RegionCalls, Run, TaskRow, ThreadRow};

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
fn decode_deltas(starts: &mut [i64], ends: &mut [i64], spans: &[(i128, i128)]) {
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
        for (x, d) in s.iter_mut().zip(e.iter_mut()) {
            acc = acc.wrapping_add(*x);
            *x = acc;
            *d = acc.wrapping_add(*d);
        }
    };
    scope_profiler_analysis::par::install(|| parts.into_par_iter().for_each(decode));
}

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
    const IX: &str = "rank_region_index";

    let region_ids = dataset_ints(&index, "region_ids", ctx, IX)?;
    let rows = region_ids.len();
    let need = |v: &[i64], name: &str| -> R<()> {
        if v.len() < rows {
            return Err(ctx.corrupt(format!(
                "has {} values in {IX}/{name} for {rows} region rows. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(())
    };
    let need_s = |v: &[String], name: &str| -> R<()> {
        if v.len() < rows {
            return Err(ctx.corrupt(format!(
                "has {} values in {IX}/{name} for {rows} region rows. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(())
    };
    let ranks = dataset_ints(&index, "ranks", ctx, IX)?;
    need(&ranks, "ranks")?;
    let offsets = dataset_ints(&index, "event_offsets", ctx, IX)?;
    need(&offsets, "event_offsets")?;
    let counts = dataset_ints(&index, "event_counts", ctx, IX)?;
    need(&counts, "event_counts")?;
    let source_lines = dataset_ints(&index, "source_lines", ctx, IX)?;
    need(&source_lines, "source_lines")?;
    let source_files = dataset_strings(&index, "source_files", ctx, IX)?;
    need_s(&source_files, "source_files")?;
    let source_texts = dataset_strings(&index, "source_texts", ctx, IX)?;
    need_s(&source_texts, "source_texts")?;
    let tags = dataset_strings(&index, "tags", ctx, IX)?;
    need_s(&tags, "tags")?;
    let event_metadata =
        if has(&index, "event_metadata") { Some(dataset_strings(&index, "event_metadata", ctx, IX)?) } else { None };
    if let Some(m) = &event_metadata {
        need_s(m, "event_metadata")?;
    }
    let totals =
        if has(&index, "exclusive_totals") { Some(dataset_ints(&index, "exclusive_totals", ctx, IX)?) } else { None };
    if let Some(t) = &totals {
        need(t, "exclusive_totals")?;
    }

    // Timing columns: the encoding is decided by the column names, not the version.
    let delta_encoded = has(&events, "start_deltas");
    let (a, b) = if delta_encoded { ("start_deltas", "durations") } else { ("start_times", "end_times") };
    let mut event_ints = |name: &str| -> R<Vec<i64>> {
        match prefetched.remove(name) {
            Some(v) => Ok(v),
            None => dataset_ints(&events, name, ctx, "events"),
        }
    };
    let col_a = event_ints(a)?;
    let col_b = event_ints(b)?;
    let num_events = col_a.len().min(col_b.len());

    // Index validation (reference `_validate_event_index`).
    let mut spans: Vec<(i128, i128)> = Vec::with_capacity(rows);
    for r in 0..rows {
        if offsets[r] < 0 || counts[r] < 0 {
            return Err(ctx.corrupt("has negative event offsets or counts in its event index. The file is damaged."));
        }
        spans.push((offsets[r] as i128, offsets[r] as i128 + counts[r] as i128));
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
    let max_end = spans.iter().map(|s| s.1).max().unwrap_or(0) as usize;

    let mut optional = |name: &str| -> R<Option<Int64Array>> {
        if !has(&events, name) {
            return Ok(None);
        }
        let v = event_ints(name)?;
        if v.len() < max_end {
            return Err(ctx.corrupt(format!(
                "claims {max_end} recorded events but its events/{name} column holds {}. The file is truncated or damaged.",
                v.len()
            )));
        }
        Ok(Some(shared(v)))
    };
    let gpu = optional("gpu_durations")?;
    let thread_ids = optional("thread_ids")?;
    let task_ids = optional("task_ids")?;
    let await_ns = optional("await_ns")?;

    // Absolute starts and ends for every event, decoded per row (schema 3: cumsum), in
    // place: the deltas become the starts and the durations the ends (rows in parallel).
    // Events outside every row keep their stored values; no row refers to them.
    let (starts, ends) = {
        let mut col_a = col_a;
        let mut col_b = col_b;
        col_a.truncate(num_events);
        col_b.truncate(num_events);
        if delta_encoded {
            decode_deltas(&mut col_a, &mut col_b, &spans);
        }
        (shared(col_a), shared(col_b))
    };

    let slice = |a: &Option<Int64Array>, lo: usize, n: usize| a.as_ref().map(|a| a.slice(lo, n));
    // Stored call graph ids are kept bit-packed (see `scope_profiler_analysis::packed`):
    // one packed column per id column, each row a slice of it.
    let row_spans: Vec<(usize, usize)> = spans.iter().zip(&counts).map(|(s, &c)| (s.0 as usize, c as usize)).collect();
    let call_ids = optional("call_ids")?;
    let parent_ids = optional("parent_ids")?;
    let (mut call_id_rows, mut parent_id_rows) = scope_profiler_analysis::par::install(|| {
        rayon::join(
            || call_ids.as_ref().map(|a| IdColumn::rows_of(a, &row_spans)),
            || parent_ids.as_ref().map(|a| IdColumn::rows_of(a, &row_spans)),
        )
    });
    // The plain columns go now; packed rows hold their own copy. (They were read with the
    // other event columns, ahead of the heap check: large buffers allocated together are
    // returned to the system together when freed, which keeps the resident size down.)
    drop((call_ids, parent_ids));
    for r in 0..rows {
        let rid = region_ids[r];
        if rid < 0 || rid as usize >= names.len() {
            return Err(ctx.corrupt(format!(
                "refers to region id {rid} but its region table holds {} names. The file is damaged.",
                names.len()
            )));
        }
        let rank = u32::try_from(ranks[r])
            .map_err(|_| ctx.corrupt(format!("has rank {} in its event index. The file is damaged.", ranks[r])))?;
        let (lo, n) = (spans[r].0 as usize, counts[r] as usize);
        let gpu_ns = slice(&gpu, lo, n).filter(|g| g.values().iter().any(|&v| v >= 0));
        let tags_json = tags[r].as_str();
        let tag_list: Vec<String> = if tags_json.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(tags_json).map_err(|e| {
                ctx.corrupt(format!("has unreadable tags {} in row {r}: {e}. The file is damaged.", py_repr(tags_json)))
            })?
        };
        let metadata = event_metadata.as_ref().and_then(|m| {
            let s = m[r].trim();
            if s.is_empty() || s == "[]" || s == "{}" || s == "null" || s == "\"\"" {
                None
            } else {
                Some(m[r].clone())
            }
        });
        run.regions.push(RegionCalls {
            region: rid as u32,
            rank,
            start_ns: starts.slice(lo, n),
            end_ns: ends.slice(lo, n),
            gpu_ns,
            call_ids: call_id_rows
                .as_mut()
                .map(|rows| std::mem::replace(&mut rows[r], IdColumn::Plain(Int64Array::from(Vec::<i64>::new())))),
            parent_ids: parent_id_rows
                .as_mut()
                .map(|rows| std::mem::replace(&mut rows[r], IdColumn::Plain(Int64Array::from(Vec::<i64>::new())))),
            thread_ids: slice(&thread_ids, lo, n),
            task_ids: slice(&task_ids, lo, n),
            await_ns: slice(&await_ns, lo, n),
            source_file: Some(source_files[r].clone()).filter(|s| !s.is_empty()),
            source_line: Some(source_lines[r]).filter(|&l| l >= 0),
            source_text: Some(source_texts[r].clone()).filter(|s| !s.is_empty()),
            tags: tag_list,
            event_metadata: metadata,
            exclusive_total_ns: totals.as_ref().map(|t| t[r]).filter(|&t| t >= 0),
            stored: None,
        });
    }
    run.region_names = names;
    Ok(())
}

/// Thread and task tables (schema ≥ 2), rows ordered by rank (stable).
pub(crate) fn read_lane_tables(file: &hdf5::File, ctx: &Ctx, run: &mut Run) -> R<()> {
    type Columns = (Vec<Vec<i64>>, Vec<Vec<String>>, usize);
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
            return Err(
                ctx.corrupt(format!("has {what} columns of different lengths. The file is truncated or damaged."))
            );
        }
        Ok((iv, sv, n))
    }
    let rank_of = |v: i64| {
        u32::try_from(v).map_err(|_| ctx.corrupt(format!("has rank {v} in a lane table. The file is damaged.")))
    };
    if has(file, "thread_table") {
        let g = file.group("thread_table").map_err(ctx.h5("thread_table"))?;
        let (iv, sv, n) = columns(
            &g,
            ctx,
            "thread_table",
            &["index", "ident", "native_id", "daemon", "start_ns", "end_ns", "cpu_ns"],
            &["name"],
        )?;
        let mut names = sv.into_iter().next().unwrap_or_default().into_iter();
        for i in 0..n {
            run.threads.push(ThreadRow {
                rank: rank_of(iv[0][i])?,
                index: iv[1][i],
                ident: iv[2][i],
                native_id: iv[3][i],
                daemon: iv[4][i] != 0,
                start_ns: iv[5][i],
                end_ns: iv[6][i],
                cpu_ns: iv[7][i],
                name: names.next().unwrap_or_default(),
            });
        }
        run.threads.sort_by_key(|t| t.rank);
    }
    if has(file, "task_table") {
        let g = file.group("task_table").map_err(ctx.h5("task_table"))?;
        let (iv, sv, n) = columns(
            &g,
            ctx,
            "task_table",
            &["index", "thread_index", "created_ns", "done_ns", "steps", "running_ns", "suspended_ns"],
            &["kind", "name", "coro_name"],
        )?;
        let mut sv = sv.into_iter();
        let (mut kinds, mut names, mut coros) = (
            sv.next().unwrap_or_default().into_iter(),
            sv.next().unwrap_or_default().into_iter(),
            sv.next().unwrap_or_default().into_iter(),
        );
        run.tasks.reserve(n);
        for i in 0..n {
            run.tasks.push(TaskRow {
                rank: rank_of(iv[0][i])?,
                index: iv[1][i],
                thread_index: iv[2][i],
                created_ns: iv[3][i],
                done_ns: iv[4][i],
                steps: iv[5][i],
                running_ns: iv[6][i],
                suspended_ns: iv[7][i],
                kind: kinds.next().unwrap_or_default(),
                name: names.next().unwrap_or_default(),
                coro_name: coros.next().unwrap_or_default(),
            });
        }
        run.tasks.sort_by_key(|t| t.rank);
    }
    Ok(())
}
