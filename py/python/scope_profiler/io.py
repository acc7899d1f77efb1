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

from .results import MPIRegion, ProfilingResults

__all__ = ["read_h5", "read_h5_summary"]


def read_h5(file_path: str | Path, verbose: bool = False) -> ProfilingResults:
    """Load a profile written by ``finalize()`` (any schema 1-3)."""
    return ProfilingResults.from_h5(file_path, verbose=verbose)


def _selection(values, coerce):
    if values is None:
        return None
    if isinstance(values, (str, int)):
        values = [values]
    return {coerce(v) for v in values}


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
    """Load a profile's statistics, optionally only some ``regions`` / ``ranks``.

    This edition reads the whole file (events included) and then applies the
    selection, so the result is the same as ``read_h5`` restricted to the selected
    regions and ranks: per-call event APIs keep working on it instead of raising
    ``EventDataUnavailableError``. ``fallback``, ``include_likwid`` and
    ``include_line_profile`` are accepted for compatibility (this edition records
    neither LIKWID nor line-profile data).
    """
    results = read_h5(file_path, verbose=verbose)
    names = _selection(regions, str)
    wanted_ranks = _selection(ranks, int)
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
