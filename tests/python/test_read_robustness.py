"""read_h5 / read_h5_summary on inputs that are not ordinary profiles: device files, valid
files whose numeric data spell a heap signature, a damaged metadata string."""

from __future__ import annotations

import struct
import subprocess
import sys

import numpy as np
import pytest
import scope_profiler as sp
from scope_profiler import ProfileManager
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
    region name with one is refused when the region is created (issue 13 item 16)."""
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
