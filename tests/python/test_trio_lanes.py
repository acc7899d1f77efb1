"""track_async: trio tasks (and anyio's, on either backend) as lanes with await time."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import async_session as _session
from helpers import run_cli
from scope_profiler import read_h5

trio = pytest.importorskip("trio")

SLEEP = 0.02
#: A call's held time (its duration minus its await time) on a quiet lane: a clock read and
#: a step switch or two, far below this.
HELD_MAX = 0.005
#: How much later than its deadline a sleep may end on a loaded machine.
LATE_MAX = 0.03


def _ten_sleepers(m):
    async def call(i):
        with m.region("call"):
            await trio.sleep(SLEEP)

    async def main():
        async with trio.open_nursery() as n:
            for i in range(10):
                n.start_soon(call, i, name=f"call-{i}")

    return main


def _assert_sleeps_on_own_lanes(region, n, sleep=SLEEP):
    """`n` calls, each on its own lane, spanning its sleep and awaiting it with little held
    time. A step preempted by the OS after its sleep's deadline was set holds the thread
    for that long, which shortens the await by as much: the typical call is checked tight,
    every call loosely."""
    assert region.num_calls == n
    assert len(set(region.task_ids.tolist())) == n and (region.task_ids >= 0).all()
    assert np.all(region.durations >= sleep - 0.002), region.durations
    assert np.all(region.durations < sleep + LATE_MAX), region.durations
    held = region.durations - region.await_times
    assert np.all(held >= 0) and np.median(held) < HELD_MAX, held
    assert np.median(region.await_times) >= sleep - 0.002, region.await_times
    assert np.all(region.await_times >= sleep / 2), region.await_times


# --------------------------------------------------------------------------- nurseries
def test_ten_concurrent_calls_in_a_nursery_are_ten_lanes(manager):
    with _session(manager) as s:
        trio.run(_ten_sleepers(manager))
    r = s.results
    call = r["call"][0]
    _assert_sleeps_on_own_lanes(call, 10)
    rows = {t.index: t for t in r.tasks[0]}
    on_lanes = [rows[int(i)] for i in call.task_ids]
    assert sorted(t.name for t in on_lanes) == sorted(f"call-{i}" for i in range(10))
    assert {t.kind for t in on_lanes} == {"task"}
    assert all(t.coro_name.endswith("call") and t.done and t.steps == 2 for t in on_lanes)
    # the main task is a lane too; trio's own tasks are not
    names = [t.name for t in r.tasks[0]]
    assert len(names) == 11 and names[0].endswith("_ten_sleepers.<locals>.main")
    thread = r.thread_summary()[0]
    assert thread["held_time"] <= thread["wall_time"]
    assert thread["held_time"] < 10 * SLEEP  # not the sum of the tasks' sleeps


def test_nested_nurseries_give_each_task_its_lane(manager):
    async def leaf(d):
        with manager.region("leaf"):
            await trio.sleep(d)

    async def branch(d):
        with manager.region("branch"):
            async with trio.open_nursery() as n:
                n.start_soon(leaf, d)
                n.start_soon(leaf, d)

    async def main():
        async with trio.open_nursery() as n:
            for _ in range(3):
                n.start_soon(branch, SLEEP)

    with _session(manager) as s:
        trio.run(main)
    branch_, leaf_ = s.results["branch"][0], s.results["leaf"][0]
    _assert_sleeps_on_own_lanes(branch_, 3)  # a branch awaits its nursery's children
    _assert_sleeps_on_own_lanes(leaf_, 6)
    assert not set(branch_.task_ids.tolist()) & set(leaf_.task_ids.tolist())
    assert len(s.results.tasks[0]) == 1 + 3 + 6


def test_trio_own_tasks_are_not_lanes_and_system_tasks_of_the_program_are(manager):
    async def system_job():
        with manager.region("system_job"):
            await trio.sleep(SLEEP)

    def soon():
        with manager.region("soon"):
            pass

    async def main():
        trio.lowlevel.spawn_system_task(system_job, name="system-job")
        token = trio.lowlevel.current_trio_token()
        await trio.to_thread.run_sync(token.run_sync_soon, soon)
        await trio.sleep(2 * SLEEP)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _session(manager) as s:
            trio.run(main)
    r = s.results
    names = [t.name for t in r.tasks[0]]
    assert not any(n in ("<init>", "<TrioToken.run_sync_soon task>") for n in names), names
    assert names[-1] == "system-job" and len(names) == 2  # main and the system task
    assert r["soon"][0].task_ids.tolist() == [-1]  # run in trio's run_sync_soon task
    _assert_sleeps_on_own_lanes(r["system_job"][0], 1)


# --------------------------------------------------------------------------- cancellation
def test_cancelled_sleep_closes_its_call_at_the_cancel(manager):
    cancel_after = 0.05

    async def sleeper(task_status=trio.TASK_STATUS_IGNORED):
        with trio.CancelScope() as scope:
            task_status.started(scope)
            with manager.region("sleepy"):
                await trio.sleep(10)

    async def main():
        async with trio.open_nursery() as n:
            scope = await n.start(sleeper)
            await trio.sleep(cancel_after)
            scope.cancel()
        with trio.move_on_after(cancel_after):
            with manager.region("timed_out"):
                await trio.sleep(10)

    with _session(manager) as s:
        trio.run(main)
    r = s.results
    for name in ("sleepy", "timed_out"):
        region = r[name][0]
        assert region.num_calls == 1 and region.task_ids[0] >= 0
        assert cancel_after - 0.002 <= region.durations[0] < cancel_after + LATE_MAX, name
        assert region.durations[0] - region.await_times[0] < region.durations[0] / 2, name
    rows = {t.index: t for t in r.tasks[0]}
    sleeper_row = rows[int(r["sleepy"][0].task_ids[0])]
    assert sleeper_row.name.endswith("sleeper") and sleeper_row.done


def test_guest_run_on_asyncio_gives_trio_and_asyncio_tasks_lanes(manager):
    import asyncio

    async def fetch():
        with manager.region("fetch"):
            await asyncio.sleep(SLEEP)

    async def host():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        trio.lowlevel.start_guest_run(
            _ten_sleepers(manager),
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=done.set_result,
        )
        await asyncio.gather(*(fetch() for _ in range(3)))
        (await done).unwrap()

    with _session(manager) as s:
        asyncio.run(host())
    call, fetch_ = s.results["call"][0], s.results["fetch"][0]
    _assert_sleeps_on_own_lanes(call, 10)
    _assert_sleeps_on_own_lanes(fetch_, 3)
    assert not set(call.task_ids.tolist()) & set(fetch_.task_ids.tolist())


# --------------------------------------------------------------------------- anyio
_ANYIO_PROGRAM = """
import json, sys
import anyio
from scope_profiler import ProfileManager as PM


async def call(i):
    with PM.region("call"):
        await anyio.sleep(0.02)


async def main():
    async with anyio.create_task_group() as tg:
        for i in range(10):
            tg.start_soon(call, i, name=f"call-{i}")


with PM.session(
    track_async=True, deactivate_file_output=True, return_results=True, verbose=False
) as s:
    anyio.run(main, backend=sys.argv[1])
r = s.results
c = r["call"][0]
rows = {t.index: t for t in r.tasks[0]}
thread = r.thread_summary()[0]
print(json.dumps({
    "task_ids": c.task_ids.tolist(),
    "await": c.await_times.tolist(),
    "held": (c.durations - c.await_times).tolist(),
    "names": sorted(rows[i].name for i in c.task_ids.tolist()),
    "held_within_wall": thread["held_time"] <= thread["wall_time"],
    "trio_imported": "trio" in sys.modules,
}))
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_anyio_task_groups_are_lanes_on_both_backends(backend, tmp_path):
    """anyio imports trio after the session started (patched at its import)."""
    pytest.importorskip("anyio")
    script = tmp_path / "program.py"
    script.write_text(_ANYIO_PROGRAM)
    out = subprocess.run(
        [sys.executable, str(script), backend], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "RuntimeWarning" not in out.stderr, out.stderr
    got = __import__("json").loads(out.stdout)
    assert len(got["task_ids"]) == 10 and len(set(got["task_ids"])) == 10
    assert min(got["task_ids"]) >= 0
    assert all(SLEEP / 2 <= a < SLEEP + LATE_MAX for a in got["await"]), got["await"]
    assert np.median(got["await"]) >= SLEEP - 0.002, got["await"]
    assert all(h >= 0 for h in got["held"]) and np.median(got["held"]) < HELD_MAX, got["held"]
    assert got["names"] == sorted(f"call-{i}" for i in range(10))
    assert got["held_within_wall"]
    assert got["trio_imported"] == (backend == "trio")


# --------------------------------------------------------------------------- without track_async
def test_trio_run_without_track_async_records_as_before(manager):
    original = trio.run
    with _session(manager, track_async=False, track_threads=True) as s:
        assert trio.run is original  # nothing patched
        trio.run(_ten_sleepers(manager))
    call = s.results["call"][0]
    assert call.num_calls == 10 and call.task_ids is None and call.await_times is None
    assert not s.results.tasks
    # nested on the thread's lane in the order they opened: the outermost spans them all
    assert call.durations.max() >= SLEEP - 0.002
    assert s.results.thread_summary()[0]["held_time"] is None


def test_trio_is_restored_after_the_session(manager):
    original_run, original_guest = trio.run, trio.lowlevel.start_guest_run
    with _session(manager):
        patched = trio.run
        assert trio.run is not original_run
        assert trio.run.__wrapped__ is original_run
        assert trio.lowlevel.start_guest_run.__wrapped__ is original_guest
    assert trio.run is original_run and trio.lowlevel.start_guest_run is original_guest
    with _session(manager, track_async=False) as s:
        trio.run(_ten_sleepers(manager))
        kept = patched(_ten_sleepers(manager))  # taken by name while patched: still runs
    assert s.results["call"][0].task_ids is None and s.results["call"][0].num_calls == 20
    assert kept is None


# --------------------------------------------------------------------------- inside a run
def test_session_inside_a_run_follows_the_tasks_it_spawns(manager):
    async def main():
        with _session(manager) as s:
            with manager.region("main"):
                await _ten_sleepers(manager)()
        return s

    s = trio.run(main)
    main_ = s.results["main"][0]
    assert main_.task_ids.tolist() == [-1]  # running before the session: not a lane
    _assert_sleeps_on_own_lanes(s.results["call"][0], 10)
    assert len(s.results.tasks[0]) == 10


_UNFOLLOWED_PROGRAM = """
import sys, warnings
from trio import run, open_nursery, sleep
from scope_profiler import ProfileManager as PM


async def call(i):
    with PM.region("call"):
        await sleep(0.02)


async def main():
    with PM.region("early"):
        await sleep(0)
    async with open_nursery() as n:
        for i in range(4):
            n.start_soon(call, i)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with PM.session(
        track_async=True, deactivate_file_output=True, return_results=True, verbose=False
    ) as s:
        run(main)  # bound before setup(): not through the patched trio.run
r = s.results
print(len([c for c in caught if "trio" in str(c.message)]))
print(*r["early"][0].task_ids.tolist())
print(len(set(r["call"][0].task_ids.tolist())), int((r["call"][0].task_ids >= 0).sum()))
"""


def test_run_started_around_the_patch_is_followed_from_its_first_region(tmp_path):
    """`from trio import run` before setup(): the first region in one of its tasks follows
    the run from then on and says so once."""
    script = tmp_path / "program.py"
    script.write_text(_UNFOLLOWED_PROGRAM)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warned, early, calls = out.stdout.split("\n")[:3]
    assert warned == "1"
    assert early.split() == ["-1"]  # main started before anyone followed the run
    assert calls.split() == ["4", "4"]  # the tasks spawned afterwards are lanes


_CLI_PROGRAM = """
import trio
from scope_profiler import ProfileManager as PM


async def call(i):
    with PM.region("call"):
        await trio.sleep(0.02)


async def main():
    async with trio.open_nursery() as n:
        for i in range(10):
            n.start_soon(call, i, name=f"call-{i}")


trio.run(main)
"""


def test_run_track_async_gives_a_trio_program_lanes(tmp_path):
    """`run --track-async` sets up before the program imports trio."""
    script = tmp_path / "app.py"
    script.write_text(_CLI_PROGRAM)
    out = tmp_path / "run.h5"
    proc = run_cli("run", "--track-async", "-q", "--no-speedscope", "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    run = read_h5(str(out))
    _assert_sleeps_on_own_lanes(run["call"][0], 10)
    thread = run.thread_summary()[0]
    assert thread["held_time"] <= thread["wall_time"]


# --------------------------------------------------------------------------- HDF5
def test_hdf5_round_trip_keeps_the_trio_task_table(manager, tmp_path):
    with _session(manager, tmp_path) as s:
        trio.run(_ten_sleepers(manager))
    mem, disk = s.results, read_h5(tmp_path / "run.h5")
    a, b = mem["call"][0], disk["call"][0]
    for col in ("start_times_ns", "end_times_ns", "task_ids", "await_times_ns"):
        assert np.array_equal(getattr(a, col), getattr(b, col)), col

    def rows(r):
        return [(t.index, t.kind, t.name, t.coro_name, t.steps) for t in r.tasks[0]]

    assert rows(disk) == rows(mem)
    assert sorted(t[2] for t in rows(disk) if t[2].startswith("call-")) == sorted(
        f"call-{i}" for i in range(10)
    )


_LATE_IMPORT_PROGRAM = """
import sys
import scope_profiler as sp
from scope_profiler import _trio_hooks

m = sp.ProfileManager()
m.setup(track_async=True, deactivate_file_output=True)
print("trio" in sys.modules, _trio_hooks._FINDER in sys.meta_path)
import trio  # noqa: E402

print(trio.run.__wrapped__ is trio._core._run.run, _trio_hooks._FINDER in sys.meta_path)
m.reset()
print(trio.run is trio._core._run.run, _trio_hooks._FINDER in sys.meta_path)
"""


def test_track_async_imports_no_trio_and_patches_it_at_its_import():
    out = subprocess.run(
        [sys.executable, "-c", _LATE_IMPORT_PROGRAM], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["False True", "True True", "True False"]


# --------------------------------------------------------------------------- loop blocks
def test_a_trio_step_that_holds_the_thread_is_a_loop_block_in_its_region(manager):
    """A task holding the run's thread 60 ms (a `time.sleep` inside `hold`) while three
    tasks wait on events it sets afterwards, in the same step: one block of ~60 ms, in
    `hold`, on the blocker's lane; the three waiters became ready inside that step and
    waited for it to end, so they count as delayed by it."""
    import time

    async def waiter(event):
        with manager.region("wait"):
            await event.wait()

    async def blocker(events):
        await trio.sleep(0.01)
        with manager.region("hold"):
            time.sleep(0.06)
        for e in events:
            e.set()

    async def main():
        events = [trio.Event() for _ in range(3)]
        async with trio.open_nursery() as n:
            for e in events:
                n.start_soon(waiter, e)
            n.start_soon(blocker, events, name="blocker")

    with _session(manager) as s:
        trio.run(main)
    r = s.results
    blocks = r.loop_blocks(threshold=0.01)
    assert len(blocks) == 1, blocks
    (block,) = blocks
    assert block["region"] == "hold" and 0.055 <= block["duration"] < 0.06 + LATE_MAX, block
    blocker_task = next(t.index for t in r.tasks[0] if t.name == "blocker")
    assert block["task"] == blocker_task and block["delayed_tasks"] == 3, block
    # the waiters' calls awaited the blocker, and none was held by the block
    wait = r["wait"][0]
    assert wait.num_calls == 3 and np.all(wait.await_times >= 0.06), wait.await_times


def test_the_run_thread_idle_time_is_its_io_wait_with_nothing_ready(manager):
    """Four tasks sleep 100 ms at once (trio's I/O wait with a timeout: idle), then one holds
    the thread 50 ms (a task step, not idle)."""
    import time

    async def sleeper():
        await trio.sleep(0.1)

    async def main():
        async with trio.open_nursery() as n:
            for _ in range(4):
                n.start_soon(sleeper)
        time.sleep(0.05)

    with _session(manager) as s:
        with manager.region("run"):
            trio.run(main)
    row = next(t for t in s.results.thread_summary() if t["name"] == "MainThread")
    assert 0.098 <= row["idle_time"] <= 0.1 + LATE_MAX, row
    assert row["idle_time"] + row["task_step_time"] <= s.results["run"][0].durations[0]


def test_trio_steps_are_not_the_module_bodys_exclusive_time(tmp_path):
    """`run --recursive --track-async` of a trio program whose tasks burn CPU: the module
    body's exclusive time excludes the task steps it ran (they are the task lanes')."""
    script = tmp_path / "app.py"
    script.write_text(
        "import time\nimport trio\n\n"
        "def burn(seconds):\n    end = time.perf_counter() + seconds\n"
        "    while time.perf_counter() < end:\n        pass\n\n"
        "async def work():\n    burn(0.03)\n    await trio.sleep(0)\n    burn(0.03)\n\n"
        "async def main():\n    async with trio.open_nursery() as n:\n"
        "        for _ in range(3):\n            n.start_soon(work)\n\n"
        "trio.run(main)\n"
    )
    out = tmp_path / "run.h5"
    proc = run_cli("run", "--recursive", "--track-async", "-q", "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    r = read_h5(str(out))
    body = r["__main__.<module>"][0]
    burn = r["__main__.burn"][0]
    assert burn.num_calls == 6 and burn.total_duration >= 0.18
    # six bursts of 30 ms ran inside the body, on the task lanes
    assert body.exclusive_duration < body.total_duration - 0.15, (
        body.exclusive_duration,
        body.total_duration,
    )
