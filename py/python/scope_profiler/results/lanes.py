"""Lane tables: ``ThreadInfo`` (one registered thread) and ``TaskInfo`` (one asyncio task
or greenlet), seconds relative to the run start."""

from __future__ import annotations

from ._common import UNKNOWN

__all__ = ["TaskInfo", "ThreadInfo"]


class ThreadInfo:
    """One row of a run's thread table (seconds, relative to the run start)."""

    __slots__ = (
        "cpu_time",
        "daemon",
        "end_time",
        "ident",
        "index",
        "name",
        "native_id",
        "rank",
        "start_time",
    )

    def __init__(
        self,
        index: int,
        rank: int,
        name: str,
        ident: int,
        native_id: int,
        daemon: bool,
        start_ns: int,
        end_ns: int,
        cpu_ns: int,
    ) -> None:
        self.index = int(index)
        self.rank = int(rank)
        self.name = str(name)
        self.ident = int(ident)
        self.native_id = int(native_id)
        self.daemon = bool(daemon)
        self.start_time = float(start_ns) / 1e9
        self.end_time = None if int(end_ns) == UNKNOWN else float(end_ns) / 1e9
        self.cpu_time = float(cpu_ns) / 1e9

    @property
    def alive(self) -> bool:
        """Whether the thread was still running when the run was collected."""
        return self.end_time is None

    @property
    def wall_time(self) -> float | None:
        """Seconds between the thread starting and ending, or None if alive."""
        if self.end_time is None:
            return None
        return self.end_time - self.start_time

    def _to_tuple(self) -> tuple:
        return (
            self.rank,
            self.index,
            self.ident,
            self.native_id,
            self.daemon,
            round(self.start_time * 1e9),
            UNKNOWN if self.end_time is None else round(self.end_time * 1e9),
            round(self.cpu_time * 1e9),
            self.name,
        )

    def __repr__(self) -> str:
        return (
            f"ThreadInfo(rank={self.rank}, index={self.index}, name={self.name!r}, "
            f"cpu_time={self.cpu_time:.6f}s, alive={self.alive})"
        )


class TaskInfo:
    """One row of a run's task table: an asyncio task or a greenlet."""

    __slots__ = (
        "awaiting_time",
        "coro_name",
        "created_time",
        "done_time",
        "index",
        "kind",
        "name",
        "rank",
        "running_time",
        "steps",
        "thread_index",
    )

    def __init__(
        self,
        index: int,
        rank: int,
        kind: str,
        name: str,
        coro_name: str,
        thread_index: int,
        created_ns: int,
        done_ns: int,
        steps: int,
        running_ns: int,
        suspended_ns: int,
    ) -> None:
        self.index = int(index)
        self.rank = int(rank)
        self.kind = str(kind)
        self.name = str(name)
        self.coro_name = str(coro_name)
        self.thread_index = int(thread_index)
        self.created_time = float(created_ns) / 1e9
        self.done_time = None if int(done_ns) == UNKNOWN else float(done_ns) / 1e9
        self.steps = int(steps)
        self.running_time = float(running_ns) / 1e9
        self.awaiting_time = float(suspended_ns) / 1e9

    @property
    def done(self) -> bool:
        """Whether the task finished before the run was collected."""
        return self.done_time is not None

    @property
    def wall_time(self) -> float | None:
        """Seconds from creation to completion, or None if it never finished."""
        if self.done_time is None:
            return None
        return self.done_time - self.created_time

    def _to_tuple(self) -> tuple:
        return (
            self.rank,
            self.index,
            self.thread_index,
            round(self.created_time * 1e9),
            UNKNOWN if self.done_time is None else round(self.done_time * 1e9),
            self.steps,
            round(self.running_time * 1e9),
            round(self.awaiting_time * 1e9),
            self.kind,
            self.name,
            self.coro_name,
        )

    def __repr__(self) -> str:
        return (
            f"TaskInfo(rank={self.rank}, index={self.index}, kind={self.kind!r}, "
            f"name={self.name!r}, running_time={self.running_time:.6f}s, "
            f"awaiting_time={self.awaiting_time:.6f}s)"
        )
