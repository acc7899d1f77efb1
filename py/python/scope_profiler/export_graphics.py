"""Graphics and table exports written in Rust (spec-exports, common rules at the top):

* ``export_folded`` — folded stacks ``lane;a;b;c <self ns>`` (flamegraph.pl, inferno,
  speedscope's collapsed-stack importer); one root frame per thread / task;
* ``export_flamegraph_svg`` — flame graph SVG rendered by inferno from those stacks,
  one file per (run, rank), named like ``.prof`` (spec-exports §3);
* ``export_timeline_svg`` — lane timeline: one row per thread and task, nested calls as
  bars on a time axis (ms since the run start), await time hatched, tooltips;
* ``export_parquet`` — Parquet events (one row per call) and lanes (thread and task
  tables) files for DuckDB, Polars, pandas/pyarrow.

All take ``(profiling_data, filepath, ranks=None, include=None, exclude=None,
verbose=True)`` and return the paths written. Non-root result sets are dropped (``[]``
when none remain); ``ranks`` defaults to ``[0]``; ``include``/``exclude`` select regions
through ``get_regions``. Errors: ``ValueError`` for no data, an invalid rank, a filter
matching nothing or no calls; ``NestingError`` when a rank cannot be reconstructed.

File names: ``export_folded``, ``export_timeline_svg`` and ``export_parquet`` follow
speedscope's rule (``name.partition(".")`` keeps the tail as the suffix, default
``.folded`` / ``.timeline.svg`` / ``.parquet``; with several runs ``_<label slug>`` joins
the stem). Parquet writes its lanes table beside the events file:
``x.parquet`` → ``x.lanes.parquet``. ``export_flamegraph_svg`` writes
``f"{Path(filepath).stem}[_{slug}]_rank{r}{Path(filepath).suffix or '.svg'}"``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from . import _native
from .export import _one_file_per_run, _prepare, _target_path
from .results import ProfilingResults

__all__ = ["export_flamegraph_svg", "export_folded", "export_parquet", "export_timeline_svg"]


def export_folded(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
    unit: str = "ns",
) -> list[Path]:
    """Write folded stacks, one file per run: ``lane;region;child <self time>`` per distinct
    call path per lane, integer counts in ``unit`` (``"ns"``, exact, or ``"us"``). The lane
    label is the root frame (``"rank R - "`` prefixed when several ranks are exported)."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".folded",
        lambda native, rk, label, path, names: _native.write_folded(
            native, rk, label, path, names, unit=unit
        ),
        "folded stacks: inferno-flamegraph, flamegraph.pl, speedscope",
        verbose,
    )


def export_timeline_svg(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
    width: float = 1400.0,
) -> list[Path]:
    """Write the lane timeline SVG of each run: one row per thread and task, calls as
    nested bars on a time axis in ms since the run start, await share hatched, a tooltip
    per bar; open it in a browser."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".timeline.svg",
        lambda native, rk, label, path, names: _native.write_timeline_svg(
            native, rk, label, path, names, width=width
        ),
        "lane timeline, open in a browser",
        verbose,
    )


def export_parquet(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Parquet files per run: the events (one row per call: rank, region, call_index,
    start/end/duration ns, call_id, parent_id, thread, task, await_ns, depth, lane,
    exclusive_ns) and, beside it, the lanes (``x.lanes.parquet``: thread and task tables,
    join on ``(rank, lane)``). Returns events and lanes paths in order."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".parquet",
        _native.write_parquet,
        "Parquet: DuckDB, Polars, pyarrow",
        verbose,
    )


def export_flamegraph_svg(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write one flame graph SVG per (run, rank with calls), rendered by inferno from the
    folded stacks: a tower per thread / task, widths in ns of self + children time,
    interactive (search, zoom) in a browser. Names like ``.prof`` (spec-exports §3):
    ``<stem>[_<slug>]_rank<R><suffix or .svg>``."""
    runs, _, prepared = _prepare(profiling_data, ranks, include, exclude)
    if not runs:
        return []
    base = Path(filepath)
    suffix = base.suffix or ".svg"
    written: list[Path] = []
    for label, run, names, with_calls in prepared:
        for rank in with_calls:
            path = _target_path(base, base.stem, suffix, label, len(runs) > 1, rank)
            for p in _native.write_flamegraph_svg(
                run._native_run(), [rank], label, os.fspath(path), names
            ):
                written.append(Path(p))
                if verbose:
                    print(f"Wrote {p} (flame graph, open in a browser)")
    return written
