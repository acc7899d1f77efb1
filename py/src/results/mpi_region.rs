//! `scope_profiler.mpi_region.MPIRegion`: one region name across ranks (`region[rank]` is
//! the `Region`). Pooled statistics (s) are `analysis::region_stats::PooledStats` over the
//! ranks in this object's order.
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use scope_profiler_analysis::region_stats::{PooledStats, RowStats};
use scope_profiler_analysis::{py_format_g, py_repr, RowView};

use crate::results::pickling::Reduced;
use crate::results::region::Region;

/// An `MPIRegion`'s `(rank, Region)` parts, in its order.
pub type RegionParts = Vec<(i64, Py<Region>)>;

/// One named region across all ranks; `region[rank]` is the `Region` of that rank.
#[pyclass(module = "scope_profiler.mpi_region")]
pub struct MPIRegion {
    name: String,
    /// (rank, region) in the given order.
    parts: Vec<(i64, Py<Region>)>,
    /// Plot hint (a colour), None by default.
    #[pyo3(get, set)]
    pub(crate) color: Py<PyAny>,
}

impl MPIRegion {
    /// A region over `parts` (rank, Region) in this order.
    pub fn of(py: Python<'_>, name: String, parts: Vec<(i64, Py<Region>)>) -> Self {
        MPIRegion { name, parts, color: py.None() }
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    /// (rank, Region) pairs in this region's order.
    pub fn parts(&self) -> &[(i64, Py<Region>)] {
        &self.parts
    }
    fn views(&self, py: Python<'_>) -> Vec<RowView> {
        self.parts.iter().map(|(_, r)| r.bind(py).get().view()).collect()
    }
    fn pooled<T>(&self, py: Python<'_>, f: impl FnOnce(&PooledStats) -> T) -> T {
        let views = self.views(py);
        let stats = PooledStats::new(views.iter().map(|v| RowStats::new(v.calls())).collect());
        f(&stats)
    }
    fn sorted_ranks(&self) -> Vec<i64> {
        let mut r: Vec<i64> = self.parts.iter().map(|(k, _)| *k).collect();
        r.sort_unstable();
        r
    }
    fn first_captured<T>(&self, py: Python<'_>, get: impl Fn(&RowView) -> Option<T>) -> Option<T> {
        let mut parts: Vec<&(i64, Py<Region>)> = self.parts.iter().collect();
        parts.sort_by_key(|(k, _)| *k);
        parts.iter().find_map(|(_, r)| get(&r.bind(py).get().view()))
    }
    fn per_rank<'py>(&self, py: Python<'py>, f: impl Fn(&RowStats) -> f64) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (rank, r) in &self.parts {
            let v = r.bind(py).get().view();
            d.set_item(rank, f(&RowStats::new(v.calls())))?;
        }
        Ok(d)
    }
    fn percentile(&self, py: Python<'_>, q: f64) -> PyResult<Option<f64>> {
        self.pooled(py, |p| p.percentile(q))
            .map_err(|_| pyo3::exceptions::PyValueError::new_err("percentile must be between 0 and 100"))
    }
    /// Σ of the ranks' exclusive totals (in order), s. Raises NestingError.
    pub fn exclusive_total(&self, py: Python<'_>) -> PyResult<f64> {
        let mut total = 0.0;
        for (_, r) in &self.parts {
            total += r.bind(py).get().exclusive_total()?;
        }
        Ok(total)
    }
    /// `get_summary()`: `name, num_ranks` + the statistics [+ GPU totals].
    pub fn summary_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", &self.name)?;
        d.set_item("num_ranks", self.parts.len())?;
        let exclusive = self.exclusive_total(py)?;
        self.pooled(py, |p| -> PyResult<()> {
            d.set_item("num_calls", p.num_calls())?;
            d.set_item("total_duration", p.total())?;
            d.set_item("inclusive_duration", p.total())?;
            d.set_item("exclusive_duration", exclusive)?;
            d.set_item("average_duration", p.mean())?;
            d.set_item("min_duration", p.min())?;
            d.set_item("max_duration", p.max())?;
            d.set_item("first_duration", p.first())?;
            d.set_item("last_duration", p.last())?;
            d.set_item("std_duration", p.std())?;
            if p.has_gpu_timing() {
                d.set_item("gpu_total_duration", p.gpu_total())?;
                d.set_item("gpu_average_duration", p.gpu_mean())?;
            }
            Ok(())
        })?;
        Ok(d)
    }
    /// The `summary()` row of `ProfilingResults`: `get_summary()` + percentiles, tags,
    /// rank imbalance (and the reference's short aliases).
    pub fn results_row<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = self.summary_dict(py)?;
        let (p50, p95, p99, imb, imb_pct) = self.pooled(py, |p| {
            (
                p.percentile(50.0).ok().flatten(),
                p.percentile(95.0).ok().flatten(),
                p.percentile(99.0).ok().flatten(),
                p.rank_imbalance(),
                p.rank_imbalance_pct(),
            )
        });
        d.set_item("inclusive_duration", d.get_item("total_duration")?)?;
        d.set_item("exclusive_duration", d.get_item("exclusive_duration")?)?;
        d.set_item("tags", self.tags(py)?)?;
        d.set_item("p50_duration", p50)?;
        d.set_item("p95_duration", p95)?;
        d.set_item("p99_duration", p99)?;
        d.set_item("rank_imbalance", imb)?;
        d.set_item("rank_imbalance_pct", imb_pct)?;
        d.set_item("p50", p50)?;
        d.set_item("p95", p95)?;
        d.set_item("p99", p99)?;
        d.set_item("imbalance", imb_pct)?;
        // await and held time (s) for runs recorded with track_async
        let views = self.views(py);
        if views.iter().any(|v| v.await_total_ns().is_some()) {
            let awaited: i64 = views.iter().filter_map(|v| v.await_total_ns()).sum();
            let total: i64 = views.iter().map(|v| v.durations_ns().iter().sum::<i64>()).sum();
            // calls on a thread's own lane do not hold it while it runs task steps
            let steps: i64 = views.iter().filter_map(|v| v.calls().task_step_total_ns()).sum();
            d.set_item("await_duration", awaited as f64 / 1e9)?;
            d.set_item("held_duration", (total - awaited - steps) as f64 / 1e9)?;
        }
        Ok(d)
    }
}

#[pymethods]
impl MPIRegion {
    /// A region named `name` over `regions` (`{rank: Region}`, order kept).
    #[new]
    fn new(py: Python<'_>, name: String, regions: &Bound<'_, PyDict>) -> PyResult<Self> {
        let mut parts = Vec::with_capacity(regions.len());
        for (rank, region) in regions.iter() {
            parts.push((rank.extract::<i64>()?, region.cast_into::<Region>()?.unbind()));
        }
        Ok(MPIRegion::of(py, name, parts))
    }
    #[getter(name)]
    fn py_name(&self) -> &str {
        &self.name
    }
    /// `{rank: Region}` (a new dict, this region's order).
    #[getter]
    fn regions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (rank, r) in &self.parts {
            d.set_item(rank, r.bind(py))?;
        }
        Ok(d)
    }
    /// Ranks with data, ascending.
    #[getter]
    fn ranks(&self) -> Vec<i64> {
        self.sorted_ranks()
    }
    fn __getitem__<'py>(&self, py: Python<'py>, rank: i64) -> PyResult<Bound<'py, Region>> {
        match self.parts.iter().find(|(k, _)| *k == rank) {
            Some((_, r)) => Ok(r.bind(py).clone()),
            None => Err(PyKeyError::new_err(format!(
                "Region {} has no data for rank {rank}. Available ranks: {:?}",
                py_repr(&self.name),
                self.sorted_ranks()
            ))),
        }
    }
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.sorted_ranks())?.try_iter().map(|i| i.into_any())
    }
    fn __contains__(&self, rank: i64) -> bool {
        self.parts.iter().any(|(k, _)| *k == rank)
    }
    fn __len__(&self) -> usize {
        self.parts.len()
    }
    #[getter]
    fn has_timing(&self, py: Python<'_>) -> bool {
        self.pooled(py, |p| p.has_timing())
    }
    #[getter]
    fn has_event_data(&self, py: Python<'_>) -> PyResult<bool> {
        for (_, r) in &self.parts {
            if !r.bind(py).getattr("has_event_data")?.extract::<bool>()? {
                return Ok(false);
            }
        }
        Ok(true)
    }
    #[getter]
    fn has_source(&self, py: Python<'_>) -> bool {
        self.source_file(py).is_some()
    }
    #[getter]
    fn has_gpu_timing(&self, py: Python<'_>) -> bool {
        self.pooled(py, |p| p.has_gpu_timing())
    }
    /// First non-None source file over the ranks (ascending).
    #[getter]
    fn source_file(&self, py: Python<'_>) -> Option<String> {
        self.first_captured(py, |v| v.calls().source_file.clone())
    }
    #[getter]
    fn source_lineno(&self, py: Python<'_>) -> Option<i64> {
        self.first_captured(py, |v| v.calls().source_line)
    }
    #[getter]
    fn source_text(&self, py: Python<'_>) -> Option<String> {
        self.first_captured(py, |v| v.calls().source_text.clone())
    }
    #[getter]
    fn tags<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let tags = self.first_captured(py, |v| (!v.calls().tags.is_empty()).then(|| v.calls().tags.clone()));
        PyTuple::new(py, tags.unwrap_or_default())
    }
    /// One dict per call (`name, rank` + `Region.events` keys) of `ranks` (default: all,
    /// ascending; an int or a list), times in s minus `origin`.
    #[pyo3(signature = (ranks=None, origin=0.0))]
    fn events<'py>(
        &self,
        py: Python<'py>,
        ranks: Option<Bound<'py, PyAny>>,
        origin: f64,
    ) -> PyResult<Bound<'py, PyList>> {
        let selected: Vec<i64> = match ranks {
            None => self.sorted_ranks(),
            Some(r) if r.extract::<i64>().is_ok() => vec![r.extract()?],
            Some(r) => r.extract()?,
        };
        let out = PyList::empty(py);
        for rank in selected {
            if let Some((_, r)) = self.parts.iter().find(|(k, _)| *k == rank) {
                for e in r.bind(py).get().event_dicts(py, origin, true)?.iter() {
                    let e = e.cast_into::<PyDict>()?;
                    e.set_item("name", &self.name)?;
                    e.set_item("rank", rank)?;
                    out.append(e)?;
                }
            }
        }
        Ok(out)
    }
    /// Pooled durations (s): the ranks' `durations` concatenated in order.
    #[getter]
    fn durations<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        numpy::PyArray1::from_vec(py, self.pooled(py, |p| p.durations().to_vec()))
    }
    #[getter]
    fn inclusive_durations<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        self.durations(py)
    }
    #[getter]
    fn gpu_durations<'py>(&self, py: Python<'py>) -> Option<Bound<'py, numpy::PyArray1<f64>>> {
        self.pooled(py, |p| p.gpu_durations()).map(|v| numpy::PyArray1::from_vec(py, v))
    }
    /// Pooled exclusive durations (s). Raises NestingError.
    #[getter]
    fn exclusive_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let mut all = Vec::new();
        for (_, r) in &self.parts {
            let r = r.bind(py);
            if r.getattr("has_timing")?.extract::<bool>()? {
                let v = r.get().view();
                all.extend(
                    v.exclusive_ns().map_err(crate::errors::nesting_err)?.values().iter().map(|&x| x as f64 / 1e9),
                );
                crate::errors::warn_set_aside(py, &v.analysis, v.calls().rank)?;
            }
        }
        Ok(numpy::PyArray1::from_vec(py, all))
    }
    #[getter]
    fn num_calls(&self, py: Python<'_>) -> i64 {
        self.pooled(py, |p| p.num_calls())
    }
    fn num_calls_per_rank<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (rank, r) in &self.parts {
            d.set_item(rank, RowStats::new(r.bind(py).get().view().calls()).num_calls())?;
        }
        Ok(d)
    }
    fn average_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.per_rank(py, |r| r.mean())
    }
    fn min_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.per_rank(py, |r| r.min())
    }
    fn max_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.per_rank(py, |r| r.max())
    }
    fn total_durations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.per_rank(py, |r| r.total())
    }
    #[getter]
    fn total_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.total())
    }
    #[getter]
    fn inclusive_duration(&self, py: Python<'_>) -> f64 {
        self.total_duration(py)
    }
    #[getter]
    fn gpu_total_duration(&self, py: Python<'_>) -> Option<f64> {
        self.pooled(py, |p| p.gpu_total())
    }
    /// Σ of the ranks' exclusive totals, s. Raises NestingError.
    #[getter]
    fn total_exclusive_duration(&self, py: Python<'_>) -> PyResult<f64> {
        self.exclusive_total(py)
    }
    #[getter]
    fn exclusive_duration(&self, py: Python<'_>) -> PyResult<f64> {
        self.exclusive_total(py)
    }
    #[getter]
    fn average_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.mean())
    }
    #[getter]
    fn gpu_average_duration(&self, py: Python<'_>) -> Option<f64> {
        self.pooled(py, |p| p.gpu_mean())
    }
    #[getter]
    fn std_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.std())
    }
    /// Pooled duration percentile (0-100, numpy linear) in s; None for summary-only data.
    fn percentile_duration(&self, py: Python<'_>, percentile: f64) -> PyResult<Option<f64>> {
        self.percentile(py, percentile)
    }
    #[getter]
    fn p50_duration(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        self.percentile(py, 50.0)
    }
    #[getter]
    fn p95_duration(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        self.percentile(py, 95.0)
    }
    #[getter]
    fn p99_duration(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        self.percentile(py, 99.0)
    }
    /// max / mean of the ranks' positive totals (0.0 with fewer than two).
    #[getter]
    fn rank_imbalance(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.rank_imbalance())
    }
    #[getter]
    fn rank_imbalance_pct(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.rank_imbalance_pct())
    }
    #[getter]
    fn min_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.min())
    }
    #[getter]
    fn max_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.max())
    }
    #[getter]
    fn first_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.first())
    }
    #[getter]
    fn last_duration(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.last())
    }
    #[getter]
    fn first_start_time(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.first_start())
    }
    #[getter]
    fn last_end_time(&self, py: Python<'_>) -> f64 {
        self.pooled(py, |p| p.last_end())
    }
    fn get_summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.summary_dict(py)
    }
    /// Pickle support: the name, the `(rank, Region)` parts in order and the colour.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py, (String, RegionParts, Py<PyAny>)>> {
        let parts = self.parts.iter().map(|(k, r)| (*k, r.clone_ref(py))).collect();
        let from = py.get_type::<MPIRegion>().getattr("_from_pickle")?;
        Ok((from, (self.name.clone(), parts, self.color.clone_ref(py))))
    }
    /// The region `__reduce__` describes.
    #[staticmethod]
    fn _from_pickle(name: String, parts: RegionParts, color: Py<PyAny>) -> Self {
        MPIRegion { name, parts, color }
    }
    fn __repr__(&self, py: Python<'_>) -> String {
        let (n, total, avg) = self.pooled(py, |p| (p.num_calls(), p.total(), p.mean()));
        format!(
            "<MPIRegion {}: {n} calls on {} rank(s), total {} s, avg {} s>",
            py_repr(&self.name),
            self.parts.len(),
            py_format_g(total, 6),
            py_format_g(avg, 6)
        )
    }
    fn _repr_html_(&self, py: Python<'_>) -> PyResult<String> {
        crate::results::html_tables::summary_html(py, "MPIRegion", &[self.summary_dict(py)?], None, None)
    }
}
