"""Pick the reader or writer for a profile path (the reference's ``profile_io``).

The format rules and the readers' choice are Rust (``load`` by contents, ``read_profile``
by name); this module dispatches ``read_profile_summary`` / ``write_profile``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._native import load, profile_format, read_profile, sniff_profile_format
from .h5reader import read_h5_summary
from .json_export import read_json, write_json
from .results import ProfilingResults

FORMAT_HDF5 = "hdf5"
FORMAT_JSON = "json"
FORMAT_HTML = "html"


def read_profile_summary(file_path: str | Path, **kwargs: Any) -> ProfilingResults:
    """``read_h5_summary`` for HDF5; a JSON profile is read whole (``read_json``)."""
    if profile_format(file_path) == FORMAT_JSON:
        return read_json(file_path)
    return read_h5_summary(file_path, **kwargs)


def write_profile(results: ProfilingResults, file_path: str | Path, **kwargs: Any) -> Path:
    """Write ``results`` in the format ``file_path``'s name asks for: ``.json``/``.json.gz``
    a JSON profile (``kwargs`` go to ``write_json``), ``.html``/``.htm`` the HTML report of
    every rank (``create_html_report``, ``kwargs`` go to it), anything else HDF5."""
    kind = profile_format(file_path)
    if kind == FORMAT_JSON:
        return write_json(results, file_path, **kwargs)
    if kind == FORMAT_HTML:
        from .exports import create_html_report

        return create_html_report(results, file_path, **kwargs)
    path = Path(file_path)
    results._native_run().write_h5(path)
    return path


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
