"""Function-level tracing without markers (``recursive_profile=True``, ``scope-profiler run
--recursive``; issue 12): the Python side of ``scope_profiler._native.NativeTracer``.

Every call of a selected Python function becomes a call of the region ``module.qualname``
(the reference's name), on the calling thread's buffers and task lane, like an explicit
region. The selection (user code only unless ``recursive_all``; ``recursive_include`` /
``recursive_exclude`` globs; ``recursive_entrypoint``) is decided once per code object in
Rust. This module only builds the tracer from a configuration, starts and stops it with the
recording, arms the thread-start hook when it hooks threads one by one (3.11's profile
function; 3.11's frame evaluation function and 3.12+'s ``sys.monitoring`` cover every thread)
and reports the calls that ``recursive_call_limit`` left out.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings

from ._native import NativeTracer, TraceHook

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._settings import ProfilingConfig

#: Code objects of ``@profile``-decorated functions: recorded by their own region, so the
#: tracer leaves them out (a call is never recorded twice).
DECORATED_CODES: set = set()

#: The tracer of each configuration that records with ``recursive_profile`` (by id).
_TRACERS: dict[int, NativeTracer] = {}


def mark_decorated(func: Any) -> None:
    """Note ``func`` (about to be wrapped by ``@profile``) so the tracer skips its code."""
    code = getattr(func, "__code__", None)
    if code is not None:
        DECORATED_CODES.add(code)


def system_prefixes() -> list[str]:
    """Real paths of the standard library and installed-package directories (the reference's
    ``_system_path_prefixes``): code under them is not user code."""
    import site
    import sysconfig

    prefixes: set[str] = set()
    try:
        paths = sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            path = paths.get(key)
            if path:
                prefixes.add(os.path.realpath(path))
    except Exception:
        pass
    try:
        prefixes.update(os.path.realpath(p) for p in site.getsitepackages())
    except Exception:
        pass
    try:
        user = site.getusersitepackages()
        if user:
            prefixes.add(os.path.realpath(user))
    except Exception:
        pass
    return sorted(prefixes)


def _patterns(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


#: id(config) -> the profiler that ran on the thread that started the tracer (3.11), put
#: back when the tracer stops.
_PAUSED: dict[int, Any] = {}


def _outside_stacklevel() -> int:
    """``stacklevel`` of the first caller outside the ``scope_profiler`` package (the
    ``setup()`` or ``with session():`` line), for a warning raised by the caller of this."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(
        "scope_profiler"
    ):
        frame = frame.f_back
        level += 1
    return level


def other_profiler() -> Any:
    """3.11: the calling thread's profiler other than the tracer (what ``sys.getprofile()``
    returns: a Python profile function, or a C profiler's object such as a
    ``cProfile.Profile``), else None. None on 3.12+, where the tracer does not use it."""
    if sys.version_info >= (3, 12):
        return None
    current = sys.getprofile()
    return None if isinstance(current, TraceHook) else current


def restore_profiler(previous: Any) -> None:
    """3.11: run ``previous`` (from :func:`other_profiler`) on the calling thread again: a
    Python profile function with ``sys.setprofile``, a C profiler's object with its
    ``enable()`` (``cProfile.Profile``: ``sys.setprofile`` would install the object itself
    as a function and fail at the next call; stop 24 new-user trial)."""
    if previous is None or sys.version_info >= (3, 12) or sys.getprofile() is previous:
        return
    if callable(previous):
        sys.setprofile(previous)
    elif callable(getattr(previous, "enable", None)):
        previous.enable()


def start(config: ProfilingConfig, recorded_path: Callable[[str], str]) -> NativeTracer | None:
    """Start tracing for ``config`` when it asks for it (``recursive_profile``); returns the
    running tracer or None. Raises ``RuntimeError`` when no ``sys.monitoring`` tool id is
    free (3.12+)."""
    if not config.recursive_profile or config.deactivate_profiling or config._native is None:
        return None
    tracer = _TRACERS.get(id(config))
    if tracer is not None and tracer.running_now:
        return tracer
    import dis

    tracer = NativeTracer(
        config._native,
        all=bool(config.recursive_all),
        system_prefixes=system_prefixes(),
        include=_patterns(config.recursive_include),
        exclude=_patterns(config.recursive_exclude),
        entrypoint=config.recursive_entrypoint,
        call_limit=config.recursive_call_limit,
        decorated=DECORATED_CODES,
        recorded_path=recorded_path,
        resume_opcode=dis.opmap.get("RESUME", 151),
        yield_opcode=dis.opmap.get("YIELD_VALUE", 86),
    )
    previous = other_profiler()
    tracer.start()
    _TRACERS[id(config)] = tracer
    if tracer.mechanism != "PyEval_SetProfile":
        return tracer  # 3.12+ monitoring, 3.11 frame evaluation: every thread, beside others
    if previous is not None:
        _PAUSED[id(config)] = previous
        warnings.warn(
            f"recursive_profile: the profiler running on this thread ({previous!r}) is paused "
            "while scope-profiler traces it (Python 3.11 gives a thread one profile function) "
            "and resumed when the recording ends",
            RuntimeWarning,
            stacklevel=_outside_stacklevel(),
        )
    from . import _tracking

    _tracking.add_thread_start_callback(tracer.install_thread)
    return tracer


def call_tracer(config: ProfilingConfig | None, recorded_path: Callable[[str], str]) -> Any:
    """The per-call tracer of ``config`` for ``profile(recursive=True)`` (made and started
    on first use; ``None`` when ``config`` does not record, traces its whole recording
    already - ``recursive_profile`` - or another recording's tracer is running).

    Its selection is the reference's for a recursive decorated call: every Python function
    (standard library and packages included), but the profiler's own and ``@profile``-
    decorated ones, named ``module.qualname``; only the thread running a decorated call is
    traced, from its ``enter_call()`` to its ``exit_call()``."""
    if config is None or config.deactivate_profiling or config._native is None:
        return None
    tracer = _TRACERS.get(id(config))
    if tracer is not None:
        return tracer if tracer.running_now and tracer.scoped else None
    if config.recursive_profile or any(t.running_now for t in _TRACERS.values()):
        return None
    import dis

    tracer = NativeTracer(
        config._native,
        all=True,
        call_limit=config.recursive_call_limit,
        decorated=DECORATED_CODES,
        recorded_path=recorded_path,
        resume_opcode=dis.opmap.get("RESUME", 151),
        yield_opcode=dis.opmap.get("YIELD_VALUE", 86),
        scoped=True,
    )
    tracer.start()
    _TRACERS[id(config)] = tracer
    return tracer


def tracer_of(config: ProfilingConfig | None) -> NativeTracer | None:
    """The tracer ``config`` started (running or stopped), or None."""
    return None if config is None else _TRACERS.get(id(config))


def stop(config: ProfilingConfig | None, stacklevel: int = 2) -> None:
    """Stop the tracing of ``config`` (idempotent); its counters stay readable. Warns
    (``RuntimeWarning``) when another profiler had replaced the tracer on the calling
    thread (3.11): that thread's later calls are missing from the run."""
    tracer = tracer_of(config)
    if tracer is None or not tracer.running_now:
        return
    if tracer.displaced_here and tracer.mechanism == "eval_frame":
        warnings.warn(
            "function-level tracing stopped early: another tool (a debugger) installed its "
            "own frame evaluation function (PEP 523) in place of scope-profiler's, so the "
            "calls after that are not in the run",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
    elif tracer.displaced_here:
        warnings.warn(
            f"function-level tracing stopped early on thread {threading.current_thread().name!r}: "
            "another profiler (sys.setprofile, cProfile) replaced scope-profiler's on that "
            "thread, so its calls after that are not in the run (on Python 3.11 a thread has "
            "one profile function; 3.12+ has no such limit)",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
    if tracer.mechanism == "PyEval_SetProfile" and not tracer.scoped:
        from . import _tracking

        if _tracking.thread_hook_displaced():
            warnings.warn(
                "function-level tracing missed threads: the program replaced scope-profiler's "
                "thread-start hook with threading.setprofile(), so threads started after that "
                "were not traced (Python 3.11; 3.12+ traces every thread)",
                RuntimeWarning,
                stacklevel=stacklevel,
            )
        _tracking.remove_thread_start_callback(tracer.install_thread)
    tracer.stop()
    restore_profiler(_PAUSED.pop(id(config), None))


def forget(config: ProfilingConfig | None) -> None:
    """Stop and forget the tracer of ``config`` (the configuration is replaced)."""
    stop(config)
    if config is not None:
        _TRACERS.pop(id(config), None)
        _PAUSED.pop(id(config), None)


@atexit.register
def _stop_all() -> None:
    """At interpreter exit (after every exit-time finalize, atexit being LIFO): no tracer
    outlives the interpreter's modules (a traced call at shutdown would import threading)."""
    for tracer in list(_TRACERS.values()):
        if tracer.running_now:
            if tracer.mechanism == "PyEval_SetProfile" and not tracer.scoped:
                from . import _tracking

                _tracking.remove_thread_start_callback(tracer.install_thread)
            tracer.stop()


def report(config: ProfilingConfig, stacklevel: int = 2) -> None:
    """Before a finalize: record ``traced_calls`` / ``traced_calls_dropped`` in the run's
    metadata and warn (``RuntimeWarning``) when ``recursive_call_limit`` dropped calls."""
    tracer = tracer_of(config)
    if tracer is None:
        return
    dropped = tracer.dropped
    config.metadata["traced_calls"] = tracer.recorded
    config.metadata["traced_calls_dropped"] = dropped
    include = _patterns(config.recursive_include)
    if tracer.recorded == 0 and include:
        # stop 25 new-user trial: `run --recursive --include 'nomatch*'` said nothing
        warnings.warn(
            f"function-level tracing recorded no call: no function that ran matched "
            f"recursive_include={include} (names are module.qualname, those of the script or "
            "of `run -m` are __main__.*)",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
    if dropped:
        warnings.warn(
            f"function-level tracing recorded {tracer.recorded:,} calls and dropped {dropped:,} "
            f"more past recursive_call_limit={tracer.call_limit:,}; the run lacks them (raise "
            "recursive_call_limit, or narrow the selection with recursive_include/_exclude)",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
