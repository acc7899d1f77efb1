"""The tracer's hook on 3.11 beside other profilers: the frame evaluation function (the
default) and the per-thread C profile function (``SCOPE_PROFILER_TRACE_HOOK=profile``).
Each test here chooses its mechanism; test_tracer.py runs its tests under both."""

from __future__ import annotations

import cProfile
import pstats
import sys
import warnings

import pytest
import scope_profiler as sp
from helpers import run_traced
from scope_profiler import ProfileManager


@pytest.fixture
def profile_function_hook(monkeypatch):
    """3.11: trace with the per-thread C profile function (``PyEval_SetProfile``), which
    other profilers can displace (the default, the frame evaluation function, they do not)."""
    monkeypatch.setenv("SCOPE_PROFILER_TRACE_HOOK", "profile")


# With the profile function hook on 3.11, cProfile.Profile().enable() inside a --recursive
# run takes the thread's one profile function: the calls after it cannot be recorded, but
# the run says so, and a profiler the user started after the tracer is left running when
# the tracer stops.
CPROFILE_INSIDE = """
import cProfile, sys

def work(n):
    return sum(range(n))

def before():
    return work(10)

def after():
    return work(10)

before()
pr = cProfile.Profile()
pr.enable()
after()
pr.disable()
after()
"""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11: one profile function per thread")
def test_profile_function_hook_reports_a_profiler_that_replaces_it(tmp_path, profile_function_hook):
    run, proc = run_traced(tmp_path, CPROFILE_INSIDE)
    assert "function-level tracing stopped early on thread 'MainThread'" in proc.stderr, proc.stderr
    assert run["__main__.before"][0].num_calls == 1
    assert "__main__.after" not in run  # both calls came after cProfile took the thread


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11: one profile function per thread")
def test_profile_function_hook_leaves_a_later_profiler_running_when_it_stops(profile_function_hook):
    ProfileManager.setup(recursive_profile=True, deactivate_file_output=True, replace=True)
    pr = cProfile.Profile()
    pr.enable()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ProfileManager._finalize(verbose=False, close_open=True)
        assert sys.getprofile() is pr, "the tracer's stop removed the user's profiler"
    finally:
        pr.disable()
    assert any("tracing stopped early on thread 'MainThread'" in str(w.message) for w in caught)
    assert sys.getprofile() is None


# `@profile(..., recursive=True)` while cProfile runs: after the traced call cProfile runs
# again (restored as a C profile function: sys.setprofile(<Profile object>) would make the
# next call raise TypeError: 'Profile' object is not callable).
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11: one profile function per thread")
def test_a_recursive_decorated_call_resumes_a_running_cprofile(tmp_path):
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    ProfileManager.setup(file_path=str(tmp_path / "r.h5"), replace=True)

    @ProfileManager.profile("solve", recursive=True)
    def solve():
        return fib(5)

    pr = cProfile.Profile()
    pr.enable()
    try:
        assert solve() == 5
        assert sys.getprofile() is pr, "cProfile not running again after the traced call"
        fib(3)  # 5 calls seen by cProfile
    finally:
        pr.disable()
    results = ProfileManager._finalize(verbose=False, return_results=True, close_open=True)
    assert results[f"test_tracer_hooks.{fib.__qualname__}"][0].num_calls == 15  # fib(5), by us
    seen = {k[2]: v[1] for k, v in pstats.Stats(pr).stats.items()}
    assert seen["fib"] == 5  # only the call after the traced one


# With the profile function hook, session/setup(recursive_profile=True) pauses a profiler
# already running on the thread, with a warning, and gives it back at the end.
@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11: one profile function per thread")
def test_profile_function_hook_pauses_and_resumes_a_profiler_running_before_it(
    tmp_path, profile_function_hook
):
    seen: list[str] = []

    def mine(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    def traced():
        return 1

    sys.setprofile(mine)
    try:
        with pytest.warns(
            RuntimeWarning, match=r"the profiler running on this thread .* is paused"
        ):
            with ProfileManager.session(
                file_path=str(tmp_path / "s.h5"), recursive_profile=True, verbose=False
            ):
                traced()
        assert sys.getprofile() is mine
        traced()
    finally:
        sys.setprofile(None)
    assert seen.count("traced") == 1  # the call after the session, not the one inside
    run = sp.read_h5(str(tmp_path / "s.h5"))
    assert run[f"test_tracer_hooks.{traced.__qualname__}"][0].num_calls == 1


# With the profile function hook, threading.setprofile in the script stops the tracing of
# every later thread (3.11 hooks threads through that one hook): they cannot be traced, but
# the run says so.
THREADING_SETPROFILE = """
import threading

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

threading.setprofile(lambda *a: None)
threading.setprofile(None)
t = threading.Thread(target=fib, args=(5,))
t.start()
t.join()
fib(3)
"""


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="3.11 hooks threads with threading.setprofile"
)
def test_profile_function_hook_reports_threads_missed_after_threading_setprofile(
    tmp_path, profile_function_hook
):
    run, proc = run_traced(tmp_path, THREADING_SETPROFILE)
    assert "function-level tracing missed threads" in proc.stderr, proc.stderr
    assert run["__main__.fib"][0].num_calls == 5  # the main thread's fib(3)


# On 3.11 the tracer is a frame evaluation function (PEP 523) by default. It covers every
# thread at once and sits beside a profile function, so none of the limits of the profile
# function hook above apply to it.
only_311 = pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="3.11's tracer mechanism")


@only_311
def test_eval_frame_is_the_default_on_3_11_and_the_profile_function_on_request(
    monkeypatch,
):
    from scope_profiler import _tracer

    ProfileManager.setup(recursive_profile=True, deactivate_file_output=True, replace=True)
    try:
        assert _tracer.tracer_of(ProfileManager.get_config()).mechanism == "eval_frame"
    finally:
        ProfileManager._finalize(verbose=False, close_open=True)
    monkeypatch.setenv("SCOPE_PROFILER_TRACE_HOOK", "profile")
    ProfileManager.setup(recursive_profile=True, deactivate_file_output=True, replace=True)
    try:
        tracer = _tracer.tracer_of(ProfileManager.get_config())
        assert tracer.mechanism == "PyEval_SetProfile"
    finally:
        ProfileManager._finalize(verbose=False, close_open=True)


@only_311
def test_eval_frame_hook_keeps_tracing_beside_cprofile(tmp_path):
    run, proc = run_traced(tmp_path, CPROFILE_INSIDE)
    assert "stopped early" not in proc.stderr, proc.stderr
    assert run["__main__.before"][0].num_calls == 1
    assert run["__main__.after"][0].num_calls == 2  # under cProfile and after it
    assert run["__main__.work"][0].num_calls == 3


@only_311
def test_eval_frame_hook_leaves_a_profiler_running_before_it_running(tmp_path):
    seen: list[str] = []

    def mine(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)

    def traced():
        return 1

    sys.setprofile(mine)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "is paused" warning
            with ProfileManager.session(
                file_path=str(tmp_path / "s.h5"), recursive_profile=True, verbose=False
            ):
                traced()
        assert sys.getprofile() is mine
        traced()
    finally:
        sys.setprofile(None)
    assert seen.count("traced") == 2  # inside the session and after it
    run = sp.read_h5(str(tmp_path / "s.h5"))
    assert run[f"test_tracer_hooks.{traced.__qualname__}"][0].num_calls == 1


@only_311
def test_eval_frame_hook_traces_threads_started_after_threading_setprofile(tmp_path):
    run, proc = run_traced(tmp_path, THREADING_SETPROFILE)
    assert "missed threads" not in proc.stderr, proc.stderr
    assert run["__main__.fib"][0].num_calls == 15 + 5  # fib(5) on the thread, fib(3) on main


# With the frame evaluation function every Python call is a C call on 3.11 (no inlined
# Python-to-Python calls): a deep recursion continues on a new stack segment instead of
# overflowing the thread's stack (which, with 8 MiB, ends in a segfault at ~30,000 levels).
DEEP_RECURSION = """
import sys, threading
sys.setrecursionlimit(1_000_000)

def down(k):
    return 0 if k == 0 else down(k - 1) + 1

def numbers(n):
    yield from range(n)

def deep_generator(k):
    return sum(numbers(3)) if k == 0 else deep_generator(k - 1)

assert down(100_000) == 100_000
assert deep_generator(40_000) == 3
t = threading.Thread(target=down, args=(30_000,))
t.start()
t.join()
"""


def test_a_recursion_100000_deep_is_traced_without_overflowing_the_stack(tmp_path):
    run, _proc = run_traced(tmp_path, DEEP_RECURSION)
    assert run["__main__.down"][0].num_calls == 100_001 + 30_001
    assert run["__main__.deep_generator"][0].num_calls == 40_001
    assert run["__main__.numbers"][0].num_calls == 1


# ---------------------------------------------------------------- 3.12+: sys.monitoring
# The tracer takes an unnamed sys.monitoring tool id (3, then 4), so cProfile (PROFILER_ID,
# 2), coverage.py (COVERAGE_ID, 1) and debuggers start beside it; starting it arms again only
# its own locations, never those another tool disabled.
only_monitoring = pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")

# the script prints what cProfile saw of work(): (calls, (file, line, name) found)
CPROFILE_INSIDE_REPORTED = (
    CPROFILE_INSIDE
    + """
import pstats
seen = {k[2]: v[1] for k, v in pstats.Stats(pr).stats.items()}
print("cProfile saw work", seen.get("work"), "after", seen.get("after"))
"""
)


@only_monitoring
def test_monitoring_traces_beside_a_cprofile_the_script_starts(tmp_path):
    run, proc = run_traced(tmp_path, CPROFILE_INSIDE_REPORTED)
    assert "Another profiling tool" not in proc.stderr, proc.stderr
    assert "cProfile saw work 1 after 1" in proc.stdout, proc.stdout
    assert run["__main__.before"][0].num_calls == 1
    assert run["__main__.after"][0].num_calls == 2  # under cProfile and after it
    assert run["__main__.work"][0].num_calls == 3


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


@only_monitoring
def test_a_recursive_decorated_call_beside_a_running_cprofile(tmp_path):
    ProfileManager.setup(file_path=str(tmp_path / "r.h5"), replace=True)

    @ProfileManager.profile("solve", recursive=True)
    def solve():
        return _fib(5)

    pr = cProfile.Profile()
    pr.enable()
    try:
        assert solve() == 5
        _fib(3)
    finally:
        pr.disable()
    results = ProfileManager._finalize(verbose=False, return_results=True, close_open=True)
    assert results["test_tracer_hooks._fib"][0].num_calls == 15  # fib(5), by us
    seen = {k[2]: v[1] for k, v in pstats.Stats(pr).stats.items()}
    assert seen["_fib"] == 15 + 5  # cProfile saw both


def test_cprofile_starts_after_a_recursive_decorated_call(tmp_path):
    ProfileManager.setup(file_path=str(tmp_path / "r.h5"), replace=True)

    @ProfileManager.profile("solve", recursive=True)
    def solve():
        return _fib(4)

    try:
        assert solve() == 3  # the per-call tracer now monitors until the recording ends
        pr = cProfile.Profile()
        pr.enable()  # ValueError when the tracer held PROFILER_ID
        _fib(3)
        pr.disable()
        assert solve() == 3
    finally:
        results = ProfileManager._finalize(verbose=False, return_results=True, close_open=True)
    assert results["test_tracer_hooks._fib"][0].num_calls == 2 * 9
    assert {k[2]: v[1] for k, v in pstats.Stats(pr).stats.items()}["_fib"] == 5


def _counted():
    return 1


class _OtherTool:
    """A tool at ``tool_id`` (COVERAGE_ID by default) counting the starts of ``_counted``;
    with ``disable``, it answers DISABLE there, as coverage.py does for a line it has seen."""

    def __init__(self, disable: bool, tool_id: int = 1) -> None:
        self.calls, self.disable, self.id = 0, disable, tool_id
        mon = sys.monitoring
        mon.use_tool_id(tool_id, "other")
        mon.register_callback(tool_id, mon.events.PY_START, self.on_start)
        mon.set_events(tool_id, mon.events.PY_START)

    def on_start(self, code, offset):
        if code is _counted.__code__:
            self.calls += 1
            return sys.monitoring.DISABLE if self.disable else None
        return None

    def close(self) -> None:
        sys.monitoring.set_events(self.id, 0)
        sys.monitoring.register_callback(self.id, sys.monitoring.events.PY_START, None)
        sys.monitoring.free_tool_id(self.id)


def _traced_session():
    return ProfileManager.session(
        verbose=False, return_results=True, deactivate_file_output=True, recursive_profile=True
    )


@only_monitoring
def test_a_tool_at_coverage_id_keeps_working_beside_tracing():
    other = _OtherTool(disable=False)
    try:
        with _traced_session() as s:
            assert sys.monitoring.get_tool(3) == "scope_profiler"
            for _ in range(3):
                _counted()
        _counted()
    finally:
        other.close()
        ProfileManager.reset()
    assert other.calls == 4
    assert s.results["test_tracer_hooks._counted"][0].num_calls == 3


@only_monitoring
def test_starting_the_tracer_leaves_another_tools_disabled_locations_disabled():
    other = _OtherTool(disable=True)
    try:
        _counted()
        _counted()
        assert other.calls == 1  # disabled at its first start
        for recording in range(2):  # the second start arms its own locations again
            with _traced_session() as s:
                _counted()
                _counted()
            assert s.results["test_tracer_hooks._counted"][0].num_calls == 2, recording
    finally:
        other.close()
        ProfileManager.reset()
    assert other.calls == 1  # sys.monitoring.restart_events() would have made it 2, then 3


@only_monitoring
def test_monitoring_tool_id_falls_back_with_a_warning_and_fails_when_none_is_free():
    mon = sys.monitoring
    held = []
    try:
        for tool in (3, 4):
            mon.use_tool_id(tool, f"held{tool}")
            held.append(tool)
        with pytest.warns(RuntimeWarning, match=r"took sys.monitoring tool id 5 \(OPTIMIZER_ID\)"):
            with _traced_session() as s:
                assert mon.get_tool(5) == "scope_profiler"
                _counted()
        assert s.results["test_tracer_hooks._counted"][0].num_calls == 1
        assert mon.get_tool(5) is None  # freed at the end
        for tool in (0, 1, 2, 5):
            mon.use_tool_id(tool, f"held{tool}")
            held.append(tool)
        with pytest.raises(RuntimeError, match="needs a free sys.monitoring tool id, and all six"):
            ProfileManager.setup(recursive_profile=True, deactivate_file_output=True, replace=True)
    finally:
        ProfileManager.reset()
        for tool in held:
            mon.free_tool_id(tool)
