"""Per-thread numbers: thread_summary / task_summary numbers that mean what a user
reads into them, on threaded, asyncio and gevent runs, and the summaries that show them.

The invariants: ``region_time <= wall_time`` for every thread; on task/greenlet lanes
``held_time + await_time == region_time`` (= Σ durations of the lane's top-level calls,
checked against the lane's own calls); ``cpu_time`` is the CPU burned during the run, so
three sequential sessions burning the same CPU report the same figure.
"""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
import sys
import threading
import time

import pytest
from scope_profiler import ProfileManager

BURN = 0.1  # s of CPU


def _session(m, **kw):
    kw.setdefault("deactivate_file_output", True)
    return m.session(verbose=False, return_results=True, **kw)


def _burn(seconds: float) -> None:
    """Burn `seconds` of this thread's CPU (measured on its own CPU clock)."""
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        x += 1


def _roots_total(region, lane):
    """Σ durations (s) of `region`'s calls on `lane` that have no parent: the lane's
    top-level calls of that region, from the per-call columns."""
    part = region.for_lane(lane)
    roots = part.parent_ids == -1
    return float(part.durations_ns[roots].sum()) / 1e9, float(
        part.await_times_ns[roots].sum()
    ) / 1e9


def _check_threads(results, rank=0):
    rows = results.thread_summary(rank)
    assert rows
    for t in rows:
        assert t["wall_time"] is not None, t
        assert 0 <= t["region_time"] <= t["wall_time"] + 1e-9, t
        assert 0 <= t["cpu_time"] <= t["cpu_time_total"] + 1e-12, t
    return rows


# -- threads ---------------------------------------------------------------------------------


def test_threaded_run_numbers(manager):
    def work():
        with manager.region("work"):
            _burn(0.03)
            time.sleep(0.05)

    with _session(manager, track_threads=True) as s:
        with manager.region("main_part"):
            workers = [threading.Thread(target=work, name=f"w{i}") for i in range(3)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
    r = s.results
    rows = {t["name"]: t for t in _check_threads(r)}
    # without track_async there is no await column: held and await are unknown
    assert all(t["held_time"] is None and t["await_time"] is None for t in rows.values())
    work = r["work"][0]
    for i in range(3):
        t = rows[f"w{i}"]
        assert not t["alive"]
        mine = work.for_thread(t["index"])
        assert mine.num_calls == t["num_calls"] == 1
        # one top-level call: region time is its duration
        assert t["region_time"] == pytest.approx(mine.durations[0], abs=1e-12)
        assert 0.025 <= t["cpu_time"] <= 0.045, t
        assert t["wall_time"] >= t["region_time"]
    main = rows["MainThread"]
    # the thread that called setup(): counted from setup() (when it creates the recorder,
    # a few ms after the run's origin) to the end of the run, not from its first region
    run_span = (r.metadata["finalize_time_ns"] - r.metadata["start_time_ns"]) / 1e9
    assert main["alive"] and run_span - 0.05 <= main["wall_time"] <= run_span, (main, run_span)
    assert main["wall_time"] > r["main_part"][0].durations[0]
    assert main["region_time"] >= r["main_part"][0].durations[0] - 1e-12


# -- asyncio ---------------------------------------------------------------------------------


async def _fetch(manager, i):
    with manager.region("fetch"):
        await asyncio.sleep(0.02 * (i + 1))
        _burn(0.005)


async def _crawl(manager):
    with manager.region("crawl"):
        await asyncio.gather(*(_fetch(manager, i) for i in range(5)))


def test_asyncio_run_numbers(manager):
    with _session(manager, track_async=True) as s:
        asyncio.run(_crawl(manager))
    r = s.results
    rows = _check_threads(r)
    main = rows[0]
    # the loop thread's region time is not the sum of every task's time, awaits included
    assert main["region_time"] <= main["wall_time"]
    assert main["held_time"] is not None and main["await_time"] is not None
    tasks = r.task_summary()
    fetch = r["fetch"][0]
    fetch_lanes = sorted(set(fetch.task_ids.tolist()))
    assert len(fetch_lanes) == 5
    by_index = {t["index"]: t for t in tasks}
    for lane in fetch_lanes:
        t = by_index[lane]
        assert t["thread"] == "MainThread" and t["done"]
        assert t["num_calls"] == 1
        total, awaited = _roots_total(fetch, lane)
        assert t["region_time"] == pytest.approx(total, abs=1e-12)
        assert t["await_time"] == pytest.approx(awaited, abs=1e-12)
        assert t["held_time"] + t["await_time"] == pytest.approx(t["region_time"], abs=1e-12)
        # suspended in asyncio.sleep for most of the call, held for the CPU burn
        assert t["await_time"] >= 0.015 and 0.004 <= t["held_time"] <= 0.05, t
        assert t["region_time"] <= t["wall_time"] + 1e-9
    # the loop thread's held time: the session root outside the task steps it ran, and
    # those steps; its await time: the tasks' calls open with none of them running (crawl's
    # call spans every fetch); the tasks' awaits summed are a per-task sum
    crawl = r["crawl"][0]
    session = r["scope_profiler.session"][0] if "scope_profiler.session" in r.region_names else None
    bare = (session.durations.sum() - session.task_step_times_ns.sum() / 1e9) if session else 0.0
    assert main["held_time"] == pytest.approx(bare + main["task_step_time"], abs=1e-9)
    held_in_tasks = sum(t["held_time"] for t in tasks)
    assert main["await_time"] == pytest.approx(crawl.durations[0] - held_in_tasks, abs=1e-9)
    assert main["task_await_time_sum"] == pytest.approx(
        sum(t["await_time"] for t in tasks), abs=1e-9
    )
    assert held_in_tasks <= main["task_step_time"] + 1e-9 <= main["wall_time"] + 1e-9
    assert crawl.num_calls == 1
    # the slices beside for_thread keep exclusive times and lane columns
    one = fetch.for_task(fetch_lanes[0])
    assert one.num_calls == 1 and one.task_ids.tolist() == [fetch_lanes[0]]
    assert (
        one.exclusive_durations_ns.tolist()
        == fetch.exclusive_durations_ns[fetch.task_ids == fetch_lanes[0]].tolist()
    )
    assert fetch.for_lane(fetch_lanes[0]).durations_ns.tolist() == one.durations_ns.tolist()


def test_every_summary_shows_await_and_held(manager):
    with _session(manager, track_async=True) as s:
        asyncio.run(_crawl(manager))
    r = s.results
    rows = {row["name"]: row for row in r.summary()}
    fetch = r["fetch"][0]
    awaited = float(fetch.await_times_ns.sum()) / 1e9
    assert rows["fetch"]["await_duration"] == pytest.approx(awaited, abs=1e-12)
    assert rows["fetch"]["held_duration"] == pytest.approx(
        fetch.durations.sum() - awaited, abs=1e-9
    )
    out = io.StringIO()
    r.print_summary(stream=out)
    text = out.getvalue()
    header = text.splitlines()[text.splitlines().index("rank 0: regions") + 1].split()
    assert header[-3:] == ["exclusive", "await", "held"], header
    assert "rank 0: tasks" in text and "Task-" in text
    html = r._repr_html_()
    assert "await_duration" in html and "held_duration" in html and "held_time" in html
    assert r.thread_summary_frame().column_names[-6:] == [
        "held_time",
        "await_time",
        "task_step_time",
        "task_await_time_sum",
        "ready_wait_time",
        "idle_time",
    ]
    assert "await_time" in r.task_summary_frame().column_names


def test_runs_without_await_column_show_no_held_column(manager):
    with _session(manager, track_threads=True) as s:
        with manager.region("x"):
            pass
    r = s.results
    assert "await_duration" not in r.summary()[0]
    out = io.StringIO()
    r.print_summary(stream=out)
    lines = out.getvalue().splitlines()
    assert lines[lines.index("rank 0: regions") + 1].split()[-1] == "exclusive"
    assert r.task_summary() == []


# -- gevent ----------------------------------------------------------------------------------


def test_gevent_run_numbers(manager):
    gevent = pytest.importorskip("gevent")

    def job(i):
        with manager.region("job"):
            gevent.sleep(0.02 * (i + 1))
            _burn(0.003)

    with _session(manager, track_async=True) as s:
        gevent.joinall([gevent.spawn(job, i) for i in range(4)])
    r = s.results
    rows = _check_threads(r)
    assert rows[0]["region_time"] <= rows[0]["wall_time"]
    job_region = r["job"][0]
    lanes = sorted(set(job_region.task_ids.tolist()))
    assert len(lanes) == 4
    by_index = {t["index"]: t for t in r.task_summary()}
    for lane in lanes:
        t = by_index[lane]
        assert t["kind"] == "greenlet"
        total, awaited = _roots_total(job_region, lane)
        assert t["region_time"] == pytest.approx(total, abs=1e-12)
        assert t["held_time"] + t["await_time"] == pytest.approx(t["region_time"], abs=1e-12)
        assert t["await_time"] == pytest.approx(awaited, abs=1e-12) and awaited >= 0.015


# -- CPU of sequential sessions --------------------------------------------------------------


def test_cpu_time_of_sequential_sessions_is_each_own_burn(manager):
    """Three sessions each burning 0.1 s on the main thread report 0.1 s each, not a growing
    figure (the thread's CPU since it started). Half the burn is outside any region: CPU
    time counts from setup(), not from the first region."""
    _burn(0.05)  # CPU before any session must not count
    figures = []
    for _ in range(3):
        m = ProfileManager()
        with m.session(
            deactivate_file_output=True, verbose=False, return_results=True, track_threads=True
        ) as s:
            _burn(BURN / 2)
            with m.region("burn"):
                _burn(BURN / 2)
        main = s.results.thread_summary()[0]
        figures.append((main["cpu_time"], main["cpu_time_total"]))
        m.reset()
    for cpu, total in figures:
        assert BURN * 0.9 <= cpu <= BURN * 1.6, figures
        assert total > cpu
    # the whole-life figure keeps growing; the run's figure does not
    assert figures[2][1] - figures[0][1] >= 2 * BURN * 0.9
    assert abs(figures[2][0] - figures[0][0]) < BURN * 0.5


def test_pool_worker_cpu_per_session(manager):
    """A worker thread that exists before setup() (a pool reused across sessions) counts
    only the CPU of each session: identical tasks report the same figure, not a growing one."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    pool.submit(_burn, 0.03).result()  # the worker exists and has burned CPU before the runs
    try:
        figures = []
        for _ in range(3):
            m = ProfileManager()
            with m.session(
                deactivate_file_output=True, verbose=False, return_results=True, track_threads=True
            ) as s:

                def task(m=m):
                    with m.region("task"):
                        _burn(0.04)

                pool.submit(task).result()
            worker = [t for t in s.results.thread_summary() if t["name"] != "MainThread"]
            assert len(worker) == 1
            figures.append(worker[0]["cpu_time"])
            m.reset()
    finally:
        pool.shutdown()
    assert all(0.035 <= f <= 0.07 for f in figures), figures


# -- the CLI hint ----------------------------------------------------------------------------

INTERLEAVED = """
import asyncio
from scope_profiler import ProfileManager

region = ProfileManager.profile_region

async def step(i):
    with region(f"step{i}"):
        await asyncio.sleep(0.02 * (i + 1))

async def main():
    await asyncio.gather(*(step(i) for i in range(3)))

asyncio.run(main())
"""


def test_cli_says_track_async_for_tasks_recorded_with_threads_only(tmp_path):
    script = tmp_path / "interleaved.py"
    script.write_text(INTERLEAVED)
    out = tmp_path / "p.h5"
    cmd = [
        sys.executable,
        "-m",
        "scope_profiler",
        "run",
        "--track-threads",
        "--no-speedscope",
        "-o",
        str(out),
    ]
    done = subprocess.run([*cmd, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--track-async" in done.stdout + done.stderr
    summary = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "summary", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "--track-async" in summary.stdout
    # with --track-async the tasks are lanes: no such note
    done = subprocess.run(
        [*cmd[:4], "--track-async", *cmd[5:], str(script)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "--track-async" not in done.stdout + done.stderr
    # the held/await columns are there instead
    lines = done.stdout.splitlines()
    assert lines[lines.index("rank 0: regions") + 1].split()[-2:] == ["await", "held"]


NESTED_LOOKING = """
import asyncio
from scope_profiler import ProfileManager

region = ProfileManager.profile_region

async def work(i):
    with region("work"):  # one region: the calls pair up nested, with the wrong durations
        await asyncio.sleep(0.02)

async def main():
    await asyncio.gather(*(work(i) for i in range(4)))

asyncio.run(main())
"""


@pytest.mark.parametrize("flags", [["--track-threads"], []])
def test_cli_notes_an_event_loop_run_without_track_async(tmp_path, flags):
    """asyncio recorded with --track-threads only (whose calls interleave and pair up wrongly
    on one thread) gets a hint to use --track-async, even when the calls happen to nest. A
    program without asyncio gets no such note."""
    script = tmp_path / "nested.py"
    script.write_text(NESTED_LOOKING)
    plain = tmp_path / "plain.py"
    plain.write_text(
        "from scope_profiler import ProfileManager\nwith ProfileManager.profile_region('x'):\n    pass\n"
    )
    base = [
        sys.executable,
        "-m",
        "scope_profiler",
        "run",
        *flags,
        "--no-speedscope",
        "-o",
        str(tmp_path / "p.h5"),
    ]
    done = subprocess.run([*base, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "imported asyncio but was recorded without --track-async" in done.stderr
    done = subprocess.run([*base, str(plain)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--track-async" not in done.stdout + done.stderr


CROSSING = """
import asyncio
from scope_profiler import ProfileManager

region = ProfileManager.profile_region

async def work(i):
    await asyncio.sleep(0.002 * i)
    with region(f"work{i}"):  # started in turn, ended together: the calls cross on one thread
        await asyncio.sleep(0.02)

async def main():
    await asyncio.gather(*(work(i) for i in range(4)))

asyncio.run(main())
"""


def test_cli_says_to_use_track_async_once(tmp_path):
    """An event loop's calls that cross on their thread without --track-async: the summary
    lists them and says once to record with --track-async; run adds no note of its own."""
    script = tmp_path / "crossing.py"
    script.write_text(CROSSING)
    cmd = [
        sys.executable,
        "-m",
        "scope_profiler",
        "run",
        "--track-threads",
        "-o",
        str(tmp_path / "p.h5"),
        str(script),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "were set aside" in done.stdout, said
    assert said.count("--track-async") == 1, said
    assert "imported asyncio" not in done.stderr, said


def _many_tasks(manager, n):
    async def fetch(i):
        with manager.region("fetch"):
            await asyncio.sleep(0.0001 * (i % 7))

    async def main():
        await asyncio.gather(*(fetch(i) for i in range(n)))

    with _session(manager, track_async=True) as s:
        asyncio.run(main())
    return s.results


def _task_lines(text):
    lines = text.splitlines()
    start = lines.index("rank 0: tasks") + 2
    return [line for line in lines[start:] if line.startswith("  ")]


def test_task_rows_are_capped_at_the_busiest_twenty_unless_all_tasks(manager):
    r = _many_tasks(manager, 30)
    out = io.StringIO()
    r.print_summary(stream=out, suppress_notes=True)
    rows = _task_lines(out.getvalue())
    tasks = r.task_summary()
    assert len(tasks) >= 30
    assert len(rows) == 21, out.getvalue()
    held = {t["index"]: t["held_time"] for t in tasks}
    shown = [int(line.split()[0]) for line in rows[:20]]
    assert sorted(held.values(), reverse=True)[:20] == [held[i] for i in shown]
    assert rows[20].startswith(f"  ... and {len(tasks) - 20} more tasks, ")
    assert rows[20].endswith("all_tasks=True lists every one")
    out = io.StringIO()
    r.print_summary(stream=out, suppress_notes=True, all_tasks=True)
    assert len(_task_lines(out.getvalue())) == len(tasks)


def test_notebook_repr_of_many_tasks_shows_the_busiest_and_counts_the_rest(manager):
    r = _many_tasks(manager, 300)
    html = r._repr_html_()
    assert len(html.encode()) < 100_000
    n = len(r.task_summary())
    assert f"... and {n - 50} more tasks (the busiest shown)" in html


def test_summary_reprs_round_their_floats_and_values_stay_exact(manager):
    import polars as pl

    r = _many_tasks(manager, 3)
    rows = r.thread_summary()
    text = repr(rows)
    floats = re.findall(r"(?<![\w.])-?\d+\.\d+(?:e-?\d+)?", text)
    assert floats, text
    for f in floats:
        assert len(f.lstrip("-").replace(".", "").lstrip("0")) <= 3 or f.endswith(".0"), (f, text)
    frame = pl.DataFrame(r.thread_summary_frame()).to_dicts()
    assert [row["wall_time"] for row in rows] == [f["wall_time"] for f in frame]
    assert rows[0] == dict(rows[0]) and isinstance(rows[0]["wall_time"], float)
    tasks = repr(r.task_summary())
    assert all(
        len(f.lstrip("-").replace(".", "").lstrip("0")) <= 3 or f.endswith(".0")
        for f in re.findall(r"(?<![\w.])-?\d+\.\d+", tasks)
    ), tasks


# -- session() and setup() alike -----------------------------------------------------------


def _session_or_setup(m, how, path, **kw):
    """Record `body` under ``session()`` or ``setup()/finalize()``; returns the results."""

    def record(body):
        if how == "session":
            with m.session(file_path=str(path), verbose=False, return_results=True, **kw) as s:
                body()
            return s.results
        m.setup(file_path=str(path), **kw)
        body()
        return m.finalize(verbose=False, return_results=True)

    return record


def _check_invariants(r):
    """held <= region <= wall per thread; MainThread starts with the run and runs to its end."""
    rows = r.thread_summary()
    for t in rows:
        assert 0 <= t["region_time"] <= t["wall_time"] + 1e-9, t
        if t["held_time"] is not None:
            assert 0 <= t["held_time"] <= t["region_time"] + 1e-9, t
    main = next(t for t in rows if t["name"] == "MainThread")
    span = (r.metadata["finalize_time_ns"] - r.metadata["start_time_ns"]) / 1e9
    assert main["wall_time"] == pytest.approx(span, abs=1e-6), (main, span)
    info = next(t for t in r.threads[0] if t.name == "MainThread")
    assert info.start_time == 0.0
    return rows


@pytest.mark.parametrize("how", ["session", "setup"])
def test_asyncio_held_within_region_within_wall(manager, tmp_path, how):
    """Under session() MainThread's held_time stays within its wall time: the session root
    holds the thread only outside the task steps it ran."""
    r = _session_or_setup(manager, how, tmp_path / "a.h5", track_async=True)(
        lambda: asyncio.run(_crawl(manager))
    )
    main = next(t for t in _check_invariants(r) if t["name"] == "MainThread")
    tasks = r.task_summary()
    # the tasks' summed awaits either way; under session() the root also holds the thread
    # outside the task steps it ran
    assert main["task_await_time_sum"] == pytest.approx(
        sum(t["await_time"] for t in tasks), abs=1e-9
    )
    outside = 0.0
    if how == "session":
        root = r["scope_profiler.session"][0]
        outside = root.durations[0] - root.task_step_times_ns[0] / 1e9
        assert main["region_time"] == pytest.approx(root.durations[0], abs=1e-9)
    assert main["held_time"] == pytest.approx(outside + main["task_step_time"], abs=1e-9)
    assert main["held_time"] <= main["wall_time"]
    # the fetches mostly sleep: 20 to 100 ms each, against 5 ms of work (a loaded machine
    # that deschedules the steps stretches them, not the sleeps)
    assert main["task_await_time_sum"] > 2 * main["task_step_time"]


@pytest.mark.parametrize("how", ["session", "setup"])
def test_threaded_run_starts_with_the_run(manager, tmp_path, how):
    """MainThread's wall time is the run's span and its first call follows the run's origin
    without a lead-in (the origin is taken after the metadata and the recorder are made)."""

    def body():
        with manager.region("first"):
            w = threading.Thread(target=_burn, args=(0.01,))
            w.start()
            w.join()

    r = _session_or_setup(manager, how, tmp_path / "t.h5", track_threads=True)(body)
    _check_invariants(r)
    first = r["first"][0]
    # session(): the root's start; setup(): the first region's - within a few ms of the origin
    starts = [g[0].start_times_ns.min() for g in r.get_regions()]
    assert (min(starts) - r.metadata["start_time_ns"]) / 1e9 < 0.005, starts
    assert first.num_calls == 1


def test_thread_summary_without_track_threads_says_why(manager, tmp_path):
    """thread_summary() of a run recorded without track_threads returns [] (the reference's
    shape), with a warning saying why."""
    import warnings

    r = _session_or_setup(manager, "session", tmp_path / "n.h5")(lambda: _burn(0.001))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert r.thread_summary() == []
        assert r.thread_summary_frame().num_rows == 0
    notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(notes) == 2 and all("recorded without track_threads" in n for n in notes), notes
    assert "--track-threads" in notes[0]


def test_cpu_time_is_the_runs_everywhere_and_cpu_time_total_the_whole_life(manager, tmp_path):
    """cpu_time is the CPU burned during the run in threads_frame(), ThreadInfo and
    thread_summary(); cpu_time_total the thread's whole life in each."""
    import polars as pl

    def body():
        with manager.region("burn"):
            _burn(0.02)

    r = _session_or_setup(manager, "setup", tmp_path / "c.h5", track_threads=True)(body)
    frame = pl.DataFrame(r.threads_frame()).to_dicts()
    summary = r.thread_summary()
    assert len(frame) == len(summary)
    for f, t in zip(frame, summary):
        assert f["cpu_time_total"] == pytest.approx(t["cpu_time_total"], abs=1e-12)
        assert f["cpu_time"] == pytest.approx(t["cpu_time"], abs=1e-12)
        assert f["cpu_time"] < f["cpu_time_total"]
    infos = r.threads[0]
    assert [i.cpu_time for i in infos] == [f["cpu_time"] for f in frame]
    assert [i.cpu_time_total for i in infos] == [f["cpu_time_total"] for f in frame]
    assert "cpu_time_run" not in frame[0]
