"""Speedscope export (spec-exports §1), written in Rust: ``export_speedscope``."""

from ._native import export_speedscope

__all__ = ["export_speedscope"]
