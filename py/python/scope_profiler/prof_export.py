"""cProfile/pstats and flame graph exports, written in Rust: ``export_prof``,
``export_flamegraph_svg``; ``load_prof`` reads a ``.prof`` file back, ``to_pstats`` gives
the same statistics as ``pstats.Stats`` objects."""

import pstats
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._native import ProfilingResults, export_flamegraph_svg, export_prof, unique_labels

__all__ = ["export_flamegraph_svg", "export_prof", "load_prof", "to_pstats"]

_NO_CALLS = "No calls recorded for the requested ranks."


def load_prof(filepath: str | Path) -> pstats.Stats:
    """Read a ``.prof`` file written by ``export_prof`` back as a ``pstats.Stats``."""
    return pstats.Stats(str(filepath))


def _rename_root(stats: pstats.Stats, old: str, new: str) -> None:
    """Rename the root entry ``("~", 0, old)`` of ``stats`` (a repeated run label) in its
    key and wherever it is a caller; one pass over the entries (never over calls)."""
    root, renamed = ("~", 0, old), ("~", 0, new)

    def key(k):
        return renamed if k == root else k

    table = stats.stats  # type: ignore[attr-defined]
    stats.stats = {  # type: ignore[attr-defined]
        key(k): (*v[:4], {key(c): e for c, e in v[4].items()}) for k, v in table.items()
    }
    stats.get_top_level_stats()


def to_pstats(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    call_paths: bool = True,
) -> dict[tuple[str, int], pstats.Stats]:
    """One ``pstats.Stats`` per (run label, rank with calls), keyed ``(label, rank)``: the
    statistics ``export_prof`` writes (the same entries, times in s of the recording
    clock), read back from a temporary file. ``ranks`` defaults to rank 0; a repeated run
    label is keyed ``"label (2)"``, its root entry ``<label (2) rank R>``. MPI
    ranks other than 0 get ``{}``. ``ValueError`` as ``export_prof``: no profiling data, a
    rank the run does not have, no region matching the filters, or no calls on any rank
    asked for."""
    runs = (
        [profiling_data] if isinstance(profiling_data, ProfilingResults) else list(profiling_data)
    )
    if not runs:
        raise ValueError("No profiling data provided.")
    runs = [run for run in runs if run.is_root]
    wanted = [0] if ranks is None else [ranks] if isinstance(ranks, int) else list(ranks)
    out: dict[tuple[str, int], pstats.Stats] = {}
    with tempfile.TemporaryDirectory(prefix="scope-profiler-pstats-") as tmp:
        for i, (label, run) in enumerate(zip(unique_labels([r.display_label for r in runs]), runs)):
            for rank in wanted:
                target = Path(tmp) / f"run{i}_rank{rank}.prof"
                try:
                    paths = export_prof(
                        run, target, [rank], include, exclude, call_paths, verbose=False
                    )
                except ValueError as exc:
                    if str(exc) == _NO_CALLS:
                        continue  # this rank recorded nothing: no entry, as in the reference
                    raise
                if paths:
                    stats = load_prof(paths[0])
                    if label != run.display_label:
                        _rename_root(
                            stats, f"<{run.display_label} rank {rank}>", f"<{label} rank {rank}>"
                        )
                    out[(label, rank)] = stats
    if runs and not out:
        raise ValueError(_NO_CALLS)
    return out
