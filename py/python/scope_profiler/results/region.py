"""``Region``: one region's calls on one rank (int64 ns columns, statistics in seconds)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import NS_PER_SECOND, EventDataUnavailableError, _int64
from .stats import DurationStats, check_percentile

__all__ = ["Region"]


class Region(DurationStats):
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
        # (native run, row) whose call/parent ids are held bit-packed: decoded on first use
        self._packed_ids = None
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
                resolver(self)
            if self._exclusive_durations is None:
                self._exclusive_durations = self._durations.copy()
        return self._exclusive_durations

    # -- summaries ------------------------------------------------------------------

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
        call_ids, parent_ids = self.call_ids, self.parent_ids
        ids = (
            (call_ids.tolist(), parent_ids.tolist())
            if call_ids is not None and parent_ids is not None
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
            call_ids=select(self.call_ids),
            parent_ids=select(self.parent_ids),
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

            def resolve(_region=None) -> None:
                part._exclusive_durations = owner._resolved_exclusive_durations()[mask]

            part._exclusive_resolver = resolve
        return part

    def _unpack_ids(self) -> None:
        packed = self._packed_ids
        if packed is not None:
            self._packed_ids = None
            native, row = packed
            self._call_ids, self._parent_ids = native.row_ids(row)

    @property
    def call_ids(self):
        """Call id per call (int64; ids are unique per rank), or None without a call graph.
        A loaded file's ids are held bit-packed in Rust and decoded on first access."""
        self._unpack_ids()
        return self._call_ids

    @property
    def parent_ids(self):
        """Call id of each call's enclosing call on its lane (-1 for a root; int64), or None
        without a call graph. Decoded on first access, like :attr:`call_ids`."""
        self._unpack_ids()
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
        check_percentile(percentile)
        if self._aggregate is not None and self.num_calls:
            return None
        return (
            float(np.percentile(self._durations, percentile)) / NS_PER_SECOND
            if self.has_timing
            else 0.0
        )

    def __len__(self) -> int:
        return self.num_calls

    def __repr__(self) -> str:
        out = "-" * 60 + "\n"
        for key, value in self.get_summary().items():
            unit = "" if key == "num_calls" else " s"
            out += f"  {key:>18}: {value}{unit}\n"
        out += "-" * 60 + "\n\n"
        return out
