"""Statistics shared by :class:`Region` (one rank) and :class:`MPIRegion` (all ranks).

Both classes define the primitives (``num_calls``, ``total_duration``,
``total_exclusive_duration``, ``durations``, ``percentile_duration``, the min/max/first/
last/std/average statistics, ``has_gpu_timing`` and the GPU totals); the aliases and the
summary dict are defined once here.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def check_percentile(percentile: float) -> None:
    if not 0 <= percentile <= 100:
        raise ValueError("percentile must be between 0 and 100")


class DurationStats:
    """Aliases and the summary dict over a class's duration primitives."""

    def _summary_head(self) -> dict[str, Any]:
        """Keys placed before ``num_calls`` in :meth:`get_summary`."""
        return {}

    def get_summary(self) -> dict[str, Any]:
        """``num_calls`` and duration statistics in seconds (+ GPU totals when timed)."""
        summary: dict[str, Any] = {
            **self._summary_head(),
            "num_calls": self.num_calls,
            "total_duration": self.total_duration,
            "inclusive_duration": self.inclusive_duration,
            "exclusive_duration": self.exclusive_duration,
            "average_duration": self.average_duration,
            "min_duration": self.min_duration,
            "max_duration": self.max_duration,
            "first_duration": self.first_duration,
            "last_duration": self.last_duration,
            "std_duration": self.std_duration,
        }
        if self.has_gpu_timing:
            summary["gpu_total_duration"] = self.gpu_total_duration
            summary["gpu_average_duration"] = self.gpu_average_duration
        return summary

    @property
    def inclusive_durations(self) -> np.ndarray:
        return self.durations

    @property
    def inclusive_duration(self) -> float:
        return self.total_duration

    @property
    def exclusive_duration(self) -> float:
        return self.total_exclusive_duration

    @property
    def p50_duration(self) -> float | None:
        return self.percentile_duration(50)

    @property
    def p95_duration(self) -> float | None:
        return self.percentile_duration(95)

    @property
    def p99_duration(self) -> float | None:
        return self.percentile_duration(99)

    def _repr_html_(self) -> str:
        from .display import summary_html

        return summary_html(type(self).__name__, [self.get_summary()])
