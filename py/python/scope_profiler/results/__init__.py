"""Results of a profiling run: ``ProfilingResults`` -> ``MPIRegion`` -> ``Region``.

Modules: :mod:`.run` (``ProfilingResults``), :mod:`.mpi_region`, :mod:`.region`,
:mod:`.stats` (statistics shared by both region classes), :mod:`.lanes` (``ThreadInfo``,
``TaskInfo``), :mod:`.frames` (Arrow / Polars / pandas frames), :mod:`.merge`
(``merge_results``), :mod:`.display` (notebook HTML). All public times are float seconds;
``*_ns`` accessors return the stored int64 nanoseconds.
"""

from __future__ import annotations

from ._common import NS_PER_SECOND as NS_PER_SECOND
from ._common import UNKNOWN as UNKNOWN
from ._common import EventDataUnavailableError
from .lanes import TaskInfo, ThreadInfo
from .merge import merge_results
from .mpi_region import MPIRegion
from .region import Region
from .run import ProfilingResults

__all__ = [
    "EventDataUnavailableError",
    "MPIRegion",
    "ProfilingResults",
    "Region",
    "TaskInfo",
    "ThreadInfo",
    "merge_results",
]
