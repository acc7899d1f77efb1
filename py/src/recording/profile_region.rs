//! `ProfileRegion`: a region object, `with region:` being the recorder's hot path, and
//! the setup generation after which a region looks itself up again.
use std::cell::UnsafeCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};
use scope_profiler_recorder::RegionMeta;

use super::names::{region_name_str, region_name_text};
use super::{lookup, ProfiledFunction, Shared};

/// A region as returned by `ProfileManager.region(name)`: a re-entrant context manager
/// usable from any thread. `__enter__`/`__exit__` are the recorder's hot path.
#[pyclass(module = "scope_profiler._native", frozen)]
///
/// Small (one per region name): the name, tags and source live in the recorder's
/// region table, read through `id`; only a region made without a recorder (`disabled()`)
/// carries its own name and tags.
pub struct ProfileRegion {
    /// What the region records into; replaced when it is re-resolved after a `setup()` or
    /// `reset()` (see [`ProfileRegion::resolve`]). Read and written with the GIL held.
    binding: UnsafeCell<RegionBinding>,
    /// The manager's region lookup this region came from (None: made without a manager):
    /// through it a region object kept across `setup()` calls records into the current run.
    cache: Option<Py<lookup::RegionCache>>,
    /// This region's bound `__enter__` and `__exit__`, made on first use and handed out by
    /// `with` from then on ([`lookup::RegionMethod`]); read and written with the GIL held.
    bound: UnsafeCell<[Option<Py<PyAny>>; 2]>,
    /// Bit `k`: `bound[k]` was looked up once (it is cached at the second lookup, so a name
    /// used once keeps no bound method: 100,000 dynamic names stay small).
    looked_up: std::cell::Cell<u8>,
    /// Made by the native lookup and not in the manager's dict (a name used once so far):
    /// its drop removes it from the lookup's unlisted map (`lookup::Binding::unlisted`).
    unlisted: std::cell::Cell<bool>,
}

impl Drop for ProfileRegion {
    fn drop(&mut self) {
        if self.unlisted.get() {
            if let Some(cache) = &self.cache {
                // SAFETY: a Python object is dropped with the GIL held.
                let py = unsafe { Python::assume_attached() };
                cache.bind(py).get().forget_unlisted(self.b().id, self as *const ProfileRegion as usize);
            }
        }
    }
}

/// What a [`ProfileRegion`] records into, as of one [`setup_generation`].
pub(super) struct RegionBinding {
    /// The recorder whose region table defines `id`; None for a disabled region.
    shared: Option<Arc<Shared>>,
    /// False = disabled (before `setup()`, `deactivate_profiling`): enter/exit do nothing.
    pub(super) enabled: bool,
    id: u32,
    /// Name and tags of a region without a recorder.
    detached: Option<Box<(String, Vec<String>)>>,
    /// The [`setup_generation`] this binding was made or checked at.
    generation: u64,
}

/// Bumped by every manager's `setup()` and `reset()` (`RegionCache::bind`): a region whose
/// binding is older looks itself up again before its next call.
static SETUP_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The current setup generation (see [`SETUP_GENERATION`]).
#[inline(always)]
pub(crate) fn setup_generation() -> u64 {
    SETUP_GENERATION.load(Ordering::Relaxed)
}

/// A new setup generation: every region re-resolves before its next call.
pub(crate) fn next_setup_generation() {
    SETUP_GENERATION.fetch_add(1, Ordering::Relaxed);
}

// SAFETY: `binding` and `bound` are only accessed with the GIL held (GIL build).
unsafe impl Sync for ProfileRegion {}

impl ProfileRegion {
    /// Region `id` of `shared`'s table, looked up through `cache`.
    pub(crate) fn of(shared: &Arc<Shared>, id: u32, enabled: bool, cache: Option<Py<lookup::RegionCache>>) -> Self {
        let binding = RegionBinding {
            shared: Some(Arc::clone(shared)),
            enabled,
            id,
            detached: None,
            generation: setup_generation(),
        };
        ProfileRegion {
            binding: UnsafeCell::new(binding),
            cache,
            bound: Default::default(),
            looked_up: Default::default(),
            unlisted: Default::default(),
        }
    }

    /// Mark whether the region is outside the manager's dict (see [`ProfileRegion::drop`]).
    pub(crate) fn set_unlisted(&self, unlisted: bool) {
        self.unlisted.set(unlisted);
    }

    /// The binding as of now (GIL held: no Python code runs while it is borrowed).
    #[inline(always)]
    pub(super) fn b(&self) -> &RegionBinding {
        // SAFETY: written only by `resolve`, with the GIL held and no borrow alive across it.
        unsafe { &*self.binding.get() }
    }

    /// The cache of this region's bound `__enter__` (0) and `__exit__` (1): dereference it
    /// only with the GIL held, while no other reference into it is alive.
    #[inline(always)]
    pub(crate) fn bound_methods(&self) -> *mut [Option<Py<PyAny>>; 2] {
        self.bound.get()
    }

    /// Whether bound method `which` was looked up before (and note that it is now).
    #[inline(always)]
    pub(crate) fn looked_up_before(&self, which: usize) -> bool {
        let bits = self.looked_up.get();
        self.looked_up.set(bits | (1 << which));
        bits & (1 << which) != 0
    }

    /// The recorder, when recording into it.
    #[inline(always)]
    fn active(&self) -> Option<&Arc<Shared>> {
        let b = self.b();
        b.shared.as_ref().filter(|_| b.enabled)
    }

    #[inline]
    pub(super) fn enter(&self, py: Python<'_>) -> PyResult<()> {
        self.fresh(py)?;
        let mut give_way = false;
        if let Some(sh) = self.active() {
            // SAFETY: the calling thread's own state.
            let st = unsafe { &*sh.state(py)? };
            if sh.rec.async_columns() && st.current().is_null() {
                crate::hooks::untracked_loops::region_outside_task(py);
            }
            let paused = sh.rec.paused();
            st.enter(self.b().id, paused);
            give_way = paused && sh.rec.stopped();
        }
        if give_way {
            // the recording has ended (the exit-time finalize, the end of `run`): a thread
            // still entering regions (a busy daemon thread) lets the ending thread have the
            // GIL, so that writing the profile is not starved (nothing of `self` is borrowed)
            py.detach(std::thread::yield_now);
        }
        Ok(())
    }

    /// After a `setup()` or `reset()` of any manager: take the binding of what the manager's
    /// lookup gives for this name now (the current run's region, or a disabled one), so a
    /// region object kept across `setup()` calls records into the current run, as a region
    /// looked up by name does (never into the finished run, whose calls no file would get).
    #[cold]
    fn resolve(&self, py: Python<'_>) -> PyResult<()> {
        let generation = setup_generation();
        let Some(cache) = self.cache.as_ref().map(|c| c.clone_ref(py)) else {
            // SAFETY: GIL held; no borrow of the binding is alive here.
            unsafe { (*self.binding.get()).generation = generation };
            return Ok(());
        };
        let cache = cache.bind(py);
        if self.b().generation >= cache.get().bound_at() {
            // made or checked since its own manager's last setup()/reset(): another manager's
            // setup bumped the generation, this binding is current
            // SAFETY: GIL held; no borrow of the binding is alive here.
            unsafe { (*self.binding.get()).generation = generation };
            return Ok(());
        }
        let (name, tags) = (self.name_string(), self.tags_vec());
        // Python may run in here (a miss creates the region): nothing of `self` is borrowed
        let mut current = lookup::RegionCache::current(cache, &name, tags.clone())?;
        if let Ok(r) = current.cast::<ProfileRegion>() {
            if std::ptr::eq(r.get(), self) {
                // itself, bound to an earlier run: another thread looked the name up while
                // setup() ran and put it in the dict (kept, the whole run would record nothing
                // under that name); the current run's region replaces it
                cache.get().evict(py, &name, &current)?;
                current = lookup::RegionCache::current(cache, &name, tags)?;
            }
        }
        // SAFETY: GIL held; no other borrow of this binding is alive (`c` is another object's).
        let binding = unsafe { &mut *self.binding.get() };
        if let Ok(r) = current.cast::<ProfileRegion>() {
            if !std::ptr::eq(r.get(), self) {
                let c = r.get().b();
                binding.shared = c.shared.clone();
                binding.enabled = c.enabled;
                binding.id = c.id;
                binding.detached = c.detached.clone();
            }
        }
        binding.generation = generation;
        Ok(())
    }

    /// Re-resolve when a `setup()`/`reset()` happened since the binding was made.
    #[inline]
    fn fresh(&self, py: Python<'_>) -> PyResult<()> {
        if self.b().generation != setup_generation() {
            self.resolve(py)?;
        }
        Ok(())
    }

    /// The region's tags (from its table row, or its own for a region without a recorder).
    fn tags_vec(&self) -> Vec<String> {
        match &self.b().detached {
            Some(d) => d.1.clone(),
            None => self.row(|m| m.tags().to_vec()).unwrap_or_default(),
        }
    }

    /// `f` of this region's table row, or None for a region without a recorder.
    fn row<T>(&self, f: impl FnOnce(&RegionMeta) -> T) -> Option<T> {
        let b = self.b();
        b.shared.as_ref().map(|sh| f(&sh.meta()[b.id as usize]))
    }

    fn name_string(&self) -> String {
        match &self.b().detached {
            Some(d) => d.0.clone(),
            None => self.row(|m| m.name.to_string()).unwrap_or_default(),
        }
    }

    #[inline]
    pub(super) fn exit(&self) {
        if let Some(sh) = self.active() {
            if let Some(st) = sh.rec.local() {
                // SAFETY: the calling thread's own state.
                unsafe { &*st }.exit(self.b().id);
            }
        }
    }
}

#[pymethods]
impl ProfileRegion {
    /// A disabled region (what `region()` returns before `setup()`); with `cache` (the
    /// manager's `RegionCache`) it records once a later `setup()` records its name.
    #[staticmethod]
    #[pyo3(signature = (name, tags=Vec::new(), cache=None))]
    fn disabled(name: &Bound<'_, PyAny>, tags: Vec<String>, cache: Option<Py<lookup::RegionCache>>) -> PyResult<Self> {
        let name = region_name_text(region_name_str(name)?)?.into_owned();
        let binding = RegionBinding {
            shared: None,
            enabled: false,
            id: 0,
            detached: Some(Box::new((name, tags))),
            generation: setup_generation(),
        };
        Ok(ProfileRegion {
            binding: UnsafeCell::new(binding),
            cache,
            bound: Default::default(),
            looked_up: Default::default(),
            unlisted: Default::default(),
        })
    }

    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Self>> {
        slf.get().enter(slf.py())?;
        Ok(slf.clone())
    }

    fn __exit__(&self, _exc_type: &Bound<'_, PyAny>, _exc: &Bound<'_, PyAny>, _tb: &Bound<'_, PyAny>) -> bool {
        self.exit();
        false
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the collector runs with the GIL held.
        for method in unsafe { &*self.bound.get() }.iter().flatten() {
            visit.call(method)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: the collector runs with the GIL held.
        let old = std::mem::take(unsafe { &mut *self.bound.get() });
        drop(old);
    }

    /// Wrap `func` so each call is recorded in this region (same path as `with`).
    fn wrap(slf: &Bound<'_, Self>, func: Py<PyAny>) -> ProfiledFunction {
        ProfiledFunction { func, binding: UnsafeCell::new(Some(slf.clone().unbind())) }
    }

    #[getter]
    fn region_name(&self) -> String {
        self.name_string()
    }

    #[getter]
    fn name(&self) -> String {
        self.name_string()
    }

    #[getter]
    fn tags(&self) -> Vec<String> {
        self.tags_vec()
    }

    /// Whether a call now would be recorded (as of the manager's current `setup()`).
    #[getter]
    fn enabled(&self, py: Python<'_>) -> PyResult<bool> {
        self.fresh(py)?;
        Ok(self.active().is_some())
    }

    /// Record the defining site; first writer wins.
    #[pyo3(signature = (filename, lineno, text=None))]
    fn set_source(&self, filename: Option<String>, lineno: Option<i64>, text: Option<String>) {
        let b = self.b();
        let (Some(sh), Some(filename)) = (&b.shared, filename) else { return };
        sh.regions.set_source(b.id, filename, lineno, text);
    }

    #[getter]
    fn source_file(&self) -> Option<String> {
        self.row(|m| m.source_file.as_deref().map(str::to_owned)).flatten()
    }

    #[getter]
    fn source_lineno(&self) -> Option<i64> {
        self.row(|m| m.source_line).flatten()
    }

    #[getter]
    fn source_text(&self) -> Option<String> {
        self.row(|m| m.source_text().map(str::to_owned)).flatten()
    }

    #[getter]
    fn has_source(&self) -> bool {
        self.source_file().is_some()
    }

    /// Calls entered in the current recording (all threads, open ones included).
    #[getter]
    fn num_calls(&self, py: Python<'_>) -> PyResult<u64> {
        self.fresh(py)?;
        Ok(match self.active() {
            // SAFETY: GIL held (module contract).
            Some(sh) => unsafe { sh.rec.num_calls(self.b().id) },
            None => 0,
        })
    }

    /// Indices of the threads that entered this region (tracking only meaningful).
    #[getter]
    fn thread_indices(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        self.fresh(py)?;
        Ok(match self.active() {
            // SAFETY: GIL held (module contract).
            Some(sh) => unsafe { sh.rec.threads_of_region(self.b().id) },
            None => Vec::new(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.fresh(py)?;
        let kind = if self.active().is_some() { "active" } else { "disabled" };
        Ok(format!("<ProfileRegion {:?} ({kind})>", self.name_string()))
    }
}
