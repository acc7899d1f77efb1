"""Thread and task tracking: the only Python in the recording path, and only where Python must be.

* Registration at a thread's first bytecode: ``threading.setprofile(_THREAD_HOOK)``
  (one process-wide hook shared by every installed tracker) arms every thread started
  while a tracker is installed; the bootstrap runs once, removes itself
  (``sys.setprofile(None)``), registers the thread with each tracker's native recorder (a
  Rust call that also parks a ``ThreadExitSentinel`` in a ``threading.local``), follows
  the thread's greenlet switches if a ``track_async`` tracker is installed, and hands over
  to the previously installed threading profile hook, if any (forwarding this first event).
* Threads that existed before ``setup()`` (the main thread, pools) are registered lazily,
  in Rust, the first time they enter a region (or run a task step / greenlet switch).
* Thread end and exact CPU total are stamped by the sentinel's ``Drop`` on the dying thread.
* ``track_async``: asyncio tasks (``_asyncio_hooks``), trio tasks (``_trio_hooks``) and
  greenlets (``_greenlet_hooks``) become lanes. Each task's coroutine is wrapped by a Rust ``TimedCoroutine`` that makes
  the task the thread's current lane during each step, so region calls inside it carry its
  task id, close on its own scope stack and record how long it was suspended.

Every hook is shared by all installed trackers and restored when the last one leaves, so
several managers may install and uninstall in any order. In a forked child every installed
tracker is uninstalled (as the reference does).
"""

from __future__ import annotations

import os
import sys
import weakref

from ._native import ThreadStartHook

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cheap import)
if TYPE_CHECKING:
    from ._native import TaskInfo, ThreadInfo

#: Task index of a call outside any task.
NO_TASK = -1
#: ``end_ns`` of a thread still alive / ``done_ns`` of a task not done.
UNKNOWN = -1


#: The process-wide thread-start hook (``threading.setprofile``; Rust): registers each new
#: thread with every installed tracker's recorder, then runs the thread-start callbacks
#: (3.11 function-level tracing installs its C profile function there:
#: ``scope_profiler._tracer``); chains and restores the profile function it found.
_THREAD_HOOK = ThreadStartHook()


#: ``thread_hook_displaced()``: whether the hook is in use but no longer installed (the
#: program called ``threading.setprofile()`` since: threads it starts are not hooked).
thread_hook_displaced = _THREAD_HOOK.displaced
#: ``add_thread_start_callback(callback)``: call ``callback(frame)`` on every thread
#: started from now on, at its first event (after the trackers registered it); idempotent.
add_thread_start_callback = _THREAD_HOOK.add_callback
#: ``remove_thread_start_callback(callback)``: undo the above (idempotent).
remove_thread_start_callback = _THREAD_HOOK.remove_callback


class ConcurrencyTracker:
    """Per-run registry of threads and tasks (one per ``ProfilingConfig`` with
    ``track_threads``/``track_async``). The registries live in the native recorder; this
    object owns the hooks."""

    def __init__(self, native, track_async: bool = False) -> None:
        self._native = native
        self.track_async = bool(track_async)
        self.installed = False  # the hooks armed (install() until uninstall())
        self._asyncio = False  # in the asyncio hooks' registry (install or instrument_loop)
        self._greenlet = False  # in the greenlet hooks' registry
        self._trio = False  # in the trio hooks' registry

    # - registration ------------------------------------------------------
    def current_thread(self) -> ThreadInfo:
        """The calling thread's row, registering the thread if needed."""
        index = self._native.register_thread()
        return self._native.thread_table(0)[index]

    @property
    def threads(self) -> list[ThreadInfo]:
        """Every registered thread as a ``ThreadInfo``, in index order (times in s on the
        recording clock, not relative to a run start)."""
        return self._native.thread_table(0)

    @property
    def tasks(self) -> list[TaskInfo]:
        """Every task/greenlet lane as a ``TaskInfo``, in index order (s, recording clock)."""
        self._refresh_task_names()
        return self._native.task_table(0)

    # - install / uninstall -------------------------------------------------
    def install(self) -> None:
        """Arm the thread-start hook and, with ``track_async``, the asyncio, trio and
        greenlet hooks (idempotent)."""
        if self.installed:
            return
        self.installed = True
        _LIVE_TRACKERS.add(self)
        _THREAD_HOOK.acquire(self._native)
        if self.track_async:
            from . import _asyncio_hooks

            _asyncio_hooks.acquire(self)
            self._asyncio = True
            from . import _trio_hooks

            _trio_hooks.acquire(self)
            self._trio = True
            try:
                from . import _greenlet_hooks
            except ImportError:
                pass
            else:
                _greenlet_hooks.acquire(self)
                self._greenlet = True
                self._native.set_register_callback(_greenlet_hooks.follow_current_thread)

    def uninstall(self) -> None:
        """Remove this tracker from every hook; a hook nobody uses any more is restored to
        what was there before the first tracker installed (idempotent)."""
        if not self.installed and not self._asyncio:
            return
        self.installed = False
        _LIVE_TRACKERS.discard(self)
        _THREAD_HOOK.release(self._native)
        if self._asyncio:
            sys.modules["scope_profiler._asyncio_hooks"].release(self)
            self._asyncio = False
        if self._trio:
            sys.modules["scope_profiler._trio_hooks"].release(self)
            self._trio = False
        if self._greenlet:
            self._native.set_register_callback(None)
            sys.modules["scope_profiler._greenlet_hooks"].release(self)
            self._greenlet = False

    # - asyncio -------------------------------------------------------------
    def instrument_loop(self, loop) -> None:
        """Route ``loop``'s task creation through this tracker's step timer (for loops that
        never reach ``asyncio.BaseEventLoop``, e.g. uvloop). Idempotent; chains the loop's
        current task factory."""
        from . import _asyncio_hooks

        _asyncio_hooks.instrument(loop, self)
        self._asyncio = True

    def _refresh_task_names(self) -> None:
        """Names as ``Task.get_name()`` answers now (``set_name`` after creation)."""
        self._native.refresh_task_names()


#: Trackers with hooks installed (weak), so a forked child can take them out.
_LIVE_TRACKERS: weakref.WeakSet = weakref.WeakSet()


def _stand_down_after_fork() -> None:
    """In a forked child nothing will finalize the parent's run: remove its hooks (the
    supported pattern is a ``setup()``/``session()`` of the child's own)."""
    for tracker in list(_LIVE_TRACKERS):
        tracker.uninstall()
    _THREAD_HOOK.forget_recorders()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_stand_down_after_fork)
