"""The other exports, written in Rust (spec-exports): ``export_perfetto``, ``export_pprof``,
``export_folded``, ``export_timeline_svg``, ``export_parquet``, ``export_html`` (and the
reference's name for it, ``create_html_report``). Speedscope, pstats, flame
graph and Chrome trace live in the reference's modules (``speedscope_export``,
``prof_export``, ``chrome_trace_export``)."""

from __future__ import annotations

from ._native import (
    create_html_report,
    export_folded,
    export_html,
    export_parquet,
    export_perfetto,
    export_pprof,
    export_timeline_svg,
)

__all__ = [
    "create_html_report",
    "export_folded",
    "export_html",
    "export_parquet",
    "export_perfetto",
    "export_pprof",
    "export_timeline_svg",
]
