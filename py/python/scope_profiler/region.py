"""``Region``: one region's calls on one rank (int64 ns arrays, statistics in seconds)."""

from __future__ import annotations

from ._native import EventDataUnavailableError, Region

__all__ = ["EventDataUnavailableError", "Region"]
