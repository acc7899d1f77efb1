"""`scope-profiler run --recursive` end to end, once with the default hook: what the root
region holds, async generators left early, a selection that matches nothing."""

from __future__ import annotations

import os
import pstats
import subprocess
import sys

import pytest
from helpers import run_cli, run_traced
from scope_profiler import read_h5

# An async generator left by `break` is closed by asyncio (aclose) in a task of its own. Its
# call closes on the lane it was entered on, when the generator finishes: ~at the break, not
# 0.2 s later at the end of the run.
ASYNC_GENERATOR_BREAK = """
import asyncio, time

async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i

async def main():
    async for v in agen(100):
        if v == 2:
            break
    await asyncio.sleep(0.2)

asyncio.run(main())
"""


def test_an_async_generator_left_by_break_closes_on_its_own_lane(tmp_path):
    run, proc = run_traced(tmp_path, ASYNC_GENERATOR_BREAK, "--track-async")
    assert "still open" not in proc.stderr, proc.stderr
    agen, main = run["__main__.agen"][0], run["__main__.main"][0]
    assert agen.num_calls == 1 and main.num_calls == 1
    assert agen.total_duration < 0.1 < main.total_duration, (
        agen.total_duration,
        main.total_duration,
    )
    # on main's task lane, inside main
    assert agen.task_ids[0] == main.task_ids[0] >= 0
    assert main.start_times[0] <= agen.start_times[0] and agen.end_times[0] <= main.end_times[0]


# The module body runs `asyncio.run(main())`: main's work runs in task steps, on main's task
# lane. The module body's call on the thread's own lane is open all along, but the steps are
# not its time: its exclusive and held time leave them out, so it is not the hot spot.
ASYNC_MAIN_BURNS = """
import asyncio, time

def burn(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass

async def step(k):
    burn(0.03)
    await asyncio.sleep(0.001)

async def main():
    for k in range(4):
        await step(k)

asyncio.run(main())
"""


def test_the_module_body_does_not_count_the_task_steps_it_runs(tmp_path):
    run, _ = run_traced(tmp_path, ASYNC_MAIN_BURNS, "--track-async")
    body, main, burn = (run[n][0] for n in ("__main__.<module>", "__main__.main", "__main__.burn"))
    assert body.task_ids.tolist() == [-1] and main.task_ids[0] >= 0
    assert (burn.task_ids == main.task_ids[0]).all()
    # main's time is on its task lane: held ~ the four 30 ms burns
    assert main.total_duration - main.total_await_duration >= burn.total_duration >= 0.12
    # the body's exclusive time is its duration less the task steps it ran (main's steps,
    # the loop's shutdown tasks): a few ms of loop setup and teardown, not ~0.13 s
    steps = sum(t.running_time for t in run.tasks[0])
    assert body.task_step_times_ns is not None
    body_steps = body.task_step_times_ns[0] / 1e9
    assert steps - 0.002 <= body_steps <= steps + 1e-6
    assert body.exclusive_duration == pytest.approx(body.total_duration - body_steps, abs=1e-6)
    assert body.exclusive_duration < 0.25 * body.total_duration
    hot = max(run.region_names, key=lambda n: run[n][0].exclusive_duration)
    assert hot == "__main__.burn", hot
    # the thread's held time and the session root's held time agree: the root holds the
    # thread outside the task steps it encloses
    root = run["scope_profiler.session"][0]
    thread = run.thread_summary()[0]
    root_held = root.total_duration - root.task_step_times_ns[0] / 1e9
    assert root_held < 0.25 * root.total_duration
    assert thread["held_time"] <= thread["wall_time"]
    assert thread["held_time"] == pytest.approx(root_held + thread["task_step_time"], abs=1e-6)


# runpy's first run_path imports pkgutil (and typing with it), 5-15 ms, before the script's
# first line. They are imported before the root region opens, so the root's own time under
# --recursive is reading and compiling the script.
def test_the_root_region_of_a_recursive_run_holds_no_profiler_imports(tmp_path):
    own = []
    for _ in range(3):  # the best of three: a loaded machine deschedules a run for ms
        results, _ = run_traced(tmp_path, "def main():\n    pass\n\nmain()\n")
        root = results["app.py"][0]
        assert root.num_calls == 1 and results["__main__.<module>"][0].num_calls == 1
        own.append(root.exclusive_duration)
    # the script's <module> is inside the root; what is left is runpy reading, compiling
    assert min(own) < 0.003, own


# `run --recursive --include 'nomatch*'` records no traced function: the run warns, naming
# the selection.
def test_an_include_matching_nothing_warns(tmp_path):
    results, proc = run_traced(tmp_path, "def f():\n    pass\n\nf()\n", "--include", "nomatch*")
    assert "traced_calls" in results.metadata and results.metadata["traced_calls"] == 0
    assert (
        "scope-profiler: RuntimeWarning: function-level tracing recorded no call: no function "
        "that ran matched recursive_include=['nomatch*']" in proc.stderr
    ), proc.stderr
    results, proc = run_traced(tmp_path, "def f():\n    pass\n\nf()\n", "--include", "__main__.f")
    assert results["__main__.f"][0].num_calls == 1 and "recorded no call" not in proc.stderr


def _cprofile_calls(tmp_path, *module_args: str) -> dict[tuple[str, str], int]:
    """Calls of each (file, function) under ``python -m cProfile -m MODULE ARGS`` (the
    independent count)."""
    stats_file = tmp_path / "cprofile.out"
    proc = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(stats_file), "-m", *module_args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {(k[0], k[2]): v[1] for k, v in pstats.Stats(str(stats_file)).stats.items()}


# `run --recursive -m pip`: pip is installed in the venv's site-packages, but it is the
# program run, so its modules are the user's code: traced by default, with the calls
# cProfile counts.
def test_the_package_run_with_dash_m_is_the_users_code_wherever_installed(tmp_path):
    import pip._internal.cli.main as pip_main
    import pip._internal.cli.main_parser as pip_parser

    expected = _cprofile_calls(tmp_path, "pip", "--version")
    out = tmp_path / "run.h5"
    proc = run_cli(
        "run", "--recursive", "-q", "--no-speedscope", "-o", out, "-m", "pip", "--version"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pip "), proc.stdout
    run = read_h5(str(out))
    for module, name in ((pip_main, "main"), (pip_parser, "parse_command")):
        region = f"{module.__name__}.{name}"
        want = expected[(module.__file__, name)]
        assert want >= 1 and run[region][0].num_calls == want, (region, want)
    assert run["__main__.<module>"][0].num_calls == 1  # pip/__main__.py
    # other installed packages and the standard library stay out
    assert not any(n.startswith(("os.", "optparse.", "logging.")) for n in run.region_names)


# `--include` selects what it names, wherever it is installed (not only among the user's
# code): `-m pip` traced through one of its modules only.
def test_an_include_selects_an_installed_package(tmp_path):
    import pip._internal.cli.main_parser as pip_parser

    expected = _cprofile_calls(tmp_path, "pip", "--version")
    out = tmp_path / "run.h5"
    proc = run_cli(
        "run", "--include", "pip._internal.cli.main_parser.*", "-q", "--no-speedscope",
        "-o", out, "-m", "pip", "--version",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = read_h5(str(out))
    # ("pip": the root region named after the module)
    traced = {n for n in run.region_names if n.startswith(("pip.", "__main__."))}
    assert traced and all(n.startswith("pip._internal.cli.main_parser.") for n in traced), traced
    want = expected[(pip_parser.__file__, "parse_command")]
    assert run["pip._internal.cli.main_parser.parse_command"][0].num_calls == want


# A `sitecustomize` run at every interpreter's start (Debian's Python ships one beside its
# standard library; `run` puts its own start-up file first for the processes it follows) is
# not the user's code: a spawn pool's workers record the task, not `sitecustomize.*`.
SPAWN_POOL = """
import multiprocessing as mp

def task(x):
    return x * x

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(2) as pool:
        assert sum(pool.map(task, range(8), chunksize=1)) == 140
"""


def test_start_up_code_of_followed_processes_is_not_traced(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(
        "def _configure():\n    return None\n\n_configure()\n"
    )
    script = tmp_path / "app.py"
    script.write_text(SPAWN_POOL)
    out = tmp_path / "run.h5"
    env = dict(os.environ, PYTHONPATH=str(site_dir))
    proc = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "run", "--recursive", "-q", "--no-speedscope",
         "-o", str(out), str(script)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = read_h5(str(out))
    assert not [n for n in run.region_names if n.startswith("sitecustomize")], run.region_names
    task = run["__main__.task"]
    assert sum(task[rank].num_calls for rank in task.ranks) == 8  # across the workers
