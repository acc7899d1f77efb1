//! `scope_profiler._fork`: what `fork()` does to the runs of the process (the
//! `os.register_at_fork` handlers and the record of which configurations they concern).
use pyo3::prelude::*;

/// The fork handlers of the process (one, `_fork._HOOKS`; registered with
/// `os.register_at_fork` at import): the configurations whose recorder keeps a thread
/// table or streams (weak), and the hook `scope-profiler run` calls last in a forked child.
#[pyclass(module = "scope_profiler._native")]
pub struct ForkHooks {
    /// `weakref.WeakSet` of the tracked configurations.
    tracked: Py<PyAny>,
    /// Called with no argument last in a forked child (`_follow.restart_in_child`).
    follow: Option<Py<PyAny>>,
}

fn getpid(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("os")?.call_method0("getpid")
}

impl ForkHooks {
    /// The tracked configurations' recorders (`config._native`), a snapshot.
    fn recorders<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let configs = py.import("builtins")?.getattr("list")?.call1((self.tracked.bind(py),))?;
        configs.try_iter()?.map(|config| config?.getattr("_native")).collect()
    }
}

#[pymethods]
impl ForkHooks {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        Ok(Self { tracked: py.import("weakref")?.getattr("WeakSet")?.call0()?.unbind(), follow: None })
    }

    /// Note the process that set `config` up (`config._owner_pid`, `os.getpid()`); keep
    /// `config` if its recorder keeps a thread table (`track_threads`) or streams
    /// (`flush_interval`: a fork during a flush must not leave the child's checkpoint turn
    /// taken by a thread it does not have).
    fn track(&self, config: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = config.py();
        config.setattr("_owner_pid", getpid(py)?)?;
        let threads = config.getattr_opt("track_threads")?.map(|v| v.is_truthy()).transpose()?.unwrap_or(false);
        let streams = config.getattr_opt("flush_interval")?.map(|v| v.is_truthy()).transpose()?.unwrap_or(false);
        if threads || streams {
            self.tracked.bind(py).call_method1("add", (config,))?;
        }
        Ok(())
    }

    /// Whether `config` was set up by another process (this one is a forked child): its
    /// `setup()`/`session()` then replaces the inherited run without `replace=True`.
    fn inherited(&self, config: &Bound<'_, PyAny>) -> PyResult<bool> {
        match config.getattr_opt("_owner_pid")? {
            Some(owner) if !owner.is_none() => Ok(!owner.eq(getpid(config.py())?)?),
            _ => Ok(false),
        }
    }

    /// Install (`None`: remove) the hook a forked child calls after taking its view of
    /// the inherited recorders.
    #[pyo3(signature = (hook))]
    fn set_follow_hook(&mut self, hook: Option<Py<PyAny>>) {
        self.follow = hook;
    }

    /// `before`: each tracked recorder samples the forking thread's CPU time, so a child
    /// can continue that thread's row.
    fn before_fork(&self, py: Python<'_>) -> PyResult<()> {
        for recorder in self.recorders(py)? {
            recorder.call_method0("_before_fork")?;
        }
        Ok(())
    }

    /// `after_in_child`: each tracked recorder takes the child's view of its thread table
    /// (threads that did not survive end at the fork; the forking thread's row goes on with
    /// the child's OS thread id, `threading.get_native_id()`), then the follow hook runs.
    fn after_fork_in_child(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let native_id = py.import("threading")?.call_method0("get_native_id")?;
        let (recorders, follow) = {
            let this = slf.borrow();
            (this.recorders(py)?, this.follow.as_ref().map(|f| f.clone_ref(py)))
        };
        for recorder in recorders {
            recorder.call_method1("_after_fork_in_child", (&native_id,))?;
        }
        // unborrowed: the hook installs the next one (`set_follow_hook`)
        if let Some(follow) = follow {
            follow.bind(py).call0()?;
        }
        Ok(())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ForkHooks>()
}
