//! The results side: the classes of `scope_profiler.results`, `.region`, `.mpi_region`,
//! `.call_stack` and `.concurrency`, views over a run held in Rust.
//!
//! * [`profiling_results`]: `ProfilingResults` (`results.py`);
//! * [`merge`]: `merge_results` (`results.py`);
//! * [`region`]: `Region` (`region.py`);
//! * [`mpi_region`]: `MPIRegion` (`mpi_region.py`);
//! * [`call_stack`]: `CallArrays`, `LaneSplit` and the reconstruction functions (`call_stack.py`);
//! * [`concurrency`]: `ThreadInfo`, `TaskInfo` (`concurrency.py`);
//! * [`frames`]: a run's Arrow tables for data-frame libraries (`*_frame()`);
//! * [`events`]: a run's calls as Python dicts (`events()`);
//! * [`html_tables`]: the notebook display (`_repr_html_`);
//! * [`pickling`]: `__reduce__` of the results classes through the run's columnar form;
//! * [`summary_rows`]: the rows of `thread_summary()` / `task_summary()`, whose repr rounds;
//! * [`compare`]: `Comparison` and `compare_runs` (`comparison.py`).
use pyo3::prelude::*;

pub mod call_stack;
pub mod compare;
pub mod concurrency;
pub mod events;
pub mod frames;
pub mod html_tables;
pub mod merge;
pub mod mpi_region;
pub mod pickling;
pub mod profiling_results;
pub mod region;
pub mod summary_rows;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<region::Region>()?;
    m.add_class::<mpi_region::MPIRegion>()?;
    m.add_class::<profiling_results::ProfilingResults>()?;
    m.add_class::<concurrency::ThreadInfo>()?;
    m.add_class::<concurrency::TaskInfo>()?;
    pickling::register(m)?;
    m.add_function(wrap_pyfunction!(merge::merge_results, m)?)?;
    call_stack::register(m)?;
    compare::register(m)?;
    summary_rows::register(m)?;
    Ok(())
}
