"""Results of a run recorded in this process: in memory (``finalize(return_results=True)``)
and read back from the file it wrote; both views go through the same Rust run model."""

from __future__ import annotations

import threading
import time

import numpy as np
import scope_profiler as sp


def _workload():
    def work(n):
        for _ in range(n):
            with sp.region("solve"):
                with sp.region("inner"):
                    time.sleep(0.0005)

    threads = [threading.Thread(target=work, args=(3 + i,), name=f"w{i}") for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with sp.region("main_only"):
        time.sleep(0.0005)


def _record(path, write_file):
    sp.reset()
    try:
        sp.setup(file_path=str(path), track_threads=True, deactivate_file_output=not write_file)
        _workload()
        return sp.finalize(return_results=True)
    finally:
        sp.reset()


def _check(results):
    assert results.region_names == ["solve", "inner", "main_only"]
    solve = results["solve"][0]
    assert solve.num_calls == 3 + 4 + 5
    # Like the reference: threads are numbered in registration order, and with plain
    # setup() the main thread registers when it first records (after the workers here).
    assert solve.threads == [0, 1, 2]
    assert [solve.for_thread(i).num_calls for i in (0, 1, 2)] == [3, 4, 5]
    inner = results["inner"][0]
    # solve's exclusive time = its duration minus its one inner call, per call.
    by_thread_solve = np.concatenate([solve.for_thread(i).durations_ns for i in (0, 1, 2)])
    by_thread_inner = np.concatenate([inner.for_thread(i).durations_ns for i in (0, 1, 2)])
    assert int(solve.exclusive_durations_ns.sum()) == int(
        by_thread_solve.sum() - by_thread_inner.sum()
    )
    assert [t.name for t in results.threads[0]] == ["w0", "w1", "w2", "MainThread"]
    summary = results.thread_summary(0)
    assert [row["num_calls"] for row in summary] == [6, 8, 10, 1]
    calls = sp.build_call_arrays(results.get_regions(), 0)
    lanes = [lane for lane, _ in sp.split_by_lane(calls)]
    assert lanes == [-5, -4, -3, -2]
    assert [results.lane_label(lane) for lane in lanes] == ["MainThread", "w2", "w1", "w0"]
    # Finalize-assigned call ids are unique per rank and parents precede children.
    ids = np.concatenate([r[0].call_ids for r in results])
    assert np.unique(ids).size == ids.size


def test_in_memory_results(tmp_path):
    _check(_record(tmp_path / "memory.h5", write_file=False))


def test_file_results_match_memory(tmp_path):
    path = tmp_path / "run.h5"
    results = _record(path, write_file=True)
    again = sp.read_h5(path)
    _check(again)
    for name in results.region_names:
        a, b = results[name][0], again[name][0]
        assert a.start_times_ns.tolist() == b.start_times_ns.tolist()
        assert a.end_times_ns.tolist() == b.end_times_ns.tolist()
        assert a.exclusive_duration == b.exclusive_duration
        assert a.call_ids.tolist() == b.call_ids.tolist()
    (doc,) = sp.export_speedscope(again, tmp_path / "run.speedscope.json", verbose=False)
    import json

    # Main thread first would put index 0 first: here the workers registered before it.
    names = [p["name"] for p in json.loads(doc.read_text())["profiles"]]
    assert names == ["rank 0 - w0", "rank 0 - w1", "rank 0 - w2", "rank 0 - MainThread"]
