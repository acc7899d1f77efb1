//! The thread-exit hook: the end and CPU total of a tracked thread, stamped on the dying
//! thread.
use std::sync::Arc;

use pyo3::prelude::*;
use scope_profiler_recorder::ThreadRecord;

/// Parked in a `threading.local` of the tracker; CPython drops it on the dying thread
/// when that thread's state is cleared (before `join()` returns), which is the only place
/// the thread's own CPU clock can be read. `Drop` stamps the exact CPU total and the end.
/// The clocks are Rust functions, so this also works during interpreter shutdown.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct ThreadExitSentinel {
    pub(super) record: Arc<ThreadRecord>,
}

impl Drop for ThreadExitSentinel {
    fn drop(&mut self) {
        self.record.mark_exited();
    }
}

#[pymethods]
impl ThreadExitSentinel {
    #[getter]
    fn index(&self) -> usize {
        self.record.index
    }
}
