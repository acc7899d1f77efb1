"""Per-process files under multiprocessing: examples/multiprocessing_workers.py runs
unchanged under fork, spawn and forkserver (Pool and ProcessPoolExecutor), and two
processes writing the same file_path never corrupt it (the later one wins, atomically).
"""

from __future__ import annotations

import multiprocessing
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import scope_profiler as sp
from helpers import ROOT, reference_read, run_cli
from scope_profiler.exceptions import CorruptProfileError

EXAMPLE = ROOT / "examples" / "multiprocessing_workers.py"


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_example_runs_under_every_start_method(method, tmp_path):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"start method {method!r} not available on this platform")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--method", method, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    m = re.search(
        r"(\d+) tasks in (\d+) worker processes \((\w+)\); (\d+) worker files, "
        r"merged: (\d+) rank\(s\), (\d+) item calls",
        proc.stdout,
    )
    assert m, proc.stdout
    tasks, processes, used, files, ranks, items = m.groups()
    assert used == method and int(tasks) == 12
    assert int(processes) == int(files) == int(ranks) >= 2  # one file per worker process
    assert int(items) == 20 * int(files)  # every file holds one whole session (the last)
    assert not list(tmp_path.glob(".*.tmp")), "temporary files left behind"

    worker_files = sorted(tmp_path.glob("worker_*.h5"))
    for path in worker_files:
        r = sp.read_h5(path)
        # the worker's own session only: none of the parent's threads, even under fork
        assert [t.name for t in r.threads[0]] == ["MainThread", "item-thread-0", "item-thread-1"]
        indices = {t.index for t in r.threads[0]}
        for name in r.region_names:
            assert set(np.unique(r[name][0].thread_ids)) <= indices
        assert r["item"][0].num_calls == 20 and r["compute"][0].num_calls == 20
        assert r["scope_profiler.session"][0].num_calls == 1

    parent = sp.read_h5(tmp_path / "parent.h5")
    assert parent.region_names == ["scope_profiler.session", f"pools ({method})"]
    assert parent.threads[0][0].name == "MainThread"

    ref = reference_read(worker_files[0])
    assert ref["regions"]["item@0"]["num_calls"] == 20
    assert {t["name"] for t in ref["threads"]["0"]} >= {"item-thread-0", "item-thread-1"}

    merged = run_cli("summary", "--merge", *map(str, worker_files))
    assert (
        merged.returncode == 0 and f"{len(worker_files)} rank(s)" in merged.stdout.splitlines()[0]
    )


WRITER = textwrap.dedent("""
    import sys
    from scope_profiler import ProfileManager
    path, k, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    for i in range(rounds):
        calls = 1000 * (k + 1) + i  # label and call count identify the write
        with ProfileManager.session(file_path=path, label=f"{k}:{i}:{calls}", verbose=False):
            for _ in range(calls):
                with ProfileManager.profile_region("item"):
                    pass
""")


def test_same_file_path_later_writer_wins_atomically(tmp_path):
    """Four processes write one path 15 times each while it is read continuously: every
    read sees one complete file of one writer (never a torn or mixed one)."""
    path = tmp_path / "shared.h5"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rounds = 15
    writers = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(k), str(rounds)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    reads = 0
    seen = set()
    deadline = time.monotonic() + 120
    while any(w.poll() is None for w in writers) and time.monotonic() < deadline:
        try:
            r = sp.read_h5(path)
        except FileNotFoundError:
            assert reads == 0, "the file disappeared after it was first published"
            time.sleep(0.005)
            continue
        except CorruptProfileError as exc:  # pragma: no cover - the failure this test guards
            pytest.fail(f"read a torn file: {exc}")
        k, i, calls = r.metadata["label"].split(":")
        assert r["item"][0].num_calls == int(calls)
        assert r["scope_profiler.session"][0].num_calls == 1
        seen.add(k)
        reads += 1
    for w in writers:
        _, err = w.communicate(timeout=60)
        assert w.returncode == 0, err
    assert reads > 0
    final = sp.read_h5(path)
    k, i, calls = final.metadata["label"].split(":")
    assert int(i) == rounds - 1 and final["item"][0].num_calls == int(calls)
    assert not list(tmp_path.glob(".*.tmp")), "temporary files left behind"
