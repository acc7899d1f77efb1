"""``fork()``: a child forked out of an active run stands down.

Registered with ``os.register_at_fork`` at import (POSIX):

* ``before``: the forking thread's CPU time is sampled in every tracked recorder, so a
  child can continue that thread's row;
* ``after_in_child``: every tracked recorder takes the child's view of its thread table
  (threads that did not survive the fork end at the fork; the forking thread's row goes
  on with the child's OS thread id and its CPU time continues), and ``_tracking`` takes
  every installed tracker's hooks out (thread start, asyncio, greenlets).

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

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Configurations whose recorder keeps a thread table or streams (weak).
_TRACKED: weakref.WeakSet[Any] = weakref.WeakSet()

#: ``scope-profiler run`` following processes: called last in a forked child.
_follow_hook: Callable[[], None] | None = None


def set_follow_hook(hook: Callable[[], None] | None) -> None:
    """Install (None: remove) the hook a forked child calls after taking its view of the
    inherited recorders (``_follow.restart_in_child``)."""
    global _follow_hook
    _follow_hook = hook


def track(config) -> None:
    """Note the process that set ``config`` up; remember it if its recorder keeps a thread
    table."""
    config._owner_pid = os.getpid()
    # a streaming recorder (flush_interval) too: a fork during a flush must not leave the
    # child's checkpoint turn taken by a thread it does not have
    if getattr(config, "track_threads", False) or getattr(config, "flush_interval", None):
        _TRACKED.add(config)


def inherited(config) -> bool:
    """Whether ``config`` was set up by another process (this one is a forked child): its
    ``setup()``/``session()`` then replaces the inherited run without ``replace=True``."""
    owner = getattr(config, "_owner_pid", None)
    return owner is not None and owner != os.getpid()


def _before_fork() -> None:
    for config in list(_TRACKED):
        config._native._before_fork()


def _after_fork_in_child() -> None:
    native_id = threading.get_native_id()
    for config in list(_TRACKED):
        config._native._after_fork_in_child(native_id)
    if _follow_hook is not None:
        _follow_hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
