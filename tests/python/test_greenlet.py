"""track_async: greenlets as lanes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

greenlet = pytest.importorskip("greenlet")

from scope_profiler import ProfileManager  # noqa: E402


def _session(m, **kw):
    kw.setdefault("deactivate_file_output", True)
    return m.session(verbose=False, return_results=True, track_async=True, **kw)


def _ping_pong(manager, rounds=3, pause=0.01):
    """Two greenlets taking turns inside a region held across each switch."""

    def body(n):
        for i in range(n):
            with manager.region("g_work"):
                time.sleep(pause)
                greenlet.getcurrent().parent.switch(i)

    g1, g2 = greenlet.greenlet(body), greenlet.greenlet(body)
    with manager.region("driver"):
        g1.switch(rounds)
        g2.switch(rounds)
        while not (g1.dead and g2.dead):
            for g in (g1, g2):
                if not g.dead:
                    g.switch()


def test_greenlets_on_two_threads_are_lanes_on_both(manager):
    with _session(manager) as s:
        _ping_pong(manager)
        t = threading.Thread(target=_ping_pong, args=(manager,), name="other")
        t.start()
        t.join()
    r = s.results
    g = r["g_work"][0]
    assert g.num_calls == 12
    threads = {t.index: t.name for t in r.threads[0]}
    lanes_by_thread = {}
    for task, thread in zip(g.task_ids.tolist(), g.thread_ids.tolist()):
        lanes_by_thread.setdefault(threads[thread], set()).add(task)
    assert {k: len(v) for k, v in lanes_by_thread.items()} == {"MainThread": 2, "other": 2}
    tasks = r.tasks[0]
    assert len(tasks) == 4 and all(t.kind == "greenlet" for t in tasks)
    assert all(t.coro_name == "_ping_pong.<locals>.body" for t in tasks)
    assert all(t.name.startswith("greenlet-") and t.done and t.steps == 4 for t in tasks)
    other = next(i for i, n in threads.items() if n == "other")
    assert sorted(t.thread_index for t in tasks) == [0, 0, other, other]
    # the region held across a switch awaits while the other greenlet sleeps
    assert sum(a >= 0.008 for a in g.await_times) >= 8
    # the driver runs on the main greenlet = the thread's bare lane
    assert r["driver"][0].task_ids.tolist() == [-1, -1]
    r.call_stack()  # no NestingError
    labels = {r.lane_label(int(t)) for t in g.task_ids}
    assert any(lbl.endswith("(body) on other") for lbl in labels)


def test_region_across_first_switch_is_reported(manager):
    def child():
        with manager.region("child"):
            greenlet.getcurrent().parent.switch()

    with _session(manager) as s:
        with manager.region("outer"):  # opened on the main greenlet before any switch
            g = greenlet.greenlet(child)
            g.switch()
            g.switch()
    r = s.results
    assert r["outer"][0].num_calls == 1 and r["outer"][0].task_ids.tolist() == [-1]
    assert r["scope_profiler.session"][0].num_calls == 1
    assert r["child"][0].num_calls == 1 and r["child"][0].task_ids.tolist() == [0]
    assert r.tasks[0][0].coro_name.endswith("child")


def test_greenlet_subclass_and_named_target(manager):
    class Worker(greenlet.greenlet):
        name = "worker-1"

        def run(self):
            with manager.region("w"):
                pass

    with _session(manager) as s:
        Worker().switch()
    (t,) = s.results.tasks[0]
    assert t.name == "worker-1" and t.coro_name.endswith("Worker.run") and t.done


def test_settrace_chained_and_restored(manager):
    seen = []

    def mine(event, args):
        seen.append(event)

    old = greenlet.settrace(mine)
    try:
        with _session(manager):
            assert greenlet.gettrace() is not mine
            greenlet.greenlet(lambda: None).switch()
        assert greenlet.gettrace() is mine
        assert "switch" in seen  # our trace forwarded to the previous one
    finally:
        greenlet.settrace(old)


def test_two_managers_release_in_any_order():
    a, b = ProfileManager(), ProfileManager()
    before = greenlet.gettrace()
    sa, sb = _session(a), _session(b)
    sa.__enter__()
    sb.__enter__()

    def body():
        with a.region("x"), b.region("x"):
            greenlet.getcurrent().parent.switch()

    g = greenlet.greenlet(body)
    g.switch()
    sa.__exit__(None, None, None)
    assert greenlet.gettrace() is not before  # b still follows switches
    g.switch()
    sb.__exit__(None, None, None)
    assert greenlet.gettrace() is before
    assert sb.results["x"][0].task_ids.tolist() == [0]
    a.reset()
    b.reset()


def test_gevent_monkey_patched(tmp_path):
    pytest.importorskip("gevent")
    code = r"""
from gevent import monkey; monkey.patch_all()
import json, time, gevent
from scope_profiler import ProfileManager as PM
def job(i):
    with PM.profile_region("job"):
        time.sleep(0.05)
with PM.session(file_path={!r}, track_async=True, return_results=True, verbose=False) as s:
    gevent.joinall([gevent.spawn(job, i) for i in range(3)])
r = s.results; j = r["job"][0]
print(json.dumps({{"tasks": j.task_ids.tolist(), "await": j.await_times.tolist(),
    "dur": j.durations.tolist(), "names": [[t.name, t.coro_name, t.done] for t in r.tasks[0]],
    "root": r["scope_profiler.session"][0].num_calls}}))
""".format(str(tmp_path / "gv.h5"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(set(res["tasks"])) == 3 and min(res["tasks"]) >= 0
    # the three sleeps overlap: each call is almost all await
    assert all(a >= 0.04 for a in res["await"])
    assert all(d - a < 0.02 for d, a in zip(res["dur"], res["await"]))
    jobs = [n for n in res["names"] if n[1] == "job"]
    assert [n[0] for n in jobs] == ["Greenlet-0", "Greenlet-1", "Greenlet-2"] and all(
        n[2] for n in jobs
    )
    assert res["root"] == 1


HOLD = 0.06


def _gevent_scenario(manager, hold=True, ticks=40):
    """Four greenlets ticking ``gevent.sleep(2 ms)``; a fifth holds the hub with a 60 ms
    ``time.sleep`` inside region ``hold`` (or not, with ``hold=False``)."""
    import gevent

    def ticker():
        with manager.region("tick"):
            for _ in range(ticks):
                gevent.sleep(0.002)

    def blocker():
        gevent.sleep(0.02)
        with manager.region("hold"):
            if hold:
                time.sleep(HOLD)

    gevent.joinall([*(gevent.spawn(ticker) for _ in range(4)), gevent.spawn(blocker)])


def test_a_greenlet_holding_the_gevent_hub_is_one_loop_block(manager):
    pytest.importorskip("gevent")
    with _session(manager) as s:
        _gevent_scenario(manager)
    r = s.results
    blocks = r.loop_blocks(threshold=0.01)
    assert len(blocks) == 1, blocks
    (b,) = blocks
    (blocker,) = [t for t in r.tasks[0] if t.coro_name.endswith("blocker")]
    assert b["task"] == blocker.index and b["thread"] == 0 and b["region"] == "hold"
    assert 0.055 <= b["duration"] < 0.09, b
    # the hub does not tell when the tickers became ready
    assert b["delayed_tasks"] is None
    # the block is the region's stretch: it starts with the step entering it
    hold = r["hold"][0]
    region_start = hold.start_times[0] - r.metadata["start_time_ns"] / 1e9
    assert abs(b["start"] - region_start) < 0.002 and b["duration"] >= hold.durations[0]


def test_greenlets_taking_turns_through_the_hub_are_no_block(manager):
    pytest.importorskip("gevent")
    with _session(manager) as s:
        _gevent_scenario(manager, hold=False)
    r = s.results
    assert r.loop_blocks(threshold=0.01) == []
    assert len(r["tick"][0].durations) == 4


def test_the_hubs_idle_wait_is_no_block(manager):
    gevent = pytest.importorskip("gevent")
    with _session(manager) as s:
        with manager.region("nap"):
            gevent.sleep(0.1)
            gevent.sleep(0.05)
    r = s.results
    assert r["nap"][0].durations[0] >= 0.15
    assert r.loop_blocks(threshold=0.001) == []


def test_the_main_greenlet_blocks_the_hub_only_once_the_hub_resumed_it(manager):
    gevent = pytest.importorskip("gevent")

    def ticker():
        for _ in range(30):
            gevent.sleep(0.002)

    with _session(manager) as s:
        with manager.region("before"):
            time.sleep(0.03)  # before any gevent call: no loop to block
        tickers = [gevent.spawn(ticker) for _ in range(3)]
        gevent.sleep(0.01)  # the hub runs the tickers, then gives main back
        with manager.region("main_hold"):
            time.sleep(0.04)  # the tickers are due meanwhile
        gevent.joinall(tickers)
    r = s.results
    blocks = r.loop_blocks(threshold=0.01)
    assert [(b["task"], b["region"], b["delayed_tasks"]) for b in blocks] == [
        (-1, "main_hold", None)
    ], blocks
    assert 0.04 <= blocks[0]["duration"] < 0.07


def test_a_gevent_block_survives_the_file(manager, tmp_path):
    pytest.importorskip("gevent")
    from scope_profiler import read_h5

    with _session(manager, file_path=str(tmp_path / "run.h5"), deactivate_file_output=False) as s:
        _gevent_scenario(manager, ticks=20)
    mem = s.results.loop_blocks(threshold=0.01)
    assert len(mem) == 1 and mem[0]["delayed_tasks"] is None
    assert read_h5(tmp_path / "run.h5").loop_blocks(threshold=0.01) == mem


GEVENT_SCRIPT = """
import time
import gevent
from scope_profiler import ProfileManager

def ticker():
    for _ in range(20):
        gevent.sleep(0.002)

def blocker():
    gevent.sleep(0.02)
    with ProfileManager.profile_region("hold"):
        time.sleep(0.06)

gevent.joinall([*(gevent.spawn(ticker) for _ in range(4)), gevent.spawn(blocker)])
"""


def test_run_and_summary_print_a_gevent_block(tmp_path):
    pytest.importorskip("gevent")
    from helpers import loop_block_section, run_and_summarise

    for text in run_and_summarise(GEVENT_SCRIPT, tmp_path, "--track-async"):
        title, line = loop_block_section(text)
        assert title.endswith("event loop blocked (1 block(s) of 10.0 ms or more)"), text
        row = line.split()
        # blocked (value, unit), at s, lane (Greenlet-4 (blocker) on MainThread), region, delayed
        assert row[1] == "ms" and 55 <= float(row[0]) < 90 and row[-2:] == ["hold", "?"], text
        assert "(blocker) on MainThread" in line, text
