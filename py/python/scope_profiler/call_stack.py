"""Reconstruct call stacks from recorded region intervals (spec-callstack).

Regions store only ``(start_ns, end_ns)`` per call; nesting is recovered from
containment, **per lane** (a thread, or an asyncio task / greenlet on one). The
reconstruction itself runs in Rust (``scope_profiler._native.build_call_arrays``):
one sort by ``(start, -end, input position)`` and one stack walk per lane. This
module adapts result objects to it and offers the reference's convenience views.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from . import _native
from .exceptions import NestingError

__all__ = [
    "CallArrays",
    "LaneSplit",
    "NestingError",
    "build_call_arrays",
    "build_call_stack",
    "call_stack_children",
    "call_stack_roots",
    "split_by_lane",
]

NS_PER_SECOND = 1e9

# Lane column of a reconstruction without one: a single stack per rank.
_NO_LANE: np.ndarray = np.full(0, -1, dtype=np.int32)
_NO_LANE.flags.writeable = False


class CallArrays(NamedTuple):
    """One rank's reconstructed nesting, in start-sorted (``call_id``) order.

    Every array is indexed by call id (position in sorted order), so ``parent``
    indexes straight back into the same arrays. ``region_index`` and
    ``call_index`` point at where a call came from: region
    ``names[region_index[i]]``, call ``call_index[i]`` of that region's arrays.
    ``lane`` is **empty** when no region on the rank has a thread column (one
    stack); consumers must check ``lane.size``. ``len(arrays)`` is the call count.

    dtypes: ``start_ns``, ``end_ns``, ``exclusive_ns`` int64 (ns on the recording clock);
    the index columns ``region_index``, ``call_index``, ``depth``, ``parent`` and ``lane``
    int32 (the reference uses int64 everywhere; int32 halves the memory of the largest
    structure of an analysis, values are the same - a rank holds fewer than 2**31 calls).
    """

    names: list[str]
    source_files: list[str | None]
    source_lines: list[int | None]
    region_index: np.ndarray
    call_index: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    depth: np.ndarray
    parent: np.ndarray
    exclusive_ns: np.ndarray
    lane: np.ndarray = _NO_LANE

    def __len__(self) -> int:
        return int(self.start_ns.size)


def _i64(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def _i64_or_none(values):
    return None if values is None else _i64(values)


def _from_columns(names, source_files, source_lines, columns) -> CallArrays:
    (region_index, call_index, start_ns, end_ns, depth, parent, exclusive_ns, lane) = columns
    return CallArrays(
        names=names,
        source_files=source_files,
        source_lines=source_lines,
        region_index=region_index,
        call_index=call_index,
        start_ns=start_ns,
        end_ns=end_ns,
        depth=depth,
        parent=parent,
        exclusive_ns=exclusive_ns,
        lane=lane if lane.size else _NO_LANE,
    )


def build_call_arrays(regions: Iterable, rank: int) -> CallArrays:
    """Reconstruct one rank's nesting as numpy arrays (in Rust).

    Parameters
    ----------
    regions : iterable of MPIRegion
        Regions to include, in this order (the order breaks exact ties: an
        earlier region's call encloses a later one's identical call). Regions
        without data for ``rank`` are skipped.
    rank : int

    Raises
    ------
    NestingError
        A call ends before it starts, or two calls on one lane overlap without
        nesting (the message names both calls, child first).
    """
    regions = list(regions)
    cached = _cached_call_arrays(regions, rank)
    if cached is not None:
        return cached
    names, source_files, source_lines, inputs = _region_inputs(regions, rank)
    return _from_columns(names, source_files, source_lines, _native.build_call_arrays(inputs))


def _cached_call_arrays(regions: list, rank: int) -> CallArrays | None:
    """The cached reconstruction of a loaded run (``NativeRun.rank_call_arrays``) when
    ``regions`` are exactly that run's rows of ``rank``, unchanged, in region-table order
    (the order the cache reconstructs in, so ties resolve the same); else None."""
    keys = []
    for region in regions:
        data = region.regions.get(rank)
        if data is None:
            continue
        key = getattr(data, "_native_key", None)
        if key is None:
            return None
        native, _, _, native_rank, _, starts, ends, threads, tasks = key
        if (
            native_rank != rank
            or data._start_times is not starts
            or data._end_times is not ends
            or data._thread_ids is not threads
            or data._task_ids is not tasks
        ):
            return None
        keys.append((key, region, data))
    if not keys:
        return None
    native = keys[0][0][0]
    if any(k[0][0] is not native for k in keys) or len(keys) != keys[0][0][4]:
        return None
    ids = [k[0][2] for k in keys]
    if any(b <= a for a, b in itertools.pairwise(ids)):
        return None
    rows, columns = native.rank_call_arrays(int(rank))
    if list(rows) != [k[0][1] for k in keys]:
        return None
    return _from_columns(
        [region.name for _, region, _ in keys],
        [data.source_file for _, _, data in keys],
        [data.source_lineno for _, _, data in keys],
        columns,
    )


def _region_inputs(regions: Iterable, rank: int):
    """Names, sources and ``(name, starts, ends, thread_ids, task_ids)`` inputs of the
    regions having data on ``rank`` (int64 arrays passed without copying)."""
    names: list[str] = []
    source_files: list[str | None] = []
    source_lines: list[int | None] = []
    inputs = []
    for region in regions:
        per_rank = region.regions
        if rank not in per_rank:
            continue
        data = per_rank[rank]
        names.append(region.name)
        source_files.append(data.source_file)
        source_lines.append(data.source_lineno)
        inputs.append(
            (
                region.name,
                _i64(data.start_times_ns),
                _i64(data.end_times_ns),
                _i64_or_none(getattr(data, "thread_ids", None)),
                _i64_or_none(getattr(data, "task_ids", None)),
            ),
        )
    return names, source_files, source_lines, inputs


def exclusive_by_region(regions: Iterable, rank: int) -> dict[str, np.ndarray]:
    """Per-call exclusive ns of every region having data on ``rank``, in each region's own
    call order (one Rust reconstruction of the whole rank)."""
    names, _, _, inputs = _region_inputs(regions, rank)
    return dict(zip(names, _native.exclusive_by_region(inputs)))


class LaneSplit(Sequence):
    """The lanes of a reconstruction, ``(lane, CallArrays)`` pairs in ascending lane value,
    built lazily: grouping is one counting sort in Rust (O(n), whatever the number of lanes)
    and a lane's :class:`CallArrays` is sliced only when indexed or iterated. Behaves as a
    read-only list (``len``, indexing, slicing, iteration, ``==`` with a list)."""

    __slots__ = ("_calls", "_lanes", "_local", "_offsets", "_order")

    def __init__(
        self, calls: CallArrays, lanes: np.ndarray, offsets: np.ndarray, order: np.ndarray
    ) -> None:
        self._calls = calls
        self._lanes = lanes
        self._offsets = offsets
        self._order = order
        self._local: np.ndarray | None = None

    @property
    def lanes(self) -> np.ndarray:
        """Lane values, ascending (int64)."""
        return self._lanes

    def lane_sizes(self) -> np.ndarray:
        """Number of calls per lane (int64), aligned with :attr:`lanes`."""
        return np.diff(self._offsets)

    def __len__(self) -> int:
        return int(self._lanes.size)

    def _lane(self, k: int) -> tuple[int, CallArrays]:
        calls = self._calls
        if self._lanes.size == 1:
            return (int(self._lanes[0]), calls)
        if self._local is None:
            local = np.empty(len(calls), dtype=calls.parent.dtype)
            sizes = np.diff(self._offsets)
            local[self._order] = np.arange(len(calls), dtype=np.int64) - np.repeat(
                self._offsets[:-1], sizes
            )
            self._local = local
        positions = self._order[self._offsets[k] : self._offsets[k + 1]]
        parent = calls.parent[positions]
        return (
            int(self._lanes[k]),
            CallArrays(
                names=calls.names,
                source_files=calls.source_files,
                source_lines=calls.source_lines,
                region_index=calls.region_index[positions],
                call_index=calls.call_index[positions],
                start_ns=calls.start_ns[positions],
                end_ns=calls.end_ns[positions],
                depth=calls.depth[positions],
                parent=np.where(parent < 0, -1, self._local[np.maximum(parent, 0)]),
                exclusive_ns=calls.exclusive_ns[positions],
                lane=calls.lane[positions],
            ),
        )

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._lane(k) for k in range(*index.indices(len(self)))]
        k = int(index)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("lane index out of range")
        return self._lane(k)

    def __iter__(self) -> Iterator[tuple[int, CallArrays]]:
        for k in range(len(self)):
            yield self._lane(k)

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, tuple, LaneSplit)):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"<LaneSplit: {len(self)} lane(s), {len(self._calls)} call(s)>"


_EMPTY = np.zeros(0, dtype=np.int64)


def lane_groups(lane: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lanes, offsets, order)`` of a lane column: lane ``lanes[k]`` (int64, ascending)
    holds positions ``order[offsets[k]:offsets[k+1]]`` (ascending; offsets int64, order
    uint32). A counting sort in Rust (O(n)).

    Raises ValueError for lane values outside the int32 range."""
    lane = np.asarray(lane)
    if lane.dtype != np.int32:
        if lane.size and (
            lane.min() < np.iinfo(np.int32).min or lane.max() > np.iinfo(np.int32).max
        ):
            raise ValueError("lane values must fit in int32")
        lane = lane.astype(np.int32)
    return tuple(_native.group_lanes(np.ascontiguousarray(lane)))


def split_by_lane(calls: CallArrays) -> LaneSplit:
    """Split a reconstruction into one :class:`CallArrays` per lane.

    Lanes come in ascending lane value (thread lanes -N..-2, i.e. descending
    thread index, then -1, then tasks 0, 1, ...). Arrays are sliced to the lane's
    positions (order kept), ``parent`` is remapped to positions within the lane;
    ``names``/``source_files``/``source_lines`` are shared. No calls -> ``[]``;
    no lane column -> ``[(-1, calls)]``; one lane -> ``[(lane, calls)]``.

    Returns a :class:`LaneSplit` (a lazy read-only sequence: O(n) to build,
    whatever the number of lanes; each lane is sliced when first accessed).
    """
    n = len(calls)
    if n == 0:
        return LaneSplit(calls, _EMPTY, np.zeros(1, dtype=np.int64), _EMPTY)
    if calls.lane.size == 0:
        # one stack: the lane is the calls themselves, no grouping needed
        return LaneSplit(
            calls, np.array([-1], dtype=np.int64), np.array([0, n], dtype=np.int64), _EMPTY
        )
    lanes, offsets, order = lane_groups(calls.lane)
    return LaneSplit(calls, lanes, offsets, order)


def build_call_stack(regions: Iterable, rank: int, origin: float = 0.0) -> list[dict]:
    """One dict per call of ``rank``, in sorted order (parents before children).

    Keys: ``call_id, name, call_index, start, end, duration, inclusive_duration,
    exclusive_duration, depth, parent, call_path, source_file, source_lineno,
    lane, color``; times in seconds minus ``origin``.
    """
    regions = list(regions)
    arrays = build_call_arrays(regions, rank)
    colors = {region.name: getattr(region, "color", None) for region in regions}

    starts = arrays.start_ns / NS_PER_SECOND - origin
    ends = arrays.end_ns / NS_PER_SECOND - origin
    durations = (arrays.end_ns - arrays.start_ns) / NS_PER_SECOND
    exclusive = arrays.exclusive_ns / NS_PER_SECOND
    has_lane = bool(arrays.lane.size)

    calls: list[dict] = []
    for call_id, region_row in enumerate(arrays.region_index.tolist()):
        name = arrays.names[region_row]
        parent = int(arrays.parent[call_id])
        calls.append(
            {
                "call_id": call_id,
                "name": name,
                "call_index": int(arrays.call_index[call_id]),
                "start": float(starts[call_id]),
                "end": float(ends[call_id]),
                "duration": float(durations[call_id]),
                "inclusive_duration": float(durations[call_id]),
                "exclusive_duration": float(exclusive[call_id]),
                "depth": int(arrays.depth[call_id]),
                "parent": None if parent < 0 else parent,
                "call_path": (name if parent < 0 else f"{calls[parent]['call_path']} > {name}"),
                "source_file": arrays.source_files[region_row],
                "source_lineno": arrays.source_lines[region_row],
                "lane": int(arrays.lane[call_id]) if has_lane else -1,
                "color": colors[name],
            },
        )
    return calls


def call_stack_roots(calls: list[dict]) -> list[int]:
    """Indices of the top-level calls in a :func:`build_call_stack` result."""
    return [index for index, call in enumerate(calls) if call["parent"] is None]


def call_stack_children(calls: list[dict]) -> list[list[int]]:
    """Child indices per call of a :func:`build_call_stack` result, in start order."""
    children: list[list[Any]] = [[] for _ in calls]
    for index, call in enumerate(calls):
        parent = call["parent"]
        if parent is not None:
            children[parent].append(index)
    return children
