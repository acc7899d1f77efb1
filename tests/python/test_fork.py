"""fork(): a child forked out of an active tracked run stands down.

* hooks come out in the child: starting threads or running an event loop of 10k tasks adds
  no thread or task rows and the child's memory stays flat;
* finalizing the parent's manager in the child reports the parent's pre-fork calls and the
  child's, and every thread id in that file has a row (the reference writes ids with no row);
* the child's own session() tracks concurrency again.

Each child runs a check function, writes a JSON report and leaves with os._exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import traceback

import numpy as np
import pytest
import scope_profiler as sp
from helpers import reference_read
from scope_profiler import ProfileManager

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def rss_bytes() -> int:
    """Anonymous resident memory (``RssAnon``), bytes: what the process allocated. Not the
    whole RSS, which also counts file-backed pages (shared libraries, files read by other
    tests) and so depends on test order."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def in_child(check, tmp_path, timeout=120.0) -> dict:
    """Fork; run ``check()`` in the child (its dict is the report); return the report."""
    report_path = tmp_path / f"child-{time.monotonic_ns()}.json"
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            report = check()
        except BaseException:
            report = {"error": traceback.format_exc()}
            code = 1
        try:
            report_path.write_text(json.dumps(report))
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("forked child timed out")
        time.sleep(0.01)
    report = json.loads(report_path.read_text())
    assert "error" not in report, report["error"]
    assert os.waitstatus_to_exitcode(status) == 0
    return report


def run_threads(n: int, batch: int = 50) -> None:
    for _ in range(n // batch):
        ts = [threading.Thread(target=sum, args=((1, 2, 3),)) for _ in range(batch)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


async def _tiny(i):
    await asyncio.sleep(0)
    return i


def run_tasks(n: int, chunk: int = 500) -> None:
    async def main():
        for start in range(0, n, chunk):
            await asyncio.gather(*(_tiny(i) for i in range(start, min(n, start + chunk))))

    asyncio.run(main())


def test_forked_child_stands_down_threads(manager, tmp_path):
    manager.setup(file_path=str(tmp_path / "parent.h5"), track_threads=True)
    tracker = manager.get_config().tracker
    with manager.profile_region("before_fork"):
        run_threads(100)
    parent_rows = len(tracker.threads)
    assert parent_rows >= 101, "control: the installed hook registers every started thread"

    def check():
        assert not tracker.installed
        assert threading.getprofile() is None
        rows0 = len(tracker.threads)
        run_threads(5000)  # warm-up: allocator arenas, caches (a one-time step)
        rss0 = rss_bytes()
        run_threads(5000)
        rss1 = rss_bytes()
        return {"rows0": rows0, "rows1": len(tracker.threads), "growth": rss1 - rss0}

    report = in_child(check, tmp_path)
    assert report["rows0"] == report["rows1"] == parent_rows
    # flat: the hooked parent grows ~600 bytes per task (5+ MiB here)
    assert report["growth"] < 1024 * 1024, f"child grew by {report['growth']} bytes"
    # the parent is unaffected and still tracking
    assert tracker.installed
    run_threads(50)
    assert len(tracker.threads) == parent_rows + 50


def test_forked_child_stands_down_asyncio(manager, tmp_path):
    manager.setup(file_path=str(tmp_path / "parent.h5"), track_async=True)
    tracker = manager.get_config().tracker
    with manager.profile_region("before_fork"):
        run_tasks(200)
    parent_tasks = len(tracker.tasks)
    assert parent_tasks >= 200, "control: the installed hooks make every task a lane"
    parent_threads = len(tracker.threads)

    def check():
        assert not tracker.installed
        rows0 = (len(tracker.threads), len(tracker.tasks))
        run_tasks(10_000)  # warm-up: allocator arenas, caches (a one-time step)
        rss0 = rss_bytes()
        run_tasks(10_000)
        rss1 = rss_bytes()
        return {
            "rows0": rows0,
            "rows1": (len(tracker.threads), len(tracker.tasks)),
            "growth": rss1 - rss0,
        }

    report = in_child(check, tmp_path)
    assert report["rows0"] == report["rows1"] == [parent_threads, parent_tasks]
    # flat: the hooked parent grows ~600 bytes per task (5+ MiB here)
    assert report["growth"] < 1024 * 1024, f"child grew by {report['growth']} bytes"
    assert tracker.installed
    run_tasks(10)
    assert len(tracker.tasks) > parent_tasks


def test_parent_run_finalized_in_child_has_a_row_for_every_thread_id(manager, tmp_path):
    path = tmp_path / "shared.h5"
    manager.setup(file_path=str(path), track_threads=True)
    _tracker = manager.get_config().tracker  # held for the test's duration
    release = threading.Event()
    started = threading.Event()

    def parent_worker():
        for _ in range(5):
            with manager.profile_region("parent_work"):
                pass
        with manager.profile_region("open_at_fork"):  # still open when the child forks
            started.set()
            release.wait()

    with manager.profile_region("main_pre_fork"):
        pass
    worker = threading.Thread(target=parent_worker, name="parent-worker", daemon=True)
    worker.start()
    started.wait()
    try:
        _finalize_in_child_and_parent(manager, tmp_path, path, release, worker)
    finally:
        release.set()


def _finalize_in_child_and_parent(manager, tmp_path, path, release, worker):
    outer = manager.profile_region("spans_fork")
    outer.__enter__()  # opened in the parent, closed in the child (and in the parent)
    parent_pid = os.getpid()

    def check():
        outer.__exit__(None, None, None)
        with manager.profile_region("child_main"):
            t = threading.Thread(
                target=lambda: [
                    manager.profile_region("child_thread").__enter__().__exit__(None, None, None)
                    for _ in range(3)
                ],
                name="child-thread",
            )
            t.start()
            t.join()
        results = manager.finalize(return_results=True, verbose=False)
        rows = results.threads[0]
        ids = set()
        for name in results.region_names:
            ids |= {int(x) for x in results[name][0].thread_ids}
        return {
            "ids": sorted(ids),
            "indices": [t.index for t in rows],
            "names": [t.name for t in rows],
            "alive": [t.alive for t in rows],
            "native_ids": [t.native_id for t in rows],
            "pid": os.getpid(),
            "calls": {name: results[name][0].num_calls for name in results.region_names},
            "summary_calls": sum(r["num_calls"] for r in results.thread_summary(0)),
        }

    report = in_child(check, tmp_path)
    assert report["pid"] != parent_pid
    # pre-fork calls (main, parent worker) and the child's, each once
    assert report["calls"] == {
        "main_pre_fork": 1,
        "parent_work": 5,
        "spans_fork": 1,
        "child_main": 1,
        "child_thread": 3,
    }
    assert report["ids"] and set(report["ids"]) <= set(report["indices"])
    assert report["indices"] == list(range(len(report["indices"])))
    names = report["names"]
    assert names[:2] == ["MainThread", "parent-worker"] and names[-1] == "child-thread"
    worker_row = names.index("parent-worker")
    assert report["alive"][worker_row] is False, (
        "threads gone with the fork are closed in the child"
    )
    assert report["native_ids"][0] == report["pid"], "the forking thread carries on as the child's"
    assert report["summary_calls"] == sum(report["calls"].values())

    # the child's file: same ids-have-rows property, and the reference reads it
    child_file = sp.read_h5(path)
    indices = {t.index for t in child_file.threads[0]}
    for name in child_file.region_names:
        assert set(np.unique(child_file[name][0].thread_ids)) <= indices
    ref = reference_read(path)
    ref_indices = {t["index"] for t in ref["threads"]["0"]}
    for key, region in ref["regions"].items():
        assert set(region["thread_ids"]) <= ref_indices, key

    # the parent goes on: its own finalize overwrites the file atomically with its view
    outer.__exit__(None, None, None)
    release.set()
    worker.join()
    results = manager.finalize(return_results=True, verbose=False)
    assert {n: results[n][0].num_calls for n in results.region_names} == {
        "main_pre_fork": 1,
        "parent_work": 5,
        "open_at_fork": 1,
        "spans_fork": 1,
    }
    assert [t.name for t in results.threads[0]] == ["MainThread", "parent-worker"]
    assert sp.read_h5(path).region_names == results.region_names


def test_child_session_tracks_again(manager, tmp_path):
    manager.setup(file_path=str(tmp_path / "parent.h5"), track_threads=True)
    with manager.profile_region("parent"):
        pass

    def check():
        child = ProfileManager()
        with child.session(
            file_path=str(tmp_path / f"child_{os.getpid()}.h5"),
            track_threads=True,
            return_results=True,
            verbose=False,
        ) as s:
            assert child.get_config().tracker.installed
            run_threads(10, batch=10)  # registered by the hook, no regions needed
            with child.profile_region("child"):
                pass
        r = s.results
        return {
            "threads": [t.name for t in r.threads[0]],
            "regions": r.region_names,
            "path": str(r.file_path),
        }

    report = in_child(check, tmp_path)
    assert report["threads"][0] == "MainThread" and len(report["threads"]) == 11
    assert report["regions"] == ["scope_profiler.session", "child"]
    assert sp.read_h5(report["path"]).threads[0][0].name == "MainThread"


def test_child_forked_after_parent_analysis_does_not_hang(manager, tmp_path):
    """The parent's analysis ran on its rayon pool; the child's own finalize and analysis
    must not wait for pool threads that do not exist in the child."""
    runs = [
        sp.read_h5(path)
        for path in (_record_small(tmp_path / f"r{k}.h5", f"r{k}") for k in range(3))
    ]
    merged = sp.merge_results(*runs)
    assert merged.reconstruct() == [0, 1, 2]  # parallel across ranks, in the parent

    def check():
        child = sp.merge_results(*(sp.read_h5(r.file_path) for r in runs))
        ranks = child.reconstruct()
        path = _record_small(tmp_path / f"child_{os.getpid()}.h5", "c")
        return {"ranks": ranks, "calls": sp.read_h5(path)["x"][0].num_calls}

    assert in_child(check, tmp_path, timeout=60) == {"ranks": [0, 1, 2], "calls": 3}


def _record_small(path, name):
    m = ProfileManager()
    with m.session(file_path=str(path), track_threads=True, verbose=False):
        t = threading.Thread(
            target=lambda: [
                m.profile_region("x").__enter__().__exit__(None, None, None) for _ in range(3)
            ],
            name=name,
        )
        t.start()
        t.join()
    m.reset()
    return path


def test_child_forked_after_parent_wrote_a_compressed_profile_does_not_hang(tmp_path):
    """A child forked after the parent wrote a profile finishes its own finalize(): the
    writer's parallel work (per-row summaries, the compression of large columns) runs on the
    fork-safe pool, never on rayon's global pool, whose threads a forked child lacks."""
    calls = 20_000  # compressed from 16,384 events on

    def record(path):
        m = ProfileManager()
        with m.session(file_path=str(path), verbose=False):
            for _ in range(calls):
                with m.profile_region("x"):
                    pass
        m.reset()
        return sp.read_h5(str(path))["x"][0].num_calls

    assert record(tmp_path / "parent.h5") == calls

    def check():
        return {"calls": record(tmp_path / f"child_{os.getpid()}.h5")}

    assert in_child(check, tmp_path, timeout=60) == {"calls": calls}
