"""The per-call paths (a reused region object, a decorated call, and
``with ProfileManager.profile_region(name):`` looked up per call) run no Python frame and
leave no Python object behind, in each mode (untracked, track_threads, track_async).

Checked without timing: ``sys.setprofile`` sees every Python frame that starts (a C
function only shows up as ``c_call``), and ``sys.getallocatedblocks()`` counts the live
pymalloc blocks, which grow by at least one per call if any call keeps an object.
"""

from __future__ import annotations

import asyncio
import gc
import sys

import pytest
from scope_profiler import ProfileManager

CALLS = 100_000
MODES = {
    "untracked": {},
    "track_threads": {"track_threads": True},
    "track_async": {"track_async": True},
}


def _paths(manager):
    """The three hot paths as ``loop(n)`` functions (each runs the path ``n`` times)."""
    region = manager.profile_region("reused")

    @manager.profile
    def decorated():
        return None

    def reused(n):
        for _ in range(n):
            with region:
                pass

    def call_decorated(n):
        for _ in range(n):
            decorated()

    def looked_up(n):
        for _ in range(n):
            with manager.profile_region("looked_up"):
                pass

    def class_looked_up(n):  # the process-wide default, as the README writes it
        for _ in range(n):
            with ProfileManager.profile_region("class_looked_up"):
                pass

    return {
        "reused": reused,
        "decorated": call_decorated,
        "profile_region": looked_up,
        "ProfileManager.profile_region": class_looked_up,
    }


def _python_frames(loop, n: int) -> int:
    """Python frames started while ``loop(n)`` runs, ``loop``'s own included (after one
    call that creates the regions)."""
    loop(1)
    started = 0

    def profiler(frame, event, arg):
        nonlocal started
        if event == "call":
            started += 1

    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        loop(n)
    finally:
        sys.setprofile(previous)
    return started


def _block_growth(loop, n: int) -> int:
    """Live pymalloc blocks after ``loop(n)`` minus before (gc off meanwhile)."""
    loop(1000)  # warm: specialization, first-use buffers
    gc.collect()
    gc.disable()
    try:
        before = sys.getallocatedblocks()
        loop(n)
        after = sys.getallocatedblocks()
    finally:
        gc.enable()
    return after - before


def _measure(kwargs, measure):
    """``measure(loop)`` for every path, recording with ``kwargs``; with ``track_async`` the
    paths run inside a task (on its lane). Also returns the recorded call counts."""
    manager = ProfileManager()
    default = ProfileManager.setup(deactivate_file_output=True, replace=True, **kwargs)
    try:
        with manager.session(deactivate_file_output=True, verbose=False, **kwargs):
            loops = _paths(manager)
            if kwargs.get("track_async"):

                async def main():
                    return {name: measure(loop) for name, loop in loops.items()}

                out = asyncio.run(main())
            else:
                out = {name: measure(loop) for name, loop in loops.items()}
            counts = {
                name: manager.get_region(name).num_calls
                for name in ("reused", "decorated", "looked_up")
            }
            counts["class_looked_up"] = ProfileManager.get_region("class_looked_up").num_calls
    finally:
        default.finalize(verbose=False)
        ProfileManager.reset()
    return out, counts


@pytest.mark.parametrize("mode", MODES)
def test_hot_paths_run_no_python_frame(mode):
    frames, counts = _measure(MODES[mode], lambda loop: _python_frames(loop, 1000))
    # only the loop function itself (and the decorated function's own body): nothing per call
    assert frames == {**dict.fromkeys(frames, 1), "decorated": 1 + 1000}
    # and every call was recorded (the paths did run)
    assert counts == dict.fromkeys(counts, 1 + 1000)


@pytest.mark.parametrize("mode", MODES)
def test_hot_paths_create_no_python_objects(mode):
    growth, counts = _measure(MODES[mode], lambda loop: _block_growth(loop, CALLS))
    # one object kept per call would be >= 100,000 blocks; a few come from the interpreter
    assert all(abs(g) < 100 for g in growth.values()), growth
    assert counts == dict.fromkeys(counts, 1000 + CALLS)


def test_profile_region_is_one_native_function_per_manager():
    a, b = ProfileManager(), ProfileManager()
    # a builtin: no descriptor binding, the same object from the class and its instances
    assert type(ProfileManager.profile_region).__name__ == "builtin_function_or_method"
    assert ProfileManager.region is ProfileManager.profile_region
    assert a.profile_region is type(a).profile_region is a.region
    assert a.profile_region is not b.profile_region
    with a.session(deactivate_file_output=True, verbose=False):
        first = a.profile_region("x")
        assert a.profile_region("x") is first and a.region("x") is first
        assert b.profile_region("x") is not first  # b's own regions
        assert ProfileManager.get_region("x") is None
        line = sys._getframe().f_lineno + 1
        made_here = a.profile_region("made_here")
        assert made_here.source_lineno == line
        assert made_here.source_file == "tests/python/test_hot_path_allocations.py" or (
            made_here.source_file.endswith("test_hot_path_allocations.py")
        )
        # tags go through the Python path: checked against the first creation
        tagged = a.profile_region("tagged", tags=["t"])
        assert a.profile_region("tagged", tags=["t"]) is tagged
        assert a.profile_region("tagged") is tagged
        with pytest.raises(ValueError, match="already has tags"):
            a.profile_region("tagged", tags=["u"])
        with pytest.raises(ValueError, match="NUL"):
            a.profile_region("bad\0name")
        with pytest.raises(TypeError):
            a.profile_region(["unhashable"])
    a.reset()
    assert a.get_region("x") is None
    assert not a.profile_region("x").enabled  # not configured: a disabled region


def test_subclass_gets_its_own_region_cache():
    class Custom(ProfileManager):
        pass

    assert Custom.profile_region is not ProfileManager.profile_region
    assert Custom._regions is not ProfileManager._regions
    try:
        Custom.setup(deactivate_file_output=True)
        with Custom.profile_region("sub"):
            pass
        assert Custom.get_region("sub").num_calls == 1
        assert ProfileManager.get_region("sub") is None
    finally:
        Custom.reset()


def test_new_names_record_their_own_lines():
    """The defining site is cached per call site (code object, instruction), so
    names made in one loop at two lines, and by a helper, each record the right line."""
    manager = ProfileManager()

    def helper(name):
        return manager.profile_region(name)  # the site is this line

    helper_line = helper.__code__.co_firstlineno + 1
    with manager.session(deactivate_file_output=True, verbose=False):
        first = sys._getframe().f_lineno + 3
        made = []
        for i in range(3):
            made.append(manager.profile_region(f"a{i}"))
            made.append(manager.profile_region(f"b{i}"))
        by_helper = [helper(f"h{i}") for i in range(3)]
        assert [r.source_lineno for r in made] == [first, first + 1] * 3
        assert [r.source_lineno for r in by_helper] == [helper_line] * 3
        assert {r.name for r in made} == {f"{c}{i}" for c in "ab" for i in range(3)}
        assert len({r.source_file for r in made + by_helper}) == 1


def test_region_enter_exit_are_plain_c_methods():
    """``__enter__``/``__exit__`` are plain C methods, not pyo3's wrappers; the ``with``
    protocol holds (the region is the target, exceptions propagate, calls are recorded)."""
    manager = ProfileManager()
    with manager.session(deactivate_file_output=True, verbose=False):
        region = manager.profile_region("c")
        with region as target:
            assert target is region
        with pytest.raises(KeyError), region:
            raise KeyError("propagates")
        assert region.__exit__(None, None, None) is False  # nothing open: a no-op
        with pytest.raises(TypeError, match="expected 3 arguments, got 0"):
            region.__exit__()
        assert region.num_calls == 2


def test_with_reuses_one_bound_method_per_region_and_regions_are_still_collected():
    """``with region:`` gets the region's own bound ``__enter__``/``__exit__``
    (made at the second lookup, kept by the region) instead of allocating two bound methods
    per statement; a name used once keeps none. The region and its bound methods form a
    cycle: the collector must still free them once the manager drops the region."""
    manager = ProfileManager()

    def live(region_type):
        gc.collect()
        return sum(
            1
            for o in gc.get_objects()
            if type(o) is region_type and o.name.startswith("collected-")
        )

    with manager.session(deactivate_file_output=True, verbose=False):
        region = manager.profile_region("bound")
        region_type = type(region)
        first, second, third = region.__enter__, region.__enter__, region.__enter__
        assert first is not second and second is third and third.__self__ is region
        assert region.__exit__ is not region.__exit__ and region.__exit__ is region.__exit__
        other = manager.profile_region("other")
        other.__enter__
        assert other.__enter__ is not region.__enter__ and other.__enter__.__self__ is other
        # the class attribute reads as the plain method (stubs, inspect, unbound calls)
        assert type(region_type.__dict__["__enter__"]).__name__ == "region_method"
        assert repr(region_type.__exit__).startswith("<method '__exit__'")
        assert region_type.__enter__(region) is region
        assert region_type.__exit__(region, None, None, None) is False
        with region:
            pass
        assert region.num_calls == 2
        once = manager.profile_region("once")
        with once:
            pass
        assert not gc.is_tracked(once)  # nothing cached: no cycle, nothing for the collector
        # a name used once keeps no object; its second use lists one in the manager's dict,
        # whose second `with` caches its bound methods: the cycle
        for i in range(1000):
            for _ in range(3):
                with manager.profile_region(f"collected-{i}"):
                    pass
        del region, other
        assert live(region_type) == 1000  # the manager's region dict holds them
    with manager.session(deactivate_file_output=True, verbose=False):
        pass
    assert live(region_type) == 0


def test_a_name_used_once_keeps_no_python_object():
    """Dynamic names (100,000 like ``f"GET /item/{i}"``) cost no Python object each (a region
    object and a dict key would be ~400 bytes per name): a name looked up once keeps no
    Python object, only its row in the native region table, until it is looked up again. It
    is still registered and recorded, and a name gives one object while anyone holds it."""
    manager = ProfileManager()
    with manager.session(deactivate_file_output=True, verbose=False, return_results=True) as s:
        with manager.profile_region("warm"):
            pass
        names = [f"GET /item/{i}" for i in range(20_000)]
        gc.collect()
        before = sys.getallocatedblocks()
        for name in names:
            with manager.profile_region(name):
                pass
        gc.collect()
        grown = sys.getallocatedblocks() - before
        assert grown < len(names) // 20, grown  # an object per name: two blocks per name
        held = manager.profile_region("held")
        assert manager.profile_region("held") is held  # listed at its second lookup
        assert manager.region("held") is held
        alive = manager.profile_region("alive")
        assert manager.profile_region("alive", tags=None) is alive  # the Python path too
        registered = manager.registered_regions()
        root = "scope_profiler.session"  # the session's own region
        assert set(registered) == {root, "warm", "held", "alive", *names}
        assert len(registered) == len(names) + 4
        assert manager.get_region("missing") is None
        assert manager.get_region("GET /item/7").num_calls == 1
        with manager.profile_region("GET /item/7"):
            pass
        assert manager.get_region("GET /item/7").num_calls == 2
        assert set(manager.recorded_regions()) == {root, "warm", *names}  # held/alive: no call
    calls = {name: int(s.results[name][0].num_calls) for name in s.results.region_names}
    assert calls == {root: 1, "warm": 1, **dict.fromkeys(names, 1), "GET /item/7": 2}
