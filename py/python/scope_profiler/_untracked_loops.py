"""Tasks of event loops ``track_async`` does not instrument.

A region opened on a thread's own lane (no task lane current) under ``track_async`` asks
(from Rust, ``py/src/hooks/untracked_loops.rs``) whether it runs inside a task of an event
loop whose tasks get no lanes:

* an asyncio-compatible loop that never reached the ``BaseEventLoop`` patches (uvloop
  without ``instrument_loop``): it is instrumented for every active tracker at once, so the
  tasks it creates from now on are lanes, and a warning says once that the tasks created
  before were not tracked and how to track them all;
* a trio run no tracker follows (started without going through the patched ``trio.run`` /
  ``trio.lowlevel.start_guest_run``, see ``_trio_hooks``): it is followed for every active
  tracker at once, so the tasks it spawns from now on are lanes, and a warning says once
  that the tasks spawned before were not tracked and how to track them all.

Calls of such tasks are on the thread's lane with no await time; concurrent ones nest in the
order they opened, so their durations include the other tasks' time.
"""

from __future__ import annotations

import sys
import warnings
import weakref

# the warnings' texts: ``scope_profiler_session::untracked_loops``
from ._native import UNTRACKED_TRIO_WARNING, untracked_loop_warning

#: Loops found instrumented (or instrumented here): nothing more to check for them.
_SETTLED: weakref.WeakSet = weakref.WeakSet()
#: What was warned about already ("asyncio", "trio").
_WARNED: set[str] = set()


def _settle(loop) -> None:
    try:
        _SETTLED.add(loop)
    except TypeError:  # a loop without weak references is checked each time
        pass


def check_loop(loop) -> bool:
    """A region opened on the thread's lane while ``loop`` runs on this thread; returns
    whether ``loop`` needs no more checks (instrumented, now or before)."""
    try:
        if loop in _SETTLED:
            return True
    except TypeError:
        pass
    from . import _asyncio_hooks

    if not _asyncio_hooks.tracking():  # the trackers left: nothing follows tasks any more
        return False
    if _asyncio_hooks.instruments(loop):
        _settle(loop)
        return True
    import asyncio

    if asyncio.current_task(loop) is None:  # a plain callback of the loop: no task to track
        return False
    _asyncio_hooks.instrument_active(loop)
    _settle(loop)
    if "asyncio" not in _WARNED:
        _WARNED.add("asyncio")
        kind = f"{type(loop).__module__}.{type(loop).__qualname__}"
        warnings.warn(untracked_loop_warning(kind), RuntimeWarning, stacklevel=2)
    return True


def check_trio() -> bool:
    """A region opened on the thread's lane while trio is imported; returns whether trio
    needs no more checks (warned). A trio run nobody follows is followed from now on for
    every active tracker."""
    trio = sys.modules.get("trio")
    try:
        in_task = trio is not None and trio.lowlevel.current_task() is not None
    except (RuntimeError, AttributeError):  # not inside trio.run on this thread
        in_task = False
    if not in_task:
        return "trio" in _WARNED
    hooks = sys.modules.get("scope_profiler._trio_hooks")
    if hooks is None or not hooks.tracking() or hooks.follows_current_run():
        # untracked, or a task the run's instrument did not see spawned (trio's own, or
        # one started before setup() inside the run): nothing to say
        return False
    hooks.instrument_current_run()
    if "trio" in _WARNED:
        return True
    _WARNED.add("trio")
    warnings.warn(UNTRACKED_TRIO_WARNING, RuntimeWarning, stacklevel=2)
    return True
