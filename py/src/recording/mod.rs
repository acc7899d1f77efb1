//! Recording glue: region objects, the `@profile` wrapper, the manager's native state and
//! the thread-exit hook. The hot paths (`with region:`, calling a decorated function) are
//! PyO3 methods that go straight into [`scope_profiler_recorder`]: one clock read at entry,
//! one at exit, per-thread buffers found through a thread-local, no lock, no allocation in
//! the steady state.
//!
//! * [`native_recorder`]: `NativeRecorder`, one configuration's recorder as the manager drives it;
//! * [`recorder_state`]: what the recorder and its regions share, thread registration;
//! * [`profile_region`]: `ProfileRegion`, `with region:`;
//! * [`profiled_function`]: `ProfiledFunction`, what `@profile` returns;
//! * [`lookup`]: `region(name)` / `profile_region(name)` as a native callable;
//! * [`names`]: region, thread and task names as a profile file can hold them;
//! * [`thread_exit`]: the thread-exit hook;
//! * [`tasks`]: task lanes (`TaskHandle`, `TimedCoroutine`);
//! * [`trio_lanes`]: trio tasks as lanes (`TrioLanes`, a trio instrument);
//! * [`stream`]: the `flush_interval` flusher thread;
//! * [`tracer`]: function-level tracing (`_tracer.py`);
//! * [`metadata`]: `metadata()` blocks and the call wrapper of `@profile(metadata=...)` (`_metadata.py`).
//!
//! # Threading and the GIL
//! The recorder's readers (snapshot, rewind, `num_calls`) require that no thread is inside
//! `enter`/`exit` of the same recorder at the same time (see the recorder crate docs). Here
//! that is the GIL: every `enter`/`exit` and every reader runs while holding it and never
//! releases it in between. The rebindable slot of a [`ProfiledFunction`] is likewise only
//! read and written with the GIL held. This module therefore assumes a GIL build of CPython
//! (not free-threaded 3.13t).
mod lookup;
pub mod metadata;
mod names;
mod native_recorder;
mod profile_region;
mod profiled_function;
mod recorder_state;
mod stream;
mod tasks;
mod thread_exit;
mod tracer;
mod trio_lanes;

pub(crate) use names::{check_region_name, recorded_name, region_name_text};
pub use native_recorder::NativeRecorder;
pub(crate) use profile_region::{next_setup_generation, setup_generation, ProfileRegion};
pub(crate) use profiled_function::{bind_as_method, ProfiledFunction};
pub(crate) use recorder_state::Shared;
pub(crate) use tasks::{record_callback_block, record_loop_idle};
pub use tasks::{TaskHandle, TimedCoroutine};
pub use thread_exit::ThreadExitSentinel;
pub use trio_lanes::TrioLanes;

use pyo3::prelude::*;

use names::check_region_name_py;
use native_recorder::to_meta_value;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeRecorder>()?;
    m.add_class::<ProfileRegion>()?;
    lookup::install_region_methods(m.py())?;
    m.add_class::<lookup::RegionCache>()?;
    m.add_class::<ProfiledFunction>()?;
    m.add_class::<ThreadExitSentinel>()?;
    m.add_class::<TaskHandle>()?;
    m.add_class::<TimedCoroutine>()?;
    m.add_class::<TrioLanes>()?;
    m.add_function(wrap_pyfunction!(perf_counter_ns, m)?)?;
    m.add_function(wrap_pyfunction!(thread_time_ns, m)?)?;
    m.add_function(wrap_pyfunction!(check_region_name_py, m)?)?;
    tracer::register(m)?;
    metadata::register(m)?;
    Ok(())
}

/// The recorder clock (`CLOCK_MONOTONIC`, ns); equal to `time.perf_counter_ns()` on Linux.
#[pyfunction]
fn perf_counter_ns() -> i64 {
    scope_profiler_recorder::now_ns()
}

/// CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`, ns).
#[pyfunction]
fn thread_time_ns() -> i64 {
    scope_profiler_recorder::thread_cpu_ns()
}
