"""MPI: one file per job, every rank inside it.

Detection (reference ``mpi_launch``): a process is an MPI rank when a launcher set one of
:data:`LAUNCHER_ENV_VARS`, or when the application already initialised ``mpi4py.MPI``;
``SCOPE_PROFILER_MPI=0/1`` overrides both. ``mpi4py`` is imported only then (importing it
calls ``MPI_Init``), at ``setup()``, as the reference does; a plain ``python script.py`` never
touches MPI even when mpi4py is installed.

``finalize()`` under MPI is collective (every rank must call it, with the same arguments):

1. ``num_nodes`` = distinct host names (one ``allgather``), as the reference.
2. Each rank snapshots its own completed calls, thread and task tables, numbers its calls
   (call ids are per rank) and rewinds its buffers when a file is written.
3. Each rank's run crosses to rank 0 as one pickle-free byte buffer (``MPI.BYTE``
   messages of at most 1 GiB, ranks received in rank order).
4. Rank 0 stacks the ranks into one run (rank r's rows, thread rows and task rows carry
   rank r; region names are the union) and writes it with the same atomic schema-3 writer
   as a serial run: lane tables for every rank, ranks in order (spec-hdf5 §4).
5. Rank 0's outcome is broadcast, so a failed write raises on every rank instead of
   leaving the others waiting. Rank 0 returns the job's results; other ranks an empty
   result set flagged ``is_root=False`` (as the reference).

``output_mode``: ``"auto"`` and ``"direct"`` use this path; so does ``"parallel"`` without
thread tracking (there is no collective MPI-IO writer here; the file is the same).
``"parallel"`` with ``track_threads`` raises the reference's ``RuntimeError`` at
``finalize()``, before any buffer is touched. Serial runs ignore ``output_mode``.
"""

from __future__ import annotations

import sys
import warnings

from ._native import MPI_LAUNCHER_ENV_VARS, MPI_OVERRIDE_ENV, mpi_launch_from_env

#: Per-process variables set by the common launchers (reference ``LAUNCHER_ENV_VARS``) and
#: the variable that overrides them (``scope_profiler_finalize::environment``).
LAUNCHER_ENV_VARS = MPI_LAUNCHER_ENV_VARS
OVERRIDE_ENV_VAR = MPI_OVERRIDE_ENV

#: Tag of the run messages to rank 0.
_RUN_TAG = 0x5C0F
#: Largest single message (MPI counts are C ints).
_CHUNK = 1 << 30

PARALLEL_WITH_THREADS = (
    "output_mode='parallel' cannot be combined with track_threads: the collective writer "
    "does not carry the per-call thread and task columns. Use output_mode='direct'."
)


def launched_under_mpi() -> bool:
    """Whether this process is an MPI rank (see the module docs)."""
    decided = mpi_launch_from_env()
    if decided is not None:
        return decided
    module = sys.modules.get("mpi4py.MPI")
    if module is not None:
        try:
            return bool(module.Is_initialized())
        except AttributeError:
            return False
    return False


def get_comm():
    """``MPI.COMM_WORLD`` for an MPI rank, else None (also when mpi4py is missing)."""
    if not launched_under_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD


def configure(config) -> None:
    """Attach the communicator, rank and size to a new ``ProfilingConfig`` and fix the MPI
    part of its metadata (``mpi_size``, ``total_cores``; ``num_nodes`` is gathered at
    ``finalize()``)."""
    comm = get_comm()
    config._comm = comm
    config._rank = 0 if comm is None else comm.Get_rank()
    config._size = 1 if comm is None else comm.Get_size()
    if comm is not None:
        metadata = config.metadata
        metadata["mpi_size"] = config._size
        metadata["total_cores"] = config._size * int(metadata.get("omp_num_threads", 1) or 1)
        metadata.pop("num_nodes", None)


def _gather_runs(comm, payload: bytes):
    """Rank 0: every rank's encoded run in rank order (its own slot is None); others: None."""
    from mpi4py import MPI

    sizes = comm.gather(len(payload), root=0)
    if comm.Get_rank() != 0:
        view = memoryview(payload)
        for offset in range(0, len(payload), _CHUNK):
            comm.Send([view[offset : offset + _CHUNK], MPI.BYTE], dest=0, tag=_RUN_TAG)
        return None
    parts: list[bytearray | None] = [None] * comm.Get_size()
    for source in range(1, comm.Get_size()):
        buffer = bytearray(sizes[source])
        view = memoryview(buffer)
        for offset in range(0, sizes[source], _CHUNK):
            comm.Recv([view[offset : offset + _CHUNK], MPI.BYTE], source=source, tag=_RUN_TAG)
        parts[source] = buffer
    return parts


def finalize(manager, config, *, verbose: bool, return_results: bool, native=()):
    """The MPI branch of ``ProfileManager.finalize`` (collective; see the module docs).
    Returns rank 0's results, an empty non-root result set elsewhere, or None when no
    results were asked for. ``native``: this rank's regions from C/Fortran traces."""
    from . import _native
    from ._manager import _results_from_native, _user_stacklevel

    comm = config.comm
    rank, size = config._rank, config._size
    write_file = not config.deactivate_file_output
    need_results = return_results or verbose
    if not (write_file or need_results):
        return None
    if write_file and config.output_mode == "parallel" and config.track_threads:
        raise RuntimeError(PARALLEL_WITH_THREADS)
    import socket

    config.metadata["num_nodes"] = len(set(comm.allgather(socket.gethostname())))
    if config.tracker is not None and hasattr(config.tracker, "_refresh_task_names"):
        config.tracker._refresh_task_names()
    # No file here (rank 0 writes every rank's calls) and nothing retired yet: the calls are
    # retired only once rank 0 reports the file written, so a failed write loses nothing.
    first_call_id = manager._next_call_id
    native_run, next_id, nesting_error, _ = config._native.finalize(  # no file: no write error
        dict(config.metadata),
        config.start_time_ns,
        False,
        config.file_path,
        first_call_id,
        rewind=False,
        native=list(native),  # this rank's C/Fortran regions (native_traces)
    )
    manager._last_native_run = native_run
    manager._last_written_run = None  # rank 0 writes the stacked run, read back by `run`
    if nesting_error is not None:
        warnings.warn(
            f"call graph not recorded on rank {rank}: {nesting_error}",
            RuntimeWarning,
            stacklevel=_user_stacklevel(__name__),
        )
    parts = _gather_runs(comm, _native._run_to_bytes(native_run))
    stacked = failure = None
    if rank == 0:
        parts[0] = native_run
        try:
            stacked = _native._stack_runs(
                list(enumerate(parts)),
                metadata=dict(config.metadata),
                num_ranks=size,
                file_path=config.file_path,
                write_file=write_file,
            )
        except Exception as exc:  # reported on every rank below, raised here
            failure = exc
        del parts
    message = comm.bcast(
        None if failure is None else f"{type(failure).__name__}: {failure}", root=0
    )
    if failure is not None or message is not None:
        # every call stays buffered (and the call ids are given again): finalize() once the
        # path is writable writes them all; the rank's own run is in last_results()
        manager._last_results = _results_from_native(native_run)
        if failure is not None:
            raise failure
        raise RuntimeError(f"rank 0 could not write profiling data: {message}")
    manager._next_call_id = next_id
    if write_file:
        config._native.retire_taken()
    if rank != 0:
        if not need_results:
            return None
        from .results import ProfilingResults

        return ProfilingResults(
            {},
            metadata=dict(config.metadata),
            num_ranks=size,
            file_path=config.file_path,
            is_root=False,
        )
    manager._last_native_run = stacked
    if write_file:
        from ._manager import _render_output

        _render_output(manager._requested_output, config.file_path, stacked)
    results = _results_from_native(stacked) if need_results else None
    if verbose and results is not None and hasattr(results, "print_summary"):
        label = getattr(results, "display_label", config.file_path)
        title = _native.finalize_summary_title(manager._requested_output, write_file, label, size)
        results.print_summary(title=title)
    return results
