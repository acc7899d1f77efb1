"""Per-call metadata (scope-profiler 0.7.5's ``ProfileManager.metadata``). The block
(``MetadataScope``) and ``@profile(metadata=...)``'s call wrapper (``MetadataCall``) are Rust
(``py/src/recording/metadata.rs``); the coroutine and generator wrappers stay here.

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

# MetadataScope: one block (also a decorator); MetadataCall: @profile's wrapper of each call
from ._native import MetadataCall, MetadataScope

__all__ = ["MetadataCall", "MetadataScope", "lifetime_with_metadata"]


def lifetime_with_metadata(manager, profiled, lifetime, metadata, record_outcome: bool):
    """As :class:`MetadataCall` for the wrapper ``lifetime`` of a coroutine or
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
            with MetadataScope(manager, dict(**values)) as event_metadata:
                try:
                    result = await lifetime(*args, **kwargs)
                except BaseException as error:
                    if record_outcome:
                        event_metadata.update(status="error", exception=type(error).__name__)
                    raise
                if record_outcome:
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
