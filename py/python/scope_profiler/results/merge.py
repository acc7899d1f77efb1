"""``merge_results``: combine several result sets into one."""
from __future__ import annotations

from .mpi_region import MPIRegion
from .run import ProfilingResults

__all__ = ["merge_results"]


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
