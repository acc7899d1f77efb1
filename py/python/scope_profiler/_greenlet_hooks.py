"""greenlet hooks shared by every ``track_async`` tracker of the process.

Imported (and ``greenlet`` with it) only when a ``track_async`` tracker installs and
``greenlet`` is importable.

``greenlet.settrace`` is per thread. One process-wide trace function (``_trace``, Rust) is set
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

import greenlet

from ._native import GreenletTrace

#: The trace function set on every followed thread (Rust: the recorders following switches,
#: each thread's previous trace).
_trace = GreenletTrace(greenlet)


def follow_current_thread() -> None:
    """Set the trace on the calling thread (idempotent)."""
    _trace.follow_current_thread()


def acquire(tracker) -> None:
    """Follow greenlet switches for ``tracker`` and set the trace on the calling thread."""
    _trace.acquire(tracker._native)


def release(tracker) -> None:
    """Stop following for ``tracker``; the last one leaving restores this thread's trace."""
    _trace.release(tracker._native)
