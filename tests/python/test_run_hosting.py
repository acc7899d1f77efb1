"""`scope-profiler run` on scripts that set up profiling themselves: a script that opens its
own `session()` (`examples/async_fetch.py`, for one) runs - the script's session takes over,
or both record; never a `RuntimeError`.

Under `run`, the script's own `setup()`/`session()` joins the command line's run: the run's
file gets every call, the script's own file a snapshot of the run when its session ends (or
at each of its `finalize()` calls)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import ROOT, run_cli, unavailable


def _script(tmp_path, body: str):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def _calls(path) -> dict:
    return {g.name: g.num_calls for g in sp.read_h5(str(path)).get_regions()}


def test_a_scripts_own_session_joins_the_run_and_both_files_are_written(tmp_path):
    script = _script(
        tmp_path,
        """
        import asyncio
        from scope_profiler import ProfileManager

        async def step(i):
            with ProfileManager.profile_region("step"):
                await asyncio.sleep(0.01)

        async def main():
            await asyncio.gather(*(step(i) for i in range(3)))

        with ProfileManager.session(
            file_path="own.h5", track_async=True, return_results=True, verbose=False
        ) as session:
            asyncio.run(main())
        print("own results:", session.results["step"].num_calls)
        """,
    )
    proc = run_cli("run", "--track-async", "-o", tmp_path / "run.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "RuntimeError" not in proc.stderr and "restarts" not in proc.stderr, proc.stderr
    assert "own results: 3" in proc.stdout
    # the script's file: its session root and its three calls, each on its own task lane
    own = sp.read_h5(str(tmp_path / "own.h5"))
    assert own["step"].num_calls == 3
    assert len(set(own["step"].regions[0].task_ids)) == 3
    # the run's file: everything, the script's session nested in the command line's root
    assert _calls(tmp_path / "run.h5") == {"scope_profiler.session": 2, "step": 3}
    calls = sp.read_h5(str(tmp_path / "run.h5")).call_arrays(0)
    sessions = [
        i
        for i in range(len(calls))
        if calls.names[calls.region_index[i]] == "scope_profiler.session"
    ]
    outer, inner = sessions
    assert calls.parent[outer] == -1 and calls.parent[inner] == outer
    assert (
        calls.start_ns[outer] <= calls.start_ns[inner] <= calls.end_ns[inner] <= calls.end_ns[outer]
    )


def test_a_script_asking_for_more_tracking_restarts_the_run_with_it_and_says_so(tmp_path):
    script = _script(
        tmp_path,
        """
        import threading
        from scope_profiler import ProfileManager

        def work():
            with ProfileManager.profile_region("work"):
                pass

        with ProfileManager.session(file_path="own.h5", track_threads=True, verbose=False):
            threads = [threading.Thread(target=work) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        """,
    )
    proc = run_cli("run", "-o", tmp_path / "run.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "asks for track_threads; the run restarts with it" in proc.stderr, proc.stderr
    for name in ("own.h5", "run.h5"):
        r = sp.read_h5(str(tmp_path / name))
        assert r["work"].num_calls == 2, name
        assert len(r.threads[0]) == 3, name  # MainThread and the two workers


def test_setup_and_finalize_in_the_script_write_a_snapshot_each_time(tmp_path):
    script = _script(
        tmp_path,
        """
        from scope_profiler import ProfileManager

        ProfileManager.setup(file_path="own.h5")
        with ProfileManager.profile_region("a"):
            pass
        first = ProfileManager.finalize(return_results=True, verbose=False)
        with ProfileManager.profile_region("b"):
            pass
        ProfileManager.finalize(verbose=False)
        print("first:", sorted(first.region_names))
        """,
    )
    proc = run_cli("run", "-o", tmp_path / "run.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "first: ['a']" in proc.stdout
    # nothing is rewound: the second snapshot and the run's file have both calls
    assert _calls(tmp_path / "own.h5") == {"a": 1, "b": 1}
    assert _calls(tmp_path / "run.h5") == {"scope_profiler.session": 1, "a": 1, "b": 1}


def test_the_bundled_async_example_runs_under_run(tmp_path):
    example = ROOT / "examples" / "async_fetch.py"
    proc = run_cli("run", "--track-async", "-o", tmp_path / "run.h5", example, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    own, run = _calls(tmp_path / "async_fetch.h5"), _calls(tmp_path / "run.h5")
    # the snapshot leaves out the command line's root, still open when the script's ended
    assert own.pop("scope_profiler.session") == 1 and run.pop("scope_profiler.session") == 2
    assert own == run and own["fetch"] > 0, (own, run)


# `run -m module`: the module runs as `python -m` runs it (argv[0] its file, the
# working directory on sys.path), every argument after it is the module's.
def test_run_dash_m_runs_a_module_with_its_own_arguments(tmp_path):
    pkg = tmp_path / "tool"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        textwrap.dedent(
            """
            import sys
            from scope_profiler import ProfileManager
            for arg in sys.argv[1:]:
                with ProfileManager.profile_region("arg"):
                    pass
            print("argv", sys.argv[0].endswith("__main__.py"), sys.argv[1:])
            """
        )
    )
    out = tmp_path / "mod.h5"
    proc = run_cli("run", "-o", out, "-m", "tool", "--help", "-o", "x", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "argv True ['--help', '-o', 'x']" in proc.stdout, proc.stdout
    assert _calls(out) == {"scope_profiler.session": 1, "arg": 3}
    missing = run_cli("run", "-m", "no_such_module_here", cwd=tmp_path)
    # a usage error, exit 2 like a missing script
    assert missing.returncode == 2 and "No module named 'no_such_module_here'" in missing.stderr


# `scope-profiler run` of a threaded script without --track-threads returns the script's own
# code, as docs/cli.md says, when the profile was written and only the speedscope file
# asked for, or the flame graph written by default (whose interleaved calls cannot be drawn),
# could not be.
@pytest.mark.parametrize(
    ("options", "what", "beside"),
    [
        (("--speedscope",), "no speedscope file", "untracked.speedscope.json"),
        ((), "no flame graph", "untracked.flamegraph.svg"),
    ],
    ids=["speedscope", "flame-graph"],
)
def test_run_returns_the_scripts_code_when_only_the_speedscope_file_cannot_be_drawn(
    tmp_path, options, what, beside
):
    script = _script(
        tmp_path,
        """
        import threading
        from scope_profiler import ProfileManager

        first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

        def first():
            with ProfileManager.profile_region("work"):
                first_in.set()
                second_in.wait()
            first_out.set()  # the first call ends while the second is still open

        def second():
            first_in.wait()
            with ProfileManager.profile_region("work"):
                second_in.set()
                first_out.wait()

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        """,
    )
    out = tmp_path / "untracked.h5"
    proc = run_cli("run", *options, "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and what in proc.stderr, proc.stderr
    assert "record with --track-threads" in proc.stderr
    assert _calls(out)["work"] == 2
    assert not (tmp_path / beside).exists()


def test_a_speedscope_file_that_cannot_be_written_gets_no_recording_hint(tmp_path):
    """A write failure (here the file's name is taken by a directory; a full disk alike) is
    reported as it is: recording with --track-threads would not help it."""
    script = _script(
        tmp_path,
        """
        from scope_profiler import ProfileManager

        with ProfileManager.profile_region("outer"):
            with ProfileManager.profile_region("inner"):
                pass
        """,
    )
    (tmp_path / "nested.speedscope.json").mkdir()
    proc = run_cli("run", "--speedscope", "-o", tmp_path / "nested.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "no speedscope file" in proc.stderr, proc.stderr
    assert "nested.speedscope.json" in proc.stderr, proc.stderr
    assert "--track-threads" not in proc.stderr, proc.stderr
    calls = _calls(tmp_path / "nested.h5")
    assert (calls["outer"], calls["inner"]) == (1, 1)


# The `scope-profiler` console script finds `run -m mymod` with mymod.py in the working
# directory, as python -m does (the console script's sys.path[0] is its bin directory: the
# working directory is put first before the lookup); a failing script's traceback shows no
# `<frozen runpy>` frames.
def test_console_script_run_m_finds_a_module_in_the_working_directory(tmp_path):
    console = Path(sys.executable).with_name("scope-profiler")
    if not console.exists():
        unavailable(f"no console script beside {sys.executable} (maturin develop installs it)")
    (tmp_path / "mymod.py").write_text(
        "from scope_profiler import ProfileManager\n"
        "with ProfileManager.profile_region('in_mymod'):\n"
        "    print('hi from mymod')\n"
    )
    out = tmp_path / "m.h5"
    proc = subprocess.run(
        [console, "run", "-q", "-o", out, "-m", "mymod"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "hi from mymod" in proc.stdout
    assert _calls(out) == {"scope_profiler.session": 1, "in_mymod": 1}
    (tmp_path / "boom.py").write_text("def f():\n    raise ValueError('boom')\nf()\n")
    proc = subprocess.run(
        [console, "run", "-q", "-o", tmp_path / "b.h5", "boom.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "ValueError: boom" in proc.stderr and "runpy" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("Traceback (most recent call last):\n  File"), proc.stderr


# A script's own session under `scope-profiler run` gives MainThread a wall_time in its
# results and in its file (the snapshot has an end), so its region_time can be compared with
# its wall time.
def test_hosted_snapshot_gives_live_threads_their_wall_time(tmp_path):
    script = tmp_path / "snap.py"
    script.write_text(
        textwrap.dedent(
            """
            import threading, time
            from scope_profiler import ProfileManager as PM
            def w():
                with PM.profile_region("w"):
                    time.sleep(0.05)
            with PM.session(file_path="snap.h5", track_threads=True, return_results=True) as run:
                t = threading.Thread(target=w)
                t.start()
                with PM.profile_region("m"):
                    time.sleep(0.02)
                t.join()
            for row in run.results.thread_summary():
                print("ROW", row["name"], row["wall_time"], row["region_time"])
            """
        )
    )
    proc = run_cli("run", "-q", "--track-threads", "-o", tmp_path / "run.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {
        line.split()[1]: [float(x) for x in line.split()[-2:]]
        for line in proc.stdout.splitlines()
        if line.startswith("ROW ")
    }
    wall, region = rows["MainThread"]
    assert 0.05 <= region <= wall < 5.0, rows
    from_file = {r["name"]: r for r in sp.read_h5(tmp_path / "snap.h5").thread_summary()}
    assert from_file["MainThread"]["wall_time"] == pytest.approx(wall)


def test_run_keeps_a_module_level_region_when_the_script_restarts_the_run(tmp_path):
    script = tmp_path / "own.py"
    script.write_text(
        textwrap.dedent(
            """
            from scope_profiler import ProfileManager as PM
            reg = PM.profile_region("module_level")
            PM.setup(file_path="own.h5", track_threads=True)
            for _ in range(3):
                with reg:
                    pass
            PM.finalize(verbose=False)
            for _ in range(2):
                with reg:
                    pass
            """
        )
    )
    out = tmp_path / "run.h5"
    proc = run_cli("run", "-q", "--no-speedscope", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sp.read_h5(str(tmp_path / "own.h5"))["module_level"][0].num_calls == 3
    run = sp.read_h5(str(out))
    assert run["module_level"][0].num_calls == 5  # the script's 3, then 2 after its finalize


# `run --recursive` on a script with its own session does not warn at the script's finalize
# about run's own root region and the script's enclosing frames (`__main__.<module>`,
# `__main__.main`), open by design; a region the script leaves open inside its session is
# still named.
def test_run_recursive_with_the_script_s_own_session_warns_only_about_its_own_open_calls(
    tmp_path,
):
    script = tmp_path / "own.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from scope_profiler import ProfileManager as PM

            def fib(n):
                return n if n < 2 else fib(n - 1) + fib(n - 2)

            def main(leave_open):
                with PM.session(file_path="own.h5", verbose=False):
                    fib(5)
                    if leave_open:
                        PM.profile_region("left_open").__enter__()

            main(len(sys.argv) > 1)
            """
        )
    )
    out = tmp_path / "run.h5"
    proc = run_cli("run", "-q", "--recursive", "--no-speedscope", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "still open" not in proc.stderr, proc.stderr
    assert sp.read_h5(str(tmp_path / "own.h5"))["__main__.fib"][0].num_calls == 15
    proc = run_cli(
        "run", "-q", "--recursive", "--no-speedscope", "-o", out, script, "x", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "still open" in line]
    # at the script's finalize, and at the end of the run (closed into the profile)
    assert len(warned) == 2, proc.stderr
    for line in warned:
        assert "1 call(s) still open" in line and "'left_open'" in line, line
