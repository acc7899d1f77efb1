"""``ProfileManager`` (the reference's import path ``scope_profiler.profile_manager``)."""

from __future__ import annotations

from ._manager import ProfileManager, ProfilingRun

__all__ = ["ProfileManager", "ProfilingRun"]
