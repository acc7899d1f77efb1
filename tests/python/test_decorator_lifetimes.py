"""`@profile` on coroutine and generator functions times their whole run; decorated
functions pickle by reference (process pools); `session` decorates `async def`."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle

import pytest
import scope_profiler as sp
from scope_profiler import ProfileManager


@sp.profile
def square(x: int) -> int:
    return x * x


def test_decorated_function_pickles_by_reference_and_runs_in_a_pool():
    assert pickle.loads(pickle.dumps(square)) is square
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        assert pool.map(square, range(5)) == [0, 1, 4, 9, 16]


def test_async_def_region_spans_the_awaited_run(tmp_path):
    manager = ProfileManager()

    @manager.profile
    async def sleeper(d):
        await asyncio.sleep(d)
        return d

    async def main():
        return await asyncio.gather(*(sleeper(0.02 * i) for i in range(1, 4)))

    with manager.session(
        file_path=str(tmp_path / "a.h5"), track_async=True, return_results=True, verbose=False
    ) as run:
        assert asyncio.run(main()) == [0.02, 0.04, 0.06]
    region = run.results["sleeper"][0]
    assert region.num_calls == 3
    durations = sorted(region.durations)
    for got, slept in zip(durations, (0.02, 0.04, 0.06)):
        assert slept <= got < slept + 0.05, durations
    # each call ran in its own task, and nearly all of it was spent awaiting
    assert len(set(region.task_ids.tolist())) == 3 and (region.task_ids >= 0).all()
    assert (region.await_times >= region.durations * 0.5).all()


def test_generator_region_spans_iteration(tmp_path):
    manager = ProfileManager()

    @manager.profile
    def produce(n):
        yield from range(n)
        return "done"

    with manager.session(
        file_path=str(tmp_path / "g.h5"), return_results=True, verbose=False
    ) as run:
        gen = produce(3)
        assert next(gen) == 0
        with manager.profile_region("between"):
            pass
        assert list(gen) == [1, 2]
    results = run.results
    outer, inner = results["produce"][0], results["between"][0]
    assert outer.num_calls == 1 and inner.num_calls == 1
    # the generator's call encloses the region run between two of its steps
    assert (
        outer.start_times_ns[0] <= inner.start_times_ns[0]
        and inner.end_times_ns[0] <= outer.end_times_ns[0]
    )


def test_session_decorates_async_def(tmp_path):
    manager = ProfileManager()
    path = tmp_path / "s.h5"

    @manager.session(file_path=str(path), track_async=True, verbose=False)
    async def job():
        with manager.profile_region("inside"):
            await asyncio.sleep(0.02)

    asyncio.run(job())
    results = sp.read_h5(path)
    assert results["inside"][0].num_calls == 1
    assert results["inside"][0].durations[0] >= 0.02
    assert results["scope_profiler.session"][0].durations[0] >= results["inside"][0].durations[0]


def test_verbose_summary_never_raises_on_nesting_failure(tmp_path, capsys):
    manager = ProfileManager()

    def reader(name):
        with manager.profile_region("read_" + name):
            yield from range(3)

    with pytest.warns(RuntimeWarning, match="call graph not recorded"):
        with manager.session(file_path=str(tmp_path / "x.h5"), verbose=True):
            a, b = reader("a"), reader("b")
            next(a), next(b)
            list(a), list(b)
    out = capsys.readouterr().out
    assert "exclusive time not available: recorded calls are not properly nested" in out


def test_clear_errors_for_bad_export_and_frame_arguments(tmp_path):
    from helpers import DATASETS

    results = sp.read_h5(DATASETS / "reference" / "threads.h5")
    with pytest.raises(ValueError, match="No regions matched the selected filters"):
        results.to_arrow(include=["nomatch"])
    with pytest.raises(TypeError, match="read_h5"):
        sp.export_speedscope(str(DATASETS / "reference" / "threads.h5"), tmp_path / "x.json")
    with pytest.raises(TypeError, match="ProfilingResults"):
        sp.export_speedscope(None, tmp_path / "x.json")
    with pytest.raises(sp.CorruptProfileError, match="is a directory, not a profile file"):
        sp.read_h5(tmp_path)


# `@profile` on an `async def` generator times its iteration (not ~0 s, the creation of the
# generator alone), with its await time, and `inspect.isasyncgenfunction` is True on the
# wrapper.
def test_decorated_async_generators_are_timed_over_their_iteration(tmp_path):
    import asyncio
    import inspect

    from scope_profiler import profile

    @profile
    async def ticks(n):
        for i in range(n):
            await asyncio.sleep(0.01)
            received = yield i
            if received == "stop":
                return

    assert inspect.isasyncgenfunction(ticks)

    async def main():
        got = [i async for i in ticks(3)]
        early = ticks(10)
        first = await early.__anext__()
        await early.aclose()  # abandoned after one item
        sent = ticks(10)
        await sent.__anext__()
        try:
            await sent.asend("stop")
        except StopAsyncIteration:
            pass
        thrown = ticks(10)
        await thrown.__anext__()
        with pytest.raises(KeyError):
            await thrown.athrow(KeyError("k"))
        return got, first

    path = tmp_path / "agen.h5"
    with ProfileManager.session(file_path=str(path), track_async=True, verbose=False):
        assert asyncio.run(main()) == ([0, 1, 2], 0)
    region = next(
        g for g in sp.read_h5(str(path)).get_regions() if g.name.endswith("ticks")
    ).regions[0]
    assert region.num_calls == 4
    full, early, sent, thrown = region.durations
    # the iteration's time (not ~0 s), with room for a loaded machine
    assert 0.03 <= full < 5 and 0.01 <= early < 5 and 0.01 <= sent < 5 and 0.01 <= thrown < 5
    # await time is at least the asyncio.sleep(0.01) calls each iteration made (3, 1, 1, 1:
    # asend("stop") and athrow end the generator at its yield), however loaded the machine;
    # never more than the call's duration.
    sleeps = [3, 1, 1, 1]
    for d, a, n in zip(region.durations, region.await_times, sleeps):
        assert 0.0099 * n <= a <= d, (region.durations, region.await_times)
    assert list(region.task_ids) == [0, 0, 0, 0]
