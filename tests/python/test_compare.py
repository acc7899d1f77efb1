"""`scope-profiler diff` and `scope_profiler.compare()`: pairs of runs with known changes are
found, with intervals around them, an A/A pair comes out unchanged, for files, directories
(groups of repeated runs) and results; the exit codes, the JSON, the HTML page in Chromium.

The program sleeps (so its times hold on a loaded machine): per step, `slow` 30 ms (39 ms in
the new version: +30 %), `fast` 30 ms (18 ms: -40 %), `same` 15 ms in both. Every run is
recorded at the same time as the others, so that all see the same load."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import ROOT, run_cli

PROGRAM = """
import sys, time
import scope_profiler as sp
out, slow, fast, same, n = sys.argv[1], *map(float, sys.argv[2:5]), int(sys.argv[5])
with sp.session(file_path=out, verbose=False):
    for _ in range(n):
        with sp.region("step"):
            with sp.region("slow"):
                time.sleep(slow / 1000)
            with sp.region("fast"):
                time.sleep(fast / 1000)
            with sp.region("same"):
                time.sleep(same / 1000)
"""
STEPS = 30
RUNS = 5
BASE = (30, 30, 15)
NEW = (39, 18, 15)
DIFF_CHECK = ROOT / "tests" / "browser" / "diff_check.cjs"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """base/run{1..5}.h5 and new/run{1..5}.h5, all recorded at once (sleeping, they hardly
    compete for the CPU). Five runs of 30 steps: one call or one run that the machine stalls
    for tens of ms (it happens under load) widens an interval without hiding a 30 % change."""
    root = tmp_path_factory.mktemp("compare")
    script = root / "program.py"
    script.write_text(PROGRAM)
    procs = []
    for side, ms in (("base", BASE), ("new", NEW)):
        (root / side).mkdir()
        for k in range(1, RUNS + 1):
            out = root / side / f"run{k}.h5"
            args = [sys.executable, str(script), str(out), *map(str, ms), str(STEPS)]
            procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    return root


def diff_json(*args: object) -> dict:
    proc = run_cli("diff", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def rows_by_name(doc: dict) -> dict[str, dict]:
    return {r["name"]: r for r in doc["regions"]}


def check_known_changes(rows: dict[str, dict]) -> None:
    """slow is slower by about 30 %, fast faster by about 40 %, same unchanged; the times are
    the sleeps' (at least), per run."""
    slow, fast, same = rows["slow"], rows["fast"], rows["same"]
    # the sleeps' own overshoot (up to several ms under load, added to both sides) pulls the
    # change towards 0: +30 % of the sleep is +20 % to +30 % of the call, -40 % is -30 % to -40 %
    assert slow["verdict"] == "slower", slow
    assert 0.05 < slow["ci_low"] < slow["change"] < slow["ci_high"] < 0.6, slow
    assert 0.15 < slow["change"] < 0.4 and slow["ci_low"] < 0.3 and slow["ci_high"] > 0.2, slow
    assert fast["verdict"] == "faster", fast
    assert -0.6 < fast["ci_low"] < fast["change"] < fast["ci_high"] < -0.05, fast
    assert -0.45 < fast["change"] < -0.25 and fast["ci_low"] < -0.3 and fast["ci_high"] > -0.4, fast
    assert same["verdict"] == "unchanged", same
    for r in (slow, fast, same):
        assert r["base_calls"] == r["new_calls"] == STEPS
    assert slow["base_time"] >= STEPS * 0.030 and slow["new_time"] >= STEPS * 0.039
    assert fast["new_time"] >= STEPS * 0.018


def test_files_known_changes_are_found(runs):
    doc = diff_json(runs / "base" / "run1.h5", runs / "new" / "run1.h5")
    assert doc["base"]["runs"] == [str(runs / "base" / "run1.h5")]
    rows = rows_by_name(doc)
    check_known_changes(rows)
    # one call per run: its noise cannot be estimated, so it is not declared changed
    session = rows["scope_profiler.session"]
    assert session["verdict"] == "unchanged" and session["ci_low"] is None, session
    assert session["note"].startswith("too few calls")
    # sorted by the size of the change of time per run
    deltas = [abs(r["new_time"] - r["base_time"]) for r in doc["regions"]]
    assert deltas == sorted(deltas, reverse=True)
    assert {"name", "base_calls", "new_calls", "base_time", "new_time", "change"} <= set(
        doc["regions"][0]
    )


def test_interval_from_the_calls_spread(runs):
    """The interval of one run per side, recomputed from the call durations: the variance of a
    run's total is n s² (30 calls: too few for batches), the change's log has the two sides'
    relative variances added, and the half-width is a t quantile at the row level, a little
    above the normal one (29 to 58 degrees of freedom: less than 9 % above)."""
    import math
    from statistics import NormalDist

    base, new = runs / "base" / "run1.h5", runs / "new" / "run1.h5"
    c = sp.compare(base, new)
    rel = []
    for path in (base, new):
        d = sp.read_h5(str(path))["slow"][0].durations_ns.astype(float)
        rel.append(len(d) * d.var(ddof=1) / d.sum() ** 2)
    se = math.sqrt(sum(rel))
    slow = next(r for r in c.rows if r["name"] == "slow")
    log = math.log1p(slow["change"])
    low, high = math.log1p(slow["ci_low"]), math.log1p(slow["ci_high"])
    assert high - log == pytest.approx(log - low, rel=1e-9)  # symmetric on the log scale
    z = NormalDist().inv_cdf(0.5 + c.row_level / 2)
    assert c.row_level == pytest.approx(1 - 0.05 / 4)  # fast, slow, same, step
    assert z < (high - log) / se < 1.09 * z, ((high - log) / se, z)


def test_a_a_pair_is_unchanged_everywhere(runs):
    for pair in (("run1.h5", "run2.h5"), ("run2.h5", "run3.h5")):
        doc = diff_json(*(runs / "base" / f for f in pair))
        verdicts = {r["name"]: r["verdict"] for r in doc["regions"]}
        assert set(verdicts.values()) == {"unchanged"}, doc["regions"]
        proc = run_cli("diff", *(runs / "base" / f for f in pair), "--fail-on-regression", "0")
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_directories_are_groups_of_runs(runs):
    doc = diff_json(runs / "base", runs / "new")
    assert len(doc["base"]["runs"]) == len(doc["new"]["runs"]) == RUNS
    rows = rows_by_name(doc)
    check_known_changes(rows)
    # one call per run, several runs: the spread between runs is its noise
    session = rows["scope_profiler.session"]
    assert session["ci_low"] is not None and session["verdict"] in ("faster", "unchanged")
    # A/A groups: the base runs against themselves in another order
    a_a = diff_json(runs / "base", runs / "base" / "run2.h5")
    assert {r["verdict"] for r in a_a["regions"]} == {"unchanged"}, a_a["regions"]


def test_text_table(runs):
    proc = run_cli("diff", runs / "base" / "run1.h5", runs / "new" / "run1.h5")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"base: {runs / 'base' / 'run1.h5'} (1 run)"
    header = next(line for line in lines if line.strip().startswith("region"))
    for column in ("base calls", "new calls", "base time", "new time", "change", "95% interval"):
        assert column in header
    slow = next(line for line in lines if line.strip().startswith("slow "))
    # about 1 s per run: "9xx ms" or "1.xx s"; a positive change and interval
    assert re.search(r" \d[\d.]* m?s ", slow) and "slower" in slow and " +" in slow and "[+" in slow
    fast = next(line for line in lines if line.strip().startswith("fast "))
    assert "faster" in fast and " -" in fast and "[-" in fast
    assert "* too few calls to estimate the noise" in proc.stdout


def test_fail_on_regression_exit_codes(runs):
    base, new = runs / "base" / "run1.h5", runs / "new" / "run1.h5"
    proc = run_cli("diff", base, new, "--fail-on-regression", "5")
    assert proc.returncode == 1, proc.stderr
    named = [line for line in proc.stderr.splitlines() if line.startswith("regression: ")]
    assert len(named) == 1 and named[0].startswith("regression: slow +"), proc.stderr
    assert run_cli("diff", base, new, "--fail-on-regression", "90").returncode == 0
    # the other way round, fast got slower
    proc = run_cli("diff", new, base, "--fail-on-regression", "10")
    assert proc.returncode == 1 and "regression: fast +" in proc.stderr, proc.stderr


def test_usage_errors_exit_2_naming_the_file(runs, tmp_path):
    base = runs / "base" / "run1.h5"
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("hello")
    cases = [
        ((tmp_path / "missing.h5", base), "missing.h5"),
        ((base, tmp_path / "empty"), "empty holds no run file"),
        ((base, tmp_path / "notes.txt"), "notes.txt"),
        ((base, base, "--threshold", "-1"), "'-1' is not a percentage"),
        ((base, base, "-o", tmp_path / "x.txt"), "x.txt"),
        ((base, base, "--by", "thread"), "thread"),
    ]
    for args, named in cases:
        proc = run_cli("diff", *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        if "--by" not in args and "--threshold" not in args:
            assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_by_path(runs):
    doc = diff_json(runs / "base" / "run1.h5", runs / "new" / "run1.h5", "--by", "path")
    rows = {tuple(r["path"][-2:]): r for r in doc["regions"]}
    assert rows[("step", "slow")]["verdict"] == "slower"
    assert rows[("step", "fast")]["verdict"] == "faster"
    assert rows[("step", "slow")]["name"].endswith("step;slow")


def test_compare_api(runs):
    base, new = runs / "base", runs / "new"
    for b, n in (
        (base / "run1.h5", new / "run1.h5"),
        (str(base / "run1.h5"), sp.read_h5(str(new / "run1.h5"))),
        (base, [new / f"run{k}.h5" for k in range(1, RUNS + 1)]),
        ([sp.read_h5(str(p)) for p in sorted(base.glob("*.h5"))], new),
    ):
        c = sp.compare(b, n)
        rows = {r["name"]: r for r in c.rows}
        check_known_changes(rows)
        assert [r["name"] for r in c.regressions(5)] == ["slow"]
        assert c.regressions(95) == []
    # the same numbers as the command line
    c = sp.compare(base / "run1.h5", new / "run1.h5")
    cli = diff_json(base / "run1.h5", new / "run1.h5")
    assert c.rows == cli["regions"]
    assert json.loads(c.to_json())["regions"] == cli["regions"]
    assert c.base["runs"] == [str(base / "run1.h5")] and c.by == "region" and c.threshold == 0.05
    # A/A through the API
    a_a = sp.compare(base / "run1.h5", base / "run3.h5", threshold=0.05)
    assert {r["verdict"] for r in a_a.rows} == {"unchanged"}
    frame = c.to_polars()
    assert frame.columns[:6] == [
        "name",
        "base_calls",
        "new_calls",
        "base_time",
        "new_time",
        "change",
    ]
    assert frame.filter(frame["name"] == "slow")["verdict"].to_list() == ["slower"]
    pdf = c.to_pandas()
    assert list(pdf["name"]) == [r["name"] for r in c.rows]
    by_path = sp.compare(base / "run1.h5", new / "run1.h5", by="path")
    assert any(r["path"][-1] == "slow" and r["verdict"] == "slower" for r in by_path.rows)
    with pytest.raises(ValueError, match="by must be"):
        sp.compare(base, new, by="thread")
    with pytest.raises(ValueError, match="threshold"):
        sp.compare(base, new, threshold=-0.1)
    with pytest.raises(FileNotFoundError):
        sp.compare(base / "nope.h5", new)
    with pytest.raises(TypeError, match="paths"):
        sp.compare(3, new)  # type: ignore[arg-type]
    # results read without their calls: by region from the stored statistics (count, total,
    # spread); by call path they are needed
    summary_only = sp.read_h5_summary(str(base / "run1.h5"))
    rows = {r["name"]: r for r in sp.compare(summary_only, new / "run1.h5").rows}
    full = {r["name"]: r for r in sp.compare(base / "run1.h5", new / "run1.h5").rows}
    for name in ("slow", "fast", "same"):
        assert rows[name]["change"] == pytest.approx(full[name]["change"], rel=1e-12)
        assert rows[name]["verdict"] == full[name]["verdict"]
    with pytest.raises(sp.EventDataUnavailableError, match="read_h5_summary"):
        sp.compare(summary_only, new, by="path")


def test_notebook_view_is_bounded(tmp_path):
    path = tmp_path / "many.h5"
    sp.reset()
    try:
        with sp.session(file_path=str(path), verbose=False):
            for k in range(300):
                with sp.region(f"region_{k:03d}_" + "x" * 150):
                    pass
    finally:
        sp.reset()
    c = sp.compare(path, path)
    html = c._repr_html_()
    assert len(c.rows) == 301 and len(html) < 100_000
    assert html.count("<tr class=") == 50 and "… and 251 more rows" in html
    assert "Comparison" in repr(c) and len(c) == 301


def browser_check(page: Path) -> str:
    node_dir = os.environ.get("CLIENTS_NODE_DIR")
    chromium = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")
    if (
        shutil.which("node") is None
        or not node_dir
        or not (Path(node_dir) / "node_modules" / "playwright-core").exists()
        or not Path(chromium).exists()
    ):
        pytest.skip(
            "SKIP diff page browser check: needs node, chromium and npm playwright-core in "
            "CLIENTS_NODE_DIR (tests/run_all.sh sets them up)"
        )
    proc = subprocess.run(
        ["node", str(DIFF_CHECK), str(page)], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.rstrip().endswith("OK"), proc.stdout
    return proc.stdout


def test_html_page_in_chromium(runs, tmp_path):
    page = tmp_path / "diff.html"
    proc = run_cli("diff", runs / "base", runs / "new", "-o", page)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {page}" in proc.stdout
    html = page.read_text()
    assert "<script src" not in html and "<link" not in html
    out = browser_check(page)
    # the browser saw the rows and their verdicts, and the frames coloured by them
    assert "slow=slower" in out and "fast=faster" in out and "same=unchanged" in out, out
    frames = next(line for line in out.splitlines() if line.startswith("frames "))
    assert "slower: " in frames and "faster: " in frames and "zoomed " in out, out
