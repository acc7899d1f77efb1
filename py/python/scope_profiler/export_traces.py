"""Trace and profile exports written in Rust (spec-exports, common rules at the top):

* ``export_prof`` — cProfile/pstats ``.prof`` (``pstats.Stats``, snakeviz, gprof2dot);
* ``export_chrome_trace`` — Chrome Trace Event JSON (Perfetto, DevTools, speedscope);
* ``export_perfetto`` — Perfetto protobuf ``.pftrace`` (ui.perfetto.dev);
* ``export_pprof`` — pprof ``profile.proto`` (``go tool pprof``), gzip-compressed by default.

All take ``(profiling_data, filepath, ranks=None, include=None, exclude=None,
verbose=True)`` and return the paths written. Non-root result sets are dropped (``[]``
when none remain); ``ranks`` defaults to ``[0]``; ``include``/``exclude`` select regions
through ``get_regions``. Errors: ``ValueError`` for no data, an invalid rank, a filter
matching nothing or no calls; ``NestingError`` when a rank cannot be reconstructed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from . import _native
from .export import _one_file_per_run, _prepare, _target_path
from .results import ProfilingResults

__all__ = ["export_chrome_trace", "export_perfetto", "export_pprof", "export_prof"]


def export_prof(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    call_paths: bool = True,
    per_lane: bool = False,
    verbose: bool = True,
) -> list[Path]:
    """Write pstats ``.prof`` files (``marshal`` of the pstats dict), one per (run, rank).

    Names: ``f"{Path(filepath).stem}[_{label slug}]_rank{r}{suffix}"``, suffix =
    ``Path(filepath).suffix or ".prof"``; ``per_lane=True`` writes one file per lane
    instead, ``..._rank{r}_{lane slug}{suffix}``, whose root is ``<label rank R - lane>``.
    ``call_paths=True`` keeps one entry per call path (``"a > b"``), ``False`` one per
    region. Recursion (primitive calls) is judged per lane: a same-named call on another
    thread or task is not recursion (unlike the reference).
    """
    runs, selected_ranks, prepared = _prepare(
        profiling_data, ranks, include, exclude, always_names=True
    )
    if not runs:
        return []
    base = Path(filepath)
    suffix = base.suffix or ".prof"
    written: list[Path] = []
    for label, run, names, _ in prepared:
        target = _target_path(base, base.stem, suffix, label, len(runs) > 1)
        paths = _native.write_prof(
            run._native_run(),
            selected_ranks,
            label,
            os.fspath(target),
            names,
            call_paths=call_paths,
            per_lane=per_lane,
        )
        for path in map(Path, paths):
            written.append(path)
            if verbose:
                print(f"Wrote {path} (view with: snakeviz {path})")
    return written


def export_chrome_trace(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Chrome Trace Event JSON, one file per run (default suffix ``.trace.json``):
    one track per lane (threads, then tasks, each named), complete events in µs from the
    run start, identical calls with identical name and args so viewers aggregate them."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".trace.json",
        _native.write_chrome_trace,
        "open with Perfetto or chrome://tracing",
        verbose,
    )


def export_perfetto(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Perfetto protobuf traces, one file per run (default suffix ``.pftrace``): a
    process track per rank, a thread track per thread, a task track (under its thread) per
    task, nested slices per call and ``"awaiting"`` child slices for a task's await time."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".pftrace",
        _native.write_perfetto,
        "open with https://ui.perfetto.dev",
        verbose,
    )


def export_pprof(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    filepath: str | Path,
    ranks: list[int] | int | None = None,
    include: list[str] | str | None = None,
    exclude: list[str] | str | None = None,
    verbose: bool = True,
) -> list[Path]:
    """Write pprof profiles, one file per run (default suffix ``.pb.gz``; a name not
    ending in ``.gz`` is written uncompressed): sample type wall/nanoseconds holding the
    self time per call stack, each stack rooted at its lane (thread / task) name."""
    return _one_file_per_run(
        profiling_data,
        filepath,
        ranks,
        include,
        exclude,
        ".pb.gz",
        _native.write_pprof,
        "open with: go tool pprof -http=: FILE",
        verbose,
    )
