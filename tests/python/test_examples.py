"""Every script in examples/ runs, and what it records is what it says it records
(call counts, lanes, await times, the files it writes). examples/multiprocessing_workers.py is
run under every start method by test_multiprocessing.py; here once, with fork."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scope_profiler as sp
from helpers import ROOT, run_cli, unavailable

EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: object, cwd: Path, timeout: float = 120) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_threaded_pipeline_under_the_cli(tmp_path):
    out = tmp_path / "pipe.h5"
    proc = run_cli("run", "--track-threads", "-q", "-o", out, EXAMPLES / "threaded_pipeline.py")
    assert proc.returncode == 0, proc.stderr
    r = sp.read_h5(str(out))
    assert r["handle_item"][0].num_calls == 24 and r["parse"][0].num_calls == 24
    assert {t.name for t in r.threads[0]} == {"MainThread", "worker-0", "worker-1", "worker-2"}


def test_thread_pool(tmp_path):
    stdout = run_example("thread_pool.py", tmp_path / "pool.h5", cwd=tmp_path)
    r = sp.read_h5(str(tmp_path / "pool.h5"))
    assert r["job"][0].num_calls == 24 and r["checksum"][0].num_calls == 24
    summary = r.thread_summary()
    workers = [row for row in summary if row["name"].startswith("pool_")]
    assert 1 <= len(workers) <= 4
    # every job, download and checksum call ran on a pool worker: 3 calls per job
    assert sum(row["num_calls"] for row in workers) == 3 * 24
    assert "24 jobs, 24 'job' calls" in stdout


def test_asyncio_crawler_against_a_local_server(tmp_path):
    stdout = run_example("asyncio_crawler.py", tmp_path / "crawl.h5", cwd=tmp_path)
    assert stdout.startswith("crawled 13 pages")
    r = sp.read_h5(str(tmp_path / "crawl.h5"))
    fetch = r["fetch"][0]
    assert fetch.num_calls == 13 and r["parse"][0].num_calls == 13
    # one task per page, each fetch on its own task lane
    assert len(set(fetch.task_ids.tolist())) == 13
    labels = {r.lane_label(int(t)) for t in fetch.task_ids}
    assert {f"page-{p} (fetch) on MainThread" for p in range(1, 14)} == labels
    # each fetch spans the server's 20 ms delay, and waits for it suspended, not holding the
    # thread: the request is sent before the task suspends, so on a loaded machine the
    # server's delay can begin while the task still runs, and one fetch's await be shorter
    assert (fetch.durations >= 0.019).all()
    assert (fetch.await_times >= 0.005).all() and np.median(fetch.await_times) >= 0.019
    assert (fetch.durations - fetch.await_times <= fetch.durations).all()
    # the server answered on its own threads
    serve = r["serve"][0]
    assert serve.num_calls == 13 and 0 not in set(serve.thread_ids.tolist())


def test_async_fetch(tmp_path):
    stdout = run_example("async_fetch.py", cwd=tmp_path)
    r = sp.read_h5(str(tmp_path / "async_fetch.h5"))
    fetch = r["fetch"][0]
    assert fetch.num_calls == 6 and (fetch.await_times >= 0.0099).all()
    assert "first-page (fetch) on MainThread" in stdout


def test_gevent_workers(tmp_path):
    pytest.importorskip("gevent")
    stdout = run_example("gevent_workers.py", tmp_path / "gv.h5", cwd=tmp_path)
    r = sp.read_h5(str(tmp_path / "gv.h5"))
    dl = r["download"][0]
    assert dl.num_calls == 16 and r["job"][0].num_calls == 16
    assert len(set(dl.task_ids.tolist())) == 16  # a greenlet lane per job
    assert (dl.await_times >= 0.0099).all()  # switched out for its gevent.sleep
    assert "16 jobs" in stdout


def test_multiprocessing_workers_fork(tmp_path):
    run_example("multiprocessing_workers.py", "--method", "fork", "--out", tmp_path, cwd=tmp_path)
    workers = sorted(tmp_path.rglob("worker_*.h5"))
    assert workers, list(tmp_path.rglob("*"))
    proc = run_cli("summary", "--merge", *workers)
    assert proc.returncode == 0 and "merged" in proc.stdout, proc.stderr


def test_process_pool_run_is_one_result_with_a_rank_per_process(tmp_path):
    out = tmp_path / "pool_run.h5"
    proc = run_cli("run", "-o", out, EXAMPLES / "process_pool_run.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    total = sum(sum((seed * i) % 7 for i in range(20_000)) for seed in range(8))
    assert f"total {total}" in proc.stdout
    r = sp.read_h5(str(out))
    processes = r.metadata["processes"]
    assert len(processes) == r.num_ranks >= 3  # this process, 1-2 workers, the helper
    assert processes[0].endswith("process_pool_run.py")
    assert r["prepare"][0].num_calls == 1 and r["report"][0].num_calls == 1
    workers = range(1, r.num_ranks - 1)
    assert all("multiprocessing SpawnProcess" in processes[k] for k in workers)
    assert sum(r["simulate"][k].num_calls for k in workers) == 8
    assert sum(r["simulate.steps"][k].num_calls for k in workers) == 8
    assert "python -c" in processes[-1] and r["helper.format"][r.num_ranks - 1].num_calls == 1
    assert "rank 1 (pid " in proc.stdout  # the summary names the processes
    assert not list(tmp_path.glob("*.procs-*"))


def test_mpi_threads(tmp_path):
    from test_mpi import _mpi_available, mpirun

    why = _mpi_available()
    if why:
        unavailable(why)
    out = tmp_path / "mpi.h5"
    proc = mpirun(2, EXAMPLES / "mpi_threads.py", out, cwd=tmp_path)
    assert f"wrote {out}: 2 rank(s)" in proc.stdout
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert sorted(r["compute"].ranks) == [0, 1]


def test_checkpoints(tmp_path):
    stdout = run_example("checkpoints.py", tmp_path, cwd=tmp_path)
    counts = []
    for k in (1, 2, 3):
        r = sp.read_h5(str(tmp_path / f"phase{k}.h5"))
        # each checkpoint holds only its phase: 2 workers x (k + 1) steps, one phase region
        counts.append(r["step"][0].num_calls)
        assert {reg.name for reg in r.get_regions()} == {"step", f"phase-{k}"}
        assert len(r.threads[0]) == 1 + 2 * k  # the thread table carries on
    assert counts == [4, 6, 8]
    assert "checkpoint 3:" in stdout


def test_exports(tmp_path):
    stdout = run_example("exports.py", tmp_path / "run.h5", tmp_path / "out", cwd=tmp_path)
    out = tmp_path / "out"
    names = {
        "run.speedscope.json",
        "run.trace.json",
        "run.pftrace",
        "run_rank0.prof",  # export_prof names its files per rank, as 0.7.5
        "run.pb.gz",
        "run.folded",
        "run.svg",
        "run.timeline.svg",
        "run.parquet",
        "run.lanes.parquet",
        "run.html",
        "run.json",
    }
    assert {p.name for p in out.iterdir()} == names
    assert all((out / n).stat().st_size > 0 for n in names)
    assert stdout.count(" bytes  ") == len(names)
    r = sp.read_h5(str(tmp_path / "run.h5"))
    # speedscope: one profile per lane with calls (main thread, worker, two tasks)
    doc = json.loads((out / "run.speedscope.json").read_text())
    assert len(doc["profiles"]) == 4
    # Parquet: one row per call
    import pyarrow.parquet as pq

    n_calls = sum(reg[0].num_calls for reg in r.get_regions())
    assert pq.read_table(out / "run.parquet").num_rows == n_calls == 1 + 3 + 2
    assert sp.read_json(out / "run.json")["task"][0].num_calls == 2


def test_batch_cli(tmp_path):
    stdout = run_example("batch_cli.py", tmp_path, cwd=tmp_path, timeout=300)
    for n in (1, 2, 4):
        r = sp.read_h5(str(tmp_path / "runs" / f"workers_{n}.h5"))
        assert len(r.threads[0]) == 1 + n  # PIPELINE_WORKERS
        assert (tmp_path / "exports" / f"workers_{n}.timeline.svg").is_file()
    html = (tmp_path / "report.html").read_text()
    assert html.count('<section class="run">') == 3
    assert "3 file(s), merged:" in stdout
    # the example queries the Parquet exports with DuckDB
    pytest.importorskip("duckdb")
    assert stdout.count("busiest region") == 3


def test_notebook_runs():
    """examples/notebook.ipynb executes top to bottom (nbclient, a real IPython kernel) and
    shows the bundled run's numbers."""
    import re

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    texts = [o["data"]["text/plain"] for o in outputs if "data" in o]
    # the per-thread slice of "solve": one row per thread with its number of calls, as the
    # thread ids of the file say
    r = sp.read_h5(str(ROOT / "datasets" / "reference" / "threads.h5"))
    solve = r["solve"][0]
    per_thread = next(t for t in texts if "mean_ms" in t)
    for t in r.threads[0]:
        n = int((solve.thread_ids == t.index).sum())
        assert re.search(rf"{t.name}\s*┆\s*{n}\s*┆", per_thread), (t.name, n, per_thread)
    # thread_summary as a frame: a row per thread
    frame = texts[1]
    assert "region_time" in frame and all(t.name in frame for t in r.threads[0])
    assert "{'fetch': 1, 'parse': 1}" in texts  # one task's calls
    svgs = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) == 2 and all('<g class="lane"' in o["data"]["image/svg+xml"] for o in svgs)


def test_tagged_jobs(tmp_path):
    """Per-call metadata, read back from the file."""
    stdout = run_example("tagged_jobs.py", tmp_path / "jobs.h5", cwd=tmp_path)
    r = sp.read_h5(str(tmp_path / "jobs.h5"))
    process = r["process"][0].event_metadata
    sizes = [*range(10, 20), *range(20, 30)]
    assert [m["size"] for m in process] == sizes
    assert [m["batch"] for m in process] == [0] * 10 + [1] * 10
    assert [m["status"] for m in process] == ["error" if s % 7 == 0 else "ok" for s in sizes]
    assert [m.get("exception") for m in process if m["status"] == "error"] == ["ValueError"] * 3
    # load runs inside process: it carries the batch and the process call's size too
    assert [m["size"] for m in r["load"][0].event_metadata] == sizes
    assert "20 process calls, 3 failed:" in stdout
    assert "slowest: {'batch': " in stdout  # which one depends on the machine


def test_scaling_study_builds_a_dataset_on_dask_and_queries_it(tmp_path):
    try:
        import distributed  # noqa: F401
        import polars as pl
    except ImportError:
        unavailable("dask[distributed] and polars are needed (tests/run_all.sh installs them)")
    out = run_example("scaling_study.py", tmp_path / "study", "--dask", cwd=tmp_path)
    assert "converted on 2 Dask workers" in out
    assert "3 runs" in out
    ms = {}
    for line in out.splitlines():
        if line.startswith("job with "):
            workers, value = line[len("job with ") :].split(" worker(s): ")
            ms[int(workers)] = float(value.removesuffix(" ms"))
    assert sorted(ms) == [1, 2, 4]
    # 24 items of 2 ms of waiting each: one worker waits them one after the other
    assert ms[1] >= 48 and ms[4] < ms[1], ms
    r = sp.scan(tmp_path / "study" / "study")
    handle = r.calls.filter(pl.col("region") == "handle").group_by("run").len().collect()
    assert handle["len"].to_list() == [24, 24, 24]


def test_compare_versions(tmp_path):
    """Two versions, three runs each: the insertion sort replaced by sorted() is found faster;
    nothing regresses (version 2 only does less work; on a busy machine its sleeps may even
    wake sooner, so the sleep's own verdict is not asserted)."""
    stdout = run_example("compare_versions.py", tmp_path / "cmp", cwd=tmp_path)
    c = sp.compare(tmp_path / "cmp" / "v1", tmp_path / "cmp" / "v2")
    rows = {r["name"]: r for r in c.rows}
    assert rows["order"]["verdict"] == "faster" and rows["order"]["ci_high"] < -0.5, rows["order"]
    assert c.regressions(10) == [], c.rows
    assert rows["load"]["base_calls"] == rows["load"]["new_calls"] == 20
    assert len(c.base["runs"]) == len(c.new["runs"]) == 3
    assert (tmp_path / "cmp" / "diff.html").stat().st_size > 0
    assert " order " in stdout and "faster" in stdout and "regressions above 10 %:" in stdout
