"""Regions from C and Fortran programs: the reference's `.spt` traces (versions 1 and 2,
either byte order) read into results, checked against an independent encoding here and
against the reference's own reader."""

from __future__ import annotations

import json
import struct
import subprocess

import numpy as np
import pytest
import scope_profiler as sp
from helpers import reference_python
from scope_profiler import native_trace as nt


def encode(rank: int, regions: list, version: int = 2, order: str = "<") -> bytes:
    """The layout of the reference's native_trace docstring, written with struct."""
    out = [b"SCOPEPRF", struct.pack(f"{order}iiq", version, rank, len(regions))]
    for name, source, line, starts, ends in regions:
        raw = name.encode()
        out.append(struct.pack(f"{order}i", len(raw)) + raw)
        if version >= 2:
            src = (source or "").encode()
            out.append(struct.pack(f"{order}i", len(src)) + src + struct.pack(f"{order}i", line))
        out.append(struct.pack(f"{order}q", len(starts)))
        out.append(struct.pack(f"{order}{len(starts)}q", *starts))
        out.append(struct.pack(f"{order}{len(ends)}q", *ends))
    return b"".join(out)


RANK0 = [
    ("solve", "solver.f90", 12, [1_000, 5_000, 9_000], [4_000, 8_500, 9_500]),
    ("assemble", None, -1, [1_500, 5_500], [2_500, 6_000]),
]
RANK1 = [("solve", None, -1, [2_000], [7_000])]


@pytest.mark.parametrize("version, order", [(1, "<"), (1, ">"), (2, "<"), (2, ">")])
def test_read_trace_in_every_version_and_byte_order(tmp_path, version, order):
    path = tmp_path / "run_rank00000.spt"
    path.write_bytes(encode(0, RANK0, version, order))
    rank, regions = nt.read_trace(path)
    assert rank == 0 and list(regions) == ["solve", "assemble"]
    starts, ends = regions["solve"]
    assert (
        starts.dtype == np.int64
        and list(starts) == [1_000, 5_000, 9_000]
        and list(ends) == [4_000, 8_500, 9_500]
    )
    assert (regions["solve"].source_file, regions["solve"].source_lineno) == (
        ("solver.f90", 12) if version == 2 else (None, None)
    )
    assert (regions["assemble"].source_file, regions["assemble"].source_lineno) == (None, None)


def test_damaged_traces_raise_trace_format_error_naming_the_file(tmp_path):
    good = encode(0, RANK0)
    cases = {
        "short": (good[:12], "too short to be a trace file"),
        "magic": (b"XCOPEPRF" + good[8:], "not a scope-profiler Fortran trace"),
        "version": (
            good[:8] + struct.pack("<i", 7) + good[12:],
            "unsupported trace format version 7",
        ),
        "truncated": (good[:-5], "truncated trace file"),
        "trailing": (good + b"\0", r"1 trailing byte\(s\) after the last region"),
    }
    for name, (data, why) in cases.items():
        path = tmp_path / f"{name}.spt"
        path.write_bytes(data)
        with pytest.raises(nt.TraceFormatError, match=why) as e:
            nt.read_trace(path)
        assert str(path) in str(e.value) and isinstance(e.value, ValueError)


def test_load_traces_round_trips_through_hdf5_with_lane_minus_one(tmp_path):
    (tmp_path / "run_rank00000.spt").write_bytes(encode(0, RANK0, 2, "<"))
    (tmp_path / "run_rank00001.spt").write_bytes(encode(1, RANK1, 1, ">"))
    r = nt.load_traces(tmp_path, label="fortran run")
    assert r.num_ranks == 2
    assert (r.metadata["source"], r.metadata["start_time_ns"], r.metadata["label"]) == (
        "native",
        1_000,
        "fortran run",
    )
    solve = r["solve"]
    assert solve[0].num_calls == 3 and solve[1].num_calls == 1
    assert solve.total_duration == pytest.approx((3_000 + 3_500 + 500 + 5_000) / 1e9)
    # one stack per rank: assemble nests inside solve, exclusive = solve minus assemble
    assert solve[0].exclusive_duration == pytest.approx((3_000 + 3_500 + 500 - 1_000 - 500) / 1e9)
    path = tmp_path / "merged.h5"
    r._native_run().write_h5(str(path))
    back = sp.read_h5(str(path))
    calls = back.call_arrays(0)
    assert len(calls) == 5 and set(calls.lane.tolist()) <= {-1}
    assert back["solve"][0].exclusive_duration == solve[0].exclusive_duration
    assert back["solve"][0].source_file == "solver.f90" and back["solve"][0].source_lineno == 12
    with pytest.raises(nt.TraceFormatError, match="both claim rank 0"):
        (tmp_path / "again_rank00002.spt").write_bytes(encode(0, RANK1))
        nt.load_traces(tmp_path)


def test_the_reference_reads_the_same_values(tmp_path):
    ref = reference_python()
    paths = []
    for k, (version, order) in enumerate([(1, "<"), (2, ">")]):
        p = tmp_path / f"t{k}.spt"
        p.write_bytes(encode(k, RANK0, version, order))
        paths.append(str(p))
    code = (
        "import json, sys\n"
        "from scope_profiler.native_trace import read_trace\n"
        "out = []\n"
        "for p in sys.argv[1:]:\n"
        "    rank, regions = read_trace(p)\n"
        "    out.append([rank, {n: [list(map(int, s)), list(map(int, e)), t.source_file, t.source_lineno]"
        " for n, t in regions.items() for s, e in [t]}])\n"
        "print(json.dumps(out))\n"
    )
    theirs = json.loads(
        subprocess.run([ref, "-c", code, *paths], capture_output=True, text=True, check=True).stdout
    )
    ours = []
    for p in paths:
        rank, regions = nt.read_trace(p)
        ours.append(
            [
                rank,
                {
                    n: [list(map(int, t[0])), list(map(int, t[1])), t.source_file, t.source_lineno]
                    for n, t in regions.items()
                },
            ]
        )
    assert ours == theirs


def _session_with_native_traces(tmp_path):
    """A session with one Python region whose finalize takes the `.spt` traces of rank 0
    (and not rank 1's) from `tmp_path/native`; the file it wrote and the traces' directory."""
    from scope_profiler import ProfileManager

    traces = tmp_path / "native"
    traces.mkdir()
    (traces / "run_rank00000.spt").write_bytes(encode(0, RANK0, 2, "<"))
    (traces / "run_rank00001.spt").write_bytes(
        encode(1, RANK1, 1, ">")
    )  # another rank's: not taken
    path = tmp_path / "mixed.h5"
    with ProfileManager.session(
        file_path=str(path), track_threads=True, native_traces=traces, verbose=False
    ):
        with ProfileManager.profile_region("python"):
            pass
    return path, traces


def test_finalize_native_traces_folds_this_ranks_regions_into_the_run(tmp_path):
    from scope_profiler import ProfileManager

    path, traces = _session_with_native_traces(tmp_path)
    r = sp.read_h5(str(path))
    assert r.num_ranks == 1
    assert sorted(r.region_names) == ["assemble", "python", "scope_profiler.session", "solve"]
    assert r["solve"][0].num_calls == 3 and r["assemble"][0].num_calls == 2
    assert list(r["solve"][0].thread_ids) == [-1, -1, -1]  # no thread: lane -1
    assert r["solve"][0].source_file == "solver.f90"
    calls = r.call_arrays(0)
    native = [i for i, name in enumerate(calls.names) if name in ("solve", "assemble")]
    lanes = {int(calls.lane[k]) for k in range(len(calls)) if calls.region_index[k] in native}
    assert lanes == {-1}
    # one stack: assemble nests in solve
    assert r["solve"][0].exclusive_duration == pytest.approx(
        (3_000 + 3_500 + 500 - 1_000 - 500) / 1e9
    )
    # a name recorded on both sides is refused, as the reference refuses it
    (traces / "run_rank00000.spt").write_bytes(encode(0, [("python", None, -1, [1], [2])]))
    try:
        with pytest.raises(
            ValueError, match="recorded by both the Python API and a native profile"
        ):
            with ProfileManager.session(
                file_path=str(tmp_path / "clash.h5"), native_traces=traces, verbose=False
            ):
                with ProfileManager.profile_region("python"):
                    pass
    finally:
        ProfileManager.reset()  # the failed finalize leaves the run configured (to retry it)


def test_a_native_region_folded_into_a_tracked_run_has_its_file_shape_in_memory(tmp_path):
    """A lane-less `.spt` region in a `track_threads` run: thread ids all -1 (lane -1), as
    the file stores it and `read_h5` gives it back, in the results `finalize` returns too."""
    from scope_profiler import ProfileManager

    traces = tmp_path / "native"
    traces.mkdir()
    (traces / "run_rank00000.spt").write_bytes(encode(0, RANK0, 2, "<"))
    path = tmp_path / "shape.h5"
    session = ProfileManager.session(
        file_path=str(path),
        track_threads=True,
        native_traces=traces,
        return_results=True,
        verbose=False,
    )
    with session:
        with ProfileManager.profile_region("python"):
            pass
    back = sp.read_h5(str(path))
    for results in (session.results, back):
        for name, n in (("solve", 3), ("assemble", 2)):
            region = results[name][0]
            assert region.has_thread_data is True
            assert region.thread_ids.tolist() == [-1] * n
        assert results["python"][0].has_thread_data is True
    assert session.results["solve"][0].threads == back["solve"][0].threads == [-1]


def test_the_reference_reads_the_native_regions_folded_into_the_run(tmp_path):
    from helpers import reference_read

    path, _ = _session_with_native_traces(tmp_path)
    theirs = reference_read(path)
    assert theirs["regions"]["solve@0"]["num_calls"] == 3
