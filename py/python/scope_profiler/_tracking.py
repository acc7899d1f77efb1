"""Thread tracking: the only Python in the recording path, and only where Python must be.

* Registration at a thread's first bytecode: ``threading.setprofile(bootstrap)`` arms every
  thread started while the tracker is installed; ``bootstrap`` runs once, removes itself
  (``sys.setprofile(None)``), registers the thread with the native recorder (a Rust call
  that also parks a ``ThreadExitSentinel`` in a ``threading.local``) and hands over to the
  previously installed threading profile hook, if any (forwarding this first event).
* Threads that existed before ``setup()`` (the main thread, pools) are registered lazily,
  in Rust, the first time they enter a region.
* Thread end and exact CPU total are stamped by the sentinel's ``Drop`` on the dying thread
  (CPython clears thread-local values there, before ``join()`` returns), so ``alive`` is
  False right after ``join()``. Threads alive at ``finalize()`` report the CPU time sampled
  at registration, every 256th call, and (for the finalizing thread) at finalize.

``uninstall()`` restores the threading profile hook that was in place at ``install()``.
In a forked child every installed tracker is uninstalled (as the reference does); the
recorder's buffers and thread table are inherited as they are.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref

#: Task index of a call outside any task (asyncio tracking is not implemented yet).
NO_TASK = -1
#: ``end_ns`` of a thread still alive.
UNKNOWN = -1


class ThreadRecord:
    """A live view of one thread-table row (timestamps absolute, on perf_counter_ns)."""

    __slots__ = ("cpu_ns", "daemon", "end_ns", "ident", "index", "name", "native_id", "start_ns")

    def __init__(self, row) -> None:
        (self.index, self.ident, self.native_id, self.name, self.daemon,
         self.start_ns, self.end_ns, self.cpu_ns) = row

    @property
    def alive(self) -> bool:
        return self.end_ns == UNKNOWN

    @property
    def task(self):
        return None

    def __repr__(self) -> str:
        state = "alive" if self.alive else "finished"
        return f"ThreadRecord(index={self.index}, name={self.name!r}, ident={self.ident}, {state})"


class ConcurrencyTracker:
    """Per-run registry of threads (one per ``ProfilingConfig`` with ``track_threads``).

    The registry itself lives in the native recorder; this object owns the hooks.
    """

    def __init__(self, native, track_async: bool = False) -> None:
        self._native = native
        self.track_async = bool(track_async)
        self._installed = False
        self._previous_thread_hook = None

    # - registration ------------------------------------------------------
    def current_thread(self) -> ThreadRecord:
        """The calling thread's record, registering the thread if needed."""
        index = self._native.register_thread()
        return ThreadRecord(self._native.thread_table(0)[index])

    @property
    def threads(self) -> list[ThreadRecord]:
        """Every registered thread, in index order (absolute timestamps)."""
        return [ThreadRecord(row) for row in self._native.thread_table(0)]

    @property
    def tasks(self) -> list:
        return []

    def _thread_bootstrap(self, frame, event, arg):
        sys.setprofile(None)
        try:
            self._native.register_thread()
        finally:
            previous = self._previous_thread_hook
            if previous is not None:
                sys.setprofile(previous)
        if previous is not None:
            return previous(frame, event, arg)
        return None

    # - install / uninstall -------------------------------------------------
    @property
    def installed(self) -> bool:
        return self._installed

    def install(self) -> None:
        """Arm the thread-start hook (idempotent)."""
        if self._installed:
            return
        self._installed = True
        _LIVE_TRACKERS.add(self)
        self._previous_thread_hook = threading.getprofile()
        threading.setprofile(self._thread_bootstrap)

    def uninstall(self) -> None:
        """Restore the threading profile hook found at ``install()`` (idempotent)."""
        if not self._installed:
            return
        self._installed = False
        _LIVE_TRACKERS.discard(self)
        threading.setprofile(self._previous_thread_hook)
        self._previous_thread_hook = None

    def instrument_loop(self, loop) -> None:
        raise NotImplementedError(
            "asyncio task tracking (track_async) is not implemented yet",
        )

    def snapshot(self, origin_ns: int = 0) -> dict:
        """The thread table as columns, timestamps relative to ``origin_ns`` (-1 kept)."""
        rows = self._native.thread_table(origin_ns)
        cols = list(zip(*rows)) if rows else [()] * 8
        names = ("index", "ident", "native_id", "name", "daemon", "start_ns", "end_ns", "cpu_ns")
        return {"threads": {n: list(c) for n, c in zip(names, cols)}, "tasks": {}}


#: Trackers with hooks installed (weak), so a forked child can take them out.
_LIVE_TRACKERS: weakref.WeakSet = weakref.WeakSet()


def _stand_down_after_fork() -> None:
    """In a forked child nothing will finalize the parent's run: remove its hooks (the
    supported pattern is a ``setup()``/``session()`` of the child's own)."""
    for tracker in list(_LIVE_TRACKERS):
        tracker.uninstall()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_stand_down_after_fork)
