"""``MPIRegion``: one region name across ranks; ``region[rank]`` is the :class:`Region`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ._common import NS_PER_SECOND
from .region import Region
from .stats import DurationStats, check_percentile

__all__ = ["MPIRegion"]


class MPIRegion(DurationStats):
    """One named region across all ranks; ``region[rank]`` is the :class:`Region`."""

    def __init__(self, name: str, regions: dict[int, Region]) -> None:
        self._name = name
        self._regions = regions
        self.color = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def regions(self) -> dict[int, Region]:
        return self._regions

    def _summary_head(self) -> dict[str, Any]:
        return {"name": self.name, "num_ranks": len(self._regions)}

    @property
    def ranks(self) -> list[int]:
        return sorted(self._regions)

    @property
    def has_timing(self) -> bool:
        return any(region.has_timing for region in self._regions.values())

    @property
    def has_event_data(self) -> bool:
        return all(region.has_event_data for region in self._regions.values())

    def _first_captured(self, attr: str):
        for rank in self.ranks:
            value = getattr(self._regions[rank], attr)
            if value is not None:
                return value
        return None

    @property
    def has_source(self) -> bool:
        return self.source_file is not None

    @property
    def has_gpu_timing(self) -> bool:
        return any(region.has_gpu_timing for region in self._regions.values())

    @property
    def source_file(self) -> str | None:
        return self._first_captured("source_file")

    @property
    def source_lineno(self) -> int | None:
        return self._first_captured("source_lineno")

    @property
    def source_text(self) -> str | None:
        return self._first_captured("source_text")

    @property
    def tags(self) -> tuple[str, ...]:
        return self._first_captured("tags") or ()

    def events(self, ranks: list[int] | int | None = None, origin: float = 0.0) -> list[dict]:
        if ranks is None:
            selected = self.ranks
        elif isinstance(ranks, int):
            selected = [ranks]
        else:
            selected = list(ranks)
        events = []
        for rank in selected:
            region = self._regions.get(rank)
            if region is None:
                continue
            for event in region.events(origin=origin):
                events.append({"name": self.name, "rank": rank, **event})
        return events

    @property
    def durations(self) -> np.ndarray:
        values = [r.durations for r in self._regions.values() if r.has_timing]
        if not values:
            return np.array([], dtype=float)
        return np.concatenate(values)

    @property
    def gpu_durations(self) -> np.ndarray | None:
        values = [r.gpu_durations for r in self._regions.values() if r.gpu_durations is not None]
        if not values:
            return None
        return np.concatenate(values)

    @property
    def exclusive_durations(self) -> np.ndarray:
        values = [r.exclusive_durations for r in self._regions.values() if r.has_timing]
        if not values:
            return np.array([], dtype=float)
        return np.concatenate(values)

    @property
    def num_calls(self) -> int:
        return sum(region.num_calls for region in self._regions.values())

    def num_calls_per_rank(self) -> dict[int, int]:
        return {rank: region.num_calls for rank, region in self._regions.items()}

    def average_durations(self) -> dict[int, float]:
        return {rank: region.average_duration for rank, region in self._regions.items()}

    def min_durations(self) -> dict[int, float]:
        return {rank: region.min_duration for rank, region in self._regions.items()}

    def max_durations(self) -> dict[int, float]:
        return {rank: region.max_duration for rank, region in self._regions.items()}

    def total_durations(self) -> dict[int, float]:
        return {rank: region.total_duration for rank, region in self._regions.items()}

    @property
    def total_duration(self) -> float:
        return sum(region.total_duration for region in self._regions.values())

    @property
    def gpu_total_duration(self) -> float | None:
        values = [
            r.gpu_total_duration for r in self._regions.values() if r.gpu_total_duration is not None
        ]
        if not values:
            return None
        return float(sum(values))

    @property
    def total_exclusive_duration(self) -> float:
        return sum(region.total_exclusive_duration for region in self._regions.values())

    @property
    def average_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.mean(values))
        return self.total_duration / self.num_calls if self.num_calls else 0.0

    @property
    def gpu_average_duration(self) -> float | None:
        values = self.gpu_durations
        if values is not None and values.size:
            return float(np.mean(values))
        count = sum(
            int(r.stored_summary.get("gpu_count", 0))
            for r in self._regions.values()
            if r.stored_summary is not None
        )
        total = self.gpu_total_duration
        return total / count if total is not None and count else None

    @property
    def std_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.std(values))
        summaries = [
            r.stored_summary
            for r in self._regions.values()
            if r.num_calls and r.stored_summary is not None
        ]
        if not summaries or any("mean" not in s or "m2" not in s for s in summaries):
            return 0.0
        count = sum(int(s["count"]) for s in summaries)
        mean = sum(int(s["count"]) * float(s["mean"]) for s in summaries) / count
        m2 = sum(
            float(s["m2"]) + int(s["count"]) * (float(s["mean"]) - mean) ** 2 for s in summaries
        )
        return float(np.sqrt(max(m2, 0.0) / count)) / NS_PER_SECOND

    def percentile_duration(self, percentile: float) -> float | None:
        check_percentile(percentile)
        values = self.durations
        if values.size:
            return float(np.percentile(values, percentile))
        return None if self.num_calls else 0.0

    @property
    def rank_imbalance(self) -> float:
        totals = [region.total_duration for region in self._regions.values()]
        totals = [total for total in totals if total > 0]
        if len(totals) < 2:
            return 0.0
        return float(max(totals) / np.mean(totals))

    @property
    def rank_imbalance_pct(self) -> float:
        ratio = self.rank_imbalance
        return (ratio - 1.0) * 100.0 if ratio else 0.0

    @property
    def min_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.min(values))
        minimums = [r.min_duration for r in self._regions.values() if r.num_calls]
        return min(minimums) if minimums else 0.0

    @property
    def max_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.max(values))
        maximums = [r.max_duration for r in self._regions.values() if r.num_calls]
        return max(maximums) if maximums else 0.0

    @property
    def first_duration(self) -> float:
        timed = [r for r in self._regions.values() if r.has_timing]
        if not timed:
            return 0.0
        return min(timed, key=lambda r: r.first_start_time).first_duration

    @property
    def last_duration(self) -> float:
        timed = [r for r in self._regions.values() if r.has_timing]
        if not timed:
            return 0.0
        return max(timed, key=lambda r: r.last_end_time).last_duration

    @property
    def first_start_time(self) -> float:
        starts = [r.first_start_time for r in self._regions.values() if r.has_timing]
        return min(starts) if starts else 0.0

    @property
    def last_end_time(self) -> float:
        ends = [r.last_end_time for r in self._regions.values() if r.has_timing]
        return max(ends) if ends else 0.0

    def __getitem__(self, rank: int) -> Region:
        try:
            return self._regions[rank]
        except KeyError:
            raise KeyError(
                f"Region {self._name!r} has no data for rank {rank}. Available ranks: {self.ranks}",
            ) from None

    def __iter__(self) -> Iterator[int]:
        return iter(self.ranks)

    def __contains__(self, rank: int) -> bool:
        return rank in self._regions

    def __len__(self) -> int:
        return len(self._regions)

    def __repr__(self) -> str:
        return (
            f"<MPIRegion {self._name!r}: {self.num_calls} calls on "
            f"{len(self._regions)} rank(s), "
            f"total {self.total_duration:.6g} s, avg {self.average_duration:.6g} s>"
        )
