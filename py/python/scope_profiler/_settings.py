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
import sys

from ._native import NativeRecorder, check_flush_interval, perf_counter_ns

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (issue 15)
if TYPE_CHECKING:
    from typing import Any

    from ._tracking import ConcurrencyTracker

#: Names defined in ``_options`` (dataclasses, loaded on first use), reachable from here.
_OPTION_NAMES = frozenset(
    {"GPUOptions", "HDF5Options", "MemrayOptions", "ProfilingOptions", "load_profiling_config"}
)


def __getattr__(name: str):
    if name in _OPTION_NAMES:
        from . import _options

        return getattr(_options, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Every flat setting with its default (reference ``ProfilingConfig.__init__`` order).
DEFAULTS: dict[str, Any] = {
    "file_path": "profiling_data.h5",
    "label": None,
    "use_likwid": False,
    "perf_events": None,
    "use_line_profiler": False,
    "use_memray": False,
    "memory_profile_path": None,
    "memray_native_traces": False,
    "memray_trace_python_allocators": False,
    "memray_follow_fork": False,
    "deactivate_profiling": False,
    "use_nvtx": False,
    "use_gpu_timing": False,
    "gpu_timing_backend": "auto",
    "deactivate_file_output": False,
    "recursive_profile": False,
    "aggregation_mode": False,
    "profile_mpi_calls": False,
    "track_threads": False,
    "track_async": False,
    "capture_region_source": False,
    "metadata_detail": "minimal",
    "buffer_limit": 1024,
    "output_mode": "auto",
    "hdf5_compression": None,
    "hdf5_compression_level": None,
    "hdf5_chunk_size": None,
    "gpu_sync_on_exit": False,
    "enable_tags": None,
}

#: Settings of this package that the reference does not have, with their defaults.
#: ``flush_interval`` (seconds, or None): stream completed calls to a sidecar file beside
#: ``file_path`` every interval, so a killed process loses at most about one interval
#: (``docs/recovery.md``).
#: ``recursive_all`` / ``recursive_include`` / ``recursive_exclude`` /
#: ``recursive_entrypoint``: what ``recursive_profile=True`` traces (``run --recursive
#: --all/--include/--exclude/--entrypoint``); ``recursive_call_limit``: most traced calls
#: recorded, later ones counted and reported (``docs/tracing.md``).
OWN_DEFAULTS: dict[str, Any] = {
    "flush_interval": None,
    "recursive_all": False,
    "recursive_include": None,
    "recursive_exclude": None,
    "recursive_entrypoint": None,
    "recursive_call_limit": 20_000_000,
}

ALL_DEFAULTS: dict[str, Any] = {**DEFAULTS, **OWN_DEFAULTS}

CONFIG_FIELDS = frozenset(ALL_DEFAULTS)

METADATA_DETAILS = ("minimal", "full")

_THREADS_INCOMPATIBLE = (
    "track_threads/track_async cannot be combined with line, GPU, "
    "NVTX, LIKWID, perf events, or aggregation profiling"
)


def unknown_setting_error(names) -> str:
    """The reference's message for unknown settings, with difflib suggestions."""
    import difflib

    parts = []
    for name in sorted(names):
        close = difflib.get_close_matches(name, sorted(CONFIG_FIELDS), n=1)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return "Unknown profiling setting(s): " + ", ".join(parts)


# --------------------------------------------------------------------------- metadata
_ENVIRONMENT_VARIABLES = (
    "LD_LIBRARY_PATH",
    "LOADEDMODULES",
    "MODULEPATH",
    "MODULESHOME",
    "MODULES_CMD",
    "MODULES_RUN_QUARANTINE",
    "PATH",
    "PYTHON_HOME",
    "PYTHON_INC",
    "PYTHON_INCLUDE",
    "PYTHON_LIB",
    "VIRTUAL_ENV",
)
_MAX_VALUE_CHARS = 60_000
_TRUNCATION_MARKER = "...[truncated]"
_STATIC_METADATA: dict | None = None


def _chip_information() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else the machine's type."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    if key.strip().lower() in ("model name", "cpu model"):
                        return value.strip()
        except OSError:
            pass
    import platform

    return platform.processor() or platform.machine() or "unknown"


def _package_version() -> str:
    """This build's version (``scope_profiler.__version__``), compiled into the extension."""
    from ._native import __version__

    return __version__


def collect_metadata(detail: str = "minimal") -> dict:
    """Run metadata as in spec-hdf5 §2 (serial run: ``mpi_size = num_nodes = 1``).

    The process-constant part (platform, CPU, versions, OpenMP threads) is computed once
    per process, by system calls (``host_facts``: no ``uname -p`` subprocess, no ctypes);
    ``timestamp`` is taken now.
    """
    from datetime import UTC, datetime

    from ._native import host_facts

    global _STATIC_METADATA
    if _STATIC_METADATA is None:
        platform_string, omp = host_facts()
        if platform_string is None:
            import platform

            platform_string = platform.platform()
        _STATIC_METADATA = {
            "platform": platform_string,
            "chip_information": _chip_information(),
            "python_version": sys.version.split()[0],  # platform.python_version()
            "scope_profiler_version": _package_version(),
            "omp_num_threads": omp,
        }
    static = _STATIC_METADATA
    metadata: dict = {
        "timestamp": datetime.now(UTC).isoformat(),
        "platform": static["platform"],
        "chip_information": static["chip_information"],
        "python_version": static["python_version"],
        "scope_profiler_version": static["scope_profiler_version"],
        "omp_num_threads": static["omp_num_threads"],
        "mpi_size": 1,
        "total_cores": static["omp_num_threads"],
        "num_nodes": 1,
    }
    if detail == "full":
        import getpass
        import platform
        import socket

        metadata.update(
            {
                "hostname": socket.gethostname(),
                "uname": " ".join(platform.uname()),
                "working_directory": os.getcwd(),
                "user": getpass.getuser(),
                "modules": [m for m in os.environ.get("LOADEDMODULES", "").split(":") if m],
            },
        )
        metadata.update({n: os.environ[n] for n in _ENVIRONMENT_VARIABLES if os.environ.get(n)})
        metadata.update(
            {n: v for n, v in os.environ.items() if n.startswith(("SLURM_", "SLURMD_")) and v},
        )
    for key, value in metadata.items():
        if isinstance(value, str) and len(value) > _MAX_VALUE_CHARS:
            metadata[key] = value[: _MAX_VALUE_CHARS - len(_TRUNCATION_MARKER)] + _TRUNCATION_MARKER
    return metadata


# --------------------------------------------------------------------------- config
def _normalized_compression(value):
    """``hdf5_compression`` lower-cased, ``""``/``"none"`` -> None; ValueError if unknown."""
    if isinstance(value, str):
        value = value.strip().lower()
        if value in {"", "none"}:
            value = None
    if value not in {None, "auto", "gzip", "lzf", "zstd"}:
        raise ValueError(
            f"hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got {value!r}",
        )
    return value


def _check_output(s: dict, compression) -> None:
    """The output settings' checks, in the reference's order and words."""
    if s["gpu_sync_on_exit"] and not s["use_gpu_timing"]:
        raise ValueError("gpu_sync_on_exit requires use_gpu_timing=True")
    if s["output_mode"] not in {"auto", "direct", "parallel"}:
        raise ValueError(
            f"output_mode must be 'auto', 'direct', or 'parallel', got {s['output_mode']!r}",
        )
    chunk, level = s["hdf5_chunk_size"], s["hdf5_compression_level"]
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0):
        raise ValueError("hdf5_chunk_size must be a positive integer or None")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
        raise ValueError("hdf5_compression_level must be an integer or None")
    if compression == "gzip" and level is not None and not 0 <= level <= 9:
        raise ValueError("GZIP compression level must be between 0 and 9")
    if compression == "zstd" and level is not None and not 1 <= level <= 22:
        raise ValueError("Zstandard compression level must be between 1 and 22")
    if compression == "lzf" and level is not None:
        raise ValueError("LZF compression does not accept a compression level")
    if s["metadata_detail"] not in METADATA_DETAILS:
        raise ValueError(
            f"metadata_detail must be one of {METADATA_DETAILS}, got {s['metadata_detail']!r}",
        )


def _check_buffer_limit(limit) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError("buffer_limit must be a positive integer")


def _check_call_limit(limit) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"recursive_call_limit must be a positive integer, got {limit!r}")


def _checked_flush_interval(s: dict) -> float | None:
    """``flush_interval`` as float seconds (None = off); ValueError unless a finite number
    of at least 0.01 s and with file output (a sidecar only makes sense beside a file)."""
    import math

    value = s["flush_interval"]
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"flush_interval must be a positive number of seconds, got {value!r}")
    check_flush_interval(float(value))  # at least 0.01 s: the flusher's own rule
    if s["deactivate_file_output"] and not s["deactivate_profiling"]:
        raise ValueError(
            "flush_interval streams calls to a sidecar of the output file; it cannot be "
            "combined with deactivate_file_output (or output=None)",
        )
    return float(value)


def _check_modes(s: dict, perf_events: tuple) -> None:
    """Mode combinations the reference refuses, then the modes this package does not have."""
    other_modes = (
        s["use_line_profiler"]
        or s["use_gpu_timing"]
        or s["use_likwid"]
        or s["use_nvtx"]
        or perf_events
    )
    if s["aggregation_mode"] and other_modes:
        raise ValueError(
            "aggregation_mode cannot be combined with line, GPU, NVTX, LIKWID, or perf events",
        )
    if (s["track_threads"] or s["track_async"]) and (other_modes or s["aggregation_mode"]):
        raise ValueError(_THREADS_INCOMPATIBLE)
    # Not implemented by this package: refuse clearly rather than record something else.
    for name in _NOT_IMPLEMENTED:
        if s[name]:
            raise NotImplementedError(
                f"{name}=True is not supported by scope-profiler (Rust edition)"
            )
    if perf_events:
        raise NotImplementedError("perf_events is not supported by scope-profiler (Rust edition)")


_NOT_IMPLEMENTED = (
    "use_line_profiler",
    "use_gpu_timing",
    "use_nvtx",
    "use_likwid",
    "aggregation_mode",
    "use_memray",
    "profile_mpi_calls",
)


def _as_tuple(value) -> tuple:
    """A str as a 1-tuple, None as (), any other iterable as a tuple."""
    if isinstance(value, str):
        return (value,)
    return tuple(value) if value else ()


class ProfilingConfig:
    """One run's settings (built by ``setup()``; a default one by ``get_config()``).

    Construction only validates (order and messages follow the reference; see the module
    docstring for the settings accepted but not implemented), takes the run origin
    (``start_time_ns``, ``perf_counter_ns`` clock) and collects the metadata. :meth:`start`
    creates what records: the native recorder, the tracker (``track_threads``; installing its
    hooks is the manager's job) and, under an MPI launch, the communicator.
    """

    def __init__(self, **settings: Any) -> None:
        unknown = set(settings) - CONFIG_FIELDS
        if unknown:
            raise TypeError(unknown_setting_error(unknown))
        s = dict(ALL_DEFAULTS)
        s.update({k: v for k, v in settings.items() if v is not None})
        # the run's origin, until start() takes it where recording begins (mark_started)
        self._start_time_ns = perf_counter_ns()
        self._perf_events = _as_tuple(s["perf_events"])
        self._enable_tags = _as_tuple(s["enable_tags"])
        self._hdf5_compression = _normalized_compression(s["hdf5_compression"])
        _check_output(s, self._hdf5_compression)
        _check_modes(s, self._perf_events)
        _check_buffer_limit(s["buffer_limit"])
        _check_call_limit(s["recursive_call_limit"])
        self._flush_interval = _checked_flush_interval(s)
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
