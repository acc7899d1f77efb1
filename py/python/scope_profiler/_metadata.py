"""Per-call metadata (scope-profiler 0.7.5's ``ProfileManager.metadata``): the Python hooks.

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

import functools
from contextlib import ContextDecorator

from ._native import perf_counter_ns


class MetadataScope(ContextDecorator):
    """One ``metadata(**values)`` block; also a decorator (each call of the decorated
    function is a block of its own)."""

    __slots__ = ("_manager", "_merged", "_start", "_token", "_values")

    def __init__(self, manager, values: dict) -> None:
        self._manager = manager
        self._values = values
        self._merged: dict | None = None

    def _recreate_cm(self):
        return MetadataScope(self._manager, self._values)

    def __enter__(self) -> dict:
        if self._merged is not None:
            raise RuntimeError("a metadata() block can be entered only once; call metadata() again")
        context = self._manager._metadata_context
        merged = {**(context.get() or {}), **self._values}
        self._merged = merged
        self._token = context.set(merged)
        self._start = perf_counter_ns()
        return merged

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        end = perf_counter_ns()
        context = self._manager._metadata_context
        try:
            context.reset(self._token)
        except ValueError:  # exited in another context (a generator advanced elsewhere)
            pass
        merged = self._merged
        if merged and self._manager.is_active():
            config = self._manager._config
            native = None if config is None else config._native
            if native is not None:
                native.add_metadata_scope(self._start, end, _dumps(merged))


def _dumps(values: dict) -> str:
    import json

    try:
        return json.dumps(values)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"per-call metadata must be JSON values (str, int, float, bool, None, lists, "
            f"dicts): {error}"
        ) from error


def call_with_metadata(manager, profiled, metadata, record_outcome: bool):
    """The ``@profile(metadata=..., record_outcome=...)`` wrapper of ``profiled`` (the
    Rust wrapper): each call runs inside a ``metadata()`` block holding ``metadata`` (a
    mapping, or a callable given the call's arguments that returns one) and, with
    ``record_outcome``, ``status`` (``"ok"``/``"error"``) and ``exception`` (the
    exception's type name). While the region is disabled (before ``setup()``, an opt-in
    tag that is off) the function is called directly, the metadata left out."""

    def invoke(*args, **kwargs):
        if profiled._region is None:
            return profiled(*args, **kwargs)
        values = (metadata(*args, **kwargs) if callable(metadata) else metadata) or {}
        if not record_outcome:
            if not values:
                return profiled(*args, **kwargs)
            with MetadataScope(manager, dict(**values)):
                return profiled(*args, **kwargs)
        with MetadataScope(manager, dict(**values)) as event_metadata:
            try:
                result = profiled(*args, **kwargs)
            except BaseException as error:
                event_metadata.update(status="error", exception=type(error).__name__)
                raise
            event_metadata["status"] = "ok"
            return result

    return invoke


def lifetime_with_metadata(manager, profiled, lifetime, metadata, record_outcome: bool):
    """As :func:`call_with_metadata` for the wrapper ``lifetime`` of a coroutine or
    generator function (its region spans the coroutine's or generator's whole run): the
    block spans that run too, and ``status`` is its outcome. ``None`` for other functions
    (async generator functions: their calls get no metadata)."""
    import inspect

    def values_of(args, kwargs) -> dict:
        return (metadata(*args, **kwargs) if callable(metadata) else metadata) or {}

    if inspect.iscoroutinefunction(lifetime):

        @functools.wraps(lifetime)
        async def coroutine_wrapper(*args, **kwargs):
            if profiled._region is None:
                return await lifetime(*args, **kwargs)
            values = values_of(args, kwargs)
            if not record_outcome:
                with MetadataScope(manager, dict(**values)):
                    return await lifetime(*args, **kwargs)
            with MetadataScope(manager, dict(**values)) as event_metadata:
                try:
                    result = await lifetime(*args, **kwargs)
                except BaseException as error:
                    event_metadata.update(status="error", exception=type(error).__name__)
                    raise
                event_metadata["status"] = "ok"
                return result

        return coroutine_wrapper
    if inspect.isgeneratorfunction(lifetime):

        @functools.wraps(lifetime)
        def generator_wrapper(*args, **kwargs):
            if profiled._region is None:
                return (yield from lifetime(*args, **kwargs))
            values = values_of(args, kwargs)
            with MetadataScope(manager, dict(**values)) as event_metadata:
                try:
                    result = yield from lifetime(*args, **kwargs)
                except BaseException as error:
                    if record_outcome:
                        event_metadata.update(status="error", exception=type(error).__name__)
                    raise
                if record_outcome:
                    event_metadata["status"] = "ok"
                return result

        return generator_wrapper
    return None
