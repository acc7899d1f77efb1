"""``ProfilingResults``: one run as an ordered mapping of region name to :class:`MPIRegion`.

The objects are thin views over a run held in Rust (``_native.NativeRun``): per-call
int64 columns are read-only numpy arrays over the run's Arrow buffers (no copy), and
everything derived from the call tree (exclusive time, lane splits, thread summaries,
frames, exports) reads one reconstruction per rank, computed once in Rust and cached.
"""

from __future__ import annotations

import json
import os
import re
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..exceptions import NestingError
from ._common import NS_PER_SECOND, EventDataUnavailableError
from .frames import FramesMixin
from .lanes import TaskInfo, ThreadInfo
from .mpi_region import MPIRegion
from .region import Region

__all__ = ["ProfilingResults"]


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


class _ExclusiveResolver:
    """Fills a region's per-call exclusive durations on first use: through its results
    (all regions at once) while they are alive. Over a native run it holds the results only
    weakly - a region that outlives them reads its own row from the run (``position`` in
    ``native``, rank ``rank``) - so results, regions and run form no reference cycle and are
    freed as soon as the last reference goes. Without a native run it keeps the results."""

    __slots__ = ("_native", "_owner", "_position", "_rank", "_strong")

    def __init__(self, owner, native=None, position=None, rank=None) -> None:
        self._owner = weakref.ref(owner)
        self._strong = owner if native is None else None
        self._native = native
        self._position = position
        self._rank = rank

    def __call__(self, region=None) -> None:
        owner = self._owner()
        if owner is not None:
            owner._populate_exclusive_durations()
            return
        if region is None or self._native is None:
            return
        for position, values in self._native.exclusive_by_row(self._rank):
            if position == self._position:
                region._set_exclusive_durations(values)
                return


class ProfilingResults(FramesMixin):
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
                rank_region._attach_exclusive_resolver(_ExclusiveResolver(self))
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
        region_ids = {name: i for i, name in enumerate(native.region_names)}
        rows_per_rank: dict[int, int] = {}
        made: list[tuple[Region, int, str, int]] = []
        for position, row in enumerate(native.rows()):
            name, rank = row["name"], int(row["rank"])
            region = _region_from_row(row)
            if row.get("ids_packed"):
                region._packed_ids = (native, position)
            regions.setdefault(name, {})[rank] = region
            positions[(name, rank)] = position
            rows_per_rank[rank] = rows_per_rank.get(rank, 0) + 1
            made.append((region, position, name, rank))
            if row["exclusive_total_ns"] is not None and row["exclusive_total_ns"] >= 0:
                totals.setdefault(name, {})[rank] = int(row["exclusive_total_ns"])
        for region, position, name, rank in made:
            # lets call_stack.build_call_arrays reuse the native cached reconstruction
            region._native_key = (
                native,
                position,
                region_ids.get(name, -1),
                rank,
                rows_per_rank[rank],
                region._start_times,
                region._end_times,
                region._thread_ids,
                region._task_ids,
            )
        results = cls(
            {name: MPIRegion(name, per_rank) for name, per_rank in regions.items() if per_rank},
            metadata=native.metadata(),
            num_ranks=int(native.num_ranks),
            file_path=native.file_path,
            is_root=is_root,
            exclusive_totals=totals,
        )
        results._native = native
        results._native_rows = positions
        # Over a native run the resolvers need not keep the results alive (no reference
        # cycle: dropping the results frees the run at once, not at the next gc pass).
        for (name, rank), position in positions.items():
            region = results._region_dict[name].regions[rank]
            if region._exclusive_resolver is not None:
                region._exclusive_resolver = _ExclusiveResolver(results, native, position, rank)
        # Lane tables become ThreadInfo / TaskInfo objects on first access (a run can
        # hold 100k tasks; most analyses read the tables in Rust).
        results._threads_cache = None
        results._tasks_cache = None
        return results

    def _materialize_tables(self) -> None:
        native = self._native
        threads: dict[int, list[ThreadInfo]] = {}
        for rank, index, ident, native_id, daemon, start, end, cpu, name in native.threads():
            threads.setdefault(rank, []).append(
                ThreadInfo(index, rank, name, ident, native_id, daemon, start, end, cpu),
            )
        tasks: dict[int, list[TaskInfo]] = {}
        for row in native.tasks():
            (
                rank,
                index,
                thread_index,
                created,
                done,
                steps,
                running,
                suspended,
                kind,
                name,
                coro_name,
            ) = row
            tasks.setdefault(rank, []).append(
                TaskInfo(
                    index,
                    rank,
                    kind,
                    name,
                    coro_name,
                    thread_index,
                    created,
                    done,
                    steps,
                    running,
                    suspended,
                ),
            )
        if self._threads_cache is None:
            self._threads_cache = threads
        if self._tasks_cache is None:
            self._tasks_cache = tasks
        self._native_table_sizes = (
            sum(map(len, threads.values())),
            sum(map(len, tasks.values())),
        )

    @property
    def _threads(self) -> dict[int, list[ThreadInfo]]:
        if self._threads_cache is None:
            self._materialize_tables()
        return self._threads_cache

    @_threads.setter
    def _threads(self, value) -> None:
        self._threads_cache = value

    @property
    def _tasks(self) -> dict[int, list[TaskInfo]]:
        if self._tasks_cache is None:
            self._materialize_tables()
        return self._tasks_cache

    @_tasks.setter
    def _tasks(self, value) -> None:
        self._tasks_cache = value

    @classmethod
    def from_h5(cls, file_path: str | Path, verbose: bool = False) -> ProfilingResults:
        """Load a profile file (schema 1-3); same as :func:`scope_profiler.read_h5`."""
        from .. import _native

        native = _native.NativeRun.read_h5(os.fspath(file_path))
        if verbose:
            print(
                f"Read {native.file_path}: {len(native)} region row(s), {native.num_ranks} rank(s)"
            )
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
        from .. import _native

        rows = []
        for name, region in self._region_dict.items():
            for rank in region.ranks:
                data = region.regions[rank]
                rows.append(
                    {
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
                    }
                )
        threads = [t._to_tuple() for rank in sorted(self._threads) for t in self._threads[rank]]
        tasks = [t._to_tuple() for rank in sorted(self._tasks) for t in self._tasks[rank]]
        metadata = {k: v for k, v in self._metadata.items() if v is not None}
        self._fallback_native = _native.NativeRun.from_columns(
            list(self._region_dict),
            rows,
            threads,
            tasks,
            metadata,
            int(self._num_ranks or 0),
            os.fspath(self._file_path),
        )
        return self._fallback_native

    def _native_positions(self) -> dict[tuple[str, int], int]:
        """(name, rank) -> row position in :meth:`_native_run`."""
        if self._owns_native():
            return self._native_rows
        self._native_run()
        keys = [
            (name, int(rank)) for name, region in self._region_dict.items() for rank in region.ranks
        ]
        keys.sort(key=lambda key: key[1])  # stable, as NativeRun.from_columns orders rows
        return {key: position for position, key in enumerate(keys)}

    def reconstruct(self) -> list[int]:
        """Reconstruct every rank now, in parallel across ranks (Rust, cached); later
        exclusive times, lane splits, thread summaries and frames reuse it. Returns the
        ranks. Raises ``NestingError``."""
        return list(self._native_run().reconstruct_all())

    def call_arrays(self, rank: int = 0):
        """The cached reconstruction of ``rank`` as :class:`~scope_profiler.CallArrays`
        (read-only numpy views, no copy). Regions in region-table order, the input order
        that decides exact ties (as the reference's exclusive time and thread summary)."""
        from ..call_stack import _from_columns

        native = self._native_run()
        rows, columns = native.rank_call_arrays(int(rank))
        names, files, lines = [], [], []
        for position in rows:
            row = native.row(position)
            names.append(row["name"])
            files.append(row["source_file"] or None)
            line = row["source_line"]
            lines.append(None if line is None or line < 0 else line)
        return _from_columns(names, files, lines, columns)

    def split_by_lane(self, rank: int = 0):
        """:func:`~scope_profiler.split_by_lane` of :meth:`call_arrays` with the lane
        grouping done once in Rust (cached with the reconstruction)."""
        from ..call_stack import LaneSplit

        calls = self.call_arrays(rank)
        lanes, offsets, order = self._native_run().split_by_lane(int(rank))
        return LaneSplit(calls, lanes, offsets, order)

    def _populate_exclusive_durations(self) -> None:
        """Per-call exclusive durations for every rank and region, once (in Rust)."""
        from ..call_stack import exclusive_by_region

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
        regions.sort(
            key=lambda r: min((x.first_start_time for x in r.regions.values()), default=0.0)
        )
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
                "to_dataframe() requires pandas. Install scope-profiler[pproc] or pandas directly.",
            ) from exc
        regions = self.get_regions(include=include, exclude=exclude)
        if not per_rank:
            return pd.DataFrame(self._summary_row(region) for region in regions)
        return pd.DataFrame(self._per_rank_rows(include=include, exclude=exclude))

    def _require_event_data(self, operation: str) -> None:
        if not self._event_data_available:
            raise EventDataUnavailableError(
                f"{operation}() requires per-call events, but this profile was "
                "loaded with read_h5_summary(); load it with read_h5()",
            )

    def events(
        self,
        include=None,
        exclude=None,
        ranks=None,
        relative: bool = True,
        origin: float | None = None,
    ) -> list[dict]:
        """One dict per call: region order (get_regions) -> rank -> recorded order."""
        self._require_event_data("events")
        if origin is None:
            origin = self.time_origin if relative else 0.0
        events = []
        for region in self.get_regions(include=include, exclude=exclude):
            events.extend(region.events(ranks=ranks, origin=origin))
        return events

    def to_events_dataframe(
        self,
        include=None,
        exclude=None,
        ranks=None,
        relative: bool = True,
        origin: float | None = None,
    ):
        """``events()`` as a pandas frame: ``name, rank, call_index, start, end, duration``
        (+ ``gpu_duration``, ``call_id``/``parent_id``, and the lane columns ``thread``,
        ``task``, ``await_duration`` when recorded; the reference drops the lane columns).
        Built column-wise with numpy (pandas only, no pyarrow needed)."""
        self._require_event_data("to_events_dataframe")
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "to_events_dataframe() requires pandas. Install "
                "scope-profiler[pproc] or pandas directly.",
            ) from exc
        if origin is None:
            origin = self.time_origin if relative else 0.0
        return pd.DataFrame(self._events_columns(include, exclude, ranks, float(origin)))

    def call_stack(
        self,
        rank: int = 0,
        include=None,
        exclude=None,
        relative: bool = True,
        origin: float | None = None,
    ) -> list[dict]:
        """``build_call_stack`` over ``get_regions(include, exclude)`` (spec-callstack §6)."""
        self._require_event_data("call_stack")
        from ..call_stack import build_call_stack

        if origin is None:
            origin = self.time_origin if relative else 0.0
        return build_call_stack(
            self.get_regions(include=include, exclude=exclude), rank=rank, origin=origin
        )

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
        if self._threads_cache is None and self._tasks_cache is None:
            return True  # never materialized: the native tables themselves
        if self._threads_cache is None or self._tasks_cache is None:
            self._materialize_tables()
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
        if self._owns_native() and self._native_tables_current():
            return self._native.thread_summary(rank)  # [] without a thread table
        if not self._threads.get(rank, []):
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
        write = lambda line="": print(line, file=out)
        regions = self.get_regions(include=include, exclude=exclude)
        selected = (
            None
            if ranks is None
            else {int(r) for r in ([ranks] if isinstance(ranks, int) else ranks)}
        )

        nesting_note = []

        def excl(parts) -> float | None:
            try:
                return sum(p.exclusive_duration for p in parts)
            except NestingError as exc:  # printing must never raise: show "-" and say why
                if not nesting_note:
                    nesting_note.append(str(exc))
                return None

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
                "excl": excl(parts),
                "start": min((p.first_start_time for p in parts if p.has_timing), default=0.0),
            }

        rows = [stats(region) for region in regions]
        keys = {
            "total": "total",
            "calls": "calls",
            "avg": "avg",
            "min": "min",
            "max": "max",
            "std": "std",
            "name": "name",
            "start": "start",
        }
        key = keys.get(sort, "start")
        if key != "start":
            rows.sort(key=lambda r: r[key], reverse=key not in ("name",))
        write(title if title is not None else self.default_title())
        if not rows:
            write("  (no regions)")
            return
        width = max(6, *(len(r["name"]) for r in rows))
        header = (
            f"  {'region':<{width}}  {'calls':>8}  {'total':>11}  {'avg':>11}  {'min':>11}"
            f"  {'max':>11}  {'inclusive':>11}  {'exclusive':>11}"
        )
        write(header)
        write("  " + "-" * (len(header) - 2))
        for r in rows:
            write(
                f"  {r['name']:<{width}}  {r['calls']:>8}  {r['total']:>11.6f}  {r['avg']:>11.6f}"
                f"  {r['min']:>11.6f}  {r['max']:>11.6f}  {r['incl']:>11.6f}"
                f"  {'-' if r['excl'] is None else format(r['excl'], '.6f'):>11}"
            )
        if nesting_note:
            write(f"  exclusive time not available: {nesting_note[0]}")
        if self.total_time is not None:
            write(f"  run time (setup -> finalize): {self.total_time:.6f} s")
        for rank in sorted(self._threads):
            if selected is not None and rank not in selected:
                continue
            try:
                thread_rows = self.thread_summary(rank)
            except NestingError as exc:
                write(f"  threads on rank {rank}: summary not available: {exc}")
                continue
            if not thread_rows:
                continue
            write()
            write(f"  threads on rank {rank}")
            nwidth = max(4, *(len(t["name"]) for t in thread_rows))
            head = (
                f"  {'index':>5}  {'name':<{nwidth}}  {'alive':>5}  {'wall':>11}  {'cpu':>11}"
                f"  {'calls':>8}  {'in regions':>11}"
            )
            write(head)
            write("  " + "-" * (len(head) - 2))
            for t in thread_rows:
                wall = "-" if t["wall_time"] is None else f"{t['wall_time']:.6f}"
                write(
                    f"  {t['index']:>5}  {t['name']:<{nwidth}}  {t['alive']!s:>5}  {wall:>11}"
                    f"  {t['cpu_time']:>11.6f}  {t['num_calls']:>8}  {t['region_time']:>11.6f}"
                )
        if not suppress_notes:
            write()
            write(
                "  Durations are in seconds. Regions may nest, so the summed total can "
                "exceed the wall-clock time."
            )

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.file_path.name!r}: "
            f"{len(self._region_dict)} region(s), {self._num_ranks} rank(s)>"
        )

    def _repr_html_(self) -> str:
        """Notebook view: title, region summary table, thread and task counts."""
        from .display import summary_html

        columns = [
            "name",
            "num_ranks",
            "num_calls",
            "total_duration",
            "exclusive_duration",
            "average_duration",
            "min_duration",
            "max_duration",
        ]
        rows = (
            self.summary()
            if self._event_data_available or not self._region_dict
            else [region.get_summary() for region in self.get_regions()]
        )
        out = summary_html(self.default_title(), rows, columns)
        threads = sum(map(len, self._threads.values()))
        tasks = sum(map(len, self._tasks.values()))
        if threads or tasks:
            out += f"<p>{threads} thread(s), {tasks} task(s) tracked</p>"
        return out
