"""track_async: ready wait (a task ready to resume while its loop runs other code) and loop
blocks (one step or callback holding the loop's thread)."""

from __future__ import annotations

import asyncio
import json
import math
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest
import scope_profiler as sp
from helpers import async_session as _session
from helpers import reference_python
from scope_profiler import read_h5

TICKERS = 5
TICK = 0.005
HOLD = 0.080


def _scenario(manager, hold=True, ticks=40):
    """Five tasks ticking ``asyncio.sleep(5 ms)``; a sixth holds the loop with an 80 ms
    ``time.sleep`` inside region ``hold`` (or not, with ``hold=False``)."""

    async def ticker():
        with manager.region("tick"):
            for _ in range(ticks):
                await asyncio.sleep(TICK)

    async def blocker():
        await asyncio.sleep(0.05)
        with manager.region("hold"):
            if hold:
                time.sleep(HOLD)

    async def main():
        await asyncio.gather(*(ticker() for _ in range(TICKERS)), blocker())

    asyncio.run(main())


def test_a_blocking_step_is_one_block_that_delayed_every_ticker(manager):
    with _session(manager) as s:
        _scenario(manager)
    r = s.results
    blocks = r.loop_blocks(threshold=0.01)
    # one block: the blocker's step; its own next step became ready after it ended, so the
    # five tickers are all it delayed
    assert len(blocks) == 1, blocks
    b = blocks[0]
    hold = r["hold"][0]
    assert b["region"] == "hold" and b["thread"] == 0 and b["delayed_tasks"] == TICKERS
    assert HOLD <= b["duration"] < HOLD + 0.01
    # the block started inside the run, before the region (same step) and after the run start
    assert 0 < b["start"] <= hold.start_times[0] - r.metadata["start_time_ns"] / 1e9 + 1e-6
    tasks = {t.index: t.name for t in r.tasks[0]}
    assert tasks[b["task"]] == next(t.name for t in r.tasks[0] if t.coro_name.endswith("blocker"))
    # each ticker's deadline fell within one tick after the block began, so it waited for
    # the rest of the block: between duration - 5 ms and duration, plus the small ready waits
    # of the ticks around it (the control below: under 10 ms)
    tick = r["tick"][0]
    ready = tick.ready_wait_times
    assert ready.shape == (TICKERS,) and ready.dtype == np.float64
    assert (ready >= b["duration"] - TICK - 0.001).all(), ready
    assert (ready <= b["duration"] + 0.010).all(), ready
    assert (ready <= tick.await_times).all()
    assert np.array_equal(tick.ready_wait_times_ns, (ready * 1e9).round().astype(np.int64))
    rows = {t["index"]: t for t in r.task_summary()}
    for task, wait in zip(tick.task_ids, tick.ready_wait_times_ns):
        # the ticker's whole life's ready wait: its call's, and what it waited before it
        assert rows[int(task)]["ready_wait_time"] >= wait / 1e9
        assert rows[int(task)]["ready_wait_time"] - wait / 1e9 < 0.002
    assert hold.ready_wait_times[0] == 0.0  # entered and left inside one step
    # the loop's thread: the union of the tickers' ready waits (they overlap during the
    # block), so at least the longest and at most the thread's wall time, far below their sum
    (main,) = r.thread_summary()
    assert ready.max() - 1e-6 <= main["ready_wait_time"] <= main["wall_time"]
    assert main["ready_wait_time"] < ready.max() + 0.02 < ready.sum()


def test_without_the_block_ready_waits_are_small_and_there_is_no_block(manager):
    with _session(manager) as s:
        _scenario(manager, hold=False)
    r = s.results
    assert r.loop_blocks(threshold=0.01) == []
    ready = r["tick"][0].ready_wait_times
    assert (ready >= 0).all() and (ready < 0.010).all(), ready


def test_ready_wait_never_exceeds_await_and_is_zero_off_task_lanes(manager):
    async def worker(i):
        with manager.region("work"):
            for k in range(20):
                with manager.region("step"):
                    await asyncio.sleep(0.001 * (k % 3))
                if k % 7 == i % 7:
                    time.sleep(0.002)

    async def main():
        await asyncio.gather(*(worker(i) for i in range(6)))

    with _session(manager) as s:
        with manager.region("outside"):
            asyncio.run(main())
    for name in ("work", "step", "outside"):
        row = s.results[name][0]
        ready, awaited = row.ready_wait_times_ns, row.await_times_ns
        assert (ready >= 0).all() and (ready <= awaited).all(), name
    assert s.results["outside"][0].ready_wait_times_ns.tolist() == [0]
    assert s.results["work"][0].ready_wait_times_ns.max() > 0


def test_without_track_async_there_is_no_ready_wait(manager):
    with manager.session(
        verbose=False, return_results=True, deactivate_file_output=True, track_threads=True
    ) as s:
        with manager.region("r"):
            pass
    assert s.results["r"][0].ready_wait_times is None
    assert s.results["r"][0].ready_wait_times_ns is None
    assert s.results.thread_summary()[0]["ready_wait_time"] is None
    assert s.results.loop_blocks() == []


def test_a_threshold_below_the_recording_floor_is_refused(manager):
    with _session(manager) as s:
        asyncio.run(asyncio.sleep(0))
    with pytest.raises(ValueError, match="recording floor of loop blocks, 0.001 s"):
        s.results.loop_blocks(threshold=0.0005)
    assert s.results.loop_blocks(threshold=0.001) == []


def test_the_loop_gets_its_deque_back_with_what_it_holds(manager):
    import collections

    loop = asyncio.new_event_loop()
    try:
        with _session(manager):
            manager.get_config().tracker.instrument_loop(loop)
            assert type(loop._ready).__name__ == "ReadyQueue"
            loop.call_soon(print, "x")
            held = list(loop._ready)
        assert type(loop._ready) is collections.deque
        assert list(loop._ready) == held and len(held) == 1
    finally:
        loop._ready.clear()
        loop.close()


def test_hdf5_and_json_keep_ready_waits_and_blocks_and_the_reference_reads_the_file(
    manager, tmp_path
):
    with _session(manager, tmp_path) as s:
        _scenario(manager, ticks=20)
    mem = s.results
    path = tmp_path / "run.h5"
    sp.export_json(mem, tmp_path / "run.json", verbose=False)
    for back in (read_h5(path), sp.read_json(tmp_path / "run.json")):
        for name in ("tick", "hold"):
            assert np.array_equal(
                mem[name][0].ready_wait_times_ns, back[name][0].ready_wait_times_ns
            )
        assert back.loop_blocks(threshold=0.01) == mem.loop_blocks(threshold=0.01)
        assert [t["ready_wait_time"] for t in back.task_summary()] == [
            t["ready_wait_time"] for t in mem.task_summary()
        ]
    code = (
        "import json, sys, scope_profiler as sp\n"
        "r = sp.read_h5(sys.argv[1]); t = r['tick'][0]\n"
        "print(json.dumps({'n': int(t.num_calls), 'await': t.await_times_ns.tolist(),\n"
        "  'tasks': len(r.tasks[0])}))\n"
    )
    out = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    ref = json.loads(out.stdout)
    tick = mem["tick"][0]
    assert ref == {"n": TICKERS, "await": tick.await_times_ns.tolist(), "tasks": len(mem.tasks[0])}


def test_pickled_results_keep_ready_waits_and_blocks(manager):
    with _session(manager) as s:
        _scenario(manager, ticks=20)
    mem = s.results
    back = pickle.loads(pickle.dumps(mem, protocol=5))
    (block,) = back.loop_blocks(threshold=0.01)
    assert block == mem.loop_blocks(threshold=0.01)[0] and block["region"] == "hold"
    for name in ("tick", "hold"):
        assert np.array_equal(mem[name][0].ready_wait_times_ns, back[name][0].ready_wait_times_ns)
    assert (back["tick"][0].ready_wait_times >= block["duration"] - TICK - 0.001).all()
    assert [t["ready_wait_time"] for t in back.task_summary()] == [
        t["ready_wait_time"] for t in mem.task_summary()
    ]
    assert back.thread_summary()[0]["ready_wait_time"] == mem.thread_summary()[0]["ready_wait_time"]
    assert back.thread_summary()[0]["ready_wait_time"] >= block["duration"] - TICK


def test_a_file_the_reference_wrote_has_no_ready_wait(tmp_path):
    path = tmp_path / "ref.h5"
    code = (
        "import asyncio, sys, scope_profiler as sp\n"
        "m = sp.ProfileManager()\n"
        "m.setup(track_async=True, file_path=sys.argv[1])\n"
        "async def job():\n"
        "    with m.region('job'):\n"
        "        await asyncio.sleep(0.01)\n"
        "async def main():\n"
        "    await asyncio.gather(job(), job())\n"
        "asyncio.run(main())\n"
        "m.finalize(verbose=False)\n"
    )
    out = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    r = read_h5(path)
    assert r["job"][0].await_times_ns is not None
    assert r["job"][0].ready_wait_times is None and r["job"][0].ready_wait_times_ns is None
    assert r.loop_blocks() == []
    assert all(t["ready_wait_time"] is None for t in r.task_summary())


def test_uvloop_calls_have_no_ready_wait(manager):
    uvloop = pytest.importorskip("uvloop")

    async def fetch():
        with manager.region("fetch"):
            await asyncio.sleep(0.01)
            await asyncio.sleep(0.01)

    async def main():
        await asyncio.gather(fetch(), fetch())

    loop = uvloop.new_event_loop()
    try:
        with _session(manager) as s:
            manager.get_config().tracker.instrument_loop(loop)
            loop.run_until_complete(main())
    finally:
        loop.close()
    f = s.results["fetch"][0]
    assert (f.await_times > 0.015).all()
    # the loop cannot tell when its tasks became ready: not known, never a number
    assert f.ready_wait_times_ns.tolist() == [-1, -1]
    assert all(math.isnan(x) for x in f.ready_wait_times)
    rows = [t for t in s.results.task_summary() if t["coro_name"].endswith("fetch")]
    assert len(rows) == 2 and all(t["ready_wait_time"] is None for t in rows)
    assert s.results.thread_summary()[0]["ready_wait_time"] is None
    assert s.results.thread_summary()[0]["idle_time"] is None


def test_a_uvloop_block_does_not_say_how_many_tasks_it_delayed(manager):
    uvloop = pytest.importorskip("uvloop")

    async def tick():
        for _ in range(10):
            await asyncio.sleep(0.003)

    async def hold():
        await asyncio.sleep(0.005)
        with manager.region("hold"):
            time.sleep(0.03)

    async def main():
        await asyncio.gather(tick(), tick(), hold())

    loop = uvloop.new_event_loop()
    try:
        with _session(manager) as s:
            manager.get_config().tracker.instrument_loop(loop)
            loop.run_until_complete(main())
    finally:
        loop.close()
    (block,) = s.results.loop_blocks(threshold=0.02)
    # the tickers were kept waiting, but uvloop does not say when they became ready
    assert block["region"] == "hold" and block["delayed_tasks"] is None, block


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.eager_task_factory is 3.12+")
def test_eager_tasks_have_their_ready_wait(manager):
    async def ticker():
        with manager.region("tick"):
            for _ in range(10):
                await asyncio.sleep(TICK)

    async def blocker():
        await asyncio.sleep(0.012)
        with manager.region("hold"):
            time.sleep(0.04)

    async def main():
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
        await asyncio.gather(ticker(), ticker(), blocker())

    with _session(manager) as s:
        asyncio.run(main())
    ready = s.results["tick"][0].ready_wait_times
    # the first step ran eagerly at creation (ready then: no wait); the block delayed both
    assert (ready >= 0.04 - TICK - 0.001).all() and (ready < 0.04 + 0.010).all(), ready
    (b,) = s.results.loop_blocks(threshold=0.02)
    assert b["region"] == "hold" and b["delayed_tasks"] == 2


SCENARIO_SCRIPT = """
import asyncio, time
from scope_profiler import ProfileManager

async def ticker():
    with ProfileManager.profile_region("tick"):
        for _ in range(20):
            await asyncio.sleep(0.005)

async def blocker():
    await asyncio.sleep(0.05)
    with ProfileManager.profile_region("hold"):
        time.sleep(0.08)

async def main():
    await asyncio.gather(*(ticker() for _ in range(5)), blocker())

asyncio.run(main())
"""


def test_run_and_summary_print_the_event_loop_blocked_section(tmp_path):
    from helpers import loop_block_section, run_and_summarise

    for text in run_and_summarise(SCENARIO_SCRIPT, tmp_path, "--track-async"):
        title, line = loop_block_section(text)
        assert title.endswith("event loop blocked (1 block(s) of 10.0 ms or more)"), text
        row = line.split()
        # blocked (value, unit), at s, lane (Task-7 (blocker) on MainThread), region, delayed
        assert row[1] == "ms" and 80 <= float(row[0]) < 90 and row[-2:] == ["hold", "5"], text
        assert "(blocker)" in line, text


def test_a_task_awaiting_late_tasks_is_not_late_itself(manager):
    """Three tasks wake together after 50 ms and each holds the loop 10 ms: the second waits
    10 ms, the third 20. `main`, awaiting their `gather`, is ready only when the last one
    ends (its done callback completes the gather): no ready wait of its own, though the
    task whose completion woke it ran 20 ms late."""

    async def fetch():
        with manager.region("fetch"):
            await asyncio.sleep(0.05)
            time.sleep(0.01)

    async def main():
        with manager.region("main"):
            await asyncio.gather(fetch(), fetch(), fetch())

    with _session(manager) as s:
        asyncio.run(main())
    r = s.results
    waits = sorted(r["fetch"][0].ready_wait_times)
    assert waits[0] < 0.003 and 0.009 <= waits[1] < 0.016 and 0.019 <= waits[2] < 0.030, waits
    assert r["main"][0].ready_wait_times[0] < 0.002, r["main"][0].ready_wait_times
    thread = next(t for t in r.thread_summary() if t["name"] == "MainThread")
    # the union of the three fetches' waits: the third's 20 ms
    assert waits[2] <= thread["ready_wait_time"] < waits[2] + 0.003, thread


def test_every_block_a_task_waited_through_counts_it(manager):
    """80 tasks woken at once by one event each hold the loop 1.5 ms in turn: block k kept
    the 79 - k tasks after it waiting, however many blocks each of them waited through."""
    n = 80

    async def job(event):
        await event.wait()
        time.sleep(0.0015)

    async def main():
        event = asyncio.Event()
        jobs = [asyncio.create_task(job(event)) for _ in range(n)]
        await asyncio.sleep(0.005)
        event.set()
        await asyncio.gather(*jobs)

    with _session(manager) as s:
        asyncio.run(main())
    r = s.results
    # main's first step, creating the 80 tasks, may itself hold the loop a millisecond
    jobs = {t["index"] for t in r.task_summary() if t["coro_name"].endswith("job")}
    blocks = sorted(
        (b for b in r.loop_blocks(threshold=0.001) if b["task"] in jobs), key=lambda b: b["start"]
    )
    assert len(blocks) == n
    assert [b["delayed_tasks"] for b in blocks] == list(range(n - 1, -1, -1))


def test_loop_blocks_refuse_a_rank_the_run_does_not_have(manager):
    with _session(manager) as s:
        _scenario(manager, ticks=2)
    for rank in (1, -1):
        with pytest.raises(ValueError, match=f"rank {rank} is not in this run: it has 1 rank"):
            s.results.loop_blocks(rank=rank)


IDLE = 0.100
BUSY = 0.050


def _idle_then_busy(manager, sleepers=1):
    """``sleepers`` tasks each sleep 100 ms at once (the loop waits with nothing ready), then
    one holds the loop 50 ms with ``time.sleep`` (busy, not idle)."""

    async def sleeper():
        with manager.region("sleep"):
            await asyncio.sleep(IDLE)

    async def main():
        await asyncio.gather(*(sleeper() for _ in range(sleepers)))
        with manager.region("busy"):
            time.sleep(BUSY)

    with manager.region("loop"):
        asyncio.run(main())


@pytest.mark.parametrize("sleepers", [1, 4])
def test_the_loop_thread_idle_time_is_its_wait_with_nothing_ready(manager, sleepers):
    with _session(manager) as s:
        _idle_then_busy(manager, sleepers)
    r = s.results
    row = next(t for t in r.thread_summary() if t["name"] == "MainThread")
    # concurrent sleeps are one wait of the loop, not one per task
    assert IDLE - 0.002 <= row["idle_time"] <= IDLE + 0.030, row
    # the busy step is task-step time, not idle; the two never overlap
    assert row["task_step_time"] >= BUSY
    assert row["idle_time"] + row["task_step_time"] <= r["loop"][0].durations[0] + 1e-6
    # the idle wait is inside the call that runs the loop, so part of its held time
    assert row["held_time"] >= row["idle_time"] + row["task_step_time"] - 1e-6


def test_without_an_instrumented_loop_there_is_no_idle_time(manager):
    with manager.session(
        verbose=False, return_results=True, deactivate_file_output=True, track_threads=True
    ) as s:
        with manager.region("r"):
            time.sleep(0.01)
    assert s.results.thread_summary()[0]["idle_time"] is None


def test_idle_time_survives_hdf5_and_json_and_shows_in_the_thread_table(manager, tmp_path):
    from helpers import run_cli

    with _session(manager, tmp_path) as s:
        _idle_then_busy(manager)
    idle = next(t["idle_time"] for t in s.results.thread_summary() if t["name"] == "MainThread")
    sp.export_json(s.results, tmp_path / "run.json", verbose=False)
    for back in (read_h5(tmp_path / "run.h5"), sp.read_json(tmp_path / "run.json")):
        rows = {t["name"]: t for t in back.thread_summary()}
        assert rows["MainThread"]["idle_time"] == idle
    threads = run_cli("threads", tmp_path / "run.h5")
    assert threads.returncode == 0, threads.stderr
    lines = threads.stdout.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("index"))
    assert header.split()[-3:] == ["ready", "wait", "idle"], threads.stdout
    main = next(line for line in lines if " MainThread " in line)
    value, unit = main.split()[-2:]
    # printed to three significant digits
    assert unit == "ms" and float(value) == pytest.approx(idle * 1e3, rel=5e-3), main
