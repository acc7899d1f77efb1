"""Folded stacks, flame graph SVG, lane timeline SVG and Parquet exports on a tracked
threaded run recorded here and on the reference asyncio run, each checked by its real
consumer: inferno-flamegraph + xmllint (shared/clients/folded), pyarrow, DuckDB.

A consumer that is not installed makes its test skip with the install command; nothing
passes without the consumer having run (tests/run_all.sh installs them all)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import scope_profiler as sp
from helpers import (
    DATASETS,
    I64,
    SHARED,
    _caption,
    _deep_recursion,
    _lanes,
    _results,
    _svg,
    _threads,
    unavailable,
)
from scope_profiler import ProfilingResults

FOLDED_CHECK = SHARED / "clients" / "folded" / "folded_check.sh"
SVG_CHECK = SHARED / "clients" / "folded" / "svg_check.sh"
ASYNC_H5 = DATASETS / "reference" / "async.h5"
N_WORKERS, N_STEPS = 3, 4


def _consumer_path() -> str:
    """PATH with the cargo-installed consumers (tests/run_all.sh: $CLIENTS/cargo/bin)."""
    extra = []
    for var in ("CLIENTS_CARGO_DIR", "CLIENTS_NODE_DIR"):
        d = os.environ.get(var)
        if d:
            extra += [str(Path(d) / "bin"), str(Path(d) / "cargo" / "bin")]
    return os.pathsep.join([*extra, os.environ.get("PATH", "")])


def _need_inferno():
    path = _consumer_path()
    missing = [t for t in ("inferno-flamegraph", "xmllint") if shutil.which(t, path=path) is None]
    if missing or not FOLDED_CHECK.exists():
        unavailable(
            f"folded/SVG consumers not available ({', '.join(missing) or FOLDED_CHECK}): "
            "cargo install inferno --version 0.12.8 --root $CLIENTS/cargo; apt-get install libxml2-utils "
            "(tests/run_all.sh does both)"
        )
    return path


def _run_check(script: Path, *args) -> str:
    path = _need_inferno()
    proc = subprocess.run(
        ["bash", str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path},
    )
    assert proc.returncode == 0, f"{script.name} rejected {args[0]}:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    return proc.stdout


def _busy(seconds: float):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.fixture(scope="module")
def threaded(tmp_path_factory):
    """A tracked run: MainThread `main > prepare`, workers `work > step` x N_STEPS."""
    path = tmp_path_factory.mktemp("threaded") / "threaded.h5"

    def worker():
        with sp.profile_region("work"):
            for _ in range(N_STEPS):
                with sp.profile_region("step"):
                    _busy(0.0005)

    sp.reset()
    try:
        sp.setup(file_path=str(path), track_threads=True)
        with sp.profile_region("main"):
            with sp.profile_region("prepare"):
                _busy(0.001)
            threads = [
                threading.Thread(target=worker, name=f"worker-{i}") for i in range(N_WORKERS)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        results = sp.finalize(return_results=True, verbose=False)
    finally:
        sp.reset()
    return results


@pytest.fixture(scope="module")
def tasks():
    return sp.read_h5(ASYNC_H5)


def _folded_lines(path: Path) -> list[tuple[list[str], int]]:
    out = []
    for line in path.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        out.append((stack.split(";"), int(count)))
    return out


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_folded_inferno_consumer_and_totals(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (path,) = sp.export_folded(results, tmp_path / "run", verbose=False)
    assert path == tmp_path / "run.folded"
    lines = _folded_lines(path)
    # per region: Σ counts of the stacks ending in it = the region's exclusive time
    by_leaf = defaultdict(int)
    for stack, count in lines:
        by_leaf[stack[-1]] += count
    for name in results.region_names:
        want = results[name][0].exclusive_duration * 1e9
        assert by_leaf.get(name, 0) == pytest.approx(want, abs=2), name
    # roots: the lane labels
    roots = {stack[0] for stack, _ in lines}
    if which == "threaded":
        assert roots == {"MainThread", *(f"worker-{i}" for i in range(N_WORKERS))}
        assert {tuple(s) for s, _ in lines} >= {
            ("worker-0", "work", "step"),
            ("MainThread", "main", "prepare"),
        }
    else:
        assert "MainThread" in roots and "Task-2 (fetch) on MainThread" in roots
    # the real consumer: inferno-flamegraph renders it, xmllint accepts the SVG
    out = _run_check(FOLDED_CHECK, path, tmp_path / "inferno.svg")
    total = sum(c for _, c in lines)
    assert f"{len(lines)} stacks, {total} samples" in out, out
    # inferno's drawn per-frame totals for the lane roots = Σ of their stacks
    drawn = dict(re.findall(r"^\s+(.+?)\s+\d+ rect\(s\)\s+(\d+) samples$", out, re.M))
    for root in roots:
        assert int(drawn[root]) == sum(c for s, c in lines if s[0] == root), (root, out)


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_flamegraph_svg_inferno_rendered_and_well_formed(which, request, tmp_path):
    results = request.getfixturevalue(which)
    written = sp.export_flamegraph_svg(results, tmp_path / "flame.svg", verbose=False)
    assert written == [tmp_path / "flame.svg"]  # one rank: the name as given
    out = _run_check(SVG_CHECK, written[0], 40)
    text = written[0].read_text()
    assert "<title>all (" in text, "inferno's root"
    titles = re.findall(r"<title>([^<]*)</title>", text)
    # every region appears as a frame, with the ns count name
    for name in results.region_names:
        assert any(t.startswith(f"{name} (") and " ns, " in t for t in titles), (name, out)
    # same input, same bytes
    again = sp.export_flamegraph_svg(results, tmp_path / "again.svg", verbose=False)[0]
    assert again.read_bytes() == written[0].read_bytes()


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_timeline_svg_rows_bars_and_xmllint(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (path,) = sp.export_timeline_svg(results, tmp_path / "tl", verbose=False)
    assert path == tmp_path / "tl.timeline.svg"
    _run_check(SVG_CHECK, path, 5)
    text = path.read_text()
    # one row per lane with calls
    if which == "threaded":
        n_lanes = 1 + N_WORKERS
        n_calls = 2 + N_WORKERS * (1 + N_STEPS)
    else:
        n_lanes = 8  # MainThread + Task-1..Task-7 (tasks 8 and 9 recorded no region)
        n_calls = sum(results[n][0].num_calls for n in results.region_names)
    assert text.count('<g class="lane"') == n_lanes
    assert (
        text.count("<g><title>")
        + sum(int(k) for k in re.findall(r"<title>(\d+) short call\(s\)", text))
        == n_calls
    )
    if which == "tasks":
        assert 'fill="url(#await)"' in text and "await " in text
    else:
        assert 'fill="url(#await)"' not in text, "no await hatching without tasks"


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_timeline_svg_rendered_by_rsvg(which, request, tmp_path):
    # picture a person can open: rsvg renders it
    if shutil.which("rsvg-convert") is None:
        unavailable(
            "rsvg-convert not available: apt-get install librsvg2-bin (tests/run_all.sh does)"
        )
    results = request.getfixturevalue(which)
    (path,) = sp.export_timeline_svg(results, tmp_path / "tl", verbose=False)
    png = tmp_path / "tl.png"
    subprocess.run(["rsvg-convert", str(path), "-o", str(png)], check=True, timeout=60)
    assert png.stat().st_size > 1000


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_parquet_read_by_pyarrow_and_duckdb(which, request, tmp_path):
    pq = pytest.importorskip(
        "pyarrow.parquet", reason="pyarrow not installed (tests/run_all.sh installs it)"
    )
    duckdb = pytest.importorskip(
        "duckdb", reason="duckdb not installed (tests/run_all.sh installs it)"
    )
    results = request.getfixturevalue(which)
    events, lanes = sp.export_parquet(results, tmp_path / "run.parquet", verbose=False)
    assert (events, lanes) == (tmp_path / "run.parquet", tmp_path / "run.lanes.parquet")
    table = pq.read_table(events)
    assert table.schema.names == [
        "rank",
        "region",
        "call_index",
        "start_ns",
        "end_ns",
        "duration_ns",
        "call_id",
        "parent_id",
        "thread",
        "task",
        "await_ns",
        "depth",
        "lane",
        "exclusive_ns",
    ]
    for col in ("thread", "task", "lane", "depth", "parent_id"):
        assert table.column(col).null_count == 0
    cols = table.to_pydict()
    # durations per region (pyarrow) = ours
    got = defaultdict(list)
    for name, d in zip(cols["region"], cols["duration_ns"]):
        got[name].append(d)
    for name in results.region_names:
        assert sorted(got[name]) == sorted(int(x) for x in results[name][0].durations_ns), name
    # DuckDB: exclusive per region = exclusive_duration; lanes join
    con = duckdb.connect()
    rows = con.execute(
        f"select region, sum(exclusive_ns), count(*) from read_parquet('{events}') group by 1"
    ).fetchall()
    for region, excl, n in rows:
        assert n == results[region][0].num_calls
        assert excl == pytest.approx(results[region][0].exclusive_duration * 1e9, abs=2)
    joined = con.execute(
        f"select l.label, count(*) from read_parquet('{events}') e join read_parquet('{lanes}') l "
        "using (rank, lane) group by 1 order by 1"
    ).fetchall()
    n_threads = len(results.threads.get(0, []))
    n_tasks = len(results.tasks.get(0, [])) if hasattr(results, "tasks") else 0
    assert (
        con.execute(f"select count(*) from read_parquet('{lanes}')").fetchone()[0]
        == n_threads + n_tasks
    )
    if which == "threaded":
        assert dict(joined) == {
            "MainThread": 2,
            **{f"worker-{i}": 1 + N_STEPS for i in range(N_WORKERS)},
        }
        # untracked ids never appear: every call has a thread
        assert con.execute(f"select min(thread) from read_parquet('{events}')").fetchone()[0] >= 0
    else:
        assert dict(joined)["Task-2 (fetch) on MainThread"] == 2
        awaited = con.execute(
            f"select sum(await_ns) from read_parquet('{events}') where depth = 0 and task >= 0"
        ).fetchone()[0]
        assert awaited > 0


def test_common_rules(threaded, tmp_path):
    with pytest.raises(ValueError, match="No profiling data provided."):
        sp.export_folded([], tmp_path / "x")
    with pytest.raises(ValueError, match="Invalid rank requested: 3"):
        sp.export_timeline_svg(threaded, tmp_path / "x", ranks=3)
    with pytest.raises(ValueError, match="No regions matched the selected filters."):
        sp.export_parquet(threaded, tmp_path / "x", include="nothing-like-this")
    # include: only the workers' regions; their time stays theirs
    (path,) = sp.export_folded(
        threaded, tmp_path / "f.txt", include=["work", "step"], verbose=False
    )
    assert path.name == "f.txt"
    assert {s[0] for s, _ in _folded_lines(path)} == {f"worker-{i}" for i in range(N_WORKERS)}
    # several runs: label slug in the name; verbose prints one line per file
    other = sp.read_h5(ASYNC_H5)
    written = sp.export_timeline_svg([threaded, other], tmp_path / "many", verbose=False)
    assert [p.name for p in written] == [
        f"many_{threaded.display_label}.timeline.svg",
        "many_async.timeline.svg",
    ]
    written = sp.export_flamegraph_svg([threaded, other], tmp_path / "fl.svg", verbose=False)
    assert [p.name for p in written] == [f"fl_{threaded.display_label}.svg", "fl_async.svg"]


def test_verbose_prints_each_file(tasks, tmp_path, capsys):
    written = sp.export_parquet(tasks, tmp_path / "p")
    out = capsys.readouterr().out
    for p in written:
        assert f"Wrote {p}" in out


MAX_PX = 32767  # browsers, rsvg and cairo refuse larger SVG images


def _height(svg: str) -> float:
    return float(re.search(r'<svg [^>]*height="([\d.]+)"', svg).group(1))


def _tasks(n: int = 20000) -> ProfilingResults:
    k = np.arange(n, dtype=I64)
    s = k * 100
    rows = list(zip(s, s + 50_000 + (k % 7) * 1000, np.zeros(n, dtype=I64), k))
    return _results({"fetch": rows}, "tasks")


# A 3,000-deep recursion: 32 levels by default (not a 51,158 px tall drawing), the 2,968
# deeper calls one marker, named in the caption; max_depth=0 draws every level, lower,
# within 32,767 px.
def test_timeline_of_a_deep_recursion_draws_32_levels_and_marks_the_deeper_calls(tmp_path):
    (p,) = sp.export_timeline_svg(_deep_recursion(), tmp_path / "d.svg", verbose=False)
    svg = _svg(p)
    assert _height(svg) < 1000
    assert svg.count("<g><title>rec\n") == 32
    assert _caption(svg) == [
        "2,968 call(s) deeper than 32 levels drawn as dark markers under their callers "
        "(--max-depth / max_depth=, 0: all)"
    ]
    (p,) = sp.export_timeline_svg(_deep_recursion(), tmp_path / "a.svg", max_depth=0, verbose=False)
    svg = _svg(p)
    assert 30000 < _height(svg) <= MAX_PX
    assert svg.count("<g><title>rec\n") + svg.count("<title>1 short call(s) of rec") == 3000
    (p,) = sp.export_timeline_svg(_deep_recursion(), tmp_path / "5.svg", max_depth=5, verbose=False)
    assert "2995 call(s) deeper than 5 levels not drawn (levels 6–3000)" in _svg(p)


# 1,000 threads: the 64 busiest threads and a summary row naming the 936 others (not
# 44,141 px of rows); lanes=N draws N; lanes=0 all 1,000 (27,114 px).
def test_timeline_of_1000_threads_draws_the_64_busiest_and_sums_up_the_rest(tmp_path):
    res = _threads()
    (p,) = sp.export_timeline_svg(res, tmp_path / "t.svg", verbose=False)
    svg = _svg(p)
    assert _height(svg) < 2000
    assert _lanes(svg) == [-2 - k for k in range(936, 1000)]
    assert ">+ 936 more lane(s)</text>" in svg
    assert "936 lane(s) not drawn: 2808 call(s)" in svg
    assert _caption(svg)[0].startswith("936 of 1,000 lanes not drawn, summed up in the last row")
    (p,) = sp.export_timeline_svg(res, tmp_path / "t5.svg", lanes=5, verbose=False)
    assert _lanes(_svg(p)) == [-2 - k for k in range(995, 1000)]
    (p,) = sp.export_timeline_svg(res, tmp_path / "all.svg", lanes=0, verbose=False)
    svg = _svg(p)
    assert len(_lanes(svg)) == 1000 and _height(svg) <= MAX_PX
    assert _caption(svg) == [] and "more lane(s)" not in svg


# 20k tasks: tens of KB by default (not 65 MB); lanes=0 draws the rows that fit in
# 32,767 px (10,240 at 2 px a level), a few MB, the rest in the summary row.
def test_timeline_of_20k_tasks_stays_small_and_within_the_svg_height_limit(tmp_path):
    res = _tasks()
    (p,) = sp.export_timeline_svg(res, tmp_path / "t.svg", verbose=False)
    assert p.stat().st_size < 100_000, p.stat().st_size
    svg = _svg(p)
    assert len(_lanes(svg)) == 64 and ">+ 19,936 more lane(s)</text>" in svg
    (p,) = sp.export_timeline_svg(res, tmp_path / "all.svg", lanes=0, verbose=False)
    assert p.stat().st_size < 6_000_000, p.stat().st_size
    svg = _svg(p)
    assert _height(svg) <= MAX_PX
    assert len(_lanes(svg)) == 10240 and ">+ 9,760 more lane(s)</text>" in svg
    assert "only 10,240 rows fit in 32767 px" in _caption(svg)[0]


# window=(START, END) and include/exclude: the calls overlapping the window (clipped), the
# regions selected; the caption says what is left out.
def test_timeline_window_and_region_selection(tmp_path):
    # thread 0: a [0, 1000] > b [100, 200]; thread 1: a [3000, 4000]; thread 2: a [500, 2500]
    res = _results(
        {"a": [(0, 1000, 0), (3000, 4000, 1), (500, 2500, 2)], "b": [(100, 200, 0)]}, "w"
    )
    for window in [(0.0000009, 0.000002), "0.0000009:0.000002"]:
        (p,) = sp.export_timeline_svg(res, tmp_path / "w.svg", window=window, verbose=False)
        svg = _svg(p)
        assert _lanes(svg) == [-2, -4]
        assert svg.count("<g><title>") == 2
        assert _caption(svg)[0].startswith("Window 0.0009 ms – 0.0020 ms from run start: 2 call(s)")
    (p,) = sp.export_timeline_svg(res, tmp_path / "o.svg", window=(0.0000035, None), verbose=False)
    assert _lanes(_svg(p)) == [-3]
    (p,) = sp.export_timeline_svg(res, tmp_path / "b.svg", include="b", verbose=False)
    svg = _svg(p)
    assert _lanes(svg) == [-2] and svg.count("<g><title>b\n") == 1
    assert _caption(svg)[0].startswith("Regions: 1 of 2 drawn (include/exclude)")
    (p,) = sp.export_timeline_svg(res, tmp_path / "x.svg", exclude="b", verbose=False)
    assert _svg(p).count("<g><title>") == 3
    for bad in [{"window": (2, 1)}, {"window": "x"}, {"lanes": -1}, {"max_depth": -2}]:
        with pytest.raises(ValueError):
            sp.export_timeline_svg(res, tmp_path / "bad.svg", verbose=False, **bad)
    with pytest.raises(ValueError, match="32767"):
        sp.export_timeline_svg(res, tmp_path / "bad.svg", width=40000, verbose=False)
    assert not (tmp_path / "bad.svg").exists()
