"""Reading profile files.

``read_h5`` reads an HDF5 profile of schema 1, 2 or 3 (the reference's layout) in
Rust and returns :class:`~scope_profiler.results.ProfilingResults` whose per-call
arrays are read-only numpy views over the loaded columns.

Errors: ``FileNotFoundError`` (missing file), ``CorruptProfileError`` (not HDF5,
truncated, damaged index; the message names the file), ``HDF5SchemaError``
(schema attribute invalid or newer than supported).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .results import MPIRegion, ProfilingResults, Region, TaskInfo, ThreadInfo

__all__ = ["SummaryDataUnavailable", "read_h5", "read_h5_summary"]


def read_h5(file_path: str | Path, verbose: bool = False) -> ProfilingResults:
    """Load a profile written by ``finalize()`` (any schema 1-3)."""
    return ProfilingResults.from_h5(file_path, verbose=verbose)


def _selection(values, coerce):
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    return {coerce(v) for v in values}


class SummaryDataUnavailable(ValueError):
    """Raised (with ``fallback=False``) when a file predates fixed-size summary columns."""


def _summary_region(row: dict) -> Region:
    """A summary-only :class:`Region` over one ``read_h5_summary`` row (the reference's
    ``aggregate`` dict: ``count`` + the ``summary_statistics`` fields + ``exclusive``)."""
    fields = (
        "total",
        "minimum",
        "maximum",
        "first",
        "last",
        "start_minimum",
        "end_maximum",
        "gpu_count",
        "gpu_total",
        "mean",
        "m2",
    )
    aggregate = {"count": int(row["count"])}
    for field in fields:
        value = row[field]
        aggregate[field] = float(value) if field in ("mean", "m2") else int(value)
    stored = row["exclusive_total_ns"]
    aggregate["exclusive"] = int(stored) if stored is not None else aggregate["total"]
    empty = np.empty(0, dtype=np.int64)
    return Region(
        empty,
        empty,
        aggregate=aggregate,
        source_file=row["source_file"] or None,
        source_lineno=row["source_line"],
        source_text=row["source_text"] or None,
        tags=tuple(row["tags"]),
        event_data_available=False,
    )


def read_h5_summary(
    file_path: str | Path,
    verbose: bool = False,
    *,
    fallback: bool = True,
    include_likwid: bool = True,
    include_line_profile: bool = True,
    regions: str | list[str] | tuple[str, ...] | None = None,
    ranks: int | list[int] | tuple[int, ...] | None = None,
) -> ProfilingResults:
    """Load a profile's statistics without reading its per-call events.

    Reads ``rank_region_index`` (the stored ``summary_statistics``, counts, exclusive
    totals, sources, tags), the metadata and the thread and task tables; ``/events`` is
    never touched. Scalar statistics and lane tables work; per-call APIs (``events``,
    ``call_stack``, percentiles, frames of events) raise ``EventDataUnavailableError``.
    ``regions`` / ``ranks`` restrict the rows (and the lane tables to those ranks).

    A file without fixed-size summaries (schema 1, or an early schema-2 file) is read
    in full with :func:`read_h5` and then restricted when ``fallback`` is true (per-call
    APIs then work), else ``SummaryDataUnavailable`` is raised. ``include_likwid`` and
    ``include_line_profile`` are accepted for compatibility (this edition records
    neither LIKWID nor line-profile data).
    """
    from . import _native

    names = _selection(regions, str)
    wanted_ranks = _selection(ranks, int)
    summary = _native.read_h5_summary(os.fspath(file_path))
    if summary is None:
        if not fallback:
            raise SummaryDataUnavailable(
                "summary-only reads require a schema-2 or newer profiling file "
                "with fixed-size summary statistics",
            )
        return _read_full_selected(file_path, verbose, names, wanted_ranks)
    per_region: dict[str, dict[int, Region]] = {}
    totals: dict[str, dict[int, int]] = {}
    used = []
    for row in summary["rows"]:
        name, rank = row["name"], int(row["rank"])
        if names is not None and name not in names:
            continue
        if wanted_ranks is not None and rank not in wanted_ranks:
            continue
        per_region.setdefault(name, {})[rank] = _summary_region(row)
        if row["exclusive_total_ns"] is not None:
            totals.setdefault(name, {})[rank] = int(row["exclusive_total_ns"])
        used.append(name)
    order = [name for name in summary["region_names"] if name in per_region]
    threads: dict[int, list[ThreadInfo]] = {}
    for rank, index, ident, native_id, daemon, start, end, cpu, name in summary["threads"]:
        if wanted_ranks is None or rank in wanted_ranks:
            threads.setdefault(rank, []).append(
                ThreadInfo(index, rank, name, ident, native_id, daemon, start, end, cpu)
            )
    tasks: dict[int, list[TaskInfo]] = {}
    for (
        rank,
        index,
        thread_index,
        created,
        done,
        steps,
        running,
        suspended,
        kind,
        name,
        coro_name,
    ) in summary["tasks"]:
        if wanted_ranks is None or rank in wanted_ranks:
            tasks.setdefault(rank, []).append(
                TaskInfo(
                    index,
                    rank,
                    kind,
                    name,
                    coro_name,
                    thread_index,
                    created,
                    done,
                    steps,
                    running,
                    suspended,
                )
            )
    if verbose:
        print(f"Read summary of {os.fspath(file_path)}: {len(summary['rows'])} region row(s)")
    return ProfilingResults(
        {name: MPIRegion(name, per_region[name]) for name in order},
        metadata=summary["metadata"],
        num_ranks=int(summary["num_ranks"]),
        file_path=os.fspath(file_path),
        exclusive_totals=totals,
        event_data_available=False,
        threads=threads,
        tasks=tasks,
    )


def _read_full_selected(file_path, verbose, names, wanted_ranks) -> ProfilingResults:
    """``read_h5`` restricted to ``names`` / ``wanted_ranks`` (the summary fallback)."""
    results = read_h5(file_path, verbose=verbose)
    if names is None and wanted_ranks is None:
        return results
    selected = {}
    for name, region in results._region_dict.items():
        if names is not None and name not in names:
            continue
        per_rank = {
            rank: data
            for rank, data in region.regions.items()
            if wanted_ranks is None or rank in wanted_ranks
        }
        if per_rank:
            selected[name] = MPIRegion(name, per_rank)
    totals = {}
    for name, region in selected.items():
        for rank, data in region.regions.items():
            if data._exclusive_total_ns is not None:
                totals.setdefault(name, {})[rank] = data._exclusive_total_ns
    return ProfilingResults(
        selected,
        metadata=results.metadata,
        num_ranks=results.num_ranks,
        file_path=os.fspath(results.file_path),
        exclusive_totals=totals if names is None else None,
        threads=results.threads,
        tasks=results.tasks,
    )
