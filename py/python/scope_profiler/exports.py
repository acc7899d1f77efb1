"""The other exports, written in Rust (spec-exports): ``export_perfetto``, ``export_pprof``,
``export_folded``, ``export_timeline_svg``, ``export_parquet``. Speedscope, pstats, flame
graph and Chrome trace live in the reference's modules (``speedscope_export``,
``prof_export``, ``chrome_trace_export``)."""

from ._native import (
    export_folded,
    export_parquet,
    export_perfetto,
    export_pprof,
    export_timeline_svg,
)

__all__ = [
    "export_folded",
    "export_parquet",
    "export_perfetto",
    "export_pprof",
    "export_timeline_svg",
]
