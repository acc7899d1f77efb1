"""How `scope-profiler run` ends: as the interpreter ends a program (threading's exit
callbacks, then the non-daemon threads, then the atexit handlers; `Py_FinalizeEx`), with
what those record in the profile, and with the exit status python would give - also when a
signal comes at the end (`_cli._RunSignals`, docs/cli.md "How a run ends")."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import unavailable

#: Calls each worker task records, and tasks per scenario.
TASKS = 40
PER_TASK = 25

#: Programs that leave something running at their end, as users write them; each prints a
#: line, records TASKS * PER_TASK calls of "task" (in whatever thread or process runs them)
#: and ends without shutting down what it started.
_TASK = textwrap.dedent(
    f"""
    import scope_profiler as sp

    def task(x):
        for _ in range({PER_TASK}):
            with sp.profile_region("task"):
                pass
        return x
    """
)
PROGRAMS = {
    "thread_pool_executor": """
        from concurrent.futures import ThreadPoolExecutor
        ex = ThreadPoolExecutor(2)
        print(sum(ex.map(task, range(TASKS))))
    """,
    "process_pool_executor": """
        from concurrent.futures import ProcessPoolExecutor
        ex = ProcessPoolExecutor(2)
        print(sum(ex.map(task, range(TASKS))))
    """,
    "joblib_loky": """
        from joblib import Parallel, delayed
        print(sum(Parallel(n_jobs=2)(delayed(task)(i) for i in range(TASKS))))
    """,
    "joblib_threads": """
        from joblib import Parallel, delayed
        print(sum(Parallel(n_jobs=2, backend="threading")(delayed(task)(i) for i in range(TASKS))))
    """,
    "multiprocessing_pool": """
        import multiprocessing
        pool = multiprocessing.Pool(2)
        print(sum(pool.map(task, range(TASKS))))
    """,
    # work submitted and never waited for: the workers get it after the script's last line,
    # by reference to `__main__.task`, which must still be the script's module then
    "process_pool_spawn_submitted": """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
        futures = [ex.submit(task, i) for i in range(TASKS)]
        print("submitted")
    """,
    "process_pool_forkserver_submitted": """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
        futures = [ex.submit(task, i) for i in range(TASKS)]
        print("submitted")
    """,
    "threading_timer": """
        import threading
        threading.Timer(0.3, lambda: [task(i) for i in range(TASKS)]).start()
        print("started")
    """,
    "atexit_handler": """
        import atexit
        atexit.register(lambda: [task(i) for i in range(TASKS)])
        print("registered")
    """,
}


def _program(tmp_path: Path, name: str, body: str) -> Path:
    script = tmp_path / f"{name}.py"
    main = textwrap.indent(textwrap.dedent(body).replace("TASKS", str(TASKS)), "    ")
    script.write_text(_TASK + '\nif __name__ == "__main__":\n' + main)
    return script


def _timed(cmd: list, cwd: Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - t0


def _calls(path: Path) -> dict[str, int]:
    """Calls per region, over every rank of the file."""
    r = sp.read_h5(str(path))
    return {g.name: sum(g[rank].num_calls for rank in g.ranks) for g in r.get_regions()}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_run_ends_a_program_that_leaves_workers_running_as_python_does(tmp_path, name):
    if name.startswith("joblib"):
        try:
            import joblib  # noqa: F401
        except ImportError:
            unavailable("joblib is not installed (tests/run_all.sh installs it)")
    script = _program(tmp_path, name, PROGRAMS[name])
    plain, plain_s = _timed([sys.executable, str(script)], tmp_path)
    assert plain.returncode == 0, plain.stderr
    out = tmp_path / "out.h5"
    cmd = [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", out]
    ran, run_s = _timed([*map(str, cmd), str(script)], tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == plain.stdout
    # plain python ends these in about a second; run waited forever for the executors'
    # threads, which their exit callbacks stop only after the threads are joined
    assert run_s < 10 and run_s < plain_s + 8, (run_s, plain_s)
    assert _calls(out)["task"] == TASKS * PER_TASK, ran.stderr
    assert "was still running" not in ran.stderr, ran.stderr
    assert not list(tmp_path.glob("out.h5.procs-*"))


def test_a_scripts_atexit_handlers_run_after_its_threads_and_record_into_the_run(tmp_path):
    """The interpreter's order: threading's exit callbacks, the non-daemon threads, then the
    atexit handlers (last registered first). What each records is in the file."""
    script = tmp_path / "order.py"
    script.write_text(
        textwrap.dedent(
            """
            import atexit, threading, time
            import scope_profiler as sp
            order = []
            def say(what):
                with sp.profile_region(what):
                    order.append(what)
            atexit.register(lambda: (say("first registered"), print(order, flush=True)))
            atexit.register(say, "last registered")
            threading._register_atexit(say, "threading callback")
            threading.Thread(target=lambda: (time.sleep(0.2), say("thread"))).start()
            """
        )
    )
    expected = "['threading callback', 'thread', 'last registered', 'first registered']\n"
    assert (
        subprocess.run([sys.executable, script], capture_output=True, text=True).stdout == expected
    )
    out = tmp_path / "order.h5"
    ran = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", out, script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == expected
    calls = _calls(out)
    assert [calls[name] for name in eval(expected)] == [1, 1, 1, 1], calls
    assert "not in it" not in ran.stderr, ran.stderr


def test_calls_recorded_after_the_profile_is_written_are_named_once(tmp_path):
    script = tmp_path / "ticker.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading, time
            import scope_profiler as sp
            def tick():
                while True:
                    with sp.profile_region("tick"):
                        time.sleep(0.001)
            threading.Thread(target=tick, daemon=True).start()
            time.sleep(0.1)
            """
        )
    )
    out = tmp_path / "t.h5"
    ran = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", out, script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.count("recorded after the profile was written are not in it") == 1, ran.stderr
    assert _calls(out)["tick"] > 10


#: A program that waits at its end: for a thread, then in an atexit handler; each records.
_WAITS_AT_ITS_END = textwrap.dedent(
    """
    import atexit, threading, time
    import scope_profiler as sp
    def later():
        with sp.profile_region("later handler"):
            print("later handler", flush=True)
    atexit.register(later)
    def slow():
        with sp.profile_region("slow handler"):
            print("slow handler", flush=True)
            time.sleep(SLOW)
    atexit.register(slow)
    def work():
        with sp.profile_region("thread"):
            time.sleep(STAY)
    threading.Thread(target=work).start()
    print("ready", flush=True)
    """
)


def _end_by(cmd: list, signum: int, after: float, cwd: Path) -> subprocess.CompletedProcess:
    """Start ``cmd``, send ``signum`` ``after`` s after its first line, wait for its end."""
    child = subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    first = child.stdout.readline()
    time.sleep(after)
    child.send_signal(signum)
    out, err = child.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, child.returncode, first + out, err)


@pytest.mark.parametrize(
    ("signum", "stay", "slow", "after", "expected"),
    [
        # Ctrl-C while the program waits for its thread: the waiting stops, printed as python
        # prints it; the atexit handlers still run; the status is the program's
        (signal.SIGINT, 3, 0.2, 0.5, {"thread": 1, "slow handler": 1, "later handler": 1}),
        # Ctrl-C in an atexit handler interrupts that one; the next one runs
        (signal.SIGINT, 0.2, 30, 1.0, {"thread": 1, "slow handler": 1, "later handler": 1}),
        # SIGTERM in an atexit handler: the process would end there; the run writes first
        (signal.SIGTERM, 0.2, 30, 1.0, {"thread": 1, "slow handler": 1}),
    ],
)
def test_a_signal_while_the_program_ends_does_what_it_does_under_python(
    tmp_path, signum, stay, slow, after, expected
):
    script = tmp_path / "waits.py"
    script.write_text(_WAITS_AT_ITS_END.replace("STAY", str(stay)).replace("SLOW", str(slow)))
    plain = _end_by([sys.executable, str(script)], signum, after, tmp_path)
    out = tmp_path / "w.h5"
    cmd = [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", str(out)]
    ran = _end_by([*cmd, str(script)], signum, after, tmp_path)
    assert ran.returncode == plain.returncode, (ran.returncode, plain.returncode, ran.stderr)
    assert ran.stdout == plain.stdout
    if signum == signal.SIGINT:
        assert plain.returncode == 0 and "KeyboardInterrupt" in plain.stderr
        # "Exception ignored in ...", as python words it (addresses differ)
        first = [re.sub(" at 0x[0-9a-f]+", "", p.stderr.splitlines()[0]) for p in (plain, ran)]
        assert first[0] == first[1], ran.stderr
    else:
        assert plain.returncode == -signal.SIGTERM
        assert "terminated by signal 15; writing the profile" in ran.stderr
    calls = _calls(out)
    calls.pop("scope_profiler.session")
    assert calls == expected, ran.stderr


def test_sigint_ends_run_by_the_signal_as_it_ends_python(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent(
            """
            import time
            import scope_profiler as sp
            for _ in range(3):
                with sp.profile_region("work"):
                    pass
            print("ready", flush=True)
            with sp.profile_region("waiting"):
                time.sleep(60)
            """
        )
    )
    plain = _end_by([sys.executable, str(script)], signal.SIGINT, 0.2, tmp_path)
    assert plain.returncode == -signal.SIGINT
    out = tmp_path / "s.h5"
    cmd = [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", str(out)]
    ran = _end_by([*cmd, str(script)], signal.SIGINT, 0.2, tmp_path)
    assert ran.returncode == -signal.SIGINT, ran.stderr
    assert ran.stderr.rstrip().endswith("KeyboardInterrupt"), ran.stderr
    assert _calls(out) == {"scope_profiler.session": 1, "work": 3, "waiting": 1}


#: A script that forks a child recording CHILD calls, waits for it, then records PARENT
#: calls itself (a second or so) and prints its last line: the end of the run (writing 2.5 M
#: calls, merging the child's file) takes a while, for a signal to come meanwhile.
CHILD, PARENT = 1_000, 2_500_000
_FORKS_THEN_WORKS = textwrap.dedent(
    f"""
    import os
    import scope_profiler as sp
    pid = os.fork()
    if pid == 0:
        for _ in range({CHILD}):
            with sp.profile_region("child"):
                pass
        os._exit(0)
    os.waitpid(pid, 0)
    region = sp.profile_region
    for _ in range({PARENT}):
        with region("parent"):
            pass
    print("last line", flush=True)
    """
)


def test_a_signal_at_the_end_of_a_run_loses_no_followed_process(tmp_path):
    """SIGTERM to the run, or SIGINT twice to its process group (GNU timeout, Ctrl-C in a
    terminal), 0-0.35 s after the script's last line: the write and the merge finish, then
    the run ends by the signal; both ranks, every call, no directory left, no traceback.
    (A run that ended before the signal came exits 0: nothing was left to end.)"""
    script = tmp_path / "forks.py"
    script.write_text(_FORKS_THEN_WORKS)
    out = tmp_path / "f.h5"
    cmd = [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", str(out)]
    cmd.append(str(script))
    started = time.monotonic()
    for signum, group in ((signal.SIGTERM, False), (signal.SIGINT, True)):
        ended_by_it = 0
        for delay in (0.0, 0.1, 0.2, 0.35):
            out.unlink(missing_ok=True)
            child = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            assert child.stdout is not None
            assert child.stdout.readline() == "last line\n"
            time.sleep(delay)
            if group:
                os.killpg(child.pid, signum)
                time.sleep(0.02)
                os.killpg(child.pid, signum)
            else:
                child.send_signal(signum)
            _, err = child.communicate(timeout=120)
            what = (signal.Signals(signum).name, delay, child.returncode, err)
            ended_by_it += child.returncode == -signum
            assert child.returncode in (-signum, 0), what
            if child.returncode == 0:  # it ended first: the signal found no run to end
                assert "while the profile is written" not in err, what
            # (a first Ctrl-C that comes while the program still ends - threading's shutdown -
            # is printed as python prints it: "Exception ignored in: <module 'threading'>")
            assert "Traceback" not in err or err.startswith("Exception ignored in"), what
            r = sp.read_h5(str(out))
            assert r.num_ranks == 2, what
            assert (r["child"][1].num_calls, r["parent"][0].num_calls) == (CHILD, PARENT), what
            assert not list(tmp_path.glob("f.h5.procs-*")), what
        assert ended_by_it >= 1, signal.Signals(signum).name  # 0 s after its last line at least
    assert time.monotonic() - started < 300


_POOL_THEN_WORKS = textwrap.dedent(
    """
    import multiprocessing as mp
    import scope_profiler as sp

    def task(x):
        for _ in range(200):
            with sp.profile_region("task"):
                pass
        return x

    if __name__ == "__main__":
        pool = mp.get_context("fork").Pool(2)
        print(sum(pool.map(task, range(40), chunksize=1)), flush=True)
        region = sp.profile_region
        for _ in range(300_000):
            with region("parent"):
                pass
        print("last line", flush=True)
    """
)


def test_sigterm_to_the_process_group_at_the_end_keeps_the_pool_workers_calls(tmp_path):
    """The workers of a pool left open get SIGTERM with the run (a process group stopped):
    each writes its file and ends; the run waits for them before it merges (at most 2 s)."""
    script = tmp_path / "pool.py"
    script.write_text(_POOL_THEN_WORKS)
    out = tmp_path / "p.h5"
    cmd = [sys.executable, "-m", "scope_profiler", "run", "-q", "--no-speedscope", "-o", str(out)]
    for delay in (0.0, 0.05, 0.1):
        out.unlink(missing_ok=True)
        child = subprocess.Popen(
            [*cmd, str(script)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert child.stdout is not None
        while child.stdout.readline() not in ("last line\n", ""):
            pass
        time.sleep(delay)
        os.killpg(child.pid, signal.SIGTERM)
        # a worker started while the run wrote its profile would outlive it, waiting for
        # work with the run's pipes open: communicate() would not return
        _, err = child.communicate(timeout=60)
        what = (delay, child.returncode, err)
        assert child.returncode in (-signal.SIGTERM, 0), what
        assert "left out of the result" not in err, what
        calls = _calls(out)
        calls.pop("scope_profiler.session")  # one per process that recorded
        assert calls == {"task": 8000, "parent": 300_000}, what
        assert not list(tmp_path.glob("p.h5.procs-*")), what
