//! Function-level tracing without markers: the interpreter glue. Every traced
//! Python call becomes a call of the region named by
//! [`scope_profiler_recorder::trace_select`] (`module.qualname`), entered and exited on the
//! calling thread's [`ThreadState`](scope_profiler_recorder::ThreadState) exactly as an
//! explicit region is (same buffers, same task lanes), so everything downstream is unchanged.
//!
//! * 3.11: a C profile function ([`profile_callback`]) installed per thread with
//!   `PyEval_SetProfile` (the starting thread), `_PyEval_SetProfile` (threads that exist
//!   already) and [`NativeTracer::install_thread`] (threads started later; called by the
//!   thread-start hook of `scope_profiler._tracking` with the thread's first frame).
//! * 3.12+: `sys.monitoring` (process-wide) with `PY_START`, `PY_RETURN` and `PY_UNWIND`
//!   callbacks that are builtin functions (`METH_FASTCALL`). `PY_START`/`PY_RETURN` of a
//!   code object outside the selection return `sys.monitoring.DISABLE`, so filtered code
//!   costs nothing after its first call. `PY_YIELD`/`PY_RESUME`/`PY_THROW` are not
//!   subscribed: a generator's or coroutine's call spans its whole run, from its first start
//!   (`PY_START`, only ever once per frame) to its return or unwind; a task's suspensions
//!   are its await time, counted by the task lane the call sits on.
//!
//! The decision per code object (traced or not, region id, generator kind) is taken once,
//! at its first event, and cached in the code object's `co_extra` slot, tagged with the
//! recording's generation so a later recording decides afresh.
//!
//! # Threading
//! Everything here runs with the GIL held (callbacks are called by the interpreter with it);
//! the active tracer is one process-wide pointer, replaced only with the GIL held. GIL
//! builds only, like the rest of the recording glue.
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySet};
use scope_profiler_recorder::trace_decision::{first_resume, Decision, Kind, SKIP};
use scope_profiler_recorder::trace_select::{real_path, top_level_package, CallBudget, CodeInfo, Selection};
use scope_profiler_recorder::{monitoring_tool, trace_notes};

use super::{NativeRecorder, Shared};

/// The `co_extra` index of this module (one per process).
fn extra_index() -> ffi::Py_ssize_t {
    static INDEX: OnceLock<ffi::Py_ssize_t> = OnceLock::new();
    // SAFETY: called with the GIL held; the slot holds plain bits, nothing to free.
    *INDEX.get_or_init(|| unsafe { ffi::PyUnstable_Eval_RequestCodeExtraIndex(keep_bits) })
}

/// The `co_extra` free function: the slot holds a [`Decision`], not a pointer.
unsafe extern "C" fn keep_bits(_: *mut c_void) {}

/// Generations 1..=65535 (0 = undecided), one per tracer start.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Serials of tracer starts ([`Active::serial`]), from 1.
static SERIAL: AtomicU64 = AtomicU64::new(0);

fn next_generation() -> u64 {
    loop {
        let g = (GENERATION.fetch_add(1, Ordering::Relaxed) + 1) & 0xFFFF;
        if g != 0 {
            return g;
        }
    }
}

/// How the tracer is hooked into the interpreter.
enum Hook {
    /// 3.11: the C profile function; the thread states it was installed on.
    Profile { installed: Vec<usize> },
    /// 3.12+: `sys.monitoring` with this tool id; `disable` is `sys.monitoring.DISABLE`.
    Monitoring { tool: i32, disable: Py<PyAny> },
    /// 3.11: the frame evaluation function [`eval_frame_hook`] (PEP 523, every thread).
    EvalFrame,
}

impl Hook {
    /// What [`NativeTracer::mechanism`] reports for this hook.
    fn mechanism(&self) -> &'static str {
        match self {
            Hook::Profile { .. } => "PyEval_SetProfile",
            Hook::Monitoring { .. } => "sys.monitoring",
            Hook::EvalFrame => "eval_frame",
        }
    }
}

/// The state of a running tracer (what the callbacks read).
struct Active {
    shared: Arc<Shared>,
    selection: Selection,
    generation: u64,
    /// Unique per start in this process (never reused, unlike `generation`): the key of
    /// the thread state a thread caches ([`TraceLocal::state`]).
    serial: u64,
    /// Code objects of `@profile`-decorated functions (a Python set; not traced again).
    decorated: Py<PySet>,
    /// `recorded_path(filename) -> str` of the manager (the file name recorded as source).
    recorded_path: Option<Py<PyAny>>,
    /// Opcode of `RESUME` (3.11), to find a generator's first start.
    resume_opcode: u8,
    /// Opcode of `YIELD_VALUE` (3.11), to tell an async generator's yield from its return.
    yield_opcode: u8,
    budget: UnsafeCell<CallBudget>,
    hook: UnsafeCell<Hook>,
    /// 3.12+: generators with an open call -> (region, weak reference with a callback).
    open_gens: UnsafeCell<std::collections::HashMap<usize, (u32, Py<PyAny>)>>,
    /// Generators with an open call -> the thread state and lane (task record, null = the
    /// thread's bare lane) their call was entered on, to close it there when the generator
    /// finishes on another lane. An entry is replaced by the next generator at the same
    /// address and dropped when its call closes.
    gen_lanes: UnsafeCell<std::collections::HashMap<usize, GenLane>>,
    /// Per-call tracing (`profile(recursive=True)`): only threads inside a traced call
    /// ([`CALL_DEPTH`] > 0) are traced, not the whole recording.
    scoped: bool,
    /// 3.11: the profile object installed with the callback (what `sys.getprofile()`
    /// returns on a traced thread), to tell whether another profiler replaced it.
    hook_object: Py<TraceHook>,
}

/// Where a generator's call was entered ([`Active::gen_lanes`]).
#[derive(Clone, Copy)]
struct GenLane {
    state: *const scope_profiler_recorder::ThreadState,
    task: *const scope_profiler_recorder::TaskRecord,
}

/// What `sys.getprofile()` returns on a thread that scope-profiler traces (3.11): its
/// identity tells whether another profiler (`sys.setprofile`, cProfile) has since replaced
/// the tracer on that thread.
#[pyclass(frozen, module = "scope_profiler._native")]
pub struct TraceHook;

#[pymethods]
impl TraceHook {
    fn __repr__(&self) -> &'static str {
        "<scope-profiler function-level tracer>"
    }
}

thread_local! {
    /// How many per-call traced calls (`NativeTracer.enter_call`) the calling thread is
    /// inside; the scoped tracer records only while it is above 0.
    static CALL_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the calling thread is inside a per-call traced call.
#[inline]
fn in_traced_call() -> bool {
    CALL_DEPTH.with(|d| d.get() > 0)
}

// SAFETY: the cells are read and written only with the GIL held (callbacks and pymethods;
// GIL build), which serializes every access.
unsafe impl Send for Active {}
unsafe impl Sync for Active {}

/// The running tracer, or null. Set and cleared with the GIL held.
static ACTIVE: AtomicPtr<Active> = AtomicPtr::new(ptr::null_mut());

impl Active {
    /// The cached decision of `code`, deciding now on first sight (`frame`: the frame
    /// running it, for the module name; null = the current frame).
    #[inline]
    /// `None` when the tracer stopped while deciding (Python ran and another thread got
    /// the GIL): the caller must not touch `self` any more.
    unsafe fn decision(&self, py: Python<'_>, code: *mut ffi::PyObject, globals: Globals) -> Option<Decision> {
        let mut extra: *mut c_void = ptr::null_mut();
        if ffi::PyUnstable_Code_GetExtra(code, extra_index(), &mut extra) == 0 && !extra.is_null() {
            let d = Decision(extra as u64);
            if d.generation() == self.generation {
                return Some(d);
            }
        }
        let d = self.decide(py, code, globals);
        self.still_running().then_some(d)
    }

    /// Whether this is still the running tracer (after Python code ran).
    #[inline]
    fn still_running(&self) -> bool {
        std::ptr::eq(ACTIVE.load(Ordering::Acquire), self)
    }

    #[cold]
    unsafe fn decide(&self, py: Python<'_>, code: *mut ffi::PyObject, globals: Globals) -> Decision {
        // Python runs in here (and may switch threads): another thread may stop the tracer
        let _alive = KeepAlive::new(self);
        let _own = OwnPython::enter();
        let d = match self.try_decide(py, code, globals) {
            Ok(d) => d,
            Err(e) => {
                e.write_unraisable(py, None);
                Decision::new(self.generation, SKIP, Kind::Plain, 0)
            }
        };
        if ffi::PyUnstable_Code_SetExtra(code, extra_index(), d.0 as *mut c_void) != 0 {
            ffi::PyErr_Clear();
        }
        if let (SKIP, Hook::Monitoring { tool, .. }) = (d.region(), &*self.hook.get()) {
            note_disabled(py, *tool, code);
        }
        d
    }

    unsafe fn try_decide(&self, py: Python<'_>, code: *mut ffi::PyObject, globals: Globals) -> PyResult<Decision> {
        let skip = Decision::new(self.generation, SKIP, Kind::Plain, 0);
        let code_obj = Bound::from_borrowed_ptr(py, code);
        if self.decorated.bind(py).contains(&code_obj)? {
            return Ok(skip);
        }
        let module: String = match globals.dict(py)? {
            Some(globals) => match globals.cast::<PyDict>().ok().and_then(|g| g.get_item("__name__").ok().flatten()) {
                Some(n) => n.extract().unwrap_or_default(),
                None => String::new(),
            },
            None => String::new(),
        };
        let filename: String = code_obj.getattr("co_filename")?.extract()?;
        let qualname: String = code_obj.getattr("co_qualname")?.extract()?;
        let name: String = code_obj.getattr("co_name")?.extract()?;
        let info = CodeInfo { filename: &filename, module: &module, qualname: &qualname, name: &name };
        let Some(region_name) = self.selection.decide(&info, real_path) else { return Ok(skip) };
        if super::check_region_name(&region_name).is_err() {
            return Ok(skip);
        }
        let kind = Kind::from_flags(code_obj.getattr("co_flags")?.extract()?);
        let resume0 = match kind {
            Kind::Plain => 0,
            _ => first_resume(&code_obj.getattr("co_code")?.extract::<Vec<u8>>()?, self.resume_opcode),
        };
        let (id, _) = self.shared.regions.get_or_create(&region_name, Vec::new());
        let line: Option<i64> = code_obj.getattr("co_firstlineno")?.extract().ok();
        let recorded = match &self.recorded_path {
            Some(f) => f.bind(py).call1((&filename,))?.extract::<String>()?,
            None => filename.clone(),
        };
        self.shared.regions.set_source(id, recorded, line, None);
        Ok(Decision::new(self.generation, id, kind, resume0))
    }

    /// Open a call of `region` on the calling thread's current lane.
    #[inline]
    unsafe fn enter(&self, py: Python<'_>, region: u32) {
        let st = match self.shared.rec.local() {
            Some(st) => Ok(st),
            None => {
                let st = self.register_thread(py);
                if !self.still_running() {
                    return;
                }
                st
            }
        };
        let st = match st {
            Ok(st) => st,
            Err(e) => {
                e.write_unraisable(py, None);
                return;
            }
        };
        let budget = &mut *self.budget.get();
        // a dropped call (past the limit) or a paused recorder pushes a placeholder, so the
        // matching exit closes nothing
        let placeholder = !budget.admit() || self.shared.rec.paused();
        (*st).enter(region, placeholder);
    }

    /// Note that the call of generator `key` ([`generator_key`]) was entered on the calling
    /// thread's current lane.
    unsafe fn note_generator_lane(&self, key: Option<usize>) {
        let Some(state) = self.shared.rec.local() else { return };
        let Some(key) = key else { return };
        (*self.gen_lanes.get()).insert(key, GenLane { state, task: (*state).current() });
    }

    /// Close the call (region `region`) of generator `key` on the lane it was entered on
    /// (which may be another lane of the calling thread than the one running). Nothing when
    /// its start was not recorded (it started before this tracer did: closing "the innermost
    /// call of the region" would close another generator's call), or when it finishes on
    /// another thread than it started on (the call stays open, flagged at the end).
    unsafe fn exit_generator(&self, region: u32, key: Option<usize>) {
        let Some(key) = key else {
            self.exit(region);
            return;
        };
        let Some(lane) = (*self.gen_lanes.get()).remove(&key) else { return };
        let Some(state) = self.shared.rec.local() else { return };
        if std::ptr::eq(lane.state, state) {
            (*state).exit_on(region, lane.task);
        }
    }

    /// The calling thread's first call: register it (Python runs: threading, callbacks).
    #[cold]
    unsafe fn register_thread(&self, py: Python<'_>) -> PyResult<*const scope_profiler_recorder::ThreadState> {
        let _alive = KeepAlive::new(self);
        let _own = OwnPython::enter();
        self.shared.state(py)
    }

    /// Close the innermost open call of `region` on the calling thread's current lane
    /// (nothing if none: a frame that started before tracing did).
    #[inline]
    unsafe fn exit(&self, region: u32) -> bool {
        match self.shared.rec.local() {
            Some(st) => (*st).exit(region),
            None => false,
        }
    }
}

/// Where [`Active::decide`] reads the module name of a code object (`__name__` of the
/// globals of the frame running it).
#[derive(Clone, Copy)]
enum Globals {
    /// The globals of this frame object (3.11's profile function).
    Frame(*mut ffi::PyFrameObject),
    /// This globals dict, borrowed (3.11's frame evaluation: the frame is not running yet).
    Dict(*mut ffi::PyObject),
    /// The globals of the frame running now (`sys.monitoring` callbacks).
    Current,
}

impl Globals {
    /// The globals dict, if any.
    unsafe fn dict<'py>(self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let frame = match self {
            Globals::Dict(d) => return Ok(Bound::from_borrowed_ptr_or_opt(py, d)),
            Globals::Frame(f) => f,
            Globals::Current => ffi::PyEval_GetFrame(),
        };
        if frame.is_null() {
            return Ok(None);
        }
        // new reference
        Bound::from_owned_ptr_or_err(py, ffi::PyFrame_GetGlobals(frame)).map(Some)
    }
}

/// Per-thread state of the tracer, one thread-local (a cdylib's every thread-local read is a
/// `__tls_get_addr` call): 3.11's frame evaluation hook reads it once per frame.
struct TraceLocal {
    /// The thread runs Python code of the tracer's own (deciding on a code object,
    /// registering the thread): the frame evaluation hook lets those frames through
    /// untraced, as the interpreter does for a profile function's own calls (it would
    /// otherwise recurse: deciding on `recorded_path`'s code calls `recorded_path`).
    own_python: bool,
    /// [`Active::serial`] of the tracer `state` was looked up for (0: none).
    serial: u64,
    /// The thread's recorder state for that tracer's recorder.
    state: *const scope_profiler_recorder::ThreadState,
    /// Lowest usable address of the stack segment running now (0: not known yet).
    stack_low: usize,
}

thread_local! {
    static TRACE_LOCAL: UnsafeCell<TraceLocal> = const {
        UnsafeCell::new(TraceLocal { own_python: false, serial: 0, state: ptr::null(), stack_low: 0 })
    };
}

/// The calling thread's [`TraceLocal`] (valid while the thread runs).
#[inline(always)]
fn trace_local() -> *mut TraceLocal {
    TRACE_LOCAL.with(|t| t.get())
}

/// Marks the calling thread as running the tracer's own Python code while alive
/// ([`TraceLocal::own_python`]); restores the previous mark when dropped.
struct OwnPython(bool);

impl OwnPython {
    fn enter() -> Self {
        // SAFETY: this thread's own state, not borrowed across this call.
        OwnPython(unsafe { std::mem::replace(&mut (*trace_local()).own_python, true) })
    }
}

impl Drop for OwnPython {
    fn drop(&mut self) {
        // SAFETY: as in `enter`.
        unsafe { (*trace_local()).own_python = self.0 };
    }
}

/// Keeps an [`Active`] alive while Python code runs inside a callback (a thread switch
/// there may let another thread stop the tracer and drop its last reference).
struct KeepAlive(*const Active);

impl KeepAlive {
    /// # Safety
    /// `a` is owned by an `Arc` (every `Active` is, see [`NativeTracer`]).
    unsafe fn new(a: &Active) -> Self {
        let p = a as *const Active;
        Arc::increment_strong_count(p);
        KeepAlive(p)
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        // SAFETY: the count taken in `new`.
        unsafe { Arc::decrement_strong_count(self.0) }
    }
}

#[inline]
fn active() -> Option<&'static Active> {
    let p = ACTIVE.load(Ordering::Acquire);
    // SAFETY: the pointer is replaced and freed only with the GIL held, and every reader
    // runs with the GIL held (callbacks), so it stays valid while read.
    (!p.is_null()).then(|| unsafe { &*p })
}

// ------------------------------------------------------------------ 3.11: profile function

/// Whether `gen` (a generator, coroutine or async generator) is suspended (at a yield).
unsafe fn suspended(py: Python<'_>, frame: *mut ffi::PyFrameObject, kind: Kind, yield_opcode: u8) -> bool {
    if kind == Kind::AsyncGenerator {
        // 3.11's async generators have no `ag_suspended`: the frame stopped at a yield
        // (read as the generator's end, its call would end at its first yield)
        return stopped_at(py, frame, yield_opcode);
    }
    let gen = ffi::PyFrame_GetGenerator(frame); // new reference or NULL
    let Ok(gen) = Bound::from_owned_ptr_or_err(py, gen) else {
        ffi::PyErr_Clear();
        return false;
    };
    let attr = match kind {
        Kind::Coroutine => pyo3::intern!(py, "cr_suspended"),
        Kind::AsyncGenerator => pyo3::intern!(py, "ag_suspended"),
        _ => pyo3::intern!(py, "gi_suspended"),
    };
    match gen.getattr(attr) {
        Ok(v) => v.is_truthy().unwrap_or(false),
        Err(_) => false,
    }
}

/// Whether the last instruction `frame` ran has opcode `opcode`.
unsafe fn stopped_at(py: Python<'_>, frame: *mut ffi::PyFrameObject, opcode: u8) -> bool {
    let Ok(at) = usize::try_from(ffi::PyFrame_GetLasti(frame)) else { return false };
    let code = Bound::from_owned_ptr(py, ffi::PyFrame_GetCode(frame).cast::<ffi::PyObject>());
    match code.getattr(pyo3::intern!(py, "co_code")) {
        Ok(c) => c.cast::<pyo3::types::PyBytes>().is_ok_and(|b| b.as_bytes().get(at) == Some(&opcode)),
        Err(_) => {
            ffi::PyErr_Clear();
            false
        }
    }
}

/// The C profile function (3.11). A generator-like frame is one call from its first start
/// (`f_lasti` at its `RESUME 0`) to its return or unwind: the profile events of its resumes
/// and yields (the frame still suspended) are skipped.
unsafe extern "C" fn profile_callback(
    _obj: *mut ffi::PyObject,
    frame: *mut ffi::PyFrameObject,
    what: c_int,
    arg: *mut ffi::PyObject,
) -> c_int {
    if what != ffi::PyTrace_CALL && what != ffi::PyTrace_RETURN {
        return 0;
    }
    let Some(a) = active() else { return 0 };
    if a.scoped && !in_traced_call() {
        return 0;
    }
    let py = Python::assume_attached();
    let code = ffi::PyFrame_GetCode(frame) as *mut ffi::PyObject; // new reference
    let d = a.decision(py, code, Globals::Frame(frame));
    ffi::Py_DECREF(code); // the frame keeps it alive
    let Some(d) = d else { return 0 };
    let region = d.region();
    if region == SKIP {
        return 0;
    }
    let kind = d.kind();
    if what == ffi::PyTrace_CALL {
        if kind == Kind::Plain {
            a.enter(py, region);
        } else if (ffi::PyFrame_GetLasti(frame) / 2) as u32 == d.resume0() {
            a.enter(py, region);
            a.note_generator_lane(generator_key(frame));
        } // else a resume
    } else if kind == Kind::Plain {
        a.exit(region);
    } else if arg.is_null() || !suspended(py, frame, kind, a.yield_opcode) {
        // done (arg NULL: it exits by an exception), not a yield
        a.exit_generator(region, generator_key(frame));
    }
    0
}

/// The address of the generator (coroutine, async generator) running `frame`, the key of
/// [`Active::gen_lanes`].
unsafe fn generator_key(frame: *mut ffi::PyFrameObject) -> Option<usize> {
    let gen = ffi::PyFrame_GetGenerator(frame); // new reference or NULL
    if gen.is_null() {
        ffi::PyErr_Clear();
        return None;
    }
    ffi::Py_DECREF(gen); // the frame keeps it alive
    Some(gen as usize)
}

type SetProfileForThread =
    unsafe extern "C" fn(*mut ffi::PyThreadState, Option<ffi::Py_tracefunc>, *mut ffi::PyObject) -> c_int;

/// 3.11's `_PyEval_SetProfile(tstate, func, arg)` (exported, not in the headers pyo3 binds):
/// sets the profile function of another thread.
fn set_profile_for_thread() -> Option<SetProfileForThread> {
    static F: OnceLock<usize> = OnceLock::new();
    let p = *F.get_or_init(|| {
        // SAFETY: dlsym on the process's own symbols with a NUL-terminated name.
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"_PyEval_SetProfile".as_ptr()) as usize }
    });
    // SAFETY: the symbol has this signature in CPython 3.11.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, SetProfileForThread>(p) })
}

/// Every thread state of the calling interpreter.
unsafe fn thread_states() -> Vec<*mut ffi::PyThreadState> {
    let mut out = Vec::new();
    let mut t = ffi::PyInterpreterState_ThreadHead(ffi::PyInterpreterState_Get());
    while !t.is_null() {
        out.push(t);
        t = ffi::PyThreadState_Next(t);
    }
    out
}

// ------------------------------------------------------------------ 3.11: frame evaluation

/// The head of CPython 3.11's `_PyInterpreterFrame` (`Include/internal/pycore_frame.h`),
/// the fields read here. Their offsets (`f_globals` 8, `f_code` 32, `prev_instr` 56 on
/// 64-bit) are those of every 3.11 release.
#[repr(C)]
struct InterpreterFrame311 {
    f_func: *mut ffi::PyObject,
    f_globals: *mut ffi::PyObject,
    f_builtins: *mut ffi::PyObject,
    f_locals: *mut ffi::PyObject,
    f_code: *mut ffi::PyObject,
    frame_obj: *mut ffi::PyObject,
    previous: *mut c_void,
    /// The code unit last started (a `_Py_CODEUNIT`: opcode in the low byte); one before
    /// the first for a frame not started yet.
    prev_instr: *const u16,
}

/// `offsetof(PyCodeObject, co_code_adaptive)` in 3.11 on 64-bit: where a code object's
/// code units start. Checked against a fresh code object before the hook is used
/// ([`eval_frame_usable`]).
const CODE_UNITS_311: usize = 184;

/// A frame evaluation function (`_PyFrameEvalFunction` of 3.11).
type EvalFrame = unsafe extern "C" fn(*mut ffi::PyThreadState, *mut InterpreterFrame311, c_int) -> *mut ffi::PyObject;

/// 3.11's frame evaluation API, looked up once in the process's own symbols.
struct EvalFrameApi {
    default: EvalFrame,
    get: unsafe extern "C" fn(*mut ffi::PyInterpreterState) -> EvalFrame,
    set: unsafe extern "C" fn(*mut ffi::PyInterpreterState, EvalFrame),
}

fn eval_frame_api() -> Option<&'static EvalFrameApi> {
    static API: OnceLock<Option<EvalFrameApi>> = OnceLock::new();
    API.get_or_init(|| {
        let sym = |name: &std::ffi::CStr| {
            // SAFETY: dlsym on the process's own symbols with a NUL-terminated name.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!p.is_null()).then_some(p as usize)
        };
        let default = sym(c"_PyEval_EvalFrameDefault")?;
        let get = sym(c"_PyInterpreterState_GetEvalFrameFunc")?;
        let set = sym(c"_PyInterpreterState_SetEvalFrameFunc")?;
        // SAFETY: the three symbols have these signatures in CPython 3.11.
        unsafe {
            Some(EvalFrameApi {
                default: std::mem::transmute::<usize, EvalFrame>(default),
                get: std::mem::transmute::<usize, unsafe extern "C" fn(*mut ffi::PyInterpreterState) -> EvalFrame>(get),
                set: std::mem::transmute::<usize, unsafe extern "C" fn(*mut ffi::PyInterpreterState, EvalFrame)>(set),
            })
        }
    })
    .as_ref()
}

/// The default frame evaluation, what [`eval_frame_hook`] wraps (set before the hook is).
static DEFAULT_EVAL: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Stack left below which [`eval_frame_hook`] runs the frame on a new stack segment, and
/// that segment's size. With the hook, every Python call is a C call (3.11 no longer
/// inlines Python-to-Python calls), so a recursion the interpreter runs in one C frame
/// untraced would otherwise exhaust the thread's stack (`sys.setrecursionlimit(10**6)`,
/// 30,000 levels: a segfault with an 8 MiB stack).
const RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Whether 3.11's frame evaluation hook can be used here: the interpreter is CPython 3.11
/// on 64-bit, nothing else evaluates frames (a debugger's PEP 523 hook), the code object
/// layout is the expected one, and `SCOPE_PROFILER_TRACE_HOOK` does not ask for the
/// profile function (`profile`).
fn eval_frame_usable(py: Python<'_>) -> bool {
    if py.version_info().major != 3 || py.version_info().minor != 11 || cfg!(not(target_pointer_width = "64")) {
        return false;
    }
    if std::env::var("SCOPE_PROFILER_TRACE_HOOK").is_ok_and(|v| v == "profile") {
        return false;
    }
    let Some(api) = eval_frame_api() else { return false };
    // SAFETY: GIL held; reads the interpreter's evaluation function.
    let current = unsafe { (api.get)(ffi::PyInterpreterState_Get()) };
    if current as *const () != api.default as *const () {
        return false;
    }
    code_layout_matches(py)
}

/// Whether a fresh code object's code units sit at [`CODE_UNITS_311`] (its `co_code`, not
/// quickened yet, is a copy of them).
fn code_layout_matches(py: Python<'_>) -> bool {
    let check = || -> PyResult<bool> {
        let builtins = py.import("builtins")?;
        let code = builtins.call_method1("compile", ("a = b + c\nd = a * b\n", "<layout>", "exec"))?;
        let units: Vec<u8> = code.getattr("co_code")?.extract()?;
        // SAFETY: a code object is at least CODE_UNITS_311 + its code's size long in 3.11.
        let at = unsafe { std::slice::from_raw_parts((code.as_ptr() as *const u8).add(CODE_UNITS_311), units.len()) };
        Ok(units.len() >= 8 && at == units.as_slice())
    };
    check().unwrap_or(false)
}

/// Code unit index of `frame`'s last started instruction (-1: not started).
#[inline]
unsafe fn started_at(frame: *const InterpreterFrame311) -> isize {
    let first = ((*frame).f_code as *const u8).add(CODE_UNITS_311) as *const u16;
    (*frame).prev_instr.offset_from(first)
}

/// `offsetof(PyCodeObject, co_extra)` in 3.11 on 64-bit (just before the code units).
const CO_EXTRA_311: usize = CODE_UNITS_311 - 8;

/// The decision cached in `code`'s extra slot for this tracer's `generation`, read without
/// a call (3.11's `_PyCodeObjectExtra`: a size, then the slots).
#[inline(always)]
unsafe fn cached_decision_311(code: *mut ffi::PyObject, generation: u64) -> Option<Decision> {
    let extra = *((code as *const u8).add(CO_EXTRA_311) as *const *const isize);
    if extra.is_null() {
        return None;
    }
    let index = extra_index();
    if index < 0 || index >= *extra {
        return None;
    }
    let d = Decision(*extra.add(1 + index as usize) as u64);
    (d.0 != 0 && d.generation() == generation).then_some(d)
}

/// The running tracer if it is still the one of `serial` (Python ran since it was read).
#[inline]
fn active_of(serial: u64) -> Option<&'static Active> {
    active().filter(|a| a.serial == serial)
}

/// Evaluate `frame` with the default evaluation function, on a new stack segment when the
/// calling thread's stack is nearly used up ([`RED_ZONE`]).
#[inline(always)]
unsafe fn evaluate(
    tl: *mut TraceLocal,
    ts: *mut ffi::PyThreadState,
    frame: *mut InterpreterFrame311,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: set to `_PyEval_EvalFrameDefault` before the hook is installed.
    let default = std::mem::transmute::<*mut c_void, EvalFrame>(DEFAULT_EVAL.load(Ordering::Relaxed));
    let here = &tl as *const _ as usize; // this frame's stack address
    if (*tl).stack_low == 0 {
        // stacker knows the bounds of the thread's stack, or of the segment it made
        (*tl).stack_low = stacker::remaining_stack().map_or(1, |left| here.saturating_sub(left).max(1));
    }
    if here.wrapping_sub((*tl).stack_low) < RED_ZONE {
        return evaluate_on_new_segment(tl, default, ts, frame, throwflag);
    }
    default(ts, frame, throwflag)
}

#[cold]
#[inline(never)]
unsafe fn evaluate_on_new_segment(
    tl: *mut TraceLocal,
    default: EvalFrame,
    ts: *mut ffi::PyThreadState,
    frame: *mut InterpreterFrame311,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    stacker::grow(STACK_SEGMENT, || {
        let below = std::mem::replace(&mut (*tl).stack_low, 0); // found again on the segment
        let result = default(ts, frame, throwflag);
        (*tl).stack_low = below;
        result
    })
}

/// The calling thread's recorder state for `a` (cached per thread and tracer start);
/// registers the thread on its first traced call (Python runs). `None` when that failed
/// (reported as unraisable) or the tracer stopped meanwhile.
#[inline(always)]
unsafe fn thread_state(
    a: &Active,
    py: Python<'_>,
    tl: *mut TraceLocal,
) -> Option<*const scope_profiler_recorder::ThreadState> {
    if (*tl).serial == a.serial {
        return Some((*tl).state);
    }
    thread_state_slow(a, py, tl)
}

#[cold]
unsafe fn thread_state_slow(
    a: &Active,
    py: Python<'_>,
    tl: *mut TraceLocal,
) -> Option<*const scope_profiler_recorder::ThreadState> {
    let serial = a.serial;
    let st = match a.shared.rec.local() {
        Some(st) => st,
        None => match a.register_thread(py) {
            Ok(st) => st,
            Err(e) => {
                e.write_unraisable(py, None);
                return None;
            }
        },
    };
    active_of(serial)?;
    (*tl).serial = serial;
    (*tl).state = st;
    Some(st)
}

/// The frame evaluation function (3.11, PEP 523) of a running tracer: every Python frame
/// the interpreter evaluates, on every thread, passes here. A selected plain function's
/// call is entered before its frame runs and exited when it returns or unwinds. A
/// generator-like frame is evaluated once per resume: its call is entered at its first
/// start (the frame stopped before its `RESUME 0`; the evaluation that creates the
/// generator is not a start) and exited when an evaluation ends otherwise than at a
/// `YIELD_VALUE` (it returned, or unwound: NULL).
unsafe extern "C" fn eval_frame_hook(
    ts: *mut ffi::PyThreadState,
    frame: *mut InterpreterFrame311,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    let tl = trace_local();
    let Some(a) = active() else { return evaluate(tl, ts, frame, throwflag) };
    if (*tl).own_python {
        return evaluate(tl, ts, frame, throwflag);
    }
    let py = Python::assume_attached();
    let code = (*frame).f_code;
    let d = match cached_decision_311(code, a.generation) {
        Some(d) => d,
        None => match a.decision(py, code, Globals::Dict((*frame).f_globals)) {
            Some(d) => d,
            None => return evaluate(tl, ts, frame, throwflag),
        },
    };
    let region = d.region();
    if region == SKIP {
        return evaluate(tl, ts, frame, throwflag);
    }
    let serial = a.serial;
    if d.kind() == Kind::Plain {
        let Some(st) = thread_state(a, py, tl) else { return evaluate(tl, ts, frame, throwflag) };
        // a dropped call (past the limit) or a paused recorder pushes a placeholder, so the
        // exit closes nothing
        let placeholder = !(*a.budget.get()).admit() || a.shared.rec.paused();
        (*st).enter(region, placeholder);
        let result = evaluate(tl, ts, frame, throwflag);
        if active_of(serial).is_some() {
            (*st).exit(region);
        }
        return result;
    }
    let at = started_at(frame);
    if at < 0 {
        return evaluate(tl, ts, frame, throwflag); // the call creating the generator
    }
    let key = Some(frame as usize); // the frame lives in the generator object
    if at < d.resume0() as isize {
        a.enter(py, region);
        if let Some(a) = active_of(serial) {
            a.note_generator_lane(key);
        }
    }
    let result = evaluate(tl, ts, frame, throwflag);
    if let Some(a) = active_of(serial) {
        let yielded = !result.is_null() && *((*frame).prev_instr as *const u8) == a.yield_opcode;
        if !yielded {
            a.exit_generator(region, key);
        }
    }
    result
}

// ------------------------------------------------------------------ 3.12+: sys.monitoring

/// `PY_START(code, offset)`: enter, or `DISABLE` for code outside the selection.
unsafe extern "C" fn on_start(
    _slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    monitoring_event(args, nargs, true, true)
}

/// `PY_RETURN(code, offset, retval)`: exit, or `DISABLE` for code outside the selection.
unsafe extern "C" fn on_return(
    _slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    monitoring_event(args, nargs, false, true)
}

/// `PY_UNWIND(code, offset, exception)`: exit (this event cannot be disabled).
unsafe extern "C" fn on_unwind(
    _slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    monitoring_event(args, nargs, false, false)
}

#[inline]
unsafe fn monitoring_event(
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    start: bool,
    can_disable: bool,
) -> *mut ffi::PyObject {
    let none = || {
        let n = ffi::Py_None();
        ffi::Py_INCREF(n);
        n
    };
    let Some(a) = active() else { return none() };
    if nargs < 1 || (a.scoped && !in_traced_call()) {
        return none(); // not DISABLE: the same code may run inside a traced call later
    }
    let py = Python::assume_attached();
    let code = *args;
    let Some(d) = a.decision(py, code, Globals::Current) else { return none() };
    let region = d.region();
    if region == SKIP {
        if can_disable {
            if let Hook::Monitoring { disable, .. } = &*a.hook.get() {
                let p = disable.as_ptr();
                ffi::Py_INCREF(p);
                return p;
            }
        }
        return none();
    }
    if d.kind() == Kind::Plain {
        if start {
            a.enter(py, region);
        } else {
            a.exit(region);
        }
        return none();
    }
    let key = current_generator(py).map(|g| g.as_ptr() as usize);
    if start {
        a.enter(py, region);
        a.note_generator_lane(key);
        if d.kind() == Kind::Generator {
            watch_generator(py, a, region);
        }
    } else {
        if let Some(key) = key {
            // it ends here: no call to close at its death
            (*a.open_gens.get()).remove(&key);
        }
        a.exit_generator(region, key);
    }
    none()
}

/// The generator of the frame running now (the one the event is about), if any.
unsafe fn current_generator(py: Python<'_>) -> Option<Bound<'_, PyAny>> {
    let frame = ffi::PyEval_GetFrame();
    if frame.is_null() {
        return None;
    }
    Bound::from_owned_ptr_or_opt(py, ffi::PyFrame_GetGenerator(frame))
}

/// 3.12+: a suspended generator that is closed (a `break` out of its loop, `close()`, its
/// last reference dropped) outside any `try` block ends without running its frame, so no
/// `PY_RETURN`/`PY_UNWIND` reports it. Its call is closed when the generator dies instead,
/// by a weak reference's callback ([`on_generator_dead`]).
unsafe fn watch_generator(py: Python<'_>, a: &Active, region: u32) {
    let Some(gen) = current_generator(py) else { return };
    let key = gen.as_ptr() as usize;
    let key_obj = key.into_pyobject(py).unwrap_or_else(|e| match e {});
    let callback = ffi::PyCFunction_New(&raw mut GEN_DEAD_DEF, key_obj.as_ptr());
    let Ok(callback) = Bound::from_owned_ptr_or_err(py, callback) else {
        ffi::PyErr_Clear();
        return;
    };
    let weak = ffi::PyWeakref_NewRef(gen.as_ptr(), callback.as_ptr());
    match Bound::from_owned_ptr_or_err(py, weak) {
        Ok(weak) => {
            (*a.open_gens.get()).insert(key, (region, weak.unbind()));
        }
        Err(_) => ffi::PyErr_Clear(),
    }
}

/// Weak-reference callback of a watched generator (`self` = its address): its call is
/// still open, so it ends now, on the lane running when it dies.
unsafe extern "C" fn on_generator_dead(slf: *mut ffi::PyObject, _weak: *mut ffi::PyObject) -> *mut ffi::PyObject {
    let none = ffi::Py_None();
    ffi::Py_INCREF(none);
    let Some(a) = active() else { return none };
    let key = ffi::PyLong_AsSize_t(slf);
    if key == usize::MAX && !ffi::PyErr_Occurred().is_null() {
        ffi::PyErr_Clear();
        return none;
    }
    if let Some((region, weak)) = (*a.open_gens.get()).remove(&key) {
        a.exit_generator(region, Some(key));
        // CPython holds its own reference to the weak reference while calling back
        drop(weak);
    }
    none
}

static mut GEN_DEAD_DEF: ffi::PyMethodDef = ffi::PyMethodDef {
    ml_name: c"scope_profiler_generator_dead".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: on_generator_dead },
    ml_flags: ffi::METH_O,
    ml_doc: ptr::null(),
};

static mut START_DEF: ffi::PyMethodDef = ffi::PyMethodDef {
    ml_name: c"scope_profiler_py_start".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: on_start },
    ml_flags: ffi::METH_FASTCALL,
    ml_doc: ptr::null(),
};
static mut RETURN_DEF: ffi::PyMethodDef = ffi::PyMethodDef {
    ml_name: c"scope_profiler_py_return".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: on_return },
    ml_flags: ffi::METH_FASTCALL,
    ml_doc: ptr::null(),
};
static mut UNWIND_DEF: ffi::PyMethodDef = ffi::PyMethodDef {
    ml_name: c"scope_profiler_py_unwind".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: on_unwind },
    ml_flags: ffi::METH_FASTCALL,
    ml_doc: ptr::null(),
};

fn builtin(py: Python<'_>, def: *mut ffi::PyMethodDef) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: `def` is a static method table entry; a new reference is returned.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_New(def, ptr::null_mut())) }
}

/// The tool id to take ([`monitoring_tool::choose`]): an unnamed one, else another free
/// one with a `RuntimeWarning`; `RuntimeError` when all are held.
fn free_tool_id(py: Python<'_>, mon: &Bound<'_, PyAny>) -> PyResult<i32> {
    let holder = |id: u8| mon.call_method1("get_tool", (id,)).ok().filter(|t| !t.is_none());
    let in_use = |id: u8| holder(id).is_some();
    let names = |id: u8| holder(id).and_then(|t| t.repr().ok()).map_or_else(|| "free".to_string(), |r| r.to_string());
    match monitoring_tool::choose(in_use, names) {
        Ok((id, warning)) => {
            if let Some(w) = warning {
                warn(py, &w, outside_stacklevel(py)?)?;
            }
            Ok(i32::from(id))
        }
        Err(message) => Err(PyRuntimeError::new_err(message)),
    }
}

fn start_monitoring(py: Python<'_>) -> PyResult<Hook> {
    let mon = py.import("sys")?.getattr("monitoring")?;
    let tool = free_tool_id(py, &mon)?;
    mon.call_method1("use_tool_id", (tool, "scope_profiler"))?;
    let events = mon.getattr("events")?;
    let ev = |n: &str| -> PyResult<i64> { events.getattr(n)?.extract() };
    let (start, ret, unwind) = (ev("PY_START")?, ev("PY_RETURN")?, ev("PY_UNWIND")?);
    // the static method tables are never moved
    let (sd, rd, ud) = (&raw mut START_DEF, &raw mut RETURN_DEF, &raw mut UNWIND_DEF);
    mon.call_method1("register_callback", (tool, start, builtin(py, sd)?))?;
    mon.call_method1("register_callback", (tool, ret, builtin(py, rd)?))?;
    mon.call_method1("register_callback", (tool, unwind, builtin(py, ud)?))?;
    rearm_disabled(&mon, tool, start | ret);
    mon.call_method1("set_events", (tool, start | ret | unwind))?;
    Ok(Hook::Monitoring { tool, disable: mon.getattr("DISABLE")?.unbind() })
}

/// Code objects an earlier tracer of this process answered `DISABLE` for, as (tool id,
/// weak reference): the locations to arm again at the next start, for that tool only.
static DISABLED: std::sync::Mutex<Vec<(i32, Py<PyAny>)>> = std::sync::Mutex::new(Vec::new());

/// Note that the running tracer (tool `tool`) answers `DISABLE` for `code` from now on.
/// Past each power of two from 4096 entries, those of dead code objects (code compiled at
/// run time) are dropped.
fn note_disabled(py: Python<'_>, tool: i32, code: *mut ffi::PyObject) {
    // SAFETY: GIL held; `code` is a live code object (weak-referenceable).
    let Ok(weak) = (unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyWeakref_NewRef(code, ptr::null_mut())) }) else {
        return; // not weak-referenceable: its locations stay disabled
    };
    let mut noted = DISABLED.lock().unwrap_or_else(|e| e.into_inner());
    noted.push((tool, weak.unbind()));
    if noted.len() >= 4096 && noted.len().is_power_of_two() {
        noted.retain(|(_, w)| w.bind(py).call0().is_ok_and(|c| !c.is_none()));
    }
}

/// Arm `tool`'s events again at the locations an earlier tracer disabled (a new selection
/// may trace them), without touching other tools' disabled locations, which
/// `sys.monitoring.restart_events()` would re-enable too (coverage.py relies on `DISABLE`).
/// CPython adds a tool back to a code object's locations only when the tool's events on
/// that code object change, so each one gets `tool`'s events as local events and loses
/// them again before the global `set_events`: it then lacks the tool, and the global
/// events add it back at every location when the code runs next.
fn rearm_disabled(mon: &Bound<'_, PyAny>, tool: i32, local: i64) {
    let noted = std::mem::take(&mut *DISABLED.lock().unwrap_or_else(|e| e.into_inner()));
    for (t, weak) in noted {
        let Ok(code) = weak.bind(mon.py()).call0() else { continue };
        if t != tool || code.is_none() {
            continue; // dead, or disabled for an id this tracer does not hold
        }
        // an error (a shim code object, which never reports) leaves it as it is
        let _ = mon.call_method1("set_local_events", (tool, &code, local));
        let _ = mon.call_method1("set_local_events", (tool, &code, 0));
    }
}

fn stop_monitoring(py: Python<'_>, tool: i32) -> PyResult<()> {
    let mon = py.import("sys")?.getattr("monitoring")?;
    mon.call_method1("set_events", (tool, 0))?;
    let events = mon.getattr("events")?;
    for n in ["PY_START", "PY_RETURN", "PY_UNWIND"] {
        mon.call_method1("register_callback", (tool, events.getattr(n)?, py.None()))?;
    }
    mon.call_method1("free_tool_id", (tool,))?;
    Ok(())
}

fn uses_monitoring(py: Python<'_>) -> bool {
    py.version_info() >= (3, 12)
}

// ------------------------------------------------------------------ the Python object

/// Function-level tracing of one recording (`recursive_profile=True`, `run --recursive`):
/// every call of a selected Python function, on every thread, becomes a call of the region
/// `module.qualname` in `recorder`. At most one tracer runs per process; starting one stops
/// the one running. Created by `scope_profiler._tracer`.
#[pyclass(module = "scope_profiler._native", frozen)]
pub struct NativeTracer {
    active: UnsafeCell<Option<Arc<Active>>>,
    /// How the last start hooked in ([`Hook::mechanism`]).
    mechanism: UnsafeCell<&'static str>,
    /// The counters of the last run once stopped (recorded, dropped).
    last: UnsafeCell<CallBudget>,
    /// The `include` globs (for [`NativeTracer::report`]'s warning once stopped).
    include: UnsafeCell<Vec<String>>,
    /// 3.11: the calling thread's other profiler, paused while this tracer runs.
    paused: UnsafeCell<Option<Py<PyAny>>>,
}

/// The tracer of each recording that traced, by `id(config)` ([`NativeTracer::register`]).
static REGISTRY: std::sync::Mutex<Vec<(usize, Py<NativeTracer>)>> = std::sync::Mutex::new(Vec::new());

// SAFETY: the cells are only touched with the GIL held (pymethods; GIL build).
unsafe impl Sync for NativeTracer {}

#[pymethods]
impl NativeTracer {
    /// `system_prefixes`: directories of non-user code (the standard-library and
    /// installed-package directories; ignored with `all`), resolved here to real paths; `own_dirs`: the profiler's own directories (never traced);
    /// `main_module`: the module run by `-m`, whose top-level package is the user's code
    /// wherever installed; `include`/`exclude`: fnmatch globs on `module.qualname` (None,
    /// one `str`, or an iterable of them, each taken as `str()`); `entrypoint`: the `co_name`
    /// recorded as a region of that name; `call_limit`: most calls recorded (later ones are
    /// counted in `dropped`); `decorated`: a set of code objects not traced (the
    /// `@profile`-decorated functions, recorded by their own region); `recorded_path`:
    /// `filename -> str`, the source file name recorded for a region; `scoped`: per-call
    /// tracing (`profile(recursive=True)`): `start` hooks no thread, each thread is traced
    /// only between its `enter_call` and the matching `exit_call`. `resume_opcode` /
    /// `yield_opcode`: `dis.opmap`'s `RESUME` / `YIELD_VALUE`.
    #[new]
    #[pyo3(signature = (recorder, *, all=false, system_prefixes=Vec::new(), own_dirs=Vec::new(), main_module=None, include=None, exclude=None, entrypoint=None, call_limit=None, decorated, recorded_path=None, resume_opcode, yield_opcode, scoped=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        recorder: &NativeRecorder,
        all: bool,
        system_prefixes: Vec<String>,
        own_dirs: Vec<String>,
        main_module: Option<String>,
        include: Option<Bound<'_, PyAny>>,
        exclude: Option<Bound<'_, PyAny>>,
        entrypoint: Option<String>,
        call_limit: Option<u64>,
        decorated: Py<PySet>,
        recorded_path: Option<Py<PyAny>>,
        resume_opcode: u8,
        yield_opcode: u8,
        scoped: bool,
    ) -> PyResult<Self> {
        let system_prefixes = if all { Vec::new() } else { trace_notes::system_prefixes(system_prefixes) };
        let (include, exclude) = (patterns(include.as_ref())?, patterns(exclude.as_ref())?);
        let active = Active {
            shared: Arc::clone(&recorder.shared),
            selection: Selection {
                all,
                system_prefixes,
                own_dirs,
                main_package: main_module.as_deref().and_then(top_level_package).map(str::to_string),
                include: include.clone(),
                exclude,
                entrypoint,
            },
            generation: 0,
            serial: 0,
            decorated,
            recorded_path,
            resume_opcode,
            yield_opcode,
            budget: UnsafeCell::new(CallBudget::new(call_limit.unwrap_or(u64::MAX))),
            hook: UnsafeCell::new(Hook::Profile { installed: Vec::new() }),
            open_gens: UnsafeCell::new(std::collections::HashMap::new()),
            gen_lanes: UnsafeCell::new(std::collections::HashMap::new()),
            scoped,
            hook_object: Py::new(py, TraceHook)?,
        };
        let mechanism = if uses_monitoring(py) { "sys.monitoring" } else { "PyEval_SetProfile" };
        Ok(NativeTracer {
            active: UnsafeCell::new(Some(Arc::new(active))),
            mechanism: UnsafeCell::new(mechanism),
            last: UnsafeCell::new(CallBudget::new(0)),
            include: UnsafeCell::new(include),
            paused: UnsafeCell::new(None),
        })
    }

    /// Start tracing on every thread (the calling one and those that exist; later ones via
    /// `install_thread`). Stops the tracer running, if any. `RuntimeError` when already
    /// stopped, or (3.12+) when no `sys.monitoring` tool id is free.
    fn start(&self, py: Python<'_>) -> PyResult<()> {
        // SAFETY: GIL held.
        let slot = unsafe { &mut *self.active.get() };
        let Some(arc) = slot.as_mut() else {
            return Err(PyRuntimeError::new_err("this tracer has been stopped; create a new one"));
        };
        let me = Arc::as_ptr(arc) as *mut Active;
        if ACTIVE.load(Ordering::Acquire) == me {
            return Ok(());
        }
        stop_running(py)?;
        let Some(a) = Arc::get_mut(arc) else {
            return Err(PyRuntimeError::new_err("this tracer is still in use; create a new one"));
        };
        a.generation = next_generation();
        a.serial = SERIAL.fetch_add(1, Ordering::Relaxed) + 1;
        let hook = if uses_monitoring(py) {
            start_monitoring(py)?
        } else if a.scoped {
            Hook::Profile { installed: Vec::new() } // threads are hooked by enter_call
        } else if let Some(api) = eval_frame_usable(py).then(eval_frame_api).flatten() {
            DEFAULT_EVAL.store(api.default as *const () as *mut c_void, Ordering::Relaxed);
            // SAFETY: GIL held; the hook wraps the default evaluation (checked unreplaced).
            unsafe { (api.set)(ffi::PyInterpreterState_Get(), eval_frame_hook) };
            Hook::EvalFrame
        } else {
            let marker = a.hook_object.as_ptr();
            // SAFETY: GIL held; installs on this thread, then on every other thread state.
            let mut installed = Vec::new();
            unsafe {
                let current = ffi::PyThreadState_Get();
                ffi::PyEval_SetProfile(Some(profile_callback), marker);
                installed.push(current as usize);
                if let Some(set) = set_profile_for_thread() {
                    for t in thread_states() {
                        if t != current && set(t, Some(profile_callback), marker) == 0 {
                            installed.push(t as usize);
                        }
                    }
                }
            }
            Hook::Profile { installed }
        };
        // SAFETY: GIL held.
        unsafe { *self.mechanism.get() = hook.mechanism() };
        // SAFETY: GIL held.
        unsafe { *a.hook.get() = hook };
        ACTIVE.store(me, Ordering::Release);
        Ok(())
    }

    /// 3.11: trace the calling thread from now on, and count `frame` (the thread's first
    /// frame, whose call event the thread-start hook received) as entered. No-op on 3.12+
    /// (monitoring is process-wide) or when this tracer is not running.
    #[pyo3(signature = (frame=None))]
    fn install_thread(&self, py: Python<'_>, frame: Option<Bound<'_, PyAny>>) {
        let Some(a) = self.running() else { return };
        // SAFETY: GIL held.
        if let Hook::Profile { installed } = unsafe { &mut *a.hook.get() } {
            unsafe {
                ffi::PyEval_SetProfile(Some(profile_callback), a.hook_object.as_ptr());
                installed.push(ffi::PyThreadState_Get() as usize);
                if let Some(f) = frame {
                    if ffi::PyFrame_Check(f.as_ptr()) != 0 {
                        profile_callback(
                            ptr::null_mut(),
                            f.as_ptr() as *mut ffi::PyFrameObject,
                            ffi::PyTrace_CALL,
                            ptr::null_mut(),
                        );
                    }
                }
            }
        }
        let _ = py;
    }

    /// Per-call tracing (`scoped`): trace the calling thread until the matching
    /// [`exit_call`](Self::exit_call); calls nest (a traced call inside another, on this
    /// thread, only counts). The thread is registered with the recorder first, so its
    /// registration (Python code) is not traced. Returns False (and counts nothing) when
    /// this tracer is not the one running or is not scoped.
    fn enter_call(&self, py: Python<'_>) -> PyResult<bool> {
        let Some(a) = self.running() else { return Ok(false) };
        if !a.scoped {
            return Ok(false);
        }
        if a.shared.rec.local().is_none() {
            a.shared.state(py)?;
            if self.running().is_none() {
                return Ok(false); // Python ran: another thread stopped the tracer
            }
        }
        let depth = CALL_DEPTH.with(|d| d.replace(d.get() + 1));
        if depth == 0 && !uses_monitoring(py) {
            // SAFETY: GIL held; hooks the calling thread only.
            unsafe {
                ffi::PyEval_SetProfile(Some(profile_callback), a.hook_object.as_ptr());
                if let Hook::Profile { installed } = &mut *a.hook.get() {
                    installed.push(ffi::PyThreadState_Get() as usize);
                }
            }
        }
        Ok(true)
    }

    /// The end of a per-call traced call begun by [`enter_call`](Self::enter_call) (which
    /// returned True): the outermost one unhooks the calling thread. Calls this thread
    /// still has open (a generator it did not finish) stay open.
    fn exit_call(&self, py: Python<'_>) {
        let depth = CALL_DEPTH.with(|d| {
            let v = d.get().saturating_sub(1);
            d.set(v);
            v
        });
        if depth > 0 || uses_monitoring(py) {
            return;
        }
        let Some(a) = self.running() else { return };
        // SAFETY: GIL held; unhooks the calling thread only.
        unsafe {
            let me = ffi::PyThreadState_Get();
            if let Hook::Profile { installed } = &mut *a.hook.get() {
                installed.retain(|&t| t != me as usize);
            }
            ffi::PyEval_SetProfile(None, ptr::null_mut());
        }
    }

    /// Whether this tracer traces per call (`profile(recursive=True)`).
    #[getter]
    fn scoped(&self) -> bool {
        // SAFETY: GIL held (pymethods).
        unsafe { &*self.active.get() }.as_deref().is_some_and(|a| a.scoped)
    }

    /// Stop tracing (every thread). Idempotent. Calls still open stay open in the
    /// recorder (the session's end closes them).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        // SAFETY: GIL held.
        let slot = unsafe { &mut *self.active.get() };
        let Some(a) = slot.as_ref() else { return Ok(()) };
        let me = Arc::as_ptr(a) as *mut Active;
        let result = if ACTIVE.load(Ordering::Acquire) == me { stop_running(py) } else { Ok(()) };
        // SAFETY: GIL held; no callback reads it any more (ACTIVE no longer points at it).
        unsafe { *self.last.get() = *a.budget.get() };
        *slot = None;
        result
    }

    /// Whether this tracer is the one running.
    #[getter]
    fn running_now(&self) -> bool {
        self.running().is_some()
    }

    /// 3.11: whether another profile function (`sys.setprofile`, `cProfile`) has replaced
    /// this running tracer on the calling thread since it was installed there: the
    /// thread's calls since then are not recorded. False on 3.12+ (`sys.monitoring` tools
    /// do not displace each other), when not running, or on a thread it was not installed on.
    #[getter]
    fn displaced_here(&self, py: Python<'_>) -> PyResult<bool> {
        let Some(a) = self.running() else { return Ok(false) };
        // SAFETY: GIL held.
        if let Hook::EvalFrame = unsafe { &*a.hook.get() } {
            return Ok(!eval_frame_is_ours());
        }
        Ok(installed_here(a) && !profile_is(py, a)?)
    }

    /// Calls recorded so far (all threads).
    #[getter]
    fn recorded(&self) -> u64 {
        self.budget().recorded
    }

    /// Calls not recorded because `call_limit` was reached (all threads).
    #[getter]
    fn dropped(&self) -> u64 {
        self.budget().dropped
    }

    /// The `call_limit` (None = no limit).
    #[getter]
    fn call_limit(&self) -> Option<u64> {
        let l = self.budget().limit;
        (l != u64::MAX).then_some(l)
    }

    /// How the tracer hooks in (since its start; before it, how it will): `"sys.monitoring"`
    /// (3.12+), `"eval_frame"` (3.11: a PEP 523 frame evaluation function, every thread) or
    /// `"PyEval_SetProfile"` (3.11: a C profile function per thread; per-call tracing, or
    /// when another frame evaluation function is installed or `SCOPE_PROFILER_TRACE_HOOK=profile`).
    #[getter]
    fn mechanism(&self) -> &'static str {
        // SAFETY: GIL held (pymethods).
        unsafe { *self.mechanism.get() }
    }

    /// Before a finalize: store `traced_calls` / `traced_calls_dropped` in `metadata` (a
    /// dict) and warn (`RuntimeWarning`, at `stacklevel` counted from the Python caller)
    /// when a `recursive_include` matched no call, or `call_limit` dropped calls.
    #[pyo3(signature = (metadata, stacklevel=1))]
    fn report(&self, py: Python<'_>, metadata: &Bound<'_, PyDict>, stacklevel: i32) -> PyResult<()> {
        let b = self.budget();
        metadata.set_item("traced_calls", b.recorded)?;
        metadata.set_item("traced_calls_dropped", b.dropped)?;
        // SAFETY: GIL held (pymethods).
        let include = unsafe { &*self.include.get() };
        if b.recorded == 0 && !include.is_empty() {
            let shown = pyo3::types::PyList::new(py, include)?.repr()?.to_string();
            warn(py, &trace_notes::no_match_warning(&shown), stacklevel)?;
        }
        if b.dropped > 0 {
            warn(py, &trace_notes::dropped_warning(b.recorded, b.dropped, b.limit), stacklevel)?;
        }
        Ok(())
    }

    /// 3.11, before a stop: warn (`RuntimeWarning`, at `stacklevel` counted from the Python
    /// caller) when another tool displaced this running tracer on the calling thread (or,
    /// with `"eval_frame"`, everywhere), and when `thread_hook_displaced` (the program
    /// replaced the thread-start hook of a whole-recording `"PyEval_SetProfile"` tracer).
    #[pyo3(signature = (thread_hook_displaced=false, stacklevel=1))]
    fn warn_displaced(&self, py: Python<'_>, thread_hook_displaced: bool, stacklevel: i32) -> PyResult<()> {
        if self.running().is_none() {
            return Ok(());
        }
        let mechanism = self.mechanism();
        if self.displaced_here(py)? {
            if mechanism == "eval_frame" {
                warn(py, trace_notes::EVAL_FRAME_DISPLACED, stacklevel)?;
            } else {
                let thread = py.import(pyo3::intern!(py, "threading"))?.call_method0("current_thread")?;
                let name = thread.getattr("name")?.repr()?.to_string();
                warn(py, &trace_notes::profile_displaced_warning(&name), stacklevel)?;
            }
        }
        if thread_hook_displaced && mechanism == "PyEval_SetProfile" && !self.scoped() {
            warn(py, trace_notes::THREAD_HOOK_DISPLACED, stacklevel)?;
        }
        Ok(())
    }

    /// 3.11: warn (`RuntimeWarning`) that `previous` (the calling thread's other profiler)
    /// is paused while this tracer runs; the warning points at the first caller outside
    /// the `scope_profiler` package (the `setup()` or `with session():` line).
    /// Keep `previous` for [`Self::take_paused`] (the recording's end puts it back).
    fn pause_other(&self, py: Python<'_>, previous: Bound<'_, PyAny>) -> PyResult<()> {
        let message = trace_notes::paused_warning(&previous.repr()?.to_string());
        // SAFETY: GIL held (pymethods).
        unsafe { *self.paused.get() = Some(previous.unbind()) };
        warn(py, &message, outside_stacklevel(py)?)
    }

    /// The profiler [`Self::pause_other`] kept (once; None after, or when there was none).
    fn take_paused(&self) -> Option<Py<PyAny>> {
        // SAFETY: GIL held (pymethods).
        unsafe { &mut *self.paused.get() }.take()
    }

    /// Register this tracer as the one of the recording `key` (`id(config)`), replacing the
    /// previous one of that key.
    fn register(slf: &Bound<'_, Self>, key: usize) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.retain(|(k, _)| *k != key);
        reg.push((key, slf.clone().unbind()));
    }

    /// The tracer registered for `key` (running or stopped), or None.
    #[staticmethod]
    fn registered(py: Python<'_>, key: usize) -> Option<Py<NativeTracer>> {
        let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.iter().find(|(k, _)| *k == key).map(|(_, t)| t.clone_ref(py))
    }

    /// Forget the tracer registered for `key` (it is not stopped here).
    #[staticmethod]
    fn unregister(key: usize) {
        let gone = {
            let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            let at = reg.iter().position(|(k, _)| *k == key);
            at.map(|i| reg.remove(i))
        };
        drop(gone); // outside the lock: dropping may run Python (the paused profiler)
    }

    /// The registered tracer that is running now (at most one runs), or None.
    #[staticmethod]
    fn registered_running(py: Python<'_>) -> Option<Py<NativeTracer>> {
        let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        reg.iter().find(|(_, t)| t.get().running().is_some()).map(|(_, t)| t.clone_ref(py))
    }

    fn __repr__(&self) -> String {
        let b = self.budget();
        format!("<NativeTracer running={} recorded={} dropped={}>", self.running().is_some(), b.recorded, b.dropped)
    }
}

impl NativeTracer {
    fn running(&self) -> Option<&Active> {
        // SAFETY: GIL held (pymethods).
        let a = unsafe { &*self.active.get() }.as_deref()?;
        std::ptr::eq(ACTIVE.load(Ordering::Acquire), a).then_some(a)
    }

    fn budget(&self) -> CallBudget {
        // SAFETY: GIL held (pymethods).
        match unsafe { &*self.active.get() } {
            Some(a) => unsafe { *a.budget.get() },
            None => unsafe { *self.last.get() },
        }
    }
}

/// A `RuntimeWarning` with `message` at `stacklevel` (1 = the Python caller).
fn warn(py: Python<'_>, message: &str, stacklevel: i32) -> PyResult<()> {
    let message = std::ffi::CString::new(message.replace('\0', "\\x00")).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, stacklevel)
}

/// `stacklevel` (for a warning raised here) of the first Python caller outside the
/// `scope_profiler` package, counting the direct caller's caller as 2.
fn outside_stacklevel(py: Python<'_>) -> PyResult<i32> {
    let mut level = 2;
    let mut frame = py.import(pyo3::intern!(py, "sys"))?.call_method1("_getframe", (1,))?;
    loop {
        let back = frame.getattr("f_back")?;
        let module = frame.getattr("f_globals")?.call_method1("get", ("__name__", ""))?;
        let ours = module.extract::<String>().is_ok_and(|m| m.starts_with("scope_profiler"));
        if back.is_none() || !ours {
            return Ok(level);
        }
        frame = back;
        level += 1;
    }
}

/// `include`/`exclude` as given: None (none), one `str`, or an iterable of them (`str()` each).
fn patterns(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    match value {
        None => Ok(Vec::new()),
        Some(v) if v.is_none() => Ok(Vec::new()),
        Some(v) => match v.cast::<pyo3::types::PyString>() {
            Ok(s) => Ok(vec![s.to_string()]),
            Err(_) => v.try_iter()?.map(|item| Ok(item?.str()?.to_string())).collect(),
        },
    }
}

/// 3.11: whether `a` was installed on the calling thread (and not removed there since).
fn installed_here(a: &Active) -> bool {
    // SAFETY: GIL held (callers are pymethods or hold it).
    match unsafe { &*a.hook.get() } {
        Hook::Profile { installed } => {
            // SAFETY: GIL held.
            let me = unsafe { ffi::PyThreadState_Get() } as usize;
            installed.contains(&me)
        }
        Hook::Monitoring { .. } | Hook::EvalFrame => false,
    }
}

/// Whether the interpreter's frame evaluation function is [`eval_frame_hook`] (3.11).
fn eval_frame_is_ours() -> bool {
    // SAFETY: GIL held (callers are pymethods or hold it).
    eval_frame_api().is_some_and(
        |api| unsafe { (api.get)(ffi::PyInterpreterState_Get()) } as usize == eval_frame_hook as *const () as usize,
    )
}

/// Whether the calling thread's profile object (`sys.getprofile()`) is `a`'s hook object.
fn profile_is(py: Python<'_>, a: &Active) -> PyResult<bool> {
    let current = py.import(pyo3::intern!(py, "sys"))?.call_method0(pyo3::intern!(py, "getprofile"))?;
    Ok(current.is(a.hook_object.bind(py)))
}

/// Unhook the running tracer (if any) from the interpreter and clear [`ACTIVE`].
fn stop_running(py: Python<'_>) -> PyResult<()> {
    let p = ACTIVE.load(Ordering::Acquire);
    if p.is_null() {
        return Ok(());
    }
    ACTIVE.store(ptr::null_mut(), Ordering::Release);
    // SAFETY: GIL held; the watched generators' calls stay open (the session's end closes them)
    unsafe {
        (*(*p).open_gens.get()).clear();
        (*(*p).gen_lanes.get()).clear();
    }
    // SAFETY: GIL held; `p` is owned by its NativeTracer, alive until its stop().
    let hook = unsafe { &mut *(*p).hook.get() };
    match hook {
        Hook::Monitoring { tool, .. } => stop_monitoring(py, *tool),
        Hook::EvalFrame => {
            // another frame evaluation function installed since (a debugger) stays
            if let (true, Some(api)) = (eval_frame_is_ours(), eval_frame_api()) {
                // SAFETY: GIL held; frames running in the hook finish through it.
                unsafe { (api.set)(ffi::PyInterpreterState_Get(), api.default) };
            }
            Ok(())
        }
        Hook::Profile { installed } => {
            // SAFETY: GIL held; only thread states still alive are touched.
            unsafe {
                let current = ffi::PyThreadState_Get();
                let alive = thread_states();
                for &t in installed.iter() {
                    let t = t as *mut ffi::PyThreadState;
                    if t == current {
                        // another profiler installed since (cProfile) keeps running
                        if profile_is(py, &*p).unwrap_or(true) {
                            ffi::PyEval_SetProfile(None, ptr::null_mut());
                        }
                    } else if alive.contains(&t) {
                        if let Some(set) = set_profile_for_thread() {
                            set(t, None, ptr::null_mut());
                        }
                    }
                }
            }
            installed.clear();
            Ok(())
        }
    }
}

impl Drop for NativeTracer {
    fn drop(&mut self) {
        let Some(a) = self.active.get_mut().as_ref() else { return };
        let me = Arc::as_ptr(a) as *mut Active;
        if ACTIVE.load(Ordering::Acquire) == me {
            // SAFETY: a pyclass is dropped with the GIL held.
            let py = unsafe { Python::assume_attached() };
            if let Err(e) = stop_running(py) {
                e.write_unraisable(py, None);
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TraceHook>()?;
    m.add_class::<NativeTracer>()
}
