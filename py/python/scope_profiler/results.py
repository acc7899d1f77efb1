"""Results of a profiling run: ``ProfilingResults`` -> ``MPIRegion`` -> ``Region``.

The objects here are thin views over a run held in Rust (``_native.NativeRun``):
per-call int64 columns are read-only numpy arrays that view the run's Arrow
buffers (no copy), and everything derived from the call tree (exclusive time,
lane labels, thread summaries, exports) is reconstructed in Rust. Statistics over
arrays use numpy. All public times are float seconds; ``*_ns`` accessors return
the stored int64 nanoseconds.
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "EventDataUnavailableError",
    "MPIRegion",
    "ProfilingResults",
    "Region",
    "TaskInfo",
    "ThreadInfo",
    "merge_results",
]

NS_PER_SECOND = 1e9
UNKNOWN = -1


class EventDataUnavailableError(RuntimeError):
    """Raised when a summary-only result is asked for per-call event data."""


# --------------------------------------------------------------------------- lane tables


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


# --------------------------------------------------------------------------- Region


def _int64(values) -> np.ndarray | None:
    """``values`` as an int64 array; an int64 array (e.g. a read-only view) is kept as is."""
    if values is None:
        return None
    return np.asarray(values, dtype=np.int64)


class Region:
    """Timing data for one region on one rank (seconds; ``*_ns`` in nanoseconds)."""

    def __init__(
        self,
        start_times: np.ndarray,
        end_times: np.ndarray,
        gpu_durations: np.ndarray | None = None,
        call_ids: np.ndarray | None = None,
        parent_ids: np.ndarray | None = None,
        thread_ids: np.ndarray | None = None,
        task_ids: np.ndarray | None = None,
        await_times: np.ndarray | None = None,
        event_metadata: list[dict] | tuple[dict, ...] | None = None,
        source_file: str | None = None,
        source_lineno: int | None = None,
        source_text: str | None = None,
        tags=(),
        aggregate: dict | None = None,
        event_data_available: bool = True,
    ) -> None:
        self._start_times = _int64(start_times)
        self._end_times = _int64(end_times)
        if self._start_times.shape != self._end_times.shape:
            raise ValueError("start and end times must have the same length")
        self._durations_cache: np.ndarray | None = None
        self._gpu_durations = _int64(gpu_durations)
        self._call_ids = _int64(call_ids)
        self._parent_ids = _int64(parent_ids)
        self._thread_ids = _int64(thread_ids)
        self._task_ids = _int64(task_ids)
        self._await_times = _int64(await_times)
        n = len(self._end_times)
        if event_metadata is None:
            self._event_metadata: tuple[dict, ...] | None = None
        else:
            self._event_metadata = tuple(dict(values) for values in event_metadata)
            if len(self._event_metadata) != n:
                raise ValueError("event metadata must match the call count")
        self._exclusive_durations: np.ndarray | None = None
        self._exclusive_resolver: Any = None
        self._exclusive_total_ns: int | None = None
        self._aggregate = aggregate
        self._event_data_available = bool(event_data_available)
        self._num_calls = int(aggregate.get("count", 0)) if aggregate is not None else n
        self._source_file = source_file
        self._source_lineno = source_lineno
        self._source_text = source_text
        self._tags = tuple(tags)

    # -- exclusive time machinery (driven by ProfilingResults) --------------------

    @property
    def _durations(self) -> np.ndarray:
        if self._durations_cache is None:
            self._durations_cache = self._end_times - self._start_times
        return self._durations_cache

    def _set_exclusive_durations(self, durations: np.ndarray) -> None:
        if len(durations) != self.num_calls:
            raise ValueError("exclusive durations must match the call count")
        self._exclusive_resolver = None
        self._exclusive_durations = np.asarray(durations, dtype=np.int64)

    def _attach_exclusive_resolver(self, resolver) -> None:
        """Register the owner's resolver; drops values computed for a previous owner."""
        self._exclusive_durations = None
        self._exclusive_total_ns = None
        self._exclusive_resolver = resolver

    def _set_exclusive_total(self, total_ns) -> None:
        self._exclusive_total_ns = None if total_ns is None else int(total_ns)

    def _exclusive_buffer(self) -> np.ndarray:
        if self._exclusive_durations is None:
            self._exclusive_durations = self._durations.copy()
        return self._exclusive_durations

    def _resolved_exclusive_durations(self) -> np.ndarray:
        if self._exclusive_durations is None:
            resolver = self._exclusive_resolver
            if resolver is not None:
                self._exclusive_resolver = None
                resolver()
            if self._exclusive_durations is None:
                self._exclusive_durations = self._durations.copy()
        return self._exclusive_durations

    # -- summaries ------------------------------------------------------------------

    def get_summary(self) -> dict[str, Any]:
        """``num_calls`` and duration statistics in seconds."""
        summary: dict[str, Any] = {
            "num_calls": self.num_calls,
            "total_duration": self.total_duration,
            "inclusive_duration": self.inclusive_duration,
            "exclusive_duration": self.exclusive_duration,
            "average_duration": self.average_duration,
            "min_duration": self.min_duration,
            "max_duration": self.max_duration,
            "first_duration": self.first_duration,
            "last_duration": self.last_duration,
            "std_duration": self.std_duration,
        }
        if self.has_gpu_timing:
            summary["gpu_total_duration"] = self.gpu_total_duration
            summary["gpu_average_duration"] = self.gpu_average_duration
        return summary

    def events(self, origin: float = 0.0) -> list[dict[str, Any]]:
        """One dict per call in recorded order (seconds minus ``origin``)."""
        if not self._event_data_available:
            raise EventDataUnavailableError(
                "per-call events are unavailable on summary-only results; "
                "load the profile with read_h5()",
            )
        starts = (self._start_times / NS_PER_SECOND - origin).tolist()
        ends = (self._end_times / NS_PER_SECOND - origin).tolist()
        gpu = self.gpu_durations
        gpu = None if gpu is None else gpu.tolist()
        ids = (
            (self._call_ids.tolist(), self._parent_ids.tolist())
            if self._call_ids is not None and self._parent_ids is not None
            else None
        )
        threads = None if self._thread_ids is None else self._thread_ids.tolist()
        tasks = (
            (self._task_ids.tolist(), (self._await_times / NS_PER_SECOND).tolist())
            if self._task_ids is not None and self._await_times is not None
            else None
        )
        metadata = self._event_metadata
        events = []
        for index, (start, end) in enumerate(zip(starts, ends)):
            event: dict[str, Any] = {
                "call_index": index,
                "start": start,
                "end": end,
                "duration": end - start,
            }
            if gpu is not None:
                event["gpu_duration"] = gpu[index]
            if ids is not None:
                event["call_id"] = ids[0][index]
                event["parent_id"] = ids[1][index]
            if threads is not None:
                event["thread"] = threads[index]
            if tasks is not None:
                event["task"] = tasks[0][index]
                event["await_duration"] = tasks[1][index]
            if metadata is not None and metadata[index]:
                event["metadata"] = dict(metadata[index])
            events.append(event)
        return events

    # -- lane columns -----------------------------------------------------------------

    @property
    def event_metadata(self) -> tuple[dict, ...]:
        """Per-call scoped metadata, aligned with the event arrays."""
        if self._event_metadata is None:
            self._event_metadata = tuple({} for _ in range(len(self._end_times)))
        return self._event_metadata

    @property
    def thread_ids(self) -> np.ndarray | None:
        """Thread-table index of every call, or None if threads were not tracked."""
        return self._thread_ids

    @property
    def task_ids(self) -> np.ndarray | None:
        """Task-table index of every call (-1 outside a task), or None."""
        return self._task_ids

    @property
    def await_times_ns(self) -> np.ndarray | None:
        """Nanoseconds each call spent with its task suspended, or None."""
        return self._await_times

    @property
    def await_times(self) -> np.ndarray | None:
        """Seconds each call spent with its task suspended, or None."""
        if self._await_times is None:
            return None
        return self._await_times / NS_PER_SECOND

    @property
    def total_await_duration(self) -> float | None:
        """Total awaited seconds over every call, or None if not tracked."""
        if self._await_times is None:
            return None
        return float(np.sum(self._await_times)) / NS_PER_SECOND

    @property
    def has_thread_data(self) -> bool:
        return self._thread_ids is not None

    @property
    def threads(self) -> list[int]:
        """Sorted thread-table indices this region recorded calls on."""
        if self._thread_ids is None:
            return []
        return [int(value) for value in np.unique(self._thread_ids)]

    def for_thread(self, thread_index: int) -> Region:
        """The calls of one thread, as a new detached :class:`Region`.

        Every column is sliced with ``thread_ids == thread_index``; source and
        tags are kept, per-call metadata is dropped. Exclusive durations are the
        owner's per-call exclusive values sliced the same way (resolved lazily;
        a region without an owner falls back to inclusive).
        """
        if self._thread_ids is None:
            raise ValueError(
                "this run did not record thread ids; profile with track_threads=True",
            )
        mask = self._thread_ids == int(thread_index)

        def select(values):
            return None if values is None else values[mask]

        part = Region(
            self._start_times[mask],
            self._end_times[mask],
            gpu_durations=select(self._gpu_durations),
            call_ids=select(self._call_ids),
            parent_ids=select(self._parent_ids),
            thread_ids=select(self._thread_ids),
            task_ids=select(self._task_ids),
            await_times=select(self._await_times),
            source_file=self._source_file,
            source_lineno=self._source_lineno,
            source_text=self._source_text,
            tags=self._tags,
            event_data_available=self._event_data_available,
        )
        if self._exclusive_durations is not None:
            part._exclusive_durations = self._exclusive_durations[mask]
        elif self._exclusive_resolver is not None:
            owner = self

            def resolve() -> None:
                part._exclusive_durations = owner._resolved_exclusive_durations()[mask]

            part._exclusive_resolver = resolve
        return part

    @property
    def call_ids(self):
        return self._call_ids

    @property
    def parent_ids(self):
        return self._parent_ids

    # -- flags, source -----------------------------------------------------------------

    @property
    def has_timing(self) -> bool:
        return self.num_calls > 0

    @property
    def has_event_data(self) -> bool:
        return self._event_data_available

    @property
    def has_source(self) -> bool:
        return self._source_file is not None

    @property
    def has_gpu_timing(self) -> bool:
        if self._aggregate is not None:
            return int(self._aggregate.get("gpu_count", 0)) > 0
        return self._gpu_durations is not None and len(self._gpu_durations) > 0

    @property
    def stored_summary(self) -> dict | None:
        return self._aggregate

    @property
    def source_file(self) -> str | None:
        return self._source_file

    @property
    def source_lineno(self) -> int | None:
        return self._source_lineno

    @property
    def source_text(self) -> str | None:
        return self._source_text

    @property
    def tags(self) -> tuple[str, ...]:
        return self._tags

    # -- arrays --------------------------------------------------------------------------

    @property
    def start_times_ns(self) -> np.ndarray:
        return self._start_times

    @property
    def end_times_ns(self) -> np.ndarray:
        return self._end_times

    @property
    def durations_ns(self) -> np.ndarray:
        return self._durations

    @property
    def gpu_durations_ns(self) -> np.ndarray | None:
        return self._gpu_durations

    @property
    def inclusive_durations_ns(self) -> np.ndarray:
        return self._durations

    @property
    def exclusive_durations_ns(self) -> np.ndarray:
        return self._resolved_exclusive_durations()

    @property
    def start_times(self) -> np.ndarray:
        return self._start_times / NS_PER_SECOND

    @property
    def end_times(self) -> np.ndarray:
        return self._end_times / NS_PER_SECOND

    @property
    def durations(self) -> np.ndarray:
        return self._durations / NS_PER_SECOND

    @property
    def gpu_durations(self) -> np.ndarray | None:
        if self._gpu_durations is None:
            return None
        return self._gpu_durations / NS_PER_SECOND

    @property
    def inclusive_durations(self) -> np.ndarray:
        return self.durations

    @property
    def exclusive_durations(self) -> np.ndarray:
        return self._resolved_exclusive_durations() / NS_PER_SECOND

    # -- statistics ----------------------------------------------------------------------

    @property
    def first_start_time(self) -> float:
        if self._aggregate is not None:
            return self._aggregate.get("start_minimum", 0) / NS_PER_SECOND
        return float(np.min(self._start_times)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def last_end_time(self) -> float:
        if self._aggregate is not None:
            return self._aggregate.get("end_maximum", 0) / NS_PER_SECOND
        return float(np.max(self._end_times)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def num_calls(self) -> int:
        return self._num_calls

    @property
    def total_duration(self) -> float:
        if self._aggregate is not None:
            return self._aggregate["total"] / NS_PER_SECOND
        return float(np.sum(self._durations)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def gpu_total_duration(self) -> float | None:
        if self._aggregate is not None:
            if not self._aggregate.get("gpu_count", 0):
                return None
            return self._aggregate.get("gpu_total", 0) / NS_PER_SECOND
        if self._gpu_durations is None:
            return None
        return float(np.sum(self._gpu_durations)) / NS_PER_SECOND

    @property
    def inclusive_duration(self) -> float:
        return self.total_duration

    @property
    def total_exclusive_duration(self) -> float:
        """Stored total if the owner supplied one and per-call values are not built yet."""
        if self._aggregate is not None:
            return self._aggregate["exclusive"] / NS_PER_SECOND
        if not self.has_timing:
            return 0.0
        if self._exclusive_durations is None and self._exclusive_total_ns is not None:
            return self._exclusive_total_ns / NS_PER_SECOND
        return float(np.sum(self._resolved_exclusive_durations())) / NS_PER_SECOND

    @property
    def exclusive_duration(self) -> float:
        return self.total_exclusive_duration

    @property
    def average_duration(self) -> float:
        if self._aggregate is not None:
            return self.total_duration / self.num_calls if self.num_calls else 0.0
        return float(np.mean(self._durations)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def gpu_average_duration(self) -> float | None:
        if self._aggregate is not None:
            count = int(self._aggregate.get("gpu_count", 0))
            return self._aggregate.get("gpu_total", 0) / count / NS_PER_SECOND if count else None
        if self._gpu_durations is None or len(self._gpu_durations) == 0:
            return None
        return float(np.mean(self._gpu_durations)) / NS_PER_SECOND

    @property
    def min_duration(self) -> float:
        if self._aggregate is not None:
            return self._aggregate["minimum"] / NS_PER_SECOND
        return float(np.min(self._durations)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def max_duration(self) -> float:
        if self._aggregate is not None:
            return self._aggregate["maximum"] / NS_PER_SECOND
        return float(np.max(self._durations)) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def first_duration(self) -> float:
        if self._aggregate is not None:
            return self._aggregate.get("first", 0) / NS_PER_SECOND
        return float(self._durations[0]) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def last_duration(self) -> float:
        if self._aggregate is not None:
            return self._aggregate.get("last", 0) / NS_PER_SECOND
        return float(self._durations[-1]) / NS_PER_SECOND if self.has_timing else 0.0

    @property
    def std_duration(self) -> float:
        if self._aggregate is not None:
            count = int(self._aggregate.get("count", 0))
            m2 = self._aggregate.get("m2")
            return (
                float(np.sqrt(max(float(m2), 0.0) / count)) / NS_PER_SECOND
                if count and m2 is not None
                else 0.0
            )
        return float(np.std(self._durations)) / NS_PER_SECOND if self.has_timing else 0.0

    def percentile_duration(self, percentile: float) -> float | None:
        """Duration percentile in seconds (numpy linear); 0.0 when empty."""
        if not 0 <= percentile <= 100:
            raise ValueError("percentile must be between 0 and 100")
        if self._aggregate is not None and self.num_calls:
            return None
        return (
            float(np.percentile(self._durations, percentile)) / NS_PER_SECOND
            if self.has_timing
            else 0.0
        )

    @property
    def p50_duration(self) -> float | None:
        return self.percentile_duration(50)

    @property
    def p95_duration(self) -> float | None:
        return self.percentile_duration(95)

    @property
    def p99_duration(self) -> float | None:
        return self.percentile_duration(99)

    def __len__(self) -> int:
        return self.num_calls

    def __repr__(self) -> str:
        out = "-" * 60 + "\n"
        for key, value in self.get_summary().items():
            unit = "" if key == "num_calls" else " s"
            out += f"  {key:>18}: {value}{unit}\n"
        out += "-" * 60 + "\n\n"
        return out


# --------------------------------------------------------------------------- MPIRegion


class MPIRegion:
    """One named region across all ranks; ``region[rank]`` is the :class:`Region`."""

    def __init__(self, name: str, regions: dict[int, Region]) -> None:
        self._name = name
        self._regions = regions
        self.color = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def regions(self) -> dict[int, Region]:
        return self._regions

    @property
    def ranks(self) -> list[int]:
        return sorted(self._regions)

    @property
    def has_timing(self) -> bool:
        return any(region.has_timing for region in self._regions.values())

    @property
    def has_event_data(self) -> bool:
        return all(region.has_event_data for region in self._regions.values())

    def _first_captured(self, attr: str):
        for rank in self.ranks:
            value = getattr(self._regions[rank], attr)
            if value is not None:
                return value
        return None

    @property
    def has_source(self) -> bool:
        return self.source_file is not None

    @property
    def has_gpu_timing(self) -> bool:
        return any(region.has_gpu_timing for region in self._regions.values())

    @property
    def source_file(self) -> str | None:
        return self._first_captured("source_file")

    @property
    def source_lineno(self) -> int | None:
        return self._first_captured("source_lineno")

    @property
    def source_text(self) -> str | None:
        return self._first_captured("source_text")

    @property
    def tags(self) -> tuple[str, ...]:
        return self._first_captured("tags") or ()

    def get_summary(self) -> dict[str, Any]:
        summary = {
            "name": self.name,
            "num_ranks": len(self._regions),
            "num_calls": self.num_calls,
            "total_duration": self.total_duration,
            "inclusive_duration": self.inclusive_duration,
            "exclusive_duration": self.exclusive_duration,
            "average_duration": self.average_duration,
            "min_duration": self.min_duration,
            "max_duration": self.max_duration,
            "first_duration": self.first_duration,
            "last_duration": self.last_duration,
            "std_duration": self.std_duration,
        }
        if self.has_gpu_timing:
            summary["gpu_total_duration"] = self.gpu_total_duration
            summary["gpu_average_duration"] = self.gpu_average_duration
        return summary

    def events(self, ranks: list[int] | int | None = None, origin: float = 0.0) -> list[dict]:
        if ranks is None:
            selected = self.ranks
        elif isinstance(ranks, int):
            selected = [ranks]
        else:
            selected = list(ranks)
        events = []
        for rank in selected:
            region = self._regions.get(rank)
            if region is None:
                continue
            for event in region.events(origin=origin):
                events.append({"name": self.name, "rank": rank, **event})
        return events

    @property
    def durations(self) -> np.ndarray:
        values = [r.durations for r in self._regions.values() if r.has_timing]
        if not values:
            return np.array([], dtype=float)
        return np.concatenate(values)

    @property
    def gpu_durations(self) -> np.ndarray | None:
        values = [r.gpu_durations for r in self._regions.values() if r.gpu_durations is not None]
        if not values:
            return None
        return np.concatenate(values)

    @property
    def inclusive_durations(self) -> np.ndarray:
        return self.durations

    @property
    def exclusive_durations(self) -> np.ndarray:
        values = [r.exclusive_durations for r in self._regions.values() if r.has_timing]
        if not values:
            return np.array([], dtype=float)
        return np.concatenate(values)

    @property
    def num_calls(self) -> int:
        return sum(region.num_calls for region in self._regions.values())

    def num_calls_per_rank(self) -> dict[int, int]:
        return {rank: region.num_calls for rank, region in self._regions.items()}

    def average_durations(self) -> dict[int, float]:
        return {rank: region.average_duration for rank, region in self._regions.items()}

    def min_durations(self) -> dict[int, float]:
        return {rank: region.min_duration for rank, region in self._regions.items()}

    def max_durations(self) -> dict[int, float]:
        return {rank: region.max_duration for rank, region in self._regions.items()}

    def total_durations(self) -> dict[int, float]:
        return {rank: region.total_duration for rank, region in self._regions.items()}

    @property
    def total_duration(self) -> float:
        return sum(region.total_duration for region in self._regions.values())

    @property
    def gpu_total_duration(self) -> float | None:
        values = [
            r.gpu_total_duration for r in self._regions.values() if r.gpu_total_duration is not None
        ]
        if not values:
            return None
        return float(sum(values))

    @property
    def inclusive_duration(self) -> float:
        return self.total_duration

    @property
    def total_exclusive_duration(self) -> float:
        return sum(region.total_exclusive_duration for region in self._regions.values())

    @property
    def exclusive_duration(self) -> float:
        return self.total_exclusive_duration

    @property
    def average_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.mean(values))
        return self.total_duration / self.num_calls if self.num_calls else 0.0

    @property
    def gpu_average_duration(self) -> float | None:
        values = self.gpu_durations
        if values is not None and values.size:
            return float(np.mean(values))
        count = sum(
            int(r.stored_summary.get("gpu_count", 0))
            for r in self._regions.values()
            if r.stored_summary is not None
        )
        total = self.gpu_total_duration
        return total / count if total is not None and count else None

    @property
    def std_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.std(values))
        summaries = [
            r.stored_summary
            for r in self._regions.values()
            if r.num_calls and r.stored_summary is not None
        ]
        if not summaries or any("mean" not in s or "m2" not in s for s in summaries):
            return 0.0
        count = sum(int(s["count"]) for s in summaries)
        mean = sum(int(s["count"]) * float(s["mean"]) for s in summaries) / count
        m2 = sum(float(s["m2"]) + int(s["count"]) * (float(s["mean"]) - mean) ** 2 for s in summaries)
        return float(np.sqrt(max(m2, 0.0) / count)) / NS_PER_SECOND

    def percentile_duration(self, percentile: float) -> float | None:
        if not 0 <= percentile <= 100:
            raise ValueError("percentile must be between 0 and 100")
        values = self.durations
        if values.size:
            return float(np.percentile(values, percentile))
        return None if self.num_calls else 0.0

    @property
    def p50_duration(self) -> float | None:
        return self.percentile_duration(50)

    @property
    def p95_duration(self) -> float | None:
        return self.percentile_duration(95)

    @property
    def p99_duration(self) -> float | None:
        return self.percentile_duration(99)

    @property
    def rank_imbalance(self) -> float:
        totals = [region.total_duration for region in self._regions.values()]
        totals = [total for total in totals if total > 0]
        if len(totals) < 2:
            return 0.0
        return float(max(totals) / np.mean(totals))

    @property
    def rank_imbalance_pct(self) -> float:
        ratio = self.rank_imbalance
        return (ratio - 1.0) * 100.0 if ratio else 0.0

    @property
    def min_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.min(values))
        minimums = [r.min_duration for r in self._regions.values() if r.num_calls]
        return min(minimums) if minimums else 0.0

    @property
    def max_duration(self) -> float:
        values = self.durations
        if values.size:
            return float(np.max(values))
        maximums = [r.max_duration for r in self._regions.values() if r.num_calls]
        return max(maximums) if maximums else 0.0

    @property
    def first_duration(self) -> float:
        timed = [r for r in self._regions.values() if r.has_timing]
        if not timed:
            return 0.0
        return min(timed, key=lambda r: r.first_start_time).first_duration

    @property
    def last_duration(self) -> float:
        timed = [r for r in self._regions.values() if r.has_timing]
        if not timed:
            return 0.0
        return max(timed, key=lambda r: r.last_end_time).last_duration

    @property
    def first_start_time(self) -> float:
        starts = [r.first_start_time for r in self._regions.values() if r.has_timing]
        return min(starts) if starts else 0.0

    @property
    def last_end_time(self) -> float:
        ends = [r.last_end_time for r in self._regions.values() if r.has_timing]
        return max(ends) if ends else 0.0

    def __getitem__(self, rank: int) -> Region:
        try:
            return self._regions[rank]
        except KeyError:
            raise KeyError(
                f"Region {self._name!r} has no data for rank {rank}. "
                f"Available ranks: {self.ranks}",
            ) from None

    def __iter__(self) -> Iterator[int]:
        return iter(self.ranks)

    def __contains__(self, rank: int) -> bool:
        return rank in self._regions

    def __len__(self) -> int:
        return len(self._regions)

    def __repr__(self) -> str:
        return (
            f"<MPIRegion {self._name!r}: {self.num_calls} calls on "
            f"{len(self._regions)} rank(s), "
            f"total {self.total_duration:.6g} s, avg {self.average_duration:.6g} s>"
        )


# --------------------------------------------------------------------------- ProfilingResults


def _region_from_row(row: dict) -> Region:
    """A :class:`Region` over one ``NativeRun.row()`` dict (arrays are views, not copies)."""
    gpu = row["gpu_ns"]
    if gpu is not None and not (gpu.size and bool((gpu >= 0).any())):
        gpu = None
    metadata = row["event_metadata"]
    if metadata is not None:
        metadata = json.loads(metadata)
        if not metadata:
            metadata = None
    source_file = row["source_file"] or None
    source_line = row["source_line"]
    if source_line is not None and source_line < 0:
        source_line = None
    return Region(
        row["start_ns"],
        row["end_ns"],
        gpu_durations=gpu,
        call_ids=row["call_ids"],
        parent_ids=row["parent_ids"],
        thread_ids=row["thread_ids"],
        task_ids=row["task_ids"],
        await_times=row["await_ns"],
        event_metadata=metadata,
        source_file=source_file,
        source_lineno=source_line,
        source_text=row["source_text"] or None,
        tags=tuple(row["tags"]),
    )


class ProfilingResults:
    """The profiling data of one run: an ordered mapping of region name to
    :class:`MPIRegion`. ``results["solve"][0].average_duration`` is rank 0's
    average in seconds. Built from a file (:meth:`from_h5` / ``read_h5``), at
    ``finalize()`` from the in-memory run, or directly from regions.
    """

    _exclusive_populated: bool

    def __init__(
        self,
        regions: dict[str, MPIRegion],
        metadata: dict | None = None,
        num_ranks: int | None = None,
        likwid: dict | None = None,
        perf_events: dict | None = None,
        line_profile: dict | None = None,
        file_path: str | Path = "",
        is_root: bool = True,
        exclusive_totals: dict[str, dict[int, int]] | None = None,
        event_data_available: bool = True,
        threads: dict[int, list] | None = None,
        tasks: dict[int, list] | None = None,
    ) -> None:
        self._is_root = is_root
        self._region_dict = dict(regions)
        self._metadata = dict(metadata or {})
        self._likwid = dict(likwid or {})
        self._perf_events = dict(perf_events or {})
        self._line_profile = dict(line_profile or {})
        self._file_path = Path(file_path)
        self._event_data_available = bool(event_data_available)
        self._threads = {int(rank): list(rows) for rank, rows in (threads or {}).items()}
        self._tasks = {int(rank): list(rows) for rank, rows in (tasks or {}).items()}
        if num_ranks is None:
            num_ranks = len({rank for region in self._region_dict.values() for rank in region})
        self._num_ranks = num_ranks
        # The run in Rust these regions view, and (name, rank) -> row position, set by
        # _from_native. Only used while the region set is exactly the native run's.
        self._native = None
        self._native_rows: dict[tuple[str, int], int] | None = None
        self._fallback_native = None
        self._native_table_sizes: tuple[int, int] | None = None

        self._run_start_time = self._metadata_time("start_time_ns")
        self._finalize_time = self._metadata_time("finalize_time_ns")
        self._exclusive_populated = False
        totals = exclusive_totals or {}
        for name, region in self._region_dict.items():
            for rank, rank_region in region.regions.items():
                rank_region._attach_exclusive_resolver(self._populate_exclusive_durations)
                stored = totals.get(name, {}).get(rank)
                if stored is not None:
                    rank_region._set_exclusive_total(stored)

    # -- construction ---------------------------------------------------------------

    @classmethod
    def _from_native(cls, native, *, is_root: bool = True) -> ProfilingResults:
        """Results over a ``_native.NativeRun`` (read from a file or just recorded)."""
        regions: dict[str, dict[int, Region]] = {name: {} for name in native.region_names}
        totals: dict[str, dict[int, int]] = {}
        positions: dict[tuple[str, int], int] = {}
        for position, row in enumerate(native.rows()):
            name, rank = row["name"], int(row["rank"])
            regions.setdefault(name, {})[rank] = _region_from_row(row)
            positions[(name, rank)] = position
            if row["exclusive_total_ns"] is not None and row["exclusive_total_ns"] >= 0:
                totals.setdefault(name, {})[rank] = int(row["exclusive_total_ns"])
        threads: dict[int, list[ThreadInfo]] = {}
        for rank, index, ident, native_id, daemon, start, end, cpu, name in native.threads():
            threads.setdefault(rank, []).append(
                ThreadInfo(index, rank, name, ident, native_id, daemon, start, end, cpu),
            )
        tasks: dict[int, list[TaskInfo]] = {}
        for row in native.tasks():
            (rank, index, thread_index, created, done, steps, running, suspended, kind, name,
             coro_name) = row
            tasks.setdefault(rank, []).append(
                TaskInfo(index, rank, kind, name, coro_name, thread_index, created, done, steps,
                         running, suspended),
            )
        results = cls(
            {name: MPIRegion(name, per_rank) for name, per_rank in regions.items() if per_rank},
            metadata=native.metadata(),
            num_ranks=int(native.num_ranks),
            file_path=native.file_path,
            is_root=is_root,
            exclusive_totals=totals,
            threads=threads,
            tasks=tasks,
        )
        results._native = native
        results._native_rows = positions
        results._native_table_sizes = (
            sum(map(len, threads.values())),
            sum(map(len, tasks.values())),
        )
        return results

    @classmethod
    def from_h5(cls, file_path: str | Path, verbose: bool = False) -> ProfilingResults:
        """Load a profile file (schema 1-3); same as :func:`scope_profiler.read_h5`."""
        from . import _native

        native = _native.NativeRun.read_h5(os.fspath(file_path))
        if verbose:
            print(f"Read {native.file_path}: {len(native)} region row(s), "
                  f"{native.num_ranks} rank(s)")
        return cls._from_native(native)

    def _owns_native(self) -> bool:
        """Whether the region set is still exactly the native run's rows."""
        if self._native is None or self._native_rows is None:
            return False
        count = sum(len(region.regions) for region in self._region_dict.values())
        return count == len(self._native_rows) == len(self._native)

    def _native_run(self):
        """A ``NativeRun`` for the Rust analyses: the one these results view, or one built
        (copied) from the current regions and lane tables."""
        if self._owns_native():
            return self._native
        if self._fallback_native is not None:
            return self._fallback_native
        from . import _native

        rows = []
        for name, region in self._region_dict.items():
            for rank in region.ranks:
                data = region.regions[rank]
                rows.append({
                    "name": name,
                    "rank": int(rank),
                    "start_ns": np.ascontiguousarray(data.start_times_ns, dtype=np.int64),
                    "end_ns": np.ascontiguousarray(data.end_times_ns, dtype=np.int64),
                    "thread_ids": data.thread_ids,
                    "task_ids": data.task_ids,
                    "await_ns": data.await_times_ns,
                    "call_ids": data.call_ids,
                    "parent_ids": data.parent_ids,
                    "gpu_ns": data.gpu_durations_ns,
                    "source_file": data.source_file,
                    "source_line": data.source_lineno,
                    "source_text": data.source_text,
                    "tags": list(data.tags),
                })
        threads = [t._to_tuple() for rank in sorted(self._threads) for t in self._threads[rank]]
        tasks = [t._to_tuple() for rank in sorted(self._tasks) for t in self._tasks[rank]]
        metadata = {k: v for k, v in self._metadata.items() if v is not None}
        self._fallback_native = _native.NativeRun.from_columns(
            list(self._region_dict), rows, threads, tasks, metadata,
            int(self._num_ranks or 0), os.fspath(self._file_path),
        )
        return self._fallback_native

    def _populate_exclusive_durations(self) -> None:
        """Per-call exclusive durations for every rank and region, once (in Rust)."""
        from .call_stack import exclusive_by_region

        if self._exclusive_populated:
            return
        self._exclusive_populated = True
        ranks = sorted({rank for region in self._region_dict.values() for rank in region.ranks})
        if self._owns_native():
            by_position = {pos: key for key, pos in self._native_rows.items()}
            for rank in ranks:
                for position, values in self._native.exclusive_by_row(rank):
                    name, row_rank = by_position[position]
                    self._region_dict[name].regions[row_rank]._set_exclusive_durations(values)
            return
        for rank in ranks:
            for name, values in exclusive_by_region(self._region_dict.values(), rank).items():
                self._region_dict[name].regions[rank]._set_exclusive_durations(values)

    def _metadata_time(self, key: str) -> float | None:
        value = self._metadata.get(key)
        if value is None:
            return None
        try:
            return float(value) / NS_PER_SECOND
        except (TypeError, ValueError):
            return None

    # -- mapping ----------------------------------------------------------------------

    def get_region(self, region_name: str) -> MPIRegion:
        try:
            return self._region_dict[region_name]
        except KeyError:
            raise KeyError(
                f"No region named {region_name!r} in {self.file_path}. "
                f"Available regions: {self.region_names}",
            ) from None

    def __getitem__(self, region_name: str) -> MPIRegion:
        return self.get_region(region_name)

    def __iter__(self) -> Iterator[MPIRegion]:
        return iter(self._region_dict.values())

    def __contains__(self, region_name: str) -> bool:
        return region_name in self._region_dict

    def __len__(self) -> int:
        return len(self._region_dict)

    @property
    def region_names(self) -> list[str]:
        return list(self._region_dict)

    def get_regions(
        self,
        include: list[str] | str | None = None,
        exclude: list[str] | str | None = None,
    ) -> list[MPIRegion]:
        """Regions filtered by ``re.match`` patterns, sorted by earliest first start."""
        if isinstance(include, str):
            include = [include]
        if isinstance(exclude, str):
            exclude = [exclude]
        regions = []
        for name, region in self._region_dict.items():
            if include is not None and not any(re.match(p, name) for p in include):
                continue
            if exclude is not None and any(re.match(p, name) for p in exclude):
                continue
            regions.append(region)
        regions.sort(key=lambda r: min((x.first_start_time for x in r.regions.values()), default=0.0))
        return regions

    # -- summaries ------------------------------------------------------------------

    @staticmethod
    def _summary_row(region: MPIRegion) -> dict:
        return {
            **region.get_summary(),
            "inclusive_duration": region.inclusive_duration,
            "exclusive_duration": region.exclusive_duration,
            "tags": region.tags,
            "p50_duration": region.p50_duration,
            "p95_duration": region.p95_duration,
            "p99_duration": region.p99_duration,
            "rank_imbalance": region.rank_imbalance,
            "rank_imbalance_pct": region.rank_imbalance_pct,
            "p50": region.p50_duration,
            "p95": region.p95_duration,
            "p99": region.p99_duration,
            "imbalance": region.rank_imbalance_pct,
        }

    def summary(self, include=None, exclude=None) -> list[dict]:
        """One dict per region (``get_regions`` order)."""
        return [self._summary_row(r) for r in self.get_regions(include=include, exclude=exclude)]

    def to_dataframe(self, include=None, exclude=None, per_rank: bool = False):
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "to_dataframe() requires pandas. Install scope-profiler[pproc] "
                "or pandas directly.",
            ) from exc
        regions = self.get_regions(include=include, exclude=exclude)
        if not per_rank:
            return pd.DataFrame(self._summary_row(region) for region in regions)
        rows = []
        for region in regions:
            for rank in region.ranks:
                data = region[rank]
                rows.append({
                    "name": region.name,
                    "rank": rank,
                    **data.get_summary(),
                    "inclusive_duration": data.inclusive_duration,
                    "exclusive_duration": data.exclusive_duration,
                    "p50_duration": data.p50_duration,
                    "p95_duration": data.p95_duration,
                    "p99_duration": data.p99_duration,
                })
        return pd.DataFrame(rows)

    def _require_event_data(self, operation: str) -> None:
        if not self._event_data_available:
            raise EventDataUnavailableError(
                f"{operation}() requires per-call events, but this profile was "
                "loaded with read_h5_summary(); load it with read_h5()",
            )

    def events(self, include=None, exclude=None, ranks=None, relative: bool = True,
               origin: float | None = None) -> list[dict]:
        """One dict per call: region order (get_regions) -> rank -> recorded order."""
        self._require_event_data("events")
        if origin is None:
            origin = self.time_origin if relative else 0.0
        events = []
        for region in self.get_regions(include=include, exclude=exclude):
            events.extend(region.events(ranks=ranks, origin=origin))
        return events

    def to_events_dataframe(self, include=None, exclude=None, ranks=None, relative: bool = True,
                            origin: float | None = None):
        self._require_event_data("to_events_dataframe")
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "to_events_dataframe() requires pandas. Install "
                "scope-profiler[pproc] or pandas directly.",
            ) from exc
        events = self.events(include=include, exclude=exclude, ranks=ranks, relative=relative,
                             origin=origin)
        columns = ["name", "rank", "call_index", "start", "end", "duration"]
        if any("gpu_duration" in event for event in events):
            columns.append("gpu_duration")
        return pd.DataFrame(events, columns=columns)

    def call_stack(self, rank: int = 0, include=None, exclude=None, relative: bool = True,
                   origin: float | None = None) -> list[dict]:
        """``build_call_stack`` over ``get_regions(include, exclude)`` (spec-callstack §6)."""
        self._require_event_data("call_stack")
        from .call_stack import build_call_stack

        if origin is None:
            origin = self.time_origin if relative else 0.0
        return build_call_stack(self.get_regions(include=include, exclude=exclude), rank=rank,
                                origin=origin)

    def call_graph(self, rank: int = 0, include=None, exclude=None) -> list[dict]:
        """Call relationships (``call_id, parent_id, name, call_index, depth``)."""
        retained = {r.name for r in self.get_regions(include=include, exclude=exclude)}
        on_rank = [r for r in self.get_regions() if rank in r.regions]
        explicit = bool(on_rank) and all(r.regions[rank].call_ids is not None for r in on_rank)
        if not explicit:
            return [
                {
                    "call_id": call["call_id"],
                    "parent_id": call["parent"],
                    "name": call["name"],
                    "call_index": call["call_index"],
                    "depth": call["depth"],
                }
                for call in self.call_stack(rank=rank, include=include, exclude=exclude)
            ]
        parent_of: dict[int, int | None] = {}
        kept: dict[int, tuple[str, int]] = {}
        for region in on_rank:
            data = region.regions[rank]
            keep = region.name in retained
            for index, (call_id, parent_id) in enumerate(
                zip(data.call_ids.tolist(), data.parent_ids.tolist()),
            ):
                parent_of[call_id] = None if parent_id < 0 else parent_id
                if keep:
                    kept[call_id] = (region.name, index)
        nearest: dict[int, int | None] = {}
        depths: dict[int, int] = {}
        for call_id in sorted(parent_of):
            parent_id = parent_of[call_id]
            if parent_id is None:
                ancestor = None
            elif parent_id in kept:
                ancestor = parent_id
            else:
                ancestor = nearest.get(parent_id)
            nearest[call_id] = ancestor
            if call_id in kept:
                depths[call_id] = 0 if ancestor is None else depths[ancestor] + 1
        return [
            {
                "call_id": call_id,
                "parent_id": nearest[call_id],
                "name": kept[call_id][0],
                "call_index": kept[call_id][1],
                "depth": depths[call_id],
            }
            for call_id in sorted(kept)
        ]

    # -- lanes --------------------------------------------------------------------------

    @property
    def threads(self) -> dict[int, list[ThreadInfo]]:
        """``{rank: [ThreadInfo, ...]}`` in index order; ``{}`` when not tracked."""
        return self._threads

    @property
    def tasks(self) -> dict[int, list[TaskInfo]]:
        """``{rank: [TaskInfo, ...]}`` in creation order; ``{}`` without tasks."""
        return self._tasks

    def lane_label(self, lane: int, rank: int = 0) -> str:
        """``"MainThread"``, ``"Task-2 (fetch) on MainThread"``, ``"unknown lane"``, ..."""
        lane = int(lane)
        rank = int(rank)
        if self._owns_native() and self._native_tables_current():
            return self._native.lane_label(lane, rank)
        if lane >= 0:
            for task in self._tasks.get(rank, []):
                if task.index == lane:
                    thread = self.lane_label(-2 - task.thread_index, rank)
                    tail = task.coro_name.rsplit(".", 1)[-1]
                    return f"{task.name} ({tail}) on {thread}"
            return f"task {lane}"
        if lane == -1:
            return "unknown lane"
        index = -2 - lane
        for thread in self._threads.get(rank, []):
            if thread.index == index:
                return thread.name
        return f"thread {index}"

    def _native_tables_current(self) -> bool:
        return self._native_table_sizes == (
            sum(map(len, self._threads.values())),
            sum(map(len, self._tasks.values())),
        )

    def thread_summary(self, rank: int = 0) -> list[dict]:
        """Per-thread wall time, CPU time, call count and root-call time (spec-results §4).

        Keys: ``index, name, alive, wall_time, cpu_time, num_calls, region_time``;
        ``[]`` when ``rank`` has no thread table. Raises ``NestingError`` when the
        rank cannot be reconstructed.
        """
        rank = int(rank)
        threads = self._threads.get(rank, [])
        if not threads:
            return []
        return self._native_run().thread_summary(rank)

    # -- metadata, times ------------------------------------------------------------------

    @property
    def metadata(self) -> dict:
        return self._metadata

    @property
    def num_ranks(self) -> int:
        return self._num_ranks

    @property
    def num_nodes(self) -> int | None:
        value = self.metadata.get("num_nodes")
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError):
                return None
        return 1 if self._num_ranks == 1 else None

    @property
    def file_path(self) -> Path:
        return self._file_path

    @property
    def label(self) -> str | None:
        label = self._metadata.get("label")
        return str(label) if label else None

    @label.setter
    def label(self, value: str | None) -> None:
        if value:
            self._metadata["label"] = str(value)
        else:
            self._metadata.pop("label", None)

    @property
    def display_label(self) -> str:
        return self.label or self._file_path.stem

    @property
    def is_root(self) -> bool:
        return self._is_root

    @property
    def has_event_data(self) -> bool:
        return self._event_data_available

    @property
    def line_profile(self) -> dict:
        return self._line_profile

    @property
    def has_likwid(self) -> bool:
        return any(self._likwid.values())

    @property
    def likwid_ranks(self) -> list[int]:
        return sorted(rank for rank, regions in self._likwid.items() if regions)

    def get_likwid_regions(self, rank: int | None = None) -> dict:
        if rank is None:
            return dict(self._likwid)
        return self._likwid.get(rank, {})

    @property
    def has_perf_events(self) -> bool:
        return any(self._perf_events.values())

    def get_perf_events(self, rank: int | None = None) -> dict:
        if rank is None:
            return dict(self._perf_events)
        return self._perf_events.get(rank, {})

    @property
    def run_start_time(self) -> float | None:
        return self._run_start_time

    @property
    def finalize_time(self) -> float | None:
        return self._finalize_time

    @property
    def total_time(self) -> float | None:
        if self._run_start_time is None or self._finalize_time is None:
            return None
        return self._finalize_time - self._run_start_time

    @property
    def minimum_start_time(self) -> float:
        starts = [r.first_start_time for r in self.get_regions() if r.has_timing]
        return min(starts) if starts else 0.0

    @property
    def maximum_end_time(self) -> float:
        ends = [r.last_end_time for r in self.get_regions() if r.has_timing]
        return max(ends) if ends else 0.0

    @property
    def time_origin(self) -> float:
        if self._run_start_time is not None:
            return self._run_start_time
        return self.minimum_start_time

    @property
    def startup_time(self) -> float:
        return self.minimum_start_time - self.time_origin

    @property
    def time_span(self) -> float:
        if not any(region.has_timing for region in self.get_regions()):
            return 0.0
        return self.maximum_end_time - self.minimum_start_time

    # -- printing ---------------------------------------------------------------------

    def default_title(self) -> str:
        rank_label = "rank" if self.num_ranks == 1 else "ranks"
        try:
            path = os.path.relpath(self.file_path)
        except ValueError:
            path = str(self.file_path)
        title = f"{path} ({self.num_ranks} {rank_label})"
        if self.label is not None:
            title = f"{self.label} - {title}"
        return title

    def print_summary(
        self,
        include=None,
        exclude=None,
        ranks: list[int] | None = None,
        sort: str = "start",
        title: str | None = None,
        stream=None,
        suppress_notes: bool = False,
        columns=None,
        percentage_mode: str = "coverage",
    ) -> None:
        """Print a region table (calls, total/avg/min/max, inclusive/exclusive, seconds)
        and, when threads were tracked, one per-thread table per rank.

        ``columns`` and ``percentage_mode`` are accepted for compatibility and ignored.
        Does nothing on a non-root result set.
        """
        if not self._is_root:
            return
        out = sys.stdout if stream is None else stream
        write = lambda line="": print(line, file=out)  # noqa: E731
        regions = self.get_regions(include=include, exclude=exclude)
        selected = None if ranks is None else {int(r) for r in ([ranks] if isinstance(ranks, int) else ranks)}

        def stats(region: MPIRegion) -> dict:
            parts = [region.regions[r] for r in region.ranks if selected is None or r in selected]
            durations = [p.durations for p in parts if p.has_timing]
            pooled = np.concatenate(durations) if durations else np.array([], dtype=float)
            calls = sum(p.num_calls for p in parts)
            total = sum(p.total_duration for p in parts)
            return {
                "name": region.name,
                "calls": calls,
                "total": total,
                "avg": float(pooled.mean()) if pooled.size else 0.0,
                "min": float(pooled.min()) if pooled.size else 0.0,
                "max": float(pooled.max()) if pooled.size else 0.0,
                "std": float(pooled.std()) if pooled.size else 0.0,
                "incl": total,
                "excl": sum(p.exclusive_duration for p in parts),
                "start": min((p.first_start_time for p in parts if p.has_timing), default=0.0),
            }

        rows = [stats(region) for region in regions]
        keys = {"total": "total", "calls": "calls", "avg": "avg", "min": "min", "max": "max",
                "std": "std", "name": "name", "start": "start"}
        key = keys.get(sort, "start")
        if key != "start":
            rows.sort(key=lambda r: r[key], reverse=key not in ("name",))
        write(title if title is not None else self.default_title())
        if not rows:
            write("  (no regions)")
            return
        width = max(6, *(len(r["name"]) for r in rows))
        header = (f"  {'region':<{width}}  {'calls':>8}  {'total':>11}  {'avg':>11}  {'min':>11}"
                  f"  {'max':>11}  {'inclusive':>11}  {'exclusive':>11}")
        write(header)
        write("  " + "-" * (len(header) - 2))
        for r in rows:
            write(f"  {r['name']:<{width}}  {r['calls']:>8}  {r['total']:>11.6f}  {r['avg']:>11.6f}"
                  f"  {r['min']:>11.6f}  {r['max']:>11.6f}  {r['incl']:>11.6f}  {r['excl']:>11.6f}")
        if self.total_time is not None:
            write(f"  run time (setup -> finalize): {self.total_time:.6f} s")
        for rank in sorted(self._threads):
            if selected is not None and rank not in selected:
                continue
            thread_rows = self.thread_summary(rank)
            if not thread_rows:
                continue
            write()
            write(f"  threads on rank {rank}")
            nwidth = max(4, *(len(t["name"]) for t in thread_rows))
            head = (f"  {'index':>5}  {'name':<{nwidth}}  {'alive':>5}  {'wall':>11}  {'cpu':>11}"
                    f"  {'calls':>8}  {'in regions':>11}")
            write(head)
            write("  " + "-" * (len(head) - 2))
            for t in thread_rows:
                wall = "-" if t["wall_time"] is None else f"{t['wall_time']:.6f}"
                write(f"  {t['index']:>5}  {t['name']:<{nwidth}}  {str(t['alive']):>5}  {wall:>11}"
                      f"  {t['cpu_time']:>11.6f}  {t['num_calls']:>8}  {t['region_time']:>11.6f}")
        if not suppress_notes:
            write()
            write("  Durations are in seconds. Regions may nest, so the summed total can "
                  "exceed the wall-clock time.")

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.file_path.name!r}: "
            f"{len(self._region_dict)} region(s), {self._num_ranks} rank(s)>"
        )


def merge_results(*result_sets, label: str | None = None, file_path=None) -> ProfilingResults:
    """Combine several result sets into one (e.g. a Python driver and its native code).

    Non-root sets are ignored; ``ValueError`` if none are given or a region name
    appears in two sets. Earlier sets' metadata win; ``num_ranks`` is the maximum.
    Unlike the reference, thread and task tables are kept: for each rank, the
    tables of the first set that has one for that rank (a region's ``thread_ids``
    index its own set's table, so tables of two sets for one rank are not combined).
    """
    if not result_sets:
        raise ValueError("merge_results() needs at least one result set")
    roots = [results for results in result_sets if results.is_root]
    if not roots:
        return result_sets[0]
    seen: dict[str, int] = {}
    for index, results in enumerate(roots):
        for name in results.region_names:
            if name in seen and seen[name] != index:
                raise ValueError(
                    f"region {name!r} appears in more than one result set; "
                    f"merging them would double-count it. Give the regions "
                    f"distinct names (a 'fortran:' prefix, say) before merging.",
                )
            seen[name] = index
    merged: dict[str, MPIRegion] = {}
    metadata: dict = {}
    likwid: dict[int, dict] = {}
    threads: dict[int, list] = {}
    tasks: dict[int, list] = {}
    num_ranks = 0
    for results in roots:
        metadata = {**results.metadata, **metadata}
        for rank, regions in results.get_likwid_regions().items():
            likwid.setdefault(rank, {}).update(regions)
        for rank, rows in results.threads.items():
            threads.setdefault(rank, list(rows))
        for rank, rows in results.tasks.items():
            tasks.setdefault(rank, list(rows))
        num_ranks = max(num_ranks, results.num_ranks)
        for region in results.get_regions():
            merged[region.name] = region
    if label is not None:
        metadata["label"] = label
    return ProfilingResults(
        merged,
        metadata=metadata,
        num_ranks=num_ranks,
        likwid=likwid,
        file_path=file_path if file_path is not None else roots[0].file_path,
        threads=threads,
        tasks=tasks,
    )
