"""scope_profiler: a region profiler for concurrent Python programs.

Rust edition: the recorder, the analysis engine and the file formats are Rust
(`scope_profiler._native`); this package is the Python front. Drop-in for the API of
scope-profiler 0.7.5 (threads, ``ProfileManager.session``, ``profile_region``,
``profile``, ``setup``/``finalize``, results with lane tables).

Importing this package imports neither ``asyncio``, ``greenlet`` nor ``h5py``.
"""

from __future__ import annotations

# The submodule `scope_profiler.region` (the reference's import path for `Region`) is loaded
# before the `region` shortcut is bound: loading a submodule sets the package attribute of its
# name, so a first `import scope_profiler.region` later would replace the shortcut.
from . import region as _region_module  # noqa: F401
from ._manager import ProfileManager
from .call_stack import (
    CallArrays,
    build_call_arrays,
    build_call_stack,
    call_stack_children,
    call_stack_roots,
    split_by_lane,
)
from .exceptions import CorruptProfileError, HDF5SchemaError, NestingError
from .h5reader import read_h5, read_h5_summary
from .json_export import JSONProfileError, export_json, read_json, write_json
from .results import (
    EventDataUnavailableError,
    MPIRegion,
    ProfilingResults,
    Region,
    TaskInfo,
    ThreadInfo,
    merge_results,
)

# Module-level shortcuts are the ProfileManager classmethods themselves (process-wide default).
session = ProfileManager.session
setup = ProfileManager.setup
finalize = ProfileManager.finalize
region = ProfileManager.region
profile_region = ProfileManager.profile_region
profile = ProfileManager.profile
reset = ProfileManager.reset
is_active = ProfileManager.is_active
get_config = ProfileManager.get_config

_LAZY = {
    "export_speedscope": ("speedscope_export", "export_speedscope"),
    "export_prof": ("prof_export", "export_prof"),
    "export_flamegraph_svg": ("prof_export", "export_flamegraph_svg"),
    "export_chrome_trace": ("chrome_trace_export", "export_chrome_trace"),
    "export_perfetto": ("exports", "export_perfetto"),
    "export_pprof": ("exports", "export_pprof"),
    "export_folded": ("exports", "export_folded"),
    "export_timeline_svg": ("exports", "export_timeline_svg"),
    "export_parquet": ("exports", "export_parquet"),
}

__all__ = [
    "CallArrays",
    "CorruptProfileError",
    "EventDataUnavailableError",
    "HDF5SchemaError",
    "JSONProfileError",
    "MPIRegion",
    "NestingError",
    "ProfileManager",
    "ProfilingResults",
    "Region",
    "TaskInfo",
    "ThreadInfo",
    "build_call_arrays",
    "build_call_stack",
    "call_stack_children",
    "call_stack_roots",
    "export_json",
    "export_speedscope",
    "finalize",
    "get_config",
    "is_active",
    "merge_results",
    "profile",
    "profile_region",
    "read_h5",
    "read_h5_summary",
    "read_json",
    "region",
    "reset",
    "session",
    "setup",
    "split_by_lane",
    "write_json",
]


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("scope-profiler-rs")
        except PackageNotFoundError:
            return "unknown"
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module 'scope_profiler' has no attribute '{name}'")
