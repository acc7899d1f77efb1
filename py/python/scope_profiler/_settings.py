"""Settings of a profiling run: names, defaults and validation of scope-profiler 0.7.5.

``ProfilingConfig`` is what ``setup()``/``session()`` build from their keywords (29 flat
settings, the same names and defaults as the reference's ``ProfilingConfig.__init__``, and
this package's own ``OWN_DEFAULTS``: ``flush_interval``).
Constructing one is the run origin (``start_time_ns``), collects the run metadata and
creates the native recorder (and, with ``track_threads``, the tracker; installing it is
the manager's job).

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

import os

from ._native import (
    NativeRecorder,
    check_settings,
    collect_metadata,
    perf_counter_ns,
    setting_defaults,
    settings_attribute,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from typing import Any

    from ._tracking import ConcurrencyTracker


def __getattr__(name: str):
    """Names defined in ``_options`` (dataclasses, loaded on first use), reachable from here
    (``finalize::api_surface::SETTINGS_LAZY``); ``AttributeError`` for any other."""
    return settings_attribute(name)


#: Every flat setting with its default (reference ``ProfilingConfig.__init__`` order), and
#: the settings of this package that the reference does not have (``OWN_DEFAULTS``:
#: ``flush_interval``, seconds or None, streams completed calls to a sidecar beside
#: ``file_path``, ``docs/recovery.md``; ``recursive_all`` / ``_include`` / ``_exclude`` /
#: ``_entrypoint`` / ``_call_limit``: what ``recursive_profile=True`` traces,
#: ``docs/tracing.md``). Names, defaults and checks: ``scope_profiler_finalize::settings``.
DEFAULTS, OWN_DEFAULTS = setting_defaults()

ALL_DEFAULTS: dict[str, Any] = {**DEFAULTS, **OWN_DEFAULTS}

CONFIG_FIELDS = frozenset(ALL_DEFAULTS)


# --------------------------------------------------------------------------- config
class ProfilingConfig:
    """One run's settings (built by ``setup()``; a default one by ``get_config()``).

    Construction only validates (order and messages follow the reference; see the module
    docstring for the settings accepted but not implemented), takes the run origin
    (``start_time_ns``, ``perf_counter_ns`` clock) and collects the metadata. :meth:`start`
    creates what records: the native recorder, the tracker (``track_threads``; installing its
    hooks is the manager's job) and, under an MPI launch, the communicator.
    """

    def __init__(self, **settings: Any) -> None:
        # unknown names, defaults, and the reference's checks in its order and words (Rust)
        s, compression, flush_interval, perf_events, enable_tags = check_settings(settings)
        # the run's origin, until start() takes it where recording begins (mark_started)
        self._start_time_ns = perf_counter_ns()
        self._perf_events = perf_events
        self._enable_tags = enable_tags
        self._hdf5_compression = compression
        self._flush_interval = flush_interval
        self._settings = s
        self._file_path = os.fspath(s["file_path"])
        self._track_threads = bool(s["track_threads"] or s["track_async"])
        self._track_async = bool(s["track_async"])
        self._native: NativeRecorder | None = None
        self._tracker: ConcurrencyTracker | None = None
        self._comm = None
        self._metadata = collect_metadata(s["metadata_detail"])
        self._metadata["start_time_ns"] = self._start_time_ns
        self._label = s["label"] or None
        if self._label is not None:
            self._metadata["label"] = self._label

    def start(self) -> None:
        """Create the recorder, the tracker (``track_threads`` unless ``deactivate_profiling``;
        not yet installed) and, under an MPI launch, attach the communicator. Idempotent."""
        if self._native is not None:
            return
        self._native = NativeRecorder(self.buffer_limit, self._track_threads, self._track_async)
        # deactivate_profiling: no tracker, so no thread, asyncio or greenlet hook is
        # installed at all (issue 11; the reference installed them for a run recording nothing)
        if self._track_threads and not self.deactivate_profiling:
            from ._tracking import ConcurrencyTracker

            self._tracker = ConcurrencyTracker(self._native, track_async=self._track_async)
        from ._mpi import configure  # imports mpi4py only under an MPI launch

        configure(self)

    def mark_started(self) -> None:
        """Take the run's origin (``start_time_ns``) now, once the recorder, the metadata and
        the hooks are ready: the thread that called ``setup()`` starts at this same moment
        (issue 14, new-user trial: the origin was taken before the metadata and the recorder,
        so MainThread's wall time started ~60-100 ms after the run and every timeline had an
        empty lead-in). Requires :meth:`start`."""
        assert self._native is not None, "ProfilingConfig.start() was not called"
        self._start_time_ns = self._native.mark_start()
        self._metadata["start_time_ns"] = self._start_time_ns

    @classmethod
    def reset(cls) -> None:
        """Compatibility no-op (configurations are per manager)."""

    def __getattr__(self, name: str):
        # Remaining settings read as properties of the same name.
        settings = self.__dict__.get("_settings")
        if settings is not None and name in settings:
            return settings[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def file_path(self) -> str:
        return self._file_path

    @property
    def label(self):
        return self._label

    @property
    def track_threads(self) -> bool:
        return self._track_threads

    @property
    def track_async(self) -> bool:
        return self._track_async

    @property
    def tracker(self):
        """The run's ``ConcurrencyTracker``, or None when ``track_threads`` is off."""
        return self._tracker

    @property
    def start_time_ns(self) -> int:
        return self._start_time_ns

    @property
    def buffer_limit(self) -> int:
        return self._settings["buffer_limit"]

    @property
    def flush_interval(self) -> float | None:
        """Seconds between appends to the sidecar (``flush_interval``), or None."""
        return self._flush_interval

    @property
    def output_mode(self) -> str:
        return self._settings["output_mode"]

    @property
    def hdf5_compression(self):
        return self._hdf5_compression

    @property
    def perf_events(self) -> tuple:
        return self._perf_events

    @property
    def enable_tags(self) -> tuple:
        return self._enable_tags

    @property
    def deactivate_profiling(self) -> bool:
        return bool(self._settings["deactivate_profiling"])

    @property
    def deactivate_file_output(self) -> bool:
        return bool(self._settings["deactivate_file_output"])

    @property
    def paused(self) -> bool:
        assert self._native is not None, "ProfilingConfig.start() was not called"
        return self._native.paused

    @property
    def metadata(self) -> dict:
        return self._metadata

    @property
    def comm(self):
        """MPI communicator (``MPI.COMM_WORLD``) of an MPI rank, else None."""
        return self._comm

    @property
    def memory_profile_path(self):
        return None

    def __repr__(self) -> str:
        return (
            f"ProfilingConfig(file_path={self._file_path!r}, track_threads={self._track_threads}, "
            f"buffer_limit={self.buffer_limit})"
        )
