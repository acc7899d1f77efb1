"""The other exports, written in Rust (spec-exports): ``export_perfetto``, ``export_pprof``,
``export_folded``, ``export_timeline_svg``, ``export_parquet``, ``export_html`` (and the
reference's name for it, ``create_html_report``). Speedscope, pstats, flame
graph and Chrome trace live in the reference's modules (``speedscope_export``,
``prof_export``, ``chrome_trace_export``)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from ._native import (
    export_folded,
    export_html,
    export_parquet,
    export_perfetto,
    export_pprof,
    export_timeline_svg,
)

if TYPE_CHECKING:
    from .results import ProfilingResults


def create_html_report(
    profiling_data: ProfilingResults | str | PathLike[str],
    filepath: str | PathLike[str],
    *,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    ranks: int | Sequence[int] | None = None,
) -> Path:
    """Write the self-contained HTML report of one run to ``filepath`` and return its path
    (the reference's entry point; ``export_html`` is the one that takes several runs).

    ``profiling_data`` is a ``ProfilingResults`` or the path of a ``.h5`` file (read with
    ``read_h5``); ``ranks`` defaults to every rank of the run. The report has the region
    summary, thread and task tables (held/await columns for ``track_async`` runs), the lane
    timeline and the flame graph; a run without calls gets a page saying so (as 0.7.5).
    Errors: as ``read_h5`` for a path, ``ValueError`` for a filter matching no region or a
    rank the run does not have.
    Deviation: the reference's comparison reports (several runs), ``sort=``, ``columns=`` and
    its Plotly charts are not implemented."""
    if isinstance(profiling_data, (str, PathLike)):
        from .h5reader import read_h5

        profiling_data = read_h5(profiling_data)
    if ranks is None:
        ranks = list(range(profiling_data.num_ranks))
    (path,) = export_html(
        profiling_data, filepath, ranks=ranks, include=include, exclude=exclude, verbose=False
    )
    return path


__all__ = [
    "create_html_report",
    "export_folded",
    "export_html",
    "export_parquet",
    "export_perfetto",
    "export_pprof",
    "export_timeline_svg",
]
