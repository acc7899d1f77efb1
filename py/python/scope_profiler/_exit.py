"""The profiler at its process's exit: the exit handlers the package installs.

* At the package's import, before any of the program's: :func:`_at_interpreter_exit`, which
  the interpreter runs last (``atexit`` is last registered, first run). Streams still running
  stop (a recording never finalized keeps its sidecar for ``scope-profiler recover``), the
  tracers stop, and each recording ended earlier says in one line how many calls were made
  after its end (:func:`report_calls_after`).
* ``setup(auto_finalize=True)``: the exit-time finalize (:func:`register_auto_finalize`),
  the recording's last. It stops recording before it does its work (:func:`stop_recording`:
  daemon threads go on without adding calls or memory, giving the GIL way at each region
  they enter, so they do not starve it), ends the stream, and writes the
  file, which then holds everything the sidecar held: no sidecar outlives it. ``atexit``
  handlers registered before ``setup()`` run after it; the calls they make are not recorded
  (docs/recovery.md).
* ``scope-profiler run`` (``_cli``): the script's program ends first, its ``atexit``
  handlers among it, with the handler above set aside (:func:`profiler_handlers`) so that
  it still runs last; then recording stops and the profile is written.
"""

from __future__ import annotations

import atexit
import sys

from ._native import calls_after_the_exit_finalize

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._settings import ProfilingConfig

#: Recordings ended, reported on at the exit: ``(recorder, line of the calls made after it)``.
_ended: list[tuple[Any, Callable[[int], str | None]]] = []


def stop_recording(config: ProfilingConfig | None) -> None:
    """The end of ``config``'s recording, before its last checkpoint: no call is recorded
    from now on, on any thread (calls open now still close), and its stream's flush thread
    ends (the checkpoint reads the sidecar back and removes it once the file is written)."""
    native = getattr(config, "_native", None)
    if native is None:
        return
    native.stop_recording()
    from . import _manager

    _manager._stop_streaming(config)


def report_calls_after(
    config: ProfilingConfig | None, line_of: Callable[[int], str | None]
) -> None:
    """At the interpreter's exit, say (once, on stderr) how many calls were made after
    :func:`stop_recording` ended ``config``'s recording: ``line_of(calls)``, nothing when
    it gives None."""
    native = getattr(config, "_native", None)
    if native is not None:
        _ended.append((native, line_of))


def register_auto_finalize(manager: Any) -> None:
    """``setup(auto_finalize=True)`` of ``manager`` (a manager class): the exit-time
    finalize, replacing one registered before."""
    cancel_auto_finalize(manager)

    def finalize_at_exit() -> None:
        manager._auto_finalize = None
        if manager._configured:
            _finalize_at_exit(manager)

    manager._auto_finalize = finalize_at_exit
    atexit.register(finalize_at_exit)


def cancel_auto_finalize(manager: Any) -> None:
    """``manager``'s exit-time finalize is not needed (it finalized, reset or set up anew)."""
    callback, manager._auto_finalize = manager._auto_finalize, None
    if callback is not None:
        atexit.unregister(callback)


def _finalize_at_exit(manager: Any) -> None:
    """The exit-time finalize: the recording ends, then its file is written (calls still
    open go in as ending now); what is made after it is counted, said at the exit."""
    config = manager._config
    written: list[str] = []  # the file, once written
    stop_recording(config)
    report_calls_after(
        config, lambda calls: calls_after_the_exit_finalize(calls, next(iter(written), None))
    )
    manager._finalize(close_open=True)
    if config is not None and not (config.deactivate_profiling or config.deactivate_file_output):
        written.append(manager._requested_output or config.file_path)


def profiler_handlers() -> list[Callable[[], object]]:
    """The package's own ``atexit`` handlers, registered at its import: ``run`` sets them
    aside while the program's run, so that they still run at the interpreter's exit."""
    return [_at_interpreter_exit]


def say(line: str) -> None:
    """One line on stderr as the process ends (nothing when stderr is closed)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed: nothing to say it on
        pass


@atexit.register
def _at_interpreter_exit() -> None:
    """Last of all handlers: streams stop, tracers stop, each ended recording's line."""
    from . import _manager, _tracer

    _manager._stop_all_streaming()
    _tracer._stop_all()  # no tracer outlives the interpreter's modules
    for native, line_of in _ended:
        calls = native.calls_after_stop
        line = None if calls is None else line_of(calls)
        if line is not None:
            say(line)
    _ended.clear()
