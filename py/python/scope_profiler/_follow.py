"""``scope-profiler run`` follows the Python processes the script starts (``--no-follow``: not).

The parent (:func:`following`, around the script) creates a private directory beside the
output, ``<output>.procs-<pid>/``, and while the script runs puts into the environment

* ``SCOPE_PROFILER_FOLLOW``: the directory and the recording options (JSON), and
* ``PYTHONPATH`` with ``_follow_boot`` first: its ``sitecustomize`` calls
  :func:`start_from_environment` in every Python process started from this one
  (``subprocess``, ``multiprocessing`` spawn and forkserver, their own children), then runs
  the ``sitecustomize`` it shadows, if any.

A process started that way records into ``<dir>/<start ns>-<pid>.h5`` with the run's options
(a session of its own; the script's own ``setup()``/``session()`` there joins it, as under
``run``). A process *forked* from a followed one (``fork`` start method, a forkserver's
children, ``os.fork()``) drops the run it inherited and starts its own from the fork
(:func:`restart_in_child`, called by ``_fork``'s after-fork hook).

The file is written at the process's end: ``atexit`` for ordinary processes, a
``multiprocessing.util.Finalize`` for multiprocessing children (they end through
``os._exit`` after ``BaseProcess._bootstrap``, which runs those finalizers but not
``atexit``), and ``os._exit`` itself, wrapped in every followed process (a child of a bare
``os.fork()`` ends that way by convention). A process that recorded nothing but its session
(the forkserver itself, a ``python -c 'print(1)'`` helper) writes no file. At the end the
parent stacks its own file and every file there as rank blocks (Rust,
``finalize::followed``) and removes the directory.
"""

from __future__ import annotations

import atexit
import os
import sys
from contextlib import contextmanager

from . import _native

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType
    from typing import Any

#: The environment variable naming the directory and the options of a followed run.
ENV = "SCOPE_PROFILER_FOLLOW"

#: The directory holding the bootstrap ``sitecustomize.py`` put first on ``PYTHONPATH``.
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_follow_boot")

#: What this process follows with (``{"dir": ..., "settings": {...}}``), or None.
_spec: dict | None = None

#: This process's own session (a ``_ProfilingSession`` entered at its start) and its pid.
_session: Any = None
_session_pid: int | None = None
#: The process whose recording this module started (kept after its end, for the warnings of
#: its finalize to name the process: ``_cli.show_profiler_warnings_plainly``).
followed_pid: int | None = None

#: Whether this process was forked from a followed one (it runs its parent's program).
_forked = False

#: Whether ``multiprocessing.util.register_after_fork`` has our hook in this process image
#: (inherited by forks with the registry itself).
_mp_hook_registered = False


#: ``os._exit`` as Python had it when this module was imported (before any
#: :func:`write_before_os_exit` wrapper): what :func:`die_by` ends the process with.
_real_os_exit = os._exit

#: finish() is writing this process's file; a SIGTERM meanwhile (``_terminated``) waits for it.
_finishing = False
_pending_signal: int | None = None
#: A SIGINT came while finish() wrote this process's file (:func:`_hold_sigint`).
_pending_sigint = False


class _Marker:
    """A weak-referenceable key for ``multiprocessing.util.register_after_fork``."""


_MARKER = _Marker()


def private_directory(output: str) -> str:
    """The directory the followed processes of a run writing ``output`` record into."""
    return _native.private_directory(output, os.getpid())


def describe_process(parent: bool = False) -> str:
    """This process as the merged run's metadata ``processes`` names it: its pid, its parent's
    pid (for a child) and what it runs (a multiprocessing process's name, else its command
    line, shortened to 200 characters; Rust: ``session::run_command::describe_process``)."""
    mp_process = sys.modules.get("multiprocessing.process")
    return _native.describe_process(
        os.getpid(),
        None if parent else os.getppid(),
        None if mp_process is None else mp_process.current_process().name,
        mp_process is not None and mp_process.parent_process() is not None,
        _forked,
        list(sys.argv),
        list(getattr(sys, "orig_argv", sys.argv)),
    )


def end_hosting(manager: Any) -> None:
    """The program's own ``setup()``/``session()`` no longer join the run's session (of
    ``run``, or of a followed process): ending that session now finalizes the run."""
    manager._host_config = None
    manager._joined.clear()


@contextmanager
def following(output: str, settings: dict) -> Iterator[str]:
    """The parent's (``run``) context around the script: the private directory (created, and
    yielded), the environment of the script's children and this process's fork hook. The
    directory is the caller's to merge and remove."""
    import json

    from ._fork import set_follow_hook

    global _spec
    directory = private_directory(output)
    os.makedirs(directory, exist_ok=True)
    spec = {"dir": directory, "settings": settings}
    saved = {name: os.environ.get(name) for name in (ENV, "PYTHONPATH")}
    os.environ[ENV] = json.dumps(spec)
    path = saved["PYTHONPATH"]
    os.environ["PYTHONPATH"] = BOOT_DIR + (os.pathsep + path if path else "")
    _spec = spec
    set_follow_hook(restart_in_child)
    try:
        yield directory
    finally:
        set_follow_hook(None)
        _spec = None
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def end_multiprocessing() -> None:
    """Run ``multiprocessing``'s own exit handler now, before ``run`` merges the processes'
    files, instead of at interpreter exit after the merge: its finalizers (a pool neither
    closed nor terminated terminates its workers), SIGTERM to daemonic children still
    running, then a join of every child. A followed child writes its profile on SIGTERM or
    when it ends, so its calls are in the result instead of being left out. The
    handler runs once per process (it is guarded), so the exit does not repeat it. (A
    ``run`` that owns its process runs it among the program's ``atexit`` handlers, in their
    order: ``_cli._run_exit_handlers``; this is for a ``run`` called as a function.)"""
    util = sys.modules.get("multiprocessing.util")
    exit_function = getattr(util, "_exit_function", None)
    if callable(exit_function):
        exit_function()


def start_from_environment() -> None:
    """The bootstrap ``sitecustomize``: start recording this process if a followed run
    started it (its directory still exists). A failure to start is one line on stderr,
    never the program's failure."""
    raw = os.environ.get(ENV)
    if not raw:
        return
    try:
        import json

        spec = json.loads(raw)
        if not os.path.isdir(spec["dir"]):
            return  # the run that started it is over
        argv = getattr(sys, "orig_argv", ())
        if _native.multiprocessing_helper(list(argv)):
            # the forkserver, the resource tracker: not the program's processes; the
            # processes the forkserver forks record (restart_in_child)
            from ._fork import set_follow_hook

            global _spec
            _spec = spec
            set_follow_hook(restart_in_child)
            return
        # SIGTERM writes the file first (Popen.terminate(), a spawn pool's terminate()):
        # armed here, first, as a pool may be terminated while its workers start
        _arm_sigterm()
        _start(spec)
        if "--multiprocessing-fork" in argv:
            _name_spawn_child()
    except Exception as exc:  # the program runs unprofiled
        print(f"scope-profiler: not profiling process {os.getpid()}: {exc}", file=sys.stderr)


def _name_spawn_child() -> None:
    """In a multiprocessing spawn child, before ``spawn_main`` reads what the parent sent:
    once ``spawn.prepare()`` gets the process's name (``SpawnProcess-1``; the first thing it
    sets), rewrite the ``.started`` marker with it, before the main module is imported. A
    child killed later is then named in the warning and in its recovered rank as a child
    that ended normally is in its file (not as ``multiprocessing spawn child``).
    ``SpawnProcess`` runs no after-fork hooks, hence the wrapper."""
    import multiprocessing.spawn as spawn
    from multiprocessing import process

    prepare = spawn.prepare

    def named_prepare(data: Any) -> Any:
        spawn.prepare = prepare  # once
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(name, str):
            process.current_process().name = name  # what prepare() sets first
            try:
                _write_marker()
            except OSError:
                pass  # the marker keeps its first description
        return prepare(data)

    spawn.prepare = named_prepare


def _forked_by_multiprocessing() -> bool:
    """In an after-fork hook: whether ``os.fork()`` was called by multiprocessing itself
    (``popen_fork``, the forkserver), i.e. the child is a multiprocessing process."""
    util = sys.modules.get("multiprocessing.util")
    if util is None:
        return False
    package = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == package:
        frame = frame.f_back  # this package's hook frames
    where = os.path.dirname(util.__file__ or "")
    return frame is not None and os.path.dirname(frame.f_code.co_filename) == where


def end_if_forked_after_sigterm() -> None:
    """In a child just forked: when SIGTERM had reached the parent before the fork (its guard
    knows at once, before any Python handler ran), the parent is a process the signal ends -
    ``run`` writing its profile, a followed process writing its file - which without the
    profiler would have been gone already: the child, a pool's replacement for a worker the
    signal ended, would never have been started, and would outlive its parent waiting for
    work. It ends by the signal now, before it records or announces itself."""
    import signal

    if _native.sigterm_received():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def restart_in_child() -> None:
    """``_fork``'s after-fork hook in a forked child of a followed process: drop the run it
    inherited and record its own from the fork on."""
    global _forked
    end_if_forked_after_sigterm()
    spec = _spec
    if spec is None or not os.path.isdir(spec["dir"]):
        return
    _forked = True
    if _forked_by_multiprocessing():
        # a pool terminated right after it started its workers sends SIGTERM before
        # BaseProcess._bootstrap arms it: the worker ends as an empty recording then
        _arm_sigterm()
    try:
        _start(spec)
    except Exception as exc:
        print(f"scope-profiler: not profiling process {os.getpid()}: {exc}", file=sys.stderr)


def _start(spec: dict) -> None:
    global _spec, _session, _session_pid, followed_pid
    from ._cli import show_profiler_warnings_plainly
    from ._fork import set_follow_hook
    from ._manager import ProfileManager

    show_profiler_warnings_plainly()
    path = _native.followed_recording(spec["dir"], os.getpid())  # <start ns>-<pid>.h5
    session = ProfileManager.session(
        file_path=path, verbose=False, replace=True, **spec["settings"]
    )
    # the inherited run's joined sessions (a forked child) are the parent's
    end_hosting(ProfileManager)
    session.__enter__()
    # the program's own setup()/session() joins this run (both record), as under `run`
    ProfileManager._host_config = ProfileManager._config
    _spec, _session, _session_pid = spec, session, os.getpid()
    followed_pid = os.getpid()
    _write_marker()
    set_follow_hook(restart_in_child)
    atexit.register(finish)
    write_before_os_exit(lambda _status: finish())
    _arm_multiprocessing()


def write_before_os_exit(finish: Callable[[int], None]) -> Callable[[], None]:
    """Wrap ``os._exit``, which runs no cleanup (no ``atexit``, no ``finally``), so that in
    this process ``finish(status)`` runs first - writing the profile - and then the exit
    goes ahead whatever happened. A forked child inherits the wrapper and passes through it
    (its own, if any, is installed over it). Returns the function that takes it out again.
    Used by ``run`` for its own process and by every followed process."""
    previous = os._exit
    pid = os.getpid()

    def _exit(status: int, /) -> None:
        if os.getpid() == pid:
            try:
                finish(status)
            except BaseException as exc:  # the exit goes ahead whatever happened
                print(_native.exit_write_failure(str(exc)), file=sys.stderr)
        previous(status)

    _exit.__doc__ = previous.__doc__
    _exit.__wrapped__ = previous  # type: ignore[attr-defined]
    os._exit = _exit  # type: ignore[assignment]

    def undo() -> None:
        if os._exit is _exit:
            os._exit = previous

    return undo


def _arm_multiprocessing() -> None:
    """In a process that has ``multiprocessing`` loaded: make the multiprocessing children
    forked from it (``fork``, forkserver) write their file at their end (see the module)."""
    global _mp_hook_registered
    util = sys.modules.get("multiprocessing.util")
    if util is None or _mp_hook_registered:
        return
    util.register_after_fork(_MARKER, _multiprocessing_child)
    _mp_hook_registered = True


def _multiprocessing_child(_marker: object) -> None:
    """In ``BaseProcess._bootstrap`` of a multiprocessing child, after the finalizer registry
    was cleared: write the file in ``util._exit_function()`` (before ``os._exit``; last,
    after its own children are joined), and when SIGTERM ends it (``Pool.terminate()``,
    which ``with Pool(...)`` calls; ``Process.terminate()``) first (see :func:`_terminated`)."""
    import multiprocessing.util as util

    util.Finalize(None, finish, exitpriority=-100)
    _arm_sigterm()
    _write_marker()  # now with its multiprocessing name


def _marker_path() -> str | None:
    config = getattr(_session, "_manager", None)
    config = config._config if config is not None else None
    if config is None or _session_pid != os.getpid():
        return None
    return _native.started_marker(config.file_path)


def _write_marker() -> None:
    """``<start ns>-<pid>.started`` beside the file this process will write, holding its
    description: the parent names a process that ended without writing its file (killed)
    or was still running, instead of leaving it out silently. Removed once it is written."""
    path = _marker_path()
    if path is not None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(describe_process())


def _arm_sigterm() -> None:
    import signal

    handler = signal.getsignal(signal.SIGTERM)
    # the default, or `run`'s own handler inherited by a fork child (its after-fork hook,
    # which runs after this one, would reset it to the default): not the program's own
    if handler is signal.SIG_DFL or getattr(handler, "__module__", "") == "scope_profiler._cli":
        signal.signal(signal.SIGTERM, _terminated)
        _native.guard_sigterm()  # as run's own handler (_cli._RunSignals)


def flush_streams() -> None:
    """Flush ``sys.stdout`` and ``sys.stderr`` (a closed or missing one: nothing to flush),
    before the process ends or what Rust writes to the descriptors follows."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or None: nothing to flush
            pass


def die_by(signum: int) -> None:
    """End the process by `signum` with its default action, so the parent sees the status a
    run without the profiler would have given (a signal death, e.g. 143 in a shell)."""
    import signal

    flush_streams()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    _real_os_exit(128 + signum)  # only if the signal did not end the process


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM in a followed process (a multiprocessing child, a Python ``subprocess``):
    write its file, then die by the signal (the exit status the parent would see without
    the profiler)."""
    global _pending_signal
    if _native.sigterm_taken():  # the guard stops sending it again (guard_sigterm)
        return  # a re-sent one: this handler already ran for the signal
    if _finishing:  # it arrived while the file is written: die once it is
        _pending_signal = signum
        return
    try:
        finish()
    finally:  # whatever happened, the process ends as the signal asked
        die_by(signum)


def _hold_sigint() -> Any:
    """While this process writes its file, SIGINT (Ctrl-C or GNU ``timeout`` to the whole
    process group) is noted instead of raising ``KeyboardInterrupt`` in the write. Returns
    the handler it replaced (None: not replaced - not the main thread, or ignored)."""
    import signal

    global _pending_sigint
    _pending_sigint = False
    try:
        handler = signal.getsignal(signal.SIGINT)
        if handler is signal.SIG_IGN:
            return None
        return signal.signal(signal.SIGINT, _note_sigint)
    except ValueError:  # not the main thread: signals are the main thread's
        return None


def _note_sigint(signum: int, frame: object) -> None:
    global _pending_sigint
    _pending_sigint = True


def _release_sigint(previous: Any) -> None:
    """The SIGINT handler as before :func:`_hold_sigint`. One noted meanwhile ends the
    process by the signal when that was its action (the default); with Python's handler it
    is dropped, as the interpreter ignores ``KeyboardInterrupt`` at its exit."""
    import signal

    if previous is None:
        return
    signal.signal(signal.SIGINT, previous)
    if _pending_sigint and previous is signal.SIG_DFL:
        die_by(signal.SIGINT)


def finish() -> None:
    """The end of this process's own recording: write its file (unless it recorded nothing
    but its session, or the run that started it is over). Once per process. SIGTERM and
    SIGINT meanwhile wait for the file to be written."""
    global _session, _session_pid, _finishing
    session, pid = _session, _session_pid
    if session is None or pid != os.getpid():
        return
    marker = _marker_path()
    _session = _session_pid = None
    _finishing = True
    held = _hold_sigint()
    try:
        if _finish(session) and marker is not None:
            try:
                os.remove(marker)
            except OSError:
                pass
    finally:
        _finishing = False
        _release_sigint(held)
        if _pending_signal is not None:
            die_by(_pending_signal)


def _finish(session: Any) -> bool:
    """Write the file; False when that failed (one line on stderr, the marker then stays for
    the parent; the program's exit status stands)."""
    from ._manager import ProfileManager, _stop_streaming

    config = ProfileManager._config
    if (
        config is None
        or ProfileManager._host_config is not config
        or not ProfileManager.is_configured()
    ):
        return True  # the program replaced or finalized the run itself
    end_hosting(ProfileManager)
    native = config._native
    empty = (
        native is not None
        and native.sidecar_path is None
        and not native.has_completed_calls()
        and native.open_region_names() == [session.ROOT_REGION_NAME]
    )
    if empty or not os.path.isdir(os.path.dirname(config.file_path)):
        _stop_streaming(config, discard=True)  # nothing recorded, or the run is over
        ProfileManager.reset()
        return True
    config.metadata["process"] = describe_process()
    try:
        session.__exit__(None, None, None)
    except Exception as exc:
        print(_native.followed_write_failure(os.getpid(), str(exc)), file=sys.stderr)
        return False
    return True
