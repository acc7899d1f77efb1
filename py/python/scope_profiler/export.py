"""Exports of results to other tools' formats (spec-exports).

``export_speedscope`` writes one speedscope document per run, one evented profile
per lane (thread / task), through the Rust writer.

The helpers here implement the common rules of every exporter (spec-exports, top):
``_prepare`` (root runs, labels, rank validation, region filter, runs with calls),
``_target_path`` (file naming) and ``_one_file_per_run`` (speedscope's naming rule);
``export_traces`` and ``export_graphics`` use them too.
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
    if isinstance(profiling_data, (str, bytes, os.PathLike)) or not hasattr(
        profiling_data, "__iter__"
    ):
        raise TypeError(
            "exporters take ProfilingResults (or a sequence of them), got "
            f"{type(profiling_data).__name__}; load a file first with scope_profiler.read_h5(path)"
        )
    runs = list(profiling_data)
    if not all(isinstance(run, ProfilingResults) for run in runs):
        bad = next(type(run).__name__ for run in runs if not isinstance(run, ProfilingResults))
        raise TypeError(f"exporters take ProfilingResults, got a sequence containing {bad}")
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


def _prepare(profiling_data, ranks, include, exclude, always_names=False):
    """Validate like every exporter: ``(runs, ranks, [(label, run, names, ranks with
    calls)])`` for the runs that have calls on the selected ranks. ``names`` is None (all
    regions) when neither ``include`` nor ``exclude`` is given, unless ``always_names``:
    then the ``get_regions`` names, whose order some formats keep."""
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
            unfiltered = include is None and exclude is None and not always_names
            names = None if unfiltered else [region.name for region in regions]
            prepared.append((label, run, names, with_calls))
    if not prepared:
        raise ValueError("No calls recorded for the requested ranks.")
    return runs, selected_ranks, prepared


def _target_path(
    base: Path, stem: str, suffix: str, label: str, multiple: bool, rank: int | None = None
) -> Path:
    """``<stem>[_<label slug>][_rank<R>]<suffix>`` beside ``base`` (the slug only when
    several runs are exported)."""
    parts = [stem]
    if multiple:
        parts.append(_filename_slug(label))
    if rank is not None:
        parts.append(f"rank{rank}")
    return base.with_name("_".join(parts) + suffix)


def _one_file_per_run(
    profiling_data,
    filepath,
    ranks,
    include,
    exclude,
    default_suffix,
    write,
    note,
    verbose,
    always_names=False,
):
    """Speedscope naming (spec-exports §1): ``name.partition(".")`` keeps the tail as the
    suffix (else ``default_suffix``); with several runs ``_<label slug>`` joins the stem.
    ``write(native, ranks, label, path, names)`` returns None (it wrote ``path``) or the
    paths it wrote; one ``Wrote <path> (<note>)`` line per path when ``verbose``."""
    runs, selected_ranks, prepared = _prepare(profiling_data, ranks, include, exclude, always_names)
    if not runs:
        return []
    base = Path(filepath)
    stem, dot, extension = base.name.partition(".")
    suffix = f".{extension}" if dot else default_suffix
    written: list[Path] = []
    for label, run, names, _ in prepared:
        path = _target_path(base, stem, suffix, label, len(runs) > 1)
        result = write(run._native_run(), selected_ranks, label, os.fspath(path), names)
        paths = [path] if result is None else [Path(p) for p in result]
        written.extend(paths)
        if verbose:
            for p in paths:
                print(f"Wrote {p} ({note})")
    return written


def _write_speedscope(native, ranks, label, path, names):
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    native.write_speedscope(ranks, label, path, names)


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
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".speedscope.json",
        _write_speedscope,
        "view at https://www.speedscope.app",
        verbose,
        always_names=True,
    )
