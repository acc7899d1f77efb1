"""Console script ``scope-profiler``.

The grammar and every file-reading subcommand (``summary``, ``threads``, ``export``) are
Rust (``scope_profiler._native.cli_main``). ``run`` needs this interpreter: the script is
executed here as ``__main__`` inside ``ProfileManager.session(...)``; then Rust
(``session::end_of_run``) stacks the followed processes' files, renders the output, prints
the summary and writes the flame graph (or, with ``--speedscope``, the speedscope file). The run's keywords, checks and texts are Rust
(``session::run_command``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from . import _exit, _follow, _main_module, _native

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any

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


def _print_script_error(exc: BaseException) -> None:
    """Print the script's traceback without this module's and runpy's frames."""
    import runpy
    import traceback

    tb = exc.__traceback__
    # runpy's frames are "<frozen runpy>" where the module is frozen (3.11+ builds)
    ours = (__file__, _main_module.__file__, runpy.__file__, "<frozen runpy>")
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


class _Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler of ``run``: it unwinds the script
    (its ``finally`` blocks and ``with`` regions close) so the session writes the profile."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum


#: The process of the run (a forked child that still has the handlers below is not it).
_RUN_PID = os.getpid()


def _not_the_run(signum: int) -> bool:
    """In a child the script forked, before its after-fork hook took the run's handler out:
    end it by the default action, as without the profiler (raising there would be lost in an
    after-fork hook and the child would go on). True when that was done."""
    if os.getpid() == _RUN_PID:
        return False
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return True


def _is_run_handler(handler: object) -> bool:
    """Whether ``handler`` is the run's own signal handler (not one the script installed)."""
    return getattr(handler, "__func__", None) is _RunSignals.handle


def _default_signals_in_child() -> None:
    """A forked child of the script does not inherit the run's handlers: it is not the run's
    process, and SIGTERM would raise in whatever it runs (an after-fork hook, where the
    exception is ignored and the child goes on: a multiprocessing pool worker terminated
    while starting kept waiting on the pool's lock). It gets the default action (SIGINT:
    Python's own handler), as without the profiler. One forked after SIGTERM reached the run
    ends by it (:func:`_follow.end_if_forked_after_sigterm`)."""
    _follow.end_if_forked_after_sigterm()
    if _is_run_handler(signal.getsignal(signal.SIGTERM)):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _is_run_handler(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, signal.default_int_handler)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_signals_in_child)


class _RunSignals:
    """SIGTERM and SIGINT through the phases of a run (docs/cli.md, "How a run ends"):

    * while the script runs (:meth:`script_runs`): SIGTERM (systemd, docker stop, kill)
      raises :class:`_Terminated` in the main thread, unwinding the script instead of
      killing the process before the profile is written; SIGINT is Python's
      ``KeyboardInterrupt``. A handler the script installs itself takes over, as it would
      without the profiler;
    * while its program ends (:meth:`program_ends`: threading's exit callbacks, the
      non-daemon threads, the ``atexit`` handlers): a signal interrupts what the program
      runs or waits for, as under python;
    * while the end of the run writes (:meth:`hold`: the session's file, the merge of the
      followed processes' files, the output): both are noted, never raised, and the run
      ends by the first once that is done (:attr:`pending`). A second Ctrl-C (GNU
      ``timeout`` and a terminal send one to the whole process group) neither interrupts the
      write nor prints a traceback.

    A signal raises only in what the script's program runs (:meth:`interruptibly`), never in
    the run's own code around it: there it is noted too.
    """

    def __init__(self) -> None:
        #: The first signal noted (not raised), to end the run by once the profile is written.
        self.pending: int | None = None
        #: A signal now raises in the main thread (:meth:`interruptibly` runs the program).
        self.interruptible = False
        self._holding = False
        self._saved: dict[int, Any] = {}

    def _take(self, signum: int) -> bool:
        """Handle ``signum`` with :meth:`handle` (the first handler replaced is kept for
        :meth:`restore`); False outside the main thread, where signals cannot be handled."""
        try:
            previous = signal.signal(signum, self.handle)
        except ValueError:
            return False
        self._saved.setdefault(signum, previous)
        if signum == signal.SIGTERM:
            # a forked child that gets SIGTERM before its own handler is set dies by it, and
            # one that comes just before the main thread blocks interrupts it
            _native.guard_sigterm()
        return True

    @contextmanager
    def script_runs(self) -> Iterator[None]:
        """SIGTERM unwinds the script; on leaving (the run returns), the handlers are as
        before, unless the script replaced them."""
        global _RUN_PID
        _RUN_PID = os.getpid()
        self._take(signal.SIGTERM)
        try:
            yield
        finally:
            if not self._holding and _is_run_handler(signal.getsignal(signal.SIGTERM)):
                self.restore()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGTERM and _native.sigterm_taken():
            return  # a re-sent one (guard_sigterm): this handler already ran for the signal
        if _not_the_run(signum):
            return
        if self.interruptible and not _around_the_program(frame):
            if frame is not None and frame.f_code is _RunSignals.interruptibly.__code__:
                # at the program's edge (see interruptibly): once, then noted
                self.interruptible = False
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise _Terminated(signum)
        if self.pending is None:
            self.pending = signum
            if self._holding:
                _exit.say(_native.signal_while_writing(signum, signal.Signals(signum).name))

    def program_ends(self) -> None:
        """The script is over; its program ends: Python's SIGINT handler (not one the script
        installed) becomes :meth:`handle` too."""
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._take(signal.SIGINT)

    def interruptibly(
        self, program: Callable[[], object], then: Callable[[], object] | None = None
    ) -> BaseException | None:
        """Call ``program`` (the script, or what its program runs and waits for as it ends)
        with SIGTERM and SIGINT raised in it, as under python, then ``then``; returns what
        was raised (``_Terminated``, ``KeyboardInterrupt``, its own exception), None when
        nothing was. A SIGTERM noted just before is raised as if it came now (the program
        does not run). One that comes in this frame raises here once (:meth:`handle` clears
        :attr:`interruptible`), inside the ``try`` below, so it is returned too; after it,
        and once ``program`` returned, one is noted: never raised in the run's code."""
        try:
            try:
                self.interruptible = True
                if self.pending == signal.SIGTERM:
                    self.pending = None
                    raise _Terminated(signal.SIGTERM)
                program()
            finally:
                self.interruptible = False
                if then is not None:
                    then()
        except BaseException as exc:
            return exc
        return None

    def hold(self) -> None:
        """From now on (the profile is written) SIGTERM and SIGINT are noted, not raised,
        whatever handler the script left (one it ignores stays ignored)."""
        self.interruptible, self._holding = False, True
        for signum in (signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                self._take(signum)
        if self.pending is not None:  # noted while the program ended
            _exit.say(_native.signal_while_writing(self.pending, signal.Signals(self.pending).name))

    def let_go(self) -> None:
        """The run is over and its process exits: a signal from now on has its default
        action (it ends the process by the signal, as the run's end would have)."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            if _is_run_handler(signal.getsignal(signum)):
                signal.signal(signum, signal.SIG_DFL)

    def restore(self) -> None:
        """The handlers as they were before the run (the run returns instead of ending)."""
        for signum, handler in self._saved.items():
            if handler is not None:
                signal.signal(signum, handler)
        self._saved.clear()


def _around_the_program(frame: FrameType | None) -> bool:
    """Whether a signal handled in ``frame`` came in the run's own code around the program
    where raising would be lost: the ``atexit`` hook that prints what a handler raised."""
    return frame is not None and frame.f_code in _AROUND_THE_PROGRAM


def _terminated_now(signum: int) -> int:
    """SIGTERM ended the script or its end: say so. Returns the signal, to die by once the
    profile is written."""
    _exit.say(_native.terminated_line(signum))
    return signum


def _without_the_handler(exc: BaseException) -> None:
    """Take :meth:`_RunSignals.handle`'s frame off the end of ``exc``'s traceback: the
    ``KeyboardInterrupt`` it raised is shown as python's own handler's (which has no Python
    frame)."""
    tb = exc.__traceback__
    if tb is None:
        return
    if tb.tb_next is None:
        if tb.tb_frame.f_code is _RunSignals.handle.__code__:
            exc.__traceback__ = None
        return
    while tb.tb_next is not None and tb.tb_next.tb_next is not None:
        tb = tb.tb_next
    if tb.tb_next is not None and tb.tb_next.tb_frame.f_code is _RunSignals.handle.__code__:
        tb.tb_next = None


def _print_ignored(exc: BaseException, where: object) -> None:
    """``exc`` as the interpreter prints an exception it ignores at its exit (``Exception
    ignored in: <where>`` and the traceback)."""
    import traceback

    _without_the_handler(exc)
    try:
        print(f"Exception ignored in: {where!r}", file=sys.stderr)
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    except (OSError, ValueError):  # stderr closed: nothing to print it on
        pass


def _shut_threading_down(signals: _RunSignals) -> int | None:
    """``threading._shutdown()``, as the interpreter calls it first at its exit: the callbacks
    registered with ``threading._register_atexit`` (they stop ``concurrent.futures``
    executors and loky's manager thread), then every non-daemon thread joined. Ctrl-C stops
    the waiting, printed as the interpreter prints it, and the end goes on; returns SIGTERM
    when that stopped it."""
    import threading

    stopped = signals.interruptibly(threading._shutdown)  # type: ignore[attr-defined]
    if isinstance(stopped, _Terminated):
        return stopped.signum
    if stopped is not None:
        _print_ignored(stopped, threading)
    return None


class _AtexitFailures:
    """``sys.unraisablehook`` while the program's ``atexit`` handlers run: what a handler
    raises is printed as the interpreter prints it (the hook it replaces), except the
    ``_Terminated`` of SIGTERM, which ends the program there: no other handler runs (nor
    after a SIGTERM noted while this hook ran)."""

    def __init__(self, signals: _RunSignals, shown: Callable[[Any], object]) -> None:
        self.signals = signals
        self.shown = shown
        self.terminated: int | None = None

    def __call__(self, args: Any) -> None:
        import atexit

        if isinstance(args.exc_value, _Terminated):
            self.terminated = self.terminated or args.exc_value.signum
        else:
            if args.exc_value is not None:
                _without_the_handler(args.exc_value)
            self.shown(args)
        if self.signals.pending == signal.SIGTERM:
            self.signals.pending = None
            self.terminated = self.terminated or signal.SIGTERM
        if self.terminated is not None:
            atexit._clear()


#: The code of the run's own frames a signal may be handled in while the program's end is
#: interruptible, where raising would be lost (:func:`_around_the_program`).
_AROUND_THE_PROGRAM = frozenset({_AtexitFailures.__call__.__code__})


def _run_exit_handlers(signals: _RunSignals) -> int | None:
    """The program's ``atexit`` handlers, as the interpreter runs them at its exit after
    :func:`_shut_threading_down` (last registered first; one that raises is printed as
    ignored and the next runs; Ctrl-C in one interrupts that one), but now, so that what they
    record is in the profile. The profiler's own handlers stay for the interpreter's exit.
    SIGTERM in a handler ends it and skips the others, as the signal would have ended the
    process there; returns SIGTERM then."""
    import atexit

    own = _exit.profiler_handlers()  # they run after the profile is written
    for handler in own:
        atexit.unregister(handler)
    failures = _AtexitFailures(signals, sys.unraisablehook)
    sys.unraisablehook = failures
    try:
        stopped = signals.interruptibly(atexit._run_exitfuncs)
    finally:
        sys.unraisablehook = failures.shown
        for handler in own:
            atexit.register(handler)
    if isinstance(stopped, _Terminated):
        return stopped.signum
    if stopped is not None:
        _print_ignored(stopped, atexit)
    return failures.terminated


def _join_non_daemon_threads(signals: _RunSignals) -> int | None:
    """Wait for the script's non-daemon threads (a ``run`` called as a function, which must
    not end its caller's threading); returns SIGTERM when that stopped the waiting."""
    import threading

    def join() -> None:
        main = threading.main_thread()
        for thread in threading.enumerate():
            if thread is not main and not thread.daemon and thread.is_alive():
                thread.join()

    stopped = signals.interruptibly(join)
    return stopped.signum if isinstance(stopped, _Terminated) else None


def _end_program(signals: _RunSignals, died_by: int | None, whole_process: bool) -> int | None:
    """After the script: end its program as the interpreter ends one (``Py_FinalizeEx``):
    ``threading._shutdown()`` (its exit callbacks, then its non-daemon threads), then the
    ``atexit`` handlers, so that what they record is in the profile. SIGTERM ends a program
    at once: after it nothing is waited for. ``whole_process``: the run owns the process (the
    console script); else only the script's threads are joined. Returns the signal that ends
    the run (``died_by``, or SIGTERM when it came now)."""
    if died_by is None and signals.pending == signal.SIGTERM:  # as the script returned
        signals.pending, died_by = None, _terminated_now(signal.SIGTERM)
    if died_by == signal.SIGTERM:
        return died_by
    signals.program_ends()
    if not whole_process:
        terminated = _join_non_daemon_threads(signals)
    else:
        terminated = _shut_threading_down(signals)
        if terminated is None and signals.pending != signal.SIGTERM:
            terminated = _run_exit_handlers(signals)
    if terminated is None and signals.pending == signal.SIGTERM:
        terminated, signals.pending = signals.pending, None
    return died_by if terminated is None else _terminated_now(terminated)


def _run_as_main(
    signals: _RunSignals, script: str, traced: bool, module: str | None
) -> tuple[int, int | None]:
    """Run ``script`` as ``__main__`` (``module``: that module, as ``python -m`` does);
    traced, inside a region named after the script's file name (the reference's root region
    of ``run --recursive``, e.g. ``app.py``) or the module's name. Returns the exit code and
    the signal that ended it (None), as ``python`` would: the script's ``sys.exit()``, 1 with
    the traceback for an exception, the traceback and SIGINT for Ctrl-C. As it returns, its
    program's end begins (:meth:`_RunSignals.program_ends`)."""
    from ._manager import ProfileManager

    def run_main() -> None:
        if module is not None:
            _main_module.run_module(module)
        else:
            _main_module.run_path(script)

    def run() -> None:
        # no Python frame of ours between the script's end and program_ends() but these (a
        # Ctrl-C there is the end's, and its traceback shows none of them)
        if not traced:
            return run_main()
        with ProfileManager.region(module or os.path.basename(script)):
            run_main()

    exc = signals.interruptibly(run, then=signals.program_ends)
    if exc is None:
        return 0, None
    if isinstance(exc, SystemExit):  # the script's own exit; the profile is still written
        if isinstance(exc.code, int) or exc.code is None:
            return exc.code or 0, None
        print(exc.code, file=sys.stderr)  # sys.exit("message") prints it, as python does
        return 1, None
    if isinstance(exc, _Terminated):
        return 0, _terminated_now(exc.signum)
    _print_script_error(exc)
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C: the traceback, then python dies by SIGINT
        return 128 + signal.SIGINT, signal.SIGINT
    return 1, None


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


class _Plan:
    """What a ``run`` request (the dict ``cli_main`` returned) runs and writes."""

    def __init__(self, req: dict, whole_process: bool) -> None:
        self.req = req
        self.script: str = req["script"]
        self.module: str | None = req.get("module")
        self.output = os.path.abspath(req["output"])
        # the HDF5 file the run writes: the output itself, or a temporary beside a JSON output
        self.recording = os.path.abspath(req["recording"])
        # the script's argv (run_module sets argv[0] to the module's file)
        self.argv: list[str] = [self.module or self.script, *req["args"]]
        # the run's own process (a child the script forks may come back into this code)
        self.pid = os.getpid()
        #: The run owns the process (the console script): the script's program ends as the
        #: interpreter would end it, threading and atexit handlers included.
        self.whole_process = whole_process


def _run_script(req: dict, whole_process: bool = False) -> int:
    """Carry out ``run``: the script recorded, its program ended, the profile written and
    merged, the output and the summary; returns the exit code, or ends the process by the
    signal that ended the run."""
    req, refused = _output_of_config(req)
    if refused is not None:
        return refused
    plan = _Plan(req, whole_process)
    if plan.module is not None and _module_not_found(plan.module):
        # as python -m says it; a usage error, exit 2 like a missing script
        print(f"error: No module named {plan.module!r}", file=sys.stderr)
        return 2
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = list(plan.argv)
    # the script's directory goes first on sys.path, as `python script.py` does (the working
    # directory for `python -m`)
    sys.path.insert(
        0, os.getcwd() if plan.module is not None else os.path.dirname(os.path.abspath(plan.script))
    )
    show_profiler_warnings_plainly()

    signals = _RunSignals()
    saved_main = sys.modules["__main__"]
    try:
        code, died_by, processes, written = _record(plan, signals)
    finally:
        if not plan.whole_process:  # the script's module stays __main__ until the process ends
            sys.modules["__main__"] = saved_main
        sys.argv = saved_argv
        if sys.path and sys.path[0] != saved_path0:
            sys.path.pop(0)
    if os.getpid() != plan.pid:  # a forked child: no summary, no merge
        return code
    if written:
        if processes is not None and died_by != signal.SIGTERM and not plan.whole_process:
            # (the whole process: it ran with the atexit handlers) at exit it would come
            # after the merge
            _follow.end_multiprocessing()
        signalled = died_by is not None or signals.pending is not None
        code = _after_run(plan, processes, code, signalled)
    ended_by = died_by if died_by is not None else signals.pending
    if ended_by is not None:
        _follow.die_by(ended_by)
    if plan.whole_process:
        signals.let_go()
    else:
        signals.restore()
    return code


def _output_of_config(req: dict) -> tuple[dict, int | None]:
    """The request with its output from the --config file's ``file_path`` when ``-o`` was not
    given (as 0.7.5's ``run`` leaves ``file_path`` to the file), checked as ``-o`` is. Returns
    the request and None, or the exit code after printing the error (the file unreadable or
    invalid, or its ``file_path`` refused as an output)."""
    config = req["session"].get("config_path")
    if req["output_given"] or req["no_output"] or config is None:
        return req, None
    from ._options import load_profiling_config

    try:
        output = load_profiling_config(config).get("file_path")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return req, 2
    if output is None:
        return req, None
    code, problem, recording = _native.run_output_paths(os.fspath(output))
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return req, code
    return {**req, "output": os.fspath(output), "recording": recording}, None


def _record(plan: _Plan, signals: _RunSignals) -> tuple[int, int | None, str | None, bool]:
    """Record the script in the run's session, end its program, write the profile. Returns
    the exit code, the signal that ended the script or its end (None), the directory of the
    followed processes (None: none) and whether the profile was written (False: the code is
    final, the error printed)."""
    from . import _tracer
    from ._manager import ProfileManager

    # `run -m`: the module's package is the user's code, traced wherever it is installed
    _tracer.set_run_module(plan.module)
    # the session's keywords (Rust: session::run_command::session_settings)
    settings = plan.req["session"]
    processes: str | None = None
    # --no-output: the session's finalize prints the summary of the run it keeps in memory
    in_memory_summary = bool(plan.req.get("no_output")) and not plan.req["quiet"]
    session = ProfileManager.session(
        file_path=plan.recording, verbose=in_memory_summary, **settings
    )
    code, died_by, started = 0, None, False

    def finish_at_os_exit(status: int) -> None:
        # os._exit(): no unwinding, so the session ends here, and the end of `run` with it
        signals.hold()
        _follow.end_hosting(ProfileManager)
        session.__exit__(None, None, None)
        _after_run(plan, processes, status, signals.pending is not None)
        if signals.pending is not None:
            _follow.die_by(signals.pending)

    undo_os_exit_hook = _follow.write_before_os_exit(finish_at_os_exit)
    try:
        with (
            (
                # the Python processes the script starts record too (docs/processes.md)
                _follow.following(plan.recording, settings)
                if plan.req.get("follow")
                else nullcontext()
            ) as processes,
            signals.script_runs(),
            session,
        ):
            # the script's own setup()/session() joins this run (both record)
            ProfileManager._host_config = ProfileManager._config
            started = True
            try:
                traced = plan.req["traced"] or ProfileManager.get_config().recursive_profile
                code, died_by = _run_as_main(signals, plan.script, traced, plan.module)
            finally:
                died_by = _after_script(plan, signals, died_by, processes)
        if os.getpid() == plan.pid and not plan.req.get("no_output"):
            # the written calls left the buffers; those made since the end are counted
            _exit.report_calls_after(ProfileManager._config, _native.calls_after_the_profile)
    except (ValueError, TypeError, NotImplementedError) as exc:
        if started or os.getpid() != plan.pid:
            raise
        # the settings were refused before the script ran (a --config file's contents)
        _remove_if_empty(processes)
        print(f"error: {exc}", file=sys.stderr)
        return 2, None, None, False
    except OSError as exc:  # the session's file could not be written (a full disk, ...)
        if os.getpid() != plan.pid:
            raise
        if _remove_if_empty(processes):
            processes = None
        print(_native.profile_not_written(str(exc), processes), file=sys.stderr)
        return code or 1, died_by, None, False
    finally:
        undo_os_exit_hook()
    return code, died_by, processes, True


def _remove_if_empty(processes: str | None) -> bool:
    """Remove the followed processes' directory when no process wrote a profile into it;
    whether it was removed."""
    if processes is None or os.listdir(processes):
        return False
    os.rmdir(processes)
    return True


def _after_script(
    plan: _Plan, signals: _RunSignals, died_by: int | None, processes: str | None
) -> int | None:
    """The script is over. In the run's process its program ends (:func:`_end_program`) and
    then, the profile being written from here on, signals are held; a child the script
    forked (``os.fork()``) that came back here writes its own file instead. Returns the
    signal that ends the run (None)."""
    from ._manager import ProfileManager

    if os.getpid() == plan.pid:
        died_by = _end_program(signals, died_by, plan.whole_process)
    else:
        _join_non_daemon_threads(signals)
        if processes is not None:  # it writes its own file, not this run's
            _follow.finish()
            ProfileManager.reset()
    _follow.end_hosting(ProfileManager)  # the session's end finalizes this run
    if os.getpid() == plan.pid:
        if died_by is not None:
            signals.pending = None  # the run ends by died_by: one noted meanwhile adds nothing
        signals.hold()
        if not plan.req.get("no_output"):
            # the program has ended: daemon threads still running record nothing more
            # (the session's root closes all the same) while the profile is written
            _exit.stop_recording(ProfileManager._config)
    return died_by


def _after_run(plan: _Plan, processes: str | None, code: int, signalled: bool = False) -> int:
    """The end of ``run`` once the session wrote the recording: merge the followed
    processes' files (this one described by its pid and the script's command line; when the
    run ends by a signal, ``signalled``, after waiting a little for those still writing
    theirs), render the output, print the summary, write the flame graph (or the speedscope
    file asked for) and say the
    note about an untracked event loop (Rust, ``cli_after_run``). The exit code:
    ``code``, 1 instead of 0 when that failed."""
    from ._manager import ProfileManager

    req = plan.req
    if req.get("no_output"):  # in memory only: the session printed its summary
        return code
    if _mpi_rank() > 0:  # rank 0 wrote every rank's calls: it alone prints and draws them
        return code
    _follow.flush_streams()  # what Rust prints comes after what Python printed
    failure = _native.cli_after_run(
        plan.output,
        plan.recording,
        quiet=req["quiet"],
        speedscope=req["speedscope"],
        track_threads=req["track_threads"],
        processes=processes,
        pid=plan.pid,
        argv=plan.argv,
        module=plan.module is not None,
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
        signalled=signalled,
    )
    if failure is not None:
        print(failure, file=sys.stderr)
        code = code or 1
    return code


def _mpi_rank() -> int:
    """This process's rank when it is an MPI rank (``mpirun ... scope-profiler run``), else 0."""
    from . import _mpi

    comm = _mpi.get_comm() if _mpi.launched_under_mpi() else None
    return 0 if comm is None else int(comm.Get_rank())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``scope-profiler`` command; returns (and exits with) its code."""
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    code, req = _native.cli_main(["scope-profiler", *args])
    if req is not None:
        code = _run_script(req, whole_process=argv is None)
    _follow.flush_streams()  # the script may have closed or replaced them
    if argv is None:
        sys.exit(code)
    return code
