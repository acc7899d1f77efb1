"""Many runs as one dataset (scope_profiler.dataset, `scope-profiler dataset`): per run and
region, the calls, durations and exclusive times read through Polars (`scan`), DuckDB and
dask.dataframe are each file's own analysis (`read_h5(path)[name]`); call starts are
`events_frame()`'s; the build on a two-process Dask LocalCluster spreads files over both
workers; `append` skips runs present; a bad file is named and skipped."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import scope_profiler as sp
from helpers import DATASETS, run_cli, unavailable
from scope_profiler import MPIRegion, ProfilingResults, Region
from scope_profiler.dataset import build, scan

pl = pytest.importorskip("polars")

REFERENCE = ["threads", "async", "pool", "single"]


def _scaling_run(path: Path, size: int, seed: int) -> Path:
    """A run of `size` ranks: per rank 3 `step` calls, each holding one `exchange` call whose
    length grows with the number of ranks; metadata as a recorded run has it."""
    rng = np.random.default_rng(seed)
    t0 = 1_000_000_000 * (seed + 1)
    step, exchange = {}, {}
    for rank in range(size):
        starts = t0 + np.arange(3, dtype=np.int64) * 10_000_000 + rank
        ends = starts + 8_000_000 + rng.integers(0, 1000, 3)
        ex_len = 1_000_000 * size + rng.integers(0, 1000, 3)
        step[rank] = Region(starts, ends)
        exchange[rank] = Region(starts + 100, starts + 100 + ex_len)
    regions = {"step": MPIRegion("step", step), "exchange": MPIRegion("exchange", exchange)}
    meta = {
        "mpi_size": size,
        "start_time_ns": t0 - 500,
        "timestamp": f"2026-01-0{seed + 1}T10:00:00.000001+00:00",
        "label": f"n{size}",
        "python_version": "3.11.7",
    }
    sp.write_profile(ProfilingResults(regions, metadata=meta, num_ranks=size), path)
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    """The reference runs (threads, tasks, a pool, a serial run) and three MPI runs of a
    scaling study, one of them as a JSON profile."""
    src = tmp_path_factory.mktemp("runs")
    files = []
    for name in REFERENCE:
        shutil.copy(DATASETS / "reference" / f"{name}.h5", src / f"{name}.h5")
        files.append(src / f"{name}.h5")
    for seed, size in enumerate((1, 2, 4)):
        suffix = ".json" if size == 2 else ".h5"
        files.append(_scaling_run(src / f"scale_{size}{suffix}", size, seed))
    return files


def _own_analysis(files: list[Path]) -> dict[tuple[str, str], tuple[int, int, float]]:
    """{(path, region): (calls, total ns, exclusive s)} from each file read alone."""
    out = {}
    for f in files:
        r = sp.load(f)
        for name in r.region_names:
            region = r[name]
            total = sum(int(region[k].durations_ns.sum()) for k in region.ranks)
            out[(str(f), name)] = (region.num_calls, total, region.exclusive_duration)
    return out


def _check(got: dict[tuple[str, str], tuple[int, int, int]], files: list[Path]) -> None:
    want = _own_analysis(files)
    assert set(got) == set(want)
    for key, (calls, total, exclusive) in want.items():
        g = got[key]
        assert (g[0], g[1]) == (calls, total), key
        assert g[2] / 1e9 == pytest.approx(exclusive, rel=1e-12, abs=1e-9), key


@pytest.fixture(scope="module")
def dataset(runs, tmp_path_factory):
    return build(runs, tmp_path_factory.mktemp("ds") / "study")


def test_polars_totals_per_run_and_region_are_each_files_own(dataset, runs):
    ps = scan(dataset.path)
    assert ps.report is None and dataset.report.added and not dataset.report.failed
    per = (
        ps.calls.join(ps.runs.select("run", "path"), on="run")
        .group_by("path", "region")
        .agg(pl.len(), pl.col("duration_ns").sum(), pl.col("exclusive_ns").sum())
        .collect()
    )
    _check({(p, r): (n, d, e) for p, r, n, d, e in per.iter_rows()}, runs)
    # the regions table holds the same sums
    regions = (
        ps.regions.join(ps.runs.select("run", "path"), on="run")
        .group_by("path", "region")
        .agg(pl.col("calls").sum(), pl.col("total_ns").sum(), pl.col("exclusive_ns").sum())
        .collect()
    )
    _check({(p, r): (n, d, e) for p, r, n, d, e in regions.iter_rows()}, runs)
    assert ps.calls.collect_schema().names()[:4] == ["run", "rank", "region", "lane"]


def test_call_starts_are_events_frames_and_metadata_are_columns(dataset, runs):
    ps = dataset
    runs_table = ps.runs.collect()
    assert runs_table.height == len(runs)
    assert runs_table["run"].n_unique() == len(runs)
    by_path = {row["path"]: row for row in runs_table.iter_rows(named=True)}
    for f in runs:
        row = by_path[str(f)]
        results = sp.load(f)
        events = pl.DataFrame(results.events_frame())
        calls = ps.calls.filter(pl.col("run") == row["run"]).collect()
        assert calls.height == events.height == row["num_calls"]
        want = events.group_by("name").agg(pl.col("start").min()).sort("name")
        got = calls.group_by("region").agg(pl.col("start_ns").min() / 1e9).sort("region")
        assert got["region"].to_list() == want["name"].to_list()
        np.testing.assert_allclose(got["start_ns"].to_numpy(), want["start"].to_numpy(), atol=1e-9)
        assert row["mpi_size"] == results.metadata["mpi_size"]
        assert row["python_version"] == results.metadata["python_version"]
        assert row["label"] == results.display_label
        assert row["num_ranks"] == results.num_ranks
        threads = ps.threads.filter(pl.col("run") == row["run"]).collect()
        assert threads.height == sum(len(v) for v in results.threads.values())
        tasks = ps.tasks.filter(pl.col("run") == row["run"]).collect()
        assert tasks.height == sum(len(v) for v in results.tasks.values())
        awaited = calls["await_ns"].null_count() < calls.height
        assert awaited == bool(results.tasks), f"{f.name}: await_ns only with track_async"
    start = by_path[str(runs[4])]["start_time"]
    assert (start.year, start.month, start.day, start.microsecond) == (2026, 1, 1, 1)


def test_scaling_study_time_per_region_against_mpi_size(dataset):
    """The docs' query: mean exclusive time per rank of each region against MPI size."""
    ps = dataset
    table = (
        ps.regions.join(ps.runs.select("run", "mpi_size"), on="run")
        .filter(pl.col("region").is_in(["step", "exchange"]))
        .group_by("mpi_size", "region")
        .agg((pl.col("exclusive_ns").mean() / 1e6).alias("ms_per_rank"))
        .sort("region", "mpi_size")
        .collect()
    )
    exchange = table.filter(pl.col("region") == "exchange")
    assert exchange["mpi_size"].to_list() == [1, 2, 4]
    # each exchange call lasts `size` ms, 3 calls per rank
    np.testing.assert_allclose(exchange["ms_per_rank"].to_numpy(), [3, 6, 12], rtol=1e-3)


def test_duckdb_reads_the_directories_as_tables(dataset, runs):
    try:
        import duckdb
    except ImportError:
        unavailable("duckdb is not installed (tests/run_all.sh installs it)")
    d = dataset.path
    rows = duckdb.sql(
        f"""select r.path, c.region, count(*), sum(c.duration_ns), sum(c.exclusive_ns)
            from read_parquet('{d}/calls/*/*.parquet', hive_partitioning = true) c
            join '{d}/runs.parquet' r using (run) group by all"""
    ).fetchall()
    _check({(p, r): (n, int(t), int(e)) for p, r, n, t, e in rows}, runs)


def test_dask_builds_on_two_workers_and_reads_the_tables(runs, tmp_path):
    try:
        import dask.dataframe as dd
        import distributed
    except ImportError:
        unavailable("dask[distributed,dataframe] is not installed (tests/run_all.sh installs it)")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        ps = build(runs, tmp_path / "study", client=client)
        workers = set(client.scheduler_info()["workers"])
    assert set(ps.report.workers) == workers and len(workers) == 2, ps.report
    assert all(n > 0 for n in ps.report.workers.values()), "both workers converted files"
    assert sum(ps.report.workers.values()) == len(runs)
    calls = dd.read_parquet(str(ps.path / "calls"))
    runs_table = dd.read_parquet(str(ps.path / "runs.parquet"))[["run", "path"]].compute()
    per = (
        calls.groupby(["run", "region"], observed=True)
        .agg({"duration_ns": ["count", "sum"], "exclusive_ns": "sum"})
        .compute()
    )
    paths = dict(zip(runs_table["run"], runs_table["path"]))
    got = {
        (paths[str(run)], region): (int(v.iloc[0]), int(v.iloc[1]), int(v.iloc[2]))
        for (run, region), v in per.iterrows()
    }
    _check(got, runs)


def test_append_skips_runs_present_and_a_bad_file_is_named(runs, tmp_path):
    out = tmp_path / "study"
    bad = tmp_path / "truncated.h5"
    bad.write_bytes((DATASETS / "reference" / "threads.h5").read_bytes()[:3000])
    with pytest.warns(UserWarning, match="truncated.h5") as caught:
        ps = build([*runs[:3], bad], out)
    assert len(caught) == 1
    assert list(ps.report.failed) == [str(bad)]
    assert ps.runs.collect().height == 3
    with pytest.raises(ValueError, match="already holds a dataset"):
        build(runs, out)
    before = {p: p.stat().st_mtime_ns for p in (out / "calls").glob("*/*.parquet")}
    with pytest.warns(UserWarning, match="3 file.s. hold runs already in the dataset"):
        ps = build(runs, out, append=True)
    assert len(ps.report.added) == len(runs) - 3 and len(ps.report.skipped) == 3
    assert ps.runs.collect()["run"].n_unique() == ps.runs.collect().height == len(runs)
    assert all(p.stat().st_mtime_ns == t for p, t in before.items()), "runs present not rewritten"
    # a partition a killed build left (not in runs.parquet) is not read
    stray = out / "calls" / "run=r0000000000000000"
    shutil.copytree(next((out / "calls").iterdir()), stray)
    assert scan(out).calls.select("run").unique().collect().height == len(runs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scan(out).tasks.collect().height > 0


def test_cli_builds_and_appends(runs, tmp_path):
    out = tmp_path / "study"
    proc = run_cli("dataset", *runs[:2], tmp_path / "missing.h5", "-o", out)
    assert proc.returncode == 1
    assert "missing.h5" in proc.stderr and "added 2 run(s)" in proc.stderr
    proc = run_cli("dataset", runs[0].parent, "-o", out, "--append", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("already in the dataset; skipped") == 2
    assert scan(out).runs.collect().height == len(runs)


def test_empty_tables_keep_their_columns(tmp_path):
    ps = build([DATASETS / "reference" / "single.h5"], tmp_path / "one")
    assert ps.threads.collect().height == 0
    assert ps.threads.collect_schema().names()[:3] == ["run", "rank", "thread"]
    with pytest.raises(FileNotFoundError, match="holds no dataset"):
        scan(tmp_path)
