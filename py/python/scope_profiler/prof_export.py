"""cProfile/pstats and flame graph exports, written in Rust: ``export_prof``,
``export_flamegraph_svg``; ``load_prof`` reads a ``.prof`` file back."""

import pstats
from pathlib import Path

from ._native import export_flamegraph_svg, export_prof

__all__ = ["export_flamegraph_svg", "export_prof", "load_prof"]


def load_prof(filepath: str | Path) -> pstats.Stats:
    """Read a ``.prof`` file written by ``export_prof`` back as a ``pstats.Stats``."""
    return pstats.Stats(str(filepath))
