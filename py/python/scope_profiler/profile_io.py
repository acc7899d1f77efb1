"""Pick the reader or writer for a profile path (the reference's ``profile_io``).

The format rules, the readers' and the writers' choice are Rust: ``load`` by contents,
``read_profile`` / ``read_profile_summary`` / ``write_profile`` by name.
"""

from __future__ import annotations

from ._native import (
    load,
    profile_format,
    read_profile,
    read_profile_summary,
    sniff_profile_format,
    write_profile,
)

FORMAT_HDF5 = "hdf5"
FORMAT_JSON = "json"
FORMAT_HTML = "html"

__all__ = [
    "FORMAT_HDF5",
    "FORMAT_HTML",
    "FORMAT_JSON",
    "load",
    "profile_format",
    "read_profile",
    "read_profile_summary",
    "sniff_profile_format",
    "write_profile",
]
