"""Signals under `scope-profiler run` (real child processes): SIGTERM and SIGINT write the
profile and end the process as the signal would; a script's own handler takes over; a
SIGTERM is never lost (right after fork, while the main thread blocks)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import scope_profiler as sp
from helpers import run_cli

_SERVER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from scope_profiler import ProfileManager
    work = ProfileManager.profile_region("work")
    for i in range(5):
        with work:
            time.sleep(0.001)
    print("ready", flush=True)
    with ProfileManager.profile_region("waiting"):
        time.sleep(120)
    """
)


def _start_run_until_ready(tmp_path, name: str, source: str, settle_s: float):
    """`scope-profiler run -o NAME.h5 NAME.py` of `source`, once the script has printed
    "ready" and `settle_s` more seconds have passed; returns (child, output path)."""
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    out = tmp_path / f"{name}.h5"
    child = subprocess.Popen(
        [sys.executable, "-m", "scope_profiler", "run", "-o", str(out), str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(settle_s)
    return child, out


def _run_until_ready(tmp_path):
    return _start_run_until_ready(tmp_path, "server", _SERVER_SCRIPT, 0.3)  # inside "waiting"


def _calls(path) -> dict:
    r = sp.read_h5(str(path))
    return {g.name: g.num_calls for g in r.get_regions()}


# A server under `scope-profiler run` stopped by systemd or docker (SIGTERM): the file is
# written, then the process ends by SIGTERM.
def test_sigterm_under_run_writes_the_profile_then_dies_by_the_signal(tmp_path):
    child, out = _run_until_ready(tmp_path)
    t0 = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGTERM, (child.returncode, err)
    assert time.monotonic() - t0 < 30  # not the script's 120 s sleep
    assert "terminated by signal 15; writing the profile" in err
    calls = _calls(out)
    assert calls["work"] == 5 and calls["waiting"] == 1, calls
    waited = sp.read_h5(str(out))["waiting"].total_duration
    assert 0.3 <= waited < 30, waited  # the interrupted call closed at the signal


# SIGINT: the file is written, then the process ends by SIGINT, as python ends by it after
# the traceback of an uncaught KeyboardInterrupt.
def test_sigint_under_run_writes_the_profile_then_dies_by_the_signal(tmp_path):
    child, out = _run_until_ready(tmp_path)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGINT, (child.returncode, err)
    assert "KeyboardInterrupt" in err
    assert _calls(out) == {"scope_profiler.session": 1, "work": 5, "waiting": 1}


# A script's own SIGTERM handler keeps working under `run` (it is installed after ours).
def test_a_scripts_own_sigterm_handler_takes_over(tmp_path):
    child, out = _start_run_until_ready(
        tmp_path,
        "own",
        textwrap.dedent(
            """
            import signal, sys, time
            from scope_profiler import ProfileManager
            stop = []
            signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
            print("ready", flush=True)
            while not stop:
                with ProfileManager.profile_region("tick"):
                    time.sleep(0.01)
            print("clean exit", flush=True)
            """
        ),
        0.2,
    )
    child.send_signal(signal.SIGTERM)
    rest, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "clean exit" in rest
    assert _calls(out)["tick"] >= 5


# SIGTERM while a non-daemon thread of the script waits inside a region: `run` writes the
# profile and ends without joining the thread (which never ends); the open call is in the
# file, flagged.
def test_sigterm_under_run_does_not_wait_for_the_scripts_threads(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading, time
            from scope_profiler import ProfileManager
            ev = threading.Event()
            def worker():
                with ProfileManager.profile_region("waiting"):
                    ev.wait()
            threading.Thread(target=worker, name="stuck").start()
            time.sleep(0.2)
            print("ready", flush=True)
            time.sleep(120)
            """
        )
    )
    out = tmp_path / "stuck.h5"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scope_profiler",
            "run",
            "--track-threads",
            "-o",
            str(out),
            str(script),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    t0 = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGTERM, (child.returncode, err)
    assert time.monotonic() - t0 < 20, "waited for the script's thread"
    waiting = sp.read_h5(str(out))["waiting"].regions[0]
    assert waiting.num_calls == 1 and waiting.event_metadata == ({"open_at_finalize": True},)


# `run`'s SIGTERM handlers are Python-level, and a Python-level handler can lose the signal
# in two places. (1) Right after fork(): CPython's after-fork reinitialisation clears a
# tripped signal. (2) Just before a blocking call: the signal trips the handler but
# interrupts nothing, and the main thread waits forever (a terminated pool worker on the
# pool's lock). The guard in front of the handler (scope_profiler_session::sigterm_guard) ends a
# forked child by the default action, and sends the signal again to the main thread until
# the handler runs.
def test_a_sigterm_sent_right_after_fork_is_not_lost(tmp_path):
    script = tmp_path / "race.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, time

            pids = []
            for _ in range(40):
                pid = os.fork()
                if pid == 0:
                    time.sleep(30)  # a child that lost its SIGTERM waits here
                    os._exit(0)
                os.kill(pid, signal.SIGTERM)
                pids.append(pid)
            deadline, lost = time.monotonic() + 10, 0
            for pid in pids:
                while not os.waitpid(pid, os.WNOHANG)[0]:
                    if time.monotonic() > deadline:
                        lost += 1
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        break
                    time.sleep(0.001)
            print("lost", lost)
            """
        )
    )
    proc = run_cli("run", "-q", "--no-speedscope", "-o", tmp_path / "r.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "lost 0", proc.stdout


def test_a_sigterm_handled_while_the_main_thread_blocks_ends_it(tmp_path):
    # the SIGTERM is sent to another thread of the process (pthread_kill): its C handler
    # trips the Python handler, and the main thread, blocked on a lock, is not interrupted:
    # the same state as a signal that came just before the main thread blocked
    script = tmp_path / "blocked.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp, signal, threading, time
            import scope_profiler as sp

            def blocked_until_terminated(name):
                with sp.profile_region(name):
                    pass
                lock = threading.Lock()
                lock.acquire()

                def poke():
                    time.sleep(0.2)
                    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

                threading.Thread(target=poke, daemon=True).start()
                lock.acquire()  # until the SIGTERM handler runs

            if __name__ == "__main__":
                child = mp.get_context("fork").Process(
                    target=blocked_until_terminated, args=("child_work",)
                )
                child.start()
                child.join(30)
                print("child", child.exitcode, flush=True)
                blocked_until_terminated("parent_work")
            """
        )
    )
    out = tmp_path / "blocked.h5"
    proc = run_cli("run", "-q", "--no-speedscope", "-o", out, script, cwd=tmp_path, timeout=60)
    assert proc.stdout.strip() == "child -15", (proc.stdout, proc.stderr)
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert "scope-profiler: terminated by signal 15; writing the profile" in proc.stderr
    r = sp.read_h5(str(out))
    calls = {
        (name, rank): r[name][rank].num_calls for name in r.region_names for rank in r[name].ranks
    }
    assert calls[("parent_work", 0)] == 1 and calls[("child_work", 1)] == 1, calls
