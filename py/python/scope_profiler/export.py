"""Exports of results to other tools' formats (spec-exports).

``export_speedscope`` writes one speedscope document per run, one evented profile
per lane (thread / task), through the Rust writer.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from .results import ProfilingResults

__all__ = ["export_speedscope"]


def _as_runs(profiling_data) -> list[ProfilingResults]:
    if isinstance(profiling_data, ProfilingResults):
        profiling_data = [profiling_data]
    runs = list(profiling_data)
    if not runs:
        raise ValueError("No profiling data provided.")
    return [run for run in runs if run.is_root]


def _normalize_ranks(ranks) -> list[int]:
    if isinstance(ranks, int):
        return [ranks]
    return [int(rank) for rank in ranks]


def _unique_labels(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        count = seen.get(label, 0) + 1
        seen[label] = count
        unique.append(label if count == 1 else f"{label} ({count})")
    return unique


def _filename_slug(label: str) -> str:
    slug = re.sub(r"[^\w.+-]+", "_", label).strip("_")
    return slug or label


def export_speedscope(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write speedscope JSON files; returns the paths written.

    One file per run (``name.partition(".")`` keeps a ``.speedscope.json`` tail;
    with several runs the file stem gets ``_<label slug>``), one evented profile
    per lane of each requested rank (default ranks: ``[0]``). Raises
    ``ValueError`` for an invalid rank, a filter matching nothing or no calls, and
    ``NestingError`` when a rank cannot be reconstructed.
    """
    runs = _as_runs(profiling_data)
    if not runs:
        return []
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
        has_calls = any(
            region.regions[rank].num_calls
            for region in regions
            for rank in selected_ranks
            if rank in region.regions
        )
        if has_calls:
            prepared.append((label, run, [region.name for region in regions]))
    if not prepared:
        raise ValueError("No calls recorded for the requested ranks.")

    base = Path(filepath)
    stem, dot, extension = base.name.partition(".")
    suffix = f".{extension}" if dot else ".speedscope.json"
    multiple = len(runs) > 1
    written = []
    for label, run, names in prepared:
        parts = [stem]
        if multiple:
            parts.append(_filename_slug(label))
        path = base.with_name("_".join(parts) + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        run._native_run().write_speedscope(selected_ranks, label, os.fspath(path), names)
        written.append(path)
        if verbose:
            print(f"Wrote {path} (view at https://www.speedscope.app)")
    return written
