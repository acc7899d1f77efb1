"""Exception types of scope_profiler.

The three file/reconstruction errors are raised from Rust and defined in
``scope_profiler._native``; this module re-exports them so ``except`` clauses can
name them without touching the extension module:

* :class:`CorruptProfileError` (an ``OSError``): the file is not a readable
  scope-profiler profile (not HDF5, truncated, damaged index). The message names
  the file.
* :class:`HDF5SchemaError` (a ``ValueError``): the file's schema version is
  invalid or newer than this package reads.
* :class:`NestingError` (a ``ValueError``): recorded calls on one lane overlap
  without nesting, so no call tree exists.
"""

from __future__ import annotations

from ._native import CorruptProfileError, HDF5SchemaError, NestingError

__all__ = ["CorruptProfileError", "HDF5SchemaError", "NestingError"]
