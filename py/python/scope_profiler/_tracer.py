"""Function-level tracing without markers (``recursive_profile=True``, ``scope-profiler run
--recursive``): the Python side of ``scope_profiler._native.NativeTracer``.

Every call of a selected Python function becomes a call of the region ``module.qualname``
(the reference's name), on the calling thread's buffers and task lane, like an explicit
region. The selection (the user's code unless ``recursive_all`` or ``recursive_include``
names what to trace; ``recursive_exclude`` globs; ``recursive_entrypoint``) is decided once
per code object in Rust (``scope_profiler_recorder::trace_select``). This module only builds the tracer from a configuration, starts and stops it with the
recording, arms the thread-start hook when it hooks threads one by one (3.11's profile
function; 3.11's frame evaluation function and 3.12+'s ``sys.monitoring`` cover every thread)
and reports the calls that ``recursive_call_limit`` left out.
"""

from __future__ import annotations

import os
import sys

from ._native import NativeTracer, TraceHook

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cheap import)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._settings import ProfilingConfig

#: Code objects of ``@profile``-decorated functions: recorded by their own region, so the
#: tracer leaves them out (a call is never recorded twice).
DECORATED_CODES: set = set()


#: The profiler's own directory, as imported and resolved: nothing in it is traced (the
#: start-up file of followed processes, ``_follow_boot/sitecustomize.py``, included).
OWN_DIRS: list[str] = sorted(
    {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.realpath(__file__))}
)

#: The module ``scope-profiler run -m`` runs, set by the command before its session starts.
_run_module: str | None = None


def set_run_module(module: str | None) -> None:
    """Note what ``run`` runs (``module``: the module of ``run -m``, None for a script): the
    module's top-level package is the user's code, traced by default wherever installed."""
    global _run_module
    _run_module = module


def _system_paths() -> list[str]:
    """The standard-library and installed-package directories (not the user's code):
    ``sysconfig.get_paths()``'s ``stdlib``/``platstdlib``/``purelib``/``platlib``,
    ``site.getsitepackages()`` and ``site.getusersitepackages()``; a source that fails is
    skipped, as the reference does. Resolved to real paths by the tracer."""
    import site
    import sysconfig

    out: list[str] = []
    try:
        paths = sysconfig.get_paths()
        out += [paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)]
    except Exception:
        pass
    for source in (site.getsitepackages, lambda: [site.getusersitepackages()]):
        try:
            out += [p for p in source() if isinstance(p, str)]
        except Exception:
            pass
    return out


def _opcodes() -> tuple[int, int]:
    """The opcodes the tracer reads in 3.11's frames: ``RESUME`` (a generator's first
    start), ``YIELD_VALUE`` (a suspension)."""
    import dis

    return dis.opmap["RESUME"], dis.opmap["YIELD_VALUE"]


def mark_decorated(func: Any) -> None:
    """Note ``func`` (about to be wrapped by ``@profile``) so the tracer skips its code."""
    code = getattr(func, "__code__", None)
    if code is not None:
        DECORATED_CODES.add(code)


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
    as a function and fail at the next call)."""
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
    tracer = NativeTracer.registered(id(config))
    if tracer is not None and tracer.running_now:
        return tracer
    resume, yielded = _opcodes()
    tracer = NativeTracer(
        config._native,
        all=bool(config.recursive_all),
        system_prefixes=[] if config.recursive_all else _system_paths(),
        own_dirs=OWN_DIRS,
        main_module=_run_module,
        include=config.recursive_include,
        exclude=config.recursive_exclude,
        entrypoint=config.recursive_entrypoint,
        call_limit=config.recursive_call_limit,
        decorated=DECORATED_CODES,
        recorded_path=recorded_path,
        resume_opcode=resume,
        yield_opcode=yielded,
    )
    previous = other_profiler()
    tracer.start()
    tracer.register(id(config))
    if tracer.mechanism != "PyEval_SetProfile":
        return tracer  # 3.12+ monitoring, 3.11 frame evaluation: every thread, beside others
    if previous is not None:
        tracer.pause_other(previous)  # put back by stop(); warns
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
    tracer = NativeTracer.registered(id(config))
    if tracer is not None:
        return tracer if tracer.running_now and tracer.scoped else None
    if config.recursive_profile or NativeTracer.registered_running() is not None:
        return None
    resume, yielded = _opcodes()
    tracer = NativeTracer(
        config._native,
        all=True,
        own_dirs=OWN_DIRS,
        call_limit=config.recursive_call_limit,
        decorated=DECORATED_CODES,
        recorded_path=recorded_path,
        scoped=True,
        resume_opcode=resume,
        yield_opcode=yielded,
    )
    tracer.start()
    tracer.register(id(config))
    return tracer


def tracer_of(config: ProfilingConfig | None) -> NativeTracer | None:
    """The tracer ``config`` started (running or stopped), or None."""
    return None if config is None else NativeTracer.registered(id(config))


def stop(config: ProfilingConfig | None, stacklevel: int = 2) -> None:
    """Stop the tracing of ``config`` (idempotent); its counters stay readable. Warns
    (``RuntimeWarning``) when another profiler had replaced the tracer on the calling
    thread (3.11): that thread's later calls are missing from the run."""
    tracer = tracer_of(config)
    if tracer is None or not tracer.running_now:
        return
    from . import _tracking

    tracer.warn_displaced(_tracking.thread_hook_displaced(), stacklevel=stacklevel)
    if tracer.mechanism == "PyEval_SetProfile" and not tracer.scoped:
        _tracking.remove_thread_start_callback(tracer.install_thread)
    tracer.stop()
    restore_profiler(tracer.take_paused())


def forget(config: ProfilingConfig | None) -> None:
    """Stop and forget the tracer of ``config`` (the configuration is replaced)."""
    stop(config)
    if config is not None:
        NativeTracer.unregister(id(config))


def _stop_all() -> None:
    """At the interpreter's exit (``_exit``: after every exit-time finalize): no tracer
    outlives the interpreter's modules (a traced call at shutdown would import threading)."""
    tracer = NativeTracer.registered_running()
    if tracer is not None:
        if tracer.mechanism == "PyEval_SetProfile" and not tracer.scoped:
            from . import _tracking

            _tracking.remove_thread_start_callback(tracer.install_thread)
        tracer.stop()


def report(config: ProfilingConfig, stacklevel: int = 2) -> None:
    """Before a finalize: record ``traced_calls`` / ``traced_calls_dropped`` in the run's
    metadata and warn (``RuntimeWarning``) when ``recursive_include`` matched no call or
    ``recursive_call_limit`` dropped calls (:meth:`NativeTracer.report`)."""
    tracer = tracer_of(config)
    if tracer is None:
        return
    tracer.report(config.metadata, stacklevel=stacklevel)
