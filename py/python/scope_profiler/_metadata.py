"""Per-call metadata (scope-profiler 0.7.5's ``ProfileManager.metadata``). The block
(``MetadataScope``) and ``@profile(metadata=...)``'s call wrapper (``MetadataCall``) are Rust
(``py/src/recording/metadata.rs``); the block of a coroutine's or generator's whole run
(``CallBlock``) is here.

``with manager.metadata(**values) as d:`` reads the recorder clock at entry and at exit and,
when the manager records, hands the block to the native recorder as one scope
(``NativeRecorder.add_metadata_scope``: entry ns, exit ns, ``json.dumps`` of the merged
dict). Nothing happens per recorded call: at each ``finalize()`` the Rust side
(``scope_profiler_finalize::metadata_scopes``) gives every call wholly inside a scope's time,
on any thread or task, that scope's values, widest scope first (the reference's rule).

Nested blocks merge through a context variable of the manager class (an inner block's dict
is the outer one's updated with its own values), so a block sees the values of the blocks
around it in its own thread or task; ``d`` is that dict, and changes made to it inside the
block are recorded too (``record_outcome`` adds ``status``/``exception`` that way).

Values are stored as JSON (``json.dumps``, as the reference's file has them): str, int,
float (``NaN``/``inf`` too), bool, None, lists, tuples (read back as lists) and dicts of
those. Anything else raises ``TypeError`` when the block exits (the reference keeps such a
value in memory and then fails in ``finalize()`` when it writes the file).
"""

from __future__ import annotations

# MetadataScope: one block (also a decorator); MetadataCall: @profile's wrapper of each call
from ._native import MetadataCall, MetadataScope

__all__ = ["CallBlock", "MetadataCall", "MetadataScope"]


class CallBlock:
    """The block of one run of a coroutine or generator function decorated with
    ``@profile(metadata=..., record_outcome=...)``, entered around the whole run (its region's
    span): as :class:`MetadataCall`'s block, ``metadata`` a mapping or a callable given the
    call's ``args``/``kwargs`` (``TypeError`` as ``dict(**values)`` for other values); with
    ``record_outcome``, ``status`` (``"ok"``/``"error"``) and ``exception`` (the exception
    type's name) say how the run ended."""

    def __init__(self, manager, metadata, record_outcome: bool, args, kwargs) -> None:
        values = (metadata(*args, **kwargs) if callable(metadata) else metadata) or {}
        self._scope = MetadataScope(manager, dict(**values))
        self._record_outcome = record_outcome
        self._values: dict = {}

    def __enter__(self) -> dict:
        self._values = self._scope.__enter__()
        return self._values

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if self._record_outcome and exc_type is None:
            self._values["status"] = "ok"
        elif self._record_outcome:
            self._values.update(status="error", exception=exc_type.__name__)
        self._scope.__exit__(exc_type, exc_value, traceback)
