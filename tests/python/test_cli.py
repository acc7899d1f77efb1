"""The `scope-profiler` command: the README's main job end to end, and the file subcommands."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest
import scope_profiler as sp
from helpers import DATASETS, ROOT, _empty_run, reference_read, run_cli, speedscope_import
from scope_profiler import ProfileManager

PIPELINE = ROOT / "examples" / "threaded_pipeline.py"
N_ITEMS, N_WORKERS = 24, 3


def test_run_threaded_pipeline_end_to_end(tmp_path):
    out = tmp_path / "pipe.h5"
    proc = run_cli("run", "--track-threads", "--speedscope", "-o", out, PIPELINE, cwd=tmp_path)
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

    # speedscope file beside it (--speedscope): one profile per thread, main thread first, accepted by speedscope
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


def test_summary_sorts_by_inclusive_time_and_takes_sort_and_top():
    path = DATASETS / "reference" / "threads.h5"
    expected = json.loads((DATASETS / "reference" / "threads.expected.json").read_text())
    totals = {
        name: per_rank["0"]["total_duration"] for name, per_rank in expected["regions"].items()
    }

    def region_names(stdout):
        lines = stdout.splitlines()
        rows = lines[lines.index("rank 0: regions") + 2 :]
        return [
            line.split()[0]
            for line in rows[
                : next(
                    i for i, x in enumerate(rows) if not x.startswith("  ") or x.startswith("  ...")
                )
            ]
        ]

    proc = run_cli("summary", path)
    assert proc.returncode == 0, proc.stderr
    assert region_names(proc.stdout) == sorted(totals, key=lambda n: -totals[n])
    proc = run_cli("summary", "--sort", "name", "--top", "1", path)
    assert proc.returncode == 0, proc.stderr
    assert region_names(proc.stdout) == sorted(totals)[:1]
    assert f"  ... and {len(totals) - 1} more region(s)" in proc.stdout
    assert "--top 0 lists every one" in proc.stdout
    proc = run_cli("summary", "--sort", "speed", path)
    assert (
        proc.returncode == 2
        and "'speed' is not a sort key (one of: total, exclusive, calls, mean, name)" in proc.stderr
    )
    help_text = run_cli("summary", "--help").stdout
    for flag in ("--sort", "--top", "--all-tasks"):
        assert flag in help_text


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


def test_usage_errors_exit_2_and_runtime_failures_exit_1(tmp_path):
    """Usage errors exit 2, whether clap or our own checks find them (bad option values,
    files of the wrong kind, unknown output kinds: `run -o out.txt` is refused, not written
    as HDF5 into out.txt); runtime failures exit 1."""
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


def test_a_closed_pipe_ends_the_output_not_the_command():
    """`scope-profiler threads f.h5 | head -1`: a reader that goes away ends the output,
    never with a panic (failed printing to stdout: Broken pipe) or a Python traceback. The
    reader is gone before anything is written here: the command ends quietly with its own
    code."""
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


# `run -o` to a path that cannot be written is refused before the script runs, with one
# `error:` line (no Python traceback), and leaves nothing behind (no `<output>.procs-<pid>`
# directory); a profile that cannot be written after the script ran is reported the same
# way, with the script's exit code when it had one.
def test_run_refuses_an_unwritable_output_before_the_script_runs(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("open('ran', 'w').close()\n")
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir.h5").mkdir()
    for output, code, said in (
        (tmp_path / "afile" / "x.h5", 1, f"{tmp_path / 'afile'} is not a directory"),
        (tmp_path / "adir.h5", 2, f"the output is a directory: {tmp_path / 'adir.h5'}"),
    ):
        proc = run_cli("run", "-q", "-o", output, script, cwd=tmp_path)
        assert proc.returncode == code, proc.stderr
        assert proc.stderr.startswith("error: ") and said in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "ran").exists()  # refused before the script ran
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir.h5", "afile", "script.py"]


def test_run_reports_a_profile_it_could_not_write_after_the_script(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import os, sys\n"
        "import scope_profiler as sp\n"
        "with sp.profile_region('w'):\n"
        "    pass\n"
        "os.mkdir(sys.argv[1])  # the output path becomes a directory meanwhile\n"
        "sys.exit(int(sys.argv[2]))\n"
    )
    for script_code, code in ((0, 1), (3, 3)):
        out = tmp_path / f"late{script_code}.h5"
        proc = run_cli("run", "-q", "-o", out, script, out, str(script_code), cwd=tmp_path)
        assert proc.returncode == code, proc.stderr
        assert proc.stderr.startswith("error: the profile was not written: "), proc.stderr
        assert "Traceback" not in proc.stderr
        assert not list(tmp_path.glob("*.procs-*"))  # nothing left behind


# A script ending with `os._exit(5)` under `run` (from the main thread or another) gets its
# profile and summary written, exits 5, and leaves no `<output>.procs-<pid>` directory.
@pytest.mark.parametrize("from_thread", [False, True], ids=["main-thread", "other-thread"])
def test_run_writes_the_profile_of_a_script_that_ends_with_os_exit(tmp_path, from_thread):
    script = tmp_path / "exits.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, threading, time
            import scope_profiler as sp

            def end():
                with sp.profile_region("work"):
                    pass
                os._exit(5)

            if {from_thread}:
                threading.Thread(target=end).start()
                with sp.profile_region("waiting"):
                    time.sleep(30)
            end()
            """
        )
    )
    out = tmp_path / "exits.h5"
    proc = run_cli("run", "--track-threads", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "work" in proc.stdout  # the summary was printed
    r = sp.read_h5(str(out))
    assert r["work"][0].num_calls == 1
    assert (tmp_path / "exits.flamegraph.svg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "exits.flamegraph.svg",
        "exits.h5",
        "exits.py",
    ]


# An HDF5 file written by another program is "a file of another kind", a usage error (exit
# 2, as docs/cli.md lists), not a damaged profile (exit 1).
def test_cli_an_hdf5_file_that_is_not_a_profile_is_a_usage_error(tmp_path):
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = np.arange(3)
    for command in ("summary", "threads"):
        proc = run_cli(command, foreign)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith(
            f"error: {foreign} is an HDF5 file but not a scope-profiler profile"
        ), proc.stderr
    with pytest.raises(sp.CorruptProfileError, match="not a scope-profiler profile"):
        sp.read_h5(str(foreign))  # the Python error is unchanged


# `threads` of a run recorded with track_threads=True but without calls says the run has no
# calls (not that it "was not recorded with track_threads").
def test_threads_of_a_tracked_run_without_calls_says_no_thread_was_recorded(tmp_path):
    empty = _empty_run(tmp_path / "empty_threads.h5", track_threads=True)
    proc = run_cli("threads", empty)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{empty}: no thread recorded (the run has no calls)\n"


# The text summary keeps a row on one line whatever the region name (newlines and tabs
# escaped) and aligns CJK / emoji names by their terminal width.
def test_summary_rows_stay_one_line_and_aligned_whatever_the_region_names(tmp_path):
    manager = ProfileManager()
    path = tmp_path / "names.h5"
    manager.setup(file_path=str(path), replace=True)
    for name in ("main\nline", "tab\there", "計算", "🚀x"):
        with manager.profile_region(name):
            pass
    manager.finalize(verbose=False)
    # by name: the four calls take about the same time, so their inclusive order is noise
    proc = run_cli("summary", "--sort", "name", path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index("rank 0: regions") + 1
    rows = lines[start : start + 5]
    assert [row.split()[0] for row in rows] == [
        "region",
        "main\\nline",
        "tab\\there",
        "計算",
        "🚀x",
    ]
    import unicodedata

    def width(text: str) -> int:
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    # the calls column ends at the same terminal column on every row
    ends = {
        width(row[: row.index(" calls") + 6 if "calls" in row else row.index(" 1 ") + 2])
        for row in rows
    }
    assert len(ends) == 1, rows


# `scope-profiler run` accepts 0.7.5's `run` options (--outfile, --label, --tag,
# --enable-tag, --config, --no-output, --buffer-limit, --no-recursive, ...), as a drop-in
# must; what this edition does not have is refused by name.
TAGGED_SCRIPT = """
from scope_profiler import ProfileManager as P
with P.profile_region("plain"):
    pass
for _ in range(3):
    with P.profile_region("io", tags=["io"]):
        pass
"""


def test_run_accepts_the_references_run_options(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(TAGGED_SCRIPT)
    out = tmp_path / "o.h5"
    proc = run_cli(
        "run", "-q", "--no-speedscope", "--outfile", out, "--label", "nightly", "--tag", "io",
        "--buffer-limit", "8", "--no-mpi-calls", script, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = sp.read_h5(str(out))
    assert results.metadata["label"] == "nightly"
    assert {row["name"]: row["num_calls"] for row in results.summary()} == {"io": 3}
    # a --config file's settings, the command line's over them; --no-recursive over its tracing
    config = tmp_path / "c.toml"
    config.write_text(
        '[profiling]\ntrack_threads = true\nlabel = "from-toml"\nrecursive_profile = true\n'
    )
    proc = run_cli(
        "run", "-q", "--no-speedscope", "-o", out, "--config", config, "--no-recursive", script
    )
    assert proc.returncode == 0, proc.stderr
    results = sp.read_h5(str(out))
    assert results.metadata["label"] == "from-toml" and len(results.threads[0]) == 1
    assert {row["name"] for row in results.summary()} == {"scope_profiler.session", "plain", "io"}
    # --no-output: the summary of the run in memory, no file
    proc = run_cli("run", "--no-output", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(in memory, 1 rank)" in proc.stdout and " io " in proc.stdout, proc.stdout
    assert not (tmp_path / "profiling_data.h5").exists()
    # what this edition does not have is refused by name, before the script runs (exit 2)
    proc = run_cli("run", "--line-profile", script, cwd=tmp_path)
    assert proc.returncode == 2 and "--line-profile (line-by-line timings" in proc.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiling]\nuse_memray = true\n")
    proc = run_cli("run", "--config", bad, script, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.strip()
        == "error: use_memray=True is not supported by scope-profiler (Rust edition)"
    )


# The script runs as `python script.py` runs it: `__file__` is absolute (the script may
# change directory before it opens files beside it), `__main__` stays the script's module
# through its atexit handlers, and a script that closes its stdout ends with its own code.
def test_the_script_runs_as_main_as_python_runs_it(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "data.txt").write_text("beside the script\n")
    script = pkg / "main.py"
    script.write_text(
        "import atexit, os, sys\n"
        "here = os.path.dirname(__file__)\n"
        "os.chdir('/')\n"
        "print(os.path.isabs(__file__), open(os.path.join(here, 'data.txt')).read().strip())\n"
        "me = sys.modules['__main__']\n"
        "atexit.register(lambda: print('atexit main is the script:', sys.modules['__main__'] is me))\n"
    )
    plain = subprocess.run(
        [sys.executable, "pkg/main.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert plain.stdout == "True beside the script\natexit main is the script: True\n"
    proc = run_cli("run", "-q", "--no-speedscope", "-o", "m.h5", "pkg/main.py", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, plain.stdout), proc.stderr
    closes = tmp_path / "closes.py"
    closes.write_text("import sys\nprint('bye')\nsys.stdout.close()\n")
    proc = run_cli("run", "-q", "--no-speedscope", "-o", "c.h5", closes, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, "bye\n"), proc.stderr
    assert sp.read_h5(str(tmp_path / "c.h5")).num_ranks == 1


# A --config file refused before the script runs leaves nothing behind (no
# `<output>.procs-<pid>` directory for the processes it would have followed).
def test_a_refused_config_file_leaves_nothing_behind(tmp_path):
    script = tmp_path / "one.py"
    script.write_text("open('ran', 'w').close()\n")
    for name, text in (("unknown.toml", "[profiling]\nbogus = 1\n"), ("bad.toml", "[[[")):
        config = tmp_path / name
        config.write_text(text)
        proc = run_cli("run", "-q", "--config", config, script, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith("error: "), proc.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [c for c in ("bad.toml", "unknown.toml") if (tmp_path / c).exists()] + ["one.py"]
        )


# As 0.7.5's `run`, the output is the --config file's `file_path` when `-o` is not given;
# `-o` still wins, and a `file_path` that is not a run output is refused like `-o`.
def test_run_writes_where_the_config_file_says_unless_o_is_given(tmp_path):
    script = tmp_path / "one.py"
    script.write_text("import scope_profiler as sp\nwith sp.region('io'):\n    pass\n")
    config = tmp_path / "c.toml"
    config.write_text('[profiling]\nfile_path = "from_config.h5"\n')
    proc = run_cli("run", "-q", "--config", config, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sp.read_h5(str(tmp_path / "from_config.h5"))["io"].num_calls == 1
    assert not (tmp_path / "profiling_data.h5").exists()
    proc = run_cli("run", "-q", "--config", config, "-o", "given.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sp.read_h5(str(tmp_path / "given.h5"))["io"].num_calls == 1
    config.write_text('[profiling]\nfile_path = "notes.txt"\n')
    proc = run_cli("run", "-q", "--config", config, script, cwd=tmp_path)
    assert proc.returncode == 2 and "run -o notes.txt: unknown output kind" in proc.stderr
