"""trio hooks shared by every ``track_async`` tracker of the process.

trio drives its tasks itself (no task factory) and has no process-wide hook for "a run
started"; what it has is a public instrumentation API whose instruments are given to a run
(``trio.run(..., instruments=...)``, ``trio.lowlevel.start_guest_run``) or added inside one
(``trio.lowlevel.add_instrument``). So, while at least one tracker is active:

* ``trio.run`` and ``trio.lowlevel.start_guest_run`` are replaced by functions that add one
  instrument per active tracker (``TrioLanes``, Rust: the tracker's recorder) to the run's
  instruments and call the originals. anyio on its trio backend goes through them.
* trio is not imported for this: if it is not imported yet when the first tracker installs,
  a finder on ``sys.meta_path`` patches it right after its first import (importing trio
  costs a tenth of a second, which a program that never uses it should not pay).
* A tracker installed inside a run (``setup()`` in a trio task) adds its instrument to that
  run: tasks spawned from then on are lanes.
* Release is order-independent: a tracker leaving detaches its instruments (a run going on
  keeps calling them, as no-ops; one in the calling thread's run is removed from it), and
  the patched functions and the finder are removed when the last tracker leaves (only if
  they are still ours, so a patch installed on top by someone else is never undone).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import weakref

#: Active trackers, install order.
_TRACKERS: list = []
#: trio functions replaced now: name -> (namespace, original).
_ORIGINALS: dict = {}
#: The function each patch calls: name -> the latest original (kept after restoring, for a
#: program that took the patched function by name while it was installed).
_WRAPPED: dict = {}
#: Instruments of runs that may still be going (weak: trio holds them while a run lasts),
#: each with its tracker.
_LIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _instruments(root=None) -> tuple:
    """A new instrument per active tracker (``root``: the run's root task when the run is
    already going)."""
    made = []
    for tracker in _TRACKERS:
        instrument = tracker._native.trio_lanes(root)
        _LIVE[instrument] = tracker
        made.append(instrument)
    return tuple(made)


def _run(async_fn, *args, instruments=(), **kwargs):
    return _WRAPPED["run"](async_fn, *args, instruments=(*instruments, *_instruments()), **kwargs)


def _start_guest_run(async_fn, *args, instruments=(), **kwargs):
    return _WRAPPED["start_guest_run"](
        async_fn, *args, instruments=(*instruments, *_instruments()), **kwargs
    )


_PATCHES = {"run": _run, "start_guest_run": _start_guest_run}


def _current_root():
    """The root task of the trio run on this thread, None outside one."""
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        return trio.lowlevel.current_root_task()
    except RuntimeError:
        return None


def _patch(trio) -> None:
    """Route ``trio.run`` and ``trio.lowlevel.start_guest_run`` through ours (idempotent)."""
    if _ORIGINALS or not _TRACKERS:
        return
    for name, namespace in (("run", trio), ("start_guest_run", trio.lowlevel)):
        patch = _PATCHES[name]
        original = getattr(namespace, name)
        patch.__wrapped__ = _WRAPPED[name] = original  # type: ignore[attr-defined]
        _ORIGINALS[name] = (namespace, original)
        setattr(namespace, name, patch)


def _unpatch() -> None:
    for name, (namespace, original) in _ORIGINALS.items():
        if getattr(namespace, name, None) is _PATCHES[name]:
            setattr(namespace, name, original)
    _ORIGINALS.clear()


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``trio`` is imported, has the other finders find it and
    patches it once its module has run."""

    def __init__(self) -> None:
        self._finding = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "trio" or self._finding:
            return None
        self._finding = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._finding = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _PatchingLoader(spec.loader)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    """``loader``, with trio patched right after its module ran."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


_FINDER = _PatchAfterImport()


def acquire(tracker) -> None:
    """Activate ``tracker``: patch trio (now, or when it is imported); inside a trio run,
    follow the tasks it spawns from now on."""
    if tracker in _TRACKERS:
        return
    _TRACKERS.append(tracker)
    trio = sys.modules.get("trio")
    if trio is None:
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        return
    _patch(trio)
    instrument_current_run()


def release(tracker) -> None:
    """Deactivate ``tracker``: its instruments stop following their runs (the one of this
    thread's run is removed from it unless one of its lanes is mid-step); trio and the
    import system are restored after the last tracker."""
    if tracker not in _TRACKERS:
        return
    _TRACKERS.remove(tracker)
    root = _current_root()
    for instrument, owner in list(_LIVE.items()):
        if owner is not tracker:
            continue
        here = root is not None and instrument.follows(root)
        instrument.detach()
        if here and not instrument.stepping:
            try:
                sys.modules["trio"].lowlevel.remove_instrument(instrument)
            except KeyError:  # trio disabled it already
                pass
        del _LIVE[instrument]
    if not _TRACKERS:
        _unpatch()
        if _FINDER in sys.meta_path:
            sys.meta_path.remove(_FINDER)


def tracking() -> bool:
    """Whether some tracker is active."""
    return bool(_TRACKERS)


def follows_current_run() -> bool:
    """Whether some active tracker follows the trio run of this thread."""
    root = _current_root()
    return root is not None and any(i.follows(root) for i in list(_LIVE))


def instrument_current_run() -> None:
    """Follow the tasks the trio run of this thread spawns from now on, for every active
    tracker not following it yet."""
    root = _current_root()
    if root is None:
        return
    following = {id(t) for i, t in list(_LIVE.items()) if i.follows(root)}
    trio = sys.modules["trio"]
    for tracker in _TRACKERS:
        if id(tracker) not in following:
            instrument = tracker._native.trio_lanes(root)
            _LIVE[instrument] = tracker
            trio.lowlevel.add_instrument(instrument)
