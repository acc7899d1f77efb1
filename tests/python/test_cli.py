"""The `scope-profiler` command: the README's main job end to end, and the file subcommands."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest
from helpers import DATASETS, ROOT, reference_read, run_cli, speedscope_import

PIPELINE = ROOT / "examples" / "threaded_pipeline.py"
N_ITEMS, N_WORKERS = 24, 3


def test_run_threaded_pipeline_end_to_end(tmp_path):
    out = tmp_path / "pipe.h5"
    proc = run_cli("run", "--track-threads", "-o", out, PIPELINE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the script ran as __main__ and its output is there
    assert f"pipeline processed {N_ITEMS} items" in proc.stdout
    # summary: one row per thread
    thread_lines = proc.stdout.split("rank 0: threads", 1)[1].splitlines()
    names = {"MainThread", *(f"worker-{i}" for i in range(N_WORKERS))}
    for name in names:
        assert any(f" {name} " in line for line in thread_lines), (name, proc.stdout)

    # the file: schema 3, thread column, every region with the right number of calls
    with h5py.File(out, "r") as f:
        assert f.attrs["scope_profiler_schema"] == 3
        region_names = [
            n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][()]
        ]
        counts = dict(
            zip(
                (region_names[i] for i in f["rank_region_index/region_ids"][()]),
                f["rank_region_index/event_counts"][()],
            )
        )
        assert counts == {
            "scope_profiler.session": 1,
            "produce": 1,
            "handle_item": N_ITEMS,
            "fetch": N_ITEMS,
            "parse": N_ITEMS,
            "collect": 1,
        }
        thread_ids = f["events/thread_ids"][()]
        table_names = [
            n.decode() if isinstance(n, bytes) else n for n in f["thread_table/name"][()]
        ]
        assert set(table_names) == names
        # every thread id in the events has a row in the thread table
        assert set(np.unique(thread_ids)) <= set(f["thread_table/index"][()])
        # workers finished before finalize: they have an end time
        ends = dict(zip(table_names, f["thread_table/end_ns"][()]))
        assert all(ends[f"worker-{i}"] > 0 for i in range(N_WORKERS))
        assert ends["MainThread"] == -1

    # speedscope file beside it: one profile per thread, main thread first, accepted by speedscope
    ss = tmp_path / "pipe.speedscope.json"
    doc = json.loads(ss.read_text())
    profile_names = [p["name"] for p in doc["profiles"]]
    assert profile_names[0] == "rank 0 - MainThread"
    assert sorted(profile_names) == sorted(f"rank 0 - {n}" for n in names)
    opens = sum(1 for p in doc["profiles"] for e in p["events"] if e["type"] == "O")
    assert opens == 1 + 1 + 3 * N_ITEMS + 1
    speedscope_import(ss)


def test_reference_reads_our_file_with_same_numbers(tmp_path):
    out = tmp_path / "pipe.h5"
    assert (
        run_cli("run", "--track-threads", "-q", "-o", out, PIPELINE, cwd=tmp_path).returncode == 0
    )
    ref = reference_read(out)
    import scope_profiler as sp

    ours = sp.read_h5(out)
    assert ref["num_ranks"] == ours.num_ranks == 1
    for name in ours.region_names:
        reg = ours[name][0]
        r = ref["regions"][f"{name}@0"]
        assert r["num_calls"] == reg.num_calls
        assert r["durations_ns"] == [int(x) for x in reg.durations_ns]
        assert r["thread_ids"] == [int(x) for x in reg.thread_ids]
        assert abs(r["exclusive_ns"] - round(reg.exclusive_duration * 1e9)) <= 1
    assert [t["name"] for t in ref["threads"]["0"]] == [t.name for t in ours.threads[0]]


def test_summary_and_threads_of_reference_file():
    proc = run_cli("summary", DATASETS / "reference" / "threads.h5")
    assert proc.returncode == 0, proc.stderr
    expected = json.loads((DATASETS / "reference" / "threads.expected.json").read_text())
    for name, per_rank in expected["regions"].items():
        row = next(line for line in proc.stdout.splitlines() if line.strip().startswith(name + " "))
        assert int(row.split()[1]) == per_rank["0"]["num_calls"]
    proc = run_cli("threads", DATASETS / "reference" / "threads.h5")
    assert proc.returncode == 0
    for t in expected["threads"]["0"]:
        assert t["name"] in proc.stdout


def test_bad_files_get_an_error_naming_them(tmp_path):
    missing = tmp_path / "nope.h5"
    proc = run_cli("summary", missing)
    assert proc.returncode == 1 and str(missing) in proc.stderr
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"this is not an HDF5 file" * 100)
    proc = run_cli("threads", junk)
    assert proc.returncode == 1 and str(junk) in proc.stderr
    assert "panick" not in proc.stderr


def test_export_batch_goes_on_after_a_bad_file(tmp_path):
    inputs = []
    for name in ("single", "threads", "pool"):
        shutil.copy(DATASETS / "reference" / f"{name}.h5", tmp_path / f"{name}.h5")
        inputs.append(tmp_path / f"{name}.h5")
    bad = tmp_path / "broken.h5"
    bad.write_bytes((DATASETS / "reference" / "threads.h5").read_bytes()[:3000])
    outdir = tmp_path / "ss"
    proc = run_cli("export", "speedscope", *inputs, bad, "-o", outdir)
    assert proc.returncode == 1
    assert str(bad) in proc.stderr
    written = sorted(p.name for p in outdir.iterdir())
    assert written == ["pool.speedscope.json", "single.speedscope.json", "threads.speedscope.json"]
    expected = json.loads((DATASETS / "reference" / "threads.expected.json").read_text())
    doc = json.loads((outdir / "threads.speedscope.json").read_text())
    assert len(doc["profiles"]) == len(expected["call_arrays"]["lanes"])
    speedscope_import(outdir / "threads.speedscope.json")


def test_help_documents_every_subcommand():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for sub in ("run", "summary", "threads", "export"):
        assert sub in proc.stdout
    proc = run_cli("export", "--help")
    assert proc.returncode == 0 and "Example" in proc.stdout
    proc = run_cli("summary")
    assert proc.returncode == 2 and "FILES" in proc.stderr


def test_run_track_async_records_each_task(tmp_path):
    script = tmp_path / "fetches.py"
    script.write_text(
        "import asyncio\nimport scope_profiler as sp\n"
        "async def f(i):\n    with sp.profile_region('f'):\n        await asyncio.sleep(0.02 * i)\n"
        "async def main():\n    await asyncio.gather(f(1), f(2), f(3))\n"
        "asyncio.run(main())\n"
    )
    out = tmp_path / "a.h5"
    proc = run_cli("run", "--track-async", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import scope_profiler as sp

    region = sp.read_h5(out)["f"][0]
    order = np.argsort(region.start_times_ns)
    durations = region.durations[order]
    for got, slept in zip(sorted(durations), (0.02, 0.04, 0.06)):
        assert slept <= got < slept + 0.05, durations
    assert len(set(region.task_ids.tolist())) == 3


def test_run_waits_for_non_daemon_threads_and_reports_script_errors(tmp_path):
    script = tmp_path / "linger.py"
    script.write_text(
        "import threading, time\nimport scope_profiler as sp\n"
        "def work():\n    for _ in range(3):\n        with sp.profile_region('late'):\n            time.sleep(0.02)\n"
        "threading.Thread(target=work, name='lingering').start()\n"
        "raise SystemExit('fatal: stopping early')\n"
    )
    out = tmp_path / "l.h5"
    proc = run_cli("run", "--track-threads", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 1
    assert "fatal: stopping early" in proc.stderr
    # the thread outlived the main module, as under plain python, and its calls are in
    assert " lingering " in proc.stdout
    import scope_profiler as sp

    assert sp.read_h5(out)["late"][0].num_calls == 3

    boom = tmp_path / "boom.py"
    boom.write_text(
        "import scope_profiler as sp\nwith sp.profile_region('before'):\n    pass\nraise ValueError('boom')\n"
    )
    proc = run_cli("run", "-o", tmp_path / "b.h5", boom, cwd=tmp_path)
    assert proc.returncode == 1
    assert "ValueError: boom" in proc.stderr and "_cli.py" not in proc.stderr
    assert "before" in proc.stdout  # the summary is still printed


def test_export_caps_workers_at_the_number_of_files(tmp_path):
    proc = run_cli(
        "export",
        "folded",
        DATASETS / "reference" / "single.h5",
        "-o",
        tmp_path,
        "-j",
        "100000",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "single.folded").exists() or any(tmp_path.iterdir())


def test_issue_14_new_user_trial_exit_codes(tmp_path):
    """issue 14 (new-user trial): usage errors exited 2 from clap and 1 from our own checks,
    and `run -o out.txt` silently wrote HDF5 into out.txt. Usage errors exit 2 (bad option
    values, files of the wrong kind, unknown output kinds), runtime failures 1."""
    ref = DATASETS / "reference" / "pool.h5"
    html = tmp_path / "report.html"
    html.write_text("<!doctype html><html></html>")
    script = tmp_path / "hi.py"
    script.write_text("print('hi')\n")
    usage = [
        ("summary", html),
        ("threads", script),
        ("timeline", ref, "--rank", "7", "-o", tmp_path / "t.svg"),
        ("report", ref, "-o", tmp_path / "r.txt"),
        ("export", "folded", html, "-o", tmp_path / "x"),
        ("run", "-o", tmp_path / "out.txt", script),
        ("run", "nope.py"),
        ("run", "-m", "no_such_module_here"),
        ("run", "--flush-interval", "0", script),  # clap's own
    ]
    for args in usage:
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: "), (args, proc.stderr)
    proc = run_cli("run", "-o", tmp_path / "out.txt", script, cwd=tmp_path)
    assert ".h5 or .hdf5" in proc.stderr and ".html" in proc.stderr and "hi" not in proc.stdout
    assert not (tmp_path / "out.txt").exists()
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"this is not an HDF5 file")
    for args in [("summary", tmp_path / "missing.h5"), ("threads", junk)]:
        proc = run_cli(*args, cwd=tmp_path)
        assert proc.returncode == 1, (args, proc.stderr)


def test_issue_14_a_closed_pipe_ends_the_output_not_the_command():
    """issue 14 (third new-user trial): `scope-profiler threads f.h5 | head -1` panicked in
    Rust (failed printing to stdout: Broken pipe) with a Python traceback. The reader is
    gone before anything is written here: the command ends quietly with its own code."""
    for args in (["summary"], ["threads"]):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scope_profiler",
                *args,
                str(DATASETS / "reference" / "pool.h5"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc.stdout.close()  # no reader: every write gets EPIPE
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err
        assert "panicked" not in err and "Traceback" not in err, err
    proc = run_cli("threads", DATASETS / "reference" / "pool.h5")
    assert proc.stdout.startswith("rank 0: threads"), proc.stdout[:80]


#: A program recording with flush_interval whose atexit handler, registered before its
#: setup(), runs after the exit-time finalize wrote the file: its calls are streamed into a
#: sidecar newer than the file, which stays (no finalize comes after it).
_RECORDS_AFTER_ITS_FILE = """
import atexit, time
import scope_profiler as sp

@atexit.register
def late():
    for _ in range(5):
        with sp.profile_region("late"):
            pass
    time.sleep(0.5)  # the flush thread streams them meanwhile

sp.ProfileManager.setup(output="x.h5", flush_interval=0.1, auto_finalize=True)
for _ in range(1000):
    with sp.profile_region("work"):
        pass
"""


def _region_calls(path) -> dict[str, int]:
    import scope_profiler as sp

    return {g.name: g.num_calls for g in sp.read_h5(str(path)).get_regions()}


def test_recover_adds_the_calls_a_process_streamed_after_writing_its_file(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(_RECORDS_AFTER_ITS_FILE)
    subprocess.run([sys.executable, script], cwd=tmp_path, capture_output=True, check=True)
    assert len(list(tmp_path.glob(".x.h5.*.partial"))) == 1
    with pytest.warns(RuntimeWarning, match="adds them to it when its process wrote both"):
        assert _region_calls(tmp_path / "x.h5") == {"work": 1000}
    proc = run_cli("recover", "x.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "recovered 5 call(s)" in proc.stdout and "after the 1000 call(s) it held" in proc.stdout
    assert _region_calls(tmp_path / "x.h5") == {"work": 1000, "late": 5}
    assert not list(tmp_path.glob(".x.h5.*.partial"))
    import scope_profiler as sp

    r = sp.read_h5(str(tmp_path / "x.h5"))
    ids = sorted([*r["work"][0].call_ids.tolist(), *r["late"][0].call_ids.tolist()])
    assert ids == list(range(1005)), "the late calls are numbered after the file's"


def test_recover_never_replaces_a_file_with_fewer_calls_of_another_recording(tmp_path):
    complete = tmp_path / "complete.py"
    complete.write_text(
        "import scope_profiler as sp\n"
        "with sp.ProfileManager.session(output='x.h5', verbose=False):\n"
        "    for _ in range(1000):\n"
        "        with sp.profile_region('work'):\n"
        "            pass\n"
    )
    subprocess.run([sys.executable, complete], cwd=tmp_path, check=True)
    killed = tmp_path / "killed.py"  # a later run to the same file, killed after a flush
    killed.write_text(
        "import os, signal, time\n"
        "import scope_profiler as sp\n"
        "sp.ProfileManager.setup(output='x.h5', flush_interval=0.05)\n"
        "for _ in range(5):\n"
        "    with sp.profile_region('other'):\n"
        "        pass\n"
        "time.sleep(0.5)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, killed], cwd=tmp_path).returncode == -9
    proc = run_cli("recover", "x.h5", cwd=tmp_path)
    assert proc.returncode == 1
    # 1000 calls and the session's own
    assert "holds 1001 call(s) of another recording" in proc.stderr, proc.stderr
    assert "not replaced by fewer calls than it holds" in proc.stderr
    with pytest.warns(RuntimeWarning, match="never replaces it by fewer calls"):
        assert _region_calls(tmp_path / "x.h5") == {"scope_profiler.session": 1, "work": 1000}
    proc = run_cli("recover", "x.h5", "-o", "other.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _region_calls(tmp_path / "other.h5") == {"other": 5}
