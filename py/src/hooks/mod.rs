//! The process-wide hooks the trackers install and share.
//!
//! * [`asyncio_hooks`]: the task factory of every instrumented event loop (`_asyncio_hooks.py`);
//! * [`greenlet_hooks`]: the greenlet trace function (`_greenlet_hooks.py`);
//! * [`tracking`]: the thread-start hook (`_tracking.py`);
//! * [`untracked_loops`]: the check for tasks of event loops we do not instrument
//!   (`_untracked_loops.py`).
use pyo3::prelude::*;

pub mod asyncio_hooks;
pub mod greenlet_hooks;
pub mod ready_queue;
pub mod tracking;
pub mod untracked_loops;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    asyncio_hooks::register(m)?;
    tracking::register(m)?;
    greenlet_hooks::register(m)?;
    ready_queue::register(m)?;
    untracked_loops::register(m)?;
    Ok(())
}
