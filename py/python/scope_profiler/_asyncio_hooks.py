"""asyncio hooks shared by every ``track_async`` tracker of the process.

Imported (and ``asyncio`` with it) only when a ``track_async`` tracker installs.

* ``asyncio.BaseEventLoop.run_forever`` and ``create_task`` are replaced once, while at
  least one tracker is active, by functions that instrument the loop for every active
  tracker and then call the originals. That covers ``asyncio.run``,
  ``run_until_complete``, a bare ``run_forever``, loops created after ``setup()`` and loops
  run in other threads. ``instrument(loop, tracker)`` also serves loops that never reach
  ``BaseEventLoop`` (uvloop, custom loops).
* Each instrumented loop gets one process-wide task factory (``_task_factory``, Rust) that
  wraps the coroutine once per tracker that instrumented the loop (a Rust
  ``TimedCoroutine`` each) and has the task made by the loop's chain of factories: the one
  it had before, and each one the application set over ours since (ours is set again
  above it; one that calls back into ours is passed on down the chain).
* A standard loop (an ``asyncio.BaseEventLoop`` keeping asyncio's clock, ``time.monotonic()``,
  and its ready handles in the deque ``loop._ready``) gets a ``ReadyQueue`` (Rust) in place
  of that deque: it stamps each handle with the moment it became ready, so each task step
  knows how long its task waited for the busy loop (ready wait), and records the callbacks
  that held the loop (loop blocks). The deque, with what it holds, is put back when no
  tracker times the loop any more. Other loops (uvloop, loops with a clock of their own)
  keep theirs: their tasks' ready wait is unknown.
* Release is order-independent: a tracker leaving takes itself out of every loop; a loop
  nobody tracks any more gets its own previous factory back, and the ``BaseEventLoop``
  methods are restored when the last tracker leaves (only if they are still ours, so a
  patch installed on top by someone else is never undone).
"""

from __future__ import annotations

import asyncio
import collections
import sys
import weakref
from typing import Any

from ._native import ReadyQueue, TaskFactory

#: Active trackers, install order.
_TRACKERS: list = []
#: Saved ``BaseEventLoop`` attributes (as found in the class ``__dict__``).
_ORIGINALS: dict = {}
#: The task factory of every instrumented loop (Rust: the loops, their previous factories
#: and the recorders timing their tasks).
_task_factory = TaskFactory()
#: loop -> the ``ReadyQueue`` that replaced its ``_ready`` deque.
_READY_QUEUES: weakref.WeakKeyDictionary[Any, ReadyQueue] = weakref.WeakKeyDictionary()


def _standard_ready_queue(loop) -> bool:
    """Whether ``loop`` keeps its ready handles in asyncio's deque and asyncio's clock (loop
    time = ``time.monotonic()``, the recording clock, so a timer's deadline is a moment of it).

    The loop's attributes are read with ``getattr``, never through ``vars(loop)``: on CPython
    3.11+ that materialises the instance's ``__dict__`` for good, and every ``self._ready``,
    ``self._stopping`` ... of the loop's own code then misses the interpreter's fast path
    (about 130 ns per task step of a busy loop)."""
    return (
        isinstance(loop, asyncio.BaseEventLoop)
        and type(loop).time is asyncio.BaseEventLoop.time
        and type(getattr(loop, "_ready", None)) is collections.deque
    )


def _queue_of(loop):
    """The ``ReadyQueue`` of ``loop``, if it has one."""
    try:
        return _READY_QUEUES.get(loop)
    except TypeError:  # cannot be weakly referenced: not a standard loop, never given one
        return None


def _time_ready_queue(loop, tracker) -> None:
    """Replace a standard loop's ready deque by a ``ReadyQueue`` timing it for ``tracker``."""
    queue = _queue_of(loop)
    if queue is not None:
        queue.add_recorder(tracker._native)
    elif _standard_ready_queue(loop):
        queue = ReadyQueue(loop._ready, tracker._native)
        loop._ready = queue
        _READY_QUEUES[loop] = queue


def _untime_ready_queues(tracker) -> None:
    """Take ``tracker`` out of every ready queue; a loop left untimed gets a deque back, with
    the handles its queue holds."""
    for loop, queue in list(_READY_QUEUES.items()):
        if queue.remove_recorder(tracker._native):
            continue
        if queue is getattr(loop, "_ready", None):
            loop._ready = collections.deque(queue)
        queue.run_stopped()
        del _READY_QUEUES[loop]


def instrument(loop, tracker) -> None:
    """Route ``loop``'s task creation through ``tracker``'s step timer and time its ready
    queue (idempotent)."""
    _task_factory.instrument(loop, tracker._native)
    _time_ready_queue(loop, tracker)


def tracking() -> bool:
    """Whether some tracker is active."""
    return bool(_TRACKERS)


def instruments(loop) -> bool:
    """Whether some tracker times ``loop``'s new tasks."""
    return _task_factory.instruments(loop)


def instrument_active(loop) -> None:
    """Route ``loop``'s task creation through every active tracker's step timer."""
    for tracker in _TRACKERS:
        instrument(loop, tracker)


def _run_forever(self):
    instrument_active(self)
    queue = _queue_of(self)
    if queue is None:
        return _ORIGINALS["run_forever"](self)
    queue.run_started()
    try:
        return _ORIGINALS["run_forever"](self)
    finally:
        # the last handle's run ends: no step on this thread is resumed by it any more
        queue.run_stopped()


#: CPython 3.13.0-3.13.2 call ``task.set_name(name)`` after a custom task factory even when
#: no name was given, so every unnamed task would be called ``'None'`` (CPython gh-130033,
#: fixed in 3.13.3) - in the task table and in the program's own ``get_name()``.
_SETS_NAME_NONE = (3, 13, 0) <= sys.version_info[:3] < (3, 13, 3)


def _create_task(self, coro, **kwargs):
    instrument_active(self)
    if _SETS_NAME_NONE and kwargs.get("name") is None and self._task_factory is _task_factory:
        # what 3.13.3 does: the factory's task keeps its default name ("Task-N")
        self._check_closed()
        context = kwargs.get("context")
        return (
            _task_factory(self, coro)
            if context is None
            else _task_factory(self, coro, context=context)
        )
    return _ORIGINALS["create_task"](self, coro, **kwargs)


_run_forever.__wrapped__ = asyncio.BaseEventLoop.run_forever  # type: ignore[attr-defined]
_create_task.__wrapped__ = asyncio.BaseEventLoop.create_task  # type: ignore[attr-defined]
_PATCHES = {"run_forever": _run_forever, "create_task": _create_task}


def acquire(tracker) -> None:
    """Activate ``tracker`` (patch ``BaseEventLoop`` if it is the first); instrument the
    running loop if ``setup()`` runs inside one."""
    if tracker in _TRACKERS:
        return
    if not _TRACKERS:
        for name, patch in _PATCHES.items():
            _ORIGINALS[name] = asyncio.BaseEventLoop.__dict__[name]
            setattr(asyncio.BaseEventLoop, name, patch)
    _TRACKERS.append(tracker)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    instrument(loop, tracker)


def release(tracker) -> None:
    """Deactivate ``tracker``: out of every loop (a loop left untracked gets its previous
    factory back), ``BaseEventLoop`` restored after the last tracker."""
    _task_factory.release(tracker._native)
    _untime_ready_queues(tracker)
    if tracker not in _TRACKERS:
        return
    _TRACKERS.remove(tracker)
    if not _TRACKERS:
        for name, patch in _PATCHES.items():
            if asyncio.BaseEventLoop.__dict__.get(name) is patch:
                setattr(asyncio.BaseEventLoop, name, _ORIGINALS[name])
        _ORIGINALS.clear()
