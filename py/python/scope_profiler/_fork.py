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

from ._native import ForkHooks

#: The process's fork handlers (Rust): the configurations whose recorder keeps a thread
#: table or streams (weak), and the follow hook.
_HOOKS = ForkHooks()
#: ``track(config)``: note the process that set ``config`` up; remember it if its recorder
#: keeps a thread table or streams.
track = _HOOKS.track
#: ``inherited(config)``: whether ``config`` was set up by another process (this one is a
#: forked child); its ``setup()``/``session()`` then replaces the inherited run.
inherited = _HOOKS.inherited
#: ``set_follow_hook(hook)``: install (None: remove) the hook a forked child calls after
#: taking its view of the inherited recorders (``_follow.restart_in_child``).
set_follow_hook = _HOOKS.set_follow_hook

if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_HOOKS.before_fork, after_in_child=_HOOKS.after_fork_in_child)
