//! The order and the bounds of what a person reads first: the region rows of the text
//! summary (`scope-profiler summary`, `run`'s printout, `print_summary()`), of the HTML
//! report and of the notebook display, and which lanes (threads, tasks) they show when a
//! run has too many to list. One rule, used by every one of them.
use crate::lane_summary::{TaskSummaryRow, ThreadSummaryRow};
use crate::region_summary::RegionSummaryRow;

/// What region rows are sorted by. Times and counts sort largest first, names A to Z;
/// rows that tie keep their definition order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Inclusive time (Σ durations): the default, the hot spot first.
    #[default]
    Total,
    /// Exclusive time (the calls minus their children); rows without it last.
    Exclusive,
    /// Number of calls.
    Calls,
    /// Mean duration of a call.
    Mean,
    /// Region name.
    Name,
    /// The order the regions were defined in (the file's; 0.7.5's `sort="start"`).
    Definition,
}

impl SortKey {
    /// The names `--sort` takes, in the order `--help` lists them.
    pub const NAMES: [&'static str; 5] = ["total", "exclusive", "calls", "mean", "name"];

    /// The name [`SortKey::parse`] reads back.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Total => "total",
            SortKey::Exclusive => "exclusive",
            SortKey::Calls => "calls",
            SortKey::Mean => "mean",
            SortKey::Name => "name",
            SortKey::Definition => "start",
        }
    }

    /// The key named `name`: one of [`SortKey::NAMES`], or one of the names 0.7.5's
    /// `print_summary(sort=)` takes for the same order (`start`: definition order, `avg`:
    /// mean). Error: the text listing the valid names.
    pub fn parse(name: &str) -> Result<SortKey, String> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "total" | "inclusive" => SortKey::Total,
            "exclusive" => SortKey::Exclusive,
            "calls" => SortKey::Calls,
            "mean" | "avg" => SortKey::Mean,
            "name" => SortKey::Name,
            "start" | "definition" => SortKey::Definition,
            _ => {
                return Err(format!(
                    "unknown sort key '{name}' (one of: {}, or start for definition order)",
                    Self::NAMES.join(", ")
                ))
            }
        })
    }
}

/// The figures of one row that [`SortKey`] orders by.
#[derive(Debug, Clone, Copy)]
pub struct OrderKeys<'a> {
    pub name: &'a str,
    pub calls: usize,
    pub total_ns: f64,
    pub exclusive_ns: Option<f64>,
    pub mean_ns: f64,
}

impl<'a> From<&'a RegionSummaryRow> for OrderKeys<'a> {
    fn from(r: &'a RegionSummaryRow) -> Self {
        OrderKeys {
            name: &r.name,
            calls: r.calls,
            total_ns: r.total_ns as f64,
            exclusive_ns: r.exclusive_ns.map(|v| v as f64),
            mean_ns: r.mean_ns,
        }
    }
}

/// The positions of `rows` (given in definition order) in the order `key` asks for.
pub fn order_of(rows: &[OrderKeys<'_>], key: SortKey) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let desc = |a: f64, b: f64| b.total_cmp(&a);
    // a stable sort: ties keep definition order
    match key {
        SortKey::Definition => {}
        SortKey::Total => order.sort_by(|&a, &b| desc(rows[a].total_ns, rows[b].total_ns)),
        SortKey::Calls => order.sort_by(|&a, &b| rows[b].calls.cmp(&rows[a].calls)),
        SortKey::Mean => order.sort_by(|&a, &b| desc(rows[a].mean_ns, rows[b].mean_ns)),
        SortKey::Name => order.sort_by(|&a, &b| rows[a].name.cmp(rows[b].name)),
        SortKey::Exclusive => order.sort_by(|&a, &b| {
            let (x, y) = (rows[a].exclusive_ns, rows[b].exclusive_ns);
            y.is_some().cmp(&x.is_some()).then_with(|| desc(x.unwrap_or(0.0), y.unwrap_or(0.0)))
        }),
    }
    order
}

/// `rows` reordered as `key` asks.
pub fn sort_region_rows(rows: Vec<RegionSummaryRow>, key: SortKey) -> Vec<RegionSummaryRow> {
    let order = order_of(&rows.iter().map(OrderKeys::from).collect::<Vec<_>>(), key);
    let mut slots: Vec<Option<RegionSummaryRow>> = rows.into_iter().map(Some).collect();
    order.into_iter().filter_map(|k| slots[k].take()).collect()
}

/// Region rows `run`'s printout shows of a run with many regions (the rest are counted).
pub const RUN_PRINTOUT_TOP: usize = 30;
/// Task rows the text summary shows (the busiest; `--all-tasks` shows every one).
pub const TASK_ROWS: usize = 20;
/// Rows of each table the HTML report shows (regions; threads and tasks, the busiest), the
/// rest summed in one row: a report's size does not grow with the number of lanes.
pub const REPORT_ROWS: usize = 200;
/// Rows of each table the notebook display (`_repr_html_`) shows.
pub const NOTEBOOK_ROWS: usize = 50;

/// The time a task held its thread (`held_time`; its `region_time` when the run recorded
/// no await times): what "busiest" means for a task.
pub fn task_busy_time(t: &TaskSummaryRow) -> f64 {
    t.held_time.unwrap_or(t.region_time)
}

/// The same for a thread.
pub fn thread_busy_time(t: &ThreadSummaryRow) -> f64 {
    t.held_time.unwrap_or(t.region_time)
}

/// The positions of lanes whose busy times are `times`, busiest first (ties: table
/// order), split after `limit` (`None`: every one shown): `(shown, the rest)`.
pub fn busiest(times: &[f64], limit: Option<usize>) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[b].total_cmp(&times[a]));
    split_at_limit(order, limit)
}

/// `order` split after its first `limit` entries (`None`: all shown).
pub fn split_at_limit<T>(mut order: Vec<T>, limit: Option<usize>) -> (Vec<T>, Vec<T>) {
    let rest = match limit {
        Some(n) if n < order.len() => order.split_off(n),
        _ => Vec::new(),
    };
    (order, rest)
}

/// The rows of a rank's thread and task tables a notebook shows: the [`NOTEBOOK_ROWS`]
/// busiest of each (threads kept in table order, tasks busiest first), and a line counting
/// the rest when there are more.
#[derive(Debug, Clone, PartialEq)]
pub struct NotebookLanes {
    pub threads: Vec<ThreadSummaryRow>,
    pub threads_more: Option<String>,
    pub tasks: Vec<TaskSummaryRow>,
    pub tasks_more: Option<String>,
}

/// The [`NotebookLanes`] of a rank's `threads` and `tasks` summaries.
pub fn notebook_lanes(threads: &[ThreadSummaryRow], tasks: &[TaskSummaryRow]) -> NotebookLanes {
    let (mut shown, rest) = busiest(&threads.iter().map(thread_busy_time).collect::<Vec<_>>(), Some(NOTEBOOK_ROWS));
    shown.sort_unstable();
    let threads_more = (!rest.is_empty()).then(|| format!("... and {} more threads", rest.len()));
    let threads = shown.iter().map(|&k| threads[k].clone()).collect();
    let (shown, rest) = busiest(&tasks.iter().map(task_busy_time).collect::<Vec<_>>(), Some(NOTEBOOK_ROWS));
    let tasks_more = (!rest.is_empty()).then(|| format!("... and {} more tasks (the busiest shown)", rest.len()));
    NotebookLanes { threads, threads_more, tasks: shown.iter().map(|&k| tasks[k].clone()).collect(), tasks_more }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_row(index: i64, region_time: f64) -> ThreadSummaryRow {
        ThreadSummaryRow {
            index,
            name: format!("T{index}"),
            listed: true,
            alive: false,
            wall_time: None,
            cpu_time: None,
            cpu_time_total: None,
            num_calls: 1,
            region_time,
            held_time: None,
            await_time: None,
            task_step_time: None,
            task_await_time_sum: None,
            ready_wait_time: None,
            idle_time: None,
        }
    }

    /// 52 threads: the 50 busiest in table order (the two idlest left out and counted);
    /// a few tasks: all, nothing counted.
    #[test]
    fn a_notebook_shows_the_busiest_lanes_and_counts_the_rest() {
        let threads: Vec<ThreadSummaryRow> =
            (0..52).map(|i| thread_row(i, if i < 2 { 0.0 } else { i as f64 })).collect();
        let lanes = notebook_lanes(&threads, &[]);
        assert_eq!(lanes.threads.iter().map(|t| t.index).collect::<Vec<_>>(), (2..52).collect::<Vec<_>>());
        assert_eq!(lanes.threads_more.as_deref(), Some("... and 2 more threads"));
        assert!(lanes.tasks.is_empty() && lanes.tasks_more.is_none());
        let few = notebook_lanes(&threads[..3], &[]);
        assert_eq!((few.threads.len(), few.threads_more), (3, None));
    }

    fn keys<'a>(rows: &'a [(&'a str, usize, f64, Option<f64>)]) -> Vec<OrderKeys<'a>> {
        rows.iter()
            .map(|&(name, calls, total_ns, exclusive_ns)| OrderKeys {
                name,
                calls,
                total_ns,
                exclusive_ns,
                mean_ns: total_ns / calls as f64,
            })
            .collect()
    }

    /// Each key orders the rows largest first (names A to Z), ties in definition order,
    /// rows without exclusive time after those with it.
    #[test]
    fn rows_sort_by_each_key_with_ties_in_definition_order() {
        let rows = [
            ("main", 1, 100.0, Some(10.0)),
            ("b", 10, 50.0, None),
            ("a", 2, 50.0, Some(40.0)),
            ("c", 10, 90.0, Some(90.0)),
        ];
        let k = keys(&rows);
        assert_eq!(order_of(&k, SortKey::Total), [0, 3, 1, 2]);
        assert_eq!(order_of(&k, SortKey::Exclusive), [3, 2, 0, 1]);
        assert_eq!(order_of(&k, SortKey::Calls), [1, 3, 2, 0]);
        assert_eq!(order_of(&k, SortKey::Mean), [0, 2, 3, 1]);
        assert_eq!(order_of(&k, SortKey::Name), [2, 1, 3, 0]);
        assert_eq!(order_of(&k, SortKey::Definition), [0, 1, 2, 3]);
    }

    #[test]
    fn sort_names_parse_and_unknown_ones_list_the_valid_ones() {
        for (name, key) in [("total", SortKey::Total), ("AVG", SortKey::Mean), ("start", SortKey::Definition)] {
            assert_eq!(SortKey::parse(name), Ok(key));
            assert_eq!(SortKey::parse(key.name()), Ok(key));
        }
        let e = SortKey::parse("speed").unwrap_err();
        assert!(e.contains("'speed'") && e.contains("total, exclusive, calls, mean, name"), "{e}");
    }

    #[test]
    fn the_busiest_lanes_come_first_and_the_rest_is_split_off() {
        let (shown, rest) = busiest(&[1.0, 5.0, 3.0, 5.0], Some(2));
        assert_eq!((shown, rest), (vec![1, 3], vec![2, 0]));
        assert_eq!(busiest(&[1.0, 2.0], None), (vec![1, 0], vec![]));
    }
}
