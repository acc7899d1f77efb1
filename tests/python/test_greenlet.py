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
