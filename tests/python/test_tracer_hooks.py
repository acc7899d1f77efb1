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
