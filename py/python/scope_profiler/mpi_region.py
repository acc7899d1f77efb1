"""``MPIRegion``: one region name across ranks; ``region[rank]`` is the ``Region``."""

from __future__ import annotations

from ._native import MPIRegion

__all__ = ["MPIRegion"]
