"""Lane tables: ``ThreadInfo`` (a registered thread) and ``TaskInfo`` (an asyncio task or a
greenlet), seconds relative to the run start."""

from __future__ import annotations

from ._native import TaskInfo, ThreadInfo

__all__ = ["TaskInfo", "ThreadInfo"]
