"""``ProfileManager``: the recording side of the Python API (drop-in for scope-profiler 0.7.5).

Every public method is a classmethod acting on the class's state (the process-wide
default). ``ProfileManager()`` returns an instance of a freshly created subclass
(``ProfileManagerInstance``) with private copies of that state, so its methods act on an
isolated manager: own regions, own configuration (recorder, tracker, thread numbering),
own call-id counter.

The per-call work is Rust: the region objects returned by ``region()`` are
``scope_profiler._native.ProfileRegion`` (``__enter__``/``__exit__`` in Rust) and
``@profile`` returns a ``scope_profiler._native.ProfiledFunction`` (``__call__``/``__get__``
in Rust) whose region binding is replaced by every ``setup()`` and cleared by ``reset()``.

Lifecycle: INACTIVE -> ACTIVE (``setup()``, unless ``deactivate_profiling``) -> FINALIZED
(``finalize()``; a checkpoint: recording continues, hooks stay until the next ``setup()``,
``reset()`` or the end of a ``session()``).
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import warnings
import weakref
from contextlib import ContextDecorator
from contextvars import ContextVar

from . import _fork, _manager_api, _metadata, _tracer
from ._native import (
    ProfiledFunction,
    ProfileRegion,
    RegionCache,
    RegionFactory,
    RegionHandle,
    check_opt_in_tags,
    check_pause,
    check_region_name,
    check_setting_names,
    enabled_tags_from_env,
    finalize_summary_title,
    native_regions,
    output_settings,
    perf_counter_ns,
    relative_source_path,
    tracking_upgrade,
)
from ._settings import ProfilingConfig

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, ClassVar

_UNSET = object()

#: Opt-in tags (``register_opt_in_tag``), shared by every manager: a region carrying one is
#: disabled unless the run enables that tag (``enable_tags``, ``SCOPE_PROFILER_ENABLE_TAGS``).
_OPT_IN_TAGS: set[str] = set()


def _enabled_tags(config: ProfilingConfig) -> frozenset:
    """The opt-in tags ``config``'s run records: its ``enable_tags`` and the comma-separated
    ``SCOPE_PROFILER_ENABLE_TAGS`` (``"*"``: every tag)."""
    return frozenset(config.enable_tags or ()).union(enabled_tags_from_env())


#: Modules whose frames are not user call sites (source capture skips them).
_INTERNAL_MODULES = frozenset({__name__, "scope_profiler", "scope_profiler._settings"})


def _user_stacklevel(*modules: str) -> int:
    """``stacklevel`` for a warning raised in this module (or in ``modules``, which it
    calls) that names the first caller outside them (e.g. the ``with session():`` line
    rather than ``_ProfilingSession``)."""
    internal = {__name__, *modules}
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in internal:
        frame = frame.f_back
        level += 1
    return level


#: Configurations whose recorder streams to a sidecar (``flush_interval``; weak).
_STREAMING: weakref.WeakSet[Any] = weakref.WeakSet()


def _start_streaming(config: ProfilingConfig) -> None:
    """With ``flush_interval``: start appending completed calls to the sidecar of the
    output file (a Rust thread; it does not appear in the thread table)."""
    interval = config.flush_interval
    if interval is None or config.deactivate_profiling or config.deactivate_file_output:
        return
    if config.comm is not None:
        warnings.warn(
            "flush_interval is not supported under MPI yet; this rank does not stream",
            RuntimeWarning,
            stacklevel=_user_stacklevel(),
        )
        return
    assert config._native is not None  # started
    config._native.start_flush(
        os.path.abspath(config.file_path), interval, dict(config.metadata), config.start_time_ns
    )
    _STREAMING.add(config)


def _stop_streaming(config: ProfilingConfig | None, *, discard: bool = False) -> None:
    """End the flush thread of ``config``; ``discard`` also removes its sidecar (the run is
    thrown away: ``reset()``, a new ``setup()``)."""
    if config is None or config not in _STREAMING or config._native is None:
        return
    if discard:
        config._native.discard_flush()
        _STREAMING.discard(config)
    else:
        config._native.stop_flush()


@atexit.register
def _stop_all_streaming() -> None:
    # registered at import, so it runs after every auto-finalize (atexit is LIFO): those
    # read the sidecars back first
    for config in list(_STREAMING):
        _stop_streaming(config)


class _LifecycleState:
    """The manager's lifecycle: three named constants compared by identity (not an
    ``enum.Enum``: importing ``enum`` was a tenth of ``import scope_profiler``, issue 15)."""

    __slots__ = ("name",)
    INACTIVE: _LifecycleState
    ACTIVE: _LifecycleState
    FINALIZED: _LifecycleState

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<_LifecycleState.{self.name}>"


_LifecycleState.INACTIVE = _LifecycleState("INACTIVE")
_LifecycleState.ACTIVE = _LifecycleState("ACTIVE")
_LifecycleState.FINALIZED = _LifecycleState("FINALIZED")


class ProfilingRun:
    """Handle returned by :meth:`ProfileManager.setup`."""

    def __init__(self, manager, config, output=None) -> None:
        self._manager = manager
        self._config = config
        self._file_path = output or config.file_path
        self.results = None
        self._joined = False  # a hosted script's run (ProfileManager._join_host)

    @property
    def file_path(self):
        return self._file_path

    @property
    def is_active(self) -> bool:
        return self._manager._config is self._config and self._manager.is_active()

    def finalize(self, **kwargs):
        """Finalize through the owning manager and keep the results (``return_results``
        defaults to True)."""
        if self._manager._config is not self._config:
            raise RuntimeError("this profiling run has been replaced")
        kwargs.setdefault("return_results", True)
        try:
            self.results = self._manager.finalize(**kwargs)
        except OSError:
            self.results = self._manager.last_results()  # the run, though not written
            raise
        return self.results


class _ProfilingSession(ContextDecorator):
    """Context manager (and decorator) returned by :meth:`ProfileManager.session`."""

    ROOT_REGION_NAME = "scope_profiler.session"

    def __init__(
        self, manager, setup_kwargs, verbose, verbose_line_profiler, return_results, native_traces
    ):
        self._manager = manager
        self._setup_kwargs = setup_kwargs
        self._verbose = verbose
        self._verbose_line_profiler = verbose_line_profiler
        self._return_results = return_results
        self._native_traces = native_traces
        self.results = None
        self._root_region: Any = None
        self._joined = False  # set up under scope-profiler run: joined to its run

    def _recreate_cm(self):
        return type(self)(
            self._manager,
            self._setup_kwargs,
            self._verbose,
            self._verbose_line_profiler,
            self._return_results,
            self._native_traces,
        )

    def __call__(self, func):
        """Decorate ``func`` so each call runs in a fresh session; for ``async def`` the
        session spans the awaited coroutine, not just the call that creates it."""
        import inspect

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def session_wrapper(*args, **kwargs):
                with self._recreate_cm():
                    return await func(*args, **kwargs)

            return session_wrapper
        return super().__call__(func)

    def __enter__(self):
        run = self._manager.setup(**self._setup_kwargs)
        self._joined = getattr(run, "_joined", False)  # under scope-profiler run
        self._root_region = self._manager.profile_region(self.ROOT_REGION_NAME)
        self._root_region.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._joined:
            return self._exit_joined(exc_type, exc_value, traceback)
        try:
            self._root_region.__exit__(exc_type, exc_value, traceback)
        finally:
            # flush_interval: the flush thread ends first, so nothing recorded after the
            # finalize below starts a new sidecar; finalize reads back what it flushed
            _stop_streaming(self._manager._config)
            try:
                self.results = self._manager._finalize(
                    close_open=True,
                    verbose=self._verbose,
                    verbose_line_profiler=self._verbose_line_profiler,
                    return_results=self._return_results,
                    native_traces=self._native_traces,
                )
            except OSError:
                # the file could not be written: the run is kept (finalize() retries)
                self.results = self._manager.last_results()
                raise
            finally:
                config = self._manager._config
                if config is not None and config.tracker is not None:
                    config.tracker.uninstall()
        return False

    def _exit_joined(self, exc_type, exc_value, traceback):
        """The end of a session joined to ``scope-profiler run``'s run: write the script's
        file (a snapshot), leave the run, its hooks and streaming to the command line."""
        manager = self._manager
        try:
            self._root_region.__exit__(exc_type, exc_value, traceback)
            self.results = manager._finalize(
                verbose=self._verbose,
                return_results=self._return_results,
                native_traces=self._native_traces,
            )
        finally:
            if manager._joined:
                manager._joined.pop()
        return False


def _render_output(requested: str | None, recorded: str, native_run) -> None:
    """After ``recorded`` (the HDF5 file) was written: when ``setup(output=)`` asked for
    another format, write ``requested`` from the run and remove ``recorded``. A failed
    rendering raises its ``OSError`` and keeps ``recorded`` (nothing recorded is lost)."""
    if requested is None or os.path.abspath(requested) == os.path.abspath(recorded):
        return
    import errno

    from .profile_io import write_profile

    try:
        if os.path.isdir(requested):  # write_profile would write a default name inside
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), requested)
        write_profile(_results_from_native(native_run), requested)
    except OSError as exc:
        exc.add_note(f"the recorded run is kept in {recorded}")
        raise
    os.remove(recorded)


def _results_from_native(native_run):
    """``ProfilingResults`` over a ``NativeRun`` (sharing its cached analyses)."""
    from .results import ProfilingResults

    return ProfilingResults._from_native(native_run)


def _empty_results(file_path):
    from .results import ProfilingResults

    return ProfilingResults({}, file_path=file_path)


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
            tracer = _tracer.call_tracer(cls._config, cls._recorded_path)
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


class ProfileManager:
    """Manage a set of profiling regions (class = process-wide default, instance = isolated).

    ::

        cpu = ProfileManager()
        io = ProfileManager()
        with cpu.session(file_path="cpu.h5"), io.session(file_path="io.h5"):
            with cpu.profile_region("compute"), io.profile_region("write"):
                work()
    """

    _regions: ClassVar[dict]  # name -> ProfileRegion, per class (_install_region_cache)
    _next_call_id = 0
    _config: ProfilingConfig | None = None
    _configured = False
    _lifecycle_state = _LifecycleState.INACTIVE
    _auto_finalize_callback = None
    _last_results = None
    _last_native_run = None
    _last_written_run = None
    _requested_output = None
    #: The run of ``scope-profiler run`` while it hosts a script (``_cli``): a script's own
    #: ``setup()``/``session()`` joins it instead of failing (:meth:`_join_host`).
    _host_config = None
    #: Runs the hosted script set up, innermost last: ``(file_path, requested_output,
    #: deactivate_file_output, names of the calls open at the join)``; their finalize
    #: writes a snapshot there (:meth:`_finalize_joined`).
    _joined: ClassVar[list] = []
    # name -> [(func, wrapper, tags), ...]
    _decorators: ClassVar[dict] = {}
    # name -> (functions, tags) of define_region(), re-created by every setup()
    _region_definitions: ClassVar[dict] = {}
    _enabled_tags: frozenset = frozenset()
    # setup(region_tags=...): only regions carrying one of these record (None: no filter)
    _region_tag_filter: frozenset | None = None
    # the merged values of the metadata() blocks around the current thread / task
    _metadata_context: ContextVar = ContextVar("scope_profiler_metadata", default=None)

    def __new__(cls):
        if cls is not ProfileManager:
            return object.__new__(cls)
        isolated = type(
            "ProfileManagerInstance",
            (cls,),
            {
                "_next_call_id": 0,
                "_config": None,
                "_configured": False,
                "_lifecycle_state": _LifecycleState.INACTIVE,
                "_auto_finalize_callback": None,
                "_last_results": None,
                "_last_native_run": None,
                "_last_written_run": None,
                "_requested_output": None,
                "_host_config": None,
                "_joined": [],
                "_decorators": {},
                "_region_definitions": {},
                "_enabled_tags": frozenset(),
                "_region_tag_filter": None,
                "_metadata_context": ContextVar(
                    f"scope_profiler_metadata_{id(object())}", default=None
                ),
                "__module__": cls.__module__,
            },
        )
        return object.__new__(isolated)

    # ------------------------------------------------------------------ regions
    @classmethod
    def _recording(cls) -> bool:
        config = cls._config
        return cls._configured and config is not None and not config.deactivate_profiling

    @classmethod
    def _recorded_path(cls, filename: str) -> str:
        config = cls._config
        if config is None or config.metadata_detail == "minimal":
            return relative_source_path(filename)  # relative to the cwd or sys.path (Rust)
        return filename

    #: ``region(region_name, functions=None, tags=None)``: the region named ``region_name``
    #: (created on first use, cached until the next ``setup()``), a re-entrant context
    #: manager usable from any thread. A native function (``RegionCache.lookup``, installed
    #: per manager class by ``__init_subclass__``): a cached name is one dict probe, no Python
    #: frame; new names are made natively unless :meth:`_create_region` is needed.
    region: ClassVar[Any]
    #: Same object as :attr:`region`.
    profile_region: ClassVar[Any]
    _region_cache: ClassVar[RegionCache]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _install_region_cache(cls)

    @classmethod
    def _bind_region_cache(cls) -> None:
        """Let the native lookup make new regions of the current recording itself (not
        with ``capture_region_source``, which reads the line in Python, nor with
        ``region_tags``, which disables untagged regions)."""
        config = cls._config
        if (
            cls._recording()
            and config is not None
            and not config.capture_region_source
            and cls._region_tag_filter is None
        ):
            cls._region_cache.bind(config._native, cls._recorded_path)
        else:
            cls._region_cache.bind(None)

    @classmethod
    def _create_region(cls, region_name, functions=None, tags=None):
        """The Python path of :attr:`region`: a miss the native lookup does not handle, or
        a call with ``functions``/``tags``. ``functions`` is accepted for compatibility (line
        profiling is not implemented). Reusing a name with different non-None ``tags`` raises
        ``ValueError``, and so does a name the profile file cannot hold unchanged (one with a
        NUL character)."""
        region = cls._regions.get(region_name)
        if region is None:
            region = cls._region_cache.adopt(region_name)  # a name used once so far
        if region is None:
            normalized = () if tags is None else tuple(tags)
            if cls._recording() and cls._tags_record(normalized):
                config = cls._config
                assert config is not None and config._native is not None  # _recording() holds
                region = config._native.region(
                    region_name, list(normalized), cache=cls._region_cache
                )
                frame = sys._getframe(1)
                if frame.f_globals.get("__name__", "") not in _INTERNAL_MODULES:
                    filename = frame.f_code.co_filename
                    lineno = frame.f_lineno
                    text = None
                    if config.capture_region_source:
                        import linecache

                        text = linecache.getline(filename, lineno).rstrip("\n") or None
                    region.set_source(cls._recorded_path(filename), lineno, text)
            else:
                region = ProfileRegion.disabled(
                    region_name, list(normalized), cache=cls._region_cache
                )
            # Another thread may have created it meanwhile: keep the first object (the
            # native table already maps both to one id).
            region = cls._regions.setdefault(region_name, region)
        # an existing region keeps its first tags (in the dict, or only in the recorder's
        # table when the name was used once so far)
        if tags is not None and tuple(region.tags) != tuple(tags):
            raise ValueError(
                f"region {region_name!r} already has tags {tuple(region.tags)!r}; "
                f"cannot reuse it with {tuple(tags)!r}",
            )
        return region

    @classmethod
    def _bind_decorated(cls, name, func, wrapper, tags) -> None:
        if not cls._recording():
            wrapper._bind(None)
            return
        region = cls._create_region(name, tags=tags)
        code = getattr(func, "__code__", None)
        if code is not None:
            text = None
            if cls._config is not None and cls._config.capture_region_source:
                import inspect

                try:
                    text = inspect.getsource(func)
                except (OSError, TypeError):
                    text = None
            region.set_source(cls._recorded_path(code.co_filename), code.co_firstlineno, text)
        wrapper._bind(region if region.enabled else None)

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
        with_metadata = metadata is not None or record_outcome
        region_tags = None if tags is None else tuple(tags)

        def decorator(func):
            name = region_name or func.__name__
            check_region_name(name)  # refused now, not at the next setup()
            _tracer.mark_decorated(func)  # the tracer leaves it to its own region
            wrapper = ProfiledFunction(func)
            functools.update_wrapper(wrapper, func)
            cls._bind_decorated(name, func, wrapper, region_tags)
            cls._decorators.setdefault(name, []).append((func, wrapper, region_tags))
            lifetime = _lifetime_wrapper(func, wrapper)
            if lifetime is None:
                outer: Any = wrapper
                if with_metadata:
                    outer = functools.wraps(func)(
                        _metadata.MetadataCall(cls, wrapper, metadata, record_outcome)
                    )
            else:
                outer = (
                    _metadata.lifetime_with_metadata(
                        cls, wrapper, lifetime, metadata, record_outcome
                    )
                    if with_metadata
                    else None
                ) or lifetime
            if recursive:
                outer = _recursive_wrapper(cls, func, wrapper, outer)
            if outer is wrapper:
                return wrapper
            outer._scope_profiler_wrapper = wrapper  # instrument() leaves it alone
            return outer

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
        definition = (
            None if functions is None else tuple(functions),
            None if tags is None else tuple(tags),
        )
        previous = cls._region_definitions.get(region_name)
        if previous is not None and previous != definition:
            raise ValueError(f"region {region_name!r} was already defined differently")
        check_region_name(region_name)
        cls._create_region(region_name, functions=functions, tags=tags)
        cls._region_definitions[region_name] = definition
        return RegionHandle(cls, region_name, functions=functions, tags=tags)

    @classmethod
    def region_factory(cls, region_name, *, tags=None) -> RegionFactory:
        """A :class:`RegionFactory`: ``with factory():`` is one call of ``region_name``
        (defined as by :meth:`define_region`)."""
        cls.define_region(region_name, tags=tags)
        return RegionFactory(cls, region_name, tags=tags)

    @classmethod
    def _tags_record(cls, tags) -> bool:
        """Whether a region with ``tags`` records in this run: it carries one of
        ``setup(region_tags=...)`` (when given), and no opt-in tag the run leaves off."""
        region_filter = cls._region_tag_filter
        if region_filter is not None and region_filter.isdisjoint(tags):
            return False
        return cls._opt_in_enabled(tags)

    @classmethod
    def _opt_in_enabled(cls, tags) -> bool:
        """Whether ``tags`` carry no opt-in tag, or one this run enables."""
        opt_in = _OPT_IN_TAGS.intersection(tags)
        if not opt_in or "*" in cls._enabled_tags:
            return True
        return not opt_in.isdisjoint(cls._enabled_tags)

    @classmethod
    def register_opt_in_tag(cls, *tags: str) -> None:
        """Mark ``tags`` as opt-in (for every manager): regions and decorated functions
        carrying one record nothing unless the run enables it (``setup(enable_tags=[...])``,
        ``SCOPE_PROFILER_ENABLE_TAGS=a,b``; ``"*"`` enables all). Existing regions and
        decorators of this manager pick the change up. ``TypeError`` for a tag that is not
        a non-empty string."""
        check_opt_in_tags(tags)
        new = set(tags) - _OPT_IN_TAGS
        _OPT_IN_TAGS.update(new)
        if not new or not cls._configured:
            return
        for name in [n for n, r in cls._regions.items() if new.intersection(r.tags)]:
            del cls._regions[name]
        for name, entries in cls._decorators.items():
            for func, wrapper, region_tags in entries:
                if region_tags and new.intersection(region_tags):
                    cls._bind_decorated(name, func, wrapper, region_tags)

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
        ``_manager_api.sample_every``)."""
        return _manager_api.sample_every(cls, every, start)

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
        for name, _ in cls._region_cache.unlisted_calls():
            cls._region_cache.get(name)  # lists a name used once so far
        return cls._regions

    @classmethod
    def registered_regions(cls) -> tuple:
        return tuple(cls._region_cache.registered())

    @classmethod
    def recorded_regions(cls) -> tuple:
        # copies taken without running Python code: other threads may add regions meanwhile
        listed = tuple(cls._regions.items())
        calls = dict(cls._region_cache.unlisted_calls())
        calls.update((name, r.num_calls) for name, r in listed)
        return tuple(name for name in cls._region_cache.registered() if calls.get(name, 0) > 0)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def is_configured(cls) -> bool:
        return cls._configured

    @classmethod
    def is_active(cls) -> bool:
        return cls._recording() and cls._lifecycle_state in {
            _LifecycleState.ACTIVE,
            _LifecycleState.FINALIZED,
        }

    @classmethod
    def last_results(cls):
        return cls._last_results

    @classmethod
    def get_config(cls) -> ProfilingConfig:
        """The active configuration (a default, untracked one is created lazily)."""
        if cls._config is None:
            cls._config = ProfilingConfig()
            cls._config.start()
        return cls._config

    @classmethod
    def _cancel_auto_finalize(cls) -> None:
        callback = cls._auto_finalize_callback
        cls._auto_finalize_callback = None
        if callback is not None:
            atexit.unregister(callback)

    @classmethod
    def _register_auto_finalize(cls) -> None:
        cls._cancel_auto_finalize()

        def finalize_at_exit():
            cls._auto_finalize_callback = None
            if cls._configured:
                cls._finalize(close_open=True)  # the end of the recording

        cls._auto_finalize_callback = finalize_at_exit
        atexit.register(finalize_at_exit)

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
    ):
        """Configure a new run (see spec-api §4). Returns a :class:`ProfilingRun`.

        ``region_tags`` (tags, or one tag): record only regions carrying one of them
        (untagged ones too are disabled, the session root included); they also enable
        those opt-in tags (:meth:`register_opt_in_tag`).

        Under ``scope-profiler run`` a script's own ``setup()``/``session()`` joins the run
        of the command line instead (:meth:`_join_host`): both record."""
        hosted = cls._hosting()
        if (
            not hosted
            and cls._configured
            and cls._lifecycle_state is _LifecycleState.ACTIVE
            and not replace
            and not _fork.inherited(cls._config)
        ):  # a forked child may replace the parent's run
            raise RuntimeError(
                "profiling is already configured; finalize it first or pass replace=True",
            )
        check_setting_names(overrides)  # TypeError naming unknown settings (Rust)
        requested_output = None
        if output is not _UNSET:  # file_path / deactivate_file_output from it (Rust)
            requested_output = None if output is None else os.fspath(output)
            overrides.update(output_settings(requested_output, overrides))
        settings: dict = {}
        if config_path is not None:
            from ._options import load_profiling_config

            settings.update(load_profiling_config(config_path))
        if options is not None:
            settings.update(options.to_kwargs())
        settings.update({k: v for k, v in overrides.items() if v is not None})
        # Validation happens here, before anything of the previous run is replaced.
        config = ProfilingConfig(**settings)
        if hosted:
            return cls._join_host(config, requested_output)
        if isinstance(region_tags, str):
            region_tags = (region_tags,)
        cls._region_tag_filter = None if region_tags is None else frozenset(region_tags)
        cls._set_config(config)
        cls._requested_output = requested_output
        if auto_finalize:
            cls._register_auto_finalize()
        return ProfilingRun(cls, config, requested_output)

    @classmethod
    def _hosting(cls) -> bool:
        """Whether ``scope-profiler run``'s own run is the active one (a script's setup joins it)."""
        return cls._host_config is not None and cls._config is cls._host_config

    @classmethod
    def _join_host(cls, config: ProfilingConfig, requested_output: str | None):
        """A hosted script's ``setup()``: keep recording into the command line's run (its
        file gets everything) and remember the script's own output, which the script's
        ``finalize()`` / session end writes as a snapshot of the run so far. When the script
        asks for more tracking than the command line (``track_async`` under plain ``run``),
        the run restarts with it, saying so on stderr (calls recorded before are not kept)."""
        host = cls._config
        assert host is not None
        upgrade = tracking_upgrade(
            (config.track_threads, config.track_async),
            (host.track_threads, host.track_async),
            host.file_path,
        )
        if upgrade is not None:
            names, note = upgrade
            print(note, file=sys.stderr)
            requested = cls._requested_output
            host = ProfilingConfig(**{**host._settings, **dict.fromkeys(names, True)})
            cls._set_config(host)
            cls._requested_output = requested
            cls._host_config = host
        # calls open now (the script's own frames under --recursive, run's root region) are
        # still open at the script's finalize, as expected: its warning leaves them out
        assert host._native is not None
        open_now = host._native.open_region_names()
        cls._joined.append(
            (config.file_path, requested_output, config.deactivate_file_output, open_now)
        )
        run = ProfilingRun(cls, host, requested_output or config.file_path)
        run._joined = True
        return run

    @classmethod
    def _finalize_joined(cls, verbose: bool, return_results: bool, native_traces) -> Any:
        """``finalize()`` of a hosted script's run: a snapshot of every completed call so
        far (nothing is rewound or closed: the command line's run goes on and writes them
        all), written to the script's own output unless it set ``deactivate_file_output``."""
        path, requested, no_file, open_at_join = cls._joined[-1]
        config = cls.get_config()
        native = native_regions(native_traces, 0) if native_traces is not None else []
        if config.tracker is not None:
            config.tracker._refresh_task_names()
        assert config._native is not None
        # the snapshot's end: live threads' wall time runs to it (issue 14, second new-user
        # trial: without it MainThread's wall_time was None in the script's own results)
        metadata = {**config.metadata, "finalize_time_ns": perf_counter_ns()}
        native_run, _, nesting_error, _ = config._native.finalize(
            metadata,
            config.start_time_ns,
            False,
            path,
            cls._next_call_id,
            close_open=False,
            expected_open=[_ProfilingSession.ROOT_REGION_NAME, *open_at_join],
            native=native,
            stacklevel=_user_stacklevel(),
        )
        if nesting_error is not None:
            warnings.warn(
                f"call graph not recorded: {nesting_error}",
                RuntimeWarning,
                stacklevel=_user_stacklevel(),
            )
        results = _results_from_native(native_run)
        cls._last_results = results
        if not no_file:
            from .profile_io import write_profile

            write_profile(results, requested or path)
        if verbose:
            results.print_summary(title=requested or path)
        return results if return_results else None

    @classmethod
    def _set_config(cls, config: ProfilingConfig) -> None:
        config.start()
        cls._cancel_auto_finalize()
        cls._regions.clear()
        cls._next_call_id = 0
        previous = cls._config
        if previous is not config:
            _tracer.forget(previous)
        if previous is not None and previous.tracker is not None:
            previous.tracker.uninstall()
        if previous is not config:
            _stop_streaming(previous, discard=True)
        cls._config = config
        _fork.track(config)  # a forked child takes its view of the thread table
        cls._last_results = None
        cls._last_native_run = cls._last_written_run = None
        cls._requested_output = None
        cls._configured = True
        cls._lifecycle_state = (
            _LifecycleState.INACTIVE if config.deactivate_profiling else _LifecycleState.ACTIVE
        )
        cls._bind_region_cache()
        if config.tracker is not None:
            config.tracker.install()
        _tracer.start(config, cls._recorded_path)  # recursive_profile=True
        config.mark_started()  # the origin: recording begins now (the stream's frames use it)
        _start_streaming(config)
        cls._enabled_tags = _enabled_tags(config) | (cls._region_tag_filter or frozenset())
        for name, entries in cls._decorators.items():
            for func, wrapper, tags in entries:
                cls._bind_decorated(name, func, wrapper, tags)
        for name, (functions, tags) in cls._region_definitions.items():
            cls._create_region(name, functions=functions, tags=tags)

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
        return _ProfilingSession(
            cls,
            setup_kwargs,
            verbose,
            verbose_line_profiler,
            return_results,
            native_traces,
        )

    @classmethod
    def finalize(
        cls, verbose=True, return_results=False, native_traces=None, verbose_line_profiler=False
    ):
        """Checkpoint (see :meth:`_finalize`): calls still open stay open, named in a
        ``RuntimeWarning``."""
        return cls._finalize(
            verbose=verbose,
            return_results=return_results,
            native_traces=native_traces,
            verbose_line_profiler=verbose_line_profiler,
        )

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
        if cls._joined and cls._hosting():  # a script's own run under scope-profiler run
            return cls._finalize_joined(verbose, return_results, native_traces)
        if close_open:  # the end of the recording: function-level tracing ends first
            _tracer.stop(cls._config, stacklevel=_user_stacklevel())
        if not cls._configured:
            if return_results:
                file_path = cls._config.file_path if cls._config is not None else ""
                cls._last_results = _empty_results(file_path)
                return cls._last_results
            return None
        config = cls.get_config()
        rank = getattr(config, "_rank", 0)
        native = native_regions(native_traces, rank) if native_traces is not None else []
        finalize_time_ns = perf_counter_ns()
        config.metadata["finalize_time_ns"] = finalize_time_ns
        if config.deactivate_profiling:
            cls._lifecycle_state = _LifecycleState.FINALIZED
            cls._cancel_auto_finalize()
            if return_results:
                cls._last_results = _empty_results(config.file_path)
                return cls._last_results
            return None

        if config.comm is not None:  # MPI rank: collective, one file written by rank 0
            from . import _mpi

            results = _mpi.finalize(
                cls, config, verbose=verbose, return_results=return_results, native=native
            )
            cls._lifecycle_state = _LifecycleState.FINALIZED
            cls._cancel_auto_finalize()
            if return_results:
                cls._last_results = results
                return results
            return None

        write_file = not config.deactivate_file_output
        need_results = return_results or verbose
        results = None
        if write_file or need_results:
            if config.tracker is not None:
                config.tracker._refresh_task_names()  # Task.get_name() as of now
            assert config._native is not None  # get_config() started it
            _tracer.report(config, stacklevel=_user_stacklevel())  # calls the limit dropped
            native_run, next_id, nesting_error, write_error = config._native.finalize(
                dict(config.metadata),
                config.start_time_ns,
                write_file,
                config.file_path,
                cls._next_call_id,
                close_open=close_open,
                expected_open=[_ProfilingSession.ROOT_REGION_NAME],
                native=native,
                # the open-calls warning names the user's line, not this module's (issue 14,
                # second new-user trial)
                stacklevel=_user_stacklevel(),
            )
            cls._next_call_id = next_id
            cls._last_native_run = native_run
            # what the file now holds, for `run` not to read it back
            cls._last_written_run = native_run if write_file and write_error is None else None
            if nesting_error is not None:
                warnings.warn(
                    f"call graph not recorded: {nesting_error}",
                    RuntimeWarning,
                    stacklevel=_user_stacklevel(),
                )
            if write_error is not None:
                # Nothing was rewound: the calls stay buffered, and the next finalize()
                # (once the path is writable) writes them all. The run is kept in memory.
                cls._last_results = _results_from_native(native_run)
                raise write_error
            if write_file:
                _render_output(cls._requested_output, config.file_path, native_run)
            if need_results:
                results = _results_from_native(native_run)
                if verbose and hasattr(results, "print_summary"):
                    label = getattr(results, "display_label", config.file_path)
                    title = finalize_summary_title(cls._requested_output, write_file, label, 1)
                    results.print_summary(title=title)
        cls._lifecycle_state = _LifecycleState.FINALIZED
        cls._cancel_auto_finalize()
        if return_results:
            cls._last_results = results
            return results
        return None

    @classmethod
    def pause(cls) -> None:
        """Stop recording new scopes (entries push a placeholder) until :meth:`resume`."""
        if cls._config is None:
            raise RuntimeError("ProfileManager.setup() must be called before pause()")
        native = cls._config._native
        assert native is not None  # started by setup()
        if native.paused:
            return
        # RuntimeError naming open scopes other than the session's root (Rust)
        check_pause(native.open_region_names(), _ProfilingSession.ROOT_REGION_NAME)
        native.set_paused(True)

    @classmethod
    def resume(cls) -> None:
        if cls._config is None:
            raise RuntimeError("ProfileManager.setup() must be called before resume()")
        assert cls._config._native is not None  # started by setup()
        cls._config._native.set_paused(False)

    @classmethod
    def reset(cls) -> None:
        """Forget the configuration and everything recorded; keep the instrumentation
        (decorated functions call straight through until the next ``setup()``)."""
        cls._regions.clear()  # the dict the native lookup probes
        cls._region_cache.bind(None)
        cls._cancel_auto_finalize()
        _tracer.forget(cls._config)
        if cls._config is not None and cls._config.tracker is not None:
            cls._config.tracker.uninstall()
        _stop_streaming(cls._config, discard=True)
        cls._config = None
        cls._last_results = None
        cls._last_native_run = cls._last_written_run = None
        cls._requested_output = None
        cls._configured = False
        cls._lifecycle_state = _LifecycleState.INACTIVE
        cls._next_call_id = 0
        cls._enabled_tags = frozenset()
        cls._region_tag_filter = None
        for entries in cls._decorators.values():
            for _func, wrapper, _tags in entries:
                wrapper._bind(None)

    @classmethod
    def _reset(cls) -> None:
        """``reset()`` and forget every decorator and region definition too (test
        isolation)."""
        cls.reset()
        cls._decorators.clear()
        cls._region_definitions.clear()


def _install_region_cache(cls) -> None:
    """Give manager class ``cls`` its own region dict and native ``region`` /
    ``profile_region`` over it (unbound until its next ``setup()``)."""
    cls._regions = {}
    cls._region_cache = RegionCache(cls._regions, cls._create_region)
    cls.region = cls.profile_region = cls._region_cache.lookup


_install_region_cache(ProfileManager)
