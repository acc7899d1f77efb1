"""``ProfileManager`` (the reference's import path ``scope_profiler.profile_manager``), with
its run handle and region definitions."""

from __future__ import annotations

from ._manager import ProfileManager, ProfilingRun, RegionFactory, RegionHandle

__all__ = ["ProfileManager", "ProfilingRun", "RegionFactory", "RegionHandle"]
