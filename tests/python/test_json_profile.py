"""JSON profile (spec-exports §5): export_json / write_json / read_json, against the results
they came from and against the reference package (files we write open there, files it writes
open here with the same summary)."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import time

import numpy as np
import pytest
import scope_profiler as sp
from helpers import DATASETS, _nested_threaded_run, reference_python, run_cli
from scope_profiler.profile_io import read_profile

REF = DATASETS / "reference"


def summary_of(r) -> dict:
    """Per-region summary values, thread and task tables, per-call lane columns."""
    out = {"num_ranks": int(r.num_ranks), "regions": {}, "threads": {}, "tasks": {}}
    for row in r.summary():
        out["regions"][row["name"]] = {
            k: row[k]
            for k in (
                "num_calls",
                "total_duration",
                "exclusive_duration",
                "min_duration",
                "max_duration",
                "std_duration",
            )
        }
    for name in r.region_names:
        for rank, reg in r[name].regions.items():
            cols = {}
            for key in (
                "start_times_ns",
                "end_times_ns",
                "thread_ids",
                "task_ids",
                "await_times_ns",
            ):
                v = getattr(reg, key)
                cols[key] = None if v is None else [int(x) for x in v]
            out["regions"][f"{name}@{rank}"] = cols
    for rank, rows in r.threads.items():
        out["threads"][str(rank)] = [
            [
                t.index,
                t.name,
                t.ident,
                t.native_id,
                bool(t.daemon),
                t.start_time,
                t.end_time,
                # the whole-life CPU: 0.7.5 calls it cpu_time, this package cpu_time_total
                getattr(t, "cpu_time_total", t.cpu_time),
            ]
            for t in rows
        ]
    for rank, rows in r.tasks.items():
        out["tasks"][str(rank)] = [
            [
                t.index,
                t.kind,
                t.name,
                t.coro_name,
                t.thread_index,
                t.created_time,
                t.done_time,
                t.steps,
                t.running_time,
                t.awaiting_time,
            ]
            for t in rows
        ]
    return out


def ref_summary(*args: str) -> dict:
    import inspect

    code = (
        "import json, sys\nimport scope_profiler as sp\n"
        + inspect.getsource(summary_of)
        + (
            "if sys.argv[2] == 'export':\n"
            "    sp.export_json(sp.read_h5(sys.argv[1]), sys.argv[3], verbose=False)\n"
            "    path = sys.argv[3]\n"
            "else:\n"
            "    path = sys.argv[1]\n"
            "print(json.dumps(summary_of(sp.read_json(path))))\n"
        )
    )
    proc = subprocess.run(
        [reference_python(), "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def normalized(s: dict) -> dict:
    """JSON round trip (tuples -> lists, int keys -> str) so two summaries compare."""
    return json.loads(json.dumps(s))


@pytest.mark.parametrize("name", ["async", "threads", "single"])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_round_trip_equals_the_results(tmp_path, name, suffix):
    results = sp.read_h5(REF / f"{name}.h5")
    out = sp.write_json(results, tmp_path / f"p{suffix}")
    back = sp.read_json(out)
    assert normalized(summary_of(back)) == normalized(summary_of(results))
    assert back.metadata == results.metadata


def test_async_await_times_and_tasks_survive(tmp_path):
    results = sp.read_h5(REF / "async.h5")
    back = sp.read_json(sp.write_json(results, tmp_path / "a.json"))
    fetch = back["fetch"].regions[0]
    # values of datasets/reference/async.h5 (h5py: rank_region_index ... await_ns)
    assert [int(x) for x in fetch.await_times_ns] == [
        2135347,
        4884759,
        6571706,
        2477056,
        5174502,
        6858274,
    ]
    assert [int(x) for x in fetch.task_ids] == [1, 2, 3, 4, 5, 6]
    assert len(back.tasks[0]) == len(results.tasks[0]) > 0


def test_task_step_times_survive(tmp_path):
    """The task steps a call on a thread's own lane ran (and the thread's time in task
    steps) come back from the JSON profile, and so do the exclusive and held times and the
    thread columns made from them."""

    async def work():
        t = time.perf_counter()
        while time.perf_counter() - t < 0.02:
            pass
        await asyncio.sleep(0.005)

    m = sp.ProfileManager()
    try:
        with m.session(
            track_async=True, deactivate_file_output=True, return_results=True, verbose=False
        ) as s:
            with m.region("body"):
                asyncio.run(work())
    finally:
        m.reset()
    results = s.results
    back = sp.read_json(sp.write_json(results, tmp_path / "steps.json"))
    body, body_back = results["body"][0], back["body"][0]
    assert body.task_step_times_ns[0] >= 20_000_000
    assert body_back.task_step_times_ns.tolist() == body.task_step_times_ns.tolist()
    assert body_back.exclusive_duration == body.exclusive_duration
    assert body.exclusive_duration < body.total_duration - 0.02
    assert back.thread_summary() == results.thread_summary()
    assert results.thread_summary()[0]["task_step_time"] >= 0.02


def test_export_json_naming_filters_and_gzip(tmp_path, capsys):
    results = sp.read_h5(REF / "threads.h5")
    paths = sp.export_json(results, tmp_path / "t")
    assert paths == [tmp_path / "t.json"]
    assert "Wrote" in capsys.readouterr().out
    paths = sp.export_json([results, results], tmp_path / "m.json.gz", verbose=False)
    assert results.display_label == "threads"
    assert [p.name for p in paths] == ["m_threads.json.gz", "m_threads_2.json.gz"]
    raw = paths[0].read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"
    doc = json.loads(gzip.decompress(raw))
    assert doc["format"] == "scope-profiler-profile" and doc["format_version"] == 1
    keep = results.region_names[1]
    one = sp.read_json(sp.write_json(results, tmp_path / "f.json", include=[keep], indent=2))
    assert one.region_names == [keep]
    text = (tmp_path / "f.json").read_text()
    assert text.startswith('{\n  "format": "scope-profiler-profile",\n')


def test_bad_files_raise_json_profile_error(tmp_path):
    foreign = tmp_path / "x.json"
    foreign.write_text('{"profiles": []}')
    with pytest.raises(sp.JSONProfileError, match="is not a scope-profiler JSON profile"):
        sp.read_json(foreign)
    newer = tmp_path / "v2.json"
    newer.write_text('{"format": "scope-profiler-profile", "format_version": 2}')
    with pytest.raises(ValueError, match="format version 2"):
        sp.read_json(newer)
    with pytest.raises(FileNotFoundError):
        sp.read_json(tmp_path / "missing.json")


def test_compat_v1_file_reads():
    r = sp.read_json(DATASETS / "compat" / "json-v1.json")
    assert r.region_names == ["solve"]
    reg = r["solve"].regions[0]
    assert [int(x) for x in reg.start_times_ns] == [10, 20, 40]
    assert [int(x) for x in reg.end_times_ns] == [15, 33, 55]
    row = r.summary()[0]
    assert row["num_calls"] == 3
    assert row["total_duration"] == pytest.approx((5 + 13 + 15) * 1e-9)


@pytest.mark.parametrize("name", ["async", "threads"])
def test_files_we_write_open_in_the_reference(tmp_path, name):
    ref = reference_python()
    assert ref
    results = sp.read_h5(REF / f"{name}.h5")
    out = sp.write_json(results, tmp_path / f"{name}.json.gz")
    theirs = ref_summary(str(out), "read")
    ours = normalized(summary_of(sp.read_json(out)))
    assert_close(theirs, ours)


@pytest.mark.parametrize("name", ["async", "threads"])
def test_files_the_reference_writes_open_here(tmp_path, name):
    reference_python()
    out = tmp_path / f"ref_{name}.json"
    theirs = ref_summary(str(REF / f"{name}.h5"), "export", str(out))
    ours = normalized(summary_of(sp.read_json(out)))
    assert_close(theirs, ours)


def assert_close(theirs: dict, ours: dict) -> None:
    assert theirs.keys() == ours.keys()
    assert theirs["regions"].keys() == ours["regions"].keys()
    for key, want in theirs["regions"].items():
        got = ours["regions"][key]
        for col, v in want.items():
            if isinstance(v, float):
                assert got[col] == pytest.approx(v, rel=1e-12, abs=1e-15), (key, col)
            else:
                assert got[col] == v, (key, col)
    for table in ("threads", "tasks"):
        assert theirs[table].keys() == ours[table].keys()
        for rank, rows in theirs[table].items():
            for a, b in zip(rows, ours[table][rank], strict=True):
                np.testing.assert_allclose(
                    [
                        x if isinstance(x, (int, float)) and x is not None else 0
                        for x in a
                        if not isinstance(x, str)
                    ],
                    [
                        x if isinstance(x, (int, float)) and x is not None else 0
                        for x in b
                        if not isinstance(x, str)
                    ],
                    rtol=1e-12,
                )
                assert [x for x in a if isinstance(x, str)] == [x for x in b if isinstance(x, str)]
    assert theirs["num_ranks"] == ours["num_ranks"]


@pytest.mark.parametrize("name", ["async", "threads", "single", "pool"])
def test_same_bytes_as_the_reference_export(tmp_path, name):
    ref = reference_python()
    code = (
        "import sys, scope_profiler as sp\n"
        "r = sp.read_h5(sys.argv[1])\n"
        "sp.export_json(r, sys.argv[2], verbose=False)\n"
        "sp.export_json(r, sys.argv[3], verbose=False)\n"
    )
    theirs, theirs_gz = tmp_path / "ref.json", tmp_path / "ref.json.gz"
    proc = subprocess.run(
        [ref, "-c", code, str(REF / f"{name}.h5"), str(theirs), str(theirs_gz)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = sp.read_h5(REF / f"{name}.h5")
    (ours,) = sp.export_json(results, tmp_path / "ours.json", verbose=False)
    (ours_gz,) = sp.export_json(results, tmp_path / "ours.json.gz", verbose=False)
    assert ours.read_bytes() == theirs.read_bytes()
    # the deflate streams differ (zlib vs miniz); the header (mtime 0, no name) and content agree
    assert ours_gz.read_bytes()[:10] == theirs_gz.read_bytes()[:10]
    assert gzip.decompress(ours_gz.read_bytes()) == gzip.decompress(theirs_gz.read_bytes())


def test_profile_io_dispatches_by_contents_and_name(tmp_path):
    from scope_profiler import profile_io

    results = sp.read_h5(REF / "threads.h5")
    as_json = profile_io.write_profile(results, tmp_path / "p.json.gz")
    as_h5 = profile_io.write_profile(results, tmp_path / "p.h5")
    assert profile_io.sniff_profile_format(as_json) == "json"
    assert profile_io.sniff_profile_format(as_h5) == "hdf5"
    renamed = tmp_path / "really_json.h5"
    renamed.write_bytes((tmp_path / "p.json.gz").read_bytes())
    assert profile_io.sniff_profile_format(renamed) == "json"
    assert profile_io.profile_format(renamed) == "hdf5"
    want = normalized(summary_of(results))
    for p in (as_json, as_h5, renamed):
        assert normalized(summary_of(profile_io.load(p))) == want
    assert normalized(summary_of(profile_io.read_profile(as_json))) == want
    assert normalized(summary_of(profile_io.read_profile(as_h5))) == want
    html = tmp_path / "r.html"
    html.write_text("<html></html>")
    with pytest.raises(ValueError, match="HTML report"):
        profile_io.load(html)
    with pytest.raises(FileNotFoundError):
        profile_io.load(tmp_path / "missing.h5")


# `setup(output="run.json")` and `run -o run.json`: as the reference, record into
# `<output>.scope-profiler.h5` and render the JSON profile from it after finalize.
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_setup_output_json_renders_the_profile_and_removes_the_recording(tmp_path, suffix):
    import threading
    import time

    from scope_profiler import ProfileManager

    out = tmp_path / f"run{suffix}"

    def work():
        with ProfileManager.profile_region("work"):
            time.sleep(0.002)

    try:
        run = ProfileManager.setup(output=str(out), track_threads=True)
        assert run.file_path == str(out)
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        results = run.finalize(verbose=False)
    finally:
        ProfileManager.reset()
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # the .h5 is gone
    back = read_profile(out)
    assert back["work"].num_calls == 3
    ids = back["work"].regions[0].thread_ids
    assert list(ids) == list(results["work"].regions[0].thread_ids) and len(set(ids)) == 3
    assert back["work"].total_duration == pytest.approx(results["work"].total_duration, abs=1e-9)
    assert [t.name for t in back.threads[0]] == [t.name for t in results.threads[0]]


def test_setup_output_json_opens_in_the_reference(tmp_path):
    from scope_profiler import ProfileManager

    reference_python()
    out = tmp_path / "run.json"
    try:
        run = ProfileManager.setup(output=str(out), track_threads=True)
        for _ in range(2):
            with ProfileManager.profile_region("work"):
                pass
        run.finalize(verbose=False)
    finally:
        ProfileManager.reset()
    theirs = ref_summary(str(out), "read")
    assert theirs["regions"]["work"]["num_calls"] == 2
    assert_close(theirs, normalized(summary_of(sp.read_json(out))))


def test_setup_output_json_that_cannot_be_written_keeps_the_recording(tmp_path):
    from scope_profiler import ProfileManager

    out = tmp_path / "run.json"
    try:
        run = ProfileManager.setup(output=str(out))
        # a directory in the way (setup() refuses one up front): the rendering fails
        out.mkdir()
        with ProfileManager.profile_region("kept"):
            pass
        with pytest.raises(IsADirectoryError) as e:
            run.finalize(verbose=False)
    finally:
        ProfileManager.reset()
    recorded = tmp_path / "run.json.scope-profiler.h5"
    assert f"the recorded run is kept in {recorded}" in "\n".join(e.value.__notes__)
    assert sp.read_h5(recorded)["kept"].num_calls == 1


def test_run_dash_o_json_writes_the_profile_and_its_speedscope_file(tmp_path):
    from helpers import run_cli

    script = tmp_path / "s.py"
    script.write_text(
        "import time\nfrom scope_profiler import ProfileManager\n"
        "for _ in range(4):\n"
        "    with ProfileManager.profile_region('step'):\n"
        "        time.sleep(0.001)\n"
    )
    proc = run_cli("run", "--speedscope", "-o", tmp_path / "out" / "run.json", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["run.json", "run.speedscope.json"]
    assert f"{out / 'run.json'}: 2 region(s), 5 call(s)" in proc.stdout, proc.stdout
    assert f"wrote {out / 'run.json'} and {out / 'run.speedscope.json'}" in proc.stdout
    back = read_profile(out / "run.json")
    assert back["step"].num_calls == 4 and back["scope_profiler.session"].num_calls == 1
    doc = json.loads((out / "run.speedscope.json").read_text())
    assert "step" in [f["name"] for f in doc["shared"]["frames"]]


# `scope-profiler export json` writes the JSON profile (the reader's error names that
# command), the same document export_json writes.
def test_cli_export_json_writes_the_json_profile(tmp_path):
    src = tmp_path / "run.h5"
    results = _nested_threaded_run(src)
    proc = run_cli("export", "json", src, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "out" / "run.json"
    doc = json.loads(written.read_text())
    assert doc["format"] == "scope-profiler-profile"
    back = sp.read_json(written)
    assert back.region_names == results.region_names
    assert back["outer"][0].num_calls == 3
    assert (back["outer"][0].start_times_ns == results["outer"][0].start_times_ns).all()
    # the same document export_json writes
    sp.export_json(results, tmp_path / "py.json", verbose=False)
    assert json.loads((tmp_path / "py.json").read_text())["regions"] == doc["regions"]
    # an output that is the input itself is refused for that file
    same = run_cli("export", "json", written, "-o", tmp_path / "out")
    assert same.returncode == 1
    assert "json: the output" in same.stderr and "is the input file" in same.stderr
    assert "json" in run_cli("export", "--help").stdout.split("Formats:")[1].splitlines()[0]
