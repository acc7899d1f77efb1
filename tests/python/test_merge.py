"""merge_results and `scope-profiler summary --merge`: several files analysed together.

Per-process files of one job (same region names) stack as rank blocks, each keeping its
own thread/task tables, lanes and call ids; disjoint result sets unite as in the
reference, with lanes kept distinct per source (the reference drops the lane tables).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scope_profiler as sp
from helpers import reference_read, run_cli
from scope_profiler import MPIRegion, ProfileManager, ProfilingResults, Region


def record(path, prefix, n_threads, calls=3, regions=("item",)):
    """A tracked run with `n_threads` named worker threads, each making `calls` calls of
    every region in `regions` (nested in order)."""
    m = ProfileManager()

    def work():
        for _ in range(calls):
            opened = [m.profile_region(name) for name in regions]
            for r in opened:
                r.__enter__()
            for r in reversed(opened):
                r.__exit__(None, None, None)

    with m.session(file_path=str(path), track_threads=True, verbose=False):
        ts = [threading.Thread(target=work, name=f"{prefix}-{k}") for k in range(n_threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    m.reset()
    return sp.read_h5(path)


@pytest.fixture
def workers(tmp_path):
    return [
        record(
            tmp_path / f"worker_{k}.h5",
            f"w{k}",
            n_threads=k + 1,
            calls=2 + k,
            regions=("item", "inner"),
        )
        for k in range(3)
    ]


def test_per_process_files_stack_as_rank_blocks(workers):
    merged = sp.merge_results(*workers)
    assert merged.num_ranks == 3
    assert merged.metadata["merged_from"] == [str(w.file_path) for w in workers]
    assert merged.metadata["mpi_size"] == 3
    assert merged.region_names == workers[0].region_names
    for k, w in enumerate(workers):
        assert [t.name for t in merged.threads[k]] == [t.name for t in w.threads[0]]
        assert all(t.rank == k for t in merged.threads[k])
        for name in w.region_names:
            a, b = merged[name][k], w[name][0]
            assert np.array_equal(a.start_times_ns, b.start_times_ns)
            assert np.array_equal(a.thread_ids, b.thread_ids)
            assert a.exclusive_duration == pytest.approx(b.exclusive_duration)
        # a live thread's wall time runs to its run's end, which the stacked run's
        # metadata (the first file's) gives for rank 0 only
        alone = w.thread_summary(0)
        if k > 0:
            alone = [{**t, "wall_time": None} if t["alive"] else t for t in alone]
        assert merged.thread_summary(k) == alone
        assert merged.lane_label(-3, k) == f"w{k}-0"
    # pooled over processes
    assert merged["item"].num_calls == sum(w["item"][0].num_calls for w in workers)
    assert merged["item"].ranks == [0, 1, 2]
    assert merged["item"].rank_imbalance > 1.0
    # the sources are untouched (copies, not shared region objects)
    assert workers[1]["item"].ranks == [0]
    assert workers[1]["item"][0].exclusive_duration == pytest.approx(
        merged["item"][1].exclusive_duration
    )


def test_stack_false_is_the_reference_merge(workers):
    with pytest.raises(ValueError, match="appears in more than one result set"):
        sp.merge_results(*workers, stack=False)
    with pytest.raises(ValueError):
        sp.merge_results()


def test_stacking_offsets_by_each_sets_rank_count(workers, tmp_path):
    big = sp.merge_results(*workers)  # a 3-rank set
    merged = sp.merge_results(big, workers[0], stack=True)
    assert merged.num_ranks == 4
    assert [t.name for t in merged.threads[3]] == [t.name for t in workers[0].threads[0]]
    assert merged["item"].ranks == [0, 1, 2, 3]


def test_disjoint_sets_unite_with_distinct_lanes(tmp_path):
    a = record(tmp_path / "a.h5", "a", n_threads=2, regions=("alpha",))
    b = record(tmp_path / "b.h5", "b", n_threads=1, regions=("beta",))
    # region names must be disjoint for a union: drop b's session root
    b_only = ProfilingResults({"beta": b["beta"]}, metadata=b.metadata, threads=b.threads)
    merged = sp.merge_results(a, b_only, label="both")
    assert merged.num_ranks == 1 and merged.label == "both"
    names = [t.name for t in merged.threads[0]]
    assert names == [t.name for t in a.threads[0]] + [t.name for t in b.threads[0]]
    assert [t.index for t in merged.threads[0]] == list(range(len(names)))
    offset = len(a.threads[0])
    assert np.array_equal(merged["beta"][0].thread_ids, b["beta"][0].thread_ids + offset)
    assert np.array_equal(merged["alpha"][0].thread_ids, a["alpha"][0].thread_ids)
    beta_threads = {merged.lane_label(-2 - int(i)) for i in merged["beta"][0].thread_ids}
    assert beta_threads == {"b-0"}
    rows = {r["name"]: r["num_calls"] for r in merged.thread_summary(0)}
    assert rows["b-0"] == 3 and rows["a-0"] == 3 and rows["a-1"] == 3


def test_two_views_of_one_run_share_its_tables(tmp_path):
    run = record(tmp_path / "one.h5", "t", n_threads=2, regions=("x", "y"))
    x = ProfilingResults({"x": run["x"]}, metadata=run.metadata, threads=run.threads)
    rest = ProfilingResults(
        {n: run[n] for n in run.region_names if n != "x"},
        metadata=run.metadata,
        threads=run.threads,
    )
    merged = sp.merge_results(x, rest)
    assert [t.name for t in merged.threads[0]] == [t.name for t in run.threads[0]]
    assert merged.thread_summary(0) == run.thread_summary(0)


def test_merged_file_round_trips_through_the_reference(workers, tmp_path):
    merged = sp.merge_results(*workers)
    out = tmp_path / "merged.h5"
    merged._native_run().write_h5(str(out))
    back = sp.read_h5(out)
    assert back.num_ranks == 3
    assert {k: [t.name for t in v] for k, v in back.threads.items()} == {
        k: [t.name for t in v] for k, v in merged.threads.items()
    }
    ref = reference_read(out)
    assert ref["num_ranks"] == 3
    for k, w in enumerate(workers):
        assert [t["name"] for t in ref["threads"][str(k)]] == [t.name for t in w.threads[0]]
        assert ref["regions"][f"item@{k}"]["thread_ids"] == [
            int(i) for i in w["item"][0].thread_ids
        ]


def test_cli_summary_merge(workers, tmp_path):
    files = [str(w.file_path) for w in workers]
    proc = run_cli("summary", "--merge", *files)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("3 file(s), merged: ")
    assert "3 rank(s)" in out.splitlines()[0]
    # a merged run's header gives no "run X s": the first file's span would change with the
    # order of the files
    assert ", run " not in out.splitlines()[0]
    again = run_cli("summary", "--merge", *reversed(files))
    assert again.stdout.splitlines()[0].rsplit(": ", 1)[1] == out.splitlines()[0].rsplit(": ", 1)[1]
    for k in range(3):
        assert f"rank {k}: threads" in out
        assert f"w{k}-0" in out
    separate = run_cli("summary", *files)
    assert separate.returncode == 0 and separate.stdout.count("1 rank(s)") == 3
    bad = run_cli("summary", "--merge", files[0], str(tmp_path / "missing.h5"))
    assert bad.returncode == 1 and "missing.h5" in bad.stderr


def test_run_transport_round_trip(workers):
    """The encoding MPI ranks send to rank 0: lossless, and refuses damaged input."""
    from scope_profiler import _native

    run = workers[2]._native_run()
    blob = _native._run_to_bytes(run)
    back = _native._run_from_bytes(bytearray(blob))
    assert _native._run_to_bytes(back) == blob
    r = ProfilingResults._from_native(back)
    assert r.region_names == workers[2].region_names
    assert [t.name for t in r.threads[0]] == [t.name for t in workers[2].threads[0]]
    assert np.array_equal(r["item"][0].thread_ids, workers[2]["item"][0].thread_ids)
    for bad in (blob[:-1], blob + b"\0", b"nope" + blob[4:]):
        with pytest.raises(ValueError, match="cannot decode a run"):
            _native._run_from_bytes(bad)
    stacked = _native._stack_runs([(0, run), (1, blob)], num_ranks=2)
    assert stacked.num_ranks == 2
    with pytest.raises(ValueError, match="claimed by two parts"):
        _native._stack_runs([(0, run), (0, blob)])


def _one_region_run(name: str, metadata: dict) -> ProfilingResults:
    region = Region(np.array([0, 10], dtype=np.int64), np.array([5, 30], dtype=np.int64))
    return ProfilingResults({name: MPIRegion(name, {0: region})}, metadata=metadata)


# One merge, one metadata rule, in Python and in `summary --merge`: the first part's values,
# every part's keys.
def test_merge_keeps_the_first_parts_values_and_every_parts_keys(tmp_path):
    a = _one_region_run("x", {"label": "A", "only_a": 1, "mpi_size": 1})
    b = _one_region_run("x", {"label": "B", "only_b": 2, "mpi_size": 1})
    stacked = sp.merge_results(a, b)
    assert stacked.num_ranks == 2
    md = stacked.metadata
    assert (md["label"], md["only_a"], md["only_b"], md["mpi_size"]) == ("A", 1, 2, 2)
    assert list(md)[:3] == ["label", "only_a", "mpi_size"]  # first part's keys, in order
    united = sp.merge_results(a, _one_region_run("y", {"label": "C", "only_c": 3}))
    assert (united.metadata["label"], united.metadata["only_c"]) == ("A", 3)
    # the CLI's merge is the same function: the files' keys are all in the merged file
    paths = []
    for k, r in enumerate((a, b)):
        paths.append(tmp_path / f"p{k}.h5")
        r._native_run().write_h5(str(paths[-1]))
    proc = run_cli("summary", "--merge", *paths)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 file(s), merged: 1 region(s), 4 call(s), 2 rank(s)")
