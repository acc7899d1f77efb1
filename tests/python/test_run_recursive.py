"""`scope-profiler run --recursive` end to end, once with the default hook: what the root
region holds, async generators left early, a selection that matches nothing."""

from __future__ import annotations

from helpers import run_traced

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
