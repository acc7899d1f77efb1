"""Chrome Trace Event JSON export, written in Rust: ``export_chrome_trace``."""

from ._native import export_chrome_trace

__all__ = ["export_chrome_trace"]
