"""Results API over the Rust run: views, lanes, reconstruction errors, exports, file errors."""

from __future__ import annotations

import io
import json
import re
import shutil
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
import scope_profiler as sp
from conftest import COMPAT, REFERENCE
from helpers import _nested_threaded_run, _record_peeked_generator, duration_text, run_cli
from scope_profiler import ProfileManager
from scope_profiler.results import MPIRegion, ProfilingResults, Region

THREADS = REFERENCE / "threads.h5"
ASYNC = REFERENCE / "async.h5"
SINGLE = REFERENCE / "single.h5"

OVERLAP_MESSAGE = (
    "recorded calls are not properly nested: 'B' call 0 [5, 15] ns starts inside 'A' call 0 "
    "[0, 10] ns but ends after it. Regions must nest completely or not overlap at all - check "
    "for a missing or misordered sp_end / __exit__."
)


def mpi(name, starts, ends, threads=None, tasks=None, rank=0):
    return MPIRegion(
        name,
        {
            rank: Region(
                np.array(starts, dtype=np.int64),
                np.array(ends, dtype=np.int64),
                thread_ids=None if threads is None else np.array(threads, dtype=np.int64),
                task_ids=None if tasks is None else np.array(tasks, dtype=np.int64),
            )
        },
    )


def arrays(*regions):
    return sp.build_call_arrays(list(regions), 0)


# ------------------------------------------------------------------ zero-copy columns


def test_columns_are_read_only_views_of_the_native_run():
    results = sp.read_h5(THREADS)
    region = results["solve"][0]
    for column in (region.start_times_ns, region.end_times_ns, region.thread_ids):
        assert column.dtype == np.int64
        assert column.base is not None
        assert type(column.base).__name__ == "NativeRun"
        assert not column.flags.writeable
        assert not column.flags.owndata
        with pytest.raises(ValueError):
            column[0] = 1
        with pytest.raises(ValueError):
            column.flags.writeable = True
    # Two reads of one column share the same memory.
    again = results["solve"][0].start_times_ns
    assert np.shares_memory(again, region.start_times_ns)


def test_columns_survive_the_results_object():
    column = sp.read_h5(THREADS)["solve"][0].start_times_ns
    import gc

    gc.collect()
    assert column.size == 26 and int(column.min()) > 0


def test_call_arrays_columns_are_owned_arrays():
    calls = sp.build_call_arrays(sp.read_h5(THREADS).get_regions(), 0)
    # ns columns int64, index columns int32 (documented deviation: half the memory)
    expected = {
        "region_index": np.int32,
        "call_index": np.int32,
        "start_ns": np.int64,
        "end_ns": np.int64,
        "depth": np.int32,
        "parent": np.int32,
        "exclusive_ns": np.int64,
        "lane": np.int32,
    }
    for field, dtype in expected.items():
        column = getattr(calls, field)
        assert column.dtype == dtype and column.size == len(calls), field
    # the values are those of an int64 reconstruction: parents index back into the arrays
    roots = calls.parent < 0
    assert (calls.depth[roots] == 0).all()
    child = np.flatnonzero(~roots)
    assert (calls.depth[child] == calls.depth[calls.parent[child]] + 1).all()
    assert (calls.lane[child] == calls.lane[calls.parent[child]]).all()


# ------------------------------------------------------------------ lanes


def test_for_thread_slices_every_column():
    results = sp.read_h5(THREADS)
    solve = results["solve"][0]
    exclusive = solve.exclusive_durations_ns.copy()
    for index in solve.threads:
        part = solve.for_thread(index)
        mask = solve.thread_ids == index
        assert isinstance(part, Region)
        assert part.num_calls == int(mask.sum())
        assert part.thread_ids.tolist() == [index] * part.num_calls
        assert part.start_times_ns.tolist() == solve.start_times_ns[mask].tolist()
        assert part.durations_ns.tolist() == solve.durations_ns[mask].tolist()
        assert part.exclusive_durations_ns.tolist() == exclusive[mask].tolist()
        assert part.total_duration == pytest.approx(solve.durations_ns[mask].sum() / 1e9)
        assert part.tags == solve.tags and part.source_file == solve.source_file
    assert sum(solve.for_thread(i).num_calls for i in solve.threads) == solve.num_calls
    empty = solve.for_thread(99)
    assert empty.num_calls == 0 and empty.total_duration == 0.0


def test_for_thread_exclusive_is_lazy_and_per_thread():
    results = sp.read_h5(THREADS)
    solve = results["solve"][0]
    part = solve.for_thread(2)  # before any reconstruction
    inner = results["inner"][0]
    assert (
        part.exclusive_durations_ns.tolist()
        == (
            solve.durations_ns[solve.thread_ids == 2] - inner.durations_ns[inner.thread_ids == 2]
        ).tolist()
    )


def test_for_thread_without_thread_column():
    region = sp.read_h5(SINGLE)["step"][0]
    assert region.thread_ids is None and region.threads == [] and not region.has_thread_data
    with pytest.raises(
        ValueError, match="this run did not record thread ids; profile with track_threads=True"
    ):
        region.for_thread(0)


def test_await_times():
    region = sp.read_h5(ASYNC)["fetch"][0]
    assert region.await_times_ns is not None
    assert region.await_times.tolist() == (region.await_times_ns / 1e9).tolist()
    assert region.total_await_duration == pytest.approx(region.await_times_ns.sum() / 1e9)
    assert sp.read_h5(THREADS)["solve"][0].await_times is None


def test_lane_labels():
    results = sp.read_h5(ASYNC)
    assert results.lane_label(-2) == "MainThread"
    assert results.lane_label(1) == "Task-2 (fetch) on MainThread"
    assert results.lane_label(0) == "Task-1 (main) on MainThread"
    assert results.lane_label(-1) == "unknown lane"
    assert results.lane_label(-9) == "thread 7"
    assert results.lane_label(50) == "task 50"
    untracked = sp.read_h5(SINGLE)
    assert untracked.threads == {} and untracked.tasks == {}
    assert untracked.thread_summary(0) == []
    with pytest.raises(KeyError):
        untracked.threads[0]


# ------------------------------------------------------------------ reconstruction


@pytest.mark.parametrize(
    "intervals, parents, exclusive",
    [
        ([(0, 10), (0, 5)], [-1, 0], [5, 5]),
        ([(0, 10), (0, 10)], [-1, 0], [0, 10]),
        ([(0, 10), (10, 20)], [-1, -1], [10, 10]),
        ([(0, 10), (4, 4)], [-1, 0], [10, 0]),
        ([(5, 10), (5, 5)], [-1, 0], [5, 0]),
        ([(0, 10), (10, 10)], [-1, -1], [10, 0]),
        ([(5, 5), (5, 5)], [-1, 0], [0, 0]),
    ],
)
def test_boundary_cases(intervals, parents, exclusive):
    regions = [mpi(f"r{i}", [s], [e]) for i, (s, e) in enumerate(intervals)]
    calls = arrays(*regions)
    by_region = {int(r): i for i, r in enumerate(calls.region_index)}
    got_parents = []
    for i in range(len(intervals)):
        p = int(calls.parent[by_region[i]])
        got_parents.append(-1 if p < 0 else int(calls.region_index[p]))
    assert got_parents == parents
    assert [int(calls.exclusive_ns[by_region[i]]) for i in range(len(intervals))] == exclusive
    assert calls.lane.size == 0


def test_overlap_raises_nesting_error_with_reference_message():
    with pytest.raises(sp.NestingError) as info:
        arrays(mpi("A", [0], [10]), mpi("B", [5], [15]))
    assert str(info.value) == OVERLAP_MESSAGE
    assert isinstance(info.value, ValueError)


def test_end_before_start():
    with pytest.raises(sp.NestingError, match="a recorded call ends before it starts"):
        arrays(mpi("A", [10], [5]))


def test_same_intervals_on_two_lanes():
    calls = arrays(mpi("A", [0], [10], threads=[0]), mpi("B", [5], [15], threads=[1]))
    assert calls.parent.tolist() == [-1, -1]
    assert calls.lane.tolist() == [-2, -3]
    lanes = sp.split_by_lane(calls)
    assert [lane for lane, _ in lanes] == [-3, -2]
    assert all(c.names is calls.names for _, c in lanes)


def test_lane_values_with_tasks_and_untracked_rows():
    calls = arrays(
        mpi("A", [0, 20, 40, 60], [1, 21, 41, 61], threads=[0, 1, 2, -1], tasks=[-1, 7, -1, 0]),
        mpi("native", [80], [81]),
    )
    assert calls.lane.tolist() == [-2, 7, -4, 0, -1]


def test_split_by_lane_shapes():
    empty = arrays()
    assert len(empty) == 0 and sp.split_by_lane(empty) == []
    one = arrays(mpi("A", [0], [10]))
    assert sp.split_by_lane(one)[0][0] == -1 and sp.split_by_lane(one)[0][1] is one
    single_lane = arrays(mpi("A", [0, 2], [10, 3], threads=[0, 0]))
    assert sp.split_by_lane(single_lane) == [(-2, single_lane)]
    many = arrays(mpi("A", [0, 2, 1], [10, 3, 9], threads=[0, 0, 1]))
    split = dict(sp.split_by_lane(many))
    assert split[-2].parent.tolist() == [-1, 0]
    assert split[-3].parent.tolist() == [-1]


def test_build_call_stack_and_helpers():
    calls = sp.build_call_stack([mpi("a", [0], [10]), mpi("b", [2], [5])], 0, origin=0.0)
    assert [c["call_path"] for c in calls] == ["a", "a > b"]
    assert list(calls[0]) == [
        "call_id",
        "name",
        "call_index",
        "start",
        "end",
        "duration",
        "inclusive_duration",
        "exclusive_duration",
        "depth",
        "parent",
        "call_path",
        "source_file",
        "source_lineno",
        "lane",
        "color",
    ]
    assert sp.call_stack_roots(calls) == [0]
    assert sp.call_stack_children(calls) == [[1], []]
    assert calls[0]["exclusive_duration"] == pytest.approx(7e-9)


def test_exclusive_is_computed_once_per_results():
    results = ProfilingResults({"a": mpi("a", [0], [10]), "b": mpi("b", [2], [5])})
    first = results["a"][0].exclusive_durations_ns
    assert first.tolist() == [7]
    assert results["a"][0].exclusive_durations_ns is first
    assert results["b"][0].exclusive_durations_ns.tolist() == [3]
    assert Region(np.array([0]), np.array([4])).exclusive_durations_ns.tolist() == [4]


def test_untracked_concurrent_run_raises_from_exclusive_accessors():
    results = ProfilingResults({"A": mpi("A", [0], [10]), "B": mpi("B", [5], [15])})
    with pytest.raises(sp.NestingError):
        results["A"][0].exclusive_durations_ns
    with pytest.raises(sp.NestingError):
        results.call_stack()


# ------------------------------------------------------------------ ProfilingResults API


def test_mapping_and_key_errors():
    results = sp.read_h5(ASYNC)
    assert "fetch" in results and "nope" not in results
    assert results.get_region("fetch") is results["fetch"]
    with pytest.raises(KeyError) as info:
        results["nope"]
    assert info.value.args[0] == (
        f"No region named 'nope' in {results.file_path}. Available regions: {results.region_names}"
    )
    with pytest.raises(KeyError) as info:
        results["fetch"][3]
    assert info.value.args[0] == "Region 'fetch' has no data for rank 3. Available ranks: [0]"


def test_get_regions_patterns():
    results = sp.read_h5(ASYNC)
    assert [r.name for r in results.get_regions("fe*")] == ["fetch"]
    assert results.get_regions("etch") == []
    assert [r.name for r in results.get_regions(".*etch")] == ["fetch"]
    assert "fetch" not in [r.name for r in results.get_regions(exclude=["fe"])]
    starts = [r.first_start_time for r in results.get_regions()]
    assert starts == sorted(starts)


def test_time_properties():
    results = sp.read_h5(THREADS)
    md = results.metadata
    assert results.run_start_time == md["start_time_ns"] / 1e9
    assert results.finalize_time == md["finalize_time_ns"] / 1e9
    assert results.total_time == pytest.approx(results.finalize_time - results.run_start_time)
    assert results.time_origin == results.run_start_time
    assert results.minimum_start_time == min(r.first_start_time for r in results)
    assert results.maximum_end_time == max(r.last_end_time for r in results)
    assert results.time_span == pytest.approx(results.maximum_end_time - results.minimum_start_time)
    assert results.display_label == "threads"
    assert results.label is None
    compat = sp.read_h5(COMPAT / "schema-1.h5")
    assert compat.run_start_time is None and compat.time_origin == compat.minimum_start_time


def test_events_keys():
    results = sp.read_h5(ASYNC)
    events = results.events(include="fetch")
    assert events and set(events[0]) >= {
        "name",
        "rank",
        "call_index",
        "start",
        "end",
        "duration",
        "thread",
        "task",
        "await_duration",
    }
    threads = sp.read_h5(THREADS).events()
    assert "thread" in threads[0] and "task" not in threads[0]
    single = sp.read_h5(SINGLE).events()
    assert "thread" not in single[0]


def test_statistics():
    region = Region(np.array([0, 10, 20, 30]), np.array([1, 13, 25, 37]))
    assert region.percentile_duration(50) == pytest.approx(np.percentile([1, 3, 5, 7], 50) / 1e9)
    assert region.p95_duration == pytest.approx(np.percentile([1, 3, 5, 7], 95) / 1e9)
    assert region.std_duration == pytest.approx(np.std([1, 3, 5, 7]) / 1e9)
    assert region.first_duration == 1e-9 and region.last_duration == 7e-9
    with pytest.raises(ValueError, match="percentile must be between 0 and 100"):
        region.percentile_duration(101)
    empty = Region(np.array([], dtype=np.int64), np.array([], dtype=np.int64))
    assert empty.average_duration == 0.0 and empty.p50_duration == 0.0


def test_summary_rows():
    rows = sp.read_h5(SINGLE).summary()
    assert {
        "name",
        "num_calls",
        "inclusive_duration",
        "exclusive_duration",
        "p50",
        "imbalance",
        "rank_imbalance_pct",
        "tags",
    } <= set(rows[0])


def test_print_summary_has_region_and_thread_tables(capsys):
    sp.read_h5(THREADS).print_summary()
    out = capsys.readouterr().out
    for word in ("solve", "inner", "main_only", "worker-3", "MainThread", "exclusive"):
        assert word in out


def test_merge_results_keeps_lane_tables():
    threads = sp.read_h5(THREADS)
    single = sp.read_h5(SINGLE)
    with pytest.raises(ValueError, match="appears in more than one result set"):
        sp.merge_results(threads, single, stack=False)  # both have scope_profiler.session
    merged = sp.merge_results(threads, label="x")
    assert merged.label == "x"
    assert [t.name for t in merged.threads[0]] == [t.name for t in threads.threads[0]]
    with pytest.raises(ValueError):
        sp.merge_results()


def test_call_graph_explicit_ids():
    results = sp.read_h5(SINGLE)
    graph = results.call_graph()
    assert len(graph) == sum(r.num_calls for r in results)
    filtered = results.call_graph(exclude=["solve"])
    assert all(node["name"] != "solve" for node in filtered)


# ------------------------------------------------------------------ files


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        sp.read_h5(tmp_path / "nope.h5")


def test_random_bytes(tmp_path):
    path = tmp_path / "random.h5"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(sp.CorruptProfileError) as info:
        sp.read_h5(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, OSError)


def test_truncated_copy(tmp_path):
    data = THREADS.read_bytes()
    path = tmp_path / "truncated.h5"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(sp.CorruptProfileError) as info:
        sp.read_h5(path)
    assert str(path) in str(info.value)


def test_future_schema(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "schema99.h5"
    shutil.copy(COMPAT / "schema-3.h5", path)
    with h5py.File(path, "r+") as f:
        f.attrs["scope_profiler_schema"] = np.int64(99)
    with pytest.raises(sp.HDF5SchemaError) as info:
        sp.read_h5(path)
    assert isinstance(info.value, ValueError)
    assert "99" in str(info.value)


def test_write_h5_round_trip(tmp_path):
    results = sp.read_h5(THREADS)
    path = tmp_path / "copy.h5"
    results._native.write_h5(str(path))
    again = sp.read_h5(path)
    assert again.region_names == results.region_names
    for name in results.region_names:
        a, b = results[name][0], again[name][0]
        assert a.start_times_ns.tolist() == b.start_times_ns.tolist()
        assert a.end_times_ns.tolist() == b.end_times_ns.tolist()
        assert a.thread_ids.tolist() == b.thread_ids.tolist()
        assert a.exclusive_duration == b.exclusive_duration
    assert [repr(t) for t in again.threads[0]] == [repr(t) for t in results.threads[0]]


def test_read_h5_summary_selection():
    results = sp.read_h5_summary(THREADS, regions=["solve"])
    assert results.region_names == ["solve"]
    assert results["solve"][0].num_calls == 26
    assert results.threads[0][0].name == "MainThread"


# ------------------------------------------------------------------ speedscope


def _document(path):
    return json.loads(path.read_text())


def test_speedscope_one_profile_per_lane(tmp_path):
    results = sp.read_h5(THREADS)
    written = sp.export_speedscope(results, tmp_path / "out.speedscope.json", verbose=False)
    assert written == [tmp_path / "out.speedscope.json"]
    doc = _document(written[0])
    expected = json.loads((REFERENCE / "threads.expected.json").read_text())
    # One profile per lane. Order (a documented difference of formats::speedscope from the
    # reference's ascending lane value): main thread first, thread lanes by ascending index.
    lanes = sorted(expected["call_arrays"]["lanes"], key=lambda lane: -2 - lane[0])
    assert [p["name"] for p in doc["profiles"]] == [f"rank 0 - {label}" for _, _, label in lanes]
    assert doc["name"] == "threads"
    for profile, (_, count, _) in zip(doc["profiles"], lanes):
        assert len(profile["events"]) == 2 * count
        ats = [e["at"] for e in profile["events"]]
        assert ats == sorted(ats)
    assert min(p["startValue"] for p in doc["profiles"]) == 0.0


def test_speedscope_untracked_and_naming(tmp_path):
    single = sp.read_h5(SINGLE)
    (path,) = sp.export_speedscope(single, tmp_path / "prof", verbose=False)
    assert path.name == "prof.speedscope.json"
    assert [p["name"] for p in _document(path)["profiles"]] == ["rank 0"]
    two = sp.export_speedscope(
        [single, sp.read_h5(THREADS)], tmp_path / "sub" / "x.json", verbose=False
    )
    assert [p.name for p in two] == ["x_single.json", "x_threads.json"]


def test_speedscope_filters_and_errors(tmp_path):
    results = sp.read_h5(THREADS)
    (path,) = sp.export_speedscope(
        results, tmp_path / "f.json", include="solve|inner", verbose=False
    )
    frames = {f["name"] for f in _document(path)["shared"]["frames"]}
    assert frames == {"solve", "inner"}
    with pytest.raises(ValueError, match="Invalid rank requested: 3"):
        sp.export_speedscope(results, tmp_path / "g.json", ranks=3, verbose=False)
    with pytest.raises(ValueError, match="No regions matched the selected filters."):
        sp.export_speedscope(results, tmp_path / "g.json", include="zzz", verbose=False)
    with pytest.raises(ValueError, match="No profiling data provided."):
        sp.export_speedscope([], tmp_path / "g.json", verbose=False)


def test_speedscope_of_hand_built_results(tmp_path):
    results = ProfilingResults(
        {"a": mpi("a", [0], [10]), "b": mpi("b", [2], [5])}, file_path="hand.h5"
    )
    (path,) = sp.export_speedscope(results, tmp_path / "h.json", verbose=False)
    doc = _document(path)
    assert [p["name"] for p in doc["profiles"]] == ["rank 0"]
    assert [(e["type"], e["frame"]) for e in doc["profiles"][0]["events"]] == [
        ("O", 0),
        ("O", 1),
        ("C", 1),
        ("C", 0),
    ]
    bad = ProfilingResults({"A": mpi("A", [0], [10]), "B": mpi("B", [5], [15])})
    with pytest.raises(sp.NestingError):
        sp.export_speedscope(bad, tmp_path / "bad.json", verbose=False)


@pytest.mark.parametrize("name", ["threads", "async", "single", "pool"])
def test_speedscope_accepted_by_speedscope_importer(tmp_path, name):
    from helpers import speedscope_import

    (path,) = sp.export_speedscope(
        sp.read_h5(REFERENCE / f"{name}.h5"), tmp_path / f"{name}.speedscope.json", verbose=False
    )
    out = speedscope_import(path)
    assert out


def test_dropped_results_are_freed_at_once_and_kept_regions_stay_exact():
    """No reference cycle between results, regions and run: deleting the results frees
    them without a gc pass; a region kept past them still gets exact exclusive times
    (read from the run), not its inclusive durations."""
    import gc
    import weakref

    want = {
        r.name: r.regions[0].exclusive_durations_ns.copy()
        for r in sp.read_h5(THREADS).get_regions()
    }
    assert any(
        (w != r.regions[0].durations_ns).any()
        for r in sp.read_h5(THREADS).get_regions()
        for w in [want[r.name]]
    )  # nested regions: exclusive differs from inclusive
    fresh = sp.read_h5(THREADS)
    kept = {r.name: r.regions[0] for r in fresh.get_regions()}
    gone = weakref.ref(fresh)
    gc.disable()
    try:
        del fresh
        assert gone() is None
    finally:
        gc.enable()
    for name, region in kept.items():
        np.testing.assert_array_equal(region.exclusive_durations_ns, want[name])


def test_packed_call_ids_decode_to_the_stored_values():
    """Stored call/parent ids are held bit-packed after loading; decoded on access they are
    exactly the file's (checked with h5py), also after for_thread and in frames."""
    h5py = pytest.importorskip("h5py")
    results = sp.read_h5(THREADS)
    with h5py.File(THREADS, "r") as f:
        call_ids = f["events/call_ids"][:]
        parent_ids = f["events/parent_ids"][:]
        offsets = f["rank_region_index/event_offsets"][:]
        counts = f["rank_region_index/event_counts"][:]
        names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]
        region_ids = f["rank_region_index/region_ids"][:]
    for row, rid in enumerate(region_ids):
        region = results[names[rid]][0]
        lo, n = int(offsets[row]), int(counts[row])
        np.testing.assert_array_equal(region.call_ids, call_ids[lo : lo + n])
        np.testing.assert_array_equal(region.parent_ids, parent_ids[lo : lo + n])
        assert region.call_ids.dtype == np.int64
        for index in region.threads:
            part = region.for_thread(index)
            mask = region.thread_ids == index
            np.testing.assert_array_equal(part.call_ids, call_ids[lo : lo + n][mask])


# `ProfilingResults.print_summary` and `scope-profiler summary` print the one report
# (`formats/src/text_summary.rs::summary_text`).
def test_print_summary_prints_the_tables_of_the_cli_summary():
    out = io.StringIO()
    sp.read_h5(THREADS).print_summary(stream=out, suppress_notes=True)
    cli = run_cli("summary", THREADS)
    assert cli.returncode == 0, cli.stderr
    ours = out.getvalue().splitlines()
    theirs = cli.stdout.splitlines()
    assert ours[1:] == theirs[1:]  # the same tables; only the title line names the file differently
    assert "rank 0: regions" in ours and "rank 0: threads" in ours


def _region_rows(text: str) -> list[list[str]]:
    """The region rows of rank 0 of a printed summary, split on runs of 2+ spaces."""
    lines = text.splitlines()
    start = lines.index("rank 0: regions") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("  ") or line.startswith("  note") or line.startswith("  ..."):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_print_summary_lists_regions_by_inclusive_time_in_readable_units():
    r = sp.read_h5(THREADS)
    out = io.StringIO()
    r.print_summary(stream=out, suppress_notes=True)
    by_total = sorted(r.summary(), key=lambda row: -row["total_duration"])
    rows = _region_rows(out.getvalue())
    assert [row[0] for row in rows] == [row["name"] for row in by_total]
    for row, want in zip(rows, by_total):
        assert row[1] == str(want["num_calls"])
        assert row[2] == duration_text(want["total_duration"]), row
        assert row[4] == duration_text(want["min_duration"]), row
    assert "0.000" not in out.getvalue()


def test_print_summary_sort_and_top():
    r = sp.read_h5(THREADS)
    out = io.StringIO()
    r.print_summary(stream=out, suppress_notes=True, sort="name", top=2)
    names = sorted(row["name"] for row in r.summary())
    rows = _region_rows(out.getvalue())
    assert [row[0] for row in rows] == names[:2]
    rest = [row for row in r.summary() if row["name"] in names[2:]]
    more = next(line for line in out.getvalue().splitlines() if line.startswith("  ... and"))
    assert more.startswith(
        f"  ... and {len(rest)} more region(s), {sum(x['num_calls'] for x in rest)} call(s)"
    )
    assert more.endswith("top=None lists every one")
    out = io.StringIO()
    r.print_summary(stream=out, suppress_notes=True, sort="calls")
    calls = [int(row[1]) for row in _region_rows(out.getvalue())]
    assert calls == sorted(calls, reverse=True)
    with pytest.raises(ValueError, match="unknown sort key 'speed'"):
        r.print_summary(stream=io.StringIO(), sort="speed")


def test_repr_of_a_run_with_twenty_thousand_regions_stays_small():
    m = ProfileManager()
    try:
        with m.session(deactivate_file_output=True, verbose=False, return_results=True) as s:
            for k in range(20_000):
                with m.region(f"module_{k}.function"):
                    pass
        html = s.results._repr_html_()
    finally:
        m.reset()
    assert len(html.encode()) < 100_000, len(html)
    assert "... and 19951 more regions" in html  # 50 of the 20,001 shown


# Lane labels come from one function: results, exports and the Parquet lanes table agree.
def test_parquet_lane_labels_are_the_results_lane_labels(tmp_path):
    results = sp.read_h5(ASYNC)
    _, lanes_path = sp.export_parquet(results, tmp_path / "a.parquet", verbose=False)
    lanes = pq.read_table(lanes_path).to_pydict()
    assert lanes["label"], "the async run has lanes"
    for rank, lane, label in zip(lanes["rank"], lanes["lane"], lanes["label"]):
        assert label == results.lane_label(lane, rank)


# A generator decorated with @profile and peeked inside a region (next(it) within `with
# region("header")`) has a call that crosses "header": that call is set aside, with one
# warning per rank, and the rest is analysed (thread_summary, exclusive times, exports,
# events_frame with its call_id/parent_id columns).
def test_a_peeked_generator_is_set_aside_and_the_rest_is_analysed(tmp_path):
    import warnings

    path = tmp_path / "peek.h5"
    _record_peeked_generator(path)
    r = sp.read_h5(str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = r.thread_summary()
        main = r["main"]
        excl = main.exclusive_duration
        r.thread_summary()  # the warning comes once per rank
    notes = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(notes) == 1, notes
    assert "1 call(s) on rank 0 do not nest in their lane and were set aside" in notes[0], notes
    assert "starts inside 'header' call 0" in notes[0] and "on MainThread" in notes[0], notes
    # the rest is analysed: main's exclusive time is main minus header and body (not the generator)
    d = {g.name: g.total_duration for g in r.get_regions()}
    assert excl == pytest.approx(d["main"] - d["header"] - d["body"], abs=1e-9)
    main_thread = next(row for row in summary if row["name"] == "MainThread")
    assert main_thread["region_time"] == pytest.approx(d["scope_profiler.session"], abs=1e-9)
    calls = r.call_arrays(0)
    assert len(calls.set_aside) == 1
    assert calls.names[calls.region_index[calls.set_aside[0]]].endswith("rows")
    assert calls.parent[calls.set_aside[0]] == -1
    # exports and frames work; the speedscope file leaves the set-aside call out
    out = sp.export_speedscope(r, str(tmp_path / "peek.speedscope.json"), verbose=False)
    doc = json.loads(out[0].read_text())
    frames = [f["name"] for f in doc["shared"]["frames"]]
    events = [e for p in doc["profiles"] for e in p["events"]]
    assert "header" in frames and len(events) == 2 * (len(calls) - 1)
    table = r.events_frame()
    assert "call_id" in table.column_names and "parent_id" in table.column_names


# `build_call_arrays(results.get_regions(), 0)` raises the NestingError its page promises,
# even when the regions are the run's rows in order and the results hold a cached, lenient
# reconstruction (a crossing call set aside).
def test_build_call_arrays_stays_strict_when_the_cache_set_a_call_aside(tmp_path):
    from scope_profiler.call_stack import NestingError, build_call_arrays

    path = tmp_path / "cross.h5"
    with ProfileManager.session(file_path=str(path), track_threads=True, verbose=False):
        with ProfileManager.profile_region("main"):
            a, b = ProfileManager.profile_region("a"), ProfileManager.profile_region("b")
            a.__enter__()
            b.__enter__()  # b starts inside a ...
            a.__exit__(None, None, None)
            b.__exit__(None, None, None)  # ... and ends after it
    r = sp.read_h5(str(path))
    assert [g.name for g in r.get_regions()] == ["scope_profiler.session", "main", "a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert len(r.call_arrays(0).set_aside) == 1  # the lenient cache, made first
    with pytest.raises(NestingError, match="'b' call 0 .* starts inside 'a' call 0"):
        build_call_arrays(r.get_regions(), 0)


# `Region.total_await_duration` counts a negative await, which only damaged data holds, as
# 0, as every summary does (`await_time` of thread/task summaries, `summary()`): one region,
# one total.
def test_total_await_duration_counts_a_negative_await_as_zero_like_the_summaries():
    region = Region(
        np.array([0, 100, 300]),
        np.array([50, 250, 400]),
        thread_ids=np.array([0, 0, 0]),
        task_ids=np.array([1, 1, 1]),
        await_times=np.array([20, -70, 30]),
    )
    assert region.await_times_ns.tolist() == [20, -70, 30]  # the column keeps what was read
    assert region.total_await_duration == pytest.approx(50e-9)


# print_summary(include=['outer']) counts the selected regions only, and its title and
# thread table say they are filtered.
def test_print_summary_of_a_selection_says_it_is_filtered(tmp_path):
    r = _nested_threaded_run(tmp_path / "mine.h5")
    out = io.StringIO()
    r.print_summary(include=["outer"], stream=out, suppress_notes=True)
    lines = out.getvalue().splitlines()
    assert re.fullmatch(
        r".*mine\.h5 \(1 rank\): 1 region\(s\), 3 call\(s\), 1 rank\(s\), run [0-9.]+ (ns|µs|ms|s)"
        r" \(filtered: include=\['outer'\]\)",
        lines[0],
    ), lines[0]
    assert (
        "rank 0: threads (calls and region time of the selected regions only, include=['outer'])"
        in lines
    )
    unfiltered = io.StringIO()
    r.print_summary(stream=unfiltered, suppress_notes=True)
    assert "3 region(s), 7 call(s)" in unfiltered.getvalue().splitlines()[0]
    assert "filtered" not in unfiltered.getvalue()


# ------------------------------------------------------------------ pickling


def _region_values(region) -> dict:
    """What a Region shows: its columns, exclusive times and statistics."""
    values = {
        "start": region.start_times_ns.tolist(),
        "end": region.end_times_ns.tolist(),
        "thread_ids": None if region.thread_ids is None else region.thread_ids.tolist(),
        "task_ids": None if region.task_ids is None else region.task_ids.tolist(),
        "call_ids": None if region.call_ids is None else region.call_ids.tolist(),
        "exclusive": region.exclusive_durations_ns.tolist(),
        "metadata": region.event_metadata,
        "summary": region.get_summary(),
        "source": (region.source_file, region.source_lineno),
    }
    return values


def _results_values(results) -> dict:
    """What a result set shows: every region's values per rank, tables, metadata, summary."""
    return {
        "names": results.region_names,
        "regions": {
            name: {rank: _region_values(r) for rank, r in results[name].regions.items()}
            for name in results.region_names
        },
        "threads": {
            rank: [(t.index, t.name, t.ident, t.start_time, t.cpu_time) for t in rows]
            for rank, rows in results.threads.items()
        },
        "tasks": {
            rank: [(t.index, t.name, t.kind, t.steps) for t in rows]
            for rank, rows in results.tasks.items()
        },
        "metadata": results.metadata,
        "summary": results.summary(),
        "num_ranks": results.num_ranks,
        "file_path": results.file_path,
    }


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("path", [THREADS, ASYNC, SINGLE, REFERENCE / "pool.h5"])
def test_results_pickle_round_trip(path, protocol):
    import pickle

    results = sp.read_h5(path)
    back = pickle.loads(pickle.dumps(results, protocol=protocol))
    assert type(back) is ProfilingResults
    assert _results_values(back) == _results_values(results)


def test_pickle_protocol_5_moves_the_columns_out_of_band_without_copies():
    import pickle

    n = 100_000
    starts = np.arange(n, dtype=np.int64) * 100
    results = ProfilingResults(
        {
            "outer": mpi("outer", starts, starts + 50, threads=np.arange(n) % 2),
            "inner": mpi("inner", starts + 10, starts + 20, threads=np.arange(n) % 2),
        }
    )
    buffers = []
    data = pickle.dumps(results, protocol=5, buffer_callback=buffers.append)
    assert len(data) < 10_000, len(data)  # the columns are not in it
    assert sum(b.raw().nbytes for b in buffers) == 6 * 8 * n  # start, end, thread per region
    # the buffers are the run's own memory (no copy on the way out)
    memory = {b.raw().obj.__array_interface__["data"][0] for b in buffers}
    assert results["outer"][0].start_times_ns.__array_interface__["data"][0] in memory
    raw = [bytearray(b.raw()) for b in buffers]
    back = pickle.loads(data, buffers=raw)
    assert _results_values(back) == _results_values(results)
    # ... nor on the way in: the run's columns are the buffers handed in
    handed = {np.frombuffer(b, dtype=np.uint8).__array_interface__["data"][0] for b in raw}
    assert back["outer"][0].start_times_ns.__array_interface__["data"][0] in handed
    assert not back["outer"][0].start_times_ns.flags.writeable


def test_regions_and_lane_slices_pickle_with_their_run():
    import pickle

    results = sp.read_h5(THREADS)
    solve = results["solve"][0]
    thread = solve.threads[-1]
    one_thread = solve.for_thread(thread)
    for protocol in (2, 5):
        back = pickle.loads(pickle.dumps(solve, protocol=protocol))
        assert _region_values(back) == _region_values(solve)
        sliced = pickle.loads(pickle.dumps(one_thread, protocol=protocol))
        assert _region_values(sliced) == _region_values(one_thread)
        assert sliced.thread_ids.tolist() == [thread] * sliced.num_calls
        mpi_back = pickle.loads(pickle.dumps(results["solve"], protocol=protocol))
        assert (
            mpi_back.name == "solve" and mpi_back.total_duration == results["solve"].total_duration
        )
        assert _region_values(mpi_back[0]) == _region_values(solve)
    # the regions of one run pickled together carry it once
    two = pickle.dumps([results[n][0] for n in results.region_names], protocol=5)
    assert len(two) < len(pickle.dumps(solve, protocol=5)) * 1.5


def test_a_region_built_from_arrays_pickles_with_its_own_durations():
    import pickle

    region = Region(
        np.array([0, 10], dtype=np.int64),
        np.array([5, 30], dtype=np.int64),
        event_metadata=[{"a": 1}, {}],
    )
    back = pickle.loads(pickle.dumps(region))
    assert back.exclusive_durations_ns.tolist() == [5, 20]
    assert _region_values(back) == _region_values(region)


def test_summary_only_results_pickle_with_their_statistics():
    import pickle

    results = sp.read_h5_summary(THREADS)
    back = pickle.loads(pickle.dumps(results))
    assert back.summary() == results.summary()
    assert back["solve"][0].stored_summary == results["solve"][0].stored_summary
    assert not back["solve"][0].has_event_data and back["solve"][0].num_calls == 26
    with pytest.raises(sp.EventDataUnavailableError):
        back["solve"][0].events()


def test_hand_built_results_pickle_with_colours_and_rank_order():
    import pickle

    a = mpi("a", [0, 100], [50, 200], threads=[0, 1])
    a.color = "red"
    results = ProfilingResults(
        {"a": a, "b": mpi("b", [10], [20], threads=[0])}, metadata={"k": "v"}, num_ranks=3
    )
    back = pickle.loads(pickle.dumps(results))
    assert back["a"].color == "red" and back.num_ranks == 3 and back.metadata == {"k": "v"}
    assert _results_values(back) == _results_values(results)


def test_thread_and_task_rows_pickle():
    import pickle

    results = sp.read_h5(ASYNC)
    for rows in (results.threads[0], results.tasks[0]):
        for row in rows:
            back = pickle.loads(pickle.dumps(row))
            assert type(back) is type(row) and repr(back) == repr(row)


def test_deepcopy_of_results_is_equal_and_independent():
    import copy

    results = sp.read_h5(ASYNC)
    twin = copy.deepcopy(results)
    assert twin is not results and _results_values(twin) == _results_values(results)
    assert (
        twin["crawl"][0].start_times_ns.ctypes.data
        != results["crawl"][0].start_times_ns.ctypes.data
    )
    region = results[results.region_names[0]][0]
    assert _region_values(copy.deepcopy(region)) == _region_values(region)
    assert repr(copy.deepcopy(results.threads[0][0])) == repr(results.threads[0][0])


def _read_in_worker(path: str):
    return sp.read_h5(path)


def test_results_come_back_from_a_process_pool():
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(_read_in_worker, [str(THREADS), str(ASYNC)])
    for path, back in zip((THREADS, ASYNC), got):
        assert _results_values(back) == _results_values(sp.read_h5(path))


def test_results_of_finalize_pickle(tmp_path):
    import pickle
    import threading

    from scope_profiler import ProfileManager

    ProfileManager._reset()
    try:
        sp.setup(file_path=str(tmp_path / "f.h5"), track_threads=True)

        def work():
            for _ in range(3):
                with sp.region("outer"), sp.region("inner"):
                    pass

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with sp.metadata(v=float("inf")), sp.region("tagged"):
            pass
        results = sp.finalize(verbose=False, return_results=True)
    finally:
        ProfileManager._reset()
    back = pickle.loads(pickle.dumps(results, protocol=5))
    assert _results_values(back) == _results_values(results)
    assert back["outer"][0].num_calls == 6 and back["tagged"][0].event_metadata == (
        {"v": float("inf")},
    )


def test_summary_only_reads_print_the_stored_statistics_and_say_what_needs_the_calls(capsys):
    # the values the reference reports for this file (threads.expected.json)
    expected = json.loads((REFERENCE / "threads.expected.json").read_text())["regions"]
    results = sp.read_h5_summary(THREADS)
    results.print_summary()
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.strip().startswith("solve "))
    solve = expected["solve"]["0"]
    assert row.split()[1] == str(solve["num_calls"]) == "26", text
    assert f"{solve['total_duration'] * 1e3:.3g} ms" in row, (row, solve["total_duration"])
    assert "not in a summary-only read" in text, text
    with pytest.warns(RuntimeWarning, match="not in a summary-only read"):
        rows = results.thread_summary()
    assert [r["num_calls"] for r in rows] == [0] * len(rows)  # as 0.7.5 gives, with the warning
