"""The HTML report (`export_html`, `create_html_report`, `write_profile(".html")`,
`scope-profiler report`): its tables hold the run's numbers, it needs no network, and it
loads in a real browser (headless Chromium) without a console error."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import DATASETS, ROOT, _empty_run, duration_text, run_cli, unavailable

BROWSER_CHECK = ROOT / "tests" / "browser" / "html_report_check.cjs"


class _Tables(HTMLParser):
    """{table class: [[cell text, ...], ...]} of the body rows of every table."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = dict(attrs).get("class", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(path: Path) -> dict[str, list[list[str]]]:
    p = _Tables()
    p.feed(Path(path).read_text())
    return p.tables


def _threads_and_tasks():
    """Two worker threads (`work > step`) and an event loop with three tasks (`fetch`
    awaiting a sleep, then `parse` on the loop's thread)."""

    def work(n):
        with sp.region("work"):
            for _ in range(n):
                with sp.region("step"):
                    time.sleep(0.002)

    threads = [threading.Thread(target=work, args=(2 + i,), name=f"worker-{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def fetch(i):
        with sp.region("fetch"):
            await asyncio.sleep(0.01 + 0.005 * i)
            with sp.region("parse"):
                time.sleep(0.001)

    async def main():
        await asyncio.gather(*(fetch(i) for i in range(3)))

    asyncio.run(main())


@pytest.fixture(scope="module")
def run_h5(tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "mixed.h5"
    sp.reset()
    try:
        with sp.session(file_path=str(path), track_async=True, verbose=False):
            _threads_and_tasks()
    finally:
        sp.reset()
    return path


def seconds(text: str) -> float:
    """A duration as the report writes it (`12.3 ms`), in s."""
    value, unit = text.split()
    return float(value) * {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def test_tables_hold_the_runs_numbers(run_h5, tmp_path):
    results = sp.read_h5(str(run_h5))
    (out,) = sp.export_html(results, tmp_path / "r.html", verbose=False)
    assert out == tmp_path / "r.html"
    t = tables(out)
    rows = {r[0]: r for r in t["regions"]}
    assert set(rows) == {"scope_profiler.session", "work", "step", "fetch", "parse"}
    for region in results.get_regions():
        reg = region[0]
        row = rows[region.name]
        assert int(row[1]) == reg.num_calls
        assert row[2] == duration_text(reg.total_duration)
        assert row[6] == duration_text(reg.exclusive_duration)
        awaited = int(reg.await_times_ns.sum())
        # held = Σ durations − Σ await − Σ task steps run inside the calls of a thread's own
        # lane; await = Σ await_ns of the calls
        steps = int(reg.task_step_times_ns.sum()) if reg.task_step_times_ns is not None else 0
        held = int(reg.durations_ns.sum()) - awaited - steps
        assert row[7] == duration_text(held / 1e9), region.name
        assert row[8] == duration_text(awaited / 1e9), region.name
    assert rows["step"][1] == "5" and rows["fetch"][1] == "3" and rows["work"][1] == "2"
    # fetch awaited its sleeps (>= 10 + 15 + 20 ms); the worker threads never awaited
    assert seconds(rows["fetch"][8]) >= 0.045 and rows["step"][8] == "0 s"
    # regions by inclusive time, the hot spot first
    by_total = sorted(results.get_regions(), key=lambda r: -r[0].total_duration)
    assert [r[0] for r in t["regions"]] == [r.name for r in by_total]
    # one thread row per thread with its name and call count
    names = {r[1]: int(r[5]) for r in t["threads"]}
    assert names["worker-0"] == 1 + 2 and names["worker-1"] == 1 + 3  # work + its steps
    # one task row per task; the three fetch tasks are there with their coroutine name
    fetch_tasks = [r for r in t["tasks"] if "(fetch)" in r[1]]
    assert len(fetch_tasks) == 3
    for r in fetch_tasks:
        assert seconds(r[7]) >= 0.0099  # await of its calls: each slept at least 10 ms
        assert seconds(r[9]) >= 0.0099  # awaiting time of the task
    # the thread table holds thread_summary(); held + await = the top-level calls' durations
    for row, want in zip(t["threads"], results.thread_summary()):
        assert row[1] == want["name"] and row[6] == duration_text(want["region_time"])
        assert row[7] == duration_text(want["held_time"]) and row[8] == duration_text(
            want["await_time"]
        )
    # and the task table holds task_summary(), the busiest tasks (by held time) first
    summaries = {str(t["index"]): t for t in results.task_summary()}
    held = [summaries[row[0]]["held_time"] for row in t["tasks"]]
    assert held == sorted(held, reverse=True)
    for row in t["tasks"]:
        want = summaries[row[0]]
        assert row[4] == str(want["num_calls"]) and row[5] == duration_text(want["region_time"])
        assert row[6] == duration_text(want["held_time"]) and row[7] == duration_text(
            want["await_time"]
        )
    loop = next(r for r in t["threads"] if r[1] == "MainThread")
    # the fetch tasks' sleeps on the event loop's thread: overlapping (the longest, 20 ms,
    # less the other tasks' 1 ms holds) as its await time, summed (>= 10 + 15 + 20 ms) as
    # the tasks' awaits
    assert seconds(loop[8]) >= 0.017 and seconds(loop[10]) >= 0.045
    html = out.read_text()
    assert html.count('<g class="lane"') >= 2 + 1 + 3  # timeline: worker threads, main, tasks
    assert 'src="data:image/svg+xml;base64,' in html  # the flame graph, inline
    for bad in ("<link", 'src="http', 'href="http', "@import"):
        assert bad not in html


def test_create_html_report_and_write_profile(run_h5, tmp_path):
    path = sp.create_html_report(str(run_h5), tmp_path / "a" / "report.html")
    assert path == tmp_path / "a" / "report.html" and path.is_file()
    assert {r[0] for r in tables(path)["regions"]} >= {"fetch", "step"}
    # include= filters the tables like every export
    only = sp.create_html_report(sp.read_h5(str(run_h5)), tmp_path / "f.html", include="fetch")
    assert [r[0] for r in tables(only)["regions"]] == ["fetch"]
    with pytest.raises(ValueError, match="Invalid rank"):
        sp.create_html_report(str(run_h5), tmp_path / "bad.html", ranks=[3])
    from scope_profiler import profile_io

    written = profile_io.write_profile(sp.read_h5(str(run_h5)), tmp_path / "w.html")
    assert Path(written).read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(ValueError, match="HTML report"):
        profile_io.load(written)


def test_cli_report(run_h5, tmp_path):
    out = tmp_path / "cli" / "report.html"
    ref = DATASETS / "reference" / "threads.h5"
    proc = run_cli("report", run_h5, ref, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}"
    html = out.read_text()
    assert html.count('<section class="run">') == 2
    assert "<h2>mixed</h2>" in html and "<h2>threads</h2>" in html
    t = tables(out)
    assert {r[0]: r[1] for r in t["regions"]}["solve"] == "26"  # the reference file's count
    bad = run_cli("report", ref, "--rank", "2", "-o", tmp_path / "bad.html")
    # a bad option value is a usage error, exit 2
    assert bad.returncode == 2 and "Invalid rank requested: 2" in bad.stderr
    assert not (tmp_path / "bad.html").exists()
    missing = run_cli("report", tmp_path / "nope.h5", "-o", tmp_path / "n.html")
    assert missing.returncode == 1 and "nope.h5" in missing.stderr


def test_dir_and_all_list_the_lazy_exporters():
    lazy = {
        "export_speedscope",
        "export_prof",
        "export_flamegraph_svg",
        "export_chrome_trace",
        "export_perfetto",
        "export_pprof",
        "export_folded",
        "export_timeline_svg",
        "export_parquet",
        "export_html",
        "create_html_report",
    }
    assert lazy <= set(dir(sp))
    assert lazy <= set(sp.__all__)
    for name in sp.__all__:
        assert callable(getattr(sp, name)) or isinstance(getattr(sp, name), type), name
    assert "__version__" in dir(sp)


def browser_check(path: Path, shot: Path) -> str:
    """Load the report in headless Chromium (tests/browser/html_report_check.cjs), or
    `unavailable`."""
    node_dir = os.environ.get("CLIENTS_NODE_DIR")
    chromium = os.environ.get("CHROMIUM")
    if (
        shutil.which("node") is None
        or not node_dir
        or not (Path(node_dir) / "node_modules" / "playwright-core").exists()
        or not chromium
        or not Path(chromium).exists()
    ):
        unavailable(
            "HTML report browser check not available: needs node, npm playwright-core in "
            f"CLIENTS_NODE_DIR={node_dir or '(unset)'} and Chromium at CHROMIUM={chromium or '(unset)'} "
            "(tests/run_all.sh sets them up)"
        )
    proc = subprocess.run(
        ["node", str(BROWSER_CHECK), str(path), str(shot)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    return proc.stdout


def test_report_loads_in_chromium_without_errors(run_h5, tmp_path):
    report = sp.create_html_report(str(run_h5), tmp_path / "report.html")
    shot = tmp_path / "report.png"
    out = browser_check(report, shot)
    # what the browser rendered: every region with its call count, the tables, the lanes
    results = sp.read_h5(str(run_h5))
    by_total = sorted(results.get_regions(), key=lambda r: -r[0].total_duration)
    want = " ".join(f"{r.name}={r[0].num_calls}" for r in by_total)  # the hot spot first
    assert f"regions {want}" in out, out
    assert "regions:5" in out and "threads:3" in out, out
    assert shot.stat().st_size > 10_000  # a real picture (PNG of the whole page)


# `scope-profiler run -o run.html` (the reference's .html output) writes the report, and
# nothing beside it: the page shows the run's flame graph.
def test_cli_run_writes_the_html_report(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(
        "import asyncio, time\n"
        "import scope_profiler as sp\n"
        "async def job(i):\n"
        "    with sp.region('job'):\n"
        "        await asyncio.sleep(0.01)\n"
        "        time.sleep(0.001)\n"
        "async def main():\n"
        "    await asyncio.gather(*(job(i) for i in range(4)))\n"
        "asyncio.run(main())\n"
    )
    out = tmp_path / "run.html"
    proc = run_cli("run", "--track-async", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r[0]: r for r in tables(out)["regions"]}
    assert rows["job"][1] == "4"
    # each job awaited its 10 ms sleep and held its thread for its 1 ms time.sleep
    assert seconds(rows["job"][8]) >= 4 * 0.0099 and seconds(rows["job"][7]) >= 4 * 0.00099
    assert len([r for r in tables(out)["tasks"] if "(job)" in r[1]]) == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.py", "run.html"]
    assert not list(tmp_path.glob("*.scope-profiler.h5"))  # the recording was removed


# An empty run (setup then finalize) gets a report from `report` and `create_html_report`,
# saying it has no calls, as 0.7.5 writes one; timeline / exports refuse it with a clear
# message, exit 1.
def test_an_empty_run_gets_a_report_and_clear_refusals(tmp_path):
    empty = _empty_run(tmp_path / "empty.h5")
    proc = run_cli("report", empty, "-o", tmp_path / "e.html")
    assert proc.returncode == 0, proc.stderr
    assert "The run has no calls" in (tmp_path / "e.html").read_text()
    path = sp.create_html_report(sp.read_h5(empty), tmp_path / "p.html")
    html = Path(path).read_text()
    assert "The run has no calls: no region was entered between setup and finalize." in html
    assert html.rstrip().endswith("</html>")
    for args in (
        ("timeline", empty, "-o", tmp_path / "e.svg"),
        ("export", "speedscope", empty, "-o", tmp_path),
    ):
        proc = run_cli(*args)
        assert proc.returncode == 1, (args, proc.stderr)
        assert f"{empty}: " in proc.stderr and "the run has no calls" in proc.stderr, proc.stderr
        assert "No calls recorded for the requested ranks" not in proc.stderr
