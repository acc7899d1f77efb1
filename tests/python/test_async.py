"""track_async: asyncio tasks as lanes with per-call await time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scope_profiler as sp
from helpers import async_session as _session
from helpers import reference_python
from scope_profiler import ProfileManager, read_h5


def _spin(seconds):
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        pass


# --------------------------------------------------------------------------- imports
def test_import_costs_nothing_and_track_threads_imports_neither():
    code = (
        "import sys, scope_profiler as sp\n"
        "assert 'asyncio' not in sys.modules and 'greenlet' not in sys.modules\n"
        "m = sp.ProfileManager(); m.setup(track_threads=True, deactivate_file_output=True)\n"
        "assert 'asyncio' not in sys.modules and 'greenlet' not in sys.modules\n"
        "m.setup(track_async=True, deactivate_file_output=True, replace=True)\n"
        "assert 'asyncio' in sys.modules and m.get_config().track_threads\n"
        "m.reset(); print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --------------------------------------------------------------------------- await time
def test_spin_then_sleep_await_and_held_time(manager):
    async def job():
        with manager.region("io"):
            _spin(0.02)
            await asyncio.sleep(0.3)

    with _session(manager) as s:
        asyncio.run(job())
    io = s.results["io"][0]
    assert io.num_calls == 1
    assert io.task_ids[0] >= 0
    assert io.await_times[0] >= 0.25
    held = (io.durations - io.await_times)[0]
    assert 0.015 <= held < 0.15
    assert io.total_await_duration == pytest.approx(io.await_times[0])
    assert io.await_times_ns.dtype == np.int64
    root = s.results["scope_profiler.session"][0]
    assert root.task_ids.tolist() == [-1] and root.await_times_ns.tolist() == [0]


def test_three_gathered_fetches_are_three_lanes(manager):
    async def fetch(i):
        with manager.region("fetch"):
            await asyncio.sleep(0.05 + 0.01 * i)
            with manager.region("parse"):
                _spin(0.002)

    async def main():
        with manager.region("crawl"):
            await asyncio.gather(*(fetch(i) for i in range(3)))

    with _session(manager) as s:
        asyncio.run(main())
    r = s.results
    fetch_ = r["fetch"][0]
    assert fetch_.num_calls == 3 and len(set(fetch_.task_ids.tolist())) == 3
    assert all(a >= 0.04 for a in fetch_.await_times)
    crawl = r["crawl"][0]
    assert crawl.await_times[0] >= 0.06  # main waits for the gather
    # no NestingError: the overlapping fetches are on their own lanes
    calls = r.call_stack()
    assert len(calls) == 1 + 1 + 3 + 3
    by_id = {c["call_id"]: c for c in calls}
    parse_parents = {by_id[c["parent"]]["name"] for c in calls if c["name"] == "parse"}
    assert parse_parents == {"fetch"}
    fetch_parents = [c["parent"] for c in calls if c["name"] == "fetch"]
    assert fetch_parents == [None, None, None]  # roots of their task lanes
    assert len({c["lane"] for c in calls if c["name"] == "fetch"}) == 3
    labels = {r.lane_label(int(t)) for t in fetch_.task_ids}
    assert all(lbl.endswith("(fetch) on MainThread") and lbl.startswith("Task-") for lbl in labels)
    assert r["parse"][0].exclusive_durations.sum() > 0
    # fetch exclusive excludes its own parse only
    assert fetch_.exclusive_duration == pytest.approx(
        fetch_.total_duration - r["parse"][0].total_duration
    )
    # thread_summary: held = the session root outside the task steps it ran, plus those
    # steps (region time is the wall-clock union of the top-level calls, which the session
    # root covers, so it never exceeds the wall time); the task roots' awaits summed
    # (crawl's and the fetches') are `task_await_time_sum`
    row = r.thread_summary()[0]
    root = r["scope_profiler.session"][0]
    root_held = root.total_duration - root.task_step_times_ns[0] / 1e9
    assert row["held_time"] == pytest.approx(root_held + row["task_step_time"])
    assert row["task_await_time_sum"] == pytest.approx(
        crawl.total_await_duration + fetch_.total_await_duration
    )
    assert row["region_time"] == pytest.approx(r["scope_profiler.session"][0].total_duration)
    assert row["region_time"] <= row["wall_time"]
    assert row["num_calls"] == 8


def test_interleaved_tasks_close_their_own_scopes(manager):
    order = []

    async def a(ev_a, ev_b):
        with manager.region("step"):
            order.append("a in")
            ev_b.set()
            await ev_a.wait()
        order.append("a out")

    async def b(ev_a, ev_b):
        await ev_b.wait()
        with manager.region("step"):
            order.append("b in")
            await asyncio.sleep(0.02)
        order.append("b out")
        ev_a.set()

    async def main():
        ev_a, ev_b = asyncio.Event(), asyncio.Event()
        await asyncio.gather(a(ev_a, ev_b), b(ev_a, ev_b))

    with _session(manager) as s:
        asyncio.run(main())
    assert order == ["a in", "b in", "b out", "a out"]
    step = s.results["step"][0]
    assert step.num_calls == 2
    # a's call (entered first) ends last: it contains b's call in time but not on its lane
    first, second = np.argsort(step.start_times_ns)
    assert step.end_times_ns[first] > step.end_times_ns[second]
    assert step.task_ids[first] != step.task_ids[second]
    assert [c["parent"] for c in s.results.call_stack() if c["name"] == "step"] == [None, None]


# --------------------------------------------------------------------------- task table
def test_task_table_names_threads_steps_done(manager):
    async def worker():
        await asyncio.sleep(0.01)
        with manager.region("w"):
            await asyncio.sleep(0.01)

    async def forever():
        await asyncio.sleep(60)

    async def main():
        t = asyncio.create_task(worker(), name="fetcher")
        late = asyncio.create_task(worker())
        late.set_name("renamed")
        c = asyncio.create_task(forever(), name="victim")
        await asyncio.sleep(0)
        c.cancel()
        await asyncio.gather(t, late, return_exceptions=True)
        with pytest.raises(asyncio.CancelledError):
            await c

    with _session(manager) as s:
        asyncio.run(main())
        loop = asyncio.new_event_loop()  # a task that never runs
        never = loop.create_task(worker(), name="never")
        never_name = "never"
    never.get_coro().close()  # no step, no "never awaited" warning
    never._log_destroy_pending = False
    tasks = {t.name: t for t in s.results.tasks[0]}
    assert {"fetcher", "renamed", "victim", never_name} <= set(tasks)
    f = tasks["fetcher"]
    assert f.kind == "task" and f.coro_name.endswith("worker") and f.thread_index == 0
    assert f.steps >= 3 and f.done and f.running_time >= 0 and f.awaiting_time >= 0.015
    assert f.created_time >= 0 and f.done_time >= f.created_time
    assert tasks["victim"].done and tasks["victim"].done_time is not None
    assert tasks["never"].steps == 0 and not tasks["never"].done
    main_task = s.results.tasks[0][0]
    assert main_task.coro_name.endswith("main")
    assert [t.index for t in s.results.tasks[0]] == list(range(len(s.results.tasks[0])))
    loop.close()


def test_coroutine_wrapper_is_transparent(manager):
    seen = {}

    async def inner():
        await asyncio.sleep(0.01)

    async def user_coro():
        await inner()

    async def main():
        t = asyncio.create_task(user_coro())
        await asyncio.sleep(0)
        coro = t.get_coro()
        seen["qualname"] = coro.__qualname__
        seen["name"] = coro.__name__
        seen["code"] = coro.cr_code.co_name
        seen["frame"] = coro.cr_frame.f_code.co_name
        seen["await"] = coro.cr_await is not None
        seen["stack"] = [f.f_code.co_name for f in t.get_stack()]
        import io

        buf = io.StringIO()
        t.print_stack(file=buf)
        seen["printed"] = buf.getvalue()
        seen["repr"] = repr(t)
        await t

    with _session(manager):
        asyncio.run(main())
    assert seen["qualname"].endswith("user_coro") and seen["name"] == "user_coro"
    assert seen["code"] == "user_coro" and seen["frame"] == "user_coro" and seen["await"]
    assert seen["stack"] == ["user_coro"]
    assert "user_coro" in seen["printed"]
    assert "user_coro() running at" in seen["repr"]


def test_c_task_is_used():
    assert asyncio.Task is getattr(sys.modules.get("_asyncio"), "Task", None)


# --------------------------------------------------------------------------- loops
def _loop_variants(manager):
    async def job():
        with manager.region("job"):
            await asyncio.sleep(0.005)

    results = {}

    # run_until_complete on a loop created after setup
    loop = asyncio.new_event_loop()
    loop.run_until_complete(job())
    loop.close()
    # a bare run_forever
    loop = asyncio.new_event_loop()
    loop.call_soon(lambda: loop.create_task(job()).add_done_callback(lambda _: loop.stop()))
    loop.run_forever()
    loop.close()
    # a loop in another thread
    t = threading.Thread(target=lambda: asyncio.run(job()), name="loop-thread")
    t.start()
    t.join()
    return results


def test_every_way_of_running_a_loop_is_covered(manager):
    with _session(manager) as s:
        asyncio.run(asyncio.sleep(0))
        _loop_variants(manager)
    job = s.results["job"][0]
    assert job.num_calls == 3
    assert (job.task_ids >= 0).all() and len(set(job.task_ids.tolist())) == 3
    threads = {t.index: t.name for t in s.results.threads[0]}
    assert sorted(threads[i] for i in job.thread_ids) == ["MainThread", "MainThread", "loop-thread"]
    by_index = {t.index: t for t in s.results.tasks[0]}
    loop_thread = next(i for i, n in threads.items() if n == "loop-thread")
    assert any(by_index[int(t)].thread_index == loop_thread for t in job.task_ids)


def test_setup_inside_running_loop_instruments_it(manager):
    async def job():
        with manager.region("job"):
            await asyncio.sleep(0.01)

    async def main():
        manager.setup(track_async=True, deactivate_file_output=True)
        assert asyncio.get_running_loop().get_task_factory() is not None
        await asyncio.gather(job(), job())
        return manager.finalize(verbose=False, return_results=True)

    r = asyncio.run(main())
    assert r["job"][0].num_calls == 2 and (r["job"][0].task_ids >= 0).all()
    manager.reset()


def test_existing_task_factory_is_chained_and_restored(manager):
    made = []

    def factory(loop, coro, **kw):
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kw)

    async def job():
        with manager.region("job"):
            await asyncio.sleep(0.001)

    loop = asyncio.new_event_loop()
    loop.set_task_factory(factory)
    with _session(manager) as s:
        loop.run_until_complete(job())
        assert loop.get_task_factory() is not factory
    assert loop.get_task_factory() is factory  # restored exactly
    loop.close()
    assert len(made) >= 1
    assert s.results["job"][0].task_ids[0] >= 0


def test_instrument_loop_by_hand_uvloop(manager):
    uvloop = pytest.importorskip("uvloop")

    async def fetch():
        with manager.region("fetch"):
            await asyncio.sleep(0.05)

    async def main():
        await asyncio.gather(fetch(), fetch(), fetch())

    loop = uvloop.new_event_loop()
    assert not isinstance(loop, asyncio.BaseEventLoop)
    with _session(manager) as s:
        manager.get_config().tracker.instrument_loop(loop)
        manager.get_config().tracker.instrument_loop(loop)  # idempotent
        loop.run_until_complete(main())
    assert loop.get_task_factory() is None
    loop.close()
    f = s.results["fetch"][0]
    assert f.num_calls == 3 and len(set(f.task_ids.tolist())) == 3
    assert (f.await_times >= 0.04).all()


def test_instrument_loop_needs_tracking(manager):
    manager.setup(deactivate_file_output=True)
    with pytest.raises(AttributeError):
        manager.get_config().tracker.instrument_loop(asyncio.new_event_loop())


# --------------------------------------------------------------------------- checkpoints
def test_checkpoint_then_call_outside_task_has_no_task(manager, tmp_path):
    async def job():
        for _ in range(4):
            with manager.region("r"):
                await asyncio.sleep(0.002)

    manager.setup(track_async=True, file_path=str(tmp_path / "c.h5"))
    asyncio.run(job())
    first = manager.finalize(verbose=False, return_results=True)
    assert (first["r"][0].task_ids >= 0).all()
    with manager.region("r"):
        pass
    second = manager.finalize(verbose=False, return_results=True)
    assert second["r"][0].task_ids.tolist() == [-1]
    assert second["r"][0].await_times_ns.tolist() == [0]
    assert len(second.tasks[0]) == len(first.tasks[0])  # tables are never reset
    manager.reset()


# --------------------------------------------------------------------------- hooks
def test_hooks_restored_after_session_any_order():
    before = (
        asyncio.BaseEventLoop.__dict__["run_forever"],
        asyncio.BaseEventLoop.__dict__["create_task"],
        threading.getprofile(),
    )
    a, b = ProfileManager(), ProfileManager()
    sa = a.session(
        verbose=False, track_async=True, deactivate_file_output=True, return_results=True
    )
    sb = b.session(
        verbose=False, track_async=True, deactivate_file_output=True, return_results=True
    )
    sa.__enter__()
    sb.__enter__()

    async def job(m):
        with m.region("j"):
            await asyncio.sleep(0.001)

    async def main():
        await asyncio.gather(job(a), job(b))

    asyncio.run(main())
    sa.__exit__(None, None, None)  # not LIFO: b keeps recording
    assert asyncio.BaseEventLoop.__dict__["run_forever"] is not before[0]
    asyncio.run(main())
    sb.__exit__(None, None, None)
    after = (
        asyncio.BaseEventLoop.__dict__["run_forever"],
        asyncio.BaseEventLoop.__dict__["create_task"],
        threading.getprofile(),
    )
    assert after == before
    assert sa.results["j"][0].num_calls == 1 and (sa.results["j"][0].task_ids >= 0).all()
    assert sb.results["j"][0].num_calls == 2 and (sb.results["j"][0].task_ids >= 0).all()
    a.reset()
    b.reset()


# --------------------------------------------------------------------------- HDF5
def test_hdf5_round_trip_and_reference_reads_it(manager, tmp_path):
    async def fetch(i):
        with manager.region("fetch"):
            await asyncio.sleep(0.01 * (i + 1))

    async def main():
        await asyncio.gather(*(fetch(i) for i in range(3)))

    with _session(manager, tmp_path) as s:
        asyncio.run(main())
    path = tmp_path / "run.h5"
    mem, disk = s.results, read_h5(path)
    for name in mem.region_names:
        a, b = mem[name][0], disk[name][0]
        for col in ("start_times_ns", "end_times_ns", "thread_ids", "task_ids", "await_times_ns"):
            assert np.array_equal(getattr(a, col), getattr(b, col)), (name, col)
    assert [t._to_tuple() if hasattr(t, "_to_tuple") else repr(t) for t in mem.tasks[0]] == [
        t._to_tuple() if hasattr(t, "_to_tuple") else repr(t) for t in disk.tasks[0]
    ]
    code = (
        "import json, sys, scope_profiler as sp\n"
        "r = sp.read_h5(sys.argv[1]); f = r['fetch'][0]\n"
        "print(json.dumps({'task_ids': f.task_ids.tolist(), 'await': f.await_times_ns.tolist(),\n"
        "  'tasks': [[t.index, t.name, t.coro_name, t.steps] for t in r.tasks[0]],\n"
        "  'labels': [r.lane_label(int(t)) for t in f.task_ids]}))\n"
    )
    out = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    ref = json.loads(out.stdout)
    f = mem["fetch"][0]
    assert ref["task_ids"] == f.task_ids.tolist() and ref["await"] == f.await_times_ns.tolist()
    assert ref["tasks"] == [[t.index, t.name, t.coro_name, t.steps] for t in mem.tasks[0]]
    assert all(lbl.endswith("(fetch) on MainThread") for lbl in ref["labels"])


def test_speedscope_profiles_are_lanes(manager, tmp_path):
    import scope_profiler as sp
    from helpers import speedscope_import

    async def fetch(d):
        with manager.region("fetch"):
            await asyncio.sleep(d)

    async def main():
        await asyncio.gather(fetch(0.01), fetch(0.02))

    with _session(manager) as s:
        asyncio.run(main())
    written = sp.export_speedscope(s.results, tmp_path / "a.speedscope.json", verbose=False)
    doc = json.loads(written[0].read_text())
    names = [p["name"] for p in doc["profiles"]]
    assert "rank 0 - MainThread" in names
    fetch_profiles = [n for n in names if n.endswith("(fetch) on MainThread")]
    assert len(fetch_profiles) == 2 and all(n.startswith("rank 0 - Task-") for n in fetch_profiles)
    speedscope_import(written[0])


def test_thread_summary_counts_task_roots_on_their_thread(manager):
    async def job():
        with manager.region("job"):
            await asyncio.sleep(0.02)

    with _session(manager) as s:
        t = threading.Thread(target=lambda: asyncio.run(job()), name="loop-thread")
        t.start()
        t.join()
    r = s.results
    rows = {row["name"]: row for row in r.thread_summary()}
    job_region = r["job"][0]
    assert rows["loop-thread"]["region_time"] == pytest.approx(job_region.total_duration)
    assert rows["loop-thread"]["num_calls"] == 1
    assert rows["MainThread"]["region_time"] == pytest.approx(
        r["scope_profiler.session"][0].total_duration
    )


def test_a_loop_threads_columns_stay_within_its_wall_time(manager):
    """200 tasks each awaiting a 50 ms sleep inside a region: their awaits add up to ~10 s
    in a run of ~0.1 s. The loop thread's columns are times of that thread (never above its
    wall time); the tasks' summed awaits are `task_await_time_sum`, the sum of the
    `task_summary()` rows of its tasks."""

    async def one(i):
        with manager.region("wait"):
            await asyncio.sleep(0.05)

    async def main():
        await asyncio.gather(*(one(i) for i in range(200)))

    with _session(manager) as s:
        asyncio.run(main())
    r = s.results
    row = r.thread_summary()[0]
    wall = row["wall_time"]
    assert wall < 2.0
    for key in ("region_time", "held_time", "await_time", "task_step_time"):
        assert 0 <= row[key] <= wall, (key, row)
    tasks = [t for t in r.task_summary() if t["thread_index"] == row["index"]]
    summed = sum(t["await_time"] for t in tasks)
    assert summed >= 200 * 0.045  # each task awaited its sleep
    assert row["task_await_time_sum"] == pytest.approx(summed)
    assert row["task_await_time_sum"] > 20 * wall
    # the loop waited ~50 ms with every task suspended in its region: the thread's await
    # time is the union of the tasks' calls less the time they held the thread (not the sum)
    wait = r["wait"][0]
    held_in_tasks = float((wait.durations - wait.await_times).sum())
    union = float(wait.end_times.max() - wait.start_times.min())  # they all overlap the sleep
    assert row["await_time"] == pytest.approx(union - held_in_tasks, abs=1e-6)
    assert 0.045 <= row["await_time"] <= row["region_time"]
    # the steps: at least the tasks' calls' held time; held counts them and the session
    # root outside them
    assert held_in_tasks - 1e-6 <= row["task_step_time"] <= row["held_time"]
    root = r["scope_profiler.session"][0]
    assert row["held_time"] == pytest.approx(
        root.total_duration - root.task_step_times_ns[0] / 1e9 + row["task_step_time"], abs=1e-6
    )


def test_pending_task_cycle_through_wrapper_is_collected(manager):
    import gc
    import weakref

    class Marker:
        pass

    refs = []

    async def stuck(fut):
        marker = Marker()
        me = asyncio.current_task()  # task -> wrapper -> coroutine frame -> task
        refs.append(weakref.ref(marker))
        with manager.region("stuck"):
            await fut
        return me

    with _session(manager):
        loop = asyncio.new_event_loop()
        fut = loop.create_future()
        task = loop.create_task(stuck(fut))
        loop.run_until_complete(asyncio.sleep(0.01))
        task._log_destroy_pending = False
        loop.close()
        del task, fut, loop
        gc.collect()
        gc.collect()
    assert refs and refs[0]() is None


def test_instrument_loop_with_track_threads_only_tabulates_tasks(manager):
    async def job():
        with manager.region("job"):
            await asyncio.sleep(0.001)

    loop = asyncio.new_event_loop()
    with manager.session(
        verbose=False, return_results=True, track_threads=True, deactivate_file_output=True
    ) as s:
        manager.get_config().tracker.instrument_loop(loop)
        loop.run_until_complete(job())
    assert loop.get_task_factory() is None  # restored at uninstall
    loop.close()
    assert s.results["job"][0].task_ids is None  # calls carry no task column (as the reference)
    assert [t.coro_name.rsplit(".", 1)[-1] for t in s.results.tasks[0]] == ["job"]


def test_python_task_and_factory_set_after_ours_is_chained_again(manager):
    def py_factory(loop, coro, **kw):
        return asyncio.tasks._PyTask(coro, loop=loop, **kw)

    async def fetch(d):
        with manager.region("fetch"):
            await asyncio.sleep(d)

    async def main():
        asyncio.get_running_loop().set_task_factory(py_factory)  # displaces ours ...
        await asyncio.gather(fetch(0.02), fetch(0.03))  # ... until the next create_task
        t = asyncio.create_task(fetch(1))
        await asyncio.sleep(0.01)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

    loop = asyncio.new_event_loop()
    with _session(manager) as s:
        loop.run_until_complete(main())
    assert loop.get_task_factory() is py_factory  # the application's, restored
    loop.close()
    f = s.results["fetch"][0]
    assert f.num_calls == 3 and len(set(f.task_ids.tolist())) == 3
    assert f.await_times[0] >= 0.015 and f.await_times[2] >= 0.008  # cancelled call closed too
    assert all(t.done for t in s.results.tasks[0])


def test_a_loop_without_weak_references_is_instrumented_and_released(manager):
    """A loop object that cannot be weakly referenced (a C loop may not allow it) is kept in
    the task factory's strong table: its tasks are lanes, and the session's end gives it its
    previous factory back and forgets it."""

    class SlotLoop:
        __slots__ = ("factory",)

        def __init__(self) -> None:
            self.factory = None

        def get_task_factory(self):
            return self.factory

        def set_task_factory(self, factory) -> None:
            self.factory = factory

    real = asyncio.new_event_loop()
    made = []

    def previous(loop, coro, **kwargs):
        made.append(loop)
        return asyncio.Task(coro, loop=real, **kwargs)

    async def work():
        with manager.region("in_task"):
            await asyncio.sleep(0.02)

    slot = SlotLoop()
    slot.set_task_factory(previous)
    with _session(manager) as s:
        manager.get_config().tracker.instrument_loop(slot)
        manager.get_config().tracker.instrument_loop(slot)  # idempotent
        factory = slot.get_task_factory()
        assert factory is not previous
        task = factory(slot, work(), name="slotted")
        real.run_until_complete(task)
    real.close()
    assert made == [slot] and slot.get_task_factory() is previous
    tasks = {t.name: t for t in s.results.tasks[0]}
    assert tasks["slotted"].coro_name.endswith("work") and tasks["slotted"].done
    r = s.results["in_task"][0]
    assert r.num_calls == 1 and r.task_ids[0] == tasks["slotted"].index
    assert r.await_times[0] >= 0.015


# On 3.13.0 to 3.13.2 a task factory that passes name=None names every unnamed task 'None'
# (https://github.com/python/cpython/issues/130033). Under track_async the program's own
# get_name() and the task table keep the default names; a given name is kept too.
def test_track_async_keeps_default_task_names(tmp_path):
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


# --------------------------------------------------------------------------- application task factories
# An application (or an instrumentation library) may set its own task factory while ours is
# set: one that chains to ours (reads get_task_factory() and calls it) or one that replaces
# ours. Either way each task is made once, passes each factory once, is wrapped and
# described once, and its calls are timed on its own lane.
_DELAYS = (0.02, 0.04, 0.06)


def _chaining_factory(seen):
    """A factory set over the loop's current one, calling it (as instrumentation does)."""
    loop = asyncio.get_running_loop()
    below = loop.get_task_factory()

    def factory(loop, coro, **kw):
        seen.append(coro)
        task = below(loop, coro, **kw) if below is not None else asyncio.Task(coro, loop=loop, **kw)
        task.seen_by_application = len(seen)
        return task

    loop.set_task_factory(factory)
    return factory


def _fetches(m):
    async def fetch(d):
        with m.region("fetch"):
            await asyncio.sleep(d)
        return asyncio.current_task()

    return fetch


def _assert_fetches_timed(results, tasks):
    """Each fetch ran on its own task lane, once, with its own sleep as duration."""
    f = results["fetch"][0]
    assert f.num_calls == len(_DELAYS)
    rows = [t for t in results.tasks[0] if t.coro_name.endswith("fetch")]
    assert len(rows) == len(_DELAYS) == len(tasks)  # described once
    assert sorted(f.task_ids.tolist()) == sorted(t.index for t in rows)
    order = np.argsort(f.durations)
    assert np.all(f.durations[order] >= np.array(_DELAYS) - 0.002), f.durations
    assert np.all(f.durations[order] < np.array(_DELAYS) + 0.03), f.durations
    assert np.all(f.await_times >= np.array(_DELAYS)[np.argsort(order)] - 0.002)


def test_application_factory_chained_over_ours_makes_each_task_once(manager):
    seen = []
    fetch = _fetches(manager)

    async def main():
        _chaining_factory(seen)
        tasks = await asyncio.gather(*(fetch(d) for d in _DELAYS))
        # the next create_task instruments the loop again: still one pass per factory
        tasks.append(await asyncio.create_task(asyncio.sleep(0, asyncio.current_task())))
        return tasks

    loop = asyncio.new_event_loop()
    with _session(manager) as s:
        tasks = loop.run_until_complete(main())
    assert len(seen) == 4  # three fetches and the sleep, once each
    assert [t.seen_by_application for t in tasks[:3]] == [1, 2, 3]
    _assert_fetches_timed(s.results, tasks[:3])
    assert len(s.results.tasks[0]) == 5  # main, three fetches, the sleep

    # after the session the application's factory is back, calling through ours untimed
    async def again():
        return await asyncio.gather(*(fetch(0) for _ in range(2)))

    after = loop.run_until_complete(again())
    assert len(seen) == 7 and [t.seen_by_application for t in after] == [6, 7]  # again()+2
    loop.close()


def test_application_factories_below_and_over_ours_each_run_once(manager):
    below_seen, over_seen = [], []

    def below(loop, coro, **kw):
        below_seen.append(coro)
        return asyncio.Task(coro, loop=loop, **kw)

    fetch = _fetches(manager)

    async def main():
        _chaining_factory(over_seen)
        return await asyncio.gather(*(fetch(d) for d in _DELAYS))

    loop = asyncio.new_event_loop()
    loop.set_task_factory(below)
    with _session(manager) as s:
        tasks = loop.run_until_complete(main())
    loop.close()
    assert len(over_seen) == 3 and len(below_seen) == 4  # below also made main's task
    _assert_fetches_timed(s.results, tasks)
    assert len(s.results.tasks[0]) == 4


def test_two_managers_time_tasks_of_a_factory_chained_over_theirs():
    a, b = ProfileManager(), ProfileManager()
    seen = []

    async def fetch(d):
        with a.region("fetch"), b.region("fetch"):
            await asyncio.sleep(d)
        return asyncio.current_task()

    async def main():
        _chaining_factory(seen)
        return await asyncio.gather(*(fetch(d) for d in _DELAYS))

    loop = asyncio.new_event_loop()
    with _session(a) as sa, _session(b) as sb:
        tasks = loop.run_until_complete(main())
    loop.close()
    assert len(seen) == 3
    for s in (sa, sb):
        _assert_fetches_timed(s.results, tasks)
        assert len(s.results.tasks[0]) == 4
    a.reset()
    b.reset()


def test_uvloop_with_a_factory_chained_over_ours(manager):
    uvloop = pytest.importorskip("uvloop")
    seen = []
    fetch = _fetches(manager)

    async def main():
        _chaining_factory(seen)
        # instrumenting again puts ours over the application's: no cycle
        manager.get_config().tracker.instrument_loop(asyncio.get_running_loop())
        return await asyncio.gather(*(fetch(d) for d in _DELAYS))

    loop = uvloop.new_event_loop()
    with _session(manager) as s:
        manager.get_config().tracker.instrument_loop(loop)
        tasks = loop.run_until_complete(main())
    loop.close()
    assert len(seen) == 3
    _assert_fetches_timed(s.results, tasks)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.eager_task_factory is 3.12+")
@pytest.mark.parametrize("where", ["below", "over"])
def test_eager_task_factory_tasks_are_timed_once(manager, where):
    """Eager tasks run their first step inside the factory call; a task they create there
    is a task of its own, not a call back into the factory."""
    fetch = _fetches(manager)

    async def spawner(d):
        # runs eagerly inside the factory call that made its task
        return await asyncio.create_task(fetch(d))

    async def main():
        if where == "over":
            asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
        spawners = [asyncio.create_task(spawner(d)) for d in _DELAYS]
        return await asyncio.gather(*spawners)

    loop = asyncio.new_event_loop()
    if where == "below":
        loop.set_task_factory(asyncio.eager_task_factory)
    with _session(manager) as s:
        tasks = loop.run_until_complete(main())
    loop.close()
    _assert_fetches_timed(s.results, tasks)
    assert len(s.results.tasks[0]) == 7  # main, three spawners, three fetches


# --------------------------------------------------------------------------- loops we do not instrument
# A task of an event loop whose tasks get no lanes (uvloop without instrument_loop)
# would put its calls on the thread's lane, concurrent ones nested, with no word said. The
# first region opened inside such a task says so once; an asyncio-compatible loop is
# instrumented on the spot, so the tasks it creates from then on are lanes.
def test_uninstrumented_uvloop_is_instrumented_at_first_region_with_one_warning(
    manager, monkeypatch
):
    uvloop = pytest.importorskip("uvloop")
    from scope_profiler import _untracked_loops

    monkeypatch.setattr(_untracked_loops, "_WARNED", set())
    fetch = _fetches(manager)

    async def early(d):
        with manager.region("early"):
            await asyncio.sleep(d)

    async def main():
        await asyncio.gather(early(0.03), early(0.01))  # created before anyone noticed
        return await asyncio.gather(*(fetch(d) for d in _DELAYS))

    loop = uvloop.new_event_loop()
    with pytest.warns(RuntimeWarning) as caught, _session(manager) as s:
        tasks = loop.run_until_complete(main())
    loop.close()
    advice = [w for w in caught if "instrument_loop" in str(w.message)]
    assert len(advice) == 1 and "uvloop.Loop" in str(advice[0].message)
    assert advice[0].filename == __file__
    early_ = s.results["early"][0]
    assert early_.num_calls == 2 and (early_.task_ids == -1).all()  # what the warning says
    _assert_fetches_timed(s.results, tasks)  # the loop's later tasks are lanes


def test_instrumented_loops_and_callbacks_do_not_warn(manager):
    uvloop = pytest.importorskip("uvloop")

    async def main():
        manager.get_config().tracker.instrument_loop(asyncio.get_running_loop())
        done = asyncio.get_running_loop().create_future()

        def callback():
            with manager.region("callback"):
                done.set_result(None)

        asyncio.get_running_loop().call_soon(callback)
        await done
        await asyncio.gather(*(fetch(d) for d in _DELAYS))

    fetch = _fetches(manager)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _session(manager) as s:
            asyncio.run(main())
            uvloop.run(main())
    assert s.results["fetch"][0].num_calls == 6
    assert s.results["callback"][0].task_ids.tolist() == [-1, -1]


def test_regions_of_a_task_begun_before_tracking_ask_about_the_loop_once():
    """setup() inside the main coroutine: its task has no lane, so each region asks whether
    the running loop is instrumented; once it is known to be, the thread stops asking
    (on 3.11 asking costs a getpid system call per region)."""
    code = (
        "import asyncio, scope_profiler as sp\n"
        "from scope_profiler import _untracked_loops as u\n"
        "asked = []\n"
        "check = u.check_loop\n"
        "u.check_loop = lambda loop: asked.append(loop) or check(loop)\n"
        "async def main():\n"
        "    sp.ProfileManager.setup(track_async=True, deactivate_file_output=True)\n"
        "    r = sp.ProfileManager.profile_region('r')\n"
        "    for _ in range(5000):\n"
        "        with r:\n"
        "            pass\n"
        "    res = sp.ProfileManager.finalize(verbose=False, return_results=True)\n"
        "    print(len(asked), res['r'][0].num_calls)\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "5000"], out


_TRIO_PROGRAM = """
import sys, time, warnings
import scope_profiler as sp

PM = sp.ProfileManager


def spin(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


async def work(sleep):
    with PM.region("work"):
        await sleep(0.05)
        spin(0.002)


async def main_trio():
    import trio

    async with trio.open_nursery() as n:
        for _ in range(10):
            n.start_soon(work, trio.sleep)


async def main_anyio():
    import anyio

    async with anyio.create_task_group() as tg:
        for _ in range(10):
            tg.start_soon(work, anyio.sleep)


def run(how):
    if how == "trio":
        import trio

        trio.run(main_trio)
    else:
        import anyio

        anyio.run(main_anyio, backend=how)


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with PM.session(
        track_async=True, deactivate_file_output=True, return_results=True, verbose=False
    ) as s:
        run(sys.argv[1])
        run(sys.argv[1])
r = s.results
w = r["work"][0]
row = r.thread_summary()[0]
print(len([c for c in caught if "trio" in str(c.message)]))
print(w.num_calls, len(set(w.task_ids.tolist())), int((w.task_ids >= 0).sum()))
work_rows = [t for t in r.task_summary() if "work" in (t["name"] + t["coro_name"])]
print(row["held_time"] <= row["wall_time"], len(work_rows))
print(float(w.await_times.min()))
"""


@pytest.mark.parametrize("how", ["trio", "anyio-trio", "anyio-asyncio"])
def test_trio_and_anyio_tasks_are_lanes_without_a_warning(how, tmp_path):
    """trio imported after the session started (patched at its import), trio's tasks and
    anyio's on either backend are lanes; held time stays within the thread's wall time."""
    pytest.importorskip("trio")
    if how.startswith("anyio"):
        pytest.importorskip("anyio")
    script = tmp_path / "program.py"
    script.write_text(_TRIO_PROGRAM)
    backend = {"trio": "trio", "anyio-trio": "trio", "anyio-asyncio": "asyncio"}[how]
    arg = "trio" if how == "trio" else backend
    out = subprocess.run(
        [sys.executable, str(script), arg], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    warned, calls, held_within_wall, least_await = out.stdout.split("\n")[:4]
    assert warned == "0"
    n, lanes, on_lanes = map(int, calls.split())
    assert n == 20 and lanes == 20 and on_lanes == 20
    assert held_within_wall.split() == ["True", "20"]
    assert float(least_await) >= 0.045  # each call's own sleep


_CHAINED_FACTORY_PROGRAM = """
import asyncio, json, sys
from scope_profiler import ProfileManager as PM

seen = []


async def fetch(d):
    with PM.region("fetch"):
        await asyncio.sleep(d)


async def main():
    loop = asyncio.get_running_loop()
    below = loop.get_task_factory()

    def factory(loop, coro, **kw):
        seen.append(1)
        return below(loop, coro, **kw)

    loop.set_task_factory(factory)
    await asyncio.gather(*(fetch(d) for d in (0.02, 0.04, 0.06)))
    await asyncio.create_task(asyncio.sleep(0))


with PM.session(file_path=sys.argv[1], track_async=True, verbose=False, return_results=True) as s:
    asyncio.run(main())
f = s.results["fetch"][0]
print(json.dumps({"seen": len(seen), "calls": int(f.num_calls),
                  "lanes": sorted(set(f.task_ids.tolist())),
                  "durations": sorted(f.durations.tolist()), "tasks": len(s.results.tasks[0])}))
"""


def test_factory_chained_over_ours_as_the_reference(tmp_path):
    """The reference keeps a factory chained over its own working; so do we, with the same
    factory passes, lanes, task table and durations."""
    script = tmp_path / "program.py"
    script.write_text(_CHAINED_FACTORY_PROGRAM)
    runs = []
    for python, out in ((sys.executable, "ours.h5"), (reference_python(), "ref.h5")):
        done = subprocess.run(
            [python, str(script), str(tmp_path / out)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    ours, ref = runs
    # gather's three, the sleep and asyncio.run's two shutdown tasks, each once
    assert ours["seen"] == ref["seen"] == 6
    assert ours["calls"] == ref["calls"] == 3
    assert ours["lanes"] == ref["lanes"] and len(ours["lanes"]) == 3
    assert ours["tasks"] == ref["tasks"]
    assert np.allclose(ours["durations"], [0.02, 0.04, 0.06], atol=0.015)
    assert np.allclose(ours["durations"], ref["durations"], atol=0.015)
