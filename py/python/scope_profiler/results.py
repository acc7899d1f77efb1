"""Results of a profiling run: ``ProfilingResults`` -> ``MPIRegion`` -> ``Region``.

The classes are Rust (``scope_profiler._native``): views over one run held in Rust, per-call
arrays read-only numpy views of its columns. All public times are float seconds; ``*_ns``
accessors return the stored int64 nanoseconds (recording clock: ``CLOCK_MONOTONIC``).
"""

from __future__ import annotations

from ._native import (
    EventDataUnavailableError,
    MPIRegion,
    ProfilingResults,
    Region,
    TaskInfo,
    ThreadInfo,
    merge_results,
)

__all__ = [
    "EventDataUnavailableError",
    "MPIRegion",
    "ProfilingResults",
    "Region",
    "TaskInfo",
    "ThreadInfo",
    "merge_results",
]
