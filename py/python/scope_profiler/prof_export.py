"""cProfile/pstats and flame graph exports, written in Rust: ``export_prof``,
``export_flamegraph_svg``; ``load_prof`` reads a ``.prof`` file back, ``to_pstats`` gives
the same statistics as ``pstats.Stats`` objects."""

import marshal
import pstats
from collections.abc import Sequence
from pathlib import Path

from ._native import ProfilingResults, export_flamegraph_svg, export_prof, pstats_tables

__all__ = ["export_flamegraph_svg", "export_prof", "load_prof", "to_pstats"]


def load_prof(filepath: str | Path) -> pstats.Stats:
    """Read a ``.prof`` file written by ``export_prof`` back as a ``pstats.Stats``."""
    return pstats.Stats(str(filepath))


def to_pstats(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    call_paths: bool = True,
) -> dict[tuple[str, int], pstats.Stats]:
    """One ``pstats.Stats`` per (run label, rank with calls), keyed ``(label, rank)``: the
    statistics ``export_prof`` writes (the same entries, times in s of the recording
    clock), made in memory (``_native.pstats_tables``). ``ranks`` defaults to rank 0; a
    repeated run label is keyed ``"label (2)"``, its root entry ``<label (2) rank R>``. MPI
    ranks other than 0 get ``{}``. ``ValueError`` as ``export_prof``: no profiling data, a
    rank the run does not have, no region matching the filters, or no calls on any rank
    asked for."""
    out: dict[tuple[str, int], pstats.Stats] = {}
    for label, rank, table in pstats_tables(profiling_data, ranks, include, exclude, call_paths):
        stats = pstats.Stats()
        stats.stats = marshal.loads(table)  # type: ignore[attr-defined]
        stats.get_top_level_stats()
        out[(label, rank)] = stats
    return out
