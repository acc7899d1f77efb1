"""JSON profile (spec-exports §5), written in Rust: ``export_json``, ``write_json``,
``read_json`` and ``JSONProfileError``.

A lossless JSON document of one run (the reference's layout, ``format_version`` 1);
names ending in ``.gz`` are gzip-compressed.
"""

from ._native import JSONProfileError, export_json, read_json, write_json

__all__ = ["JSONProfileError", "export_json", "read_json", "write_json"]
