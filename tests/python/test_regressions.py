"""Regression tests, each headed by where the problem was reported (an issue of this
project, or a peer tool's public bug report). Every bug fixed gets one here (Rust-side ones
in `*/tests/regression.rs`), so a report can be traced to the test that keeps it fixed."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq
import pytest
import scope_profiler as sp
from helpers import DATASETS, run_cli
from scope_profiler import MPIRegion, ProfileManager, ProfilingResults, Region

ASYNC = DATASETS / "reference" / "async.h5"
THREADS = DATASETS / "reference" / "threads.h5"


def _one_region_run(name: str, metadata: dict) -> ProfilingResults:
    region = Region(np.array([0, 10], dtype=np.int64), np.array([5, 30], dtype=np.int64))
    return ProfilingResults({name: MPIRegion(name, {0: region})}, metadata=metadata)


# issue 10: "two merges with different metadata rules (`merge._stacked` unions metadata,
# `analysis::stack_runs`/`cli merge` keep the first run's)" - now one merge, one rule.
def test_issue_10_one_metadata_rule_for_every_merge(tmp_path):
    a = _one_region_run("x", {"label": "A", "only_a": 1, "mpi_size": 1})
    b = _one_region_run("x", {"label": "B", "only_b": 2, "mpi_size": 1})
    stacked = sp.merge_results(a, b)
    assert stacked.num_ranks == 2
    md = stacked.metadata
    assert (md["label"], md["only_a"], md["only_b"], md["mpi_size"]) == ("A", 1, 2, 2)
    assert list(md)[:3] == ["label", "only_a", "mpi_size"]  # first part's keys, in order
    united = sp.merge_results(a, _one_region_run("y", {"label": "C", "only_c": 3}))
    assert (united.metadata["label"], united.metadata["only_c"]) == ("A", 3)
    # the CLI's merge is the same function: the files' keys are all in the merged file
    paths = []
    for k, r in enumerate((a, b)):
        paths.append(tmp_path / f"p{k}.h5")
        r._native_run().write_h5(str(paths[-1]))
    proc = run_cli("summary", "--merge", *paths)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 file(s), merged: 1 region(s), 4 call(s), 2 rank(s)")


# issue 10: "`ProfilingResults.print_summary` (102 lines) re-implements
# `cli/src/report.rs::summary_text`" - both now print the one report.
def test_issue_10_print_summary_is_the_cli_report():
    out = io.StringIO()
    sp.read_h5(THREADS).print_summary(stream=out, suppress_notes=True)
    cli = run_cli("summary", THREADS)
    assert cli.returncode == 0, cli.stderr
    ours = out.getvalue().splitlines()
    theirs = cli.stdout.splitlines()
    assert ours[1:] == theirs[1:]  # the same tables; only the title line names the file differently
    assert "rank 0: regions" in ours and "rank 0: threads" in ours


# issue 10: "lane labels three ways" - results, exports and the Parquet lanes table now take
# them from one function.
def test_issue_10_one_lane_label(tmp_path):
    results = sp.read_h5(ASYNC)
    _, lanes_path = sp.export_parquet(results, tmp_path / "a.parquet", verbose=False)
    lanes = pq.read_table(lanes_path).to_pydict()
    assert lanes["label"], "the async run has lanes"
    for rank, lane, label in zip(lanes["rank"], lanes["lane"], lanes["label"]):
        assert label == results.lane_label(lane, rank)


# issue 11: "`import scope_profiler.__main__` must not run the CLI (guard it; keep `main`)".
def test_issue_11_importing_main_runs_nothing():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "import scope_profiler.__main__ as m; print(callable(m.main))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert "usage" not in (proc.stdout + proc.stderr).lower()
    from scope_profiler.profile_manager import ProfileManager

    assert ProfileManager is sp.ProfileManager


def _record_calls(manager, name: str, count: int, sleep_s: float = 0.002) -> None:
    import time

    for _ in range(count):
        with manager.profile_region(name):
            time.sleep(sleep_s)


def _assert_file_has(path, expected, *, min_duration_s: float) -> None:
    """The file at ``path`` holds exactly ``expected`` (a ``ProfilingResults``) calls."""
    back = sp.read_h5(path)
    assert back.region_names == expected.region_names
    for name in expected.region_names:
        ours, theirs = back[name][0], expected[name][0]
        assert ours.num_calls == theirs.num_calls
        np.testing.assert_array_equal(ours.start_times_ns, theirs.start_times_ns)
        np.testing.assert_array_equal(ours.end_times_ns, theirs.end_times_ns)
    work = back["work"][0]
    assert (np.asarray(work.durations) >= min_duration_s).all()


# issue 13 item 1: "A failed write throws away the run: `finalize()` empties the recorder
# buffers before the file is written; if the write fails (missing directory ...),
# `run.results` and `last_results()` are None, the calls are gone, and a retry writes an
# empty profile. The error is a bare `OSError` with `errno=None`."
@pytest.mark.parametrize("failure", ["missing_dir", "is_a_directory", "not_a_directory"])
def test_issue_13_item_1_failed_write_keeps_the_run_and_the_retry_writes_it(tmp_path, failure):
    import errno
    import os
    import shutil

    target = tmp_path / "out" / "run.h5"
    expected_error, expected_errno = {
        "missing_dir": (FileNotFoundError, errno.ENOENT),
        "is_a_directory": (IsADirectoryError, errno.EISDIR),
        "not_a_directory": (NotADirectoryError, errno.ENOTDIR),
    }[failure]
    if failure == "is_a_directory":
        target.mkdir(parents=True)  # a directory where the file should go
    elif failure == "not_a_directory":
        (tmp_path / "out").write_text("a regular file where the directory should be")
    manager = ProfileManager()
    try:
        run = manager.setup(file_path=str(target), track_threads=True)
        _record_calls(manager, "work", 5)
        with pytest.raises(expected_error) as info:
            run.finalize(verbose=False)
        assert info.value.errno == expected_errno
        assert info.value.filename == str(target)
        assert "run.h5" in str(info.value)
        # the run is in memory although the file was not written
        assert run.results is not None and manager.last_results() is run.results
        failed = run.results
        assert failed["work"][0].num_calls == 5
        assert (np.asarray(failed["work"][0].durations) >= 0.002).all()
        # make the path writable, record more, retry: every call is in the file
        if failure == "is_a_directory":
            target.rmdir()
        elif failure == "not_a_directory":
            os.remove(tmp_path / "out")
        if not target.parent.exists():
            target.parent.mkdir()
        _record_calls(manager, "work", 2)
        written = run.finalize(verbose=False)
        assert written["work"][0].num_calls == 7
        np.testing.assert_array_equal(
            written["work"][0].start_times_ns[:5], failed["work"][0].start_times_ns
        )
        np.testing.assert_array_equal(written["work"][0].call_ids, np.arange(7))
        _assert_file_has(target, written, min_duration_s=0.002)
        # and the calls are retired only now: the next finalize reports new calls only
        _record_calls(manager, "work", 1)
        again = run.finalize(verbose=False)
        assert again["work"][0].num_calls == 1
        assert again["work"][0].call_ids.tolist() == [7]
    finally:
        manager.reset()
        shutil.rmtree(tmp_path / "out", ignore_errors=True)


# issue 13 item 1: the same through `session()`: the error leaves the `with`, the session's
# results hold the run, and `finalize()` once the directory exists writes every call
# (the session's root region included).
def test_issue_13_item_1_session_write_failure_then_finalize_writes_all(tmp_path):
    target = tmp_path / "missing" / "s.h5"
    manager = ProfileManager()
    try:
        with pytest.raises(FileNotFoundError) as info:
            with manager.session(file_path=str(target), return_results=True, verbose=False) as s:
                _record_calls(manager, "work", 3)
        assert info.value.filename == str(target)
        assert s.results is not None
        assert s.results["work"][0].num_calls == 3
        assert s.results["scope_profiler.session"][0].num_calls == 1
        target.parent.mkdir()
        retried = manager.finalize(verbose=False, return_results=True)
        assert retried["work"][0].num_calls == 3
        assert retried["scope_profiler.session"][0].num_calls == 1
        _assert_file_has(target, retried, min_duration_s=0.002)
    finally:
        manager.reset()


# issue 13 item 1: a read-only directory refuses with PermissionError (EACCES) - unless
# this process may write it anyway (root), then there is nothing to refuse.
def test_issue_13_item_1_read_only_directory_is_a_permission_error(tmp_path):
    import errno
    import os
    import stat

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("this process can write read-only directories (root)")
        manager = ProfileManager()
        try:
            run = manager.setup(file_path=str(ro / "run.h5"))
            _record_calls(manager, "work", 2)
            with pytest.raises(PermissionError) as info:
                run.finalize(verbose=False)
            assert info.value.errno == errno.EACCES
            assert run.results["work"][0].num_calls == 2
            ro.chmod(stat.S_IRWXU)
            assert run.finalize(verbose=False)["work"][0].num_calls == 2
            assert sp.read_h5(ro / "run.h5")["work"][0].num_calls == 2
        finally:
            manager.reset()
    finally:
        ro.chmod(stat.S_IRWXU)


# issue 13 item 16: "A region, thread or task name that cannot round-trip through the file
# (contains NUL) is refused at creation with a clear error rather than altered silently."
def test_issue_13_item_16_region_names_with_nul_are_refused_at_creation(tmp_path):
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


# issue 13 item 16: thread and task names come from the program, so they are not refused:
# a NUL is recorded as the visible escape "\x00" (one RuntimeWarning per run), the same in
# memory and in the file.
def test_issue_13_item_16_thread_and_task_names_with_nul_are_escaped_visibly(tmp_path):
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


_EXPORTS = {
    # function name -> (default file name(s) of pool.h5 in a directory, exact name to give)
    "export_speedscope": (["pool.speedscope.json"], "my.speedscope.json"),
    "export_chrome_trace": (["pool.trace.json"], "my.trace.json"),
    "export_perfetto": (["pool.pftrace"], "my.pftrace"),
    "export_pprof": (["pool.pb.gz"], "my.pb.gz"),
    "export_prof": (["pool.prof"], "my.v2.prof"),
    "export_folded": (["pool.folded"], "my.folded"),
    "export_flamegraph_svg": (["pool.flamegraph.svg"], "pool.flame.svg"),
    "export_timeline_svg": (["pool.timeline.svg"], "my.timeline.svg"),
    "export_parquet": (["pool.parquet", "pool.lanes.parquet"], "my.parquet"),
    "export_json": (["pool.json"], "my.json.gz"),
}


# issue 13 item 14: "`export_speedscope(results, "/tmp")` wrote `/tmp.speedscope.json` at the
# filesystem root; `"outdir/"` wrote beside the directory; `export_flamegraph_svg(r,
# "pool.flame.svg")` wrote `pool.flame_rank0.svg`." Every export of the Python API: a
# directory (existing, or a path ending in a separator) gets the default name(s) inside; a
# file name for one output is used exactly.
@pytest.mark.parametrize("function", sorted(_EXPORTS))
def test_issue_13_item_14_export_paths(tmp_path, monkeypatch, function):
    import errno
    from pathlib import Path

    if function == "export_parquet":
        pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    export = getattr(sp, function)
    results = sp.read_h5(DATASETS / "reference" / "pool.h5")
    defaults, exact = _EXPORTS[function]

    def written(paths):
        assert all(p.is_file() and p.stat().st_size > 0 for p in paths), paths
        return [str(p) for p in paths]

    existing = tmp_path / "existing"
    existing.mkdir()
    for target, inside in (
        (existing, existing),  # an existing directory (as a Path)
        (str(existing), existing),  # ... and as a str without separator
        ("outdir/", tmp_path / "outdir"),  # a separator: a directory, created
        (f"{tmp_path}/nested/deeper/", tmp_path / "nested" / "deeper"),
        (".", tmp_path),
    ):
        paths = export(results, target, verbose=False)
        written(paths)
        assert paths == [Path(target) / d for d in defaults], target
        assert sorted(p.name for p in inside.iterdir() if p.is_file()) == sorted(defaults)
        for p in paths:
            p.unlink()
    assert not (tmp_path / "existing.speedscope.json").exists()
    assert not any(p.name.startswith(("outdir.", "outdir_")) for p in tmp_path.iterdir())
    # an exact file name is used as given
    paths = export(results, tmp_path / "files" / exact, verbose=False)
    assert paths[0].name == exact
    assert written(paths)[0] == str(tmp_path / "files" / exact)
    assert all(p.parent == tmp_path / "files" for p in paths)
    # a directory where the file must go is refused (nothing written elsewhere instead)
    (tmp_path / "blocked" / defaults[0]).mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as info:
        export(results, tmp_path / "blocked", verbose=False)
    assert info.value.errno == errno.EISDIR
    assert info.value.filename == str(tmp_path / "blocked" / defaults[0])
    assert [p.name for p in (tmp_path / "blocked").iterdir()] == [defaults[0]]
    # a directory target that is a file: NotADirectoryError
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        export(results, "plain/", verbose=False)
    assert info.value.errno == errno.ENOTDIR
    assert (tmp_path / "plain").read_text() == "x"


# issue 13 item 14: outputs of several ranks keep their documented names (`_rank<R>`), in a
# directory too; `write_json` (one file) takes a directory as well.
def test_issue_13_item_14_several_ranks_and_write_json(tmp_path):
    threads = sp.read_h5(DATASETS / "reference" / "threads.h5")
    two_ranks = sp.merge_results(threads, sp.read_h5(DATASETS / "reference" / "pool.h5"))
    assert two_ranks.num_ranks == 2
    stem = two_ranks.display_label
    out = sp.export_flamegraph_svg(two_ranks, tmp_path / "g.svg", ranks=[0, 1], verbose=False)
    assert [p.name for p in out] == ["g_rank0.svg", "g_rank1.svg"]
    out = sp.export_prof(two_ranks, f"{tmp_path}/d/", ranks=[1, 0], verbose=False)
    assert [p.name for p in out] == [f"{stem}_rank1.prof", f"{stem}_rank0.prof"]
    one = sp.export_flamegraph_svg(two_ranks, tmp_path / "one.svg", ranks=[1], verbose=False)
    assert one == [tmp_path / "one.svg"]
    assert sp.write_json(threads, tmp_path) == tmp_path / "threads.json"
    assert sp.write_json(threads, str(tmp_path / "j") + "/") == tmp_path / "j" / "threads.json"
    assert sp.write_json(threads, tmp_path / "exact") == tmp_path / "exact"
    assert sp.read_json(tmp_path / "exact")["solve"][0].num_calls == threads["solve"][0].num_calls
