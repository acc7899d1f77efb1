"""Data frames of a run: Arrow tables built in Rust, exported through the Arrow PyCapsule
interface (``__arrow_c_stream__``), so ``polars.DataFrame(t)`` and ``pyarrow.table(t)``
take them without copying. Polars, pandas and pyarrow are optional: each is imported only
by the method that needs it.

Tables (every ``*_frame`` method returns an object with ``__arrow_c_stream__``):

* ``to_arrow(include, exclude, per_rank=False)``: the region summary (``summary()`` keys,
  or the ``to_dataframe(per_rank=True)`` columns);
* ``threads_frame()`` / ``tasks_frame()``: the lane tables of every rank (``ThreadInfo`` /
  ``TaskInfo`` fields, seconds since the run start);
* ``thread_summary_frame(rank=0)``: ``thread_summary(rank)``;
* ``events_frame(include, exclude, ranks, relative, origin)``: ``events()`` as columns,
  with the lane columns ``thread``, ``task``, ``await_duration`` kept.

``to_polars(...)`` / ``to_pandas(...)`` convert the summary table (pass ``table=`` any
frame above to convert that one instead).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import NS_PER_SECOND

_SUMMARY_KINDS = {
    "name": "str",
    "num_ranks": "int",
    "rank": "int",
    "num_calls": "int",
    "tags": "str_list",
}


def _kind(key: str, values: list) -> str:
    if key in _SUMMARY_KINDS:
        return _SUMMARY_KINDS[key]
    if all(v is None or isinstance(v, bool) for v in values) and any(v is not None for v in values):
        return "bool"
    return "float"


def _columns_table(rows: list[dict], keys: list[str]):
    from .. import _native

    columns = []
    for key in keys:
        values = [row.get(key) for row in rows]
        kind = _kind(key, values)
        if kind == "str_list":
            values = [None if v is None else list(v) for v in values]
        elif kind == "float":
            values = [None if v is None else float(v) for v in values]
        columns.append((key, kind, values))
    return _native.table_from_columns(columns)


def polars_frame(table):
    """``polars.DataFrame`` over an Arrow table (PyCapsule stream, no copy)."""
    try:
        import polars as pl
    except ImportError as exc:
        raise ImportError("to_polars() requires polars (pip install polars)") from exc
    return pl.DataFrame(table)


def pandas_frame(table):
    """``pandas.DataFrame`` of an Arrow table (through pyarrow)."""
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise ImportError(
            "to_pandas() converts Arrow tables with pyarrow (pip install pyarrow); "
            "to_dataframe() and to_events_dataframe() need only pandas",
        ) from exc
    return pa.table(table).to_pandas()


class FramesMixin:
    """Frame methods of :class:`~scope_profiler.results.ProfilingResults`."""

    # -- rows --------------------------------------------------------------------

    def _per_rank_rows(self, include=None, exclude=None) -> list[dict]:
        rows = []
        for region in self.get_regions(include=include, exclude=exclude):
            for rank in region.ranks:
                data = region[rank]
                rows.append(
                    {
                        "name": region.name,
                        "rank": rank,
                        **data.get_summary(),
                        "p50_duration": data.p50_duration,
                        "p95_duration": data.p95_duration,
                        "p99_duration": data.p99_duration,
                    }
                )
        return rows

    def _event_rows(self, include, exclude, ranks) -> list[int]:
        """Row positions in the native run of the selected (region, rank) pairs, in
        ``events()`` order: get_regions order, then ranks ascending."""
        if ranks is None:
            selected = None
        elif isinstance(ranks, int):
            selected = {int(ranks)}
        else:
            selected = {int(r) for r in ranks}
        positions = self._native_positions()
        rows = []
        for region in self.get_regions(include=include, exclude=exclude):
            for rank in region.ranks:
                if selected is None or rank in selected:
                    rows.append(positions[(region.name, rank)])
        return rows

    # -- Arrow tables ------------------------------------------------------------------

    def to_arrow(self, include=None, exclude=None, per_rank: bool = False):
        """The region summary as an Arrow table (``__arrow_c_stream__``): ``summary()``
        keys, or with ``per_rank=True`` the ``to_dataframe(per_rank=True)`` columns."""
        if per_rank:
            rows = self._per_rank_rows(include=include, exclude=exclude)
        else:
            rows = self.summary(include=include, exclude=exclude)
        if not rows and (include is not None or exclude is not None):
            raise ValueError("No regions matched the selected filters.")
        keys: list[str] = []
        for row in rows:
            keys.extend(k for k in row if k not in keys)
        if not keys:  # a run without regions: an empty table with the summary's columns
            keys = [
                "name",
                "num_ranks",
                "num_calls",
                "total_duration",
                "inclusive_duration",
                "exclusive_duration",
                "average_duration",
                "min_duration",
                "max_duration",
                "first_duration",
                "last_duration",
                "std_duration",
            ]
        return _columns_table(rows, keys)

    def threads_frame(self):
        """Thread table of every rank (``rank, index, name, ident, native_id, daemon,
        start_time, end_time, cpu_time, alive, wall_time``) as an Arrow table."""
        return self._native_run().threads_frame()

    def tasks_frame(self):
        """Task table of every rank (``rank, index, kind, name, coro_name, thread_index,
        created_time, done_time, steps, running_time, awaiting_time, done, wall_time``)."""
        return self._native_run().tasks_frame()

    def thread_summary_frame(self, rank: int = 0):
        """``thread_summary(rank)`` as an Arrow table (cached reconstruction)."""
        return self._native_run().thread_summary_frame(int(rank))

    def events_frame(
        self,
        include=None,
        exclude=None,
        ranks=None,
        relative: bool = True,
        origin: float | None = None,
    ):
        """``events()`` as an Arrow table, lane columns (``thread``, ``task``,
        ``await_duration``) and ``call_id``/``parent_id`` kept; no ``metadata`` column."""
        self._require_event_data("events_frame")
        if origin is None:
            origin = self.time_origin if relative else 0.0
        rows = self._event_rows(include, exclude, ranks)
        return self._native_run().events_frame(rows, float(origin))

    # -- data-frame libraries ---------------------------------------------------------

    def to_polars(self, include=None, exclude=None, per_rank: bool = False, *, table=None):
        """``polars.DataFrame`` of the summary (or of ``table``, any ``*_frame()``)."""
        if table is None:
            table = self.to_arrow(include=include, exclude=exclude, per_rank=per_rank)
        return polars_frame(table)

    def to_pandas(self, include=None, exclude=None, per_rank: bool = False, *, table=None):
        """``pandas.DataFrame`` of the summary (or of ``table``) through pyarrow."""
        if table is None:
            table = self.to_arrow(include=include, exclude=exclude, per_rank=per_rank)
        return pandas_frame(table)

    def _events_columns(self, include, exclude, ranks, origin: float) -> dict[str, Any]:
        """``events()`` as numpy columns (for pandas without pyarrow)."""
        if ranks is None:
            selected = None
        elif isinstance(ranks, int):
            selected = {int(ranks)}
        else:
            selected = {int(r) for r in ranks}
        parts = []
        for region in self.get_regions(include=include, exclude=exclude):
            for rank in region.ranks:
                if selected is None or rank in selected:
                    parts.append((region.name, rank, region.regions[rank]))
        n = sum(p[2].num_calls for p in parts)

        def cat(get, fill, dtype):
            if not any(get(p[2]) is not None for p in parts):
                return None
            return (
                np.concatenate(
                    [
                        np.asarray(get(p[2]), dtype=dtype)
                        if get(p[2]) is not None
                        else np.full(p[2].num_calls, fill, dtype=dtype)
                        for p in parts
                    ]
                )
                if parts
                else np.empty(0, dtype=dtype)
            )

        starts = (
            np.concatenate([p[2].start_times_ns for p in parts]) if parts else np.empty(0, np.int64)
        )
        ends = (
            np.concatenate([p[2].end_times_ns for p in parts]) if parts else np.empty(0, np.int64)
        )
        start = starts / NS_PER_SECOND - origin
        end = ends / NS_PER_SECOND - origin
        columns: dict[str, Any] = {
            "name": np.repeat(
                np.array([p[0] for p in parts], dtype=object), [p[2].num_calls for p in parts]
            )
            if parts
            else np.empty(0, object),
            "rank": np.repeat(
                np.array([p[1] for p in parts], dtype=np.int64), [p[2].num_calls for p in parts]
            )
            if parts
            else np.empty(0, np.int64),
            "call_index": np.concatenate([np.arange(p[2].num_calls) for p in parts])
            if parts
            else np.empty(0, np.int64),
            "start": start,
            "end": end,
            "duration": end - start,
        }
        assert columns["start"].size == n
        gpu = cat(lambda r: r.gpu_durations, np.nan, np.float64)
        if gpu is not None:
            columns["gpu_duration"] = gpu
        with_ids = lambda r: (
            r.call_ids if r.call_ids is not None and r.parent_ids is not None else None
        )
        if any(with_ids(p[2]) is not None for p in parts):
            columns["call_id"] = cat(with_ids, np.nan, np.float64)
            columns["parent_id"] = cat(
                lambda r: r.parent_ids if with_ids(r) is not None else None, np.nan, np.float64
            )
        thread = cat(lambda r: r.thread_ids, np.nan, np.float64)
        if thread is not None:
            columns["thread"] = thread
        with_task = lambda r: (
            r.task_ids if r.task_ids is not None and r.await_times_ns is not None else None
        )
        if any(with_task(p[2]) is not None for p in parts):
            columns["task"] = cat(with_task, np.nan, np.float64)
            columns["await_duration"] = cat(
                lambda r: r.await_times if with_task(r) is not None else None, np.nan, np.float64
            )
        for key in ("call_id", "parent_id", "thread", "task"):
            values = columns.get(key)
            if values is not None and not np.isnan(values).any():
                columns[key] = values.astype(np.int64)
        return columns
