"""Console script ``scope-profiler``.

The grammar and every file-reading subcommand (``summary``, ``threads``, ``export``) are
Rust (``scope_profiler._native.cli_main``). ``run`` needs this interpreter: the script is
executed here as ``__main__`` inside ``ProfileManager.session(...)``, then Rust prints the
summary and writes the speedscope file. What is not the signals' handling and the order of
the run's steps is Rust too (``py/src/cli.rs``): running the script (``run_as_main``), the
plain warnings (``show_profiler_warnings_plainly``), the end of the run (``cli_end_of_run``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from . import _follow, _native

#: Under ``run`` (and in the processes it follows) a warning the profiler raises from its
#: own code is one plain line, without the profiler's file and line (issue 14).
show_profiler_warnings_plainly = _native.show_profiler_warnings_plainly


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
    # that comes just before the main thread blocks interrupts it (stop 27)
    _native.guard_sigterm()
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, previous)


def _run_script(req: dict) -> int:
    from ._manager import ProfileManager

    script, module = req["script"], req.get("module")
    if module is not None and _native.module_not_found(module):
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

    # the session's keywords (Rust: cli::run_session::session_settings)
    settings = req["session"]
    started_pid = os.getpid()
    processes: str | None = None
    # --no-output: the session's finalize prints the summary of the run it keeps in memory
    in_memory_summary = bool(req.get("no_output")) and not req["quiet"]
    session = ProfileManager.session(file_path=recording, verbose=in_memory_summary, **settings)

    def finish_at_os_exit(status: int) -> None:
        # os._exit(): no unwinding, so the session ends here, and the end of `run` with it
        _native.end_hosting(ProfileManager)
        session.__exit__(None, None, None)
        _native.cli_end_of_run(req, output, recording, processes, started_pid, script_argv, status)

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
                _native.run_as_main(script, traced, module)
            except SystemExit as exc:  # the script's own exit; the profile is still written
                if isinstance(exc.code, int) or exc.code is None:
                    code = exc.code or 0
                else:  # sys.exit("message") prints the message, as python does
                    print(exc.code, file=sys.stderr)
                    code = 1
            except _Terminated as exc:
                # a second SIGTERM while the profile is written ends the process at once
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                print(f"scope-profiler: {exc}; writing the profile", file=sys.stderr)
                died_by = exc.signum
            except KeyboardInterrupt as exc:  # Ctrl-C: traceback and 130, as python does
                _native.print_script_error(exc, __file__)
                code = 128 + signal.SIGINT
            except BaseException as exc:
                _native.print_script_error(exc, __file__)
                code = 1
            finally:
                # Terminated: no waiting for the script's threads (they may never end); the
                # calls they still have open are closed into the profile at its end.
                if died_by is None:
                    try:
                        _native.join_non_daemon_threads()
                    except _Terminated as exc:  # SIGTERM while waiting for them
                        signal.signal(signal.SIGTERM, signal.SIG_DFL)
                        print(f"scope-profiler: {exc}; writing the profile", file=sys.stderr)
                        died_by = exc.signum
                    except KeyboardInterrupt:  # Ctrl-C while waiting: stop waiting
                        code = 128 + signal.SIGINT
                if os.getpid() != started_pid and processes is not None:
                    # a child the script forked (os.fork()) came back here: it writes its
                    # own file, not this run's
                    _follow.finish()
                    ProfileManager.reset()
                _native.end_hosting(ProfileManager)  # the session's end finalizes this run
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
        kept = f"; the other processes' profiles are kept in {processes}" if processes else ""
        print(f"error: the profile was not written: {exc}{kept}", file=sys.stderr)
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
    code = _native.cli_end_of_run(req, output, recording, processes, started_pid, script_argv, code)
    if died_by is not None:
        _follow.die_by(died_by)
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
