"""``ProfileManager``: the recording side of the Python API (drop-in for scope-profiler 0.7.5).

Every public method is a classmethod acting on the class's state, a
``scope_profiler._native.ManagerState`` (``cls._state``; the class's ``_config``,
``_configured``, ... attributes read and write it). Each manager class has its own: the
process-wide default ``ProfileManager``, a subclass, and the class behind each
``ProfileManager()`` (an isolated manager: own regions, configuration, call-id counter).

The per-call work is Rust: ``region()`` is ``RegionCache.lookup`` (regions are
``_native.ProfileRegion``) and ``@profile`` returns a ``_native.ProfiledFunction`` whose region
binding every ``setup()`` replaces and ``reset()`` clears. ``setup()``, ``finalize()``,
``reset()``, ``pause()`` and the region creation are ``ManagerState`` methods; what stays here
needs Python syntax (the session as a decorator of ``async def``, the lifetime wrappers).

Lifecycle: INACTIVE -> ACTIVE (``setup()``, unless ``deactivate_profiling``) -> FINALIZED
(``finalize()``; a checkpoint: recording continues, hooks stay until the next ``setup()``,
``reset()`` or the end of a ``session()``).
"""

from __future__ import annotations

import atexit
import functools
from operator import attrgetter

from . import _manager_api, _metadata, _tracer
from ._native import (
    ManagerState,
    ProfilingResults,
    ProfilingRun,
    ProfilingSession,
    RegionFactory,
    RegionHandle,
    check_opt_in_tags,
    render_output,
    stop_all_streaming,
    stop_streaming,
    user_stacklevel,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from contextvars import ContextVar
    from typing import Any, ClassVar

    from ._native import RegionCache
    from ._settings import ProfilingConfig

_UNSET = object()

# the names other modules import from here
_user_stacklevel = user_stacklevel
_render_output = render_output
_stop_streaming = stop_streaming
_results_from_native: Any = ProfilingResults._from_native
_ProfilingSession = ProfilingSession

# registered at import, so it runs after every auto-finalize (atexit is LIFO): those read the
# sidecars back first
atexit.register(stop_all_streaming)


def _decorate_with_session(session: ProfilingSession, func):
    """``session(...)`` as a decorator (``ProfilingSession.__call__``): each call of ``func``
    runs in a fresh session; for ``async def`` the session spans the awaited coroutine, not
    just the call that creates it."""
    import inspect

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def session_wrapper(*args, **kwargs):
            with session._recreate_cm():
                return await func(*args, **kwargs)

        return session_wrapper

    @functools.wraps(func)
    def inner(*args, **kwargs):
        with session._recreate_cm():
            return func(*args, **kwargs)

    return inner


def _lifetime_wrapper(func, profiled):
    """For ``async def``, generator and async generator functions, a wrapper whose region
    spans the whole coroutine / generator run (first step to completion) instead of the call
    that merely creates it. ``profiled`` (the Rust wrapper) holds the region binding that every
    ``setup()`` rebinds; ``None`` for plain functions, which ``profiled`` times directly."""
    import inspect

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def coroutine_wrapper(*args, **kwargs):
            region = profiled._region
            if region is None:
                return await func(*args, **kwargs)
            with region:
                return await func(*args, **kwargs)

        return coroutine_wrapper
    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def generator_wrapper(*args, **kwargs):
            region = profiled._region
            if region is None:
                return (yield from func(*args, **kwargs))
            with region:
                return (yield from func(*args, **kwargs))

        return generator_wrapper
    if inspect.isasyncgenfunction(func):
        return _async_generator_wrapper(func, profiled)
    return None


def _recursive_wrapper(cls, func, profiled, call):
    """``profile(recursive=True)``: ``call`` (the decorated function's wrapper) run with the
    calling thread traced by the per-call tracer of ``cls``'s recording
    (:func:`_tracer.call_tracer`) - the reference's ``sys.setprofile`` tracer, in Rust. A
    nested or recursive decorated call on the same thread only counts (the outermost one
    unhooks the thread); a profile function set before (``sys.setprofile``) is set again
    after the call, as the reference restores it. Not traced while the region is off
    (before ``setup()``, an opt-in tag that is off)."""

    @functools.wraps(func)
    def recursive_wrapper(*args, **kwargs):
        tracer = None
        if profiled._region is not None:
            tracer = _tracer.call_tracer(cls._state.config, cls._recorded_path)
        if tracer is None:
            return call(*args, **kwargs)
        previous = _tracer.other_profiler()
        if not tracer.enter_call():
            return call(*args, **kwargs)
        try:
            return call(*args, **kwargs)
        finally:
            tracer.exit_call()
            _tracer.restore_profiler(previous)

    return recursive_wrapper


def _async_generator_wrapper(func, profiled):
    """An async generator function whose region spans the iteration of ``func``'s async
    generator (first ``__anext__`` to exhaustion, ``aclose()`` or an exception), on the lane
    of the task that iterates it, with its await time. ``asend``/``athrow``/``aclose`` reach
    the wrapped generator as they would without the profiler."""
    import contextlib

    @functools.wraps(func)
    async def async_generator_wrapper(*args, **kwargs):
        agen = func(*args, **kwargs)
        region = profiled._region
        with region if region is not None else contextlib.nullcontext():
            try:
                value = await agen.__anext__()
            except StopAsyncIteration:
                return
            while True:
                try:
                    sent = yield value
                except GeneratorExit:
                    await agen.aclose()
                    raise
                except BaseException as exc:
                    try:
                        value = await agen.athrow(exc)
                    except StopAsyncIteration:
                        return
                else:
                    try:
                        value = await agen.asend(sent)
                    except StopAsyncIteration:
                        return

    return async_generator_wrapper


class _ManagerType(type):
    """The type of the manager classes: their state attributes (``_config``, ``_joined``,
    ...) are properties over the class's own ``ManagerState`` (``cls._state``)."""


def _state_property(name: str) -> property:
    # read by Rust per metadata block (_config): a C getter, no Python frame
    return property(attrgetter(f"_state.{name}"), lambda cls, v: setattr(cls._state, name, v))


_STATE_NAMES: tuple[str, ...] = (
    "config",
    "configured",
    "next_call_id",
    "last_results",
    "last_native_run",
)
_STATE_NAMES += ("last_written_run", "requested_output", "host_config", "joined")
for _name in _STATE_NAMES:
    setattr(_ManagerType, f"_{_name}", _state_property(_name))


class ProfileManager(metaclass=_ManagerType):
    """Manage a set of profiling regions (class = process-wide default, instance = isolated).

    ::

        cpu = ProfileManager()
        io = ProfileManager()
        with cpu.session(file_path="cpu.h5"), io.session(file_path="io.h5"):
            with cpu.profile_region("compute"), io.profile_region("write"):
                work()
    """

    _state: ClassVar[ManagerState]
    # properties of _ManagerType over _state (see ManagerState for their meaning)
    _config: ClassVar[ProfilingConfig | None]
    _configured: ClassVar[bool]
    _next_call_id: ClassVar[int]
    _last_results: ClassVar[Any]
    _last_native_run: ClassVar[Any]
    _last_written_run: ClassVar[Any]
    _requested_output: ClassVar[str | None]
    _host_config: ClassVar[ProfilingConfig | None]  # scope-profiler run's run while hosting
    _joined: ClassVar[list]  # the hosted script's runs (ManagerState.join_host)
    # the state's own objects (_install)
    _regions: ClassVar[dict]  # name -> ProfileRegion, the dict the native lookup probes
    _decorators: ClassVar[dict]  # name -> [(func, wrapper, tags), ...]
    _region_definitions: ClassVar[dict]  # name -> (functions, tags) of define_region()
    _metadata_context: ClassVar[ContextVar]  # merged metadata() values around the task
    _region_cache: ClassVar[RegionCache]
    #: ``region(region_name, functions=None, tags=None)``: the region named ``region_name``
    #: (created on first use, cached until the next ``setup()``), a re-entrant context
    #: manager usable from any thread. A native function (``RegionCache.lookup``, one per
    #: manager class): a cached name is one dict probe, no Python frame.
    region: ClassVar[Any]
    profile_region: ClassVar[Any]  # the same object
    _create_region: ClassVar[Any]  # ManagerState.create_region: the lookup's Python path
    _recorded_path: ClassVar[Any]  # ManagerState.recorded_path
    # the same properties for an instance (``ProfileManager()._config``)
    vars().update({f"_{n}": _state_property(n) for n in _STATE_NAMES})

    def __new__(cls: Any):
        if cls is ProfileManager:  # an isolated manager: a class of its own
            cls = _ManagerType("ProfileManagerInstance", (cls,), {"__module__": cls.__module__})
        return object.__new__(cls)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls)

    @classmethod
    def profile(
        cls, region_name=None, recursive=None, metadata=None, record_outcome=False, tags=None
    ):
        """Decorator factory (bare ``@profile`` uses ``func.__name__``).

        The returned wrapper is a Rust object: each call enters the region, calls the
        function and exits, on the calling thread's own buffer and scope stack. It works on
        functions and methods (``__get__``), and is rebound by every ``setup()``.
        ``recursive=True``: while a call runs, every Python function it calls on its thread
        (standard library and packages too, not the profiler's own nor other decorated
        functions, which keep their region) is recorded as a call of ``module.qualname``,
        as the reference does (``_recursive_wrapper``; ``docs/tracing.md``). ``None`` and
        ``False`` add nothing to what the run traces (``setup(recursive_profile=True)``
        traces the whole recording).

        ``metadata`` (a mapping, or a callable given the call's arguments that returns one)
        and ``record_outcome`` (``status`` ``"ok"``/``"error"`` and, for failures,
        ``exception``: the exception's type name) put each call in a :meth:`metadata` block
        (so calls of other regions inside it carry the values too, as in the reference); for
        coroutine and generator functions the block spans their whole run, as the region does.
        Without them the call path is the Rust wrapper alone.
        """
        region_tags = None if tags is None else tuple(tags)

        def decorator(func):
            state = cls._state
            return state.decorate(
                func, region_name, recursive, metadata, record_outcome, region_tags
            )

        if callable(region_name):
            func = region_name
            region_name = None
            return decorator(func)
        return decorator

    @classmethod
    def metadata(cls, /, **values) -> _metadata.MetadataScope:
        """Attach key/value metadata to calls completed inside this block (a context
        manager yielding the merged dict, and a decorator). Every call of any region that
        starts and ends inside the block's time gets the values, on any thread or task
        (the reference's rule); nested blocks merge, the inner one's values winning. Values
        are stored as JSON (see ``scope_profiler._metadata``); nothing is recorded while
        profiling is not active."""
        return _metadata.MetadataScope(cls, values)

    @classmethod
    def define_region(cls, region_name, functions=None, tags=None) -> RegionHandle:
        """A :class:`RegionHandle` for ``region_name`` that survives later ``setup()`` calls
        (each re-creates the region, so it is in :meth:`registered_regions`). Defining a name
        again with other ``functions``/``tags`` raises ``ValueError``."""
        return cls._state.define_region(region_name, functions, tags)

    @classmethod
    def region_factory(cls, region_name, *, tags=None) -> RegionFactory:
        """A :class:`RegionFactory`: ``with factory():`` is one call of ``region_name``
        (defined as by :meth:`define_region`)."""
        cls.define_region(region_name, tags=tags)
        return RegionFactory(cls, region_name, tags=tags)

    @classmethod
    def register_opt_in_tag(cls, *tags: str) -> None:
        """Mark ``tags`` as opt-in (for every manager): regions and decorated functions
        carrying one record nothing unless the run enables it (``setup(enable_tags=[...])``,
        ``SCOPE_PROFILER_ENABLE_TAGS=a,b``; ``"*"`` enables all). Existing regions and
        decorators of this manager pick the change up. ``TypeError`` for a tag that is not
        a non-empty string."""
        check_opt_in_tags(tags)
        cls._state.register_opt_in_tags(list(tags))

    @classmethod
    def instrument(cls, module, *, include=("*",), exclude=(), prefix=None, tags=None) -> dict:
        """Decorate ``module``'s functions matching ``include`` and not ``exclude`` (globs)
        with :meth:`profile`, in place, as regions ``<prefix or module name>.<function>``;
        returns ``{name: wrapper}`` (see ``_manager_api.instrument``)."""
        return _manager_api.instrument(cls, module, include, exclude, prefix, tags)

    @classmethod
    def run(cls, func, *args, output=None, **kwargs):
        """``func(*args)`` inside a ``session(**kwargs)`` (``verbose=False``,
        ``return_results=True`` by default); returns its value, the results are in
        :meth:`last_results`."""
        return _manager_api.run(cls, func, args, output, kwargs)

    @classmethod
    def run_script(cls, script_path, script_args=None, region_name=None, recursive=True) -> None:
        """Run a script as ``__main__`` in the current run (see ``_manager_api.run_script``)."""
        _manager_api.run_script(cls, script_path, script_args, region_name, recursive)

    @classmethod
    def profile_script(cls, script_path, *, script_args=None, output=None, **kwargs):
        """``setup(**kwargs)``, run the script, ``finalize``; returns the
        ``ProfilingResults`` (the script's exception propagates after the finalize)."""
        return _manager_api.profile_script(cls, script_path, script_args, output, kwargs)

    @classmethod
    def profile_command(cls, command, *, output=None, recursive=False, all=False, mpi_calls=False):
        """Run a script under ``scope-profiler run`` in a child process; returns its
        ``CompletedProcess`` with ``profile_results`` (see ``_manager_api``)."""
        return _manager_api.profile_command(command, output, recursive, all, mpi_calls)

    @classmethod
    def setup_from_env(cls, **overrides):
        """``setup()`` from ``SCOPE_PROFILER_CONFIG`` / ``_OUTPUT`` / ``_RECURSIVE`` /
        ``_AUTO_FINALIZE``; keywords win. Returns the ``ProfilingRun``."""
        return _manager_api.setup_from_env(cls, overrides)

    @classmethod
    def sample_every(cls, every: int, start: int = 0):
        """Context manager yielding ``profile_step(timestep)``: record timestep ``start``
        and every ``every``-th after it, pause for the others (see
        ``_manager_api.SampleEvery``)."""
        return _manager_api.SampleEvery(cls, every, start)

    @classmethod
    def read_results(cls):
        """The profile this run wrote (``output=`` or ``file_path``), read back;
        ``FileNotFoundError`` before a finalize wrote it."""
        from .profile_io import read_profile

        return read_profile(cls._requested_output or cls.get_config().file_path)

    @classmethod
    def get_region(cls, region_name):
        return cls._region_cache.get(region_name)

    @classmethod
    def get_all_regions(cls) -> dict:
        return cls._state.all_regions()

    @classmethod
    def registered_regions(cls) -> tuple:
        return tuple(cls._region_cache.registered())

    @classmethod
    def recorded_regions(cls) -> tuple:
        return cls._state.recorded_regions()

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def is_configured(cls) -> bool:
        return cls._state.configured

    @classmethod
    def is_active(cls) -> bool:
        return cls._state.is_active()

    @classmethod
    def last_results(cls):
        return cls._state.last_results

    @classmethod
    def get_config(cls) -> ProfilingConfig:
        """The active configuration (a default, untracked one is created lazily)."""
        return cls._state.get_config()

    @classmethod
    def _cancel_auto_finalize(cls) -> None:
        cls._state.cancel_auto_finalize()

    @classmethod
    def setup(
        cls,
        options=None,
        *,
        auto_finalize=False,
        output=_UNSET,
        replace=False,
        region_tags=None,
        config_path=None,
        **overrides,
    ) -> ProfilingRun:
        """Configure a new run (see spec-api §4). Returns a :class:`ProfilingRun`.

        Settings: the ``config_path`` file's, then ``options``', then the non-None
        ``overrides`` (``output=`` sets ``file_path`` / ``deactivate_file_output``).
        ``RuntimeError`` while a run is active (unless ``replace=True``), ``TypeError`` for
        an unknown setting.

        ``region_tags`` (tags, or one tag): record only regions carrying one of them
        (untagged ones too are disabled, the session root included); they also enable
        those opt-in tags (:meth:`register_opt_in_tag`).

        Under ``scope-profiler run`` a script's own ``setup()``/``session()`` joins the run
        of the command line instead (:meth:`_join_host`): both record."""
        return cls._state.setup(
            options,
            bool(auto_finalize),
            output is not _UNSET,
            None if output is _UNSET else output,
            bool(replace),
            region_tags,
            config_path,
            overrides,
        )

    @classmethod
    def _hosting(cls) -> bool:
        """Whether ``scope-profiler run``'s own run is the active one (a script's setup joins it)."""
        return cls._state.hosting()

    @classmethod
    def _join_host(cls, config: ProfilingConfig, requested_output: str | None) -> ProfilingRun:
        """A hosted script's ``setup()``: keep recording into the command line's run (its
        file gets everything) and remember the script's own output, which the script's
        ``finalize()`` / session end writes as a snapshot of the run so far. When the script
        asks for more tracking than the command line (``track_async`` under plain ``run``),
        the run restarts with it, saying so on stderr (calls recorded before are not kept)."""
        return cls._state.join_host(config, requested_output)

    @classmethod
    def _set_config(cls, config: ProfilingConfig) -> None:
        cls._state.configure(config)

    @classmethod
    def session(
        cls,
        options=None,
        *,
        verbose=True,
        verbose_line_profiler=False,
        return_results=False,
        native_traces=None,
        output=_UNSET,
        replace=False,
        config_path=None,
        **overrides,
    ):
        """Context manager (and decorator): ``setup()`` at entry (validation happens
        there), a ``"scope_profiler.session"`` root region around the body, ``finalize()``
        at exit (results in ``.results`` with ``return_results=True``), then the tracker's
        hooks are removed."""
        setup_kwargs: dict = dict(overrides)
        if output is not _UNSET:
            setup_kwargs["output"] = output
        if replace:
            setup_kwargs["replace"] = True
        if options is not None:
            setup_kwargs["options"] = options
        if config_path is not None:
            setup_kwargs["config_path"] = config_path
        return ProfilingSession(
            cls,
            setup_kwargs,
            bool(verbose),
            bool(verbose_line_profiler),
            bool(return_results),
            native_traces,
        )

    @classmethod
    def finalize(
        cls, verbose=True, return_results=False, native_traces=None, verbose_line_profiler=False
    ):
        """Checkpoint (see :meth:`_finalize`): calls still open stay open, named in a
        ``RuntimeWarning``."""
        return cls._state.finalize(bool(verbose), bool(return_results), native_traces, False)

    @classmethod
    def _finalize(
        cls,
        verbose=True,
        return_results=False,
        native_traces=None,
        verbose_line_profiler=False,
        close_open=False,
    ):
        """Checkpoint: snapshot completed calls and the thread table, number the calls,
        write the file (unless ``deactivate_file_output``) and optionally return results.

        Calls still open stay buffered for a later finalize (a ``RuntimeWarning`` names
        them); with file output the buffers are rewound once the file is written, so the
        next finalize reports only new calls (ids continue). At the end of a recording
        (``close_open``: a session's end, the exit-time finalize) they are put in the run as
        calls ending now, flagged ``{"open_at_finalize": True}`` in their per-call metadata.

        When the file cannot be written this raises the ``OSError`` subclass of the
        failure (``FileNotFoundError`` for a missing directory, ``IsADirectoryError``,
        ``NotADirectoryError``, ``PermissionError``, ...; ``errno`` and ``filename`` set)
        and loses nothing: the run is in :meth:`last_results`, the calls stay buffered,
        and calling ``finalize()`` again once the path is writable writes them all.
        """
        return cls._state.finalize(
            bool(verbose), bool(return_results), native_traces, bool(close_open)
        )

    @classmethod
    def pause(cls) -> None:
        """Stop recording new scopes (entries push a placeholder) until :meth:`resume`;
        ``RuntimeError`` before ``setup()`` or while scopes other than a session's root are
        open."""
        cls._state.pause()

    @classmethod
    def resume(cls) -> None:
        """Record again after :meth:`pause` (``RuntimeError`` before ``setup()``)."""
        cls._state.resume()

    @classmethod
    def reset(cls) -> None:
        """Forget the configuration and everything recorded; keep the instrumentation
        (decorated functions call straight through until the next ``setup()``)."""
        cls._state.reset()

    @classmethod
    def _reset(cls) -> None:
        """``reset()`` and forget every decorator and region definition too (test
        isolation)."""
        cls._state.clear()


def _install(cls) -> None:
    """Give manager class ``cls`` its own state, region dict and native ``region`` /
    ``profile_region`` over it (unbound until its next ``setup()``)."""
    cls._state = state = ManagerState(cls)
    cls._region_cache = state.install()
    cls._regions, cls._decorators = state.regions, state.decorators
    cls._region_definitions, cls._metadata_context = (
        state.region_definitions,
        state.metadata_context,
    )
    cls.region = cls.profile_region = cls._region_cache.lookup
    cls._create_region, cls._recorded_path = state.create_region, state.recorded_path


_install(ProfileManager)
