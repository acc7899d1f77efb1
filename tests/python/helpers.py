"""Shared test helpers: paths, running the CLI, the reference interpreter, real consumers,
and what a test does when one of them is missing (`unavailable`)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
import scope_profiler as sp
from scope_profiler import MPIRegion, ProfileManager, ProfilingResults, Region

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "datasets"
# the spec, the reference's datasets and the consumers' check scripts: `shared` beside the
# repository, or where SCOPE_PROFILER_SHARED points (tests/run_all.sh exports it)
SHARED = Path(os.environ.get("SCOPE_PROFILER_SHARED") or ROOT.parent / "shared")
SPEEDSCOPE_CHECK = SHARED / "clients" / "speedscope" / "speedscope_check.cjs"


def under_ci() -> bool:
    """CI sets CI=true; there every consumer and interpreter is installed (tests/run_all.sh)."""
    return os.environ.get("CI") == "true"


def unavailable(reason: str) -> NoReturn:
    """A consumer, tool or interpreter the test needs is missing: under CI (CI=true) the
    test fails, naming it, since tests/run_all.sh installs every one there and a missing one
    is a broken setup; elsewhere it skips, and `pytest -rs` lists the reason. Callable at
    module level too (the whole module then skips or fails)."""
    if under_ci():
        pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def async_session(m: ProfileManager, tmp_path: Path | None = None, track_async: bool = True, **kw):
    """`m.session(...)` with `track_async`, returning results, quiet; in memory, or written to
    `tmp_path / "run.h5"` when a directory is given."""
    if tmp_path is None:
        kw.setdefault("deactivate_file_output", True)
    else:
        kw.setdefault("file_path", str(tmp_path / "run.h5"))
    return m.session(verbose=False, return_results=True, track_async=track_async, **kw)


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run `python -m scope_profiler ARGS` (the console script's code) and capture output."""
    return subprocess.run(
        [sys.executable, "-m", "scope_profiler", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_traced(tmp_path: Path, source: str, *options: str):
    """Write ``source`` as a script, run it under ``run --recursive OPTIONS``, assert that it
    succeeded, and return the run read back and the completed process."""
    import textwrap

    import scope_profiler

    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(source))
    out = tmp_path / "run.h5"
    proc = run_cli("run", "--recursive", *options, "-q", "--no-speedscope", "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    return scope_profiler.read_h5(str(out)), proc


def reference_python() -> str:
    """The interpreter that has the reference scope-profiler 0.7.5, or `unavailable`."""
    ref = os.environ.get("SCOPE_PROFILER_REF_PYTHON")
    if not ref or not Path(ref).exists():
        unavailable(
            f"reference package not available: SCOPE_PROFILER_REF_PYTHON={ref or '(unset)'} "
            "is not an interpreter (tests/run_all.sh sets it to a venv with scope-profiler 0.7.5)"
        )
    return ref


def reference_read(path: Path) -> dict:
    """Read `path` with the reference package; returns per-region call counts/durations and threads."""
    code = r"""
import json, sys
import scope_profiler as sp
r = sp.read_h5(sys.argv[1])
out = {"regions": {}, "threads": {}, "num_ranks": r.num_ranks}
for name in r.region_names:
    for rank in r[name].ranks:
        reg = r[name][rank]
        out["regions"][f"{name}@{rank}"] = {
            "num_calls": int(reg.num_calls),
            "durations_ns": [int(x) for x in reg.durations_ns],
            "thread_ids": None if reg.thread_ids is None else [int(x) for x in reg.thread_ids],
            "exclusive_ns": int(round(reg.exclusive_duration * 1e9)),
        }
for rank, rows in r.threads.items():
    out["threads"][str(rank)] = [{"index": t.index, "name": t.name, "alive": t.alive} for t in rows]
print(json.dumps(out))
"""
    proc = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"reference could not read {path}:\n{proc.stderr}"
    return json.loads(proc.stdout)


def speedscope_import(path: Path) -> str:
    """Import `path` with speedscope's own importer (npm speedscope 1.25.0), or `unavailable`."""
    node_dir = os.environ.get("CLIENTS_NODE_DIR")
    if (
        shutil.which("node") is None
        or not node_dir
        or not (Path(node_dir) / "node_modules" / "speedscope").is_dir()
        or not SPEEDSCOPE_CHECK.exists()
    ):
        unavailable(
            "speedscope importer not available: needs node, npm speedscope@1.25.0 and ajv in "
            f"CLIENTS_NODE_DIR={node_dir or '(unset)'} and {SPEEDSCOPE_CHECK} "
            "(tests/run_all.sh sets them up)"
        )
    proc = subprocess.run(
        ["node", str(SPEEDSCOPE_CHECK), str(path), "--expect", "speedscope json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CLIENTS_NODE_DIR": node_dir},
    )
    assert proc.returncode == 0, f"speedscope rejected {path}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def enclosed_task_time(results, rank: int) -> dict:
    """s per thread index of `rank`: the wall-clock union of the top-level calls of the task
    lanes of the thread that lie inside a top-level call of the thread's own lane - counted
    twice in 0.7.5's ``region_time`` (the enclosing call and the task call), once in
    ``held_time + await_time``. Computed from the call arrays."""
    calls = results.call_arrays(rank)
    aside = {int(i) for i in calls.set_aside}
    roots = [i for i in range(len(calls.start_ns)) if calls.parent[i] < 0 and i not in aside]
    thread_of = {t.index: t.thread_index for t in results.tasks.get(rank, [])}
    out = {}
    for th in {t.index for t in results.threads.get(rank, [])}:
        bare = [
            (int(calls.start_ns[i]), int(calls.end_ns[i]))
            for i in roots
            if calls.lane[i] == -2 - th
        ]
        inner = sorted(
            (int(calls.start_ns[i]), int(calls.end_ns[i]))
            for i in roots
            if calls.lane[i] >= 0
            and thread_of.get(int(calls.lane[i])) == th
            and any(b <= calls.start_ns[i] and calls.end_ns[i] <= e for b, e in bare)
        )
        total, current = 0, None
        for s, e in inner:
            if current is not None and s <= current[1]:
                current = (current[0], max(current[1], e))
            else:
                total += 0 if current is None else current[1] - current[0]
                current = (s, e)
        total += 0 if current is None else current[1] - current[0]
        out[th] = total / 1e9
    return out


ASYNC = DATASETS / "reference" / "async.h5"
THREADS = DATASETS / "reference" / "threads.h5"


def _record_peeked_generator(path) -> None:
    """A tracked run in which a @profile generator is peeked inside region "header": its
    call starts inside "header" and ends after it."""
    from scope_profiler import profile

    @profile
    def rows():
        for i in range(3):
            time.sleep(0.002)
            yield i

    with ProfileManager.session(file_path=str(path), track_threads=True, verbose=False):
        with ProfileManager.profile_region("main"):
            it = rows()
            with ProfileManager.profile_region("header"):
                first = next(it)
            rest = list(it)
            with ProfileManager.profile_region("body"):
                time.sleep(0.001)
    assert (first, rest) == (0, [1, 2])


I64 = np.int64


def _results(calls: dict[str, list[tuple]], label: str, source=None) -> ProfilingResults:
    """A run from per-region columns: {name: [(start, end, thread, task), ...]}."""
    regions = {}
    for name, rows in calls.items():
        cols = list(zip(*rows))
        kw = {}
        if len(cols) > 2 and cols[2][0] is not None:
            kw["thread_ids"] = np.array(cols[2], dtype=I64)
        if len(cols) > 3 and cols[3][0] is not None:
            kw["task_ids"] = np.array(cols[3], dtype=I64)
        if source:
            kw["source_file"], kw["source_lineno"] = source
        reg = Region(np.array(cols[0], dtype=I64), np.array(cols[1], dtype=I64), **kw)
        regions[name] = MPIRegion(name, {0: reg})
    return ProfilingResults(regions, metadata={"label": label})


def _deep_recursion(depth: int = 3000) -> ProfilingResults:
    s = np.arange(depth, dtype=I64) * 10
    e = (2 * depth - np.arange(depth, dtype=I64)) * 10 + 5
    return _results({"rec": list(zip(s, e))}, "deep", source=("rec.py", 3))


# ---------------------------------------------------------------- timeline


def _svg(path: Path) -> str:
    """The SVG text of `path`, checked to be well-formed XML with an <svg> root."""
    text = path.read_text()
    assert ET.fromstring(text).tag == "{http://www.w3.org/2000/svg}svg"
    return text


def _lanes(svg: str) -> list[int]:
    return [int(x) for x in re.findall(r'<g class="lane" data-rank="\d+" data-lane="(-?\d+)"', svg)]


def _caption(svg: str) -> list[str]:
    return re.findall(r'<text class="caption"[^>]*><title>([^<]*)</title>', svg)


def _threads(n: int = 1000) -> ProfilingResults:
    """n threads, thread k: 3 calls of `work` of 500 + k ns (the busiest last)."""
    rows = [(2000 * j + k, 2000 * j + 2 * k + 500, k, None) for k in range(n) for j in range(3)]
    return _results({"work": rows}, "threads")


def _empty_run(path: Path, **settings) -> Path:
    manager = ProfileManager()
    manager.setup(file_path=str(path), replace=True, **settings)
    manager.finalize(verbose=False)
    manager.reset()  # no thread hook outlives the test
    return path


def _nested_threaded_run(path: Path) -> ProfilingResults:
    import threading

    manager = ProfileManager()
    manager.setup(file_path=str(path), track_threads=True, replace=True)

    def work():
        for _ in range(3):
            with manager.profile_region("outer"):
                with manager.profile_region("inner"):
                    pass

    t = threading.Thread(target=work, name="w")
    t.start()
    t.join()
    with manager.profile_region("main"):
        pass
    manager.finalize(verbose=False)
    manager.reset()  # no thread hook outlives the test
    return sp.read_h5(path)


def duration_text(seconds: float) -> str:
    """A duration with three significant digits in the unit that shows it (an independent
    writing of the summary's rule)."""
    if seconds == 0:
        return "0 s"
    for scale, unit in ((1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")):
        v = seconds / scale
        if abs(v) < 999.5 or unit == "s":
            digits = max(0, 2 - math.floor(math.log10(abs(v))))
            text = f"{v:.{digits}f}"
            if len(text.replace(".", "").replace("-", "").lstrip("0")) > 3 and digits > 0:
                text = f"{v:.{digits - 1}f}"
            return f"{text} {unit}"
    raise AssertionError


def run_and_summarise(script_text: str, tmp_path: Path, *run_args: str) -> list[str]:
    """Write ``script_text`` to ``tmp_path/app.py``, profile it with ``scope-profiler run
    RUN_ARGS -o run.h5`` and summarise the file with ``scope-profiler summary``; returns the
    two outputs (run's printout, then the summary), each command having succeeded."""
    script = tmp_path / "app.py"
    script.write_text(script_text)
    out = tmp_path / "run.h5"
    proc = run_cli("run", *run_args, "--no-speedscope", "-o", out, script)
    assert proc.returncode == 0, proc.stderr
    summary = run_cli("summary", out)
    assert summary.returncode == 0, summary.stderr
    return [proc.stdout, summary.stdout]


def loop_block_section(text: str) -> tuple[str, str]:
    """The "event loop blocked" section of a text summary: its title line and its first
    block's row."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "event loop blocked" in line)
    return lines[at], lines[at + 2]
