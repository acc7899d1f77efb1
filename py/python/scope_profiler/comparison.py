"""What changed between two runs, or two groups of repeated runs: ``compare(base, new)``.

The comparison is Rust (``scope_profiler._native.compare_runs``, the one ``scope-profiler
diff`` prints); this module only takes the arguments as Python users give them.
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING

from ._native import Comparison, compare_runs

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._native import ProfilingResults

    _Run = str | PathLike[str] | ProfilingResults
    _Side = _Run | Sequence[_Run]

__all__ = ["Comparison", "compare"]


def _runs(side: _Side) -> list[_Run]:
    """One run (a path, a directory of runs, a ``ProfilingResults``) or a list of them."""
    if isinstance(side, str | PathLike) or not isinstance(side, list | tuple):
        return [side]  # type: ignore[list-item]
    return list(side)


def compare(base: _Side, new: _Side, *, threshold: float = 0.05, by: str = "region") -> Comparison:
    """Compare the runs ``new`` with the runs ``base``: for every region (``by="region"``) or
    call path (``by="path"``), the mean calls and inclusive time per run on each side, the
    change ``new_time / base_time - 1``, its 95 % interval (``ci_low``, ``ci_high``: the
    noise of the calls within each run and, with several runs per side, of the runs; the
    intervals of all rows hold together) and a verdict: ``"slower"`` when ``ci_low`` exceeds
    ``threshold``, ``"faster"`` when ``ci_high`` is below ``-threshold``, ``"new"``,
    ``"gone"``, else ``"unchanged"``.

    ``base`` and ``new`` are each a run file (``.h5``, JSON profile), a directory of run
    files (repeated runs of one version), a ``ProfilingResults``, or a list of these.
    The result's ``rows`` are dicts sorted by the size of the change of time per run;
    ``regressions(pct)``, ``to_polars()``, ``to_pandas()`` and a notebook view go with it.
    Raises ``ValueError`` for an empty side, a bad ``threshold`` or ``by``, a directory
    without runs; as ``load()`` for a file that cannot be read; ``NestingError`` for
    ``by="path"`` on calls that do not nest. ``docs/compare.md`` describes the method.
    """
    return compare_runs(_runs(base), _runs(new), threshold, by)
