"""Console script ``scope-profiler``.

The grammar and every file-reading subcommand (``summary``, ``threads``, ``export``) are
Rust (``scope_profiler._native.cli_main``). ``run`` needs this interpreter: the script is
executed here as ``__main__`` inside ``ProfileManager.session(...)``, then Rust prints the
summary and writes the speedscope file.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import traceback

from . import _native


def _join_non_daemon_threads() -> None:
    """Wait for the script's non-daemon threads, as interpreter shutdown would, so their
    calls are recorded before the session finalizes."""
    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main and not thread.daemon and thread.is_alive():
            thread.join()


def _print_script_error(exc: BaseException) -> None:
    """Print the script's traceback without this module's and runpy's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)


def _run_script(req: dict) -> int:
    from ._manager import ProfileManager

    script = req["script"]
    if not os.path.isfile(script):
        what = "is a directory, not a script" if os.path.isdir(script) else "not found"
        print(f"error: script {what}: {script}", file=sys.stderr)
        return 2
    output = os.path.abspath(req["output"])
    parent = os.path.dirname(output)
    if parent:
        os.makedirs(parent, exist_ok=True)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *req["args"]]
    # the script's directory goes first on sys.path, as `python script.py` does
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    code = 0
    try:
        with ProfileManager.session(
            file_path=output,
            track_threads=req["track_threads"],
            track_async=req.get("track_async") or None,
            verbose=False,
        ):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:  # the script's own exit; the profile is still written
                if isinstance(exc.code, int) or exc.code is None:
                    code = exc.code or 0
                else:  # sys.exit("message") prints the message, as python does
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException as exc:
                _print_script_error(exc)
                code = 1
            finally:
                _join_non_daemon_threads()
    finally:
        sys.argv = saved_argv
        if sys.path and sys.path[0] != saved_path0:
            sys.path.pop(0)
    try:
        _native.cli_after_run(output, req["track_threads"], req["speedscope"], req["quiet"])
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return code or 1
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
