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

from ._native import (
    TraceFormatError,
    find_traces,
    load_traces,
    read_native_h5,
    read_native_ranks,
    read_trace,
)

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
