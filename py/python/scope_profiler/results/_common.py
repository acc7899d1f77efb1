"""Shared constants and helpers of the results package."""

from __future__ import annotations

import numpy as np

NS_PER_SECOND = 1e9
UNKNOWN = -1


class EventDataUnavailableError(RuntimeError):
    """Raised when a summary-only result is asked for per-call event data."""


def _int64(values) -> np.ndarray | None:
    """``values`` as an int64 array; an int64 array (e.g. a read-only view) is kept as is."""
    if values is None:
        return None
    return np.asarray(values, dtype=np.int64)
