//! `ProfileManager.region(name)` / `profile_region(name)` as a native callable:
//! written inside a function, the lookup runs on every call, so it is a builtin function
//! (`METH_FASTCALL`, no Python frame, no descriptor binding) whose hit path is one dict probe
//! of the manager's region dict. A new name is created here too (region table, defining
//! site from the caller's frame), unless the call needs the Python path (`functions=` /
//! `tags=` given, profiling off, `capture_region_source`), which is the manager's
//! `_create_region`.
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Arc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::{region_name_text, ProfileRegion, Shared};

/// Modules whose frames are not user call sites (their regions get no defining site).
const INTERNAL_MODULES: [&str; 3] = ["scope_profiler._manager", "scope_profiler", "scope_profiler._settings"];

/// What the native miss path needs from the active configuration (set by `bind`).
struct Binding {
    shared: Arc<Shared>,
    /// `_recorded_path(filename)` of the manager: the file name as recorded.
    recorded_path: Py<PyAny>,
    /// Raw `co_filename` -> recorded path, computed once per file per `setup()` (the
    /// working directory and `sys.path` as of the first region of that file).
    paths: HashMap<String, String>,
    /// The defining site per call site (code object, instruction offset): a loop making
    /// many names at one line reads the frame once, not per name.
    sites: HashMap<(usize, i32), Site>,
    /// Ids of the regions this binding created natively, ascending: with the manager's
    /// dict, the registered names (`RegionCache.registered`).
    created: Vec<u32>,
    /// The live region object of each natively created name not (yet) in the manager's
    /// dict: id -> (object, address of its contents). A name used once keeps no Python
    /// object after its call (a program may make 100,000 dynamic names); its second lookup while the
    /// first object lives returns that object and lists it in the dict, so a name gives one
    /// object as long as anyone holds it. Entries leave on the object's drop.
    unlisted: HashMap<u32, (usize, usize)>,
}

/// A call site's defining site as recorded; `path` None = a frame of this package (no site).
struct Site {
    /// Keeps the code object (whose address is the key) alive.
    _code: Py<PyAny>,
    path: Option<String>,
    line: i64,
}

/// The region cache of one manager class: its `_regions` dict (name -> `ProfileRegion`),
/// the Python creation path and, while recording, the recorder. `lookup` is the callable
/// installed as `region` / `profile_region`.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct RegionCache {
    regions: Py<PyDict>,
    create: Py<PyAny>,
    /// Read and written only with the GIL held (GIL build; see the module docs).
    binding: UnsafeCell<Option<Binding>>,
    /// The setup generation of the last `bind`: a region made or checked at an older one
    /// may be bound to an earlier run ([`ProfileRegion::resolve`](super::ProfileRegion)).
    bound_at: std::sync::atomic::AtomicU64,
}

// SAFETY: `binding` is only accessed with the GIL held.
unsafe impl Sync for RegionCache {}

struct MethodDef(ffi::PyMethodDef);
// SAFETY: the definition is immutable and its pointers are 'static.
unsafe impl Sync for MethodDef {}

static LOOKUP_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"region".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: lookup },
    ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
    ml_doc: LOOKUP_DOC.as_ptr(),
});

const LOOKUP_DOC: &CStr = c"region(region_name, functions=None, tags=None)
--

The region named ``region_name`` (created on first use, cached until the next
``setup()``): a re-entrant context manager usable from any thread. A cached name costs
one dict probe (no Python frame runs).

``functions`` is accepted for compatibility (line profiling is not implemented).
Reusing a name with different non-None ``tags`` raises ``ValueError``, and so does
a name the profile file cannot hold unchanged (one with a NUL character).";

/// The fastcall entry point: `slf` is the `RegionCache`.
unsafe extern "C" fn lookup(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this with the GIL held and `slf` the cache this function was
    // created for (`RegionCache::lookup`).
    let py = unsafe { Python::assume_attached() };
    let slf = unsafe { Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<RegionCache>() };
    let cache: &RegionCache = slf.get();
    let nargs = unsafe { ffi::PyVectorcall_NARGS(nargsf as usize) };
    let no_kwargs = kwnames.is_null() || unsafe { ffi::PyTuple_GET_SIZE(kwnames) } == 0;
    if nargs == 0 && no_kwargs {
        // not the Python path's own message, which names a private method
        pyo3::exceptions::PyTypeError::new_err("region() missing 1 required argument: 'region_name'").restore(py);
        return std::ptr::null_mut();
    }
    if nargs == 1 && no_kwargs {
        let name = unsafe { *args };
        let hit = unsafe { ffi::PyDict_GetItemWithError(cache.regions.as_ptr(), name) };
        if !hit.is_null() {
            unsafe { ffi::Py_INCREF(hit) };
            return hit;
        }
        if unsafe { !ffi::PyErr_Occurred().is_null() } {
            return std::ptr::null_mut(); // unhashable name: the dict's TypeError
        }
        match RegionCache::create_native(&slf, py, unsafe { Bound::from_borrowed_ptr(py, name) }) {
            Ok(Some(region)) => return region.into_ptr(),
            Ok(None) => {}
            Err(e) => {
                e.restore(py);
                return std::ptr::null_mut();
            }
        }
    }
    // SAFETY: forwarding the caller's vectorcall arguments unchanged.
    unsafe { ffi::PyObject_Vectorcall(cache.create.as_ptr(), args, nargsf as usize, kwnames) }
}

impl RegionCache {
    /// A new region for `name` made natively, or None when the Python path must run.
    fn create_native<'py>(
        slf: &Bound<'py, RegionCache>,
        py: Python<'py>,
        name: Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let this = slf.get();
        // SAFETY: GIL held; nothing below re-enters `bind` before the borrow ends except the
        // `recorded_path` call, after which the binding is looked up again.
        let Some(binding) = (unsafe { &*this.binding.get() }) else { return Ok(None) };
        let Ok(text) = name.cast::<PyString>() else { return Ok(None) };
        let text = region_name_text(text)?;
        let text: &str = &text;
        let shared = Arc::clone(&binding.shared);
        let (id, new) = shared.regions.intern(text, &[]);
        if let Some(live) = this.take_unlisted(id) {
            return this.list(py, &name, live).map(Some);
        }
        if let Some((path, line)) = this.caller_site(py)? {
            shared.regions.set_source(id, path, Some(line), None);
        }
        let region = Bound::new(py, ProfileRegion::of(&shared, id, true, Some(slf.clone().unbind())))?;
        // Untracked, 100,000 names trigger no full collections. Its references
        // (an Arc, this cache) come back to it only through the manager's dict, which every
        // setup()/reset() clears; its cached bound methods make a cycle of their own:
        // `region_method_get` tracks it then.
        unsafe { ffi::PyObject_GC_UnTrack(region.as_ptr().cast()) };
        if !new {
            return this.list(py, &name, region).map(Some);
        }
        // a new name: not in the dict until its second lookup (see `Binding::unlisted`)
        // SAFETY: GIL held; no Python code ran since `binding` was read above except the
        // site resolver, so look the binding up again.
        if let Some(b) = unsafe { &mut *this.binding.get() } {
            b.created.push(id);
            b.unlisted.insert(id, (region.as_ptr() as usize, region.get() as *const ProfileRegion as usize));
            region.get().set_unlisted(true);
        }
        Ok(Some(region.into_any()))
    }

    /// Put `region` in the manager's dict under `name`, unless another thread put one there
    /// meanwhile (the region table maps both to one id): the object kept.
    fn list<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        region: Bound<'py, ProfileRegion>,
    ) -> PyResult<Bound<'py, PyAny>> {
        region.get().set_unlisted(false);
        // SAFETY: GIL held; a borrowed reference to the kept value, or null with an error.
        let kept = unsafe { ffi::PyDict_SetDefault(self.regions.as_ptr(), name.as_ptr(), region.as_ptr()) };
        if kept.is_null() {
            return Err(PyErr::fetch(py));
        }
        Ok(unsafe { Bound::from_borrowed_ptr(py, kept) })
    }

    /// The live unlisted object of region `id`, removed from the unlisted map.
    fn take_unlisted<'py>(&self, id: u32) -> Option<Bound<'py, ProfileRegion>> {
        let py = unsafe { Python::assume_attached() };
        // SAFETY: GIL held (callers), no other borrow of the binding alive.
        let (obj, _) = unsafe { &mut *self.binding.get() }.as_mut()?.unlisted.remove(&id)?;
        // SAFETY: the entry leaves the map when its object is dropped, so it is alive; the
        // map holds no reference, so take a new one.
        Some(unsafe { Bound::from_borrowed_ptr(py, obj as *mut ffi::PyObject).cast_into_unchecked() })
    }

    /// Forget the unlisted entry of region `id` if it is the object at `contents` (called
    /// when that object is dropped, GIL held).
    pub(crate) fn forget_unlisted(&self, id: u32, contents: usize) {
        // SAFETY: GIL held (a drop of a Python object).
        if let Some(b) = unsafe { &mut *self.binding.get() } {
            if b.unlisted.get(&id).is_some_and(|&(_, c)| c == contents) {
                b.unlisted.remove(&id);
            }
        }
    }

    /// The recorded path of `file` (cached per binding); None when the binding went away.
    fn recorded_path(&self, py: Python<'_>, file: String) -> PyResult<Option<String>> {
        // SAFETY: GIL held.
        let Some(binding) = (unsafe { &*self.binding.get() }) else { return Ok(None) };
        let resolver = binding.recorded_path.clone_ref(py);
        let path: String = resolver.call1(py, (file.as_str(),))?.extract(py)?;
        // the call ran Python code: look the binding up again
        if let Some(b) = unsafe { &mut *self.binding.get() } {
            b.paths.insert(file, path.clone());
        }
        Ok(Some(path))
    }
}

impl RegionCache {
    /// `(recorded path, line)` of the Python frame calling the lookup (cached per call
    /// site), or None for a frame of this package or without a binding.
    fn caller_site(&self, py: Python<'_>) -> PyResult<Option<(String, i64)>> {
        // SAFETY: GIL held; a borrowed reference to the running frame (or null).
        let frame = unsafe { ffi::PyEval_GetFrame() };
        if frame.is_null() {
            return Ok(None);
        }
        // SAFETY: a live frame; GetCode returns a new reference.
        let code = unsafe { Bound::from_owned_ptr(py, ffi::PyFrame_GetCode(frame).cast::<ffi::PyObject>()) };
        let key = (code.as_ptr() as usize, unsafe { ffi::PyFrame_GetLasti(frame) });
        // SAFETY: GIL held; the borrow ends before any Python code runs.
        if let Some(site) = unsafe { &*self.binding.get() }.as_ref().and_then(|b| b.sites.get(&key)) {
            return Ok(site.path.clone().map(|p| (p, site.line)));
        }
        let frame = unsafe { Bound::from_borrowed_ptr(py, frame.cast::<ffi::PyObject>()) };
        let (path, line) = match frame_site(py, &frame)? {
            Some((file, line)) => {
                // SAFETY: as above.
                let known = unsafe { &*self.binding.get() }.as_ref().and_then(|b| b.paths.get(&file).cloned());
                match known {
                    Some(p) => (Some(p), line),
                    None => (self.recorded_path(py, file)?, line),
                }
            }
            None => (None, 0),
        };
        // the resolver ran Python code: look the binding up again
        if let Some(b) = unsafe { &mut *self.binding.get() } {
            b.sites.insert(key, Site { _code: code.unbind(), path: path.clone(), line });
        }
        Ok(path.map(|p| (p, line)))
    }
}

/// `(co_filename, line)` of `frame`, unless it belongs to this package (`INTERNAL_MODULES`).
fn frame_site(py: Python<'_>, frame: &Bound<'_, PyAny>) -> PyResult<Option<(String, i64)>> {
    let globals = frame.getattr(pyo3::intern!(py, "f_globals"))?;
    if let Ok(globals) = globals.cast::<PyDict>() {
        if let Some(module) = globals.get_item(pyo3::intern!(py, "__name__"))? {
            if let Ok(module) = module.cast::<PyString>() {
                if INTERNAL_MODULES.contains(&module.to_str()?) {
                    return Ok(None);
                }
            }
        }
    }
    let file: String =
        frame.getattr(pyo3::intern!(py, "f_code"))?.getattr(pyo3::intern!(py, "co_filename"))?.extract()?;
    let line = unsafe { ffi::PyFrame_GetLineNumber(frame.as_ptr().cast()) } as i64;
    Ok(Some((file, line)))
}

#[pymethods]
impl RegionCache {
    /// A cache over `regions` (the manager's name -> region dict) whose misses go to
    /// `create(region_name, functions=None, tags=None)` unless made natively.
    #[new]
    fn new(regions: Py<PyDict>, create: Py<PyAny>) -> Self {
        RegionCache { regions, create, binding: UnsafeCell::new(None), bound_at: Default::default() }
    }

    /// The `region(region_name, functions=None, tags=None)` callable over this cache (a
    /// builtin function: not bound when read from a class or an instance).
    #[getter]
    fn lookup<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY: a static method definition; the function holds a reference to `slf`.
        unsafe {
            let f = ffi::PyCMethod_New(
                &LOOKUP_DEF.0 as *const ffi::PyMethodDef as *mut ffi::PyMethodDef,
                slf.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            Bound::from_owned_ptr_or_err(slf.py(), f)
        }
    }

    /// The registered region names, in creation order: those in the manager's dict and those
    /// the native lookup made since the last `bind` (used once so far), by region id; then
    /// dict names the recorder does not know (disabled regions), in dict order. Taken
    /// without running Python code (another thread cannot change it meanwhile).
    fn registered(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let dict = self.regions.bind(py);
        // SAFETY: GIL held; no Python code runs while the binding is borrowed (the dict holds
        // str keys: probing it runs none).
        let Some(b) = (unsafe { &*self.binding.get() }) else {
            return dict.keys().iter().map(|k| k.extract::<String>()).collect();
        };
        let mut ids = b.created.clone();
        let mut unknown = Vec::new();
        for key in dict.keys().iter() {
            let name: String = key.extract()?;
            match b.shared.regions.find(&name) {
                Some(id) => ids.push(id),
                None => unknown.push(name),
            }
        }
        ids.sort_unstable();
        ids.dedup();
        let table = b.shared.regions.lock();
        Ok(ids.iter().map(|&id| table[id as usize].name.to_string()).chain(unknown).collect())
    }

    /// `(name, calls)` of each region the native lookup made since the last `bind` that is
    /// not in the manager's dict (used once so far), in creation order; calls as
    /// `ProfileRegion.num_calls` counts them (all threads, open ones included).
    fn unlisted_calls(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        // SAFETY: as `registered`.
        let Some(b) = (unsafe { &*self.binding.get() }) else { return Ok(Vec::new()) };
        let dict = self.regions.bind(py);
        let table = b.shared.regions.lock();
        let mut out = Vec::new();
        for &id in &b.created {
            let name = &*table[id as usize].name;
            if !dict.contains(name)? {
                // SAFETY: GIL held (module contract): no thread is inside enter/exit.
                out.push((name.to_owned(), unsafe { b.shared.rec.num_calls(id) }));
            }
        }
        Ok(out)
    }

    /// The region registered as `region_name` (in the manager's dict, or made by the native
    /// lookup and used once so far: then listed in the dict now), else None. Creates nothing.
    fn get<'py>(slf: &Bound<'py, Self>, region_name: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let this = slf.get();
        if let Some(r) = this.regions.bind(slf.py()).get_item(region_name)? {
            return Ok(Some(r));
        }
        let Ok(text) = region_name.cast::<PyString>() else { return Ok(None) };
        // SAFETY: GIL held; the borrow ends before any Python code runs.
        let known = unsafe { &*this.binding.get() }.as_ref().is_some_and(|b| {
            b.shared.regions.find(text.to_str().unwrap_or("")).is_some_and(|id| b.created.binary_search(&id).is_ok())
        });
        if !known {
            return Ok(None);
        }
        Ok(Some(RegionCache::lookup(slf)?.call1((region_name,))?))
    }

    /// The live object of `region_name` made by the native lookup and not yet in the
    /// manager's dict, listed in the dict now; None when there is none (the Python creation
    /// path then makes the region).
    fn adopt<'py>(slf: &Bound<'py, Self>, region_name: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let this = slf.get();
        let Ok(text) = region_name.cast::<PyString>() else { return Ok(None) };
        // SAFETY: GIL held; the borrow ends before any Python code runs.
        let id = unsafe { &*this.binding.get() }.as_ref().and_then(|b| b.shared.regions.find(text.to_str().ok()?));
        match id.and_then(|id| this.take_unlisted(id)) {
            Some(live) => this.list(slf.py(), region_name, live).map(Some),
            None => Ok(None),
        }
    }

    /// Record new names natively into `recorder` (`None`: profiling off, or regions need
    /// the Python path, e.g. `capture_region_source`). `recorded_path(filename)` gives the
    /// defining file as recorded. Called by every `setup()` and `reset()`.
    #[pyo3(signature = (recorder=None, recorded_path=None))]
    fn bind(&self, recorder: Option<&Bound<'_, super::NativeRecorder>>, recorded_path: Option<Py<PyAny>>) {
        let binding = match (recorder, recorded_path) {
            (Some(r), Some(p)) => Some(Binding {
                shared: Arc::clone(&r.get().shared),
                recorded_path: p,
                paths: HashMap::new(),
                sites: HashMap::new(),
                created: Vec::new(),
                unlisted: HashMap::new(),
            }),
            _ => None,
        };
        // SAFETY: GIL held (a pymethod); the old binding is dropped under the GIL.
        unsafe { *self.binding.get() = binding };
        // every region object (of every manager) looks itself up again before its next call
        super::next_setup_generation();
        self.bound_at.store(super::setup_generation(), std::sync::atomic::Ordering::Relaxed);
    }
}

impl RegionCache {
    /// What `region(name)` (with `tags`, when any) gives now: the current run's region, or
    /// a disabled one (`ProfileRegion::resolve` of a region kept across `setup()` calls).
    /// The same path as a call of [`RegionCache::lookup`]'s function.
    /// The setup generation of this cache's last `bind` (0: never bound).
    pub(crate) fn bound_at(&self) -> u64 {
        self.bound_at.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Remove `region` from the manager's dict under `name` if it is there (a region of an
    /// earlier run that another thread put there while `setup()` ran).
    pub(crate) fn evict(&self, py: Python<'_>, name: &str, region: &Bound<'_, PyAny>) -> PyResult<()> {
        let dict = self.regions.bind(py);
        if dict.get_item(name)?.is_some_and(|r| r.is(region)) {
            dict.del_item(name)?;
        }
        Ok(())
    }

    pub(crate) fn current<'py>(
        slf: &Bound<'py, RegionCache>,
        name: &str,
        tags: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let region = RegionCache::lookup(slf)?;
        if tags.is_empty() {
            return region.call1((name,));
        }
        let kwargs = PyDict::new(slf.py());
        kwargs.set_item("tags", tags)?;
        region.call((name,), Some(&kwargs))
    }
}

// -- `with region:` without pyo3's method wrappers ------------------------------------------

static ENTER_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__enter__".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: region_enter },
    ml_flags: ffi::METH_NOARGS,
    ml_doc: c"__enter__($self, /)\n--\n\nStart a call on the calling thread's current lane (recording clock, ns)."
        .as_ptr(),
});

static EXIT_DEF: MethodDef = MethodDef(ffi::PyMethodDef {
    ml_name: c"__exit__".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: region_exit },
    ml_flags: ffi::METH_FASTCALL,
    ml_doc:
        c"__exit__($self, exc_type, exc, tb, /)\n--\n\nEnd the innermost open call; never suppresses the exception."
            .as_ptr(),
});

/// `ProfileRegion.__enter__` (METH_NOARGS): the region itself.
unsafe extern "C" fn region_enter(slf: *mut ffi::PyObject, _: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls this with the GIL held on a `ProfileRegion` (the descriptor's type).
    let py = unsafe { Python::assume_attached() };
    let region = unsafe { Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<ProfileRegion>() };
    match region.get().enter(py) {
        Ok(()) => region.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// `ProfileRegion.__exit__(exc_type, exc, tb)` (METH_FASTCALL): False.
unsafe extern "C" fn region_exit(
    slf: *mut ffi::PyObject,
    _args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: as `region_enter`.
    let py = unsafe { Python::assume_attached() };
    if nargs != 3 {
        pyo3::exceptions::PyTypeError::new_err(format!("__exit__ expected 3 arguments, got {nargs}")).restore(py);
        return std::ptr::null_mut();
    }
    unsafe { Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<ProfileRegion>() }.get().exit();
    unsafe { ffi::Py_NewRef(ffi::Py_False()) }
}

/// `ProfileRegion.__enter__` / `__exit__`: a descriptor that hands each region its own
/// bound method, made once per region (`ProfileRegion::bound_methods`).
///
/// A `with` statement looks `__enter__` and `__exit__` up on every call. Through a plain
/// method descriptor, each lookup would allocate a bound builtin method, GC-tracked, freed at
/// the end of the statement: about a third of `with region:`. Here `tp_descr_get`
/// ([`region_method_get`]) returns the region's cached one (a new reference, no allocation),
/// made at its second lookup (a region used once keeps none).
/// Looked up on the class (`ProfileRegion.__enter__`), it gives the plain method descriptor.
#[pyclass(module = "scope_profiler._native", frozen, name = "region_method")]
pub struct RegionMethod {
    /// 0 = `__enter__`, 1 = `__exit__`: the slot of `ProfileRegion::bound_methods`.
    which: usize,
    /// The method's definition (a static).
    def: &'static MethodDef,
    /// The plain method descriptor (`PyDescr_NewMethod`): what the class attribute reads as.
    plain: Py<PyAny>,
}

/// `tp_descr_get` of [`RegionMethod`]: the region's cached bound method (made on first use).
unsafe extern "C" fn region_method_get(
    descr: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    ty: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls descriptors with the GIL held; `descr` is a `RegionMethod` (this
    // function is only installed on that type).
    let py = unsafe { Python::assume_attached() };
    let method = unsafe { Bound::from_borrowed_ptr(py, descr).cast_into_unchecked::<RegionMethod>() };
    let method = method.get();
    let region_type = py.get_type::<ProfileRegion>();
    // what the plain descriptor does (a new bound method each time)
    let plain = || {
        let plain = method.plain.as_ptr();
        match unsafe { (*ffi::Py_TYPE(plain)).tp_descr_get } {
            Some(get) => unsafe { get(plain, obj, ty) },
            None => unsafe { ffi::Py_NewRef(plain) },
        }
    };
    if obj.is_null() || unsafe { ffi::PyObject_TypeCheck(obj, region_type.as_type_ptr()) } == 0 {
        return plain(); // the class attribute, or an object of another type
    }
    // SAFETY: a `ProfileRegion` (type checked above); GIL held, no other borrow of its cache.
    let region = unsafe { Bound::from_borrowed_ptr(py, obj).cast_into_unchecked::<ProfileRegion>() };
    let region = region.get();
    let cache = unsafe { &mut *region.bound_methods() };
    if let Some(bound) = &cache[method.which] {
        return bound.clone_ref(py).into_ptr();
    }
    if !region.looked_up_before(method.which) {
        return plain(); // a name used once (dynamic names) keeps nothing
    }
    let def = &method.def.0 as *const ffi::PyMethodDef as *mut ffi::PyMethodDef;
    // SAFETY: a static definition; `obj` becomes the bound method's self (a new reference).
    let bound = unsafe { ffi::PyCFunction_NewEx(def, obj, std::ptr::null_mut()) };
    if !bound.is_null() {
        // SAFETY: a new reference; the cache keeps one, the caller gets the other.
        cache[method.which] = Some(unsafe { Bound::from_borrowed_ptr(py, bound) }.unbind());
        // region -> bound method -> region is a cycle: the collector must see the region
        // (made untracked by the native lookup) to free it once the manager drops it
        if unsafe { ffi::PyObject_GC_IsTracked(obj) } == 0 {
            unsafe { ffi::PyObject_GC_Track(obj.cast()) };
        }
    }
    bound
}

/// Install [`RegionMethod`] descriptors as `ProfileRegion.__enter__`/`__exit__`: the plain C
/// methods ([`region_enter`], [`region_exit`]: no pyo3 wrapper, whose GIL count, argument
/// parsing and result conversion were a fifth of a `with`), bound once per region.
pub(crate) fn install_region_methods(py: Python<'_>) -> PyResult<()> {
    let tp = py.get_type::<ProfileRegion>();
    let method_type = py.get_type::<RegionMethod>();
    // SAFETY: the type object is alive and not yet used as a descriptor (module init).
    unsafe { (*method_type.as_type_ptr()).tp_descr_get = Some(region_method_get) };
    for (which, def) in [&ENTER_DEF, &EXIT_DEF].into_iter().enumerate() {
        // SAFETY: a static definition for this type; a new reference or null with an error.
        let plain = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyDescr_NewMethod(tp.as_type_ptr(), &def.0 as *const ffi::PyMethodDef as *mut ffi::PyMethodDef),
            )?
        };
        let name = unsafe { CStr::from_ptr(def.0.ml_name) }.to_str().expect("ASCII");
        tp.setattr(name, Bound::new(py, RegionMethod { which, def, plain: plain.unbind() })?)?;
    }
    Ok(())
}
