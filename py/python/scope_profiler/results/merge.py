"""``merge_results``: combine several result sets into one.

Two ways, chosen by the region names (or by ``stack=``):

* **Union** (no region name in two sets; the reference's merge, e.g. a Python driver and
  its native code): regions are collected rank by rank, as the reference does.
* **Stacked ranks** (some region name in several sets, e.g. the per-process files of one
  job: ``merge_results(*map(read_h5, glob("worker_*.h5")))``): each set becomes its own
  block of ranks, in argument order: set k's rank r becomes ``offset_k + r`` with
  ``offset_k`` the sum of the previous sets' ``max(num_ranks, 1)``. Pooled statistics
  (``results["item"].num_calls``, ``rank_imbalance``) then span every process, and each
  process keeps its own lanes, call ids and thread/task tables. The reference raises
  ``ValueError`` here instead. ``metadata["merged_from"]`` lists the sets' file paths, one
  per set, in rank-block order.

Unlike the reference, thread and task tables, and stored exclusive totals, are kept.
Lanes stay distinct per source: in a union, a set whose tables for a rank differ from the
tables already there gets its thread and task indices renumbered after them (its
regions' ``thread_ids``/``task_ids`` follow); identical tables (two views of one run) are
shared.
"""

from __future__ import annotations

import copy

import numpy as np

from .lanes import TaskInfo, ThreadInfo
from .mpi_region import MPIRegion
from .run import ProfilingResults

__all__ = ["merge_results"]


def _copy_region(region, rank_offset=0, thread_offset=0, task_offset=0):
    """A shallow copy (arrays shared) with lane indices shifted; exclusive state reset."""
    new = copy.copy(region)
    if thread_offset and region._thread_ids is not None:
        ids = region._thread_ids
        new._thread_ids = np.where(ids >= 0, ids + thread_offset, ids)
    if task_offset and region._task_ids is not None:
        ids = region._task_ids
        new._task_ids = np.where(ids >= 0, ids + task_offset, ids)
    new._exclusive_durations = None
    new._exclusive_resolver = None
    return new


def _thread(t: ThreadInfo, rank: int, index_offset: int = 0) -> ThreadInfo:
    row = t._to_tuple()
    return ThreadInfo(
        t.index + index_offset, rank, t.name, t.ident, t.native_id, t.daemon, row[5], row[6], row[7]
    )


def _task(t: TaskInfo, rank: int, index_offset: int = 0, thread_offset: int = 0) -> TaskInfo:
    row = t._to_tuple()
    thread_index = t.thread_index + thread_offset if t.thread_index >= 0 else t.thread_index
    return TaskInfo(
        t.index + index_offset,
        rank,
        t.kind,
        t.name,
        t.coro_name,
        thread_index,
        row[3],
        row[4],
        t.steps,
        round(t.running_time * 1e9),
        round(t.awaiting_time * 1e9),
    )


def _stored_total(region):
    return region._exclusive_total_ns


def merge_results(
    *result_sets, label: str | None = None, file_path=None, stack: bool | None = None
) -> ProfilingResults:
    """Combine several result sets into one (see the module docs).

    Non-root sets are ignored; ``ValueError`` if none are given. ``stack=None`` (default)
    stacks the sets as rank blocks when a region name appears in more than one set and
    unites them otherwise; ``stack=False`` is the reference's merge (``ValueError`` on a
    shared region name); ``stack=True`` always stacks. Earlier sets' metadata win.
    """
    if not result_sets:
        raise ValueError("merge_results() needs at least one result set")
    roots = [results for results in result_sets if results.is_root]
    if not roots:
        return result_sets[0]
    seen: dict[str, int] = {}
    shared = None
    for index, results in enumerate(roots):
        for name in results.region_names:
            if name in seen and seen[name] != index and shared is None:
                shared = name
            seen.setdefault(name, index)
    if stack is None:
        stack = shared is not None
    if not stack and shared is not None:
        raise ValueError(
            f"region {shared!r} appears in more than one result set; "
            f"merging them would double-count it. Give the regions "
            f"distinct names (a 'fortran:' prefix, say) before merging, "
            f"or stack them as separate ranks (stack=True).",
        )
    metadata: dict = {}
    for results in roots:
        metadata = {**results.metadata, **metadata}
    if label is not None:
        metadata["label"] = label
    merged_path = file_path if file_path is not None else roots[0].file_path
    if stack:
        return _stacked(roots, metadata, merged_path)
    return _united(roots, metadata, merged_path)


def _united(roots, metadata, file_path) -> ProfilingResults:
    merged: dict[str, dict[int, object]] = {}
    likwid: dict[int, dict] = {}
    threads: dict[int, list] = {}
    tasks: dict[int, list] = {}
    totals: dict[str, dict[int, int]] = {}
    num_ranks = 0
    for results in roots:
        for rank, regions in results.get_likwid_regions().items():
            likwid.setdefault(rank, {}).update(regions)
        offsets: dict[int, tuple[int, int]] = {}
        for rank in set(results.threads) | set(results.tasks):
            mine_t = [t._to_tuple()[1:] for t in results.threads.get(rank, [])]
            mine_k = [t._to_tuple()[1:] for t in results.tasks.get(rank, [])]
            have_t = threads.get(rank, [])
            have_k = tasks.get(rank, [])
            if not have_t and not have_k:
                threads[rank] = [_thread(t, rank) for t in results.threads.get(rank, [])]
                tasks[rank] = [_task(t, rank) for t in results.tasks.get(rank, [])]
                continue
            if [t._to_tuple()[1:] for t in have_t] == mine_t and [
                t._to_tuple()[1:] for t in have_k
            ] == mine_k:
                continue  # the same tables (two views of one run): shared
            t_off, k_off = len(have_t), len(have_k)
            offsets[rank] = (t_off, k_off)
            have_t.extend(_thread(t, rank, t_off) for t in results.threads.get(rank, []))
            have_k.extend(_task(t, rank, k_off, t_off) for t in results.tasks.get(rank, []))
            threads[rank], tasks[rank] = have_t, have_k
        num_ranks = max(num_ranks, results.num_ranks)
        for region in results.get_regions():
            per_rank = merged.setdefault(region.name, {})
            for rank, data in region.regions.items():
                t_off, k_off = offsets.get(rank, (0, 0))
                per_rank[rank] = _copy_region(data, 0, t_off, k_off)
                if _stored_total(data) is not None:
                    totals.setdefault(region.name, {})[rank] = _stored_total(data)
    return ProfilingResults(
        {name: MPIRegion(name, per_rank) for name, per_rank in merged.items()},
        metadata=metadata,
        num_ranks=num_ranks,
        likwid=likwid,
        file_path=file_path,
        exclusive_totals=totals,
        threads={rank: rows for rank, rows in threads.items() if rows},
        tasks={rank: rows for rank, rows in tasks.items() if rows},
    )


def _stacked(roots, metadata, file_path) -> ProfilingResults:
    merged: dict[str, dict[int, object]] = {}
    likwid: dict[int, dict] = {}
    threads: dict[int, list] = {}
    tasks: dict[int, list] = {}
    totals: dict[str, dict[int, int]] = {}
    offset = 0
    for results in roots:
        for rank, regions in results.get_likwid_regions().items():
            likwid.setdefault(offset + rank, {}).update(regions)
        for rank, rows in results.threads.items():
            threads[offset + rank] = [_thread(t, offset + rank) for t in rows]
        for rank, rows in results.tasks.items():
            tasks[offset + rank] = [_task(t, offset + rank) for t in rows]
        for region in results.get_regions():
            per_rank = merged.setdefault(region.name, {})
            for rank, data in region.regions.items():
                per_rank[offset + rank] = _copy_region(data)
                if _stored_total(data) is not None:
                    totals.setdefault(region.name, {})[offset + rank] = _stored_total(data)
        offset += max(int(results.num_ranks or 0), 1)
    metadata["merged_from"] = [str(results.file_path) for results in roots]
    if offset > int(metadata.get("mpi_size", 1) or 1):
        metadata["mpi_size"] = offset
    ordered = {
        name: MPIRegion(name, dict(sorted(per_rank.items()))) for name, per_rank in merged.items()
    }
    return ProfilingResults(
        ordered,
        metadata=metadata,
        num_ranks=offset,
        likwid=likwid,
        file_path=file_path,
        exclusive_totals=totals,
        threads=threads,
        tasks=tasks,
    )
