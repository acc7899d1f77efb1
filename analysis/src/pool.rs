//! The rayon pool the analyses run on, safe across `fork()`.
//!
//! rayon's global pool is created once per process image: a child forked after the parent
//! used it inherits a registry whose worker threads do not exist in the child, and the
//! first parallel job there waits forever (a `multiprocessing` worker forked after the
//! parent read a profile would hang in its own `finalize()`). So the analyses run on a pool
//! of their own, created on first use by each process (the process id is checked on every
//! entry; an inherited pool is leaked, never touched). Calls from a rayon worker thread run
//! inline on that thread's pool (nested parallelism, and the CLI's file-level pool).
use std::sync::{Arc, Mutex};

use rayon::ThreadPool;

static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);

fn pool() -> Option<Arc<ThreadPool>> {
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, pool)) = slot.as_ref() {
        if *owner == pid {
            return Some(Arc::clone(pool));
        }
    }
    if let Some(inherited) = slot.take() {
        // A forked child's copy of the parent's pool: its threads are not ours to join.
        std::mem::forget(inherited);
    }
    let pool =
        Arc::new(rayon::ThreadPoolBuilder::new().thread_name(|i| format!("scope-profiler-analysis-{i}")).build().ok()?);
    *slot = Some((pid, Arc::clone(&pool)));
    Some(pool)
}

/// Run `op` on this process's analysis pool (inline when already on a rayon thread, or
/// when no pool can be created); parallel iterators inside use that pool.
pub fn install<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return op();
    }
    match pool() {
        Some(pool) => pool.install(op),
        None => op(),
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    #[test]
    fn runs_on_a_pool_and_nests() {
        let sum: u64 = super::install(|| (0..1_000_000u64).into_par_iter().map(|x| x % 7).sum());
        assert_eq!(sum, (0..1_000_000u64).map(|x| x % 7).sum::<u64>());
        let nested = super::install(|| super::install(|| rayon::current_thread_index().is_some()));
        assert!(nested);
    }
}
