"""A generator of broken profile files (>= 40 kinds: truncations, flipped bytes near
structure signatures, extreme integers in index/table fields and vlen descriptors, foreign
layouts).

Every file is read by `read_h5` and `read_h5_summary`, and a run that loads is analysed
(summary, thread summary, reconstruction, one export), in a child process with its address
space capped (3 GiB) and a timeout: no case may crash it (signal, panic), hang, allocate
without bound, or fail with anything but the package's own errors - a `CorruptProfileError`
naming the file, an `HDF5SchemaError`, or a `NestingError` from the analysis of a run whose
timestamps were damaged.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
from helpers import DATASETS

ROOT = Path(__file__).resolve().parents[2]
BASES = {
    "async": DATASETS / "reference" / "async.h5",
    "threads": DATASETS / "reference" / "threads.h5",
    "gzip": ROOT / "formats" / "tests" / "data" / "threads-gzip.h5",
    "schema1": DATASETS / "compat" / "schema-1.h5",
}
SIGNATURES = [
    b"\x89HDF\r\n\x1a\n",
    b"OHDR",
    b"OCHK",
    b"TREE",
    b"HEAP",
    b"GCOL",
    b"SNOD",
    b"BTHD",
    b"BTLF",
]
SIGNATURES += [b"BTIN", b"FRHP", b"FHDB", b"FHIB", b"FSHD", b"FSSE"]

Maker = Callable[[Path], None]


def _bytes_edit(base: str, edit: Callable[[bytearray], bytes | bytearray]) -> Maker:
    def make(path: Path) -> None:
        path.write_bytes(bytes(edit(bytearray(BASES[base].read_bytes()))))

    return make


def _h5_edit(base: str, edit: Callable[[h5py.File], None]) -> Maker:
    def make(path: Path) -> None:
        shutil.copyfile(BASES[base], path)
        with h5py.File(path, "r+") as f:
            edit(f)

    return make


def _new_h5(build: Callable[[h5py.File], None]) -> Maker:
    def make(path: Path) -> None:
        with h5py.File(path, "w") as f:
            build(f)

    return make


def _truncations() -> dict[str, Maker]:
    out: dict[str, Maker] = {}
    for base in ("async", "gzip"):
        for label, cut in [("0", lambda n: 0), ("7", lambda n: 7), ("512", lambda n: 512)]:
            out[f"truncated {base} at {label} bytes"] = _bytes_edit(
                base, lambda b, cut=cut: b[: cut(len(b))]
            )
        for frac in (0.125, 0.25, 0.5, 0.75, 0.95):
            out[f"truncated {base} at {frac:g}"] = _bytes_edit(
                base, lambda b, f=frac: b[: int(len(b) * f)]
            )
        out[f"{base} minus its last byte"] = _bytes_edit(base, lambda b: b[:-1])
    return out


def _signature_flips() -> dict[str, Maker]:
    """A byte right after each structure signature (version, flags, sizes, addresses)
    inverted, at its first and last occurrence."""
    out: dict[str, Maker] = {}
    for base in ("async", "gzip", "schema1"):
        data = BASES[base].read_bytes()
        for sig in SIGNATURES:
            starts = [data.find(sig), data.rfind(sig)]
            for which, at in zip(("first", "last"), starts):
                if at < 0 or (which == "last" and at == starts[0]):
                    continue
                for delta in (len(sig), len(sig) + 1, len(sig) + 4, len(sig) + 8):
                    name = f"{base}: {sig[-4:].decode('latin1')} ({which}) byte +{delta} inverted"

                    def edit(b: bytearray, i: int = at + delta) -> bytearray:
                        if i < len(b):
                            b[i] ^= 0xFF
                        return b

                    out[name] = _bytes_edit(base, edit)
    return out


def _extreme(dtype: np.dtype) -> list[int]:
    info = np.iinfo(dtype)
    values = [int(info.max), int(info.max) - 1, 2**31 - 1 if info.max > 2**31 else int(info.max)]
    if info.min < 0:
        values += [int(info.min), -1]
    return sorted(set(values))


def _extreme_fields() -> dict[str, Maker]:
    out: dict[str, Maker] = {}
    fields = {
        "async": [
            "rank_region_index/event_offsets",
            "rank_region_index/event_counts",
            "rank_region_index/region_ids",
            "rank_region_index/ranks",
            "rank_region_index/source_lines",
            "rank_region_index/exclusive_totals",
            "events/thread_ids",
            "events/task_ids",
            "events/await_ns",
            "events/start_deltas",
            "events/durations",
            "events/call_ids",
            "events/parent_ids",
            "task_table/index",
            "task_table/thread_index",
            "task_table/ranks",
            "task_table/created_ns",
            "thread_table/index",
            "thread_table/ranks",
        ],
        "threads": [
            "thread_table/ident",
            "thread_table/native_id",
            "thread_table/start_ns",
            "events/thread_ids",
        ],
    }
    for base, names in fields.items():
        with h5py.File(BASES[base]) as f:
            dtypes = {n: f[n].dtype for n in names}
        for name in names:
            for value in _extreme(dtypes[name]):

                def edit(f: h5py.File, name: str = name, value: int = value) -> None:
                    f[name][0] = value

                out[f"{base}: {name}[0] = {value}"] = _h5_edit(base, edit)
    return out


def _vlen_descriptors() -> dict[str, Maker]:
    """The 16-byte stored value of a variable-length string (length u32, heap address u64,
    object index u32) of contiguous string datasets, damaged field by field."""
    out: dict[str, Maker] = {}
    with h5py.File(BASES["async"]) as f:
        offsets = {
            n: f[n].id.get_offset()
            for n in ("task_table/name", "region_table/names", "task_table/kind")
        }
    edits = {
        "length 0xffffffff": (0, b"\xff\xff\xff\xff"),
        "length 0x7fffffff": (0, b"\xff\xff\xff\x7f"),
        "heap address past the end": (4, b"\xff" * 8),
        "heap address 0": (4, b"\x00" * 8),
        "object index 0xffffffff": (12, b"\xff\xff\xff\xff"),
        "object index 0": (12, b"\x00\x00\x00\x00"),
    }
    for name, at in offsets.items():
        for label, (field, raw) in edits.items():

            def edit(b: bytearray, i: int = at + field, raw: bytes = raw) -> bytearray:
                b[i : i + len(raw)] = raw
                return b

            out[f"async: {name}[0] descriptor {label}"] = _bytes_edit("async", edit)
    return out


def _foreign_layouts() -> dict[str, Maker]:
    def rank_groups(f: h5py.File) -> None:
        f.create_group("rank0").create_dataset("x", data=[1, 2, 3])

    def int_region_table(f: h5py.File) -> None:
        del f["region_table"]
        f["region_table"] = np.arange(4)

    def float_events(f: h5py.File) -> None:
        d = f["events/durations"][()]
        del f["events/durations"]
        f["events/durations"] = d.astype(np.float64)

    def string_events(f: h5py.File) -> None:
        n = f["events/durations"].shape[0]
        del f["events/durations"]
        f["events/durations"] = np.array([b"x"] * n)

    def two_d_column(f: h5py.File) -> None:
        d = f["events/durations"][()]
        del f["events/durations"]
        f["events/durations"] = np.stack([d, d])

    def short_column(f: h5py.File) -> None:
        d = f["events/durations"][()]
        del f["events/durations"]
        f["events/durations"] = d[:-3]

    def attr(name: str, value: object) -> Callable[[h5py.File], None]:
        def edit(f: h5py.File) -> None:
            f.attrs[name] = value

        return edit

    def delete(name: str) -> Callable[[h5py.File], None]:
        def edit(f: h5py.File) -> None:
            del f[name]

        return edit

    def schema1_without(column: str) -> Callable[[h5py.File], None]:
        def edit(f: h5py.File) -> None:
            regions = f["rank0/regions"]
            del regions[next(iter(regions))][column]

        return edit

    def schema1_region_dataset(f: h5py.File) -> None:
        regions = f["rank0/regions"]
        name = next(iter(regions))
        del regions[name]
        regions[name] = np.arange(3)

    def names_as_ints(f: h5py.File) -> None:
        del f["region_table/names"]
        f["region_table/names"] = np.arange(4)

    return {
        "an empty HDF5 file": _new_h5(lambda f: None),
        "HDF5 with one unrelated dataset": _new_h5(
            lambda f: f.create_dataset("data", data=np.arange(10))
        ),
        "HDF5 with rank groups and no regions": _new_h5(rank_groups),
        "not HDF5: a JSON document": lambda p: p.write_text(json.dumps({"regions": []})),
        "not HDF5: random bytes": lambda p: p.write_bytes(np.random.default_rng(7).bytes(4096)),
        "async: region_table is an int array": _h5_edit("async", int_region_table),
        "async: region_table/names are ints": _h5_edit("async", names_as_ints),
        "async: durations are floats": _h5_edit("async", float_events),
        "async: durations are strings": _h5_edit("async", string_events),
        "async: durations are 2-D": _h5_edit("async", two_d_column),
        "async: durations shorter than the index": _h5_edit("async", short_column),
        "async: schema attribute '3' as text": _h5_edit(
            "async", attr("scope_profiler_schema", "3")
        ),
        "async: schema attribute 99": _h5_edit("async", attr("scope_profiler_schema", 99)),
        "async: schema attribute -1": _h5_edit("async", attr("scope_profiler_schema", -1)),
        "async: storage_layout aggregate": _h5_edit("async", attr("storage_layout", "aggregate")),
        "async: no events group": _h5_edit("async", delete("events")),
        "async: no rank_region_index group": _h5_edit("async", delete("rank_region_index")),
        "async: no region_ids column": _h5_edit("async", delete("rank_region_index/region_ids")),
        "async: no summary_statistics": _h5_edit(
            "async", delete("rank_region_index/summary_statistics")
        ),
        "async: no task_table/name": _h5_edit("async", delete("task_table/name")),
        "schema1: a region without start_times": _h5_edit(
            "schema1", schema1_without("start_times")
        ),
        "schema1: a region that is a dataset": _h5_edit("schema1", schema1_region_dataset),
    }


def all_kinds() -> dict[str, Maker]:
    kinds: dict[str, Maker] = {}
    for family in (
        _truncations,
        _signature_flips,
        _extreme_fields,
        _vlen_descriptors,
        _foreign_layouts,
    ):
        kinds.update(family())
    return kinds


_WORKER = textwrap.dedent(
    """
    import json, resource, sys, tempfile
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import scope_profiler as sp
    from scope_profiler import speedscope_export
    cases, log = json.load(open(sys.argv[1])), open(sys.argv[2], "w")
    out = {}
    def attempt(what, fn):
        try:
            fn()
            return "ok"
        except (sp.CorruptProfileError, sp.HDF5SchemaError, sp.NestingError, sp.EventDataUnavailableError) as e:
            return f"{type(e).__name__}: {e}"
        except Exception as e:  # any other error is a finding
            return f"UNEXPECTED {type(e).__name__}: {e}"
    for name, path in cases:
        print(name, file=log, flush=True)  # the last line names a case that killed the reader
        got = {"read_h5": attempt("read", lambda: sp.read_h5(path))}
        got["read_h5_summary"] = attempt("summary", lambda: sp.read_h5_summary(path))
        if got["read_h5"] == "ok":
            r = sp.read_h5(path)
            got["analysis"] = attempt("analysis", lambda: (
                r.summary(), r.thread_summary(), [r.call_arrays(k) for k in range(r.num_ranks)],
                speedscope_export.export_speedscope(r, tempfile.mkdtemp() + "/x.speedscope.json"),
            ))
        out[name] = got
    json.dump(out, open(sys.argv[3], "w"))
    """
)


def test_broken_files_never_crash_hang_or_fail_unexplained(tmp_path):
    kinds = all_kinds()
    assert len(kinds) >= 40 * 3, len(kinds)  # well over 40 kinds in five families
    cases = []
    for k, (name, make) in enumerate(kinds.items()):
        path = tmp_path / f"case{k}.h5"
        make(path)
        cases.append((name, str(path)))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    log, result = tmp_path / "log.txt", tmp_path / "result.json"
    worker = [sys.executable, "-c", _WORKER, str(tmp_path / "cases.json"), str(log), str(result)]
    done = subprocess.run(worker, capture_output=True, text=True, timeout=600)
    last = log.read_text().splitlines()[-1:] if log.exists() else []
    assert done.returncode == 0, (done.returncode, last, done.stderr[-3000:])
    outcomes = json.loads(result.read_text())
    assert len(outcomes) == len(cases)
    problems = []
    refused = 0
    for (name, path), got in zip(cases, outcomes.values()):
        for step, outcome in got.items():
            if outcome.startswith("UNEXPECTED"):
                problems.append(f"{name} / {step}: {outcome}")
            elif outcome.startswith("CorruptProfileError") and path not in outcome:
                problems.append(f"{name} / {step}: does not name the file: {outcome}")
            refused += outcome != "ok"
    assert not problems, "\n".join(problems)
    # the damage is real: most cases are refused somewhere (not a generator of valid files)
    assert refused > len(cases) // 2, refused
