"""Recording with file output: HDF5 schema 3 as written at finalize, checkpoints, metadata."""

from __future__ import annotations

import os
import platform
import threading
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

from scope_profiler import ProfileManager, read_h5  # noqa: E402

SLEEP = 0.005
SLEEP_NS = int(SLEEP * 1e9)


@pytest.fixture
def manager():
    m = ProfileManager()
    yield m
    m.reset()


def _events(f, name):
    """(starts, ends, extra columns) of one region row of a schema-3 file."""
    names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][()]]
    rid = names.index(name)
    idx = f["rank_region_index"]
    row = list(idx["region_ids"][()]).index(rid)
    off, cnt = int(idx["event_offsets"][row]), int(idx["event_counts"][row])
    deltas = f["events/start_deltas"][off : off + cnt]
    durations = f["events/durations"][off : off + cnt]
    starts = np.cumsum(deltas)
    cols = {
        k: f["events"][k][off : off + cnt]
        for k in ("call_ids", "parent_ids", "thread_ids")
        if k in f["events"]
    }
    return starts, starts + durations, cols


def _omp_threads_by_ctypes() -> int:
    """The reference's way: omp_get_max_threads() of the first OpenMP runtime that loads."""
    import ctypes

    for name in ("libomp.so", "libgomp.so.1", "libiomp5.so", "libomp.dylib", "libiomp5.dylib"):
        try:
            return int(ctypes.CDLL(name).omp_get_max_threads())
        except (OSError, AttributeError):
            continue
    return int((os.environ.get("OMP_NUM_THREADS") or "1").split(",")[0])


def test_untracked_file_schema3_no_lane_columns(manager, tmp_path):
    path = tmp_path / "untracked.h5"
    with manager.session(file_path=str(path), verbose=False, return_results=True) as s:
        with manager.region("outer"):
            with manager.region("inner"):
                time.sleep(SLEEP)
    with h5py.File(path, "r") as f:
        assert int(f.attrs["scope_profiler_schema"]) == 3
        assert set(f["events"]) == {"start_deltas", "durations", "call_ids", "parent_ids"}
        assert "thread_table" not in f
        starts, ends, cols = _events(f, "inner")
        assert (ends - starts)[0] >= SLEEP_NS
        _o_starts, _o_ends, o_cols = _events(f, "outer")
        assert cols["parent_ids"].tolist() == o_cols["call_ids"].tolist()
        meta = dict(f["metadata"].attrs)
    for key in (
        "timestamp",
        "platform",
        "chip_information",
        "python_version",
        "scope_profiler_version",
        "omp_num_threads",
        "mpi_size",
        "total_cores",
        "num_nodes",
        "start_time_ns",
        "finalize_time_ns",
    ):
        assert key in meta, key
    assert int(meta["mpi_size"]) == 1 and int(meta["num_nodes"]) == 1
    assert "label" not in meta
    # the host facts (read by system calls, no `uname -p` subprocess) are what Python's
    # platform module and ctypes report, as the reference computes them
    assert meta["platform"] == platform.platform()
    assert meta["python_version"] == platform.python_version()
    assert int(meta["omp_num_threads"]) == _omp_threads_by_ctypes()
    assert int(meta["total_cores"]) == int(meta["omp_num_threads"])
    # datetime.now(UTC).isoformat() at setup (made without importing datetime)
    stamp = datetime.fromisoformat(str(meta["timestamp"]))
    assert stamp.utcoffset() == timedelta(0)
    assert abs((datetime.now(UTC) - stamp).total_seconds()) < 60
    assert str(meta["timestamp"]) == stamp.isoformat()
    assert int(meta["finalize_time_ns"]) > int(meta["start_time_ns"])
    # the results returned and the file agree
    back = read_h5(str(path))
    assert back.region_names == s.results.region_names
    np.testing.assert_array_equal(
        back["inner"][0].start_times_ns, s.results["inner"][0].start_times_ns
    )


def test_tracked_file_has_thread_ids_and_table(manager, tmp_path):
    path = tmp_path / "threads.h5"

    def worker():
        for _ in range(3):
            with manager.region("solve"):
                time.sleep(0.001)

    with manager.session(file_path=str(path), track_threads=True, verbose=False, label="lbl"):
        ts = [threading.Thread(target=worker, name=f"worker-{i}") for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    with h5py.File(path, "r") as f:
        assert "thread_ids" in f["events"]
        assert "task_ids" not in f["events"]
        tt = f["thread_table"]
        names = [n.decode() if isinstance(n, bytes) else n for n in tt["name"][()]]
        assert names == ["MainThread", "worker-0", "worker-1"]
        assert tt["index"][()].tolist() == [0, 1, 2]
        assert tt["end_ns"][0] == -1 and all(tt["end_ns"][1:] > 0)
        assert all(tt["cpu_ns"][()] > 0)
        _, _, cols = _events(f, "solve")
        assert sorted(cols["thread_ids"].tolist()) == [1, 1, 1, 2, 2, 2]
        assert f["metadata"].attrs["label"] in ("lbl", b"lbl")


def test_checkpoint_finalize_reports_only_new_calls(manager, tmp_path):
    path = tmp_path / "cp.h5"
    manager.setup(file_path=str(path), track_threads=True)

    def worker():
        with manager.region("w"):
            pass

    def batch(n, prefix):
        ts = [threading.Thread(target=worker, name=f"{prefix}{i}") for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    opened = manager.region("long")
    opened.__enter__()  # open across the first checkpoint
    with manager.region("a"):
        pass
    batch(2, "first")
    r1 = manager.finalize(verbose=False, return_results=True)
    assert r1["a"][0].num_calls == 1 and r1["w"][0].num_calls == 2
    assert "long" not in r1
    ids1 = set(np.concatenate([r1[n][0].call_ids for n in r1.region_names]).tolist())
    with manager.region("a"):
        pass
    batch(2, "second")
    opened.__exit__(None, None, None)
    r2 = manager.finalize(verbose=False, return_results=True)
    assert r2["a"][0].num_calls == 1  # only the new call
    assert r2["w"][0].num_calls == 2
    assert r2["long"][0].num_calls == 1
    ids2 = set(np.concatenate([r2[n][0].call_ids for n in r2.region_names]).tolist())
    assert min(ids2) == max(ids1) + 1  # call ids continue
    # the table is never reset: second batch continues the indices
    infos = r2.threads[0]
    assert [t.name for t in infos] == ["MainThread", "first0", "first1", "second0", "second1"]
    assert sorted(set(r2["w"][0].thread_ids.tolist())) == [3, 4]
    # the file holds the second checkpoint
    back = read_h5(str(path))
    assert back["a"][0].num_calls == 1
    assert back["long"][0].durations_ns[0] > back["a"][0].durations_ns[0]


def test_file_published_atomically_with_umask(manager, tmp_path):
    path = tmp_path / "perm.h5"
    old = os.umask(0o027)
    try:
        with manager.session(file_path=str(path), verbose=False):
            with manager.region("a"):
                pass
    finally:
        os.umask(old)
    assert path.exists()
    assert (path.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["perm.h5"]  # no temp file left


def test_nesting_failure_file_has_no_call_graph(manager, tmp_path):
    path = tmp_path / "nest.h5"
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        with manager.region("x"):
            a_in.set()
            b_in.wait()
        a_out.set()

    def b():
        a_in.wait()
        with manager.region("x"):
            b_in.set()
            a_out.wait()

    manager.setup(file_path=str(path))
    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(), tb.start()
    ta.join(), tb.join()
    with pytest.warns(RuntimeWarning, match="call graph not recorded"):
        manager.finalize(verbose=False)
    with h5py.File(path, "r") as f:
        assert "call_ids" not in f["events"] and "parent_ids" not in f["events"]
        assert f["rank_region_index/exclusive_totals"][()].tolist() == [-1]


def test_verbose_finalize_prints_summary(manager, tmp_path, capsys):
    with manager.session(file_path=str(tmp_path / "v.h5")):
        with manager.region("printed_region"):
            pass
    out = capsys.readouterr().out
    assert "printed_region" in out


def test_checkpoints_while_threads_record_lose_and_duplicate_nothing(manager, tmp_path):
    path = tmp_path / "stress.h5"
    n_threads, n_calls = 4, 3000
    manager.setup(file_path=str(path), track_threads=True, buffer_limit=16)
    start = threading.Barrier(n_threads + 1)

    def worker():
        start.wait()
        for i in range(n_calls):
            with manager.region("outer"):
                with manager.region("inner"):
                    if i % 500 == 0:
                        time.sleep(0.001)

    ts = [threading.Thread(target=worker, name=f"s{i}") for i in range(n_threads)]
    for t in ts:
        t.start()
    start.wait()
    results = []
    while any(t.is_alive() for t in ts):
        results.append(manager.finalize(verbose=False, return_results=True))
        time.sleep(0.002)
    for t in ts:
        t.join()
    results.append(manager.finalize(verbose=False, return_results=True))
    totals = {"outer": 0, "inner": 0}
    all_ids = []
    for r in results:
        for name in totals:
            if name in r:
                reg = r[name][0]
                totals[name] += reg.num_calls
                all_ids.append(reg.call_ids)
                assert np.all(reg.end_times_ns >= reg.start_times_ns)
    assert totals == {"outer": n_threads * n_calls, "inner": n_threads * n_calls}
    ids = np.concatenate(all_ids)
    assert np.unique(ids).size == ids.size
    assert len(results) >= 2
    assert manager.region("outer").num_calls == n_threads * n_calls


STREAMED = """
import os, sys, threading
import scope_profiler as sp

sp.setup(file_path=sys.argv[1], flush_interval=0.05, track_threads=True)

def work(n):
    for _ in range(n):
        with sp.region("outer"):
            with sp.region("inner"):
                pass

threads = [threading.Thread(target=work, args=(int(sys.argv[2]),)) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sp.get_config()._native.flush_now()
os._exit(0)  # killed: no finalize()
"""


def test_a_streamed_sidecar_costs_about_a_byte_per_call_and_recovers_every_call(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "streamed.h5"
    per_thread = 75_000  # 300 000 calls
    subprocess.run(
        [sys.executable, "-c", STREAMED, str(path), str(per_thread)], check=True, timeout=300
    )
    (sidecar,) = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    calls = 4 * per_thread
    assert sidecar.stat().st_size <= 6 * calls, sidecar.stat().st_size / calls
    with pytest.warns(RuntimeWarning, match="recovered 300000 call"):
        back = read_h5(str(path))
    assert back["outer"][0].num_calls == back["inner"][0].num_calls == calls // 2
    workers = {t.index for t in back.threads[0] if t.name.endswith("(work)")}
    assert len(workers) == 2 and set(back["inner"][0].thread_ids.tolist()) == workers
    # recovered as recorded: each inner call inside its thread's outer call
    assert np.all(back["inner"][0].exclusive_durations_ns == back["inner"][0].durations_ns)
    assert not sidecar.exists()
