"""Notebook-style use of the Arrow frames: build Polars, pandas and pyarrow frames of a
tracked run (threads, tasks, thread summary, events with lane columns, region summary) and
check every value against the results objects. The frames cross into the libraries through
the Arrow PyCapsule interface (``__arrow_c_stream__``)."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
import scope_profiler as sp
from conftest import REFERENCE
from helpers import _empty_run, _nested_threaded_run

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")


def _tracked_run(tmp_path):
    def work(n):
        for _ in range(n):
            with sp.region("solve"):
                with sp.region("inner"):
                    time.sleep(0.0002)

    sp.reset()
    try:
        sp.setup(file_path=str(tmp_path / "frames.h5"), track_threads=True)
        threads = [threading.Thread(target=work, args=(2 + i,), name=f"w{i}") for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with sp.region("main_only"):
            time.sleep(0.0002)
        return sp.finalize(return_results=True, verbose=False)
    finally:
        sp.reset()


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    return _tracked_run(tmp_path_factory.mktemp("frames"))


@pytest.fixture(scope="module")
def tasks():
    return sp.read_h5(str(REFERENCE / "async.h5"))


def same(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    if isinstance(a, float) or isinstance(b, float):
        return b is not None and math.isclose(a, b, rel_tol=0, abs_tol=0)
    return a == b


def records(frame) -> list[dict]:
    """Rows of a Polars or pandas frame as plain dicts."""
    if isinstance(frame, pl.DataFrame):
        return frame.to_dicts()
    return [
        {
            k: (
                None
                if isinstance(v, float) and math.isnan(v)
                else v.item()
                if isinstance(v, np.generic)
                else v
            )
            for k, v in row.items()
        }
        for row in frame.to_dict("records")
    ]


def check_rows(got: list[dict], want: list[dict], keys):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for key in keys:
            assert same(g[key], w[key]), (key, g[key], w[key])


@pytest.mark.parametrize("fixture", ["tracked", "tasks"])
def test_capsule_tables_are_arrow_streams(fixture, request):
    results = request.getfixturevalue(fixture)
    for table in (
        results.threads_frame(),
        results.tasks_frame(),
        results.thread_summary_frame(0),
        results.events_frame(),
        results.to_arrow(),
        results.to_arrow(per_rank=True),
    ):
        assert hasattr(table, "__arrow_c_stream__")
        assert pa.table(table).num_rows == len(pl.DataFrame(table))


@pytest.mark.parametrize("fixture", ["tracked", "tasks"])
def test_thread_frames_match_thread_info(fixture, request):
    results = request.getfixturevalue(fixture)
    want = [
        {
            "rank": t.rank,
            "index": t.index,
            "name": t.name,
            "ident": t.ident,
            "native_id": t.native_id,
            "daemon": t.daemon,
            "start_time": t.start_time,
            "end_time": t.end_time,
            "cpu_time": t.cpu_time,
            "alive": t.alive,
            "wall_time": t.wall_time,
        }
        for rank in sorted(results.threads)
        for t in results.threads[rank]
    ]
    assert want, "the run tracks threads"
    frame = pl.DataFrame(results.threads_frame())
    check_rows(records(frame), want, want[0])
    check_rows(records(results.to_pandas(table=results.threads_frame())), want, want[0])


def test_task_frames_match_task_info(tasks):
    want = [
        {
            "rank": t.rank,
            "index": t.index,
            "kind": t.kind,
            "name": t.name,
            "coro_name": t.coro_name,
            "thread_index": t.thread_index,
            "created_time": t.created_time,
            "done_time": t.done_time,
            "steps": t.steps,
            "running_time": t.running_time,
            "awaiting_time": t.awaiting_time,
            "done": t.done,
            "wall_time": t.wall_time,
        }
        for rank in sorted(tasks.tasks)
        for t in tasks.tasks[rank]
    ]
    assert want
    check_rows(records(tasks.to_polars(table=tasks.tasks_frame())), want, want[0])
    check_rows(records(tasks.to_pandas(table=tasks.tasks_frame())), want, want[0])


@pytest.mark.parametrize("fixture", ["tracked", "tasks"])
def test_thread_summary_frame(fixture, request):
    results = request.getfixturevalue(fixture)
    want = results.thread_summary(0)
    assert want
    got = records(pl.DataFrame(results.thread_summary_frame(0)))
    check_rows(got, want, want[0])
    assert list(pl.DataFrame(results.thread_summary_frame(0)).columns) == list(want[0])


@pytest.mark.parametrize("fixture", ["tracked", "tasks"])
def test_events_frames_keep_lane_columns(fixture, request):
    results = request.getfixturevalue(fixture)
    events = results.events()
    keys = [k for k in events[0] if k != "metadata"]
    assert "thread" in keys
    if fixture == "tasks":
        assert {"task", "await_duration"} <= set(keys)
    polars_events = pl.DataFrame(results.events_frame())
    assert polars_events.columns == keys
    check_rows(records(polars_events), events, keys)
    # pandas without pyarrow (numpy columns) and through Arrow give the same frame
    frame = results.to_events_dataframe()
    assert list(frame.columns) == keys
    check_rows(records(frame), events, keys)
    check_rows(records(results.to_pandas(table=results.events_frame())), events, keys)
    # selections and origins follow events()
    name = results.region_names[0]
    sel = results.events(include=name, relative=False)
    check_rows(records(pl.DataFrame(results.events_frame(include=name, relative=False))), sel, keys)
    check_rows(records(results.to_events_dataframe(include=name, relative=False)), sel, keys)


@pytest.mark.parametrize("fixture", ["tracked", "tasks"])
def test_summary_frames(fixture, request):
    results = request.getfixturevalue(fixture)
    want = results.summary()
    got = records(results.to_polars())
    keys = [k for k in want[0] if k != "tags"]
    check_rows(got, want, keys)
    assert [tuple(r["tags"]) for r in got] == [tuple(r["tags"]) for r in want]
    per_rank = results.to_pandas(per_rank=True)
    want_rank = results.to_dataframe(per_rank=True)
    assert list(per_rank.columns) == list(want_rank.columns)
    check_rows(records(per_rank), records(want_rank), list(want_rank.columns))


def test_frames_of_a_results_set_built_in_python(tracked):
    """Results not backed by one NativeRun (a selection) still give frames (copied run)."""
    part = sp.ProfilingResults(
        {name: tracked[name] for name in ("solve", "inner")},
        metadata=tracked.metadata,
        threads=tracked.threads,
        tasks=tracked.tasks,
    )
    events = part.events()
    keys = [k for k in events[0] if k != "metadata"]
    check_rows(records(pl.DataFrame(part.events_frame())), events, keys)
    check_rows(
        records(pl.DataFrame(part.thread_summary_frame(0))),
        part.thread_summary(0),
        part.thread_summary(0)[0],
    )


def test_zero_copy_into_polars(tracked):
    """The Arrow buffers are handed over, not copied: the frame's column views the table."""
    table = pa.table(tracked.events_frame())
    frame = pl.from_arrow(table)
    assert frame["start"].to_list() == table.column("start").to_pylist()


# Frame schemas do not change with the data: an empty events_frame keeps
# call_id/parent_id/thread, an empty run's summary frames have every column, and the
# per-rank one has `rank`.
def test_empty_frames_keep_their_columns(tmp_path):
    pl = pytest.importorskip("polars")
    r = _nested_threaded_run(tmp_path / "mine.h5")
    full = pl.DataFrame(r.events_frame()).columns
    assert full == [
        "name",
        "rank",
        "call_index",
        "start",
        "end",
        "duration",
        "call_id",
        "parent_id",
        "thread",
    ]
    none = pl.DataFrame(r.events_frame(include=["zzz"]))
    assert none.columns == full and none.height == 0
    empty = sp.read_h5(_empty_run(tmp_path / "empty.h5"))
    assert empty.to_polars(per_rank=True).columns == r.to_polars(per_rank=True).columns
    assert empty.to_polars(per_rank=True).columns[:2] == ["name", "rank"]
    assert "p99_duration" in empty.to_polars(per_rank=True).columns
    assert empty.to_polars().columns == r.to_polars().columns
    assert len(empty.to_polars().columns) == 22 and empty.to_polars().height == 0
