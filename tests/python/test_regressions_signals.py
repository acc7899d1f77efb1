"""Regression tests of issue 13 item 5 (signals under `scope-profiler run`), with real child
processes. To be merged into test_regressions.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import scope_profiler as sp

SCRIPT = textwrap.dedent(
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


def _run_until_ready(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SCRIPT)
    out = tmp_path / "server.h5"
    child = subprocess.Popen(
        [sys.executable, "-m", "scope_profiler", "run", "-o", str(out), str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # inside "waiting"
    return child, out


def _calls(path) -> dict:
    r = sp.read_h5(str(path))
    return {g.name: g.num_calls for g in r.get_regions()}


# issue 13 item 5: "SIGTERM loses everything under `scope-profiler run` (a server stopped by
# systemd or docker)": the file is written, then the process ends by SIGTERM.
def test_issue_13_sigterm_under_run_writes_the_profile_then_dies_by_the_signal(tmp_path):
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


# issue 13 item 5: "(and SIGINT, exit code 130)".
def test_issue_13_sigint_under_run_writes_the_profile_and_exits_130(tmp_path):
    child, out = _run_until_ready(tmp_path)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, (child.returncode, err)
    assert "KeyboardInterrupt" in err
    assert _calls(out) == {"scope_profiler.session": 1, "work": 5, "waiting": 1}


# A script's own SIGTERM handler keeps working under `run` (it is installed after ours).
def test_a_scripts_own_sigterm_handler_takes_over(tmp_path):
    script = tmp_path / "own.py"
    script.write_text(
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
        )
    )
    out = tmp_path / "own.h5"
    child = subprocess.Popen(
        [sys.executable, "-m", "scope_profiler", "run", "-o", str(out), str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    child.send_signal(signal.SIGTERM)
    rest, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert "clean exit" in rest
    assert _calls(out)["tick"] >= 5


# issue 13 item 17: "on 3.13.0 (before 3.13.3) track_async makes every unnamed task's name
# 'None' (CPython issue 130033)": the program's own get_name() and the task table keep the
# default names; a given name is kept too.
def test_issue_13_track_async_keeps_default_task_names(tmp_path):
    import asyncio

    from scope_profiler import ProfileManager

    seen = []

    async def job():
        seen.append(asyncio.current_task().get_name())

    async def main():
        await asyncio.gather(job(), job(), asyncio.create_task(job(), name="given"))

    with ProfileManager.session(
        file_path=str(tmp_path / "names.h5"), track_async=True, verbose=False
    ):
        asyncio.run(main())
    assert len(seen) == 3 and "None" not in seen, seen
    assert sorted(n for n in seen if n != "given")[0].startswith("Task-"), seen
    assert "given" in seen
    names = [t.name for t in sp.read_h5(str(tmp_path / "names.h5")).tasks[0]]
    assert "None" not in names and "given" in names, names
