"""MPI: one file per job, every rank inside it (the decisions and texts: Rust,
``scope_profiler_session::mpi_job``).

Detection (reference ``mpi_launch``): a process is an MPI rank when a launcher set one of
:data:`LAUNCHER_ENV_VARS`, or when the application already initialised ``mpi4py.MPI``;
``SCOPE_PROFILER_MPI=0/1`` overrides both. ``mpi4py`` is imported only then (importing it
calls ``MPI_Init``), at ``setup()``, as the reference does; a plain ``python script.py`` never
touches MPI even when mpi4py is installed.

``finalize()`` under MPI is collective (every rank must call it, with the same arguments):

1. ``num_nodes`` = distinct host names (one ``allgather``), as the reference.
2. Each rank snapshots its own calls (call ids are per rank); nothing is retired yet.
3. Each rank's run crosses to rank 0 as one pickle-free byte buffer (``MPI.BYTE`` messages
   of at most 1 GiB, ranks received in rank order).
4. Rank 0 stacks the ranks into one run (rank r's rows carry rank r) and writes it with the
   serial run's atomic schema-3 writer.
5. Rank 0's outcome is broadcast, so a failed write raises on every rank (the calls stay
   buffered) instead of leaving the others waiting. Rank 0 returns the job's results; other
   ranks an empty result set flagged ``is_root=False`` (as the reference).

``output_mode``: ``"auto"`` and ``"direct"`` use this path; so does ``"parallel"`` without
thread tracking; ``"parallel"`` with ``track_threads`` raises the reference's ``RuntimeError``
(:data:`PARALLEL_WITH_THREADS`) at ``finalize()``, before any buffer is touched. Serial runs
ignore ``output_mode``.
"""

from __future__ import annotations

import sys

from . import _native
from ._native import MPI_LAUNCHER_ENV_VARS as LAUNCHER_ENV_VARS
from ._native import MPI_OVERRIDE_ENV as OVERRIDE_ENV_VAR
from ._native import MPI_PARALLEL_WITH_THREADS as PARALLEL_WITH_THREADS


def launched_under_mpi() -> bool:
    """Whether this process is an MPI rank (see the module docs)."""
    decided = _native.mpi_launch_from_env()
    if decided is not None:
        return decided
    module = sys.modules.get("mpi4py.MPI")
    if module is None:
        return False
    try:
        return bool(module.Is_initialized())
    except AttributeError:
        return False


def get_comm():
    """``MPI.COMM_WORLD`` for an MPI rank, else None. A rank that cannot import mpi4py gets
    a ``RuntimeWarning`` at the user's ``setup()`` line: it records a serial run into the
    same file as every other rank."""
    if not launched_under_mpi():
        return None
    try:
        from mpi4py import MPI
    except ImportError as exc:
        import warnings

        from ._manager import _user_stacklevel

        level = _user_stacklevel(__name__, "scope_profiler._settings")
        warnings.warn(_native.mpi_without_mpi4py(str(exc)), RuntimeWarning, stacklevel=level)
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


def _gather_runs(comm, payload: bytes) -> list | None:
    """Rank 0: every rank's encoded run in rank order (its own slot is None); others send
    theirs (``payload``) and get None."""
    from mpi4py import MPI

    sizes = comm.gather(len(payload), root=0)
    if comm.Get_rank() != 0:
        view = memoryview(payload)
        for start, end in _native.mpi_message_ranges(len(payload)):
            comm.Send([view[start:end], MPI.BYTE], dest=0, tag=_native.MPI_RUN_TAG)
        return None
    parts: list = [None] * comm.Get_size()
    for source in range(1, comm.Get_size()):
        buffer = bytearray(sizes[source])
        view = memoryview(buffer)
        for start, end in _native.mpi_message_ranges(sizes[source]):
            comm.Recv([view[start:end], MPI.BYTE], source=source, tag=_native.MPI_RUN_TAG)
        parts[source] = buffer
    return parts


def _snapshot(manager, config, native) -> tuple:
    """This rank's run (``num_nodes`` gathered first), no file and nothing retired: the calls
    are retired only once rank 0 reports the file written, so a failed write loses nothing.
    ``(run, next call id)``; warns at the user's line when the calls did not nest."""
    import socket

    from ._manager import _user_stacklevel

    config.metadata["num_nodes"] = len(set(config.comm.allgather(socket.gethostname())))
    tracker = config.tracker
    if tracker is not None and hasattr(tracker, "_refresh_task_names"):
        tracker._refresh_task_names()
    run, next_id, nesting_error, _ = config._native.finalize(
        dict(config.metadata),
        config.start_time_ns,
        False,  # no file here: rank 0 writes every rank's calls
        config.file_path,
        manager._next_call_id,
        rewind=False,
        native=list(native),  # this rank's C/Fortran regions (native_traces)
    )
    manager._last_native_run = run
    manager._last_written_run = None  # rank 0 writes the stacked run
    if nesting_error is not None:
        import warnings

        text = _native.mpi_nesting_warning(config._rank, str(nesting_error))
        warnings.warn(text, RuntimeWarning, stacklevel=_user_stacklevel(__name__))
    return run, next_id


def finalize(manager, config, *, verbose, return_results, native=()):
    """The MPI branch of ``ProfileManager.finalize`` (collective; see the module docs).
    Returns rank 0's results, an empty non-root result set elsewhere, or None when no
    results were asked for. ``native``: this rank's regions from C/Fortran traces."""
    from ._manager import _checkpoint_results, _render_output, _results_from_native

    write_file = not config.deactivate_file_output
    need_results = bool(return_results or verbose)
    if not _native.mpi_has_work(write_file, bool(return_results), bool(verbose)):
        return None
    refusal = _native.mpi_refused(write_file, str(config.output_mode), bool(config.track_threads))
    if refusal is not None:
        raise RuntimeError(refusal)
    run, next_id = _snapshot(manager, config, native or ())
    parts = _gather_runs(config.comm, _native._run_to_bytes(run))
    stacked = failure = None
    if parts is not None:
        parts[0] = run
        try:
            stacked = _native._stack_runs(
                list(enumerate(parts)),
                metadata=dict(config.metadata),
                num_ranks=config._size,
                file_path=config.file_path,
                write_file=write_file,
            )
        except Exception as exc:  # reported on every rank below, raised here
            failure = exc
        del parts
    told = (
        None
        if failure is None
        else _native.mpi_failure_broadcast(type(failure).__name__, str(failure))
    )
    message = config.comm.bcast(told, root=0)
    if failure is not None or message is not None:
        # every call stays buffered (the call ids are given again): finalize() once the path
        # is writable writes them all; the rank's own run is in last_results()
        manager._last_results = _results_from_native(run)
        if failure is not None:
            raise failure
        raise RuntimeError(_native.mpi_rank0_failure(str(message)))
    manager._next_call_id = next_id
    if write_file:
        config._native.retire_taken()
    if stacked is None:
        if not need_results:
            return None
        from .results import ProfilingResults

        return ProfilingResults(
            {},
            metadata=dict(config.metadata),
            num_ranks=config._size,
            file_path=config.file_path,
            is_root=False,
        )
    manager._last_native_run = stacked
    if write_file:
        _render_output(manager._requested_output, config.file_path, stacked)
    size = config._size
    return _checkpoint_results(manager, config, stacked, size, write_file, return_results, verbose)


__all__ = [
    "LAUNCHER_ENV_VARS",
    "OVERRIDE_ENV_VAR",
    "PARALLEL_WITH_THREADS",
    "configure",
    "finalize",
    "get_comm",
    "launched_under_mpi",
]
