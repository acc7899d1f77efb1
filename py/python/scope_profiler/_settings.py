"""Settings of a profiling run: names, defaults and validation of scope-profiler 0.7.5.

``ProfilingConfig`` is what ``setup()``/``session()`` build from their keywords (29 flat
settings, the same names and defaults as the reference's ``ProfilingConfig.__init__``, and
this package's own ``OWN_DEFAULTS``: ``flush_interval``).
Its state, checks and read-only properties are Rust (``_native.ProfilingConfigBase``,
``py/src/package/settings.rs``); constructing one takes the run origin (``start_time_ns``) and
collects the run metadata; :meth:`ProfilingConfig.start` creates the native recorder (and,
with ``track_threads``, the tracker; installing it is the manager's job).

Settings this package accepts but does not implement:

* line profiler, GPU timing, NVTX, LIKWID, perf events, aggregation mode: with
  ``track_threads``/``track_async`` the reference's ``ValueError``; alone a
  ``NotImplementedError`` naming the setting;
* ``use_memray``, ``profile_mpi_calls``: ``NotImplementedError``;
* ``hdf5_compression``/``hdf5_compression_level``/``hdf5_chunk_size``: validated like the
  reference, otherwise ignored (the writer picks its own layout);
* ``output_mode``: validated like the reference; used only by MPI runs (``_mpi``).
"""

from __future__ import annotations

from functools import cache

from ._native import (
    NativeRecorder,
    ProfilingConfigBase,
    check_settings_attribute,
    setting_defaults,
    unanswered_host_facts,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cheap import)
if TYPE_CHECKING:
    from typing import Any


def __getattr__(name: str):
    """Names defined in ``_options`` (dataclasses, loaded on first use), reachable from here
    (``session::package_names::SETTINGS_LAZY``); ``AttributeError`` for any other."""
    check_settings_attribute(name)
    from . import _options

    return getattr(_options, name)


#: Every flat setting with its default (reference ``ProfilingConfig.__init__`` order), and
#: the settings of this package that the reference does not have (``OWN_DEFAULTS``:
#: ``flush_interval``, seconds or None, streams completed calls to a sidecar beside
#: ``file_path``, ``docs/recovery.md``; ``recursive_all`` / ``_include`` / ``_exclude`` /
#: ``_entrypoint`` / ``_call_limit``: what ``recursive_profile=True`` traces,
#: ``docs/tracing.md``). Names, defaults and checks: ``scope_profiler_session::settings``.
DEFAULTS, OWN_DEFAULTS = setting_defaults()

ALL_DEFAULTS: dict[str, Any] = {**DEFAULTS, **OWN_DEFAULTS}


def _host_answer(name: str) -> str:
    """Python's answer to the host fact ``name`` of the run metadata (one of
    ``unanswered_host_facts()``): ``getpass.getuser()``, ``socket.gethostname()``,
    ``" ".join(platform.uname())`` or :func:`_constant_host_answer`; the module imported now."""
    if name == "user":
        import getpass

        return getpass.getuser()
    if name == "hostname":
        import socket

        return socket.gethostname()
    if name == "uname":
        import platform

        return " ".join(platform.uname())
    return _constant_host_answer(name)


@cache
def _constant_host_answer(name: str) -> str:
    """``platform.platform()``, or for ``processor`` ``platform.processor() or
    platform.machine()``: they do not change in a process, so they are asked once."""
    import platform

    if name == "platform":
        return platform.platform()
    return platform.processor() or platform.machine()


class ProfilingConfig(ProfilingConfigBase):
    """One run's settings (built by ``setup()``; a default one by ``get_config()``).

    Construction only validates (order and messages follow the reference; see the module
    docstring for the settings accepted but not implemented), takes the run origin
    (``start_time_ns``, ``perf_counter_ns`` clock) and collects the metadata. :meth:`start`
    creates what records: the native recorder, the tracker (``track_threads``; installing its
    hooks is the manager's job) and, under an MPI launch, the communicator.
    """

    if TYPE_CHECKING:  # the settings without a property of their own (Rust's __getattr__)

        def __getattr__(self, name: str) -> Any: ...

    def __new__(cls, **settings: Any) -> ProfilingConfig:
        """A configuration of ``settings``, its metadata with Python's answers where the
        system calls have none (``unanswered_host_facts``)."""
        full = settings.get("metadata_detail") == "full"
        answers = {name: _host_answer(name) for name in unanswered_host_facts(full)}
        return super().__new__(cls, answers, **settings)

    def start(self) -> None:
        """Create the recorder, the tracker (``track_threads`` unless ``deactivate_profiling``;
        not yet installed) and, under an MPI launch, attach the communicator. Idempotent."""
        if self._native is not None:
            return
        self._native = NativeRecorder(self.buffer_limit, self.track_threads, self.track_async)
        # deactivate_profiling: no tracker, so no thread, asyncio or greenlet hook is
        # installed at all (the reference installs them for a run recording nothing)
        if self.track_threads and not self.deactivate_profiling:
            from ._tracking import ConcurrencyTracker

            self._tracker = ConcurrencyTracker(self._native, track_async=self.track_async)
        from ._mpi import configure  # imports mpi4py only under an MPI launch

        configure(self)
