"""read_h5 / read_h5_summary on inputs that are not ordinary profiles: device files, valid
files whose numeric data spell a heap signature, a damaged metadata string."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import scope_profiler as sp
from helpers import ASYNC, THREADS, run_cli
from scope_profiler import MPIRegion, ProfileManager, ProfilingResults, Region
from scope_profiler.exceptions import CorruptProfileError

h5py = pytest.importorskip("h5py")


@pytest.mark.parametrize("reader", ["read_h5", "read_h5_summary"])
def test_a_device_file_is_refused_at_once(reader):
    # /dev/zero has no end: reading it whole would never return (and grow without bound)
    code = (
        "import scope_profiler as sp\n"
        f"try:\n    sp.{reader}('/dev/zero')\n"
        "except sp.exceptions.CorruptProfileError as e:\n    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "refused: /dev/zero is not a regular file" in out.stdout, out.stderr


def _record(path, calls=5):
    m = ProfileManager()
    try:
        with m.session(file_path=str(path), verbose=False):
            for _ in range(calls):
                with m.profile_region("r"):
                    pass
    finally:
        m.reset()


def test_event_data_spelling_a_heap_signature_is_read(tmp_path):
    """Int64 durations whose bytes read 'GCOL', version 1, size 32, then an object 0 of size 0
    (the pattern on which HDF5 loops) are ordinary data: the heap check skips event data."""
    path = tmp_path / "p.h5"
    _record(path)
    pattern = [int.from_bytes(b"GCOL\x01\x00\x00\x00", "little"), 32, 0, 0, 7]
    with h5py.File(path, "r+") as f:
        names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]
        rows = {
            names[rid]: (int(o), int(c))
            for rid, o, c in zip(
                f["rank_region_index/region_ids"][:],
                f["rank_region_index/event_offsets"][:],
                f["rank_region_index/event_counts"][:],
            )
        }
        lo, n = rows["r"]
        assert n == 5
        durations = f["events/durations"][:]
        deltas = f["events/start_deltas"][:]
        durations[lo : lo + n] = pattern
        deltas[lo + 1 : lo + n] = 10_000_000_000  # 10 s apart: no overlaps
        for name, (slo, sn) in rows.items():
            if name != "r":  # the session region spans everything
                durations[slo : slo + sn] = 100_000_000_000
        f["events/durations"][:] = durations
        f["events/start_deltas"][:] = deltas
    assert b"GCOL\x01\x00\x00\x00" + struct.pack("<q", 32) in path.read_bytes()
    results = sp.read_h5(path)
    np.testing.assert_array_equal(results["r"][0].durations_ns, pattern)
    assert sp.read_h5_summary(path)["r"][0].num_calls == 5


def _heap_objects(data: bytes):
    """(offset of the object header, object bytes) of every object of every global heap."""
    at = data.find(b"GCOL")
    while at >= 0:
        size = struct.unpack_from("<Q", data, at + 8)[0]
        p = at + 16
        while p + 16 <= at + size:
            index, _, _, length = struct.unpack_from("<HHIQ", data, p)
            if index == 0:
                break
            yield p, data[p + 16 : p + 16 + length]
            p += 16 + (length + 7) // 8 * 8
        at = data.find(b"GCOL", at + 4)


def test_a_damaged_metadata_string_is_an_error_not_a_missing_key(tmp_path):
    path = tmp_path / "m.h5"
    _record(path, calls=1)
    timestamp = sp.read_h5(path).metadata["timestamp"].encode()
    data = bytearray(path.read_bytes())
    header = next(p for p, obj in _heap_objects(bytes(data)) if obj.startswith(timestamp))
    struct.pack_into("<H", data, header, 999)  # no heap object 999: HDF5 reports a bad pointer
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CorruptProfileError, match=r"metadata attribute 'timestamp'"):
        sp.read_h5(damaged)


def test_fixed_length_strings_are_read(tmp_path):
    """Other tools write numpy S<n> (fixed-length) strings: names and metadata still read."""
    path = tmp_path / "f.h5"
    _record(path, calls=2)
    want = sp.read_h5(path).region_names
    with h5py.File(path, "r+") as f:
        names = [n.decode() for n in f["region_table/names"][:]]
        del f["region_table/names"]
        f.create_dataset(
            "region_table/names", data=np.array([n.encode() for n in names], dtype="S40")
        )
        f["metadata"].attrs["label"] = np.bytes_(b"fixed label")
    results = sp.read_h5(path)
    assert results.region_names == want
    assert results.metadata["label"] == "fixed label"
    assert sp.read_h5_summary(path).region_names == want


def test_names_with_nul_are_written_not_lost(tmp_path):
    """HDF5 strings cannot hold NUL. A thread name with one (the program's own) is written with
    it escaped visibly (``\\x00``) instead of failing finalize, which would lose the run; a
    region name with one is refused when the region is created (docs/names.md)."""
    import threading

    path = tmp_path / "nul.h5"
    m = ProfileManager()
    try:
        with m.session(file_path=str(path), verbose=False, track_threads=True):
            with pytest.raises(ValueError, match="NUL"):
                m.profile_region("in\0thread")

            def work():
                with m.profile_region("in thread"):
                    pass

            t = threading.Thread(target=work, name="w\0x")
            t.start()
            t.join()
    finally:
        m.reset()
    results = sp.read_h5(path)
    assert results["in thread"][0].num_calls == 1
    assert "w\\x00x" in [info.name for info in results.threads[0]]


def _copy(src, tmp_path, name="damaged.h5"):
    dst = tmp_path / name
    shutil.copyfile(src, dst)
    return dst


def _facts(results: ProfilingResults) -> dict:
    """What a read gives, to compare two reads: names, calls, Σ durations and exclusive."""
    return {
        r["name"]: (
            r["num_calls"],
            round(r["inclusive_duration"], 12),
            round(r["exclusive_duration"], 12),
        )
        for r in results.summary()
    }


def _written(tmp_path, name: str, n: int, metadata: list[dict] | None = None):
    """The path of a file we write: region `name` with `n` calls of 10 ns, 20 ns apart."""
    starts = np.arange(n, dtype=np.int64) * 20
    region = Region(starts, starts + 10, event_metadata=metadata)
    path = tmp_path / f"{name}.h5"
    ProfilingResults({name: MPIRegion(name, {0: region})})._native_run().write_h5(str(path))
    return path


# A vlen string length of 0xffffffff in the task table is refused from the lengths, before
# any allocation (not after allocating the 4.2 GB it claims).
def test_a_damaged_string_length_is_refused_without_allocating(tmp_path):
    path = _copy(ASYNC, tmp_path)
    with h5py.File(ASYNC) as f:
        at = f["task_table/name"].id.get_offset()  # contiguous: the 16-byte descriptors
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"\xff\xff\xff\xff")
    code = textwrap.dedent(
        f"""
        import resource, scope_profiler as sp
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            sp.read_h5({str(path)!r})
        except sp.CorruptProfileError as e:
            print("ERR", e)
        print("GROWTH_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert str(path) in lines["ERR"] and "task_table/name" in lines["ERR"], lines
    assert "damaged strings" in lines["ERR"] and "claim 4294967343 bytes" in lines["ERR"], lines
    assert int(lines["GROWTH_KB"]) < 200_000, lines  # not the 4 GiB the length claims


# Files that are not what they seem never load as empty or silently wrong profiles: each is
# refused with CorruptProfileError, or read correctly.
def test_foreign_rank_groups_are_not_an_empty_profile(tmp_path):
    path = tmp_path / "foreign.h5"
    with h5py.File(path, "w") as f:
        f.create_group("rank0").create_dataset("x", data=[1, 2, 3])
    with pytest.raises(sp.CorruptProfileError, match="not a scope-profiler profile"):
        sp.read_h5(str(path))


def test_a_columnar_file_without_its_schema_attribute_reads_as_columnar(tmp_path):
    path = _copy(ASYNC, tmp_path)
    with h5py.File(path, "r+") as f:
        del f.attrs["scope_profiler_schema"]
    lost, original = sp.read_h5(str(path)), sp.read_h5(str(ASYNC))
    assert _facts(lost) == _facts(original) and len(_facts(lost)) == 4
    assert (
        [t.name for t in lost.tasks[0]]
        == [t.name for t in original.tasks[0]]
        == [f"Task-{i}" for i in range(1, 10)]
    )


def test_a_region_table_that_is_an_int_array_is_refused(tmp_path):
    path = _copy(ASYNC, tmp_path)
    with h5py.File(path, "r+") as f:
        del f["region_table"]
        f["region_table"] = np.arange(4)
    with pytest.raises(sp.CorruptProfileError, match="region_table"):
        sp.read_h5(str(path))


def test_duplicated_region_names_and_rows_are_refused(tmp_path):
    names = _copy(ASYNC, tmp_path, "names.h5")
    with h5py.File(names, "r+") as f:
        first = f["region_table/names"][0]
        f["region_table/names"][1] = first
    with pytest.raises(sp.CorruptProfileError, match="twice in region_table/names"):
        sp.read_h5(str(names))
    rows = _copy(ASYNC, tmp_path, "rows.h5")
    with h5py.File(rows, "r+") as f:
        ids = f["rank_region_index/region_ids"]
        ids[1] = ids[0]
    with pytest.raises(sp.CorruptProfileError, match="two rank_region_index rows for region"):
        sp.read_h5(str(rows))


def test_an_exclusive_total_above_the_inclusive_one_is_not_believed(tmp_path):
    path = _written(tmp_path, "x", 1000)
    honest = _facts(sp.read_h5(str(path)))
    with h5py.File(path, "r+") as f:
        f["rank_region_index/exclusive_totals"][0] = 10**15
    assert _facts(sp.read_h5(str(path))) == honest == {"x": (1000, 1e-05, 1e-05)}
    with pytest.raises(sp.CorruptProfileError, match="more than its inclusive total"):
        sp.read_h5_summary(str(path))


_READER = textwrap.dedent(
    """
    import json, sys, time, scope_profiler as sp
    path, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    seen, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            r = sp.read_h5(path)
            seen.append([[g["name"], g["num_calls"], g["inclusive_duration"]] for g in r.summary()])
        except sp.CorruptProfileError as e:
            seen.append(str(e)[:200])
    with open(out, "w") as f:
        json.dump(seen, f)
    """
)


# Another process rewrites the file in place (cp new.h5 run.h5) or replaces it while
# read_h5 runs: the reader survives (no SIGBUS), and every read is of one of the two files,
# never a mix, or a CorruptProfileError.
@pytest.mark.parametrize("how", ["in place", "rename"])
def test_a_file_rewritten_while_read_is_one_file_or_an_error(tmp_path, how):
    a, b = _written(tmp_path, "a", 200_000), _written(tmp_path, "b", 80_000)
    expect = [[[k, v[0]] for k, v in _facts(sp.read_h5(str(p))).items()] for p in (a, b)]
    target = tmp_path / "run.h5"
    shutil.copyfile(a, target)
    seen_file = tmp_path / "seen.json"
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(target), "4", str(seen_file)],
        stderr=subprocess.PIPE,
        text=True,
    )
    k = 0
    while reader.poll() is None:
        src = (a, b)[k % 2]
        if how == "in place":
            shutil.copyfile(src, target)  # truncates and rewrites the same inode, as cp does
            # some reads fall between rewrites, some across them (pauses long enough for a
            # read on a loaded 2-core machine)
            time.sleep(0.05 * (k % 4))
        else:
            shutil.copyfile(src, tmp_path / "next.h5")
            os.replace(tmp_path / "next.h5", target)
        k += 1
    _, err = reader.communicate()
    assert reader.returncode == 0, (reader.returncode, err[-2000:])
    seen = json.loads(seen_file.read_text())
    reads = [s for s in seen if not isinstance(s, str)]
    assert k > 10 and len(reads) > 5, (k, len(seen), seen[:3])
    for s in reads:
        assert [[name, calls] for name, calls, _ in s] in expect, s
        assert s[0][2] == pytest.approx(s[0][1] * 1e-8)  # 10 ns per call: the totals of that file
    errors = [s for s in seen if isinstance(s, str)]
    for e in errors:
        assert str(target) in e, e
    print(f"{how}: {k} rewrites, {len(reads)} reads, {len(errors)} CorruptProfileError")


# Single bit flips in a timestamp or a lane id are refused when the file is read, naming the
# file and the column, not later at summary() with a NestingError that names no file.
@pytest.mark.parametrize(
    "column, value, why",
    [
        ("events/durations", -5, "ends before it starts"),
        ("events/thread_ids", 2**40, "beyond any thread or task table"),
        ("events/task_ids", 2**33, "beyond any thread or task table"),
    ],
)
def test_damaged_timestamps_and_lane_ids_are_refused_when_read(tmp_path, column, value, why):
    path = _copy(ASYNC, tmp_path)
    with h5py.File(path, "r+") as f:
        f[column][0] = value
    with pytest.raises(sp.CorruptProfileError, match=why) as e:
        sp.read_h5(str(path))
    assert str(path) in str(e.value) and column in str(e.value)


# An `.h5` with negative `thread_table/cpu_ns` or `end_ns = 0`, or with thread ids that have
# no thread row: the bad values are unknown (`-`, None), never negative times, the calls of a
# thread id without a row are listed under `thread N`, and one note / RuntimeWarning names
# the file, the table, the rows and the problem; the rest of the table reads as usual.
def _damaged_threads_file(tmp_path: Path) -> Path:
    bad = tmp_path / "damaged.h5"
    shutil.copyfile(THREADS, bad)
    with h5py.File(bad, "r+") as f:
        table = f["thread_table"]
        table["cpu_ns"][1] = -5000  # worker-0
        table["end_ns"][2] = 0  # worker-1, started at 5846420
        ids = f["events/thread_ids"]
        values = ids[:]
        values[values == 4] = 7  # worker-3's 16 calls: a thread id without a row
        ids[...] = values
    return bad


def test_a_damaged_thread_table_is_flagged_not_misreported(tmp_path):
    bad = _damaged_threads_file(tmp_path)
    proc = run_cli("threads", bad)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1:] == [
        "  index name        alive       wall        cpu     calls     region",
        "      0 MainThread    yes    50.0 ms     140 ms         2    49.9 ms",
        "      1 worker-0       no    7.40 ms          -        10    7.24 ms",
        "      2 worker-1       no          -    1.86 ms        12    44.8 ms",
        "      3 worker-2       no    13.2 ms    1.59 ms        14    13.1 ms",
        "      4 worker-3       no    15.5 ms    1.83 ms         0        0 s",
        "      7 thread 7        -          -          -        16    15.4 ms",
        f"  note: {bad}: thread_table of rank 0 has times no recording gives, shown as unknown "
        "(-): row 1 (thread 1 'worker-0'): cpu_ns -5000 is negative; row 2 (thread 2 "
        "'worker-1'): end_ns 0 is before start_ns 5846420; 16 call(s) on rank 0 carry thread "
        "id(s) 7 with no thread_table row: listed as `thread N` with unknown times. The file "
        "is damaged.",
    ]
    # the same in Python: None for what is unknown, one warning naming the file and rows
    r = sp.read_h5(str(bad))
    with pytest.warns(RuntimeWarning) as caught:
        rows = r.thread_summary()
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith(f"{bad}: thread_table of rank 0 has times no recording gives")
    assert "row 1 (thread 1 'worker-0'): cpu_ns -5000 is negative" in message
    assert [(row["index"], row["num_calls"]) for row in rows] == [
        (0, 2),
        (1, 10),
        (2, 12),
        (3, 14),
        (4, 0),
        (7, 16),
    ]
    assert rows[1]["cpu_time"] is None and rows[1]["wall_time"] == pytest.approx(0.007397, abs=1e-6)
    assert rows[2]["wall_time"] is None and rows[2]["cpu_time"] == pytest.approx(0.001861, abs=1e-6)
    assert (rows[5]["name"], rows[5]["wall_time"], rows[5]["cpu_time"]) == ("thread 7", None, None)
    # the reference's own file: no warning, every value as before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sound = sp.read_h5(str(THREADS)).thread_summary()
    assert [row["num_calls"] for row in sound] == [2, 10, 12, 14, 16]
    assert all(row["cpu_time"] > 0 and row["wall_time"] > 0 for row in sound)
