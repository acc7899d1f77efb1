"""Recording with file output: HDF5 schema 3 as written at finalize, checkpoints, metadata."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import scope_profiler as sp

h5py = pytest.importorskip("h5py")

from scope_profiler import ProfileManager, read_h5  # noqa: E402

SLEEP = 0.005
SLEEP_NS = int(SLEEP * 1e9)


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


def _record_calls(manager, name: str, count: int, sleep_s: float = 0.002) -> None:
    import time

    for _ in range(count):
        with manager.profile_region(name):
            time.sleep(sleep_s)


def _assert_file_has(path, expected, *, min_duration_s: float) -> None:
    """The file at ``path`` holds exactly ``expected`` (a ``ProfilingResults``) calls."""
    back = sp.read_h5(path)
    assert back.region_names == expected.region_names
    for name in expected.region_names:
        ours, theirs = back[name][0], expected[name][0]
        assert ours.num_calls == theirs.num_calls
        np.testing.assert_array_equal(ours.start_times_ns, theirs.start_times_ns)
        np.testing.assert_array_equal(ours.end_times_ns, theirs.end_times_ns)
    work = back["work"][0]
    assert (np.asarray(work.durations) >= min_duration_s).all()


# A failed write keeps the run: the calls are retired only once the file is published, so
# `run.results` and `last_results()` hold the run and a retry writes every call. The error
# is the OSError subclass of its errno, naming the file."
@pytest.mark.parametrize("failure", ["missing_dir", "is_a_directory", "not_a_directory"])
def test_a_failed_write_keeps_the_run_and_a_retry_writes_every_call(tmp_path, failure):
    import errno
    import os
    import shutil

    target = tmp_path / "out" / "run.h5"
    expected_error, expected_errno = {
        "missing_dir": (FileNotFoundError, errno.ENOENT),
        "is_a_directory": (IsADirectoryError, errno.EISDIR),
        "not_a_directory": (NotADirectoryError, errno.ENOTDIR),
    }[failure]
    target.parent.mkdir()  # setup() refuses a path it cannot write: it breaks after setup()
    manager = ProfileManager()
    try:
        run = manager.setup(file_path=str(target), track_threads=True)
        if failure == "is_a_directory":
            target.mkdir()  # a directory where the file should go
        else:
            target.parent.rmdir()
        if failure == "not_a_directory":
            (tmp_path / "out").write_text("a regular file where the directory should be")
        _record_calls(manager, "work", 5)
        with pytest.raises(expected_error) as info:
            run.finalize(verbose=False)
        assert info.value.errno == expected_errno
        assert info.value.filename == str(target)
        assert "run.h5" in str(info.value)
        # the run is in memory although the file was not written
        assert run.results is not None and manager.last_results() is run.results
        failed = run.results
        assert failed["work"][0].num_calls == 5
        assert (np.asarray(failed["work"][0].durations) >= 0.002).all()
        # make the path writable, record more, retry: every call is in the file
        if failure == "is_a_directory":
            target.rmdir()
        elif failure == "not_a_directory":
            os.remove(tmp_path / "out")
        if not target.parent.exists():
            target.parent.mkdir()
        _record_calls(manager, "work", 2)
        written = run.finalize(verbose=False)
        assert written["work"][0].num_calls == 7
        np.testing.assert_array_equal(
            written["work"][0].start_times_ns[:5], failed["work"][0].start_times_ns
        )
        np.testing.assert_array_equal(written["work"][0].call_ids, np.arange(7))
        _assert_file_has(target, written, min_duration_s=0.002)
        # and the calls are retired only now: the next finalize reports new calls only
        _record_calls(manager, "work", 1)
        again = run.finalize(verbose=False)
        assert again["work"][0].num_calls == 1
        assert again["work"][0].call_ids.tolist() == [7]
    finally:
        manager.reset()
        shutil.rmtree(tmp_path / "out", ignore_errors=True)


# The same through `session()`: the error leaves the `with`, the session's
# results hold the run, and `finalize()` once the directory exists writes every call
# (the session's root region included).
def test_a_failed_session_write_keeps_the_results_and_finalize_writes_them(tmp_path):
    target = tmp_path / "missing" / "s.h5"
    target.parent.mkdir()  # setup() refuses a path it cannot write: it goes after setup()
    manager = ProfileManager()
    try:
        with pytest.raises(FileNotFoundError) as info:
            with manager.session(file_path=str(target), return_results=True, verbose=False) as s:
                _record_calls(manager, "work", 3)
                target.parent.rmdir()
        assert info.value.filename == str(target)
        assert s.results is not None
        assert s.results["work"][0].num_calls == 3
        assert s.results["scope_profiler.session"][0].num_calls == 1
        target.parent.mkdir()
        retried = manager.finalize(verbose=False, return_results=True)
        assert retried["work"][0].num_calls == 3
        assert retried["scope_profiler.session"][0].num_calls == 1
        _assert_file_has(target, retried, min_duration_s=0.002)
    finally:
        manager.reset()


# A read-only directory refuses with PermissionError (EACCES) - unless
# this process may write it anyway (root), then there is nothing to refuse.
def test_a_read_only_directory_is_a_permission_error_and_the_run_is_kept(tmp_path):
    import errno
    import os
    import stat

    ro = tmp_path / "ro"
    ro.mkdir()
    manager = ProfileManager()
    try:
        try:
            # setup() refuses a directory it cannot write: it becomes read-only after setup()
            run = manager.setup(file_path=str(ro / "run.h5"))
            ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
            if os.access(ro, os.W_OK):
                pytest.skip("this process can write read-only directories (root)")
            _record_calls(manager, "work", 2)
            with pytest.raises(PermissionError) as info:
                run.finalize(verbose=False)
            assert info.value.errno == errno.EACCES
            assert run.results["work"][0].num_calls == 2
            ro.chmod(stat.S_IRWXU)
            assert run.finalize(verbose=False)["work"][0].num_calls == 2
            assert sp.read_h5(ro / "run.h5")["work"][0].num_calls == 2
        finally:
            manager.reset()
    finally:
        ro.chmod(stat.S_IRWXU)


# A write killed while it runs leaves its hidden temp file (`.NAME.h5.TAG-PID.XXXXXX.tmp`).
# The writer's pid (and namespace) is in the temp name; the next publication into that
# directory removes those of dead writers (older than a few seconds), never a live writer's,
# a young one, or one of another namespace.
def test_temp_files_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from scope_profiler import ProfileManager
            ProfileManager.setup(file_path=sys.argv[1], track_threads=True)
            region = ProfileManager.profile_region("many")
            for _ in range(1_500_000):
                with region:
                    pass
            print("writing", flush=True)
            ProfileManager.finalize(verbose=False)
            print("done", flush=True)
            """
        )
    )
    target = tmp_path / "big.h5"
    temps: list = []
    for _attempt in range(5):  # the kill must land inside the write
        child = subprocess.Popen(
            [sys.executable, str(script), str(target)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
        deadline = time.monotonic() + 30
        while not (temps := list(tmp_path.glob(".big.h5.*.tmp"))) and time.monotonic() < deadline:
            time.sleep(0.002)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        temps = list(tmp_path.glob(".big.h5.*.tmp"))
        if temps:
            break
    assert len(temps) == 1, os.listdir(tmp_path)
    dead = temps[0]
    assert f"-{child.pid}." in dead.name, dead.name
    tag = dead.name.split(".")[-3].split("-")[0]
    old = time.time() - 60
    os.utime(dead, (old, old))
    live = tmp_path / f".big.h5.{tag}-{os.getpid()}.AAAAAA.tmp"  # this process: alive
    young = tmp_path / f".big.h5.{tag}-{child.pid}.BBBBBB.tmp"  # dead, but just written
    foreign = tmp_path / f".big.h5.{'0' if tag[0] != '0' else '1'}{tag[1:]}-{child.pid}.CCCCCC.tmp"
    unrelated = tmp_path / ".big.h5.DDDDDD.tmp"  # no pid: not ours to judge
    for p in (live, foreign, unrelated):
        p.write_bytes(b"x")
        os.utime(p, (old, old))
    young.write_bytes(b"x")
    with ProfileManager.session(file_path=str(tmp_path / "next.h5"), verbose=False):
        pass
    left = sorted(p.name for p in tmp_path.glob(".*.tmp"))
    assert left == sorted(p.name for p in (live, young, foreign, unrelated)), left
    # a later publication, once the young one is old, removes it too
    os.utime(young, (old, old))
    with ProfileManager.session(file_path=str(tmp_path / "next.h5"), verbose=False):
        pass
    assert sorted(p.name for p in tmp_path.glob(".*.tmp")) == sorted(
        p.name for p in (live, foreign, unrelated)
    )


# A tracked run that recorded no region writes its thread table and `num_ranks` 1 to the
# file, as in memory (the reference's file says 0 ranks, no threads: a defect we do not copy).
def _tracked_run_without_regions(path):
    """A tracked session with an `idle` thread and no region, written to `path`; the run
    finalize returned."""
    import threading

    try:
        ProfileManager.setup(file_path=str(path), track_threads=True)
        worker = threading.Thread(target=lambda: None, name="idle")
        worker.start()
        worker.join()
        memory = ProfileManager.finalize(return_results=True, verbose=False)
    finally:
        ProfileManager.reset()
    return memory


def test_a_tracked_run_without_regions_keeps_its_threads_in_the_file(tmp_path):
    path = tmp_path / "empty.h5"
    memory = _tracked_run_without_regions(path)
    names = [t.name for t in memory.threads[0]]
    assert memory.num_ranks == 1 and "idle" in names, names
    for r in (sp.read_h5(str(path)), sp.read_h5_summary(str(path))):
        assert r.num_ranks == 1
        assert [t.name for t in r.threads[0]] == names
        assert r.region_names == []


def test_the_reference_reads_a_tracked_run_without_regions(tmp_path):
    from helpers import reference_python

    path = tmp_path / "empty.h5"
    names = [t.name for t in _tracked_run_without_regions(path).threads[0]]
    # the reference opens it, thread table included
    code = "import sys, scope_profiler as sp; print(len(sp.read_h5(sys.argv[1]).threads[0]))"
    out = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.split() == [str(len(names))], out.stderr


# `setup()` puts this package's version into the run metadata without importing
# importlib.metadata (with email, zipfile, csv ..., ~0.1 s of every run): the version is
# compiled into the extension.
def test_setup_reads_the_version_without_importlib_metadata(tmp_path):
    from importlib.metadata import version

    out_file = tmp_path / "run.h5"
    code = textwrap.dedent(
        f"""
        import json, sys
        from scope_profiler import ProfileManager as PM
        PM.setup(output={str(out_file)!r}, replace=True)
        loaded = "importlib.metadata" in sys.modules
        with PM.profile_region("r"):
            pass
        PM.finalize(verbose=False)
        import scope_profiler as sp
        print(json.dumps({{"loaded": loaded, "version": sp.__version__}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["loaded"] is False
    assert got["version"] == version("scope-profiler-rs")
    assert sp.read_h5(out_file).metadata["scope_profiler_version"] == got["version"]


# A write the OS refuses (a full disk: 'No space left on device') says the OS's reason, not
# just which chunk was refused. A file size limit (RLIMIT_FSIZE, EFBIG) stands in for the
# full disk: no mount needed.
FILE_SIZE_LIMITED = """
import resource, signal, sys
import scope_profiler as sp
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, hard))
sp.setup(file_path=sys.argv[1])
r = sp.profile_region("r")
for _ in range(200_000):
    with r:
        pass
try:
    sp.finalize(verbose=False)
except OSError as e:
    print(e.errno, e)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
sp.finalize(verbose=False)  # the run was kept: written once the limit is gone
print(sp.read_h5(sys.argv[1])["r"][0].num_calls)
"""


def test_a_refused_write_says_the_reason_the_os_gave(tmp_path):
    out = tmp_path / "big.h5"
    proc = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMITED, str(out)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    first, count = proc.stdout.strip().splitlines()
    assert first.startswith("27 ") and "File too large (os error 27)" in first, first
    assert f"could not write {out}" in first and "HDF5 refused chunk" in first, first
    assert count == "200000"
    assert [p.name for p in tmp_path.iterdir()] == ["big.h5"]  # no temporary file left


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
