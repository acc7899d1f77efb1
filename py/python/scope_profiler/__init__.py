"""scope_profiler: a region profiler for concurrent Python programs.

Rust edition: the recorder, the analysis engine and the file formats are Rust
(`scope_profiler._native`); this package is the Python front. Drop-in for the API of
scope-profiler 0.7.5 (threads, ``ProfileManager.session``, ``profile_region``,
``profile``, ``setup``/``finalize``, results with lane tables).

Importing this package imports neither ``asyncio``, ``greenlet`` nor ``h5py``.
"""

from __future__ import annotations

from . import _native

# The submodule `scope_profiler.region` (the reference's import path for `Region`) is loaded
# before the `region` shortcut is bound: loading a submodule sets the package attribute of its
# name, so a first `import scope_profiler.region` later would replace the shortcut.
from . import region as _region_module  # noqa: F401
from ._manager import ProfileManager, ProfilingRun, RegionFactory, RegionHandle
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
define_region = ProfileManager.define_region
instrument = ProfileManager.instrument
is_configured = ProfileManager.is_configured
last_results = ProfileManager.last_results
metadata = ProfileManager.metadata
profile_command = ProfileManager.profile_command
profile_script = ProfileManager.profile_script
recorded_regions = ProfileManager.recorded_regions
region_factory = ProfileManager.region_factory
register_opt_in_tag = ProfileManager.register_opt_in_tag
registered_regions = ProfileManager.registered_regions
run = ProfileManager.run
setup_from_env = ProfileManager.setup_from_env

#: Names loaded from their module on first use (``import scope_profiler`` stays light: the
#: exporters, and the option dataclasses, whose ``dataclasses`` import pulls ``inspect``):
#: ``{name: (module, attribute)}`` (Rust: ``session::package_names``).
_LAZY = _native.lazy_names()

#: Public names of scope-profiler 0.7.5 that this package cannot honour, with the reason:
#: accessing one raises ``NotImplementedError`` saying so (``from scope_profiler import x``
#: too), rather than a bare ``AttributeError``. ``docs/api-coverage.md`` lists them.
_UNSUPPORTED = _native.unsupported_names()

__all__ = [
    "CallArrays",
    "CorruptProfileError",
    "EventDataUnavailableError",
    "GPUOptions",
    "HDF5Options",
    "HDF5SchemaError",
    "JSONProfileError",
    "MPIRegion",
    "MemrayOptions",
    "NestingError",
    "ProfileManager",
    "ProfilingOptions",
    "ProfilingResults",
    "ProfilingRun",
    "Region",
    "RegionFactory",
    "RegionHandle",
    "TaskInfo",
    "ThreadInfo",
    "build_call_arrays",
    "build_call_stack",
    "call_stack_children",
    "call_stack_roots",
    "compare",
    "create_html_report",
    "define_region",
    "export_chrome_trace",
    "export_flamegraph_svg",
    "export_folded",
    "export_html",
    "export_json",
    "export_parquet",
    "export_perfetto",
    "export_pprof",
    "export_prof",
    "export_speedscope",
    "export_timeline_svg",
    "finalize",
    "get_config",
    "instrument",
    "is_active",
    "is_configured",
    "last_results",
    "load",
    "load_prof",
    "merge_results",
    "metadata",
    "profile",
    "profile_command",
    "profile_region",
    "profile_script",
    "read_h5",
    "read_h5_summary",
    "read_json",
    "read_profile",
    "recorded_regions",
    "region",
    "region_factory",
    "register_opt_in_tag",
    "registered_regions",
    "reset",
    "run",
    "scan",
    "session",
    "setup",
    "setup_from_env",
    "sniff_profile_format",
    "split_by_lane",
    "to_pstats",
    "write_json",
    "write_profile",
]


def __dir__() -> list[str]:
    """The module's names plus the lazily imported exporters (``export_html``, ...), so that
    ``dir()`` and notebook completion list them before their first use."""
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})


def __getattr__(name: str):
    """``__version__``, the lazily imported names (their module imported now); a name of
    ``_UNSUPPORTED`` raises ``NotImplementedError`` saying why, any other ``AttributeError``."""
    if name in _LAZY:
        module, attribute = _LAZY[name]
        # the builtin import (importlib is not loaded by `import scope_profiler`)
        return getattr(__import__(f"{__name__}.{module}", fromlist=[attribute]), attribute)
    return _native.package_attribute(name)
