"""``fork()``: a child forked out of an active run stands down (``os.register_at_fork``
handlers, registered at import; ``_tracking`` takes the installed trackers' hooks out).

So in the child nothing is registered unless it records a call: starting threads or
running an event loop adds no thread or task rows and keeps no per-task state. Regions
still record into the parent's run (as in the reference): finalizing the parent's manager
in the child writes the parent's pre-fork calls and the child's, and every thread id in
that file has a row (the reference writes ids with no row). The supported pattern is the
child's own ``setup()``/``session()`` (own ``file_path``), which tracks concurrency again;
it replaces the inherited run without ``replace=True`` (the reference raises "profiling is
already configured" there, so a forked pool worker could not open its own session).

Under ``scope-profiler run`` (unless ``--no-follow``) a forked child does not stand down: it
drops the inherited run and records its own from the fork on (``_follow.restart_in_child``,
installed with :func:`set_follow_hook`, called last in ``after_in_child``).
"""

from __future__ import annotations

import os
import threading
import weakref

#: The configurations whose recorder keeps a thread table or streams (weak).
_tracked: weakref.WeakSet = weakref.WeakSet()
#: Called with no argument last in a forked child (``_follow.restart_in_child``), or None.
_follow_hook = None


def track(config) -> None:
    """Note the process that set ``config`` up; remember it if its recorder keeps a thread
    table or streams (a fork during a flush must not leave the child's checkpoint turn
    taken by a thread it does not have)."""
    config._owner_pid = os.getpid()
    if config.track_threads or config.flush_interval:
        _tracked.add(config)


def inherited(config) -> bool:
    """Whether ``config`` was set up by another process (this one is a forked child): its
    ``setup()``/``session()`` then replaces the inherited run."""
    owner = getattr(config, "_owner_pid", None)
    return owner is not None and owner != os.getpid()


def set_follow_hook(hook) -> None:
    """Install (None: remove) the hook a forked child calls after taking its view of the
    inherited recorders."""
    global _follow_hook
    _follow_hook = hook


def _before_fork() -> None:
    """Sample the forking thread's CPU time, so a child can continue that thread's row."""
    for config in list(_tracked):
        config._native._before_fork()


def _after_fork_in_child() -> None:
    """Threads that did not survive the fork end at it; the forking thread's row goes on
    with the child's OS thread id; then the follow hook runs."""
    native_id = threading.get_native_id()
    for config in list(_tracked):
        config._native._after_fork_in_child(native_id)
    if _follow_hook is not None:
        _follow_hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
