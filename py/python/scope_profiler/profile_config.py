"""Run settings (the reference's import path ``scope_profiler.profile_config``):
``ProfilingOptions`` and its ``MemrayOptions`` / ``GPUOptions`` / ``HDF5Options`` groups,
``ProfilingConfig`` (what ``setup()`` builds) and ``load_profiling_config`` (the
``[profiling]`` table of a TOML file). Defined in ``scope_profiler._options`` and ``scope_profiler._settings``."""

from __future__ import annotations

from ._options import (
    GPUOptions,
    HDF5Options,
    MemrayOptions,
    ProfilingOptions,
    load_profiling_config,
)
from ._settings import ProfilingConfig

__all__ = [
    "GPUOptions",
    "HDF5Options",
    "MemrayOptions",
    "ProfilingConfig",
    "ProfilingOptions",
    "load_profiling_config",
]
