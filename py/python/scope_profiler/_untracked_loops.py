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

#: Loops found instrumented (or instrumented here): nothing more to check for them.
_SETTLED: weakref.WeakSet = weakref.WeakSet()
#: What was warned about already ("asyncio", "trio").
_WARNED: set[str] = set()

_LOOP_ADVICE = (
    "track_async: tasks of the running {kind} event loop were not tracked: the loop was not "
    "instrumented when they were created, so their calls have no task lane (task id -1, "
    "await time 0) and calls of concurrent tasks nest on the thread's lane, with durations "
    "that include the other tasks' time. The loop is instrumented from now on. To track "
    "every task, instrument the loop before its tasks start: "
    "ProfileManager.get_config().tracker.instrument_loop(loop), for example as the first "
    "line of the main coroutine with asyncio.get_running_loop() (uvloop.run() and "
    "asyncio.run(..., loop_factory=...) create the loop themselves)."
)

_TRIO_ADVICE = (
    "track_async: tasks of the running trio run were not tracked: the run was not started "
    "through trio.run or trio.lowlevel.start_guest_run while a tracker was installed (for "
    "example `from trio import run` before setup()), so calls of the tasks it spawned so far "
    "have no task lane (task id -1, await time 0) and calls of concurrent tasks nest on the "
    "thread's lane, with durations that include the other tasks' time. The tasks it spawns "
    "from now on are lanes. To track every task, start the run as trio.run(...) after "
    "setup(), or call setup() inside the run before spawning tasks."
)


def _settle(loop) -> None:
    try:
        _SETTLED.add(loop)
    except TypeError:  # a loop without weak references is checked each time
        pass


def check_loop(loop) -> None:
    """A region opened on the thread's lane while ``loop`` runs on this thread."""
    try:
        if loop in _SETTLED:
            return
    except TypeError:
        pass
    from . import _asyncio_hooks

    if not _asyncio_hooks.tracking():  # the trackers left: nothing follows tasks any more
        return
    if _asyncio_hooks.instruments(loop):
        _settle(loop)
        return
    import asyncio

    if asyncio.current_task(loop) is None:  # a plain callback of the loop: no task to track
        return
    _asyncio_hooks.instrument_active(loop)
    _settle(loop)
    if "asyncio" not in _WARNED:
        _WARNED.add("asyncio")
        kind = f"{type(loop).__module__}.{type(loop).__qualname__}"
        warnings.warn(_LOOP_ADVICE.format(kind=kind), RuntimeWarning, stacklevel=2)


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
    warnings.warn(_TRIO_ADVICE, RuntimeWarning, stacklevel=2)
    return True
