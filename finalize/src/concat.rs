//! The calls of one recorder taken at successive moments - the frames of a `flush_interval`
//! sidecar, then what was still buffered at `finalize()` - as one run.
//!
//! [`RunConcat`] takes the parts one at a time and keeps only their calls, each row's
//! columns in buffers of their own (a part is dropped once added: reading a sidecar frame
//! by frame holds one frame at a time, and never more than its calls). [`RunConcat::finish`]
//! orders each region's calls by thread and start, as a single snapshot would have them,
//! one column at a time, releasing the parts' buffers as it goes.
use arrow_array::Int64Array;
use scope_profiler_analysis::{RegionCalls, Run};

/// One region's calls from one part.
#[derive(Default)]
struct Part {
    /// Its number of calls (its columns are taken one at a time).
    len: usize,
    starts: Vec<i64>,
    ends: Vec<i64>,
    threads: Option<Vec<i64>>,
    tasks: Option<Vec<i64>>,
    awaits: Option<Vec<i64>>,
}

/// One region's calls from every part so far.
struct Region {
    /// Order of first appearance.
    first: usize,
    parts: Vec<Part>,
    /// The first row seen (source and tags), without calls.
    template: RegionCalls,
}

/// Rank-0 runs of one recorder, added in the order they were taken, becoming one run
/// ([`RunConcat::finish`]).
#[derive(Default)]
pub struct RunConcat {
    names: Vec<String>,
    regions: Vec<Region>,
    /// The latest part without its rows: its tables and metadata are the run's.
    last: Run,
    calls: usize,
}

/// The values of `a`: its own buffer when nothing else shares it (no copy), else a copy.
fn owned(a: Int64Array) -> Vec<i64> {
    let (_, values, _) = a.into_parts();
    values.into_inner().into_vec::<i64>().unwrap_or_else(|shared| shared.typed_data::<i64>().to_vec())
}

fn empty() -> Int64Array {
    Int64Array::from(Vec::<i64>::new())
}

impl RunConcat {
    pub fn new() -> Self {
        RunConcat::default()
    }

    /// Calls added so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Add the calls of `part` (taken after every part added before); its thread and task
    /// tables and metadata replace the previous ones. Call ids are dropped (the caller numbers
    /// the whole).
    pub fn add(&mut self, mut part: Run) {
        for row in std::mem::take(&mut part.regions) {
            let name = part.region_names.get(row.region as usize).cloned().unwrap_or_default();
            let i = match self.names.iter().position(|n| *n == name) {
                Some(i) => i,
                None => {
                    self.names.push(name);
                    let template = RegionCalls {
                        source_file: row.source_file.clone(),
                        source_line: row.source_line,
                        source_text: row.source_text.clone(),
                        tags: row.tags.clone(),
                        ..RegionCalls::new(0, 0, empty(), empty())
                    };
                    self.regions.push(Region { first: self.regions.len(), parts: Vec::new(), template });
                    self.regions.len() - 1
                }
            };
            self.calls += row.len();
            self.regions[i].parts.push(Part {
                len: row.len(),
                starts: owned(row.start_ns),
                ends: owned(row.end_ns),
                threads: row.thread_ids.map(owned),
                tasks: row.task_ids.map(owned),
                awaits: row.await_ns.map(owned),
            });
        }
        part.region_names.clear();
        self.last = part;
    }

    /// The run: each region's calls ordered by thread, then start; rows ordered by
    /// `region_order` (names, e.g. the region table in id order; unknown names after, in order
    /// of appearance) or by appearance; thread and task tables, metadata and the
    /// `num_ranks` rule of the last part.
    pub fn finish(self, region_order: Option<&[String]>) -> Run {
        let RunConcat { names, regions, last, .. } = self;
        let position = |name: &str| region_order.and_then(|o| o.iter().position(|n| n == name)).unwrap_or(usize::MAX);
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by_key(|&i| (position(&names[i]), regions[i].first));
        let mut run = Run { threads: last.threads, tasks: last.tasks, metadata: last.metadata, ..Run::default() };
        let mut slots: Vec<Option<Region>> = regions.into_iter().map(Some).collect();
        for i in order {
            let Some(region) = slots[i].take() else { continue };
            let id = run.region_names.len() as u32;
            run.region_names.push(names[i].clone());
            run.regions.push(region_row(region, id));
        }
        let mpi_size = run.meta_int("mpi_size").unwrap_or(1).max(1) as u32;
        run.num_ranks = if run.regions.is_empty() { 0 } else { mpi_size };
        run
    }
}

/// Every part's values of one column, in part order (a part without it gives `fill`s);
/// each part's buffer is released as soon as it is copied. `None` when no part has it.
fn flatten(parts: &mut [Part], get: fn(&mut Part) -> Option<Vec<i64>>, fill: i64) -> Option<Vec<i64>> {
    let mut taken: Vec<(usize, Option<Vec<i64>>)> = Vec::with_capacity(parts.len());
    for p in parts.iter_mut() {
        taken.push((p.len, get(p)));
    }
    if taken.iter().all(|(_, v)| v.is_none()) {
        return None;
    }
    let mut out = Vec::with_capacity(taken.iter().map(|(n, _)| n).sum());
    for (n, values) in taken {
        match values {
            Some(v) => out.extend_from_slice(&v),
            None => out.resize(out.len() + n, fill),
        }
    }
    Some(out)
}

/// The order of calls by (thread, start), stable: kept when they are in it already, else
/// as positions (4 bytes each up to 2^32 calls).
enum Order {
    Kept,
    Sorted(Vec<u32>),
    SortedLarge(Vec<usize>),
}

impl Order {
    fn of(threads: Option<&[i64]>, starts: &[i64]) -> Order {
        let key = |k: usize| (threads.map_or(0, |t| t[k]), starts[k]);
        if (1..starts.len()).all(|k| key(k - 1) <= key(k)) {
            return Order::Kept;
        }
        if let Ok(n) = u32::try_from(starts.len()) {
            let mut perm: Vec<u32> = (0..n).collect();
            perm.sort_by_key(|&k| key(k as usize));
            return Order::Sorted(perm);
        }
        let mut perm: Vec<usize> = (0..starts.len()).collect();
        perm.sort_by_key(|&k| key(k));
        Order::SortedLarge(perm)
    }

    fn apply(&self, values: Vec<i64>) -> Int64Array {
        match self {
            Order::Kept => Int64Array::from(values),
            Order::Sorted(perm) => perm.iter().map(|&k| values[k as usize]).collect::<Vec<i64>>().into(),
            Order::SortedLarge(perm) => perm.iter().map(|&k| values[k]).collect::<Vec<i64>>().into(),
        }
    }
}

/// The row of one region's calls from every part, ordered ([`Order`]), column by column.
fn region_row(mut region: Region, id: u32) -> RegionCalls {
    let parts = &mut region.parts;
    let starts = flatten(parts, |p| Some(std::mem::take(&mut p.starts)), 0).unwrap_or_default();
    let threads = flatten(parts, |p| p.threads.take(), -1);
    let order = Order::of(threads.as_deref(), &starts);
    let start_ns = order.apply(starts);
    let end_ns = order.apply(flatten(parts, |p| Some(std::mem::take(&mut p.ends)), 0).unwrap_or_default());
    let thread_ids = threads.map(|t| order.apply(t));
    let task_ids = flatten(parts, |p| p.tasks.take(), -1).map(|t| order.apply(t));
    let await_ns = flatten(parts, |p| p.awaits.take(), 0).map(|t| order.apply(t));
    RegionCalls { region: id, rank: 0, start_ns, end_ns, thread_ids, task_ids, await_ns, ..region.template }
}

/// [`RunConcat`] of `parts` at once.
pub fn concat_runs(parts: Vec<Run>, region_order: Option<&[String]>) -> Run {
    let mut concat = RunConcat::new();
    for part in parts {
        concat.add(part);
    }
    concat.finish(region_order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(name: &str, starts: &[i64], threads: &[i64]) -> Run {
        let mut row = RegionCalls::new(
            0,
            0,
            Int64Array::from(starts.to_vec()),
            Int64Array::from(starts.iter().map(|s| s + 5).collect::<Vec<_>>()),
        );
        row.thread_ids = Some(Int64Array::from(threads.to_vec()));
        Run { region_names: vec![name.into()], regions: vec![row], num_ranks: 1, ..Run::default() }
    }

    #[test]
    fn concat_orders_by_thread_then_start_and_by_the_given_region_order() {
        let parts = vec![run_of("b", &[30, 10], &[1, 0]), run_of("a", &[1], &[0]), run_of("b", &[20], &[0])];
        let run = concat_runs(parts, Some(&["a".into(), "b".into()]));
        assert_eq!(run.region_names, vec!["a", "b"]);
        assert_eq!(run.regions[1].start_ns.values().to_vec(), vec![10, 20, 30]);
        assert_eq!(run.regions[1].end_ns.values().to_vec(), vec![15, 25, 35]);
        assert_eq!(run.regions[1].thread_ids.as_ref().unwrap().values().to_vec(), vec![0, 0, 1]);
        assert_eq!(run.regions[1].region, 1);
        let run = concat_runs(vec![run_of("b", &[1], &[0]), run_of("a", &[2], &[0])], None);
        assert_eq!(run.region_names, vec!["b", "a"]);
    }

    #[test]
    fn a_column_some_parts_lack_is_filled_and_the_last_tables_win() {
        let mut first = run_of("r", &[5], &[0]);
        first.regions[0].thread_ids = None;
        first.metadata = vec![("k".into(), scope_profiler_analysis::MetaValue::Int(1))];
        let mut second = run_of("r", &[1, 2], &[3, 3]);
        second.regions[0].await_ns = Some(Int64Array::from(vec![7, 8]));
        second.regions[0].source_line = Some(9);
        second.metadata = vec![("k".into(), scope_profiler_analysis::MetaValue::Int(2))];
        let mut concat = RunConcat::new();
        concat.add(first);
        concat.add(second);
        assert_eq!(concat.calls(), 3);
        let run = concat.finish(None);
        let row = &run.regions[0];
        // thread -1 (unknown) sorts first
        assert_eq!(row.start_ns.values().to_vec(), vec![5, 1, 2]);
        assert_eq!(row.thread_ids.as_ref().unwrap().values().to_vec(), vec![-1, 3, 3]);
        assert_eq!(row.await_ns.as_ref().unwrap().values().to_vec(), vec![0, 7, 8]);
        assert!(row.task_ids.is_none());
        assert_eq!(row.source_line, None, "the first part's source");
        assert_eq!(run.meta_int("k"), Some(2));
        assert_eq!(run.num_ranks, 1);
    }
}
