"""MPI: one file per job, every rank inside it (Rust: ``py/src/mpi.rs``, its decisions and
texts in ``scope_profiler_finalize::mpi_job``).

Detection (reference ``mpi_launch``): a process is an MPI rank when a launcher set one of
:data:`LAUNCHER_ENV_VARS`, or when the application already initialised ``mpi4py.MPI``;
``SCOPE_PROFILER_MPI=0/1`` overrides both. ``mpi4py`` is imported only then (importing it
calls ``MPI_Init``), at ``setup()``, as the reference does; a plain ``python script.py`` never
touches MPI even when mpi4py is installed.

``finalize()`` under MPI is collective (every rank must call it, with the same arguments):
rank 0 gathers every rank's run, stacks them (rank r's rows carry rank r) and writes one
file; its outcome is broadcast, so a failed write raises on every rank. ``output_mode``:
``"auto"`` and ``"direct"`` use this path; so does ``"parallel"`` without thread tracking;
``"parallel"`` with ``track_threads`` raises the reference's ``RuntimeError``
(:data:`PARALLEL_WITH_THREADS`) at ``finalize()``. Serial runs ignore ``output_mode``.
"""

from ._native import MPI_LAUNCHER_ENV_VARS as LAUNCHER_ENV_VARS
from ._native import MPI_OVERRIDE_ENV as OVERRIDE_ENV_VAR
from ._native import MPI_PARALLEL_WITH_THREADS as PARALLEL_WITH_THREADS
from ._native import mpi_comm as get_comm
from ._native import mpi_finalize as finalize
from ._native import mpi_launched as launched_under_mpi


def configure(config) -> None:
    """Attach the communicator, rank and size to a new ``ProfilingConfig`` and fix the MPI
    part of its metadata (``mpi_size``, ``total_cores``; ``num_nodes`` is gathered at
    ``finalize()``). Kept in Python: with it in Rust, fewer allocations at import moved a
    generation-1 garbage collection into the first ``gevent.sleep`` of
    ``examples/gevent_workers.py``, and ``test_gevent_workers`` (await >= 9.9 ms) failed."""
    comm = get_comm()
    config._comm = comm
    config._rank = 0 if comm is None else comm.Get_rank()
    config._size = 1 if comm is None else comm.Get_size()
    if comm is not None:
        metadata = config.metadata
        metadata["mpi_size"] = config._size
        metadata["total_cores"] = config._size * int(metadata.get("omp_num_threads", 1) or 1)
        metadata.pop("num_nodes", None)


__all__ = [
    "LAUNCHER_ENV_VARS",
    "OVERRIDE_ENV_VAR",
    "PARALLEL_WITH_THREADS",
    "configure",
    "finalize",
    "get_comm",
    "launched_under_mpi",
]
