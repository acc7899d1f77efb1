"""Region, thread and task names: what cannot be a name is refused at creation with a
message naming it (NUL, lone surrogates, non-str), what the program names is escaped visibly;
every other name round-trips through the file (docs/names.md)."""

from __future__ import annotations

import pytest
import scope_profiler as sp
from scope_profiler import ProfileManager


# A region name that cannot round-trip through the file (contains NUL) is refused at
# creation with a clear error rather than altered silently; every other name comes back
# from the file exactly as given.
def test_region_names_with_nul_are_refused_at_creation(tmp_path):
    from scope_profiler._native import ProfileRegion

    manager = ProfileManager()
    try:
        for recording in (False, True):
            if recording:
                manager.setup(file_path=str(tmp_path / "names.h5"))
            for create in (
                lambda: manager.profile_region("bad\0name"),
                lambda: manager.region("bad\0name", tags=["t"]),
                lambda: manager.profile("bad\0name")(lambda: None),
                lambda: ProfileRegion.disabled("bad\0name"),
            ):
                with pytest.raises(ValueError, match=r"'bad\\x00name' contains a NUL character"):
                    create()
            assert "bad\0name" not in manager.registered_regions()

        @manager.profile
        def fine():
            return 1

        # names without NUL come back from the file exactly as given
        names = ["new\nline", "tab\there", "back\\slash \\x00 literal", "ünï 😀", " "]
        for name in names:
            with manager.profile_region(name):
                fine()
        written = manager.finalize(verbose=False, return_results=True)
        back = sp.read_h5(tmp_path / "names.h5")
        assert sorted(back.region_names) == sorted([*names, "fine"])
        for name in names:
            assert back[name][0].num_calls == 1
        assert back["fine"][0].num_calls == len(names)
        assert back.region_names == written.region_names
    finally:
        manager.reset()


# Thread and task names come from the program, so they are not refused:
# a NUL is recorded as the visible escape "\x00" (one RuntimeWarning per run), the same in
# memory and in the file.
def test_thread_and_task_names_with_nul_are_escaped_visibly(tmp_path):
    import asyncio
    import threading
    import warnings

    manager = ProfileManager()
    path = tmp_path / "lanes.h5"
    try:
        run = manager.setup(file_path=str(path), track_async=True)

        def work():
            with manager.profile_region("w"):
                pass

        async def child():
            with manager.profile_region("c"):
                await asyncio.sleep(0)

        async def main():
            task = asyncio.create_task(child(), name="task\0one")
            await task
            renamed = asyncio.create_task(child())
            renamed.set_name("late\0name")  # set_name after creation: taken at finalize
            await renamed

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for name in ("thread\0one", "thread\0two"):
                t = threading.Thread(target=work, name=name)
                t.start()
                t.join()
            asyncio.run(main())
        nul_warnings = [w for w in caught if "NUL" in str(w.message)]
        assert len(nul_warnings) == 1, [str(w.message) for w in caught]
        assert nul_warnings[0].category is RuntimeWarning
        assert "'thread\\x00one'" in str(nul_warnings[0].message)

        results = run.finalize(verbose=False)
        back = sp.read_h5(path)
        for res in (results, back):
            threads = [t.name for t in res.threads[0]]
            tasks = [t.name for t in res.tasks[0]]
            assert "thread\\x00one" in threads and "thread\\x00two" in threads
            assert "task\\x00one" in tasks and "late\\x00name" in tasks
            assert not any("\0" in n for n in threads + tasks)
        assert [t.name for t in back.threads[0]] == [t.name for t in results.threads[0]]
        assert [t.name for t in back.tasks[0]] == [t.name for t in results.tasks[0]]
        assert back["w"][0].num_calls == 2 and back["c"][0].num_calls == 2
    finally:
        manager.reset()


# A region name with a lone surrogate cannot be UTF-8: every path a name crosses into Rust
# says which region and what is wrong (a bare `UnicodeEncodeError` named neither), the
# encoding error kept as the cause.
SURROGATE_MESSAGE = (
    r"region name 'a\udcff' contains the lone surrogate '\udcff' at position 1, which is "
    r"not valid Unicode text: a profile file (UTF-8) cannot hold it; choose a name without it"
)


def test_a_region_name_with_a_lone_surrogate_is_named_in_the_error(tmp_path):
    def refused(make):
        with pytest.raises(ValueError) as caught:
            make()
        assert str(caught.value).startswith(SURROGATE_MESSAGE), str(caught.value)
        assert isinstance(caught.value.__cause__, UnicodeEncodeError)

    name = "a\udcff"
    refused(lambda: ProfileManager.profile_region(name))  # before setup(): disabled region
    refused(lambda: ProfileManager.profile(name)(lambda: None))
    out = tmp_path / "run.h5"
    ProfileManager.setup(file_path=str(out))
    try:
        refused(lambda: ProfileManager.profile_region(name))
        refused(lambda: ProfileManager.define_region(name))
        with ProfileManager.profile_region("fine"):
            pass
    finally:
        ProfileManager.finalize(verbose=False)
    assert sp.read_h5(str(out))["fine"][0].num_calls == 1  # the run is unharmed


# A region name that is not a str is refused where it is given, by every path, with a
# TypeError that says it is about the region name (0.7.5 accepts it and fails at finalize).
def test_a_region_name_that_is_not_a_str_is_named_as_such(tmp_path):
    manager = ProfileManager()

    def refused(make, shown):
        with pytest.raises(TypeError, match=rf"^region name must be a str, not {shown}"):
            make()

    refused(lambda: manager.profile_region(123), r"int \(123\)$")  # before setup()
    manager.setup(file_path=str(tmp_path / "r.h5"))
    try:
        refused(lambda: manager.region(123), r"int \(123\)$")
        refused(lambda: manager.profile(42)(lambda: None), r"int \(42\)$")
        refused(lambda: manager.define_region(7), r"int \(7\)$")
        refused(lambda: manager.profile_region(b"x"), r"bytes \(b'x'\); decode it first$")
        with manager.profile_region("fine"):
            pass
    finally:
        manager.finalize(verbose=False)
    assert sp.read_h5(str(tmp_path / "r.h5"))["fine"][0].num_calls == 1
