"""``ProfileManager``: the recording side of the Python API (drop-in for scope-profiler 0.7.5).

Every public method is a classmethod acting on the state of its class (``_install``): each
manager class has its own, the process-wide default ``ProfileManager``, a subclass, and the
class behind each ``ProfileManager()`` (an isolated manager: own regions, configuration,
call-id counter).

The per-call work is Rust: ``region()`` is ``RegionCache.lookup`` (regions are
``_native.ProfileRegion``) and ``@profile`` returns a ``_native.ProfiledFunction`` whose
region binding every ``setup()`` replaces and ``reset()`` clears. What runs once per run is
here: ``setup()``, ``finalize()``, ``reset()``, the session. What it decides is asked of Rust
(``scope_profiler_session::lifecycle``): the lifecycle and which regions record
(``_native.ManagerLifecycle``), when ``setup()`` and ``pause()`` are refused, the texts.

Lifecycle: INACTIVE -> ACTIVE (``setup()``, unless ``deactivate_profiling``) -> FINALIZED
(``finalize()``; a checkpoint: recording continues, hooks stay until the next ``setup()``,
``reset()`` or the end of a ``session()``).
"""

from __future__ import annotations

import functools
import os
import sys
from contextvars import ContextVar

from . import _exit, _manager_api, _metadata, _tracer
from ._manager_api import RegionFactory, RegionHandle
from ._native import (
    NO_STREAMING_UNDER_MPI,
    SESSION_ROOT_REGION,
    ManagerLifecycle,
    ProfiledFunction,
    ProfileRegion,
    ProfilingResults,
    RegionCache,
    call_graph_warning,
    carries_opt_in,
    check_pause,
    check_region_definition,
    check_region_name,
    check_region_tags,
    check_run_current,
    check_set_up,
    check_setting_names,
    finalize_summary_title,
    native_regions,
    output_settings,
    perf_counter_ns,
    register_opt_in_tags,
    relative_source_path,
    tracking_upgrade,
)

# typing.TYPE_CHECKING without importing typing, which `import scope_profiler` does not need
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, ClassVar

    from ._settings import ProfilingConfig

_UNSET = object()

#: Modules whose frames are not user call sites for region sources.
_INTERNAL_MODULES = frozenset(
    {__name__, "scope_profiler._manager_api", "scope_profiler", "scope_profiler._settings"}
)

#: The package's modules that run the manager: a warning they raise names the first frame
#: outside them.
_MANAGER_MODULES = ("scope_profiler._manager", "scope_profiler._manager_api")


def _user_stacklevel(*modules: str) -> int:
    """``stacklevel`` for a warning raised by the caller (in ``_MANAGER_MODULES`` or
    ``modules``) naming the first frame outside them (the user's line)."""
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in (*_MANAGER_MODULES, *modules):
        frame = frame.f_back
        level += 1
    return level


_results_from_native: Any = ProfilingResults._from_native


def _empty_results(file_path):
    return ProfilingResults({}, file_path=file_path)


def _warn(message: str, stacklevel: int) -> None:
    import warnings  # not imported by `import scope_profiler`

    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


#: Configurations whose recorder streams to a sidecar (``flush_interval``): a ``WeakSet``
#: made by the first stream (``weakref`` is not imported before).
_streaming: Any = None


def _start_streaming(config: ProfilingConfig) -> None:
    """With ``flush_interval``: start appending completed calls to the sidecar of the output
    file (a Rust thread, not in the thread table). Under MPI: a warning, nothing streamed."""
    global _streaming
    interval = config.flush_interval
    if interval is None or config.deactivate_profiling or config.deactivate_file_output:
        return
    if config.comm is not None:
        _warn(NO_STREAMING_UNDER_MPI, _user_stacklevel())
        return
    assert config._native is not None  # started by setup()
    path = os.path.abspath(config.file_path)
    config._native.start_flush(path, interval, dict(config.metadata), config.start_time_ns)
    if _streaming is None:
        import weakref

        _streaming = weakref.WeakSet()
    _streaming.add(config)


def _stop_streaming(config: ProfilingConfig | None, discard: bool = False) -> None:
    """End the flush thread of ``config`` (None: nothing); ``discard`` also removes its
    sidecar (the run is thrown away: ``reset()``, a new ``setup()``)."""
    if config is None or _streaming is None or config not in _streaming:
        return
    if config._native is None:
        return
    if discard:
        config._native.discard_flush()
        _streaming.discard(config)
    else:
        config._native.stop_flush()


def _stop_all_streaming() -> None:
    """Every flush thread ends (at the interpreter's exit, ``_exit``: after every exit-time
    finalize, which read their sidecars back; a run never finalized keeps its sidecar)."""
    for config in list(_streaming or ()):
        _stop_streaming(config)


def _render_output(requested: str | None, recorded: str, native_run) -> None:
    """After ``recorded`` (the HDF5 file) was written: when ``setup(output=)`` asked for
    another file, write ``requested`` from the run and remove ``recorded``. A failed
    rendering raises its ``OSError`` (a note names ``recorded``, which is kept)."""
    if requested is None or os.path.abspath(requested) == os.path.abspath(recorded):
        return
    from ._native import write_profile

    try:
        if os.path.isdir(requested):  # write_profile would write a default name inside
            import errno

            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), requested)
        write_profile(_results_from_native(native_run), requested)
    except OSError as exc:
        exc.add_note(f"the recorded run is kept in {recorded}")
        raise
    os.remove(recorded)


def _checkpoint_results(manager, config, run, ranks, write_file, return_results, verbose):
    """The results of a checkpoint's ``run`` of ``ranks`` ranks (written to
    ``config.file_path`` when ``write_file``) when ``return_results`` or ``verbose``, else
    None; ``verbose`` prints their summary, titled by ``finalize_summary_title``."""
    if not (return_results or verbose):
        return None
    results = _results_from_native(run)
    if verbose and hasattr(results, "print_summary"):
        label = getattr(results, "display_label", config.file_path)
        title = finalize_summary_title(manager._requested_output, write_file, label, ranks)
        results.print_summary(title=title)
    return results


def _decorate_with_session(session: _ProfilingSession, func):
    """``session(...)`` as a decorator: each call of ``func`` runs in a fresh session; for
    ``async def`` the session spans the awaited coroutine, not just the call creating it."""
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


def _lifetime_wrapper(func, profiled, block=None):
    """For ``async def``, generator and async generator functions, a wrapper whose region
    spans the whole coroutine / generator run (first step to completion) instead of the call
    that merely creates it. ``profiled`` (the Rust wrapper) holds the region binding that every
    ``setup()`` rebinds; ``None`` for plain functions, which ``profiled`` times directly.
    ``block(args, kwargs)`` (a :class:`_metadata.CallBlock`), when given, is entered around
    each coroutine or generator run, outside its region (async generators get none)."""
    import inspect

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def coroutine_wrapper(*args, **kwargs):
            region = profiled._region
            if region is None:
                return await func(*args, **kwargs)
            if block is None:
                with region:
                    return await func(*args, **kwargs)
            with block(args, kwargs), region:
                return await func(*args, **kwargs)

        return coroutine_wrapper
    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def generator_wrapper(*args, **kwargs):
            region = profiled._region
            if region is None:
                return (yield from func(*args, **kwargs))
            if block is None:
                with region:
                    return (yield from func(*args, **kwargs))
            with block(args, kwargs), region:
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


class ProfilingRun:
    """Handle returned by :meth:`ProfileManager.setup`: its file, whether it is still the
    manager's active run, its ``finalize()`` and the results that finalize returned."""

    def __init__(self, manager, config, output=None) -> None:
        self._manager = manager
        self._config = config
        self._file_path = output or config.file_path
        self.results = None
        self._joined = False  # a hosted script's run (ProfileManager._join_host)

    @property
    def file_path(self):
        """The file this run writes (``output=`` or the configuration's ``file_path``)."""
        return self._file_path

    @property
    def is_active(self) -> bool:
        return self._manager._config is self._config and self._manager.is_active()

    def finalize(self, **kwargs):
        """Finalize through the owning manager and keep the results (``return_results``
        defaults to True). ``RuntimeError`` when another ``setup()`` replaced this run; a
        write's ``OSError`` propagates after ``results`` is set to the run kept in memory."""
        check_run_current(self._manager._config is self._config)
        kwargs.setdefault("return_results", True)
        try:
            self.results = self._manager.finalize(**kwargs)
        except OSError:
            self.results = self._manager.last_results()  # the run, though not written
            raise
        return self.results


class _ProfilingSession:
    """The context manager (and decorator) returned by :meth:`ProfileManager.session`:
    ``setup()`` at entry, a root region around the body, ``finalize()`` (closing open calls)
    at exit, then the tracker's hooks removed. Under ``scope-profiler run`` it joins the
    command line's run and its exit writes a snapshot to the script's own output."""

    ROOT_REGION_NAME = SESSION_ROOT_REGION

    def __init__(self, manager, setup_kwargs: dict, finalize_kwargs: dict) -> None:
        self._manager = manager
        self._setup_kwargs = setup_kwargs
        self._finalize_kwargs = finalize_kwargs  # verbose, return_results, ... of the exit's
        self.results = None
        self._root_region: Any = None
        self._joined = False  # set up under scope-profiler run: joined to its run

    def _recreate_cm(self) -> _ProfilingSession:
        """A fresh session with the same arguments (one per call of a decorated function)."""
        return type(self)(self._manager, self._setup_kwargs, self._finalize_kwargs)

    def __call__(self, func):
        return _decorate_with_session(self, func)

    def __enter__(self):
        run = self._manager.setup(**self._setup_kwargs)
        self._joined = getattr(run, "_joined", False)
        # made here, not by the lookup: listed at once, and the user's `with` line is not
        # the root's source
        self._root_region = self._manager._region_of(self.ROOT_REGION_NAME, None)
        self._root_region.__enter__()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        manager = self._manager
        if self._joined:
            # joined to `scope-profiler run`'s run: write the script's file (a snapshot),
            # leave the run, its hooks and streaming to the command line
            try:
                self._root_region.__exit__(exc_type, exc_value, traceback)
                self._finish(close_open=False)
            finally:
                if manager._joined:
                    manager._joined.pop()
            return False
        try:
            self._root_region.__exit__(exc_type, exc_value, traceback)
        finally:
            try:
                # the flush thread ends first, so nothing recorded after the finalize below
                # starts a new sidecar; finalize reads back what it flushed
                _stop_streaming(manager._config)
            finally:
                try:
                    self._finish(close_open=True)
                finally:
                    config = manager._config
                    if config is not None and config.tracker is not None:
                        config.tracker.uninstall()
        return False

    def _finish(self, close_open: bool) -> None:
        """The exit's finalize (``close_open``: the end of the recording); its results kept,
        or on an ``OSError`` (the file could not be written) the run kept in memory."""
        try:
            self.results = self._manager._finalize(close_open=close_open, **self._finalize_kwargs)
        except OSError:
            if close_open:
                self.results = self._manager.last_results()
            raise


class ProfileManager:
    """Manage a set of profiling regions (class = process-wide default, instance = isolated).

    ::

        cpu = ProfileManager()
        io = ProfileManager()
        with cpu.session(file_path="cpu.h5"), io.session(file_path="io.h5"):
            with cpu.profile_region("compute"), io.profile_region("write"):
                work()
    """

    # the state of this class (``_install``)
    _config: ClassVar[ProfilingConfig | None]
    _configured: ClassVar[bool]
    _lifecycle: ClassVar[ManagerLifecycle]  # state and tag rules (Rust)
    _next_call_id: ClassVar[int]
    _last_results: ClassVar[Any]
    _last_native_run: ClassVar[Any]
    _last_written_run: ClassVar[Any]  # what the file holds, for `run` not to read it back
    _requested_output: ClassVar[str | None]
    #: ``scope-profiler run``'s run while it hosts a script (``_cli``): a script's own
    #: ``setup()``/``session()`` joins it instead of failing (:meth:`_join_host`).
    _host_config: ClassVar[ProfilingConfig | None]
    #: Runs the hosted script set up, innermost last: ``(file_path, requested_output,
    #: deactivate_file_output, names of the calls open at the join)``.
    _joined: ClassVar[list]
    _auto_finalize: ClassVar[Any]  # the exit-time finalize of setup(auto_finalize=True) (_exit)
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

    def __new__(cls: Any):
        if cls is ProfileManager:  # an isolated manager: a class of its own
            cls = type("ProfileManagerInstance", (cls,), {"__module__": cls.__module__})
        return object.__new__(cls)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _install(cls)

    # ------------------------------------------------------------------ regions
    @classmethod
    def _recording(cls) -> bool:
        config = cls._config
        return cls._configured and config is not None and not config.deactivate_profiling

    @classmethod
    def _recorded_path(cls, filename: str) -> str:
        """The path a source file is recorded as: relative to the cwd or ``sys.path`` unless
        the run's ``metadata_detail`` is not ``"minimal"``."""
        config = cls._config
        if config is None or config.metadata_detail == "minimal":
            return relative_source_path(filename, sys.path)
        return filename

    @classmethod
    def _bind_region_cache(cls) -> None:
        """Let the native lookup make new regions of the current recording itself (not with
        ``capture_region_source``, which reads the line in Python, nor with ``region_tags``,
        which disables untagged regions)."""
        config = cls._config
        if (
            cls._recording()
            and config is not None
            and not config.capture_region_source
            and not cls._lifecycle.filtered
        ):
            cls._region_cache.bind(config._native, cls._recorded_path)
        else:
            cls._region_cache.bind(None)

    @classmethod
    def _create_region(cls, region_name, functions=None, tags=None):
        """The Python path of :attr:`region`: a miss the native lookup does not make, or a
        call with ``functions`` (accepted for compatibility: line profiling is not
        implemented) or ``tags``. Its source: the calling line."""
        region = cls._regions.get(region_name)
        if region is None or (tags is not None and tuple(tags) != tuple(region.tags)):
            return cls._region_of(region_name, tags, sys._getframe(1))  # made, or refused
        return region  # a lookup with tags, run per call: no more than one probe

    @classmethod
    def _region_of(cls, name, tags, caller: FrameType | None = None):
        """The region ``name``, made when missing (``caller``: the frame whose line is its
        source, unless it is the package's). ``ValueError`` when it exists with other
        non-None ``tags``."""
        tags = None if tags is None else tuple(tags)
        region = cls._regions.get(name)
        if region is None:
            region = cls._region_cache.adopt(name)  # a name used once so far
        if region is None:
            normalized = list(tags or ())
            config = cls._config
            if cls._recording() and cls._lifecycle.records(normalized):
                assert config is not None and config._native is not None  # _recording() holds
                region = config._native.region(name, normalized, cache=cls._region_cache)
                if caller is not None:
                    cls._set_call_site(config, region, caller)
            else:
                region = ProfileRegion.disabled(name, normalized, cache=cls._region_cache)
            # another thread may have made it meanwhile: keep the first object
            region = cls._regions.setdefault(name, region)
        if tags is not None:
            check_region_tags(name, tuple(region.tags), tags)
        return region

    @classmethod
    def _set_call_site(cls, config: ProfilingConfig, region, frame: FrameType) -> None:
        if frame.f_globals.get("__name__", "") in _INTERNAL_MODULES:
            return
        filename, lineno, text = frame.f_code.co_filename, frame.f_lineno, None
        if config.capture_region_source:
            import linecache

            text = linecache.getline(filename, lineno).rstrip("\n") or None
        region.set_source(cls._recorded_path(filename), lineno, text)

    @classmethod
    def _bind_decorated(cls, name, func, wrapper, tags) -> None:
        """Bind decorator ``wrapper`` of ``func`` (region ``name``, ``tags``) to the run."""
        if not cls._recording():
            wrapper._bind(None)
            return
        region = cls._region_of(name, tags)
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
    def _rebind_decorators(cls, new_opt_in=None) -> None:
        """Bind every decorator again (``new_opt_in``: only those carrying one of them)."""
        for name, entries in list(cls._decorators.items()):
            for func, wrapper, tags in list(entries):
                if new_opt_in is None or (tags and carries_opt_in(new_opt_in, list(tags))):
                    cls._bind_decorated(name, func, wrapper, tags)

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
            return cls._decorate(
                func, region_name, recursive, metadata, record_outcome, region_tags
            )

        if callable(region_name):
            func = region_name
            region_name = None
            return decorator(func)
        return decorator

    @classmethod
    def _decorate(cls, func, region_name, recursive, metadata, record_outcome, tags):
        """``profile(...)(func)``: ``func``'s Rust wrapper bound to its region, then wrapped
        for a coroutine / generator lifetime, metadata and ``recursive`` as asked (the
        outermost wrapper is returned). ``ValueError`` for a name a profile cannot hold."""
        name = region_name or func.__name__
        check_region_name(name)  # refused now, not at the next setup()
        _tracer.mark_decorated(func)  # the tracer leaves it to its own region
        wrapper = ProfiledFunction(func)
        functools.update_wrapper(wrapper, func)
        cls._bind_decorated(name, func, wrapper, tags)
        cls._decorators.setdefault(name, []).append((func, wrapper, tags))
        with_metadata = metadata is not None or record_outcome
        block = None
        if with_metadata:
            block = functools.partial(_metadata.CallBlock, cls, metadata, record_outcome)
        lifetime = _lifetime_wrapper(func, wrapper, block)
        outer: Any = wrapper
        if lifetime is not None:
            outer = lifetime
        elif with_metadata:
            call = _metadata.MetadataCall(cls, wrapper, metadata, record_outcome)
            outer = functools.wraps(func)(call)
        if recursive:
            outer = _recursive_wrapper(cls, func, wrapper, outer)
        if outer is not wrapper:
            outer._scope_profiler_wrapper = wrapper  # instrument() leaves it alone
        return outer

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
        functions = None if functions is None else tuple(functions)
        tags = None if tags is None else tuple(tags)
        previous = cls._region_definitions.get(region_name)
        check_region_definition(region_name, previous, (functions, tags))
        check_region_name(region_name)
        cls._region_of(region_name, tags)
        cls._region_definitions[region_name] = (functions, tags)
        return RegionHandle(cls, region_name, functions=functions, tags=tags)

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
        new = register_opt_in_tags(tags)
        if not new or not cls._configured:
            return
        for name, region in list(cls._regions.items()):
            if carries_opt_in(new, region.tags):
                del cls._regions[name]
        cls._rebind_decorators(new)

    # the reference's conveniences (``_manager_api``): the manager class comes first
    instrument = classmethod(_manager_api.instrument)
    run = classmethod(_manager_api.run)
    run_script = classmethod(_manager_api.run_script)
    profile_script = classmethod(_manager_api.profile_script)
    profile_command = staticmethod(_manager_api.profile_command)
    setup_from_env = classmethod(_manager_api.setup_from_env)
    sample_every = classmethod(_manager_api.SampleEvery)

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
        return cls._lifecycle.is_active(cls._recording())

    @classmethod
    def last_results(cls):
        return cls._last_results

    @classmethod
    def get_config(cls) -> ProfilingConfig:
        """The active configuration (a default, untracked one is created lazily)."""
        if cls._config is None:
            from ._settings import ProfilingConfig

            cls._config = ProfilingConfig()
            cls._config.start()
        return cls._config

    @classmethod
    def _cancel_auto_finalize(cls) -> None:
        _exit.cancel_auto_finalize(cls)

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
        from . import _fork
        from ._settings import ProfilingConfig

        hosted = cls._hosting()
        inherited = _fork.inherited(cls._config)  # a forked child may replace the parent's run
        refusal = cls._lifecycle.setup_refusal(hosted, cls._configured, bool(replace), inherited)
        if refusal is not None:
            raise RuntimeError(refusal)
        check_setting_names(overrides)  # TypeError naming unknown settings
        requested = None
        if output is not _UNSET:  # file_path / deactivate_file_output from it (checked)
            overrides.update(output_settings(output, overrides))
            requested = None if output is None else os.fspath(output)
        settings: dict = {}
        if config_path is not None:
            from ._options import load_profiling_config

            settings.update(load_profiling_config(config_path))
        if options is not None:
            settings.update(options.to_kwargs())
        settings.update({k: v for k, v in overrides.items() if v is not None})
        # validation happens here, before anything of the previous run is replaced
        config = ProfilingConfig(**settings)
        if hosted:
            return cls._join_host(config, requested)
        cls._lifecycle.filter_regions(region_tags)
        cls._set_config(config)
        cls._requested_output = requested
        if auto_finalize:
            _exit.register_auto_finalize(cls)
        return ProfilingRun(cls, config, requested)

    @classmethod
    def _hosting(cls) -> bool:
        """Whether ``scope-profiler run``'s own run is the active one (a script's setup joins it)."""
        return cls._host_config is not None and cls._config is cls._host_config

    @classmethod
    def _join_host(cls, config: ProfilingConfig, requested_output: str | None) -> ProfilingRun:
        """A hosted script's ``setup()``: keep recording into the command line's run (its
        file gets everything) and remember the script's own output, which the script's
        ``finalize()`` / session end writes as a snapshot of the run so far. When the script
        asks for more tracking than the command line (``track_async`` under plain ``run``),
        the run restarts with it, saying so on stderr (calls recorded before are not kept)."""
        host = cls._config
        assert host is not None  # hosting
        upgrade = tracking_upgrade(
            (config.track_threads, config.track_async),
            (host.track_threads, host.track_async),
            host.file_path,
        )
        if upgrade is not None:
            from ._settings import ProfilingConfig

            names, note = upgrade
            print(note, file=sys.stderr)
            requested = cls._requested_output
            host = ProfilingConfig(**{**host._settings, **dict.fromkeys(names, True)})
            cls._set_config(host)
            cls._requested_output = requested
            cls._host_config = host
        # calls open now (the script's own frames under --recursive, run's root region) are
        # still open at the script's finalize, as expected: its warning leaves them out
        assert host._native is not None  # started by setup()
        open_now = host._native.open_region_names()
        joined = (config.file_path, requested_output, config.deactivate_file_output, open_now)
        cls._joined.append(joined)
        run = ProfilingRun(cls, host, requested_output or config.file_path)
        run._joined = True
        return run

    @classmethod
    def _replace_run(cls, config: ProfilingConfig | None) -> None:
        """Make ``config`` (None: no run) the manager's run: the previous run's tracer,
        tracker hooks and stream end (its sidecar removed), its regions, call ids, results
        and requested output are forgotten."""
        cls._cancel_auto_finalize()
        cls._regions.clear()  # the dict the native lookup probes
        previous = cls._config
        if previous is not config:
            _tracer.forget(previous)
            _stop_streaming(previous, discard=True)
        if previous is not None and previous.tracker is not None:
            previous.tracker.uninstall()
        cls._config = config
        cls._configured = config is not None
        cls._next_call_id = 0
        cls._last_results = cls._last_native_run = cls._last_written_run = None
        cls._requested_output = None

    @classmethod
    def _set_config(cls, config: ProfilingConfig) -> None:
        """Start ``config`` and make it the manager's run (the previous one's tracer,
        tracker and stream end; regions and decorators are bound again)."""
        from . import _fork

        config.start()
        cls._replace_run(config)
        _fork.track(config)  # a forked child takes its view of the thread table
        cls._lifecycle.set_up(bool(config.deactivate_profiling), list(config.enable_tags or ()))
        cls._bind_region_cache()
        if config.tracker is not None:
            config.tracker.install()
        _tracer.start(config, cls._recorded_path)  # recursive_profile=True
        config.mark_started()  # the origin: recording begins now (the stream's frames use it)
        _start_streaming(config)
        cls._rebind_decorators()
        for name, (_functions, tags) in list(cls._region_definitions.items()):
            cls._region_of(name, tags)

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
    ) -> _ProfilingSession:
        """Context manager (and decorator): ``setup()`` at entry (validation happens
        there), a ``"scope_profiler.session"`` root region around the body, ``finalize()``
        at exit (results in ``.results`` with ``return_results=True``), then the tracker's
        hooks are removed."""
        setup_kwargs = dict(overrides, options=options, replace=replace, config_path=config_path)
        if output is not _UNSET:
            setup_kwargs["output"] = output
        finalize_kwargs = {
            "verbose": bool(verbose),
            "verbose_line_profiler": bool(verbose_line_profiler),
            "return_results": bool(return_results),
            "native_traces": native_traces,
        }
        return _ProfilingSession(cls, setup_kwargs, finalize_kwargs)

    @classmethod
    def finalize(
        cls, verbose=True, return_results=False, native_traces=None, verbose_line_profiler=False
    ):
        """Checkpoint (see :meth:`_finalize`): calls still open stay open, named in a
        ``RuntimeWarning``."""
        return cls._finalize(verbose, return_results, native_traces, verbose_line_profiler)

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
        verbose, return_results = bool(verbose), bool(return_results)
        if cls._joined and cls._hosting():  # a script's own run under scope-profiler run
            return cls._finalize_joined(verbose, return_results, native_traces)
        if close_open:  # the end of the recording: function-level tracing ends first
            _tracer.stop(cls._config, stacklevel=_user_stacklevel() + 1)
        if not cls._configured:
            if not return_results:
                return None
            config = cls._config
            return cls._keep(_empty_results(config.file_path if config is not None else ""))
        config = cls.get_config()
        rank = getattr(config, "_rank", 0)
        native = [] if native_traces is None else native_regions(native_traces, rank)
        config.metadata["finalize_time_ns"] = perf_counter_ns()
        results = None
        if config.deactivate_profiling:
            if return_results:
                results = _empty_results(config.file_path)
        elif config.comm is not None:  # MPI rank: collective, one file written by rank 0
            from . import _mpi

            results = _mpi.finalize(
                cls, config, verbose=verbose, return_results=return_results, native=native
            )
        else:
            write_file = not config.deactivate_file_output
            if write_file or return_results or verbose:
                results = cls._checkpoint(
                    config, write_file, return_results, verbose, close_open, native
                )
        cls._lifecycle.finalized()
        cls._cancel_auto_finalize()
        return cls._keep(results) if return_results else None

    @classmethod
    def _keep(cls, results):
        cls._last_results = results
        return results

    @classmethod
    def _checkpoint(cls, config, write_file, return_results, verbose, close_open, native):
        """The checkpoint of a plain (not MPI) run: snapshot, write, render ``output=``;
        the results when ``return_results`` or ``verbose`` (printed then), else None."""
        if config.tracker is not None:
            config.tracker._refresh_task_names()  # Task.get_name() as of now
        assert config._native is not None  # get_config() started it
        level = _user_stacklevel()
        _tracer.report(config, stacklevel=level + 1)  # calls the limit dropped
        native_run, next_id, nesting_error, write_error = config._native.finalize(
            dict(config.metadata),
            config.start_time_ns,
            write_file,
            config.file_path,
            cls._next_call_id,
            close_open=close_open,
            expected_open=[SESSION_ROOT_REGION],
            native=native,
            stacklevel=level,  # the open-calls warning names the user's line
        )
        cls._next_call_id = next_id
        cls._last_native_run = native_run
        cls._last_written_run = native_run if write_file and write_error is None else None
        if nesting_error is not None:
            _warn(call_graph_warning(str(nesting_error)), level)
        if write_error is not None:
            # nothing rewound: the calls stay buffered for the next finalize(); the run is kept
            cls._last_results = _results_from_native(native_run)
            raise write_error
        if write_file:
            _render_output(cls._requested_output, config.file_path, native_run)
        return _checkpoint_results(cls, config, native_run, 1, write_file, return_results, verbose)

    @classmethod
    def _finalize_joined(cls, verbose: bool, return_results: bool, native_traces) -> Any:
        """``finalize()`` of a hosted script's run: a snapshot of every completed call so
        far (nothing is rewound or closed: the command line's run goes on and writes them
        all), written to the script's own output unless it set ``deactivate_file_output``."""
        path, requested, no_file, open_at_join = cls._joined[-1]
        config = cls.get_config()
        native = [] if native_traces is None else native_regions(native_traces, 0)
        if config.tracker is not None:
            config.tracker._refresh_task_names()
        # the snapshot's end: live threads' wall time runs to it
        metadata = {**config.metadata, "finalize_time_ns": perf_counter_ns()}
        assert config._native is not None  # the host's run, started
        level = _user_stacklevel()
        native_run, _, nesting_error, _ = config._native.finalize(
            metadata,
            config.start_time_ns,
            False,
            path,
            cls._next_call_id,
            close_open=False,
            expected_open=[SESSION_ROOT_REGION, *open_at_join],
            native=native,
            stacklevel=level,
        )
        if nesting_error is not None:
            _warn(call_graph_warning(str(nesting_error)), level)
        results = cls._keep(_results_from_native(native_run))
        target = requested or path
        if not no_file:
            from ._native import write_profile

            write_profile(results, target)
        if verbose:
            results.print_summary(title=target)
        return results if return_results else None

    @classmethod
    def pause(cls) -> None:
        """Stop recording new scopes (entries push a placeholder) until :meth:`resume`;
        ``RuntimeError`` before ``setup()`` or while scopes other than a session's root are
        open."""
        config = cls._config
        check_set_up(config is not None, "pause")
        assert config is not None and config._native is not None  # set up, so started
        native = config._native
        if native.paused:
            return
        check_pause(native.open_region_names())
        native.set_paused(True)

    @classmethod
    def resume(cls) -> None:
        """Record again after :meth:`pause` (``RuntimeError`` before ``setup()``)."""
        config = cls._config
        check_set_up(config is not None, "resume")
        assert config is not None and config._native is not None  # set up, so started
        config._native.set_paused(False)

    @classmethod
    def reset(cls) -> None:
        """Forget the configuration and everything recorded; keep the instrumentation
        (decorated functions call straight through until the next ``setup()``)."""
        cls._region_cache.bind(None)
        cls._replace_run(None)
        cls._lifecycle.reset()
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


def _install(cls) -> None:
    """Give manager class ``cls`` its own state, region dict and native ``region`` /
    ``profile_region`` over it (unbound until its next ``setup()``)."""
    cls._config = cls._host_config = cls._requested_output = cls._auto_finalize = None
    cls._configured = False
    cls._lifecycle = ManagerLifecycle()
    cls._next_call_id = 0
    cls._last_results = cls._last_native_run = cls._last_written_run = None
    cls._joined = []
    cls._decorators, cls._region_definitions, cls._regions = {}, {}, {}
    name = f"scope_profiler_metadata_{cls.__qualname__}"
    cls._metadata_context = ContextVar(name, default=None)
    cls._region_cache = RegionCache(cls._regions, cls._create_region)
    cls.region = cls.profile_region = cls._region_cache.lookup


_install(ProfileManager)
