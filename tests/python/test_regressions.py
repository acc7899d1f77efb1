"""Regression tests, each headed by where the problem was reported (an issue of this
project, or a peer tool's public bug report). Every bug fixed gets one here (Rust-side ones
in `*/tests/regression.rs`), so a report can be traced to the test that keeps it fixed."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq
import scope_profiler as sp
from helpers import DATASETS, run_cli
from scope_profiler import MPIRegion, ProfilingResults, Region

ASYNC = DATASETS / "reference" / "async.h5"
THREADS = DATASETS / "reference" / "threads.h5"


def _one_region_run(name: str, metadata: dict) -> ProfilingResults:
    region = Region(np.array([0, 10], dtype=np.int64), np.array([5, 30], dtype=np.int64))
    return ProfilingResults({name: MPIRegion(name, {0: region})}, metadata=metadata)


# issue 10: "two merges with different metadata rules (`merge._stacked` unions metadata,
# `analysis::stack_runs`/`cli merge` keep the first run's)" - now one merge, one rule.
def test_issue_10_one_metadata_rule_for_every_merge(tmp_path):
    a = _one_region_run("x", {"label": "A", "only_a": 1, "mpi_size": 1})
    b = _one_region_run("x", {"label": "B", "only_b": 2, "mpi_size": 1})
    stacked = sp.merge_results(a, b)
    assert stacked.num_ranks == 2
    md = stacked.metadata
    assert (md["label"], md["only_a"], md["only_b"], md["mpi_size"]) == ("A", 1, 2, 2)
    assert list(md)[:3] == ["label", "only_a", "mpi_size"]  # first part's keys, in order
    united = sp.merge_results(a, _one_region_run("y", {"label": "C", "only_c": 3}))
    assert (united.metadata["label"], united.metadata["only_c"]) == ("A", 3)
    # the CLI's merge is the same function: the files' keys are all in the merged file
    paths = []
    for k, r in enumerate((a, b)):
        paths.append(tmp_path / f"p{k}.h5")
        r._native_run().write_h5(str(paths[-1]))
    proc = run_cli("summary", "--merge", *paths)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("2 file(s), merged: 1 region(s), 4 call(s), 2 rank(s)")


# issue 10: "`ProfilingResults.print_summary` (102 lines) re-implements
# `cli/src/report.rs::summary_text`" - both now print the one report.
def test_issue_10_print_summary_is_the_cli_report():
    out = io.StringIO()
    sp.read_h5(THREADS).print_summary(stream=out, suppress_notes=True)
    cli = run_cli("summary", THREADS)
    assert cli.returncode == 0, cli.stderr
    ours = out.getvalue().splitlines()
    theirs = cli.stdout.splitlines()
    assert ours[1:] == theirs[1:]  # the same tables; only the title line names the file differently
    assert "rank 0: regions" in ours and "rank 0: threads" in ours


# issue 10: "lane labels three ways" - results, exports and the Parquet lanes table now take
# them from one function.
def test_issue_10_one_lane_label(tmp_path):
    results = sp.read_h5(ASYNC)
    _, lanes_path = sp.export_parquet(results, tmp_path / "a.parquet", verbose=False)
    lanes = pq.read_table(lanes_path).to_pydict()
    assert lanes["label"], "the async run has lanes"
    for rank, lane, label in zip(lanes["rank"], lanes["lane"], lanes["label"]):
        assert label == results.lane_label(lane, rank)


# issue 11: "`import scope_profiler.__main__` must not run the CLI (guard it; keep `main`)".
def test_issue_11_importing_main_runs_nothing():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "import scope_profiler.__main__ as m; print(callable(m.main))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert "usage" not in (proc.stdout + proc.stderr).lower()
    from scope_profiler.profile_manager import ProfileManager

    assert ProfileManager is sp.ProfileManager
