"""Many runs as one dataset: Parquet tables over all runs for Polars, DuckDB, Dask and
Spark (``docs/datasets.md``).

``build(runs, out_dir)`` converts run files (``.h5``, JSON profiles, or directories holding
them) into ``out_dir``: ``calls/``, ``threads/``, ``tasks/``, ``regions/`` partitioned
Hive-style by ``run=<id>``, and ``runs.parquet`` with one row per run and its metadata. The
conversion of a file is Rust (``formats::dataset``), the GIL released; given a
``dask.distributed.Client``, the files are converted by the cluster's workers, several
files per task. ``scan(out_dir)`` gives the tables as Polars ``LazyFrame``s.

Polars and Dask are imported when used, not by ``import scope_profiler``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from . import _native

if TYPE_CHECKING:
    import polars as pl

__all__ = ["BuildReport", "ProfileSet", "build", "scan"]

PathLike = Union[str, "os.PathLike[str]"]

#: The per-run tables of a dataset, each a directory of ``run=<id>`` partitions.
TABLES = ("calls", "threads", "tasks", "regions")


@dataclass
class BuildReport:
    """What a :func:`build` did: the runs it ``added`` (ids), the files ``skipped`` because
    their run was already in the dataset (``{path: run id}``), the files that ``failed``
    (``{path: message}``), and with a Dask client the ``workers`` that converted files
    (``{worker address: number of files}``)."""

    added: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    workers: dict[str, int] = field(default_factory=dict)


class ProfileSet:
    """A dataset directory: its tables as Polars ``LazyFrame``s over the Parquet files.

    ``runs`` has one row per run (``run``, ``path``, ``label``, ``host``, ``start_time``,
    counts, then the recorded metadata); ``calls``, ``threads``, ``tasks`` and ``regions``
    have ``run`` first, then the table's columns (``docs/datasets.md``). ``report`` is the
    :class:`BuildReport` of the build that returned it (``None`` from :func:`scan`)."""

    def __init__(self, path: PathLike, report: BuildReport | None = None) -> None:
        self.path = Path(path)
        self.report = report
        if not (self.path / "runs.parquet").is_file():
            raise FileNotFoundError(f"{self.path} holds no dataset (no runs.parquet)")

    def __repr__(self) -> str:
        return f"ProfileSet({str(self.path)!r})"

    @property
    def runs(self) -> pl.LazyFrame:
        import polars as pl

        return pl.scan_parquet(self.path / "runs.parquet")

    @property
    def calls(self) -> pl.LazyFrame:
        return self.table("calls")

    @property
    def threads(self) -> pl.LazyFrame:
        return self.table("threads")

    @property
    def tasks(self) -> pl.LazyFrame:
        return self.table("tasks")

    @property
    def regions(self) -> pl.LazyFrame:
        return self.table("regions")

    def run_ids(self) -> list[str]:
        """The ids of the runs in the dataset, in ``runs.parquet`` order."""
        return self.runs.select("run").collect().to_series().to_list()

    def table(self, name: str) -> pl.LazyFrame:
        """The table ``name`` (one of :data:`TABLES`) over every run, ``run`` first. Only the
        runs of ``runs.parquet`` are read: partitions a killed build left are not."""
        import polars as pl

        if name not in TABLES:
            raise ValueError(f"no table {name!r} in a dataset; tables: {', '.join(TABLES)}")
        empty = pl.DataFrame(_native.dataset_empty_table(name)).lazy()
        directory = self.path / name
        parts = {p.name[4:] for p in directory.glob("run=*")} if directory.is_dir() else set()
        if not parts:
            return empty
        frame = pl.scan_parquet(
            directory,
            hive_partitioning=True,
            hive_schema={"run": pl.String},
            hidden_file_prefix=".",
        )
        stray = parts - set(self.run_ids())
        if stray:
            frame = frame.filter(~pl.col("run").is_in(sorted(stray)))
        return frame.select(empty.collect_schema().names())


def scan(path: PathLike) -> ProfileSet:
    """The dataset at ``path`` (written by :func:`build` or ``scope-profiler dataset``).
    Raises ``FileNotFoundError`` when it holds none."""
    return ProfileSet(path)


def _paths(runs: PathLike | Iterable[PathLike]) -> list[str]:
    if isinstance(runs, (str, os.PathLike)):
        runs = [runs]
    return [os.path.abspath(os.fspath(r)) for r in runs]


def _convert_batch(
    paths: list[str], out_dir: str, present: list[str]
) -> tuple[str, list[tuple[str, str, str]]]:
    """A Dask task: convert ``paths`` one after the other on this worker. Returns the
    worker's address and the conversions (``_native.dataset_convert``)."""
    from distributed import get_worker

    return get_worker().address, _native.dataset_convert(paths, out_dir, set(present), 1)


def _on_cluster(
    client: Any, files: list[str], out_dir: str, present: list[str]
) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
    """Convert ``files`` on the workers of ``client``: batches of files per task, about four
    tasks per worker thread (a task costs the scheduler about a millisecond, a file a few)."""
    threads = sum(client.nthreads().values()) or 1
    size = max(1, min(64, math.ceil(len(files) / (4 * threads))))
    batches = [files[i : i + size] for i in range(0, len(files), size)]
    [ids] = client.scatter([present], broadcast=True)
    futures = client.map(_convert_batch, batches, out_dir=out_dir, present=ids, pure=False)
    converted: list[tuple[str, str, str]] = []
    workers: Counter[str] = Counter()
    for address, results in client.gather(futures):
        converted.extend(results)
        workers[address] += len(results)
    return converted, dict(workers)


def build(
    runs: PathLike | Iterable[PathLike],
    out_dir: PathLike,
    *,
    append: bool = False,
    client: Any = None,
    jobs: int | None = None,
) -> ProfileSet:
    """Convert the run files ``runs`` (paths of ``.h5`` files and JSON profiles, or
    directories searched for them) into the dataset ``out_dir`` and return it.

    Without ``client`` the files are converted in parallel here (``jobs`` threads, default
    one per core); with a ``dask.distributed.Client`` they are converted by its workers,
    which must see ``out_dir`` and the run files at the same paths (a shared file system).
    ``append=True`` adds runs to an existing dataset; a run already in it is skipped (a
    warning says which). A file that cannot be read gets a warning naming it and is
    skipped; every other run is written. Raises ``ValueError`` when ``out_dir`` holds a
    dataset and ``append`` is false, or holds other files."""
    out = os.path.abspath(os.fspath(out_dir))
    files, missing = _native.dataset_find(_paths(runs))
    existing = _native.dataset_prepare(out, append)
    present = [run for run, _ in existing]
    workers: dict[str, int] = {}
    if client is None:
        converted = _native.dataset_convert(files, out, set(present), jobs or os.cpu_count() or 1)
    else:
        converted, workers = _on_cluster(client, files, out, present)
    added, skipped, failed = _native.dataset_commit(out, [row for _, row in existing], converted)
    report = BuildReport(added, dict(skipped), dict(missing + failed), workers)
    for message in report.failed.values():
        warnings.warn(f"{message}; skipped", stacklevel=2)
    if skipped:
        shown = ", ".join(f"{p} (run {r})" for p, r in skipped[:5])
        more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        warnings.warn(
            f"{len(skipped)} file(s) hold runs already in the dataset and were skipped: {shown}{more}",
            stacklevel=2,
        )
    return ProfileSet(out, report)
