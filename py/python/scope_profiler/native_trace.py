"""Regions recorded by C and Fortran programs: the reference's per-rank native output.

The reference package's C and Fortran region APIs write, at ``sp_finalize()``, one file per
rank: a compact binary trace (``.spt``, versions 1 and 2, either byte order; the layout is
documented in ``scope_profiler_formats::native_trace``), or with ``SP_USE_HDF5`` a per-rank
HDF5 profile (``<prefix>_rank<NNNNN>.h5``). This module reads both (the parsing is Rust) into
the same results a Python run produces, and ``ProfileManager.finalize(native_traces=...)``
folds them into a Python run. Native regions have no thread or task: they are reconstructed as
one stack, lane -1, in memory and after a round trip through HDF5 alike. Timestamps come from
the clock of ``time.perf_counter_ns``, so native and Python regions of one process tree share
a timeline.

This package does not ship the C and Fortran sources themselves (``fortran_source_path`` and
the like of the reference): build them from the reference's distribution.
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from typing import Any

from . import _native
from ._native import TraceFormatError

__all__ = [
    "FORMAT_VERSION",
    "HDF5_SUFFIX",
    "KNOWN_FORMAT_VERSIONS",
    "MAGIC",
    "RANK_HDF5_GLOB",
    "TRACE_SUFFIX",
    "TraceFormatError",
    "find_traces",
    "load_traces",
    "read_native_h5",
    "read_native_ranks",
    "read_trace",
]

#: First eight bytes of every trace file.
MAGIC = b"SCOPEPRF"
#: The newest trace layout (the C API's); version 1 is the Fortran API's.
FORMAT_VERSION = 2
#: Trace format versions this reader accepts.
KNOWN_FORMAT_VERSIONS = (1, 2)
#: Extension ``sp_finalize`` gives a binary trace.
TRACE_SUFFIX = ".spt"
#: Extension ``sp_finalize`` gives a directly written HDF5 profile.
HDF5_SUFFIX = ".h5"
#: How :func:`find_traces` recognizes per-rank HDF5 output in a directory (a merged profile
#: beside them is not swallowed as an input).
RANK_HDF5_GLOB = f"*_rank[0-9]*{HDF5_SUFFIX}"


def read_trace(path: str | PathLike[str]) -> tuple[int, dict[str, _native.RegionTrace]]:
    """One rank's ``.spt`` trace: ``(rank, {region name: (start_times, end_times)})``, int64
    ns arrays, file order; each value (a ``RegionTrace``) also has the region's source
    location as ``source_file`` / ``source_lineno`` (``None`` when the trace has none).
    Raises ``TraceFormatError`` (a ``ValueError``, naming the file) when the file is not a
    trace, is truncated, has trailing bytes, holds a region twice or uses an unknown version;
    ``OSError`` when it cannot be read."""
    return _native.read_trace(path)


def find_traces(inputs: str | PathLike[str] | Iterable[str | PathLike[str]]) -> list[Path]:
    """The native output files among ``inputs`` (files, and directories searched
    non-recursively for ``*.spt`` and ``*_rank<N>.h5``), sorted, without duplicates. Raises
    ``FileNotFoundError`` for an input that does not exist or a directory with neither."""
    return [Path(p) for p in _native.find_traces(inputs)]


def read_native_h5(path: str | PathLike[str]) -> tuple[dict[int, dict[str, Any]], dict]:
    """A per-rank HDF5 profile of an ``SP_USE_HDF5`` C build (any profile works):
    ``({rank: {region name: Region}}, metadata)``. Raises as ``read_h5``."""
    from .h5reader import read_h5

    results = read_h5(path)
    ranks: dict[int, dict[str, Any]] = {}
    for region in results.get_regions():
        for rank, data in region.regions.items():
            ranks.setdefault(int(rank), {})[region.name] = data
    return ranks, dict(results.metadata)


def read_native_ranks(path: str | PathLike[str]) -> tuple[dict[int, dict[str, Any]], dict]:
    """One native output file, either format: ``({rank: {region name: Region}}, metadata)``;
    a ``.spt`` trace gives one rank and no metadata."""
    if Path(path).suffix == HDF5_SUFFIX:
        return read_native_h5(path)
    return _native.read_trace_regions(path), {}  # each region a standalone Region (Rust)


def load_traces(
    inputs: str | PathLike[str] | Iterable[str | PathLike[str]], label: str | None = None
) -> Any:
    """Native output (``.spt`` traces and per-rank ``.h5`` profiles, mixed freely) as one
    ``ProfilingResults``: every rank in one result, metadata ``source="native"``,
    ``trace_format_version``, ``start_time_ns`` (the earliest first call start, ns) and
    ``label``. Raises ``TraceFormatError`` when two files claim the same rank, and as
    :func:`find_traces` / :func:`read_native_ranks`."""
    from .mpi_region import MPIRegion
    from .results import ProfilingResults

    per_region: dict[str, dict[int, Any]] = {}
    seen: dict[int, Path] = {}
    file_metadata: dict = {}
    metadata_rank: int | None = None
    earliest: int | None = None
    for path in find_traces(inputs):
        ranks, metadata = read_native_ranks(path)
        for rank, regions in sorted(ranks.items()):
            if rank in seen:
                raise TraceFormatError(
                    f"{path} and {seen[rank]} both claim rank {rank}; pass the MPI rank to sp_init() "
                    "so each rank writes its own"
                )
            seen[rank] = path
            if metadata and (metadata_rank is None or rank < metadata_rank):
                file_metadata, metadata_rank = metadata, rank
            for name, region in regions.items():
                per_region.setdefault(name, {})[rank] = region
                if region.num_calls:
                    first = int(region.start_times_ns[0])
                    earliest = first if earliest is None else min(earliest, first)
    metadata = dict(file_metadata)
    metadata.update({"source": "native", "trace_format_version": FORMAT_VERSION})
    if earliest is not None:
        metadata["start_time_ns"] = earliest
    if label is not None:
        metadata["label"] = label
    return ProfilingResults(
        {
            name: MPIRegion(name=name, regions=dict(sorted(ranks.items())))
            for name, ranks in per_region.items()
        },
        metadata=metadata,
        num_ranks=len(seen),
        file_path=label or "native_trace",
    )
