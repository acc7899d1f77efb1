"""greenlet hooks shared by every ``track_async`` tracker of the process.

Imported (and ``greenlet`` with it) only when a ``track_async`` tracker installs and
``greenlet`` is importable.

``greenlet.settrace`` is per thread. One process-wide trace function (``_trace``) is set
on every thread that should be followed: the thread that installs the first tracker, each
thread started while a tracker is installed (from the threading bootstrap hook), and each
thread that registers lazily with a tracker (first region entry). The trace previously set
on that thread is kept in a ``threading.local`` and called after ours.

On every ``switch``/``throw`` each active tracker moves the thread's current lane: the
origin greenlet's step ends (and its record finishes if it is dead), the target's starts.
A thread's main greenlet is its bare lane (task id -1), so a region opened on it before
the first switch is closed and reported like any other call of the thread.

Release is order-independent: when the last tracker leaves, the calling thread's previous
trace is restored at once; other threads restore theirs at their next switch (a trace can
only be set on the thread itself).
"""

from __future__ import annotations

import threading

import greenlet

#: Active trackers, install order.
_TRACKERS: list = []
_local = threading.local()
_NOTHING = object()


def _trace(event, args):
    trackers = _TRACKERS
    if trackers and (event == "switch" or event == "throw"):
        origin, target = args
        for tracker in trackers:
            tracker._greenlet_switch(origin, target)
    previous = getattr(_local, "previous", None)
    if not trackers:
        _restore_here()
    if previous is not None:
        return previous(event, args)
    return None


def follow_current_thread() -> None:
    """Set the trace on the calling thread (idempotent)."""
    if not _TRACKERS or getattr(_local, "installed", False):
        return
    previous = greenlet.settrace(_trace)
    if previous is _trace:  # already ours (e.g. a trace copied from elsewhere)
        previous = None
    _local.previous = previous
    _local.installed = True


def _restore_here() -> None:
    if not getattr(_local, "installed", False):
        return
    previous = getattr(_local, "previous", None)
    if greenlet.gettrace() is _trace:
        greenlet.settrace(previous)
    _local.installed = False
    _local.previous = None


def acquire(tracker) -> None:
    if tracker not in _TRACKERS:
        _TRACKERS.append(tracker)
    follow_current_thread()


def release(tracker) -> None:
    if tracker in _TRACKERS:
        _TRACKERS.remove(tracker)
    if not _TRACKERS:
        _restore_here()
