"""Type surface of the compiled module ``scope_profiler._native`` (the PyO3 crate ``py/``).

Units: names ending in ``_ns`` are int64 nanoseconds; every other time is float seconds.
Absolute times come from the recording clock (``CLOCK_MONOTONIC``, same as
``time.perf_counter_ns()`` on Linux); "since the run start" means minus the run's
``start_time_ns``. CPU times are ``CLOCK_THREAD_CPUTIME_ID`` of the thread named.
Checked against the module by ``python -m mypy.stubtest scope_profiler._native``.
"""

from collections.abc import Callable, Coroutine, Generator, Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, TextIO, final, overload

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

_I64 = npt.NDArray[np.int64]
_I32 = npt.NDArray[np.int32]
_U32 = npt.NDArray[np.uint32]
_F64 = npt.NDArray[np.float64]
_Path = str | PathLike[str]
_Patterns = str | Sequence[str] | None
_Ranks = int | Sequence[int] | None
# an Arrow table (`arro3.core.Table`, pyo3-arrow's PyCapsule-interface table); arro3 ships no stubs
_ArrowTable = Any

#: This build's version (the crate's, which the wheel carries): ``scope_profiler.__version__``.
__version__: str

__all__ = [
    "MPI_LAUNCHER_ENV_VARS",
    "MPI_OVERRIDE_ENV",
    "MPI_PARALLEL_WITH_THREADS",
    "MPI_RUN_TAG",
    "NO_STREAMING_UNDER_MPI",
    "SESSION_ROOT_REGION",
    "UNTRACKED_TRIO_WARNING",
    "CallArrays",
    "Comparison",
    "CorruptProfileError",
    "EventDataUnavailableError",
    "GreenletTrace",
    "HDF5SchemaError",
    "JSONProfileError",
    "LaneSplit",
    "LoopState",
    "MPIRegion",
    "ManagerLifecycle",
    "MetadataCall",
    "MetadataScope",
    "NativeRecorder",
    "NativeRun",
    "NativeTracer",
    "NestingError",
    "ProfileRegion",
    "ProfiledFunction",
    "ProfilingConfigBase",
    "ProfilingResults",
    "ReadyQueue",
    "Region",
    "RegionCache",
    "RegionTrace",
    "SummaryDataUnavailable",
    "SummaryRow",
    "TaskFactory",
    "TaskHandle",
    "TaskInfo",
    "ThreadExitSentinel",
    "ThreadInfo",
    "ThreadStartHook",
    "TimedCoroutine",
    "TraceFormatError",
    "TraceHook",
    "TrioLanes",
    "_PickledRun",
    "__version__",
    "_run_from_bytes",
    "_run_to_bytes",
    "_stack_runs",
    "build_call_arrays",
    "build_call_stack",
    "call_graph_warning",
    "call_stack_children",
    "call_stack_roots",
    "calls_after_the_exit_finalize",
    "calls_after_the_profile",
    "carries_opt_in",
    "check_pause",
    "check_region_definition",
    "check_region_name",
    "check_region_tags",
    "check_run_current",
    "check_sampling",
    "check_script",
    "check_set_up",
    "check_setting_names",
    "check_settings_attribute",
    "cli_after_run",
    "cli_main",
    "compare_runs",
    "create_html_report",
    "dataset_commit",
    "dataset_convert",
    "dataset_empty_table",
    "dataset_find",
    "dataset_prepare",
    "describe_process",
    "enabled_tags_from_env",
    "exit_write_failure",
    "export_chrome_trace",
    "export_flamegraph_svg",
    "export_folded",
    "export_html",
    "export_json",
    "export_parquet",
    "export_perfetto",
    "export_pprof",
    "export_prof",
    "export_speedscope",
    "export_timeline_svg",
    "finalize_summary_title",
    "find_traces",
    "followed_recording",
    "followed_write_failure",
    "guard_sigterm",
    "instrument_plan",
    "lane_groups",
    "lazy_names",
    "load",
    "load_traces",
    "merge_results",
    "mpi_failure_broadcast",
    "mpi_has_work",
    "mpi_launch_from_env",
    "mpi_message_ranges",
    "mpi_nesting_warning",
    "mpi_rank0_failure",
    "mpi_refused",
    "mpi_without_mpi4py",
    "multiprocessing_helper",
    "native_regions",
    "option_bag_kwargs",
    "option_group_fields",
    "option_group_kwargs",
    "output_settings",
    "package_attribute",
    "perf_counter_ns",
    "plain_warning",
    "private_directory",
    "profile_command_argv",
    "profile_format",
    "profile_not_written",
    "pstats_tables",
    "read_h5",
    "read_h5_summary",
    "read_json",
    "read_native_h5",
    "read_native_ranks",
    "read_profile",
    "read_profile_summary",
    "read_trace",
    "register_opt_in_tags",
    "relative_source_path",
    "run_output_paths",
    "sampled_step",
    "setting_defaults",
    "settings_of_toml",
    "setup_from_env_settings",
    "signal_while_writing",
    "sigterm_received",
    "sigterm_taken",
    "sniff_profile_format",
    "split_by_lane",
    "started_marker",
    "summary_text",
    "terminated_line",
    "thread_time_ns",
    "tracking_upgrade",
    "unanswered_host_facts",
    "unique_labels",
    "unsupported_names",
    "untracked_loop_warning",
    "write_json",
    "write_profile",
]

# ---------------------------------------------------------------------------------------------
# exceptions (their __module__ is ``scope_profiler``)

class EventDataUnavailableError(RuntimeError):
    """A summary-only result (``read_h5_summary``) was asked for per-call event data."""

class SummaryDataUnavailable(ValueError):
    """``read_h5_summary(fallback=False)`` on a file without fixed-size summary statistics
    (schema 1)."""

class CorruptProfileError(OSError):
    """The file is not a readable scope-profiler profile (not HDF5, truncated, or damaged).
    The message names the file."""

class HDF5SchemaError(ValueError):
    """The file's scope-profiler HDF5 schema version is invalid or newer than this package
    reads."""

class NestingError(ValueError):
    """Recorded calls on one lane overlap without nesting, so no call tree exists."""

# ---------------------------------------------------------------------------------------------
# runs and results

@final
class NativeRun:
    """A run held in Rust (``scope_profiler_analysis::Run``); the results objects are views
    over one. ``len()`` is the number of regions."""

    @staticmethod
    def read_h5(path: _Path) -> NativeRun:
        """Read a profile file (schema 1-3). Raises ``CorruptProfileError``,
        ``HDF5SchemaError`` or ``OSError`` naming the file."""
    @staticmethod
    def from_columns(
        region_names: list[str],
        rows: list[Any],
        threads: list[tuple[Any, ...]],
        tasks: list[tuple[Any, ...]],
        metadata: dict[str, Any],
        num_ranks: int | None = None,
        file_path: str = ...,
    ) -> NativeRun:
        """A run from Python columns (per-region rows of int64 ns arrays, thread and task
        tuples as ``NativeRecorder.thread_table``/``task_table``). Raises ``ValueError``
        or ``TypeError`` on malformed input."""
    def write_h5(self, path: _Path) -> None:
        """Write the run as schema 3, atomically. Raises ``OSError`` naming the file."""
    def __len__(self) -> int:
        """Number of items (calls, ranks, regions or lanes)."""
    @property
    def file_path(self) -> str:
        """The file read or to be written ("" when none)."""
    @property
    def num_ranks(self) -> int:
        """Number of ranks of the run."""
    @property
    def region_names(self) -> list[str]:
        """Region names, insertion order."""

@final
class _PickledRun:
    """A run as pickle carries it: its transport without per-call columns (``encoding``)
    and the columns as int64 arrays (``columns``, used without a copy where their memory
    allows). ``Region``, ``MPIRegion`` and ``ProfilingResults`` pickle through it."""

    def __new__(cls, encoding: bytes, columns: list[Any]) -> _PickledRun: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

@final
class Region:
    """Timing data of one region on one rank. Per-call arrays (shape ``(num_calls,)``) are in
    recorded order: for a tracked run grouped by thread (ascending index), each thread in entry
    order. ``*_ns`` arrays are int64 ns on the recording clock (absolute); the float arrays and
    statistics are s. Per-call APIs raise ``EventDataUnavailableError`` on a summary-only
    region; exclusive values raise ``NestingError`` when the rank has no call tree."""

    def __new__(
        cls,
        start_times: _I64,
        end_times: _I64,
        gpu_durations: _I64 | None = None,
        call_ids: _I64 | None = None,
        parent_ids: _I64 | None = None,
        thread_ids: _I64 | None = None,
        task_ids: _I64 | None = None,
        await_times: _I64 | None = None,
        event_metadata: Sequence[dict[str, Any]] | None = None,
        source_file: str | None = None,
        source_lineno: int | None = None,
        source_text: str | None = None,
        tags: Sequence[str] = ...,
        aggregate: dict[str, Any] | None = None,
        event_data_available: bool = True,
    ) -> Region:
        """Build from int64 ns columns of equal length (``ValueError`` otherwise)."""
    def __len__(self) -> int:
        """Number of calls."""
    def for_thread(self, thread_index: int) -> Region:
        """The calls of thread ``thread_index`` (a new Region). ``ValueError`` without thread ids."""
    def for_task(self, task_index: int) -> Region:
        """The calls inside task ``task_index``. ``ValueError`` without task ids."""
    def for_lane(self, lane: int) -> Region:
        """The calls on ``lane`` (task index >= 0, ``-2 - thread index``, -1 unknown).
        ``ValueError`` without thread ids."""
    def percentile_duration(self, percentile: float) -> float | None:
        """Duration percentile (0-100, numpy linear) in s; None for summary-only data.
        ``ValueError`` outside 0..100."""
    def events(self, origin: float = 0.0) -> list[dict[str, Any]]:
        """One dict per call (``call_index, start, end, duration`` in s minus ``origin``, plus
        recorded ids, thread, task, await, metadata)."""
    def get_summary(self) -> dict[str, Any]:
        """``num_calls`` and the duration statistics in s."""
    def _repr_html_(self) -> str:
        """Notebook view (HTML table)."""
    @property
    def start_times_ns(self) -> _I64:
        """Call starts, int64 ns (absolute, recording clock)."""
    @property
    def end_times_ns(self) -> _I64:
        """Call ends, int64 ns (absolute, recording clock)."""
    @property
    def durations_ns(self) -> _I64:
        """``end - start`` per call, int64 ns."""
    @property
    def inclusive_durations_ns(self) -> _I64:
        """Same as ``durations_ns``."""
    @property
    def exclusive_durations_ns(self) -> _I64:
        """Duration minus direct children on the same lane, int64 ns. Raises NestingError."""
    @property
    def gpu_durations_ns(self) -> _I64 | None:
        """GPU duration per call, int64 ns, or None."""
    @property
    def await_times_ns(self) -> _I64 | None:
        """ns each call's task was suspended inside it (0 outside tasks), or None."""
    @property
    def task_step_times_ns(self) -> _I64 | None:
        """ns each call's thread ran task steps inside it, for calls on the thread's own
        lane (0 in a task): not the call's exclusive or held time. None when not recorded."""
    @property
    def start_times(self) -> _F64:
        """Call starts, float64 s (absolute)."""
    @property
    def end_times(self) -> _F64:
        """Call ends, float64 s (absolute)."""
    @property
    def durations(self) -> _F64:
        """Durations, float64 s."""
    @property
    def inclusive_durations(self) -> _F64:
        """Same as ``durations``."""
    @property
    def exclusive_durations(self) -> _F64:
        """Exclusive durations, float64 s. Raises NestingError."""
    @property
    def gpu_durations(self) -> _F64 | None:
        """GPU durations, float64 s, or None."""
    @property
    def await_times(self) -> _F64 | None:
        """``await_times_ns / 1e9`` (s), or None."""
    @property
    def ready_wait_times_ns(self) -> _I64 | None:
        """ns of each call's await time during which its task was ready to resume but its
        event loop ran other code (0 outside tasks, -1 where the loop could not tell), or
        None without ``track_async``."""
    @property
    def ready_wait_times(self) -> _F64 | None:
        """``ready_wait_times_ns / 1e9`` (s; NaN where not known), or None."""
    @property
    def call_ids(self) -> _I64 | None:
        """Call id per call (unique per rank), or None without a call graph."""
    @property
    def parent_ids(self) -> _I64 | None:
        """Call id of the enclosing call on the lane (-1 for a root), or None."""
    @property
    def thread_ids(self) -> _I64 | None:
        """Thread-table index per call, or None when threads were not tracked."""
    @property
    def task_ids(self) -> _I64 | None:
        """Task-table index per call (-1 outside tasks), or None without ``track_async``."""
    @property
    def event_metadata(self) -> tuple[dict[str, Any], ...]:
        """Per-call metadata, one dict per call."""
    @property
    def threads(self) -> list[int]:
        """Sorted thread-table indices this region has calls on."""
    @property
    def has_thread_data(self) -> bool:
        """Whether the calls carry thread ids (``track_threads``)."""
    @property
    def has_event_data(self) -> bool:
        """False for a summary-only result (``read_h5_summary``): per-call APIs raise."""
    @property
    def has_timing(self) -> bool:
        """Whether any call was recorded."""
    @property
    def has_gpu_timing(self) -> bool:
        """Whether GPU durations were recorded."""
    @property
    def has_source(self) -> bool:
        """Whether a defining site was recorded."""
    @property
    def source_file(self) -> str | None:
        """Defining file of the region (relative to the working directory), or None."""
    @property
    def source_lineno(self) -> int | None:
        """Defining line (1-based), or None."""
    @property
    def source_text(self) -> str | None:
        """Defining source line, or None (``capture_region_source`` off)."""
    @property
    def tags(self) -> tuple[str, ...]:
        """The region's tags, declaration order."""
    @property
    def stored_summary(self) -> dict[str, Any] | None:
        """The stored-statistics dict of a summary-only region, else None."""
    @property
    def num_calls(self) -> int:
        """Number of calls."""
    @property
    def total_duration(self) -> float:
        """Σ durations, s."""
    @property
    def inclusive_duration(self) -> float:
        """Σ durations, s."""
    @property
    def exclusive_duration(self) -> float:
        """Σ exclusive s. Raises NestingError."""
    @property
    def total_exclusive_duration(self) -> float:
        """Σ exclusive s. Raises NestingError."""
    @property
    def average_duration(self) -> float:
        """Mean duration, s (0.0 without calls)."""
    @property
    def min_duration(self) -> float:
        """Shortest call, s (0.0 without calls)."""
    @property
    def max_duration(self) -> float:
        """Longest call, s (0.0 without calls)."""
    @property
    def std_duration(self) -> float:
        """Population standard deviation of the durations, s."""
    @property
    def first_duration(self) -> float:
        """Duration of the first recorded call, s (0.0 without calls)."""
    @property
    def last_duration(self) -> float:
        """Duration of the last recorded call, s (0.0 without calls)."""
    @property
    def first_start_time(self) -> float:
        """Earliest start, s (absolute); 0.0 without calls."""
    @property
    def last_end_time(self) -> float:
        """Latest end, s (absolute); 0.0 without calls."""
    @property
    def p50_duration(self) -> float | None:
        """Median duration, s (numpy linear); None for summary-only data."""
    @property
    def p95_duration(self) -> float | None:
        """95th percentile duration, s; None for summary-only data."""
    @property
    def p99_duration(self) -> float | None:
        """99th percentile duration, s; None for summary-only data."""
    @property
    def gpu_total_duration(self) -> float | None:
        """Σ GPU durations, s, or None without GPU timing."""
    @property
    def gpu_average_duration(self) -> float | None:
        """Mean GPU duration, s, or None without GPU timing."""
    @property
    def total_await_duration(self) -> float | None:
        """Σ await time in s (a negative await, found only in damaged data, counts as 0, as in
        every summary), or None without ``track_async``."""

@final
class MPIRegion:
    """One named region across all ranks; ``region[rank]`` is that rank's ``Region``
    (``KeyError`` for a rank without data). Statistics pool all ranks, s."""

    def __new__(cls, name: str, regions: Mapping[int, Region]) -> MPIRegion: ...
    def __getitem__(self, key: int, /) -> Region: ...
    def __iter__(self) -> Iterator[int]:
        """The ranks with data, ascending."""
    def __len__(self) -> int:
        """Number of items (calls, ranks, regions or lanes)."""
    def __contains__(self, key: int, /) -> bool: ...
    def events(self, ranks: _Ranks = None, origin: float = 0.0) -> list[dict[str, Any]]:
        """One dict per call (``name, rank`` + ``Region.events`` keys), times s minus ``origin``."""
    def num_calls_per_rank(self) -> dict[int, int]:
        """``{rank: number of calls}``."""
    def average_durations(self) -> dict[int, float]:
        """``{rank: mean duration in s}``."""
    def min_durations(self) -> dict[int, float]:
        """``{rank: shortest call in s}``."""
    def max_durations(self) -> dict[int, float]:
        """``{rank: longest call in s}``."""
    def total_durations(self) -> dict[int, float]:
        """``{rank: Σ durations in s}``."""
    def percentile_duration(self, percentile: float) -> float | None:
        """Pooled duration percentile (0-100, numpy linear) in s; None for summary-only data."""
    def get_summary(self) -> dict[str, Any]:
        """Pooled statistics of all ranks (``num_calls`` and durations in s)."""
    def _repr_html_(self) -> str:
        """Notebook view (HTML table)."""
    @property
    def name(self) -> str:
        """The region's name."""
    @property
    def regions(self) -> dict[int, Region]:
        """``{rank: Region}`` (a new dict)."""
    @property
    def ranks(self) -> list[int]:
        """Ranks with data, ascending."""
    @property
    def color(self) -> str | None:
        """Plot hint (a colour), None by default."""
    @property
    def tags(self) -> tuple[str, ...]:
        """The region's tags, declaration order."""
    @property
    def source_file(self) -> str | None:
        """Defining file of the region (relative to the working directory), or None."""
    @property
    def source_lineno(self) -> int | None:
        """Defining line (1-based), or None."""
    @property
    def source_text(self) -> str | None:
        """Defining source line, or None (``capture_region_source`` off)."""
    @property
    def has_source(self) -> bool:
        """Whether a defining site was recorded."""
    @property
    def has_timing(self) -> bool:
        """Whether any call was recorded."""
    @property
    def has_event_data(self) -> bool:
        """False for a summary-only result (``read_h5_summary``): per-call APIs raise."""
    @property
    def has_gpu_timing(self) -> bool:
        """Whether GPU durations were recorded."""
    @property
    def durations(self) -> _F64:
        """Pooled durations (s), the ranks' ``durations`` concatenated in rank order."""
    @property
    def inclusive_durations(self) -> _F64:
        """Durations per call, float64 s (same as ``durations``)."""
    @property
    def exclusive_durations(self) -> _F64:
        """Pooled exclusive durations (s). Raises NestingError."""
    @property
    def gpu_durations(self) -> _F64 | None:
        """GPU duration per call, float64 s, or None."""
    @property
    def num_calls(self) -> int:
        """Calls over all ranks."""
    @property
    def total_duration(self) -> float:
        """Σ durations, s."""
    @property
    def inclusive_duration(self) -> float:
        """Σ durations (children included), s."""
    @property
    def exclusive_duration(self) -> float:
        """Σ exclusive time, s. Raises NestingError."""
    @property
    def total_exclusive_duration(self) -> float:
        """Σ of the ranks' exclusive totals, s. Raises NestingError."""
    @property
    def average_duration(self) -> float:
        """Mean duration, s (0.0 without calls)."""
    @property
    def min_duration(self) -> float:
        """Shortest call, s (0.0 without calls)."""
    @property
    def max_duration(self) -> float:
        """Longest call, s (0.0 without calls)."""
    @property
    def std_duration(self) -> float:
        """Population standard deviation of the durations, s."""
    @property
    def first_duration(self) -> float:
        """Duration of the first recorded call, s (0.0 without calls)."""
    @property
    def last_duration(self) -> float:
        """Duration of the last recorded call, s (0.0 without calls)."""
    @property
    def first_start_time(self) -> float:
        """Earliest start, s (absolute, recording clock); 0.0 without calls."""
    @property
    def last_end_time(self) -> float:
        """Latest end, s (absolute, recording clock); 0.0 without calls."""
    @property
    def p50_duration(self) -> float | None:
        """Median duration, s (numpy linear); None for summary-only data."""
    @property
    def p95_duration(self) -> float | None:
        """95th percentile duration, s; None for summary-only data."""
    @property
    def p99_duration(self) -> float | None:
        """99th percentile duration, s; None for summary-only data."""
    @property
    def gpu_total_duration(self) -> float | None:
        """Σ GPU durations, s, or None without GPU timing."""
    @property
    def gpu_average_duration(self) -> float | None:
        """Mean GPU duration, s, or None without GPU timing."""
    @property
    def rank_imbalance(self) -> float:
        """max / mean of the ranks' positive totals (0.0 with fewer than two)."""
    @property
    def rank_imbalance_pct(self) -> float:
        """``(rank_imbalance - 1) * 100``, percent (0.0 when ``rank_imbalance`` is 0.0)."""

@final
class SummaryRow(dict[str, Any]):
    """A row of ``thread_summary()`` / ``task_summary()``: a dict whose values are exact and
    whose repr rounds its floats to three significant digits."""

    def __new__(cls, *_args: Any, **_kwargs: Any) -> Self: ...

@final
class ThreadInfo:
    """One row of a run's thread table. ``index`` is the value ``Region.thread_ids`` holds;
    times are s since the run start; ``cpu_time`` is the CPU (``CLOCK_THREAD_CPUTIME_ID``) the
    thread burned during the run, ``cpu_time_total`` its whole life, s."""

    def __new__(
        cls,
        index: int,
        rank: int,
        name: str,
        ident: int,
        native_id: int,
        daemon: bool,
        start_ns: int,
        end_ns: int,
        cpu_ns: int,
        cpu_start_ns: int = ...,  # -1 = not known
    ) -> ThreadInfo: ...
    @property
    def index(self) -> int:
        """Table index (the value ``Region.thread_ids`` / ``task_ids`` hold)."""
    @property
    def rank(self) -> int:
        """MPI rank of the row (0 without MPI)."""
    @property
    def name(self) -> str:
        """``threading.Thread.name`` at registration (updated at the snapshot)."""
    @property
    def ident(self) -> int:
        """``threading.get_ident()`` of the thread."""
    @property
    def native_id(self) -> int:
        """OS thread id (``threading.get_native_id()``)."""
    @property
    def daemon(self) -> bool:
        """Whether the thread was a daemon thread."""
    @property
    def alive(self) -> bool:
        """Whether the thread was still running when the run was collected."""
    @property
    def start_time(self) -> float:
        """Registration time, s since the run start."""
    @property
    def end_time(self) -> float | None:
        """End time, s since the run start; None while alive."""
    @property
    def wall_time(self) -> float | None:
        """``end_time - start_time`` in s, or None for a thread alive at ``finalize()``
        (``thread_summary()`` fills those in: start to the run's end, ``finalize_time_ns``)."""
    @property
    def cpu_time(self) -> float:
        """CPU the thread burned during the run, s, as everywhere ``cpu_time`` appears (the
        whole-life figure in files of 0.7.5, which do not record where the run started)."""
    @property
    def cpu_time_total(self) -> float:
        """Total CPU time of the OS thread, s: its whole life, CPU before ``setup()``
        included (0.7.5's ``cpu_time``)."""
    @property
    def cpu_start_time(self) -> float | None:
        """The thread's CPU clock when the run started counting it (registration, or
        ``setup()`` for the thread that called it), s; None in files of 0.7.5."""

@final
class TaskInfo:
    """One row of a run's task table (``kind`` "task" or "greenlet"). ``index`` is the value
    ``Region.task_ids`` holds; times s since the run start; running/awaiting s (monotonic)."""

    def __new__(
        cls,
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
    ) -> TaskInfo: ...
    @property
    def index(self) -> int:
        """Table index (the value ``Region.thread_ids`` / ``task_ids`` hold)."""
    @property
    def rank(self) -> int:
        """MPI rank of the row (0 without MPI)."""
    @property
    def kind(self) -> str:
        """``"task"`` or ``"greenlet"``."""
    @property
    def name(self) -> str:
        """Task name as of the snapshot (``Task.get_name()``)."""
    @property
    def coro_name(self) -> str:
        """The coroutine's ``__qualname__`` (greenlets: their run function's)."""
    @property
    def thread_index(self) -> int:
        """Thread-table index of the thread that ran the latest step."""
    @property
    def steps(self) -> int:
        """Number of timed steps the task ran."""
    @property
    def done(self) -> bool:
        """Whether the task finished before the run was collected."""
    @property
    def created_time(self) -> float:
        """Creation time, s since the run start."""
    @property
    def done_time(self) -> float | None:
        """Finish time, s since the run start, or None if it never finished."""
    @property
    def wall_time(self) -> float | None:
        """``done_time - created_time`` in s, or None if it never finished."""
    @property
    def running_time(self) -> float:
        """Time the task's steps ran, s (step timer, monotonic clock)."""
    @property
    def awaiting_time(self) -> float:
        """Time the task was suspended between steps, s (monotonic clock)."""

@final
class ProfilingResults:
    """The profiling data of one run: ``results["solve"][0].average_duration`` is rank 0's
    mean in s. ``results[name]`` raises ``KeyError`` for an unknown region."""

    def __new__(
        cls,
        regions: Mapping[str, MPIRegion],
        metadata: dict[str, Any] | None = None,
        num_ranks: int | None = None,
        likwid: dict[Any, Any] | None = None,
        perf_events: dict[Any, Any] | None = None,
        line_profile: dict[Any, Any] | None = None,
        file_path: _Path | None = None,
        is_root: bool = True,
        exclusive_totals: dict[Any, Any] | None = None,
        event_data_available: bool = True,
        threads: dict[int, list[ThreadInfo]] | None = None,
        tasks: dict[int, list[TaskInfo]] | None = None,
    ) -> ProfilingResults: ...
    @classmethod
    def from_h5(cls, file_path: _Path, verbose: bool = False) -> ProfilingResults:
        """Same as ``read_h5``."""
    @classmethod
    def _from_native(cls, native: NativeRun) -> ProfilingResults: ...
    def _native_run(self) -> NativeRun: ...
    def __getitem__(self, key: str, /) -> MPIRegion: ...
    def __iter__(self) -> Iterator[MPIRegion]: ...
    def __len__(self) -> int:
        """Number of items (calls, ranks, regions or lanes)."""
    def __contains__(self, key: str, /) -> bool: ...
    def reconstruct(self) -> list[int]:
        """Reconstruct every rank now (GIL released); returns the ranks. Raises NestingError."""
    def call_arrays(self, rank: int = 0) -> CallArrays:
        """The cached reconstruction of ``rank``. Raises NestingError."""
    def split_by_lane(self, rank: int = 0) -> LaneSplit:
        """``split_by_lane(call_arrays(rank))`` with the grouping reused from the cache."""
    def get_region(self, region_name: str) -> MPIRegion:
        """``KeyError`` for an unknown name."""
    def get_regions(self, include: _Patterns = None, exclude: _Patterns = None) -> list[MPIRegion]:
        """Regions filtered by ``re.match`` patterns, sorted by earliest first start."""
    def summary(self, include: _Patterns = None, exclude: _Patterns = None) -> list[dict[str, Any]]:
        """One dict per region (s). Raises NestingError."""
    def to_dataframe(
        self, include: _Patterns = None, exclude: _Patterns = None, per_rank: bool = False
    ) -> Any:
        """``summary()`` as a pandas DataFrame."""
    def events(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        ranks: _Ranks = None,
        relative: bool = True,
        origin: float | None = None,
    ) -> list[dict[str, Any]]:
        """One dict per call, times s minus the origin."""
    def to_events_dataframe(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        ranks: _Ranks = None,
        relative: bool = True,
        origin: float | None = None,
    ) -> Any:
        """``events()`` as a pandas DataFrame."""
    def call_stack(
        self,
        rank: int = 0,
        include: _Patterns = None,
        exclude: _Patterns = None,
        relative: bool = True,
        origin: float | None = None,
    ) -> list[dict[str, Any]]:
        """``build_call_stack`` of the filtered regions. Raises NestingError."""
    def call_graph(
        self, rank: int = 0, include: _Patterns = None, exclude: _Patterns = None
    ) -> list[dict[str, Any]]:
        """``call_id, parent_id, name, call_index, depth`` per call of ``rank``."""
    def lane_label(self, lane: int, rank: int = 0) -> str:
        """``"MainThread"``, ``"Task-2 (fetch) on MainThread"``, ``"unknown lane"``, ...; a
        lane ``rank`` does not have gets a label made from its id (``"thread 7"``,
        ``"task 50"``), as 0.7.5 gives it."""
    def thread_summary(self, rank: int = 0) -> list[SummaryRow]:
        """One dict per thread of ``rank``, s: ``index, name, alive, wall_time`` (start to end,
        or to the run's end while alive), ``cpu_time`` (CPU burned during the run),
        ``cpu_time_total`` (whole life, the reference's figure), ``num_calls``,
        ``region_time`` (wall-clock union of the top-level calls on the thread's lane and
        its tasks' lanes, never above ``wall_time``); with ``track_async`` (else None)
        ``held_time`` (its own calls outside task steps, plus the steps), ``await_time``
        (its tasks' calls open with none running), ``task_step_time`` and
        ``task_await_time_sum`` (the tasks' awaits summed: a per-task sum);
        ``ready_wait_time`` (s in which some task resumed on the thread was ready but waited
        for it: the union of their ready waits, at most ``wall_time``; None for a thread that
        ran no task step or whose loop could not tell); ``idle_time`` (s its instrumented
        event loops waited with nothing ready; part of ``held_time`` when the loop runs inside
        a call of the thread's own lane; None for a thread that ran no instrumented loop:
        no ``track_async``, uvloop, gevent). Raises NestingError."""
    def task_summary(self, rank: int = 0) -> list[SummaryRow]:
        """One dict per task/greenlet of ``rank``, s: ``index, kind, name, coro_name,
        thread_index, thread, done, wall_time, num_calls, region_time, held_time,
        await_time`` (held + await = region_time; None without an await column),
        ``ready_wait_time`` (s ready to resume while its loop ran other code; None when not
        known). Raises NestingError."""
    def loop_blocks(self, rank: int = 0, threshold: float = 0.01) -> list[dict[str, Any]]:
        """The event-loop blocks of ``rank`` lasting at least ``threshold`` s, longest first:
        dicts ``thread, task`` (-1: a plain callback, or a gevent thread's main greenlet),
        ``start`` (s from the run's start), ``duration`` (s), ``region`` and
        ``delayed_tasks`` (None when not known: a gevent hub's or uvloop's block). Raises
        ValueError for a threshold below the recording floor (0.001 s) or a rank the run
        does not have."""
    def get_likwid_regions(self, rank: int | None = None) -> dict[Any, Any]:
        """LIKWID regions (always empty: not recorded by this edition)."""
    def get_perf_events(self, rank: int | None = None) -> dict[Any, Any]:
        """perf events (always empty: not recorded by this edition)."""
    def default_title(self) -> str:
        """``"<label> - <relative path> (N rank(s))"``."""
    def print_summary(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        ranks: _Ranks = None,
        sort: str = "total",
        title: str | None = None,
        stream: TextIO | None = None,
        suppress_notes: bool = False,
        columns: Sequence[str] | None = None,
        percentage_mode: str = "coverage",
        *,
        top: int | None = None,
        all_tasks: bool = False,
    ) -> None:
        """Print the summary report to ``stream`` (default stdout)."""
    def _repr_html_(self) -> str:
        """Notebook view (HTML table)."""
    def to_arrow(
        self, include: _Patterns = None, exclude: _Patterns = None, per_rank: bool = False
    ) -> _ArrowTable:
        """The region summary as an Arrow table. ``ValueError`` when a filter matches nothing."""
    def threads_frame(self) -> _ArrowTable:
        """Thread table of every rank (``ThreadInfo`` fields, s since the run start; ``cpu_time``
        during the run, ``cpu_time_total`` the whole life) as an Arrow table."""
    def tasks_frame(self) -> _ArrowTable:
        """Task table of every rank (``TaskInfo`` fields) as an Arrow table."""
    def thread_summary_frame(self, rank: int = 0) -> _ArrowTable:
        """``thread_summary(rank)`` as an Arrow table. Raises NestingError."""
    def task_summary_frame(self, rank: int = 0) -> _ArrowTable:
        """``task_summary(rank)`` as an Arrow table. Raises NestingError."""
    def events_frame(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        ranks: _Ranks = None,
        relative: bool = True,
        origin: float | None = None,
    ) -> _ArrowTable:
        """``events()`` as an Arrow table (lane columns and ids kept)."""
    def to_polars(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        per_rank: bool = False,
        *,
        table: Any = None,
    ) -> Any:
        """A ``polars.DataFrame`` of the summary (or of ``table``)."""
    def to_pandas(
        self,
        include: _Patterns = None,
        exclude: _Patterns = None,
        per_rank: bool = False,
        *,
        table: Any = None,
    ) -> Any:
        """A ``pandas.DataFrame`` of the summary (or of ``table``)."""
    @property
    def _native(self) -> NativeRun: ...
    @property
    def label(self) -> str | None:
        """The run's label (settable), or None."""
    @label.setter
    def label(self, value: str | None) -> None: ...
    @property
    def display_label(self) -> str:
        """The label, else the file's stem."""
    @property
    def file_path(self) -> Path:
        """The file read or written."""
    @property
    def metadata(self) -> dict[str, Any]:
        """Rank 0's metadata (a mutable dict)."""
    @property
    def num_ranks(self) -> int:
        """Number of MPI ranks of the run."""
    @property
    def num_nodes(self) -> int | None:
        """``metadata["num_nodes"]``, else 1 for a single rank, else None."""
    @property
    def is_root(self) -> bool:
        """False for the per-rank sets of a non-root MPI process (merging ignores them)."""
    @property
    def has_event_data(self) -> bool:
        """False for a summary-only result (``read_h5_summary``): per-call APIs raise."""
    @property
    def has_likwid(self) -> bool:
        """Always False (this edition records no LIKWID data)."""
    @property
    def has_perf_events(self) -> bool:
        """Always False (this edition records no perf events)."""
    @property
    def likwid_ranks(self) -> list[int]:
        """Ranks with LIKWID data (always empty)."""
    @property
    def line_profile(self) -> dict[Any, Any]:
        """Line-profiler data (always empty)."""
    @property
    def region_names(self) -> list[str]:
        """Region names, insertion order."""
    @property
    def threads(self) -> dict[int, list[ThreadInfo]]:
        """``{rank: [ThreadInfo, ...]}`` in index order; ``{}`` when threads were not tracked."""
    @property
    def tasks(self) -> dict[int, list[TaskInfo]]:
        """``{rank: [TaskInfo, ...]}`` in creation order; ``{}`` without tasks."""
    @property
    def run_start_time(self) -> float | None:
        """``metadata["start_time_ns"] / 1e9`` (s, recording clock) or None."""
    @property
    def finalize_time(self) -> float | None:
        """``metadata["finalize_time_ns"] / 1e9`` (s, recording clock), or None."""
    @property
    def startup_time(self) -> float:
        """``minimum_start_time - time_origin``, s."""
    @property
    def total_time(self) -> float | None:
        """finalize - start, s, or None."""
    @property
    def minimum_start_time(self) -> float:
        """Earliest first start over regions with calls, s (0.0 if none)."""
    @property
    def maximum_end_time(self) -> float:
        """Latest end over regions with calls, s (0.0 if none)."""
    @property
    def time_origin(self) -> float:
        """``run_start_time`` if set, else ``minimum_start_time`` (s)."""
    @property
    def time_span(self) -> float:
        """``maximum_end_time - minimum_start_time``, s."""

def merge_results(
    *result_sets: ProfilingResults,
    label: str | None = None,
    file_path: _Path | None = None,
    stack: bool | None = None,
) -> ProfilingResults:
    """Several result sets as one. ``ValueError`` when none is given or (not stacking) a
    region name appears in two sets."""

# ---------------------------------------------------------------------------------------------
# call stacks

@final
class CallArrays:
    """One rank's reconstructed nesting in call-id order; every array has shape ``(n_calls,)``.
    ``start_ns``/``end_ns``/``exclusive_ns`` int64 ns (recording clock); index columns int32."""

    names: list[str]
    source_files: list[str | None]
    source_lines: list[int | None]
    _fields: list[str]
    def __len__(self) -> int:
        """Number of items (calls, ranks, regions or lanes)."""
    def __iter__(self) -> Iterator[Any]: ...
    def __getitem__(self, key: int, /) -> Any: ...
    @property
    def start_ns(self) -> _I64:
        """Call starts, int64 ns (absolute, recording clock)."""
    @property
    def end_ns(self) -> _I64:
        """Call ends, int64 ns (absolute, recording clock)."""
    @property
    def exclusive_ns(self) -> _I64:
        """Duration minus direct children on the lane, int64 ns."""
    @property
    def parent(self) -> _I32:
        """Index of the enclosing call, -1 for a root."""
    @property
    def depth(self) -> _I32:
        """Nesting depth per call (0 for a root), int32."""
    @property
    def region_index(self) -> _I32:
        """Index into ``names`` per call, int32."""
    @property
    def call_index(self) -> _I32:
        """Position of the call in its region's arrays, int32."""
    @property
    def lane(self) -> _I32:
        """Lane per call; empty when no region had a thread column."""
    @property
    def set_aside(self) -> _I64:
        """Ids of calls the run's reconstruction set aside (they start inside another call of
        their lane and end after it), ascending; empty from ``build_call_arrays``, which
        raises ``NestingError`` instead. Such a call is a root with its whole duration as
        exclusive time; exports and timelines leave it out."""

@final
class LaneSplit:
    """``(lane, CallArrays)`` pairs in ascending lane value; a read-only sequence."""

    @overload
    def __getitem__(self, key: int, /) -> tuple[int, CallArrays]: ...
    @overload
    def __getitem__(self, key: slice, /) -> list[tuple[int, CallArrays]]: ...
    def __iter__(self) -> Iterator[tuple[int, CallArrays]]: ...
    def __len__(self) -> int:
        """Number of items (calls, ranks, regions or lanes)."""
    def __eq__(self, value: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]
    def lane_sizes(self) -> _I64:
        """Calls per lane (int64), aligned with ``lanes``."""
    @property
    def lanes(self) -> _I64:
        """Lane values, ascending (int64)."""

@final
class Comparison:
    """What changed between two runs or groups of runs (``scope_profiler.compare``): rows
    sorted by the size of the change of time per run, largest first."""

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One dict per region (or call path): ``name`` (``path`` too by call path),
        ``base_calls``, ``new_calls`` (mean calls per run), ``base_time``, ``new_time`` (mean
        inclusive s per run), ``change``, ``ci_low``, ``ci_high`` (None when unknown),
        ``verdict``, ``note``."""
    @property
    def base(self) -> dict[str, Any]:
        """``{"label": str, "runs": [str, ...]}`` of the base side."""
    @property
    def new(self) -> dict[str, Any]:
        """``{"label": str, "runs": [str, ...]}`` of the new side."""
    @property
    def by(self) -> str:
        """``"region"`` or ``"path"``."""
    @property
    def threshold(self) -> float:
        """The verdict threshold, a fraction."""
    @property
    def row_level(self) -> float:
        """The level of each row's interval (together they hold at 95 %)."""
    def regressions(self, pct: float | None = None) -> list[dict[str, Any]]:
        """Rows "slower" with ``ci_low`` above ``pct`` percent (default: the threshold)."""
    def to_json(self) -> str:
        """The comparison as ``scope-profiler diff --json`` prints it."""
    def to_arrow(self) -> _ArrowTable:
        """The rows as an Arrow table."""
    def to_polars(self) -> Any:
        """The rows as a ``polars.DataFrame``."""
    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame`` (through pyarrow)."""
    def _repr_html_(self) -> str:
        """The notebook view: at most 50 rows, and how many more there are."""
    def __len__(self) -> int:
        """Number of rows."""

def compare_runs(
    base: Sequence[_Path | ProfilingResults],
    new: Sequence[_Path | ProfilingResults],
    threshold: float = 0.05,
    by: str = "region",
) -> Comparison:
    """The comparison of the runs ``new`` with the runs ``base`` (paths, directories of
    runs, ``ProfilingResults``). Raises ValueError, NestingError, or as ``load``."""

def build_call_arrays(regions: Mapping[str, Any] | Sequence[Any], rank: int) -> CallArrays:
    """Reconstruct ``rank`` of ``regions``. Raises NestingError."""

def build_call_stack(
    regions: Mapping[str, Any] | Sequence[Any], rank: int, origin: float = 0.0
) -> list[dict[str, Any]]:
    """One dict per call, start order, times s minus ``origin``. Raises NestingError."""

def call_stack_roots(calls: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indices of the top-level calls of a ``build_call_stack`` result."""

def call_stack_children(calls: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Child indices per call of a ``build_call_stack`` result."""

def split_by_lane(calls: CallArrays) -> LaneSplit:
    """One ``CallArrays`` per lane, ascending lane value."""

def lane_groups(lane: npt.ArrayLike) -> tuple[_I64, _I64, _U32]:
    """``(lanes, offsets, order)``: lane ``lanes[k]`` holds ``order[offsets[k]:offsets[k+1]]``."""

# ---------------------------------------------------------------------------------------------
# files, CLI, run transport

def read_h5(file_path: _Path, verbose: bool = False) -> ProfilingResults:
    """Load a profile (schema 1-3). Raises ``CorruptProfileError``, ``HDF5SchemaError``,
    ``OSError`` naming the file. When ``file_path`` is missing but the sidecar of a
    ``flush_interval`` recording whose process is gone exists, it is first recovered from
    the sidecar; a file older than such a sidecar is read as it is. Both with a
    ``RuntimeWarning`` naming both files."""

def read_h5_summary(
    file_path: _Path,
    verbose: bool = False,
    *,
    fallback: bool = True,
    include_likwid: bool = True,
    include_line_profile: bool = True,
    regions: str | Sequence[str] | None = None,
    ranks: _Ranks = None,
) -> ProfilingResults:
    """Load statistics without per-call events. Raises ``SummaryDataUnavailable`` on schema 1
    without ``fallback``."""

def summary_text(run: NativeRun, title: str) -> str:
    """The summary report of a run as text."""

def finalize_summary_title(
    requested: str | None, written: bool, label: str, ranks: int
) -> str | None:
    """The title of ``finalize(verbose=True)``'s summary: ``requested`` (``setup(output=)``)
    when the file was written, else ``"<label> (in memory, N rank[s])"``."""

def guard_sigterm() -> bool:
    """Put the profiler's guard in front of the SIGTERM handler just installed with
    ``signal.signal()`` (on the main thread, right after it): a forked child that receives
    SIGTERM before it sets its own handler dies by the default action, and a SIGTERM handled
    just before the main thread blocked is sent again to that thread every 20 ms until the
    Python handler calls :func:`sigterm_taken`. False (nothing done) when SIGTERM's action is
    the default or ignore. ``OSError`` when the OS refuses the handler."""

def sigterm_taken() -> bool:
    """The profiler's Python-level SIGTERM handler runs: stop sending SIGTERM again to the
    main thread (see :func:`guard_sigterm`). True when this run of the handler is owed only to
    a re-sent SIGTERM (the handler already ran for the last one sent from outside): the
    handler then does nothing. Harmless when nothing was sent."""

def sigterm_received() -> bool:
    """Whether SIGTERM reached this process since :func:`guard_sigterm` - at the moment it
    came, before its Python handler ran - or, in a child forked from it, reached the parent
    before the fork (such a child would never have been started without the profiler, and
    ends by the signal)."""

def cli_main(argv: list[str]) -> tuple[int, dict[str, Any] | None]:
    """Parse and carry out ``argv``: ``(exit_code, None)``, or ``(0, request)`` for ``run``
    (``request["session"]``: the run's ``session(...)`` keywords). A ``run`` of a script that
    is not a file prints ``error: ...`` and gives exit code 2."""

def run_output_paths(output: str) -> tuple[int, str | None, str]:
    """``run``'s output ``output`` (a ``--config`` file's ``file_path``) checked as ``-o`` is:
    ``(0, None, recording)`` (the HDF5 file the run writes), or the exit code and the error's
    text."""

def cli_after_run(
    output: _Path,
    h5: _Path,
    *,
    quiet: bool,
    speedscope: bool,
    track_threads: bool,
    processes: str | None,
    pid: int,
    argv: list[str],
    module: bool,
    recorded: NativeRun | None,
    sort: str = "total",
    top: int | None = None,
    all_tasks: bool = False,
    untracked_loops: list[str] = ...,
    signalled: bool = False,
) -> str | None:
    """The end of ``run`` once the session wrote ``h5``: render ``output`` from it (JSON
    profile, HTML report; ``h5`` is then removed), summary (unless ``quiet``) and speedscope
    file named after ``output``. ``processes``: the directory the followed processes
    recorded into; their files are first stacked after ``h5``'s run as rank blocks (this
    process described as ``pid PID: ARGV``, ``-m`` first for a ``module``), the result written
    over ``h5``, and the directory removed once that is written. ``recorded``: the run this
    process just wrote to ``h5``, used instead of reading it back when its ``file_path`` is
    ``h5``. None, or the error line to print when that failed (naming the file; a failed
    rendering keeps ``h5``, a failed merge keeps the processes' directory and names the
    command that merges it). ``signalled``: the run ends by a signal; the merge first waits
    (at most 2 s) for followed processes still writing their files."""

def profile_not_written(error: str, kept: str | None = None) -> str:
    """The error line of a run whose session could not write its file, naming the followed
    processes' directory when it stays (``kept``)."""

def terminated_line(signum: int) -> str:
    """The line of ``run`` when SIGTERM ends the script or its end (the profile is written
    first, then the run ends by the signal)."""

def signal_while_writing(signum: int, name: str) -> str:
    """The line of ``run`` when a signal arrives while the profile is written or the followed
    processes' files are merged (that goes on; then the run ends by the signal)."""

def calls_after_the_profile(calls: int) -> str | None:
    """The line at the exit of ``run`` when ``calls`` calls were recorded after the profile
    was written (they are not in it); None for none."""

def plain_warning(process: str | None, category: str, message: str) -> str:
    """A warning the profiler raises from its own code as ``run`` prints it, one line:
    ``scope-profiler: Category: message``, in a followed process ``scope-profiler
    [<process>]: Category: message``."""

# ---------------------------------------------------------------------------------------------
# following processes (``scope_profiler._follow``)

def describe_process(
    pid: int,
    parent_pid: int | None,
    multiprocessing_name: str | None,
    multiprocessing_child: bool,
    forked: bool,
    argv: list[str],
    orig_argv: list[str],
) -> str:
    """The process as a merged run's ``processes`` metadata names it: ``pid N (child of P):
    WHAT`` (``pid N: WHAT`` without ``parent_pid``), ``WHAT`` a multiprocessing process's
    name, ``fork: ARGV`` for a forked process (``argv``), else its command line
    (``orig_argv``, ``python`` for the interpreter), one line of at most 200 characters."""

def exit_write_failure(error: str) -> str:
    """The line on stderr when writing the profile before ``os._exit`` failed (the exit goes
    ahead)."""

def followed_write_failure(pid: int, error: str) -> str:
    """The line on stderr of a followed process (``pid``) whose file could not be written
    (its exit status stands)."""

def private_directory(output: str, pid: int) -> str:
    """The directory the processes ``run`` (process ``pid``) follows record into:
    ``<output>.procs-<pid>``."""

def followed_recording(directory: str, pid: int) -> str:
    """The file a followed process records into: ``<directory>/<start ns, 20 digits>-<pid>.h5``
    (now, wall clock ns as ``time.time_ns()``; the name order is the start order)."""

def started_marker(recording: str) -> str:
    """The ``.started`` marker beside a followed process's recording (its extension
    replaced)."""

def tracking_upgrade(
    script: tuple[bool, bool], host: tuple[bool, bool], host_file: str
) -> tuple[list[str], str] | None:
    """A hosted script's ``setup()`` asking for more tracking than ``run``'s session
    (``(track_threads, track_async)`` each): ``(settings the run restarts with, the stderr
    line naming host_file)``, or None when it asks for nothing more."""

def multiprocessing_helper(argv: list[str]) -> bool:
    """Whether ``argv`` (``sys.orig_argv``) starts one of multiprocessing's own server
    processes (the forkserver, the resource tracker) or loky's resource tracker, not a
    process of the program."""

def unique_labels(labels: list[str]) -> list[str]:
    """Run labels with repeats made distinct, as every exporter names runs: the second
    ``"run"`` is ``"run (2)"``, the third ``"run (3)"``."""

def instrument_plan(
    names: list[str],
    include: str | Iterable[str],
    exclude: str | Iterable[str],
    prefix: object,
    module_name: object,
) -> list[tuple[str, str]]:
    """``[(name, region), ...]``: the functions of ``names`` that ``instrument()`` decorates
    (matching a glob of ``include`` and none of ``exclude``, ``fnmatch.fnmatchcase``; each a
    glob or an iterable of globs, else ``TypeError``), with their region names
    ``"{prefix}.{name}"``, or ``"{module_name}.{name}"`` without a (true) prefix."""

def profile_command_argv(
    command: list[str],
    executable: str,
    output: str | None,
    recursive: bool,
    all: bool,
    mpi_calls: bool,
) -> tuple[list[str], str]:
    """``(argv, output_path)``: ``ProfileManager.profile_command``'s child command line
    (``executable -m scope_profiler run -q -o OUTPUT [--recursive] [--all] SCRIPT ARGS``, a
    leading Python interpreter of ``command`` dropped; OUTPUT ``profiling_data.h5`` by
    default). ``ValueError`` without a script, ``NotImplementedError`` for ``mpi_calls``."""

def _run_to_bytes(native: NativeRun) -> bytes:
    """``NativeRun`` -> bytes (pickle-free transport between processes of one job)."""

def _run_from_bytes(data: bytes | bytearray | memoryview, file_path: str = ...) -> NativeRun:
    """Bytes (any buffer) -> ``NativeRun``."""

def _stack_runs(
    parts: list[tuple[int, NativeRun | bytes]],
    metadata: dict[str, Any] | None = None,
    num_ranks: int | None = None,
    file_path: str = ...,
    write_file: bool = False,
) -> NativeRun:
    """Stack runs as blocks of ranks; optionally write ``file_path`` (schema 3, atomically)."""

# ---------------------------------------------------------------------------------------------
# exporters: return the paths written; ``TypeError`` for anything but results, ``ValueError``
# for no data / bad rank / empty filter, ``NestingError``, ``OSError`` on I/O failure.

_Results = ProfilingResults | Sequence[ProfilingResults]

def export_speedscope(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write speedscope JSON files, one per run, one evented profile per lane of each requested
    rank (default ``[0]``), times in s from the earliest selected call; returns the paths
    written. ``filepath``: a file name, or a directory (existing, or ending in ``/``) for
    ``<run file stem>.speedscope.json`` inside - the rule of every export
    (``docs/exports-traces.md``). Raises ``TypeError`` for anything but results,
    ``ValueError`` for no data, an invalid rank, a filter matching nothing or no calls,
    ``NestingError``, ``IsADirectoryError`` when a file to write is a directory, ``OSError``
    on I/O failure."""

def export_prof(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    call_paths: bool = True,
    per_lane: bool = False,
    verbose: bool = True,
) -> list[Path]:
    """Write pstats ``.prof`` files (``marshal`` of the pstats dict), one per (run, rank with
    calls): one file is ``filepath`` itself, several get ``_rank<R>`` (``per_lane``: and
    ``_<lane>``); returns the paths written."""

def export_flamegraph_svg(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write one flame graph SVG per (run, rank with calls), rendered by inferno from the
    folded stacks: a tower per thread / task, widths in ns of self + children time,
    interactive (search, zoom) in a browser. One rank with calls: ``filepath`` as given
    (``.svg`` added without a suffix); several: ``<stem>[_<slug>]_rank<R><suffix>``; a
    directory: ``<run file stem>.flamegraph.svg`` inside. Returns the paths written; errors
    as ``export_speedscope``."""

def export_chrome_trace(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Chrome Trace Event JSON, one file per run (speedscope's naming rule, default
    suffix ``.trace.json``): one track per lane (threads, then tasks, each named), complete
    events in µs from the run start, identical calls with identical name and args so viewers
    aggregate them. Returns the paths written; errors as ``export_speedscope``."""

def export_perfetto(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Perfetto protobuf traces, one file per run (speedscope's naming rule, default
    suffix ``.pftrace``): a process track per rank, a thread track per thread, a task track
    (under its thread) per task, nested slices per call and ``"awaiting"`` child slices for
    a task's await time. Returns the paths written; errors as ``export_speedscope``."""

def export_pprof(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write pprof profiles, one file per run (speedscope's naming rule, default suffix
    ``.pb.gz``; a name not ending in ``.gz`` is written uncompressed): sample type
    wall/nanoseconds holding the self time per call stack, each stack rooted at its lane
    (thread / task) name. Returns the paths written; errors as ``export_speedscope``."""

def export_folded(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
    unit: Literal["ns", "us"] = "ns",
) -> list[Path]:
    """Write folded stacks, one file per run (default suffix ``.folded``): ``lane;region;child
    <self time>`` per distinct call path per lane, integer counts in ``unit`` (``"ns"``,
    exact, or ``"us"``). The lane label is the root frame (``"rank R - "`` prefixed when
    several ranks are exported). Returns the paths written; ``ValueError`` for another unit,
    other errors as ``export_speedscope``."""

def export_timeline_svg(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
    width: float = 1400.0,
    *,
    lanes: int = 64,
    window: tuple[float | None, float | None] | str | None = None,
    max_depth: int = 32,
) -> list[Path]:
    """Write the lane timeline SVG of each run (default suffix ``.timeline.svg``, ``width`` in
    px): one row per thread and task, calls as nested bars on a time axis in ms since the
    run start, await share hatched, a tooltip per bar. Never more than 32,767 px in either
    direction: at most ``lanes`` rows (the busiest by top-level call time; 0: all) plus one
    summary row for the others, at most ``max_depth`` levels per row (0: all; deeper calls
    become markers), only the calls overlapping ``window`` (``(start, end)`` seconds from the
    run start, either ``None``, or ``"START:END"``) when given, clipped to it. A caption says
    what was left out. Returns the paths written; ``ValueError`` for a bad ``width``,
    ``lanes``, ``max_depth`` or ``window``, other errors as ``export_speedscope``."""

def export_html(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write a self-contained HTML report per run (default suffix ``.html``; no server or network
    needed to open it): the region summary (calls, total/mean/min/max, exclusive time; held
    and await time when the run has await times), thread and task tables, the lane timeline
    and the flame graph. Returns the paths written; errors as ``export_speedscope``."""

def create_html_report(
    profiling_data: ProfilingResults | _Path,
    filepath: _Path,
    *,
    include: _Patterns = None,
    exclude: _Patterns = None,
    ranks: _Ranks = None,
) -> Path:
    """Write the self-contained HTML report of one run to ``filepath`` and return its path
    (the reference's entry point; ``export_html`` is the one that takes several runs).

    ``profiling_data`` is a ``ProfilingResults`` or the path of a ``.h5`` file (read with
    ``read_h5``); ``ranks`` defaults to every rank of the run. The report has the region
    summary, thread and task tables (held/await columns for ``track_async`` runs), the lane
    timeline and the flame graph; a run without calls gets a page saying so (as 0.7.5).
    Errors: as ``read_h5`` for a path, ``ValueError`` for a filter matching no region or a
    rank the run does not have.
    Deviation: the reference's comparison reports (several runs), ``sort=``, ``columns=`` and
    its Plotly charts are not implemented."""

def export_parquet(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
) -> list[Path]:
    """Write Parquet files per run (default suffix ``.parquet``): the events (one row per call:
    rank, region, call_index, start/end/duration ns, call_id, parent_id, thread, task,
    await_ns, depth, lane, exclusive_ns) and, beside it, the lanes (``x.lanes.parquet``:
    thread and task tables, join on ``(rank, lane)``). Returns events and lanes paths in
    order; errors as ``export_speedscope``."""

# ---------------------------------------------------------------------------------------------
# C / Fortran region traces (.spt)

class TraceFormatError(ValueError):
    """A file is not a scope-profiler Fortran/C region trace (.spt), is truncated, or uses an
    unknown format version. The message names the file."""

def find_traces(inputs: _Path | Iterable[_Path]) -> list[Path]:
    """The native output files among ``inputs`` (files, and directories searched
    non-recursively for ``*.spt`` and ``*_rank<N>.h5``), sorted, without duplicates.
    Raises ``FileNotFoundError`` for an input that does not exist or a directory with
    neither."""

def native_regions(
    inputs: _Path | Iterable[_Path], rank: int
) -> list[tuple[str, _I64, _I64, str | None, int | None]]:
    """``(name, starts, ends, source_file, source_line)`` of every region rank ``rank``
    recorded in the native output ``inputs`` (``.spt`` traces, per-rank ``.h5`` profiles;
    files in ``find_traces`` order, each file's regions in its order), starts and ends int64
    ns: what ``NativeRecorder.finalize(native=...)`` takes. Raises ``FileNotFoundError``,
    ``TraceFormatError``, ``OSError``, and as ``read_h5``."""

@final
class RegionTrace:
    """One region of a ``.spt`` trace: unpacks as ``(start_times, end_times)`` (int64 ns
    arrays, the clock of ``time.perf_counter_ns``), with the region's source location."""

    @property
    def start_times(self) -> _I64:
        """Call start times, int64 ns."""
    @property
    def end_times(self) -> _I64:
        """Call end times, int64 ns."""
    @property
    def source_file(self) -> str | None:
        """The region's source file, or ``None``."""
    @property
    def source_lineno(self) -> int | None:
        """The region's source line, or ``None``."""
    def __getitem__(self, index: int, /) -> _I64:
        """``(start_times, end_times)[index]``."""
    def __iter__(self) -> Iterator[_I64]:
        """``start_times``, then ``end_times``."""
    def __len__(self) -> int:
        """Always 2."""

def read_trace(path: _Path) -> tuple[int, dict[str, RegionTrace]]:
    """One rank's ``.spt`` trace: ``(rank, {region name: (start_times, end_times)})``, int64
    ns arrays, file order; each value (a ``RegionTrace``) also has the region's source
    location as ``source_file`` / ``source_lineno`` (``None`` when the trace has none).
    Raises ``TraceFormatError`` (a ``ValueError``, naming the file) when the file is not a
    trace, is truncated, has trailing bytes, holds a region twice or uses an unknown version;
    ``OSError`` when it cannot be read."""

def read_native_h5(path: _Path) -> tuple[dict[int, dict[str, Region]], dict[str, Any]]:
    """A per-rank HDF5 profile of an ``SP_USE_HDF5`` C build (any profile works):
    ``({rank: {region name: Region}}, metadata)``, ranks in the order they first appear over
    the regions in ``get_regions()`` order, each rank's regions in that order. Raises as
    ``read_h5``."""

def read_native_ranks(path: _Path) -> tuple[dict[int, dict[str, Region]], dict[str, Any]]:
    """One native output file, either format: ``({rank: {region name: Region}}, metadata)``;
    a ``.h5`` name as ``read_native_h5``, anything else a ``.spt`` trace: its one rank, each
    region (file order) a standalone ``Region`` of its calls (int64 ns) and source location,
    and no metadata. Raises as ``read_native_h5`` / ``read_trace``."""

def load_traces(inputs: _Path | Iterable[_Path], label: str | None = None) -> ProfilingResults:
    """Native output (``.spt`` traces and per-rank ``.h5`` profiles, mixed freely) as one
    ``ProfilingResults``: every rank in one result (``num_ranks``: the ranks the files
    claim), metadata that of the file of the lowest rank with metadata, then
    ``source="native"``, ``trace_format_version``, ``start_time_ns`` (the earliest first
    call start, ns) and ``label``; ``file_path`` is ``label or "native_trace"``. Native
    regions have no thread or task: one stack per rank, lane -1. Raises ``TraceFormatError``
    when two files claim the same rank, ``ValueError`` for a negative rank with regions, and
    as :func:`find_traces` / :func:`read_native_ranks`."""

# ---------------------------------------------------------------------------------------------
# JSON profile (spec-exports §5)

class JSONProfileError(ValueError):
    """The file is not a scope-profiler JSON profile, uses a newer format version, or is
    malformed. The message names the file."""

def export_json(
    profiling_data: _Results,
    filepath: _Path,
    ranks: _Ranks = None,
    include: _Patterns = None,
    exclude: _Patterns = None,
    verbose: bool = True,
    indent: int | None = None,
) -> list[Path]:
    """Write one JSON profile per root run (times as recorded: int64 ns, recording clock);
    returns the paths written. Default ranks: every rank. Raises ``TypeError`` for anything
    but results, ``ValueError`` for an empty list, ``OSError`` when writing fails."""

def write_json(
    results: ProfilingResults,
    filepath: _Path,
    *,
    include: _Patterns = None,
    exclude: _Patterns = None,
    ranks: _Ranks = None,
    indent: int | None = None,
) -> Path:
    """Write one run to ``filepath`` as a JSON profile (``.gz``: gzip-compressed); returns the
    path written: ``filepath`` exactly, or for a directory (existing, or ending in ``/``)
    ``<run file stem>.json`` inside. Raises ``OSError`` when writing fails."""

def read_json(file_path: _Path, verbose: bool = False) -> ProfilingResults:
    """Read a JSON profile (plain or gzip-compressed). Raises ``FileNotFoundError``,
    ``JSONProfileError`` (a ``ValueError``) naming the file, ``OSError``."""

def profile_format(path: _Path) -> str:
    """``"json"`` for ``.json``/``.json.gz`` names, ``"html"`` for ``.html``/``.htm``, else
    ``"hdf5"``."""

def load(path: _Path, verbose: bool = False) -> ProfilingResults:
    """Read a profile whatever its format, chosen by the file's contents: ``read_json`` or
    ``read_h5``. Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for an
    HTML report (write-only: it renders a run rather than storing it)."""

def read_profile(file_path: _Path, verbose: bool = False) -> ProfilingResults:
    """Read a profile as JSON (``.json``, ``.json.gz``) or HDF5 (anything else), whichever
    its name says (``load`` goes by contents)."""

def read_profile_summary(file_path: _Path, **kwargs: Any) -> ProfilingResults:
    """A JSON profile (``.json``, ``.json.gz`` name) read whole (``read_json``; ``kwargs``
    ignored), anything else ``read_h5_summary(file_path, **kwargs)``. Raises as the reader."""

def write_profile(results: ProfilingResults, file_path: _Path, **kwargs: Any) -> Path:
    """Write ``results`` in the format ``file_path``'s name asks for: ``.json``/``.json.gz``
    a JSON profile (``kwargs`` go to ``write_json``), ``.html``/``.htm`` the HTML report of
    every rank (``create_html_report``, ``kwargs`` go to it), anything else HDF5 (``kwargs``
    ignored). Returns the path written; raises as the writer."""

def sniff_profile_format(path: _Path) -> str:
    """The format of the file's contents (``"hdf5"``, ``"json"``, ``"html"``) by its first
    bytes, else by its name. Raises ``FileNotFoundError``, ``OSError``."""

# ---------------------------------------------------------------------------------------------
# datasets of many runs (``scope_profiler.dataset``)

def dataset_find(runs: Sequence[_Path]) -> tuple[list[str], list[tuple[str, str]]]:
    """The run files the paths name (directories searched), and ``(path, message)`` for the
    paths that do not exist."""

def dataset_prepare(out_dir: _Path, append: bool) -> list[tuple[str, str]]:
    """Make the directory ready for a build; ``(run id, row json)`` of the runs already in
    it. Raises ``ValueError`` (an existing dataset without ``append``, foreign files) and
    ``OSError``."""

def dataset_convert(
    paths: Sequence[_Path], out_dir: _Path, present: set[str], jobs: int = 1
) -> list[tuple[str, str, str]]:
    """Convert each file into the dataset, ``jobs`` at a time, the GIL released: one
    ``(kind, path, payload)`` per path, kind ``"added"`` (payload: the row as JSON),
    ``"present"`` (the run id) or ``"failed"`` (the message)."""

def dataset_commit(
    out_dir: _Path, existing: Sequence[str], converted: Sequence[tuple[str, str, str]]
) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    """Write the runs table of the existing rows and the runs added; returns the ids added,
    ``(path, run id)`` skipped as present, ``(path, message)`` failed. Raises ``OSError``."""

def dataset_empty_table(name: str) -> _ArrowTable:
    """The dataset table ``name`` without rows, ``run`` first. Raises ``ValueError``."""

# ---------------------------------------------------------------------------------------------
# the package's names (``scope_profiler/__init__.py``), pause() (``_manager``), region
# handles and factories (``_manager_api``)

def lazy_names() -> dict[str, tuple[str, str]]:
    """``{name: (module, attribute)}``: the package names loaded from their module (relative
    to the package) on first use; a new dict."""

def unsupported_names() -> dict[str, str]:
    """``{name: reason}``: the public names of scope-profiler 0.7.5 this package cannot
    honour; a new dict."""

def package_attribute(name: str) -> Any:
    """The module ``__getattr__`` of ``scope_profiler`` for a name not in ``lazy_names()``:
    ``__version__``; ``NotImplementedError`` saying why for a name of
    ``unsupported_names()``, ``AttributeError`` for any other."""

@final
class MetadataScope:
    """One ``manager.metadata(**values)`` block (``scope_profiler._metadata``): a context
    manager yielding the merged dict (the enclosing blocks' values of this context updated
    with ``values``; changes to it inside the block are recorded), and a decorator.

    At exit, when the dict is not empty and ``manager.is_active()``, the block goes to the
    recorder as ``add_metadata_scope(entry ns, exit ns, json.dumps(dict))`` (the
    ``perf_counter_ns`` clock)."""

    def __new__(cls, manager: Any, values: dict[str, Any]) -> MetadataScope: ...
    def __enter__(self) -> dict[str, Any]:
        """Merge, set the manager's ``_metadata_context`` and read the clock; the merged dict.
        ``RuntimeError`` ("a metadata() block can be entered only once; call metadata()
        again") when entered before."""
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Read the clock, reset the context variable (a ``ValueError``: exited in another
        context, is ignored), record the block. ``TypeError`` ("per-call metadata must be
        JSON values ...") for a value ``json.dumps`` refuses; ``RuntimeError`` when never
        entered."""
    def __call__(self, func: Callable[..., Any]) -> MetadataCall:
        """``func`` wrapped so that each call runs in a fresh block of these values."""

@final
class MetadataCall:
    """A function whose every call runs inside a metadata block: ``@profile(metadata=...,
    record_outcome=...)``'s wrapper, or ``@manager.metadata(**values)`` on a function."""

    def __new__(
        cls, manager: Any, profiled: Any, metadata: Any, record_outcome: bool
    ) -> MetadataCall:
        """The wrapper of ``profiled`` (a ``ProfiledFunction``; called directly while its
        region is unbound). ``metadata``: a mapping or a callable given the call's arguments
        returning one (``TypeError`` as ``dict(**values)`` for anything else); with
        ``record_outcome`` the dict gets ``status`` ``"ok"``/``"error"`` and ``exception``
        (the exception type's name)."""
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Any: ...
    def __reduce__(self) -> str | tuple[Any, ...]: ...

def check_sampling(every: object, start: object) -> None:
    """``sample_every()``'s arguments: ``ValueError`` unless ``every`` is a positive int and
    ``start`` an int (``bool`` is neither)."""

def sampled_step(timestep: object, every: int, start: int) -> bool:
    """Whether ``sample_every(every, start)`` records ``timestep`` (``start`` and every
    ``every``-th timestep after it). ``TypeError`` for a ``timestep`` that is not an int."""

def check_settings_attribute(name: str) -> None:
    """For the module ``__getattr__`` of ``scope_profiler._settings``: ``AttributeError``
    unless ``name`` is a name of ``_options`` it answers (``ProfilingOptions``, the option
    groups, ``load_profiling_config``)."""

def check_pause(open_names: list[str]) -> None:
    """``RuntimeError`` ("cannot pause while profiling scopes are active: 'a', 'b', 'c'...")
    when calls of regions other than a session's root region are open; ``open_names``: the
    open calls' region names, outermost first."""

# manager (``scope_profiler._manager``): its rules

#: The name of a session's root region.
SESSION_ROOT_REGION: str
#: The ``RuntimeWarning`` of ``flush_interval`` on an MPI rank (nothing streamed).
NO_STREAMING_UNDER_MPI: str

@final
class ManagerLifecycle:
    """Where one manager class's run is (INACTIVE, ACTIVE, FINALIZED) and which of its
    regions record: the run's enabled opt-in tags and its ``setup(region_tags=...)``
    filter."""

    def __new__(cls) -> ManagerLifecycle: ...
    @property
    def state(self) -> str:
        """``"INACTIVE"``, ``"ACTIVE"`` or ``"FINALIZED"``."""
    def setup_refusal(
        self, hosted: bool, configured: bool, replace: bool, inherited: bool
    ) -> str | None:
        """The ``RuntimeError`` message of a refused ``setup()`` (an ACTIVE run, no
        ``replace``, not a hosted script's, not inherited by a forked child), or None."""
    def filter_regions(self, region_tags: object) -> None:
        """``setup(region_tags=...)``: None, one tag, or an iterable of tags (items that are
        not ``str`` match no region)."""
    @property
    def filtered(self) -> bool:
        """Whether ``region_tags`` filters the regions."""
    def set_up(self, deactivate_profiling: bool, enable_tags: list[str]) -> None:
        """A configuration is set up: ACTIVE (INACTIVE with ``deactivate_profiling``); the
        run enables ``enable_tags``, ``SCOPE_PROFILER_ENABLE_TAGS``' and the filter's."""
    def finalized(self) -> None:
        """A finalize was done: FINALIZED."""
    def reset(self) -> None:
        """INACTIVE, no tag enabled, no filter."""
    def is_active(self, recording: bool) -> bool:
        """``recording`` (configured, profiling not deactivated) and set up."""
    def records(self, tags: list[str]) -> bool:
        """Whether a region with ``tags`` records in this run (filter, opt-in tags)."""

def register_opt_in_tags(tags: Iterable[object]) -> list[str]:
    """Make ``tags`` opt-in for every manager; the ones that were not yet. ``TypeError``
    ("opt-in tags must be non-empty strings, got ...") for a tag that is not a non-empty
    ``str``, before any is registered."""

def carries_opt_in(new: list[str], tags: Sequence[str]) -> bool:
    """Whether a region or decorator with ``tags`` carries one of the new opt-in tags."""

def check_set_up(set_up: bool, action: str) -> None:
    """``RuntimeError`` ("ProfileManager.setup() must be called before pause()") for
    ``action`` unless ``set_up``."""

def check_run_current(current: bool) -> None:
    """``RuntimeError`` ("this profiling run has been replaced") unless ``current``."""

def check_region_tags(name: object, have: tuple[Any, ...], wanted: tuple[Any, ...]) -> None:
    """``ValueError`` when region ``name``, made with tags ``have``, is asked for with
    other tags ``wanted``."""

def check_region_definition(name: object, previous: object, definition: object) -> None:
    """``ValueError`` when ``name`` was defined before (``previous``; None: not) as other
    than ``definition``."""

def check_script(path: str) -> None:
    """``FileNotFoundError`` ("no script at '...'") unless ``path`` is a file."""

def call_graph_warning(error: str) -> str:
    """The ``RuntimeWarning`` of a checkpoint whose calls do not nest."""

def calls_after_the_exit_finalize(calls: int, written: str | None = None) -> str | None:
    """The line at the interpreter's exit when ``calls`` calls were made after the exit-time
    finalize (which wrote ``written``, or no file); None for none."""

# settings (``scope_profiler._settings``)

def unanswered_host_facts(full: bool) -> list[str]:
    """The host facts of the run metadata that system calls have no answer for, which
    ``ProfilingConfigBase(answers, ...)`` takes from Python: ``platform`` (not glibc Linux),
    ``processor`` (no CPU model name) and, with ``full`` (``metadata_detail="full"``),
    ``uname``, and ``user`` / ``hostname`` when their system calls fail."""

def setting_defaults() -> tuple[dict[str, Any], dict[str, Any]]:
    """``(defaults, own_defaults)``: the reference's 29 settings with their defaults (its
    ``ProfilingConfig.__init__`` order) and this package's own (``flush_interval``, seconds
    or None; the ``recursive_*`` options); new dicts."""

def check_setting_names(names: Iterable[str]) -> None:
    """``TypeError`` with the reference's message when any of ``names`` is not a setting
    (sorted, each with the closest setting name when one is close enough, as
    ``difflib.get_close_matches`` finds it)."""

@disjoint_base
class ProfilingConfigBase:
    """The state of one run's settings: the base of ``_settings.ProfilingConfig``.

    ``ProfilingConfigBase(answers={}, /, **settings)``: ``settings`` (``setup()`` keywords;
    ``None`` keeps the default) over the defaults, checked in the reference's order and words:
    ``TypeError`` for unknown names or a ``file_path`` that is not a path, ``ValueError`` for a
    refused value or combination, ``NotImplementedError`` for a mode this package does not have.
    Takes the run origin (``start_time_ns``, ns on the recording clock) and collects the run's
    metadata (spec-hdf5 §2; a serial run: ``mpi_size = num_nodes = 1``; ``timestamp`` now, UTC
    ISO 8601; ``metadata_detail="full"`` adds ``hostname``, ``uname``, ``working_directory``,
    ``user``, ``modules`` and the job's environment variables; the host part is read once per
    process, ``answers`` are Python's where it has none: :func:`unanswered_host_facts`).
    Settings without a property of their own read as attributes of the same name
    (``AttributeError`` for any other name)."""

    #: The run's recorder once ``start()`` created it, else None.
    _native: NativeRecorder | None
    #: The run's ``ConcurrencyTracker`` once ``start()`` created it, else None.
    _tracker: Any
    #: The MPI communicator ``_mpi.configure`` attached, else None.
    _comm: Any
    def __new__(cls, answers: dict[str, str] = ..., /, **settings: Any) -> Self: ...
    def mark_started(self) -> None:
        """Take the run's origin (``start_time_ns``, also set in ``metadata``) now, once the
        recorder, the metadata and the hooks are ready. ``AssertionError`` before
        ``start()``."""

    @classmethod
    def reset(cls) -> None:
        """Compatibility no-op (configurations are per manager)."""

    @property
    def _settings(self) -> dict[str, Any]:
        """Every setting (name -> value, defaults order) as checked; the dict itself."""

    @property
    def file_path(self) -> str:
        """The HDF5 file recorded into (``os.fspath`` of the ``file_path`` setting)."""

    @property
    def label(self) -> Any:
        """The run's label, None when unset or empty."""

    @property
    def track_threads(self) -> bool:
        """Whether threads get their own rows (``track_threads``, or ``track_async``)."""

    @property
    def track_async(self) -> bool: ...
    @property
    def tracker(self) -> Any:
        """The run's ``ConcurrencyTracker``, or None when ``track_threads`` is off."""

    @property
    def start_time_ns(self) -> int:
        """The run's origin, ns on the recording clock (``time.perf_counter_ns()``'s)."""

    @property
    def buffer_limit(self) -> int:
        """Calls kept per thread buffer before they are handed on (``buffer_limit``)."""

    @property
    def flush_interval(self) -> float | None:
        """Seconds between appends to the sidecar (``flush_interval``), or None."""

    @property
    def output_mode(self) -> str: ...
    @property
    def hdf5_compression(self) -> str | None:
        """``hdf5_compression`` normalized: lower case, None for off."""

    @property
    def perf_events(self) -> tuple[Any, ...]: ...
    @property
    def enable_tags(self) -> tuple[Any, ...]: ...
    @property
    def deactivate_profiling(self) -> bool: ...
    @property
    def deactivate_file_output(self) -> bool: ...
    @property
    def paused(self) -> bool:
        """Whether recording is paused. ``AssertionError`` before ``start()``."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The run's metadata (spec-hdf5 §2); the dict itself, which callers update in place."""

    @property
    def comm(self) -> Any:
        """MPI communicator (``MPI.COMM_WORLD``) of an MPI rank, else None."""

    @property
    def memory_profile_path(self) -> None:
        """Always None (memray is not supported)."""

def output_settings(output: object, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The settings ``setup(output=output)`` sets: ``deactivate_file_output`` and, for a
    path, ``file_path`` (``output`` itself, or ``<output>.scope-profiler.h5`` for a JSON
    profile or an HTML report). ``TypeError`` when ``output`` is not None, a ``str`` or an
    ``os.PathLike`` path, or when ``overrides`` also sets ``file_path`` or
    ``deactivate_file_output``; ``ValueError`` when no file can be written at ``output``."""

def setup_from_env_settings() -> list[tuple[str, str | bool]]:
    """``setup_from_env()``'s keywords from ``SCOPE_PROFILER_OUTPUT`` (``output``),
    ``_RECURSIVE`` (``recursive_profile``), ``_AUTO_FINALIZE`` (``auto_finalize``; true for
    1/true/yes/on, any case) and ``_CONFIG`` (``config_path``); unset ones left out."""

def enabled_tags_from_env() -> list[str]:
    """The opt-in tags ``SCOPE_PROFILER_ENABLE_TAGS`` enables (comma-separated, stripped;
    ``"*"``: every tag)."""

def mpi_launch_from_env() -> bool | None:
    """Whether the environment makes this process an MPI rank (``SCOPE_PROFILER_MPI`` when
    it says yes or no, else a launcher's variable set); None when it does not say."""

#: Per-process variables set by the common MPI launchers (the reference's list).
MPI_LAUNCHER_ENV_VARS: tuple[str, ...]
#: ``SCOPE_PROFILER_MPI``: 1/true/yes/on or 0/false/no/off decides over the launchers.
MPI_OVERRIDE_ENV: str
#: The reference's ``RuntimeError`` text for ``output_mode="parallel"`` with ``track_threads``.
MPI_PARALLEL_WITH_THREADS: str

#: The tag of the messages carrying a rank's run to rank 0.
MPI_RUN_TAG: int

def mpi_message_ranges(length: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` byte ranges a rank's encoded run of ``length`` bytes crosses to
    rank 0 in (``MPI.BYTE`` messages of at most 1 GiB, in order; none for an empty run)."""

def mpi_has_work(write_file: bool, return_results: bool, verbose: bool) -> bool:
    """Whether a collective finalize has anything to do (a file to write or results to
    return)."""

def mpi_refused(write_file: bool, output_mode: str, track_threads: bool) -> str | None:
    """The ``RuntimeError`` text when the collective finalize is refused before any buffer is
    touched (``output_mode="parallel"`` with ``track_threads``), else None."""

def mpi_nesting_warning(rank: int, error: str) -> str:
    """The warning of a rank whose calls did not nest (its call graph is not recorded)."""

def mpi_failure_broadcast(type_name: str, message: str) -> str:
    """What rank 0 broadcasts when it could not write the job's file: ``"{Type}: {message}"``."""

def mpi_rank0_failure(message: str) -> str:
    """The ``RuntimeError`` text of the other ranks when rank 0 could not write the job's
    file (``message``: what it broadcast)."""

def mpi_without_mpi4py(reason: str) -> str:
    """The ``RuntimeWarning`` of a process that looks like an MPI rank but cannot import
    mpi4py (``reason``: the ``ImportError``'s text)."""

def relative_source_path(filename: str, sys_path: list[str]) -> str:
    """How ``metadata_detail="minimal"`` records a source file: relative to the working
    directory, else to the deepest entry of ``sys_path`` (``sys.path``) containing it, else
    its base name. ``OSError`` when the working directory is gone."""

# option bags and settings files (``scope_profiler._options``)

def option_group_fields() -> dict[str, dict[str, str]]:
    """``{group: {field: setting}}``: the option groups of ``ProfilingOptions`` (``memray``,
    ``gpu``, ``hdf5``) and of a settings file's ``[profiling.<group>]`` tables."""

def option_group_kwargs(group: str, bag: object) -> dict[str, Any]:
    """The flat settings an option group (``bag``: a ``MemrayOptions`` / ``GPUOptions`` /
    ``HDF5Options``) sets: each of ``group``'s fields that is not None, under its flat
    setting's name (``path`` -> ``memory_profile_path``); a new dict. ``KeyError`` for an
    unknown group, ``AttributeError`` for a field ``bag`` lacks."""

def option_bag_kwargs(bag: object) -> dict[str, Any]:
    """The flat settings of a ``ProfilingOptions``: its own settings that are not None
    (defaults order), then each group it sets (``memray``, ``gpu``, ``hdf5``) as that group's
    ``to_kwargs()``; a new dict. ``ValueError`` for a setting given twice."""

def settings_of_toml(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The flat settings of a parsed settings file: its ``[profiling]`` table (or the
    top-level table), the groups' keys as their flat settings. ``ValueError`` for a
    ``profiling`` or group that is not a table, an unknown key, a setting given twice,
    unknown settings."""

# ---------------------------------------------------------------------------------------------
# recording

def pstats_tables(
    profiling_data: ProfilingResults | Sequence[ProfilingResults],
    ranks: int | Sequence[int] | None = None,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    call_paths: bool = True,
) -> list[tuple[str, int, bytes]]:
    """What ``export_prof`` would write, without a file: one ``marshal``-led pstats dict per
    (run, rank with calls), ``(unique run label, rank, bytes)``; times in s of the recording
    clock. ``ValueError`` as ``export_prof`` (no data, unknown rank, no matching region, no
    calls on any rank asked for)."""

def perf_counter_ns() -> int:
    """The recorder clock (``CLOCK_MONOTONIC``, ns)."""

def thread_time_ns() -> int:
    """CPU time of the calling thread (``CLOCK_THREAD_CPUTIME_ID``, ns)."""

def check_region_name(name: str) -> None:
    """``ValueError`` (naming the name and why) for a region name a profile file cannot
    hold unchanged: one containing a NUL character, or a lone surrogate (not valid Unicode
    text; its ``__cause__`` is the ``UnicodeEncodeError``)."""

@final
class NativeRecorder:
    """The native state of one profiling configuration (buffers, thread table, regions)."""

    def __new__(
        cls, buffer_limit: int = 1024, track_threads: bool = False, track_async: bool = False
    ) -> NativeRecorder: ...
    def mark_start(self) -> int:
        """Mark now as the run's start for the calling thread; returns it (ns, monotonic clock)."""
    def set_register_callback(self, callback: Callable[[], object] | None = None) -> None:
        """Callable run (no arguments) on each thread right after it registers lazily; None removes it."""
    def new_task(self, kind: str, name: str, coro_name: str) -> TaskHandle:
        """Register a task lane (``kind`` "task" or "greenlet", else ``ValueError``)."""
    def wrap_task_coroutine(self, wrapped: Any, coro: Any) -> tuple[TaskHandle, TimedCoroutine]:
        """A ``"task"`` lane for an asyncio task about to run ``coro`` (its ``coro_name``:
        ``coro``'s ``__qualname__`` / ``__name__``, else its code's ``co_qualname``; named by ``adopt_task``) and ``wrapped`` (what
        the task steps) timed on it: ``(handle, timed coroutine)``."""
    def adopt_task(self, handle: TaskHandle, task: Any) -> None:
        """Follow ``task`` (an ``asyncio.Task``) on ``handle``'s row: its ``get_name()`` now,
        at each ``refresh_task_names()`` while it is referenced, and when done (a done
        callback that also marks the row done)."""
    def refresh_task_names(self) -> None:
        """Names of the adopted tasks as ``Task.get_name()`` answers now; tasks no longer
        referenced stop being followed."""
    def timed_coroutine(self, coro: Any, handle: TaskHandle) -> TimedCoroutine:
        """Wrap ``coro`` so each step runs on ``handle``'s lane and is timed (monotonic clock)."""
    def trio_lanes(self, root: Any = None) -> TrioLanes:
        """A trio instrument making the tasks of one trio run lanes of this recorder;
        ``root``: the run's root task when it is added to a run already going."""
    def greenlet_switch(self, origin: Any, target: Any) -> None:
        """A greenlet switch/throw on the calling thread: finish ``origin``'s row if it is
        dead (or name it from its outermost frame if its target was unknown), then run on
        ``target``'s lane (a new ``"greenlet"`` row at its first switch in; a main greenlet,
        without ``parent``, is the thread's bare lane)."""
    def switch_lane(self, target: TaskHandle | None = None) -> None:
        """Greenlet switch on the calling thread to ``target`` (None: the thread's bare lane)."""
    def current_task(self) -> int | None:
        """Index of the task running on the calling thread, or None."""
    def task_table(self, origin_ns: int = 0) -> list[TaskInfo]:
        """The task table as ``TaskInfo`` rows, times in s relative to ``origin_ns``."""
    def region(
        self,
        name: str,
        tags: Sequence[str] = ...,
        enabled: bool = True,
        cache: RegionCache | None = None,
    ) -> ProfileRegion:
        """The region ``name`` of this recording (same id for the same name); with
        ``cache`` (the manager's lookup), a later ``setup()`` rebinds it to that run."""
    def register_thread(self) -> int:
        """Register the calling thread; returns its thread-table index."""
    def is_registered(self) -> bool:
        """Whether the calling thread has registered with this recorder."""
    def set_paused(self, paused: bool) -> None:
        """Pause/resume: while paused, entries push a placeholder and record nothing."""
    def stop_recording(self) -> None:
        """The end of the recording (the exit-time finalize, the end of ``run``), before its
        checkpoint: no call is recorded from now on, on any thread; ``calls_after_stop``
        counts them; calls open now still close. ``set_paused(False)`` does not undo it."""
    @property
    def calls_after_stop(self) -> int | None:
        """Calls made since ``stop_recording()`` (none recorded); None before it."""
    def open_region_names(self) -> list[str]:
        """Names of regions with an open (non-paused) call on any thread, registration order."""
    def thread_table(self, origin_ns: int = 0) -> list[ThreadInfo]:
        """The thread table as ``ThreadInfo`` rows, times in s relative to ``origin_ns``;
        re-samples the calling thread's CPU time."""
    def snapshot(self) -> list[tuple[str, _I64, _I64, _I64 | None]]:
        """Completed calls per region: ``(name, starts_ns, ends_ns, thread_ids)``."""
    def has_completed_calls(self) -> bool:
        """Whether any completed call is held (``snapshot()`` non-empty), without copying."""
    def _before_fork(self) -> None: ...
    def _after_fork_in_child(self, native_id: int) -> int: ...
    def start_flush(
        self, file_path: _Path, interval: float, metadata: dict[str, Any], start_time_ns: int
    ) -> str:
        """``flush_interval``: every ``interval`` s a background thread appends the calls
        completed since the last flush (with the thread/task tables and ``metadata``) to a
        sidecar beside ``file_path`` and retires them; ``finalize()`` writes them into the
        file and removes the sidecar. Returns the sidecar's path. ``ValueError`` unless
        ``interval`` is positive."""
    def flush_now(self) -> int:
        """Flush now (as the thread does every interval); returns the calls flushed."""
    def stop_flush(self) -> None:
        """End the flush thread; the sidecar stays for the next ``finalize()``."""
    def discard_flush(self) -> None:
        """End the flush thread and remove the sidecar (the run is discarded)."""
    @property
    def sidecar_path(self) -> str | None:
        """The sidecar's path while this process streams (``flush_interval``), else None."""
    def retire_taken(self) -> None:
        """Retire the calls the last ``finalize(rewind=False)`` took, once another process
        wrote them (MPI: rank 0); until then a failed write loses nothing."""
    def add_metadata_scope(self, start_ns: int, end_ns: int, values: str) -> None:
        """Record an exited ``ProfileManager.metadata()`` block (entry/exit ns on this
        clock, ``values`` = ``json.dumps`` of its merged dict): the next checkpoint gives the
        values to every call wholly inside that time, on any thread. ``ValueError`` when
        ``values`` is not a JSON object."""
    def finalize(
        self,
        metadata: dict[str, Any],
        start_time_ns: int,
        write_file: bool,
        file_path: str,
        call_id_base: int = 0,
        rewind: bool | None = None,
        close_open: bool = False,
        expected_open: list[str] = ...,
        native: list[tuple[str, _I64, _I64, str | None, int | None]] = ...,
        stacklevel: int = 1,
    ) -> tuple[NativeRun, int, str | None, OSError | None]:
        """Snapshot into a run (rank 0); ``(run, next_call_id, nesting_error_or_None,
        write_error_or_None)``. Writes ``file_path`` (HDF5, atomically) when ``write_file``,
        then rewinds only the calls written. A failed write is returned, not raised: the
        ``OSError`` subclass of its errno (``filename`` = ``file_path``); nothing is rewound
        and ``next_call_id`` is ``call_id_base``. Calls still open are named in a
        ``RuntimeWarning`` (region, lane, seconds open; not those of ``expected_open``
        regions, e.g. a session's root); with ``close_open`` (the end of a recording) they are in the run as calls ending now (recording clock), flagged
        ``{"open_at_finalize": True}`` in ``Region.event_metadata``. ``native``: regions recorded
        outside the recorder (C/Fortran traces) as ``(name, starts, ends, source_file,
        source_line)``, int64 ns: rows without thread or task (lane -1); ``ValueError`` for a
        name also recorded here. ``stacklevel``: the open-calls warning's, as
        ``warnings.warn``'s from the calling frame."""
    @property
    def buffer_limit(self) -> int:
        """The ``buffer_limit`` the recorder was created with (calls; at least 1 is used)."""
    @property
    def track_threads(self) -> bool:
        """Whether the recorder keeps a thread table and per-call thread ids."""
    @property
    def track_async(self) -> bool:
        """Whether calls carry task ids and await times."""
    @property
    def paused(self) -> bool:
        """Whether recording is paused."""

@final
class RegionCache:
    """The region cache of one manager class: its name -> ``ProfileRegion`` dict, the Python
    creation path for misses it does not handle, and (while recording) the recorder."""

    def __new__(
        cls, regions: dict[str, ProfileRegion], create: Callable[..., Any]
    ) -> RegionCache: ...
    @property
    def lookup(self) -> Callable[..., ProfileRegion]:
        """``region(region_name, functions=None, tags=None)`` over this cache (a builtin
        function: a cached name is one dict probe, no Python frame)."""
    def registered(self) -> list[str]:
        """The registered region names in creation order: the manager's dict and the names
        the native lookup made since the last :meth:`bind` (used once so far); then dict
        names the recorder does not know (disabled regions)."""
    def unlisted_calls(self) -> list[tuple[str, int]]:
        """``(name, calls)`` of each name the native lookup made since the last :meth:`bind`
        that is not in the manager's dict, in creation order; calls as
        ``ProfileRegion.num_calls`` counts them (all threads, open ones included)."""
    def get(self, region_name: object) -> ProfileRegion | None:
        """The region registered as ``region_name`` (listed in the dict now if it was made
        by the native lookup and used once so far), else None; creates no region."""
    def adopt(self, region_name: object) -> ProfileRegion | None:
        """The live object of ``region_name`` made by the native lookup and not yet in the
        manager's dict, listed in it now; None when there is none."""
    def bind(
        self,
        recorder: NativeRecorder | None = None,
        recorded_path: Callable[[str], str] | None = None,
    ) -> None:
        """Make new names natively into ``recorder`` (None: always the Python path);
        ``recorded_path(filename)`` gives a defining file as recorded."""

@final
class ProfileRegion:
    """A region: a re-entrant context manager usable from any thread."""

    @staticmethod
    def disabled(
        name: str, tags: Sequence[str] = ..., cache: RegionCache | None = None
    ) -> ProfileRegion:
        """A region whose ``with``/decorator paths do nothing; with ``cache`` (the manager's
        lookup) it records once a later ``setup()`` records its name."""
    def __enter__(self, /) -> ProfileRegion:
        """Start a call on the calling thread's current lane (recording clock, ns)."""
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> bool:
        """End the innermost open call; never suppresses the exception."""
    def wrap(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``func`` with each call recorded in this region."""
    def set_source(self, filename: str, lineno: int, text: str | None = None) -> None:
        """Record the defining site; first writer wins."""
    @property
    def name(self) -> str:
        """The region's name."""
    @property
    def region_name(self) -> str:
        """Same as ``name``."""
    @property
    def tags(self) -> list[str]:
        """The tags of the region's first creation."""
    @property
    def enabled(self) -> bool:
        """Whether a call now would be recorded (as of the manager's current ``setup()``:
        a region object kept across ``setup()``/``reset()`` follows its manager's run)."""
    @property
    def source_file(self) -> str | None:
        """Defining file of the region (relative to the working directory), or None."""
    @property
    def source_lineno(self) -> int | None:
        """Defining line (1-based), or None."""
    @property
    def source_text(self) -> str | None:
        """Defining source line, or None (``capture_region_source`` off)."""
    @property
    def has_source(self) -> bool:
        """Whether a defining site was recorded."""
    @property
    def num_calls(self) -> int:
        """Calls entered over the process lifetime (all threads, open ones included)."""
    @property
    def thread_indices(self) -> list[int]:
        """Indices of the threads that entered this region."""

@final
class ProfiledFunction:
    """What ``@profile`` returns: calls the function inside its bound region."""

    def __new__(
        cls, func: Callable[..., Any], region: ProfileRegion | None = None
    ) -> ProfiledFunction: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the function inside the bound region (straight through when unbound)."""
    def __get__(self, instance: object, owner: type | None = None, /) -> Any: ...
    def __reduce__(self) -> str | tuple[Any, ...]: ...
    def _bind(self, region: ProfileRegion | None = None) -> None: ...
    @property
    def _func(self) -> Callable[..., Any]: ...
    @property
    def _region(self) -> ProfileRegion | None: ...

@final
class ThreadStartHook:
    """The process-wide thread-start hook (``threading.setprofile(hook)``; one per process,
    ``_tracking._THREAD_HOOK``), installed while it has a user. Called as a profile function
    ``hook(frame, event, arg)`` at the first event of each thread ``threading`` starts, on
    that thread: it registers the thread with every acquired recorder, runs the callbacks,
    and chains the profile function installed before it (restored when its last user
    leaves, unless the program replaced the hook meanwhile)."""

    def __new__(cls) -> ThreadStartHook: ...
    def __call__(self, frame: Any, event: str, arg: Any) -> Any: ...
    def acquire(self, recorder: NativeRecorder) -> None:
        """Register each new thread with ``recorder`` from now on (idempotent)."""
    def release(self, recorder: NativeRecorder) -> None:
        """Undo :meth:`acquire` (idempotent)."""
    def add_callback(self, callback: Callable[[Any], object]) -> None:
        """Call ``callback(frame)`` on each new thread after the recorders (idempotent, ``==``)."""
    def remove_callback(self, callback: Callable[[Any], object]) -> None:
        """Undo :meth:`add_callback` (idempotent)."""
    def displaced(self) -> bool:
        """Whether the hook has users but ``threading.getprofile()`` is something else."""
    def forget_recorders(self) -> None:
        """Forget every recorder (a forked child: the parent's runs end there)."""

@final
class ThreadExitSentinel:
    """Parked in a ``threading.local``; its drop stamps the dying thread's CPU total and end."""

    @property
    def index(self) -> int:
        """Table index (the value ``Region.thread_ids`` / ``task_ids`` hold)."""

@final
class GreenletTrace:
    """The greenlet trace function shared by every ``track_async`` tracker (one per process,
    ``_greenlet_hooks._trace``), set with ``greenlet.settrace`` on each followed thread and
    called by greenlet as ``trace(event, args)`` on the switching thread. On ``"switch"`` /
    ``"throw"`` each acquired recorder moves the thread's lane to the target greenlet; the
    thread's previous trace is called after it."""

    def __new__(cls, greenlet: Any) -> GreenletTrace: ...
    def __call__(self, event: str, args: tuple[Any, Any]) -> Any: ...
    def follow_current_thread(self) -> None:
        """Set the trace on the calling thread (idempotent; nothing while no recorder follows)."""
    def acquire(self, recorder: NativeRecorder) -> None:
        """Follow switches for ``recorder`` (idempotent); sets the trace on this thread."""
    def release(self, recorder: NativeRecorder) -> None:
        """Undo :meth:`acquire`; the last one leaving restores this thread's previous trace."""

#: The ``RuntimeWarning`` of a region opened in a trio task: ``track_async`` gives trio tasks
#: no lanes (``_untracked_loops.check_trio``).
UNTRACKED_TRIO_WARNING: str

def untracked_loop_warning(kind: str) -> str:
    """The ``RuntimeWarning`` for the running event loop of type ``kind``
    (``module.qualname``) found uninstrumented while one of its tasks ran: its earlier tasks'
    calls have no lanes, and how to instrument the loop before its tasks start."""

@final
class LoopState:
    """One instrumented event loop: the chain of task factories that make its tasks (those set
    over ours, then the one it had before), the chain calls in progress, and the recorders
    timing it."""

@final
class TaskFactory:
    """The task factory of loops instrumented by ``track_async`` trackers (one per process,
    ``_asyncio_hooks._task_factory``); asyncio calls it as ``factory(loop, coro, **kwargs)``
    on the thread running ``loop``."""

    def __new__(cls) -> TaskFactory: ...
    def __call__(self, event_loop: Any, coro: Any, **kwargs: Any) -> Any:
        """The task for ``coro``: wrapped once per recorder timing ``event_loop`` (a lane of
        each, await time measured on the recording clock), made by the loop's factory chain
        or ``asyncio.Task``, its name followed by each recorder. A call back from a factory
        of the chain (one that chains to ours) only continues down the chain."""
    def instrument(self, event_loop: Any, recorder: NativeRecorder) -> None:
        """Time ``event_loop``'s new tasks with ``recorder`` (idempotent); the loop's current
        factory, when not ours, goes on top of the chain and ours is set again."""
    def instruments(self, event_loop: Any) -> bool:
        """Whether some recorder times ``event_loop``'s new tasks."""
    def release(self, recorder: NativeRecorder) -> None:
        """Take ``recorder`` out of every loop; a loop left untimed gets the top of its chain
        back."""

@final
class ReadyQueue:
    """The ready queue (``loop._ready``) of a standard asyncio loop under ``track_async``: a
    ``collections.deque`` of handles that stamps each with the moment it became ready."""

    def __new__(cls, handles: Any, recorder: NativeRecorder) -> ReadyQueue: ...
    def append(self, handle: Any) -> None: ...
    def appendleft(self, handle: Any) -> None: ...
    def popleft(self) -> Any: ...
    def pop(self) -> Any: ...
    def remove(self, value: Any) -> None: ...
    def clear(self) -> None: ...
    def __bool__(self) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Any: ...
    def run_started(self) -> None:
        """The loop starts running on the calling thread."""
    def run_stopped(self) -> None:
        """The loop stopped running: the handle running, if any, ends."""
    def add_recorder(self, recorder: NativeRecorder) -> None:
        """Time the loop for ``recorder`` too (idempotent)."""
    def remove_recorder(self, recorder: NativeRecorder) -> int:
        """Stop timing the loop for ``recorder``; returns how many recorders are left."""

@final
class TaskHandle:
    """One task-table row (an asyncio task or a greenlet); ``*_ns`` absolute monotonic ns."""

    def finish(self, name: str | None = None) -> None:
        """Mark done now (first call wins); optionally record the final name."""
    def finish_task(self, task: Any) -> None:
        """``task``'s done callback: ``finish(task.get_name())``."""
    @property
    def index(self) -> int:
        """Table index (the value ``Region.thread_ids`` / ``task_ids`` hold)."""
    @property
    def kind(self) -> str:
        """``"task"`` or ``"greenlet"``."""
    @property
    def name(self) -> str:
        """Task name (settable)."""
    @name.setter
    def name(self, value: str) -> None: ...
    @property
    def coro_name(self) -> str:
        """Coroutine name (settable)."""
    @coro_name.setter
    def coro_name(self, value: str) -> None: ...
    @property
    def thread_index(self) -> int:
        """Thread-table index of the thread that ran the latest step."""
    @property
    def steps(self) -> int:
        """Number of timed steps the task ran."""
    @property
    def running_ns(self) -> int:
        """ns the task's steps ran (monotonic clock)."""
    @property
    def suspended_ns(self) -> int:
        """ns the task was suspended between steps (monotonic clock)."""
    @property
    def created_ns(self) -> int:
        """Absolute creation time, ns (recording clock)."""
    @property
    def done_ns(self) -> int:
        """Absolute done time, ``-1`` while not done."""
    @property
    def open_calls(self) -> int:
        """Calls open on this lane."""

@final
class TimedCoroutine(Coroutine[Any, Any, Any]):
    """The coroutine wrapper behind each instrumented task."""

    def __iter__(self) -> Iterator[Any]: ...
    def __next__(self) -> Any: ...
    def __await__(self) -> Generator[Any, None, Any]: ...
    def send(self, value: Any) -> Any:
        """Forward ``send`` as one timed step on the task's lane."""
    def throw(self, *args: Any) -> Any:
        """Forward ``throw`` as one timed step on the task's lane."""
    def close(self) -> None:
        """Forwarded on the task's lane, not counted as a step; marks the task done."""
    @property
    def __wrapped__(self) -> Any: ...
    @property
    def _task_index(self) -> int: ...

@final
class TrioLanes:
    """A ``trio.abc.Instrument`` making the tasks of one trio run lanes of one recorder
    (``NativeRecorder.trio_lanes``): a row per task spawned (trio's own ``<init>`` and
    ``<TrioToken.run_sync_soon task>`` excepted), each step on the task's lane, timed."""

    def task_spawned(self, task: Any) -> None:
        """A task was created: a new lane unless it is one of trio's own."""
    def task_scheduled(self, task: Any) -> None:
        """The task became runnable now (its ready moment)."""
    def before_task_step(self, task: Any) -> None:
        """The task's step starts: it becomes the thread's lane."""
    def after_task_step(self, task: Any) -> None:
        """The task's step ended: the thread's previous lane is current again."""
    def task_exited(self, task: Any) -> None:
        """The task exited (inside its last step): its row is done."""
    def before_io_wait(self, timeout: float) -> None:
        """The run waits for I/O for at most ``timeout`` s (with a timeout: nothing ready)."""
    def after_io_wait(self, timeout: float) -> None:
        """The I/O wait is over; one with a timeout adds to the thread's idle time."""
    def after_run(self) -> None:
        """The run ended."""
    def detach(self) -> None:
        """Stop following the run: no new lanes or steps (a step running still ends)."""
    def follows(self, root: Any) -> bool:
        """Whether it follows the run whose root task is ``root`` (not detached, not over)."""
    @property
    def stepping(self) -> bool:
        """Whether a step of one of its lanes runs now."""
    @property
    def lanes(self) -> int:
        """Tasks followed now (spawned and not exited)."""

@final
class TraceHook:
    """What ``sys.getprofile()`` returns on a thread traced by scope-profiler (3.11)."""

@final
class NativeTracer:
    """Function-level tracing of one recording (``recursive_profile=True``, ``run
    --recursive``): every call of a selected Python function, on every thread, becomes a call
    of the region ``module.qualname`` in ``recorder``. One runs per process at a time."""

    def __new__(
        cls,
        recorder: NativeRecorder,
        *,
        all: bool = False,
        system_prefixes: Sequence[str] = ...,
        own_dirs: Sequence[str] = ...,
        main_module: str | None = None,
        include: str | Iterable[object] | None = None,
        exclude: str | Iterable[object] | None = None,
        entrypoint: str | None = None,
        call_limit: int | None = None,
        decorated: set[Any],
        recorded_path: Callable[[str], str] | None = None,
        resume_opcode: int,
        yield_opcode: int,
        scoped: bool = False,
    ) -> NativeTracer:
        """``system_prefixes``: directories of non-user code (``sysconfig``'s
        stdlib/platstdlib/purelib/platlib and ``site``'s package directories; ignored with
        ``all``), resolved to real paths; ``own_dirs``: the profiler's own directories (never
        traced); ``main_module``: the module run by ``-m`` (its top-level package is the
        user's code wherever installed); ``include`` / ``exclude``: fnmatch globs on
        ``module.qualname`` selecting by name wherever the code is (one ``str`` or an
        iterable, each taken as ``str()``); ``call_limit``: most calls recorded;
        ``resume_opcode`` / ``yield_opcode``: ``dis.opmap``'s ``RESUME`` / ``YIELD_VALUE``."""
    def start(self) -> None:
        """Trace every thread from now on (stops the tracer running); ``RuntimeError`` when
        stopped, or (3.12+) when no ``sys.monitoring`` tool id is free. A ``scoped`` tracer
        (``profile(recursive=True)``) hooks no thread: each is traced between its
        ``enter_call()`` and ``exit_call()``."""
    def enter_call(self) -> bool:
        """``scoped``: trace the calling thread until the matching ``exit_call()`` (calls
        nest); False when not running or not scoped (then no ``exit_call()``)."""
    def exit_call(self) -> None:
        """The end of a call begun by ``enter_call()``; the outermost unhooks the thread."""
    @property
    def scoped(self) -> bool: ...
    def install_thread(self, frame: Any = None) -> None:
        """3.11 with ``PyEval_SetProfile``: trace the calling thread, counting ``frame`` (its
        first) as entered. No-op with the other mechanisms (they cover every thread)."""
    def stop(self) -> None:
        """Stop tracing (idempotent); the counters stay readable."""
    @property
    def running_now(self) -> bool: ...
    @property
    def displaced_here(self) -> bool:
        """3.11: whether another profile function (``sys.setprofile``, ``cProfile``) has
        replaced this running tracer on the calling thread since it was installed there
        (the thread's later calls are not recorded), or, with ``"eval_frame"``, another
        frame evaluation function replaced it (every thread). False on 3.12+, when not
        running, or on a thread it was not installed on."""
    @property
    def recorded(self) -> int:
        """Calls recorded (all threads)."""
    @property
    def dropped(self) -> int:
        """Calls not recorded because ``call_limit`` was reached."""
    @property
    def call_limit(self) -> int | None: ...
    @property
    def mechanism(self) -> str:
        """How the tracer hooks in (since ``start()``; before it, how it would):
        ``"sys.monitoring"`` (3.12+), ``"eval_frame"`` (3.11: a PEP 523 frame evaluation
        function, every thread at once) or ``"PyEval_SetProfile"`` (3.11: a C profile
        function per thread; per-call tracing, another tool's frame evaluation function
        installed, or the environment variable ``SCOPE_PROFILER_TRACE_HOOK=profile``)."""
    def report(self, metadata: dict[str, Any], stacklevel: int = 1) -> None:
        """Store ``traced_calls`` / ``traced_calls_dropped`` (counts) in ``metadata`` and warn
        (``RuntimeWarning``; ``stacklevel`` 1 = the Python caller) when ``include`` matched
        no call or ``call_limit`` dropped calls."""
    def warn_displaced(self, thread_hook_displaced: bool = False, stacklevel: int = 1) -> None:
        """3.11, before ``stop()``: warn (``RuntimeWarning``) when another profiler or frame
        evaluation function displaced this running tracer on the calling thread, and when
        ``thread_hook_displaced`` for a whole-recording ``"PyEval_SetProfile"`` tracer."""
    def pause_other(self, previous: object) -> None:
        """3.11: keep ``previous``, the thread's other profiler, for ``take_paused()`` and
        warn (``RuntimeWarning``, at the first caller outside ``scope_profiler``) that it is
        paused while this tracer runs."""
    def take_paused(self) -> Any:
        """The profiler ``pause_other()`` kept (once; None after, or when there was none)."""
    def register(self, key: int) -> None:
        """Register this tracer as recording ``key``'s (``id(config)``), replacing one."""
    @staticmethod
    def registered(key: int) -> NativeTracer | None:
        """The tracer registered for ``key`` (running or stopped), or None."""
    @staticmethod
    def unregister(key: int) -> None:
        """Forget the tracer registered for ``key`` (without stopping it)."""
    @staticmethod
    def registered_running() -> NativeTracer | None:
        """The registered tracer running now (at most one runs), or None."""
