//! Schema-1 files: one `rank<N>` group per rank with per-region groups.
use arrow_array::Int64Array;
use scope_profiler_analysis::{RegionCalls, Run};

use super::typed::*;
use super::NOT_A_PROFILE;
use super::R;

/// Schema 1: `/rank<N>/regions/<name>/{start_times, end_times, ...}`.
pub(crate) fn read_schema1(file: &hdf5::File, ctx: &Ctx, run: &mut Run, groups: &[(u32, String)]) -> R<()> {
    let mut ids: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let with_regions = groups.iter().filter(|(_, g)| file.group(g).is_ok_and(|rg| has(&rg, "regions"))).count();
    if with_regions == 0 {
        return Err(ctx.corrupt(format!(
            "{NOT_A_PROFILE}: it has rank groups, but none holds a regions group (and it has no scope_profiler_schema attribute)."
        )));
    }
    for (rank, gname) in groups {
        let rg = file.group(gname).map_err(ctx.h5(gname))?;
        if !has(&rg, "regions") {
            continue;
        }
        let regions = rg.group("regions").map_err(ctx.h5(&format!("{gname}/regions")))?;
        for name in regions.member_names().map_err(ctx.h5(&format!("{gname}/regions")))? {
            let what = format!("{gname}/regions/{name}");
            let g = regions.group(&name).map_err(ctx.h5(&what))?;
            let mut row = read_region(&g, ctx, &what, *rank)?;
            let next = ids.len() as u32;
            row.region = *ids.entry(name.clone()).or_insert_with(|| {
                run.region_names.push(name.clone());
                next
            });
            run.regions.push(row);
        }
    }
    run.num_ranks = groups.len() as u32;
    Ok(())
}

/// The calls of region group `g` (`what`: its path) of `rank`; `region` is left 0 for the
/// caller to assign.
fn read_region(g: &hdf5::Group, ctx: &Ctx, what: &str, rank: u32) -> R<RegionCalls> {
    let starts = dataset_ints(g, "start_times", ctx, what)?;
    let ends = dataset_ints(g, "end_times", ctx, what)?;
    if starts.len() != ends.len() {
        return Err(ctx.corrupt(format!(
            "has {} start times but {} end times in {what}. The file is truncated or damaged.",
            starts.len(),
            ends.len()
        )));
    }
    let opt = |col: &str| -> R<Option<Int64Array>> {
        if !has(g, col) {
            return Ok(None);
        }
        let v = dataset_ints(g, col, ctx, what)?;
        if v.len() != starts.len() {
            return Err(ctx.corrupt(format!(
                "has {} values in {what}/{col} for {} calls. The file is damaged.",
                v.len(),
                starts.len()
            )));
        }
        Ok(Some(Int64Array::from(v)))
    };
    let gpu_ns = opt("gpu_durations")?;
    let call_ids = opt("call_ids")?;
    let parent_ids = opt("parent_ids")?;
    let attrs = RegionAttrs { g, ctx, what, names: g.attr_names().map_err(ctx.h5(what))? };
    let source_file = attrs.string("source_file")?.filter(|s| !s.is_empty());
    let source_text = attrs.string("source_text")?.filter(|s| !s.is_empty());
    let source_line = match attrs.get("source_lineno") {
        None => None,
        Some(at) => read_ints(&at, ctx, &format!("{what} attribute source_lineno"))?.first().copied(),
    };
    let tags = match attrs.get("tags") {
        None => Vec::new(),
        Some(at) => read_strings(&at, ctx, &format!("{what} attribute tags"))?,
    };
    Ok(RegionCalls {
        region: 0,
        rank,
        start_ns: Int64Array::from(starts),
        end_ns: Int64Array::from(ends),
        gpu_ns,
        call_ids: call_ids.map(Into::into),
        parent_ids: parent_ids.map(Into::into),
        thread_ids: None,
        task_ids: None,
        await_ns: None,
        ready_wait_ns: None,
        task_step_ns: None,
        source_file,
        source_line,
        source_text,
        tags,
        event_metadata: None,
        exclusive_total_ns: None,
        stored: None,
    })
}

/// The attributes of a region group.
struct RegionAttrs<'a> {
    g: &'a hdf5::Group,
    ctx: &'a Ctx,
    what: &'a str,
    names: Vec<String>,
}

impl RegionAttrs<'_> {
    fn get(&self, a: &str) -> Option<hdf5::Attribute> {
        if self.names.iter().any(|n| n == a) {
            self.g.attr(a).ok()
        } else {
            None
        }
    }

    /// The first string of attribute `a`, `None` without it.
    fn string(&self, a: &str) -> R<Option<String>> {
        match self.get(a) {
            None => Ok(None),
            Some(at) => Ok(read_strings(&at, self.ctx, &format!("{} attribute {a}", self.what))?.into_iter().next()),
        }
    }
}
