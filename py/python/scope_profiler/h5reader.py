"""Reading HDF5 profiles (schemas 1-3, the reference's layout), in Rust.

Errors: ``FileNotFoundError`` (missing file), ``CorruptProfileError`` (not HDF5, truncated,
damaged index; the message names the file), ``HDF5SchemaError`` (schema invalid or newer than
supported), ``SummaryDataUnavailable`` (``read_h5_summary(fallback=False)`` on schema 1).
"""

from __future__ import annotations

from ._native import (
    CorruptProfileError,
    HDF5SchemaError,
    SummaryDataUnavailable,
    read_h5,
    read_h5_summary,
)

__all__ = [
    "CorruptProfileError",
    "HDF5SchemaError",
    "SummaryDataUnavailable",
    "read_h5",
    "read_h5_summary",
]
