"""A small scaling study: the same job profiled with 1, 2 and 4 worker threads, the runs
gathered into one Parquet dataset, and one query over all of them.

Each run records the worker count in its metadata; `scope_profiler.dataset.build` turns the
runs into `study/` (calls, threads, regions per run, and runs.parquet with each run's
metadata), and `scan` gives the tables as Polars LazyFrames: time per region against the
number of workers in one group-by. With `--dask`, the files are converted by the workers of
a two-process Dask LocalCluster instead (the same code runs on a SLURM cluster through
dask-jobqueue: docs/datasets.md).

    python examples/scaling_study.py [OUT_DIR] [--dask]
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import scope_profiler as sp
from scope_profiler.dataset import build

ITEMS = 24


def handle(item: int) -> int:
    with sp.region("handle"):
        time.sleep(0.002)  # waiting on I/O: more workers finish sooner
        with sp.region("parse"):
            return sum(range(2_000 + item))


def job(workers: int, path: Path) -> None:
    sp.setup(file_path=str(path), track_threads=True, label=f"{workers} workers")
    sp.get_config().metadata["workers"] = workers
    with sp.region("job"):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            total = sum(pool.map(handle, range(ITEMS)))
        with sp.region("merge"):
            sorted(str(total) * 1000)
    sp.finalize(verbose=False)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--dask"]
    out = Path(args[0] if args else "scaling_study")
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for workers in (1, 2, 4):
        job(workers, runs / f"workers_{workers}.h5")

    if "--dask" in sys.argv:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        with cluster, Client(cluster) as client:
            study = build(runs, out / "study", client=client)
        print(f"converted on {len(study.report.workers)} Dask workers")
    else:
        study = build(runs, out / "study")
    print(f"dataset {study.path}: {len(study.report.added)} runs")

    import polars as pl

    per_region = (
        study.calls.join(study.runs.select("run", "workers"), on="run")
        .group_by("workers", "region")
        .agg(
            pl.len().alias("calls"),
            (pl.col("exclusive_ns").sum() / 1e6).round(1).alias("exclusive_ms"),
            (pl.col("duration_ns").max() / 1e6).round(1).alias("longest_ms"),
        )
        .sort("region", "workers")
        .collect()
    )
    with pl.Config(tbl_rows=-1):
        print(per_region)
    job_ms = (
        study.regions.filter(pl.col("region") == "job")
        .join(study.runs.select("run", "workers"), on="run")
        .sort("workers")
        .select("workers", (pl.col("total_ns") / 1e6).round(1).alias("job_ms"))
        .collect()
    )
    for workers, ms in job_ms.iter_rows():
        print(f"job with {workers} worker(s): {ms} ms")


if __name__ == "__main__":
    main()
