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
from .export import _as_runs, _filename_slug, _normalize_ranks, _unique_labels
from .results import ProfilingResults

__all__ = ["export_folded", "export_flamegraph_svg", "export_timeline_svg", "export_parquet"]


def _prepare(profiling_data, ranks, include, exclude):
    """Validate like every exporter: ``(runs, ranks, [(label, run, names, ranks with
    calls)])`` for the runs that have calls on the selected ranks (``names`` None = all
    regions)."""
    runs = _as_runs(profiling_data)
    if not runs:
        return [], [], []
    selected_ranks = _normalize_ranks(ranks) if ranks is not None else [0]
    labels = _unique_labels([run.display_label for run in runs])
    prepared = []
    for label, run in zip(labels, runs):
        regions = run.get_regions(include=include, exclude=exclude)
        if not regions:
            raise ValueError("No regions matched the selected filters.")
        for rank in selected_ranks:
            if rank < 0 or rank >= run.num_ranks:
                raise ValueError(f"Invalid rank requested: {rank}")
        with_calls = [
            rank
            for rank in selected_ranks
            if any(region.regions[rank].num_calls for region in regions if rank in region.regions)
        ]
        if with_calls:
            names = None if include is None and exclude is None else [r.name for r in regions]
            prepared.append((label, run, names, with_calls))
    if not prepared:
        raise ValueError("No calls recorded for the requested ranks.")
    return runs, selected_ranks, prepared


def _one_file_per_run(profiling_data, filepath, ranks, include, exclude, default_suffix, write, note, verbose):
    runs, selected_ranks, prepared = _prepare(profiling_data, ranks, include, exclude)
    if not runs:
        return []
    base = Path(filepath)
    stem, dot, extension = base.name.partition(".")
    suffix = f".{extension}" if dot else default_suffix
    written: list[Path] = []
    for label, run, names, _ in prepared:
        parts = [stem]
        if len(runs) > 1:
            parts.append(_filename_slug(label))
        path = base.with_name("_".join(parts) + suffix)
        paths = [Path(p) for p in write(run._native_run(), selected_ranks, label, os.fspath(path), names)]
        written.extend(paths)
        if verbose:
            for p in paths:
                print(f"Wrote {p} ({note})")
    return written


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
        profiling_data, filepath, ranks, include, exclude, ".folded",
        lambda native, rk, label, path, names: _native.write_folded(native, rk, label, path, names, unit=unit),
        "folded stacks: inferno-flamegraph, flamegraph.pl, speedscope", verbose,
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
        profiling_data, filepath, ranks, include, exclude, ".timeline.svg",
        lambda native, rk, label, path, names: _native.write_timeline_svg(native, rk, label, path, names, width=width),
        "lane timeline, open in a browser", verbose,
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
        profiling_data, filepath, ranks, include, exclude, ".parquet", _native.write_parquet,
        "Parquet: DuckDB, Polars, pyarrow", verbose,
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
            parts = [base.stem]
            if len(runs) > 1:
                parts.append(_filename_slug(label))
            parts.append(f"rank{rank}")
            path = base.with_name("_".join(parts) + suffix)
            for p in _native.write_flamegraph_svg(run._native_run(), [rank], label, os.fspath(path), names):
                written.append(Path(p))
                if verbose:
                    print(f"Wrote {p} (flame graph, open in a browser)")
    return written
