//! The calls of one recorder taken at successive moments - the frames of a `flush_interval`
//! sidecar, then what was still buffered at `finalize()` - as one run.
//!
//! [`RunConcat`] takes the parts one at a time and keeps only their calls, appended to one
//! growing vector per region and column (a part is dropped once added: reading a sidecar
//! frame by frame holds one frame at a time). Large vectors grow in place (the allocator
//! remaps them), so the calls are held once, without the slack of their growth in memory, and
//! no allocation is left behind per part. [`RunConcat::finish`] orders each region's calls
//! by thread and start, as a single snapshot would have them, one column at a time.
use arrow_array::Int64Array;
use scope_profiler_analysis::{RegionCalls, Run};

/// One region's calls from every part so far, column by column.
struct Region {
    /// Order of first appearance.
    first: usize,
    starts: Vec<i64>,
    ends: Vec<i64>,
    /// Columns some part had (parts without them filled in: -1 ids, 0 await, -1 ready
    /// wait).
    threads: Option<Vec<i64>>,
    tasks: Option<Vec<i64>>,
    awaits: Option<Vec<i64>>,
    ready_waits: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
    /// The first row seen (source and tags), without calls.
    template: RegionCalls,
    /// Calls announced by [`RunConcat::expect`], and which optional columns they have.
    planned: usize,
    planned_columns: [bool; 5],
}

impl Region {
    fn new(first: usize, row: &RegionCalls) -> Self {
        Region {
            first,
            starts: Vec::new(),
            ends: Vec::new(),
            threads: None,
            tasks: None,
            awaits: None,
            ready_waits: None,
            steps: None,
            template: RegionCalls {
                source_file: row.source_file.clone(),
                source_line: row.source_line,
                source_text: row.source_text.clone(),
                tags: row.tags.clone(),
                ..RegionCalls::new(0, 0, empty(), empty())
            },
            planned: 0,
            planned_columns: [false; 5],
        }
    }

    /// Buffers of the announced size for its calls, before the first of them is added.
    fn reserve(&mut self) {
        let n = std::mem::take(&mut self.planned);
        self.starts.reserve_exact(n);
        self.ends.reserve_exact(n);
        let [threads, tasks, awaits, ready_waits, steps] = self.planned_columns;
        let slots = [
            (&mut self.threads, threads),
            (&mut self.tasks, tasks),
            (&mut self.awaits, awaits),
            (&mut self.ready_waits, ready_waits),
            (&mut self.steps, steps),
        ];
        for (slot, has) in slots {
            if has {
                *slot = Some(Vec::with_capacity(n));
            }
        }
    }
}

/// Append `col` (or `n` `fill`s without it) to `acc`, which holds `have` values (or none,
/// when no part had the column: then it starts with `have` `fill`s).
fn extend_opt(acc: &mut Option<Vec<i64>>, have: usize, col: Option<&Int64Array>, n: usize, fill: i64) {
    match (acc.as_mut(), col) {
        (Some(a), Some(c)) => a.extend_from_slice(c.values()),
        (Some(a), None) => a.resize(have + n, fill),
        (None, Some(c)) => {
            let mut a = Vec::with_capacity(have + n);
            a.resize(have, fill);
            a.extend_from_slice(c.values());
            *acc = Some(a);
        }
        (None, None) => {}
    }
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

/// An optional column of a region's first `n` calls: `col` taken over, or `n` `fill`s when
/// an earlier part (without calls) had the column and this one does not.
fn first_opt(had: bool, col: Option<Int64Array>, n: usize, fill: i64) -> Option<Vec<i64>> {
    match col {
        Some(c) => Some(owned(c)),
        None => had.then(|| vec![fill; n]),
    }
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

    /// The region of `name`, made from `row` when it is new.
    fn region(&mut self, name: String, row: &RegionCalls) -> &mut Region {
        let i = match self.names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.names.push(name);
                self.regions.push(Region::new(self.regions.len(), row));
                self.regions.len() - 1
            }
        };
        &mut self.regions[i]
    }

    /// Announce a part that will be added, by its rows (`shape`, columns not needed) and
    /// their numbers of calls (`lens`): the parts announced before the first is added get
    /// buffers of their whole size, allocated once.
    pub fn expect(&mut self, shape: &Run, lens: &[usize]) {
        for (row, &n) in shape.regions.iter().zip(lens) {
            let name = shape.region_names.get(row.region as usize).cloned().unwrap_or_default();
            let g = self.region(name, row);
            g.planned += n;
            let has = [
                row.thread_ids.is_some(),
                row.task_ids.is_some(),
                row.await_ns.is_some(),
                row.ready_wait_ns.is_some(),
                row.task_step_ns.is_some(),
            ];
            for (planned, has) in g.planned_columns.iter_mut().zip(has) {
                *planned |= has;
            }
        }
    }

    /// Add the calls of `part` (taken after every part added before); its thread and task
    /// tables and metadata replace the previous ones. Call ids are dropped (the caller numbers
    /// the whole).
    pub fn add(&mut self, mut part: Run) {
        for row in std::mem::take(&mut part.regions) {
            let name = part.region_names.get(row.region as usize).cloned().unwrap_or_default();
            self.calls += row.len();
            let g = self.region(name, &row);
            if g.planned > 0 {
                g.reserve();
            }
            let (have, n) = (g.starts.len(), row.len());
            if have == 0 && g.starts.capacity() == 0 {
                // the region's first calls, not announced: their buffers are taken over
                g.starts = owned(row.start_ns);
                g.ends = owned(row.end_ns);
                g.threads = first_opt(g.threads.is_some(), row.thread_ids, n, -1);
                g.tasks = first_opt(g.tasks.is_some(), row.task_ids, n, -1);
                g.awaits = first_opt(g.awaits.is_some(), row.await_ns, n, 0);
                g.ready_waits = first_opt(g.ready_waits.is_some(), row.ready_wait_ns, n, -1);
                g.steps = first_opt(g.steps.is_some(), row.task_step_ns, n, 0);
                continue;
            }
            g.starts.extend_from_slice(row.start_ns.values());
            g.ends.extend_from_slice(row.end_ns.values());
            extend_opt(&mut g.threads, have, row.thread_ids.as_ref(), n, -1);
            extend_opt(&mut g.tasks, have, row.task_ids.as_ref(), n, -1);
            extend_opt(&mut g.awaits, have, row.await_ns.as_ref(), n, 0);
            extend_opt(&mut g.ready_waits, have, row.ready_wait_ns.as_ref(), n, -1);
            extend_opt(&mut g.steps, have, row.task_step_ns.as_ref(), n, 0);
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
        let mut run = Run {
            threads: last.threads,
            tasks: last.tasks,
            metadata: last.metadata,
            loop_blocks: last.loop_blocks,
            ..Run::default()
        };
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

/// The row of one region's calls from every part, ordered ([`Order`]) one column at a time
/// (each column's unordered values released once ordered).
fn region_row(region: Region, id: u32) -> RegionCalls {
    let Region { starts, ends, threads, tasks, awaits, ready_waits, steps, template, .. } = region;
    let order = Order::of(threads.as_deref(), &starts);
    RegionCalls {
        region: id,
        rank: 0,
        start_ns: order.apply(starts),
        end_ns: order.apply(ends),
        thread_ids: threads.map(|t| order.apply(t)),
        task_ids: tasks.map(|t| order.apply(t)),
        await_ns: awaits.map(|t| order.apply(t)),
        ready_wait_ns: ready_waits.map(|t| order.apply(t)),
        task_step_ns: steps.map(|t| order.apply(t)),
        ..template
    }
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
pub(crate) mod tests {
    use super::*;

    /// A one-region run whose calls start at `starts` (5 ns each) on `threads`.
    pub(crate) fn run_of(name: &str, starts: &[i64], threads: &[i64]) -> Run {
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

    #[test]
    fn announced_parts_fill_buffers_of_their_whole_size() {
        let parts = || vec![run_of("b", &[30, 10], &[1, 0]), run_of("a", &[1], &[0]), run_of("b", &[20], &[0])];
        let mut concat = RunConcat::new();
        for p in parts() {
            let lens: Vec<usize> = p.regions.iter().map(RegionCalls::len).collect();
            concat.expect(&p, &lens);
        }
        for p in parts() {
            concat.add(p);
        }
        let b = concat.regions.iter().find(|r| r.starts.len() == 3).unwrap();
        assert_eq!((b.starts.capacity(), b.threads.as_ref().unwrap().capacity()), (3, 3));
        let announced = concat.finish(None);
        let plain = concat_runs(parts(), None);
        assert_eq!(announced.region_names, plain.region_names);
        for (x, y) in announced.regions.iter().zip(&plain.regions) {
            assert_eq!(x.start_ns, y.start_ns);
            assert_eq!(x.end_ns, y.end_ns);
            assert_eq!(x.thread_ids, y.thread_ids);
        }
    }
}
