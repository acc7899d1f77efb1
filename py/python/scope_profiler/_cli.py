"""Console script ``scope-profiler``.

The grammar and every file-reading subcommand (``summary``, ``threads``, ``export``) are
Rust (``scope_profiler._native.cli_main``). ``run`` needs this interpreter: the script is
executed here as ``__main__`` inside ``ProfileManager.session(...)``; then Rust
(``session::end_of_run``) stacks the followed processes' files, renders the output, prints
the summary and writes the speedscope file. The run's keywords, checks and texts are Rust
(``session::run_command``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from . import _follow, _native

#: The package's directory: warnings raised by its own modules have no line of the user's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def show_profiler_warnings_plainly() -> None:
    """Under ``run`` (and in the processes it follows): a warning the profiler raises from
    its own code - calls still open at the end, a call graph not recorded - is printed as
    ``scope-profiler: RuntimeWarning: ...`` (in a followed process, naming it), without the
    profiler's file and line, which say nothing to the user. Every other warning is shown
    as before."""
    import warnings

    shown = warnings.showwarning
    if getattr(shown, "_scope_profiler_plain", False):
        return

    def show(message, category, filename, lineno, file=None, line=None):
        if os.path.dirname(os.path.abspath(filename)) != _PACKAGE_DIR:
            return shown(message, category, filename, lineno, file, line)
        out = sys.stderr if file is None else file
        follow = sys.modules.get("scope_profiler._follow")
        who = None
        if follow is not None and follow.followed_pid == os.getpid():
            who = follow.describe_process()
        try:
            out.write(_native.plain_warning(who, category.__name__, str(message)))
        except (OSError, ValueError):  # stderr closed: the warning is lost, as warnings' own
            pass

    show._scope_profiler_plain = True  # type: ignore[attr-defined]
    warnings.showwarning = show


def _join_non_daemon_threads() -> None:
    """Wait for the script's non-daemon threads, as interpreter shutdown would, so their
    calls are recorded before the session finalizes."""
    import threading

    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon and thread.is_alive():
            thread.join()


def _print_script_error(exc: BaseException) -> None:
    """Print the script's traceback without this module's and runpy's frames."""
    import runpy
    import traceback

    tb = exc.__traceback__
    # runpy's frames are "<frozen runpy>" where the module is frozen (3.11+ builds)
    ours = (__file__, runpy.__file__, "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


class _Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler of ``run``: it unwinds the script
    (its ``finally`` blocks and ``with`` regions close) so the session writes the profile."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


#: The process of the run (a forked child that still has the handler below is not it).
_RUN_PID = os.getpid()


def _raise_terminated(signum: int, frame: object) -> None:
    if _native.sigterm_taken():  # the guard stops sending it again (guard_sigterm)
        return  # a re-sent one: this handler already ran for the signal
    if os.getpid() != _RUN_PID:
        # a child the script forked, before its after-fork hook took this handler out: the
        # default action, as without the profiler (raising there would be lost in an
        # after-fork hook and the child would go on)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise _Terminated(signum)


def _default_sigterm_in_child() -> None:
    """A forked child of the script does not inherit the handler above: it is not the run's
    process, and SIGTERM would raise in whatever it runs (an after-fork hook, where the
    exception is ignored and the child goes on: a multiprocessing pool worker terminated
    while starting kept waiting on the pool's lock). It gets the default action, as without
    the profiler."""
    if signal.getsignal(signal.SIGTERM) is _raise_terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_sigterm_in_child)


@contextmanager
def _terminate_writes_profile() -> Iterator[None]:
    """While the script runs, SIGTERM (systemd, docker stop, kill) unwinds it instead of
    killing the process before the profile is written. A handler the script installs
    itself takes over, as it would without the profiler."""
    global _RUN_PID
    _RUN_PID = os.getpid()
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    # a forked child that gets SIGTERM before its own handler is set dies by it, and one
    # that comes just before the main thread blocks interrupts it
    _native.guard_sigterm()
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, previous)


def _terminated_now(exc: _Terminated) -> int:
    """SIGTERM ended the script: say so; a second one while the profile is written ends the
    process at once. Returns the signal, to die by once the profile is written."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(f"scope-profiler: {exc}; writing the profile", file=sys.stderr)
    return exc.signum


def _run_as_main(script: str, traced: bool, module: str | None) -> tuple[int, int | None]:
    """Run ``script`` as ``__main__`` (``module``: that module, as ``python -m`` does);
    traced, inside a region named after the script's file name (the reference's root region
    of ``run --recursive``, e.g. ``app.py``) or the module's name. Returns the exit code and
    the signal that ended it (None), as ``python`` would: the script's ``sys.exit()``, 1 with
    the traceback for an exception, 130 for Ctrl-C."""
    import runpy

    from ._manager import ProfileManager

    try:
        region = ProfileManager.region(module or os.path.basename(script)) if traced else None
        with region if region is not None else nullcontext():
            if module is not None:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:  # the script's own exit; the profile is still written
        if isinstance(exc.code, int) or exc.code is None:
            return exc.code or 0, None
        print(exc.code, file=sys.stderr)  # sys.exit("message") prints it, as python does
        return 1, None
    except _Terminated as exc:
        return 0, _terminated_now(exc)
    except KeyboardInterrupt as exc:  # Ctrl-C: traceback and 130, as python does
        _print_script_error(exc)
        return 128 + signal.SIGINT, None
    except BaseException as exc:
        _print_script_error(exc)
        return 1, None
    return 0, None


def _wait_for_threads(code: int) -> tuple[int, int | None]:
    """Join the script's non-daemon threads: the exit code (130 when Ctrl-C stops the
    waiting) and the signal that ended the run while waiting (None)."""
    try:
        _join_non_daemon_threads()
    except _Terminated as exc:  # SIGTERM while waiting for them
        return code, _terminated_now(exc)
    except KeyboardInterrupt:  # Ctrl-C while waiting: stop waiting
        return 128 + signal.SIGINT, None
    return code, None


def _module_not_found(module: str) -> bool:
    """Whether ``python -m module`` would say "No module named": looked up as it does, the
    working directory first on ``sys.path`` (the console script's ``sys.path[0]`` is its bin
    directory)."""
    import importlib.util

    sys.path.insert(0, os.getcwd())
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True
    finally:
        sys.path.pop(0)


def _run_script(req: dict) -> int:
    from ._manager import ProfileManager

    script, module = req["script"], req.get("module")
    if module is not None and _module_not_found(module):
        # as python -m says it; a usage error, exit 2 like a missing script
        print(f"error: No module named {module!r}", file=sys.stderr)
        return 2
    output = os.path.abspath(req["output"])
    # the HDF5 file the run writes: the output itself, or a temporary beside a JSON output
    recording = os.path.abspath(req["recording"])
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    # run_module sets argv[0] to the module's file
    script_argv = [module if module is not None else script, *req["args"]]
    sys.argv = list(script_argv)
    # the script's directory goes first on sys.path, as `python script.py` does (the working
    # directory for `python -m`)
    sys.path.insert(
        0, os.getcwd() if module is not None else os.path.dirname(os.path.abspath(script))
    )
    code, died_by, started = 0, None, False
    show_profiler_warnings_plainly()
    # runpy imports pkgutil (and typing) on its first run_path: 5-15 ms that are not the
    # script's, imported here, before the session's root region and the traced root open
    import pkgutil  # noqa: F401
    import runpy  # noqa: F401

    # the session's keywords (Rust: session::run_command::session_settings)
    settings = req["session"]
    started_pid = os.getpid()
    processes: str | None = None
    # --no-output: the session's finalize prints the summary of the run it keeps in memory
    in_memory_summary = bool(req.get("no_output")) and not req["quiet"]
    session = ProfileManager.session(file_path=recording, verbose=in_memory_summary, **settings)

    def finish_at_os_exit(status: int) -> None:
        # os._exit(): no unwinding, so the session ends here, and the end of `run` with it
        _follow.end_hosting(ProfileManager)
        session.__exit__(None, None, None)
        _after_run(req, output, recording, processes, started_pid, script_argv, status)

    undo_os_exit_hook = _follow.write_before_os_exit(finish_at_os_exit)
    try:
        with (
            (
                # the Python processes the script starts record too (docs/processes.md)
                _follow.following(recording, settings) if req.get("follow") else nullcontext()
            ) as processes,
            _terminate_writes_profile(),
            session,
        ):
            # the script's own setup()/session() joins this run (both record)
            ProfileManager._host_config = ProfileManager._config
            started = True
            try:
                traced = req["traced"] or ProfileManager.get_config().recursive_profile
                code, died_by = _run_as_main(script, traced, module)
            finally:
                # Terminated: no waiting for the script's threads (they may never end); the
                # calls they still have open are closed into the profile at its end.
                if died_by is None:
                    code, died_by = _wait_for_threads(code)
                if os.getpid() != started_pid and processes is not None:
                    # a child the script forked (os.fork()) came back here: it writes its
                    # own file, not this run's
                    _follow.finish()
                    ProfileManager.reset()
                _follow.end_hosting(ProfileManager)  # the session's end finalizes this run
    except (ValueError, TypeError, NotImplementedError) as exc:
        if started or os.getpid() != started_pid:
            raise
        # the settings were refused before the script ran (a --config file's contents)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the session's file could not be written (a full disk, ...)
        if os.getpid() != started_pid:
            raise
        if processes is not None and not os.listdir(processes):
            os.rmdir(processes)  # no other process wrote a profile
            processes = None
        print(_native.profile_not_written(str(exc), processes), file=sys.stderr)
        return code or 1
    finally:
        undo_os_exit_hook()
        sys.argv = saved_argv
        if sys.path and sys.path[0] != saved_path0:
            sys.path.pop(0)
    if os.getpid() != started_pid:  # a forked child: no summary, no merge
        return code
    if processes is not None and died_by is None:
        _follow.end_multiprocessing()  # at exit it would come after the merge
    code = _after_run(req, output, recording, processes, started_pid, script_argv, code)
    if died_by is not None:
        _follow.die_by(died_by)
    return code


def _after_run(
    req: dict,
    output: str,
    recording: str,
    processes: str | None,
    pid: int,
    script_argv: list[str],
    code: int,
) -> int:
    """The end of ``run`` once the session wrote ``recording``: merge the followed
    processes' files (this one described by ``pid`` and its command line), render the
    output, print the summary, write the speedscope file (Rust, ``cli_after_run``), then the
    note about an untracked event loop. The exit code: ``code``, 1 instead of 0 when that
    failed."""
    from ._manager import ProfileManager

    if req.get("no_output"):  # in memory only: the session printed its summary
        return code
    _follow.flush_streams()  # what Rust prints comes after what Python printed
    failure = _native.cli_after_run(
        output,
        recording,
        quiet=req["quiet"],
        speedscope=req["speedscope"],
        track_threads=req["track_threads"],
        processes=processes,
        pid=pid,
        argv=script_argv,
        module=req.get("module") is not None,
        # the run the session just wrote (not read back when it is the file's)
        recorded=ProfileManager._last_written_run,
        sort=req["sort"],
        top=req["top"],
        all_tasks=req["all_tasks"],
        # an event loop's tasks share their thread's lane without --track-async: said once,
        # by the summary's note or after it
        untracked_loops=[]
        if req["track_async"]
        else [name for name in ("asyncio", "gevent") if name in sys.modules],
    )
    if failure is not None:
        print(failure, file=sys.stderr)
        code = code or 1
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``scope-profiler`` command; returns (and exits with) its code."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    code, req = _native.cli_main(["scope-profiler", *args])
    if req is not None:
        code = _run_script(req)
    sys.stdout.flush()
    if argv is None:
        sys.exit(code)
    return code
