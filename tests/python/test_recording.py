"""Recording side of the Python API: regions, decorator, threads, settings, finalize.

Real measurements throughout: durations are controlled with ``time.sleep`` and checked
as lower bounds, call counts and parent ids exactly.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import scope_profiler as sp
from scope_profiler import NestingError, ProfileManager

SLEEP = 0.01
SLEEP_NS = int(SLEEP * 1e9)


def _mem_session(m, **kw):
    kw.setdefault("deactivate_file_output", True)
    return m.session(verbose=False, return_results=True, **kw)


# --------------------------------------------------------------------------- nesting
def test_nesting_durations_counts_and_parent_ids(manager):
    with _mem_session(manager) as s:
        for _ in range(3):
            with manager.region("outer"):
                time.sleep(SLEEP)
                with manager.region("inner"):
                    time.sleep(SLEEP)
                with manager.region("inner"):
                    time.sleep(SLEEP)
    r = s.results
    assert r.region_names == ["scope_profiler.session", "outer", "inner"]
    root, outer, inner = (r[n][0] for n in r.region_names)
    assert root.num_calls == 1 and outer.num_calls == 3 and inner.num_calls == 6
    assert np.all(inner.durations_ns >= SLEEP_NS)
    assert np.all(outer.durations_ns >= 3 * SLEEP_NS)
    # each outer call contains exactly its two inner calls
    for k in range(3):
        kids = inner.durations_ns[2 * k : 2 * k + 2]
        assert outer.durations_ns[k] >= kids.sum()
    # call ids: unique, parents are the enclosing calls
    ids = np.concatenate([root.call_ids, outer.call_ids, inner.call_ids])
    assert sorted(ids.tolist()) == list(range(10))
    assert root.parent_ids.tolist() == [-1]
    assert outer.parent_ids.tolist() == [root.call_ids[0]] * 3
    assert inner.parent_ids.tolist() == [c for c in outer.call_ids.tolist() for _ in (0, 1)]
    # untracked: no lane columns, no thread table
    assert inner.thread_ids is None
    assert r.threads == {}
    assert manager.get_config().tracker is None


def test_region_is_cached_reentrant_and_records_source(manager):
    with _mem_session(manager) as s:
        a = manager.region("rec")
        assert manager.profile_region("rec") is a
        assert ProfileManager.profile_region == ProfileManager.region
        with a:
            with a:  # recursive use of the same object
                time.sleep(SLEEP)
    reg = s.results["rec"][0]
    assert reg.num_calls == 2
    d = reg.durations_ns
    assert d[0] >= d[1] >= SLEEP_NS
    assert reg.parent_ids[1] == reg.call_ids[0]
    assert reg.source_file == os.path.relpath(__file__, os.getcwd()) or reg.source_file.endswith(
        "test_recording.py"
    )
    assert isinstance(reg.source_lineno, int) and reg.source_lineno > 0
    assert s.results["scope_profiler.session"][0].source_file is None


def test_region_tags_conflict(manager):
    with _mem_session(manager):
        manager.region("t", tags=["a"])
        manager.region("t")  # None tags: fine
        with pytest.raises(
            ValueError, match=r"region 't' already has tags \('a',\); cannot reuse it with \('b',\)"
        ):
            manager.region("t", tags=["b"])


def test_decorator_functions_methods_and_exceptions(manager):
    @manager.profile
    def bare(x):
        time.sleep(SLEEP)
        return x * 2

    @manager.profile("named")
    def named():
        return bare(1)

    class K:
        @manager.profile("method")
        def m(self, y):
            return (self, y)

        @staticmethod
        @manager.profile("static")
        def s():
            return 5

    @manager.profile("boom")
    def boom():
        raise KeyError("x")

    assert bare.__name__ == "bare" and bare.__wrapped__ is not None
    # before setup: straight through
    assert bare(2) == 4
    with _mem_session(manager) as s:
        assert named() == 2
        k = K()
        assert k.m(3) == (k, 3)
        assert K.m(k, 4) == (k, 4)
        assert K.s() == 5
        for _ in range(2):
            with pytest.raises(KeyError):
                boom()
    r = s.results
    assert r["bare"][0].num_calls == 1
    assert r["named"][0].num_calls == 1
    assert r["method"][0].num_calls == 2
    assert r["static"][0].num_calls == 1
    assert r["boom"][0].num_calls == 2
    assert r["bare"][0].parent_ids[0] == r["named"][0].call_ids[0]
    assert r["bare"][0].durations_ns[0] >= SLEEP_NS
    assert r["bare"][0].source_lineno == bare.__wrapped__.__code__.co_firstlineno
    # after reset: decorated functions call straight through again
    manager.reset()
    assert not manager.is_configured()
    assert bare(5) == 10


def test_decorator_rebound_by_each_setup(manager):
    @manager.profile("f")
    def f():
        pass

    for expected in (1, 2):
        with _mem_session(manager) as s:
            for _ in range(expected):
                f()
        assert s.results["f"][0].num_calls == expected


# --------------------------------------------------------------------------- threads
def test_track_threads_table_and_thread_ids(manager):
    n_calls = 25

    def worker():
        for _ in range(n_calls):
            with manager.region("work"):
                pass
        # burn 10 ms of this thread's own CPU time
        t0 = time.thread_time()
        x = 0
        while time.thread_time() - t0 < 0.01:
            x += 1

    with _mem_session(manager, track_threads=True) as s:
        tracker = manager.get_config().tracker
        assert tracker is not None and tracker.installed
        threads = [threading.Thread(target=worker, name=f"worker-{i}") for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # the dying thread stamped its end before join() returned
        rows = {rec.name: rec for rec in tracker.threads}
        for i in range(4):
            assert rows[f"worker-{i}"].alive is False
    r = s.results
    infos = r.threads[0]
    assert [t.index for t in infos] == list(range(5))
    assert infos[0].name == "MainThread" and infos[0].alive
    by_name = {t.name: t for t in infos}
    for i, t in enumerate(threads):
        info = by_name[f"worker-{i}"]
        assert info.alive is False
        assert info.ident == t.ident and info.native_id == t.native_id
        assert info.cpu_time >= 0.01
        assert info.end_time > info.start_time >= 0
    work = r["work"][0]
    assert work.num_calls == 4 * n_calls
    tids = work.thread_ids
    assert sorted(set(tids.tolist())) == [1, 2, 3, 4]
    assert all((tids == k).sum() == n_calls for k in (1, 2, 3, 4))
    assert np.all(np.diff(tids) >= 0)  # grouped by thread ascending
    assert r["scope_profiler.session"][0].thread_ids.tolist() == [0]


def test_thread_started_by_hook_appears_without_recording(manager):
    with _mem_session(manager, track_threads=True) as s:
        with manager.region("main"):
            t = threading.Thread(target=lambda: None, name="idle")
            t.start()
            t.join()
    names = [t.name for t in s.results.threads[0]]
    assert "idle" in names
    idle = s.results.threads[0][names.index("idle")]
    assert idle.alive is False


def test_preexisting_thread_gets_row_when_it_records(manager):
    go = threading.Event()
    done = threading.Event()

    def worker():
        go.wait()
        with manager.region("late"):
            time.sleep(SLEEP)
        done.set()

    t = threading.Thread(target=worker, name="pre-existing")
    t.start()  # before setup: no start hook
    with _mem_session(manager, track_threads=True) as s:
        go.set()
        done.wait()
        t.join()
    infos = s.results.threads[0]
    pre = [i for i in infos if i.name == "pre-existing"]
    assert len(pre) == 1
    late = s.results["late"][0]
    assert late.thread_ids.tolist() == [pre[0].index]
    assert late.durations_ns[0] >= SLEEP_NS


def test_untracked_threads_have_own_buffers(manager):
    n = 200

    def worker():
        for _ in range(n):
            with manager.region("w"):
                pass

    with _mem_session(manager) as s:
        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    w = s.results["w"][0]
    assert w.num_calls == 4 * n
    assert np.all(w.durations_ns >= 0)
    assert w.thread_ids is None and s.results.threads == {}


def _interleave(enter_exit_a, enter_exit_b):
    """Run A and B so that A enters, B enters, A exits, B exits."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a():
        enter_exit_a(lambda: (a_in.set(), b_in.wait()), None)
        a_out.set()

    def b():
        a_in.wait()
        enter_exit_b(lambda: b_in.set(), lambda: a_out.wait())

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(), tb.start()
    ta.join(), tb.join()


@pytest.mark.parametrize("form", ["with", "decorator"])
def test_untracked_interleaved_threads_raise_nesting_error(manager, form):
    with warnings.catch_warnings(record=True) as caught, _mem_session(manager) as s:
        warnings.simplefilter("always")
        if form == "with":

            def run(inside, after):
                with manager.region("x"):
                    inside()
                    if after:
                        after()
        else:

            @manager.profile("x")
            def body(inside, after):
                inside()
                if after:
                    after()

            def run(inside, after):
                body(inside, after)

        _interleave(run, run)
    # finalize could not build a call graph: warned, no call ids
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert any(m.startswith("call graph not recorded: ") for m in msgs)
    assert s.results["x"][0].num_calls == 2
    with pytest.raises(NestingError):
        s.results.call_stack()
    assert s.results["x"][0].call_ids is None


def test_untracked_interleaving_warns_at_finalize(manager):
    manager.setup(deactivate_file_output=True)

    def run(inside, after):
        with manager.region("x"):
            inside()
            if after:
                after()

    _interleave(run, run)
    with pytest.warns(RuntimeWarning, match="call graph not recorded: "):
        res = manager.finalize(verbose=False, return_results=True)
    assert res["x"][0].call_ids is None


def test_tracked_interleaved_threads_reconstruct(manager):
    with _mem_session(manager, track_threads=True) as s:

        def run(inside, after):
            with manager.region("x"):
                inside()
                if after:
                    after()

        _interleave(run, run)
    x = s.results["x"][0]
    assert x.num_calls == 2
    assert x.parent_ids.tolist() == [-1, -1]
    s.results.call_stack()  # no NestingError


# --------------------------------------------------------------------------- hooks
def test_session_restores_previous_threading_profile_hook(manager):
    def previous_hook(frame, event, arg):
        return None

    old = threading.getprofile()
    threading.setprofile(previous_hook)
    try:
        with _mem_session(manager, track_threads=True):
            assert threading.getprofile() is not previous_hook
            seen = []
            t = threading.Thread(target=lambda: seen.append(sys.getprofile()))
            t.start()
            t.join()
            # the bootstrap hook removed itself and handed over to the previous hook
            assert seen == [previous_hook]
        assert threading.getprofile() is previous_hook
    finally:
        threading.setprofile(old)


def test_setup_finalize_keeps_hooks_until_next_setup(manager):
    before = threading.getprofile()
    manager.setup(track_threads=True, deactivate_file_output=True)
    hook = threading.getprofile()
    assert hook is not before
    manager.finalize(verbose=False)
    assert threading.getprofile() is hook  # checkpoint: hooks stay
    manager.setup(deactivate_file_output=True)  # after finalize: no replace needed
    assert threading.getprofile() is before
    manager.reset()
    assert threading.getprofile() is before


def test_untracked_installs_no_hook(manager):
    before = threading.getprofile()
    with _mem_session(manager):
        assert threading.getprofile() is before
        assert manager.get_config().tracker is None


# --------------------------------------------------------------------------- lifecycle
def test_lifecycle_and_replace(manager):
    assert not manager.is_active() and not manager.is_configured()
    assert manager.finalize(verbose=False) is None
    empty = manager.finalize(verbose=False, return_results=True)
    assert len(empty) == 0
    run = manager.setup(deactivate_file_output=True)
    assert manager.is_active() and run.is_active and run.results is None
    with pytest.raises(
        RuntimeError,
        match="profiling is already configured; finalize it first or pass replace=True",
    ):
        manager.setup(deactivate_file_output=True)
    run2 = manager.setup(deactivate_file_output=True, replace=True)
    assert not run.is_active and run2.is_active
    with pytest.raises(RuntimeError, match="this profiling run has been replaced"):
        run.finalize(verbose=False)
    with manager.region("a"):
        pass
    res = run2.finalize(verbose=False)
    assert run2.results is res and res["a"][0].num_calls == 1
    assert manager.is_active()  # FINALIZED still records
    manager.setup(deactivate_file_output=True)  # no replace needed after finalize


def test_deactivate_profiling_disables_regions(manager):
    with _mem_session(manager, deactivate_profiling=True, track_threads=True) as s:
        assert not manager.is_active()
        with manager.region("a"):
            pass
        # a run that records nothing installs no hooks, so it has no tracker at all (the
        # reference installs them: a defect we do not copy)
        assert manager.get_config().tracker is None
    assert len(s.results) == 0


def test_instances_are_isolated(manager):
    other = ProfileManager()
    try:
        assert type(manager).__name__ == "ProfileManagerInstance"
        with _mem_session(manager, track_threads=True) as s1:
            with _mem_session(other) as s2:
                with manager.region("cpu"), other.region("io"):
                    time.sleep(SLEEP)
        assert s1.results.region_names == ["scope_profiler.session", "cpu"]
        assert s2.results.region_names == ["scope_profiler.session", "io"]
        assert s1.results["cpu"][0].thread_ids.tolist() == [0]
        assert s2.results["io"][0].thread_ids is None
        # each manager numbers its own calls from 0 (root 0, region 1)
        assert s1.results["scope_profiler.session"][0].call_ids.tolist() == [0]
        assert s2.results["scope_profiler.session"][0].call_ids.tolist() == [0]
        assert (
            s1.results["cpu"][0].call_ids.tolist() == [1] == s2.results["io"][0].call_ids.tolist()
        )
        assert not ProfileManager.is_configured()
    finally:
        other.reset()


def test_session_is_context_decorator(manager):
    calls = []

    @manager.session(deactivate_file_output=True, verbose=False, return_results=True)
    def job():
        with manager.region("j"):
            calls.append(1)

    job()
    job()
    assert calls == [1, 1]
    assert manager.last_results()["j"][0].num_calls == 1


def test_session_propagates_exceptions_and_finalizes(manager):
    with pytest.raises(ZeroDivisionError):
        with _mem_session(manager, track_threads=True) as s:
            with manager.region("a"):
                1 / 0
    assert s.results["a"][0].num_calls == 1
    assert threading.getprofile() is None or not manager.get_config().tracker.installed


def test_get_config(manager):
    cfg = manager.get_config()
    assert cfg.tracker is None and cfg.track_threads is False
    manager.setup(
        track_threads=True, deactivate_file_output=True, buffer_limit=7, file_path="x.h5", label="L"
    )
    cfg = manager.get_config()
    assert cfg.track_threads and cfg.track_async is False
    assert cfg.tracker is not None and cfg.buffer_limit == 7 and cfg.file_path == "x.h5"
    assert cfg.output_mode == "auto"
    assert cfg.metadata["label"] == "L"
    assert abs(cfg.start_time_ns - time.perf_counter_ns()) < 60e9
    with pytest.raises(AttributeError):
        ProfileManager().get_config().tracker.instrument_loop


def test_clock_is_perf_counter_ns(manager):
    with _mem_session(manager) as s:
        t0 = time.perf_counter_ns()
        with manager.region("c"):
            pass
        t1 = time.perf_counter_ns()
    c = s.results["c"][0]
    assert t0 <= c.start_times_ns[0] <= c.end_times_ns[0] <= t1


def test_buffer_growth_beyond_limit(manager):
    with _mem_session(manager, buffer_limit=2, track_threads=True) as s:
        for _ in range(1000):
            with manager.region("g"):
                pass
    g = s.results["g"][0]
    assert g.num_calls == 1000
    assert np.all(np.diff(g.start_times_ns) >= 0)


def test_pause_resume(manager):
    with _mem_session(manager) as s:
        manager.pause()
        with manager.region("p"):
            pass
        manager.resume()
        with manager.region("p"):
            with pytest.raises(
                RuntimeError, match="cannot pause while profiling scopes are active: 'p'"
            ):
                manager.pause()
    assert s.results["p"][0].num_calls == 1


def test_module_level_shortcuts_are_classmethods():
    assert sp.region == ProfileManager.region
    assert sp.session == ProfileManager.session
    assert sp.profile == ProfileManager.profile
    assert sp.finalize == ProfileManager.finalize


# --------------------------------------------------------------------------- checkpoints
def test_deactivate_file_output_is_cumulative(manager):
    manager.setup(deactivate_file_output=True)
    with manager.region("a"):
        pass
    r1 = manager.finalize(verbose=False, return_results=True)
    with manager.region("a"):
        pass
    r2 = manager.finalize(verbose=False, return_results=True)
    assert r1["a"][0].num_calls == 1 and r2["a"][0].num_calls == 2
    assert r2["a"][0].call_ids.tolist() == [1, 2]  # fresh ids continue


def test_open_call_reported_by_later_finalize_without_file(manager):
    manager.setup(deactivate_file_output=True)
    region = manager.region("open")
    region.__enter__()
    r1 = manager.finalize(verbose=False, return_results=True)
    assert "open" not in r1
    region.__exit__(None, None, None)
    r2 = manager.finalize(verbose=False, return_results=True)
    assert r2["open"][0].num_calls == 1


def test_concurrent_first_use_of_a_region_gives_one_region(manager):
    for attempt in range(5):
        barrier = threading.Barrier(4)

        def worker():
            barrier.wait()  # noqa: B023 (called before the loop moves on: threads are joined)
            with manager.region(f"race{attempt}"):  # noqa: B023
                time.sleep(0.001)

        with _mem_session(manager, track_threads=True) as s:
            ts = [threading.Thread(target=worker) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        names = s.results.region_names
        assert names == ["scope_profiler.session", f"race{attempt}"]
        assert s.results[f"race{attempt}"][0].num_calls == 4


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_forked_child_removes_hooks(manager):
    before = threading.getprofile()
    with _mem_session(manager, track_threads=True):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            ok = threading.getprofile() is before
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
        os.close(w)
        answer = os.read(r, 1)
        os.waitpid(pid, 0)
        assert threading.getprofile() is not before  # parent keeps its hook
    assert answer == b"1"


# Regions still open at finalize() (a worker blocked inside a region when the session ends)
# are reported and kept in the profile, flagged; the reference drops them without a word.
def _session_ending_with_a_call_open(path):
    """A tracked session whose worker-1 is inside `blocked` when the session ends (after a
    finalize() checkpoint in between); the warnings it gave."""
    import threading
    import warnings

    release = threading.Event()

    def worker():
        with ProfileManager.profile_region("blocked"):
            release.wait()

    thread = threading.Thread(target=worker, name="worker-1", daemon=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with ProfileManager.session(file_path=str(path), track_threads=True, verbose=False):
                thread.start()
                time.sleep(0.2)
                ProfileManager.finalize()  # a checkpoint: the call stays open
    finally:
        release.set()
        thread.join()
    return caught


def test_calls_open_at_the_end_are_reported_and_kept(tmp_path):
    path = tmp_path / "open.h5"
    caught = _session_ending_with_a_call_open(path)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 2, said
    # both name the user's line (the finalize() call, the with statement), not a line of
    # the manager's own module
    assert {w.filename for w in caught if issubclass(w.category, RuntimeWarning)} == {__file__}
    assert (
        said[0].startswith("1 call(s) still open at finalize; they stay open")
        and "'blocked' on worker-1" in said[0]
    )
    assert said[1].startswith(
        "1 call(s) still open at the end of the recording; they are in the profile"
    )
    region = sp.read_h5(str(path))["blocked"].regions[0]
    assert region.num_calls == 1 and 0.2 <= region.durations[0] < 10
    # the warning measures to the moment the call was closed, not to when it is printed
    assert f"(open {region.durations[0]:.3f} s)" in said[1], (said[1], region.durations[0])
    assert region.event_metadata == ({"open_at_finalize": True},)
    _main, worker_row = sp.read_h5(str(path)).thread_summary()
    assert worker_row["name"] == "worker-1" and worker_row["region_time"] == pytest.approx(
        region.durations[0]
    )


def test_the_reference_reads_a_call_open_at_the_end(tmp_path):
    from helpers import reference_read

    path = tmp_path / "open.h5"
    _session_ending_with_a_call_open(path)
    theirs = reference_read(path)
    assert theirs["regions"]["blocked@0"]["num_calls"] == 1


# A thread made outside `threading` (`_thread.start_new_thread`, C code) whose `ident` the
# OS reuses gets its own row with its own `native_id`, never a stale one (the reference
# reuses the row: a defect we do not copy).
def test_a_reused_ident_of_a_foreign_thread_gets_its_own_native_id(tmp_path):
    import _thread
    import threading

    seen: list[tuple[int, int]] = []

    def foreign():
        with ProfileManager.profile_region("foreign"):
            seen.append((threading.get_ident(), threading.get_native_id()))

    try:
        ProfileManager.setup(file_path=str(tmp_path / "reuse.h5"), track_threads=True)
        for _ in range(3):
            n = len(seen)
            _thread.start_new_thread(foreign, ())
            deadline = time.monotonic() + 10
            while len(seen) == n and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.05)  # the thread has ended: its ident may be reused
        results = ProfileManager.finalize(return_results=True, verbose=False)
    finally:
        ProfileManager.reset()
    assert len(seen) == 3
    rows = {t.index: t for t in results.threads[0]}
    ids = list(results["foreign"].regions[0].thread_ids)
    assert len(set(ids)) == 3  # one row per thread
    assert [rows[i].native_id for i in ids] == [native for _, native in seen]
    names = [rows[i].name for i in ids]
    assert len(set(names)) == 3, names  # a reused Dummy thread object says which thread it is


# A call left open when the recording ends (an `__enter__` without `__exit__` before
# `sys.exit()`, a pool worker terminated inside a task) ends with the innermost call of its
# lane that closed around it (here the session's root region), and nests there. Closed at
# finalize instead, it would cross the root: an untracked run would lose its call graph and
# every exclusive time, a tracked one would set the call aside.
@pytest.mark.parametrize("track_threads", [False, True])
def test_call_left_open_at_the_end_nests_in_the_session_root(tmp_path, track_threads):
    path = tmp_path / "open.h5"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ProfileManager.session(
            file_path=str(path), track_threads=track_threads, verbose=False
        ):
            with ProfileManager.profile_region("done"):
                pass
            ProfileManager.profile_region("left_open").__enter__()
            time.sleep(0.01)
    said = [str(w.message) for w in caught]
    assert not any("call graph not recorded" in m or "set aside" in m for m in said), said
    assert any("still open at the end of the recording" in m for m in said), said
    results = sp.read_h5(str(path))
    root = results["scope_profiler.session"].regions[0]
    left = results["left_open"].regions[0]
    assert left.event_metadata == ({"open_at_finalize": True},)
    assert left.start_times[0] > root.start_times[0]
    assert left.end_times[0] == root.end_times[0]  # ends with the root it was open in
    assert 0.01 <= left.durations[0] < root.durations[0]
    assert list(left.parent_ids) == list(root.call_ids)
    done = results["done"].regions[0].durations[0]
    assert root.exclusive_durations[0] == pytest.approx(
        root.durations[0] - done - left.durations[0]
    )


# A region object kept across `setup()` calls records into the current run (never into a
# finished one, whose file would never get those calls), and its repr says whether it is
# active; one made before the first `setup()` records once a run starts.
def test_a_region_object_kept_across_setups_records_into_the_current_run(tmp_path):
    manager = ProfileManager()
    early = manager.profile_region("early")  # before any setup(): disabled for now
    assert "(disabled)" in repr(early) and not early.enabled
    first, second = tmp_path / "first.h5", tmp_path / "second.h5"
    manager.setup(file_path=str(first))
    kept = manager.profile_region("kept")
    with kept:
        pass
    with early:
        pass
    manager.finalize(verbose=False)
    manager.reset()
    assert "(disabled)" in repr(kept) and not kept.enabled  # no run now
    with kept:  # recorded nowhere
        pass
    assert kept.num_calls == 0
    manager.setup(file_path=str(second), track_threads=True)
    assert "(active)" in repr(kept) and kept.enabled
    for _ in range(4):
        with kept:
            pass
        with manager.profile_region("kept"):  # the name looked up: the same region
            pass
    assert kept.num_calls == 8
    manager.finalize(verbose=False)
    manager.reset()  # no thread hook outlives the test

    def counts(path):
        r = sp.read_h5(str(path))
        return {n: r[n][0].num_calls for n in r.region_names}

    assert counts(first) == {"kept": 1, "early": 1}
    assert counts(second) == {"kept": 8}


# A name looked up on another thread while setup() runs can put a region of the earlier run
# in the manager's dict after setup() cleared it. Such a region is replaced at its next
# lookup, and the stale object itself records into the new run. (The thread switch is
# simulated: the stale region is put where the other thread's lookup puts it.)
def test_a_region_of_an_earlier_run_left_in_the_dict_is_replaced():
    manager = ProfileManager()
    manager.setup(deactivate_file_output=True)
    stale = manager.profile_region("x")
    assert manager.profile_region("x") is stale  # listed in the dict at its second lookup
    manager.finalize(verbose=False)
    manager.setup(deactivate_file_output=True, replace=True)
    manager._regions["x"] = stale  # what the other thread's lookup did during setup()
    for _ in range(3):
        with manager.profile_region("x"):
            pass
    with stale:  # the object itself follows the new run too
        pass
    assert manager.get_region("x") is not stale
    results = manager.finalize(verbose=False, return_results=True)
    assert results["x"][0].num_calls == 4
    manager.reset()


# recorded_regions() while another thread creates regions never fails (RuntimeError:
# dictionary changed size during iteration).
def test_recorded_regions_while_another_thread_creates_regions():
    manager = ProfileManager()
    manager.setup(deactivate_file_output=True, track_threads=True)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    names = [f"GET /item/{i}" for i in range(3000)]

    def worker():
        for name in names:
            for _ in range(2):  # the second lookup lists the name in the dict
                with manager.region(name):
                    pass

    import threading

    t = threading.Thread(target=worker)
    t.start()
    try:
        while t.is_alive():
            recorded = manager.recorded_regions()
            assert set(recorded) <= set(names)
    finally:
        t.join()
        sys.setswitchinterval(switch)
    assert manager.recorded_regions() == tuple(names)
    manager.finalize(verbose=False)
    manager.reset()


# A region name used once keeps no Python object, but it keeps its tags: `region("t",
# tags=("x",))` for such a name raises, as it does for a name in the dict. The registered
# names keep their creation order; `region()` without a name names `region()` in its error.
def test_a_name_used_once_keeps_its_tags_order_and_messages():
    manager = ProfileManager()
    with manager.session(deactivate_file_output=True, verbose=False):
        for name in ("t", "a", "b", "c"):
            with manager.region(name):
                pass
        with manager.region("c"):  # listed in the dict now
            pass
        with pytest.raises(ValueError, match=r"already has tags \(\); cannot reuse it"):
            manager.region("t", tags=("x",))
        assert manager.region("t", tags=()) is manager.get_region("t")
        names = manager.registered_regions()
        assert names[names.index("t") :] == ("t", "a", "b", "c")
        with pytest.raises(TypeError, match=r"^region\(\) missing 1 required argument"):
            manager.region()
