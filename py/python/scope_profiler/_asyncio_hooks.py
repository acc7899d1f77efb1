"""asyncio hooks shared by every ``track_async`` tracker of the process.

Imported (and ``asyncio`` with it) only when a ``track_async`` tracker installs.

* ``asyncio.BaseEventLoop.run_forever`` and ``create_task`` are replaced once, while at
  least one tracker is active, by functions that instrument the loop for every active
  tracker and then call the originals. That covers ``asyncio.run``,
  ``run_until_complete``, a bare ``run_forever``, loops created after ``setup()`` and loops
  run in other threads. ``instrument(loop, tracker)`` also serves loops that never reach
  ``BaseEventLoop`` (uvloop, custom loops).
* Each instrumented loop gets one process-wide task factory (``_task_factory``) that
  chains the factory the loop had before (saved once per loop) and wraps the coroutine
  once per tracker that instrumented the loop (a Rust ``TimedCoroutine`` each).
* Release is order-independent: a tracker leaving takes itself out of every loop; a loop
  nobody tracks any more gets its own previous factory back, and the ``BaseEventLoop``
  methods are restored when the last tracker leaves (only if they are still ours, so a
  patch installed on top by someone else is never undone).
"""

from __future__ import annotations

import asyncio
import sys
import weakref

#: Active trackers, install order.
_TRACKERS: list = []
#: Saved ``BaseEventLoop`` attributes (as found in the class ``__dict__``).
_ORIGINALS: dict = {}
#: Instrumented loops (weak when the loop allows it): loop -> _LoopState.
_LOOPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STRONG_LOOPS: dict = {}  # id(loop) -> (loop, state), for loops without weakref support


class _LoopState:
    __slots__ = ("previous", "trackers")

    def __init__(self, previous) -> None:
        self.previous = previous
        self.trackers: list = []


def _state(loop):
    try:
        return _LOOPS.get(loop)
    except TypeError:
        entry = _STRONG_LOOPS.get(id(loop))
        return entry[1] if entry is not None and entry[0] is loop else None


def _set_state(loop, state) -> None:
    try:
        _LOOPS[loop] = state
    except TypeError:
        _STRONG_LOOPS[id(loop)] = (loop, state)


def _all_states():
    out = list(_LOOPS.items())
    out.extend(_STRONG_LOOPS.values())
    return out


def _drop_state(loop) -> None:
    try:
        _LOOPS.pop(loop, None)
    except TypeError:
        _STRONG_LOOPS.pop(id(loop), None)


def _task_factory(loop, coro, **kwargs):
    state = _state(loop)
    previous = state.previous if state is not None else None
    handles = []
    wrapped = coro
    if state is not None and asyncio.iscoroutine(coro):
        for tracker in state.trackers:
            handle, wrapped = tracker._wrap_coroutine(wrapped, coro)
            handles.append((tracker, handle))
    if previous is not None:
        task = previous(loop, wrapped, **kwargs)
    else:
        task = asyncio.Task(wrapped, loop=loop, **kwargs)
    for tracker, handle in handles:
        tracker._adopt_task(handle, task)
    return task


def instrument(loop, tracker) -> None:
    """Route ``loop``'s task creation through ``tracker``'s step timer (idempotent)."""
    state = _state(loop)
    current = loop.get_task_factory()
    if state is None:
        state = _LoopState(current)
        _set_state(loop, state)
        loop.set_task_factory(_task_factory)
    elif current is not _task_factory:
        # The application installed its own factory after ours: chain it again.
        state.previous = current
        loop.set_task_factory(_task_factory)
    if tracker not in state.trackers:
        state.trackers.append(tracker)


def _instrument_active(loop) -> None:
    for tracker in _TRACKERS:
        instrument(loop, tracker)


def _run_forever(self):
    _instrument_active(self)
    return _ORIGINALS["run_forever"](self)


#: CPython 3.13.0-3.13.2 call ``task.set_name(name)`` after a custom task factory even when
#: no name was given, so every unnamed task would be called ``'None'`` (CPython gh-130033,
#: fixed in 3.13.3) - in the task table and in the program's own ``get_name()``.
_SETS_NAME_NONE = (3, 13, 0) <= sys.version_info[:3] < (3, 13, 3)


def _create_task(self, coro, **kwargs):
    _instrument_active(self)
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
    for loop, state in _all_states():
        if tracker in state.trackers:
            state.trackers.remove(tracker)
            if not state.trackers:
                if loop.get_task_factory() is _task_factory:
                    loop.set_task_factory(state.previous)
                _drop_state(loop)
    if tracker not in _TRACKERS:
        return
    _TRACKERS.remove(tracker)
    if not _TRACKERS:
        for name, patch in _PATCHES.items():
            if asyncio.BaseEventLoop.__dict__.get(name) is patch:
                setattr(asyncio.BaseEventLoop, name, _ORIGINALS[name])
        _ORIGINALS.clear()
