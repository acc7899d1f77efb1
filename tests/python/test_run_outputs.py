"""The files ``scope-profiler run`` writes: by default the ``.h5`` profile and its flame graph,
each within 40 bytes per recorded call and 100 MB, and one line naming them and the flag that
writes the full timeline; with ``--speedscope``, the speedscope file of every call too,
which speedscope's own importer reads (docs/cli.md, "run")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import run_cli, speedscope_import

#: A script calling fib(depth): fib_calls(depth) traced calls of `__main__.fib`.
FIB = """
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib({depth})
"""


def fib_calls(depth: int) -> int:
    """Calls of fib(depth): c(n) = 1 + c(n-1) + c(n-2), c(0) = c(1) = 1."""
    a, b = 1, 1
    for _ in range(depth - 1):
        a, b = b, 1 + a + b
    return b


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    """`run --recursive` of fib(27) (635,621 calls of fib) with its default outputs: the
    directory, the completed process and the number of calls the file holds."""
    work = tmp_path_factory.mktemp("default-run")
    (work / "app.py").write_text(FIB.format(depth=27))
    proc = run_cli("run", "--recursive", "-o", work / "fib.h5", work / "app.py", cwd=work)
    assert proc.returncode == 0, proc.stderr
    run = sp.read_h5(str(work / "fib.h5"))
    return work, proc, sum(run[name][0].num_calls for name in run.region_names)


def test_run_writes_the_profile_and_its_flame_graph_by_default(default_run):
    work, _, calls = default_run
    # fib's calls, the module's, the script's region and the session's
    assert calls == fib_calls(27) + 3
    assert sorted(p.name for p in work.iterdir()) == ["app.py", "fib.flamegraph.svg", "fib.h5"]
    svg = (work / "fib.flamegraph.svg").read_text()
    assert svg.startswith("<?xml") and "__main__.fib" in svg


def test_run_default_files_stay_within_40_bytes_a_call_and_100_mb(default_run):
    work, _, calls = default_run
    for name in ("fib.h5", "fib.flamegraph.svg"):
        size = (work / name).stat().st_size
        assert size <= 40 * calls and size <= 100_000_000, (name, size, size / calls)


def test_run_says_once_what_it_wrote_and_the_flag_of_the_full_timeline(default_run):
    work, proc, _ = default_run
    h5, svg = work / "fib.h5", work / "fib.flamegraph.svg"
    line = (
        f"wrote {h5} and its flame graph {svg} (the full call timeline: --speedscope, "
        f"or scope-profiler export speedscope {h5})"
    )
    assert proc.stdout.count("wrote ") == 1 and proc.stdout.count("--speedscope") == 1
    assert proc.stdout.rstrip().splitlines()[-1] == line, proc.stdout
    assert "speedscope" not in proc.stderr


def test_run_speedscope_writes_the_full_timeline_speedscope_reads(tmp_path: Path):
    (tmp_path / "app.py").write_text(FIB.format(depth=12))
    out = tmp_path / "fib.h5"
    proc = run_cli("run", "--recursive", "--speedscope", "-o", out, tmp_path / "app.py")
    assert proc.returncode == 0, proc.stderr
    timeline = tmp_path / "fib.speedscope.json"
    assert proc.stdout.rstrip().splitlines()[-1] == f"wrote {out} and {timeline}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.py", "fib.h5", "fib.speedscope.json"]
    doc = json.loads(timeline.read_text())
    frames = [f["name"] for f in doc["shared"]["frames"]]
    opened = [frames[e["frame"]] for p in doc["profiles"] for e in p["events"] if e["type"] == "O"]
    # every call is in the timeline: fib's, the module's, the script's region and the session's
    assert opened.count("__main__.fib") == fib_calls(12)
    assert len(opened) == fib_calls(12) + 3
    speedscope_import(timeline)


def test_run_quiet_writes_the_flame_graph_and_says_nothing(tmp_path: Path):
    (tmp_path / "app.py").write_text(FIB.format(depth=10))
    proc = run_cli("run", "--recursive", "-q", "-o", tmp_path / "q.h5", tmp_path / "app.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert (tmp_path / "q.flamegraph.svg").is_file()
    assert not (tmp_path / "q.speedscope.json").exists()
