"""MPI: rank detection, output_mode, and real 4-rank jobs (Open MPI + mpi4py).

The mpirun tests need `mpirun` and `mpi4py` (tests/run_all.sh installs Debian's
openmpi-bin/libopenmpi-dev and mpi4py from PyPI); without them they skip with the reason
(under CI=true they fail).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import ROOT, reference_read, unavailable
from scope_profiler import _mpi

NP = 4
MPI_TIMEOUT = 90


def _mpi_available() -> str | None:
    """Why mpirun tests cannot run here, or None."""
    if shutil.which("mpirun") is None:
        return "mpirun not found (install openmpi-bin; tests/run_all.sh does)"
    probe = subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True, text=True)
    if probe.returncode != 0:
        return "mpi4py not importable (pip install mpi4py; tests/run_all.sh does)"
    return None


@pytest.fixture
def mpi_launcher():
    """mpirun and mpi4py are there, or `unavailable`."""
    why = _mpi_available()
    if why is not None:
        unavailable(why)


needs_mpi = pytest.mark.usefixtures("mpi_launcher")


def _clean_env(**extra) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _mpi.LAUNCHER_ENV_VARS and k != _mpi.OVERRIDE_ENV_VAR
    }
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_btl_vader_single_copy_mechanism="none",
    )  # containers without CMA
    env.update(extra)
    return env


def mpirun(np: int, *args, cwd: Path) -> subprocess.CompletedProcess:
    cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    proc = subprocess.run(
        [*cmd, sys.executable, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=MPI_TIMEOUT,
        env=_clean_env(),
    )
    assert proc.returncode == 0, f"mpirun failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


# ----------------------------------------------------------------- detection (no mpirun)
@pytest.mark.parametrize("var", _mpi.LAUNCHER_ENV_VARS)
def test_launcher_variables_mean_mpi(monkeypatch, var):
    for name in (*_mpi.LAUNCHER_ENV_VARS, _mpi.OVERRIDE_ENV_VAR):
        monkeypatch.delenv(name, raising=False)
    assert not _mpi.launched_under_mpi()
    monkeypatch.setenv(var, "0")
    assert _mpi.launched_under_mpi()
    monkeypatch.setenv(_mpi.OVERRIDE_ENV_VAR, "0")
    assert not _mpi.launched_under_mpi()
    assert _mpi.get_comm() is None


def test_override_forces_mpi_and_unknown_values_are_ignored(monkeypatch):
    for name in _mpi.LAUNCHER_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(_mpi.OVERRIDE_ENV_VAR, "yes")
    assert _mpi.launched_under_mpi()
    monkeypatch.setenv(_mpi.OVERRIDE_ENV_VAR, "maybe")
    assert not _mpi.launched_under_mpi()


def test_serial_run_never_imports_mpi4py(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        import scope_profiler as sp
        with sp.ProfileManager.session(file_path={str(tmp_path / "a.h5")!r}, track_threads=True,
                                       output_mode="parallel", verbose=False):
            with sp.profile_region("x"):
                pass
        assert sp.ProfileManager.get_config().comm is None
        assert "mpi4py" not in sys.modules, "mpi4py imported in a serial run"
        r = sp.read_h5({str(tmp_path / "a.h5")!r})
        assert r.num_ranks == 1 and r.metadata["mpi_size"] == 1 and r.metadata["num_nodes"] == 1
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_clean_env()
    )
    assert proc.returncode == 0, proc.stderr


def test_output_mode_validation():
    with pytest.raises(
        ValueError, match="output_mode must be 'auto', 'direct', or 'parallel', got 'x'"
    ):
        sp.ProfileManager().setup(output_mode="x")


# ----------------------------------------------------------------- real jobs
JOB = r"""
import json, sys, threading
import scope_profiler as sp
from scope_profiler import ProfileManager

out_dir = sys.argv[1]
report = {}

# 1. output_mode="parallel" with track_threads: the reference's RuntimeError at finalize,
#    on every rank, before any buffer is touched (the next finalize still has the calls).
m = ProfileManager()
m.setup(file_path=f"{out_dir}/parallel.h5", track_threads=True, output_mode="parallel")
with m.profile_region("kept"):
    pass
try:
    m.finalize(verbose=False)
except RuntimeError as exc:
    report["parallel_error"] = str(exc)
m.reset()

# 2. in memory (no file): rank 0 gets every rank's calls, the others an empty non-root set
m = ProfileManager()
comm = None
with m.session(output=None, track_threads=True, return_results=True, verbose=False) as s:
    comm = m.get_config().comm
    rank = comm.Get_rank()
    for i in range(rank + 1):
        with m.profile_region("per_rank"):
            pass
    t = threading.Thread(target=lambda: m.profile_region("thread_work").__enter__().__exit__(None, None, None),
                         name=f"t{rank}")
    t.start(); t.join()
r = s.results
report["rank"] = rank
report["memory"] = {
    "is_root": r.is_root, "num_ranks": r.num_ranks,
    "calls": {str(k): r["per_rank"][k].num_calls for k in r["per_rank"].ranks} if r.is_root else {},
    "threads": {str(k): [t.name for t in v] for k, v in r.threads.items()},
}
# 3. untracked "parallel" writes the same single file (no collective writer here)
m = ProfileManager()
with m.session(file_path=f"{out_dir}/untracked.h5", output_mode="parallel", verbose=False):
    with m.profile_region("solo"):
        pass
# 4. track_async: every rank's task table and task/await columns in the one file
import asyncio

async def job(i):
    with m.profile_region("step"):
        await asyncio.sleep(0.001 * (i + 1))

async def main_tasks():
    await asyncio.gather(*(job(i) for i in range(rank + 2)))

m = ProfileManager()
with m.session(file_path=f"{out_dir}/tasks.h5", track_async=True, verbose=False):
    asyncio.run(main_tasks())
if rank == 0:
    u = sp.read_h5(f"{out_dir}/untracked.h5")
    report["untracked"] = {"num_ranks": u.num_ranks, "ranks": u["solo"].ranks, "threads": len(u.threads)}
    t = sp.read_h5(f"{out_dir}/tasks.h5")
    report["tasks"] = {
        str(k): {
            "steps": t["step"][k].num_calls,
            "task_ids_known": set(int(x) for x in t["step"][k].task_ids) <= {x.index for x in t.tasks[k]},
            "job_tasks": sum(1 for x in t.tasks[k] if x.coro_name.endswith("job")),
            "await_positive": bool((t["step"][k].await_times_ns > 0).all()),
            "ranks_of_rows": sorted({x.rank for x in t.tasks[k]}),
        }
        for k in range(t.num_ranks)
    }
    with open(f"{out_dir}/report.json", "w") as f:
        json.dump(report, f)
"""


@needs_mpi
def test_mpi_modes_errors_in_memory_results_and_task_tables(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    mpirun(NP, script, tmp_path, cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["parallel_error"] == _mpi.PARALLEL_WITH_THREADS
    assert not (tmp_path / "parallel.h5").exists()
    mem = report["memory"]
    assert mem["is_root"] and mem["num_ranks"] == NP
    assert mem["calls"] == {str(k): k + 1 for k in range(NP)}
    assert sorted(mem["threads"]) == [str(k) for k in range(NP)]
    for k in range(NP):
        assert mem["threads"][str(k)] == ["MainThread", f"t{k}"]
    assert report["untracked"] == {"num_ranks": NP, "ranks": list(range(NP)), "threads": 0}
    assert report["tasks"] == {
        str(k): {
            "steps": k + 2,
            "task_ids_known": True,
            "job_tasks": k + 2,
            "await_positive": True,
            "ranks_of_rows": [k],
        }
        for k in range(NP)
    }


BLOCKING_JOB = r"""
import asyncio, json, math, sys, time
import scope_profiler as sp
from scope_profiler import ProfileManager

out_dir = sys.argv[1]
m = ProfileManager()


async def ticker():
    with m.region("tick"):
        for _ in range(40):
            await asyncio.sleep(0.002)


async def blocker():
    await asyncio.sleep(0.02)
    with m.region("hold"):
        time.sleep(0.03)


async def main():
    await asyncio.gather(*(ticker() for _ in range(3)), blocker())


with m.session(
    file_path=f"{out_dir}/blocks.h5", track_async=True, return_results=True, verbose=False
) as s:
    rank = m.get_config().comm.Get_rank()
    asyncio.run(main())


def rank_view(r, k):
    tick = r["tick"][k]
    waits = [int(x) for x in tick.ready_wait_times_ns]
    return {
        "ready_wait_ns": waits,
        "ready_wait_nan": [math.isnan(x) for x in tick.ready_wait_times],
        "await_ns": [int(x) for x in tick.await_times_ns],
        "task_ready_waits": [t["ready_wait_time"] for t in r.task_summary(k)],
        "thread_ready_wait": r.thread_summary(k)[0]["ready_wait_time"],
        "blocks": r.loop_blocks(rank=k, threshold=0.02),
    }


if rank == 0:
    memory = s.results
    report = {"is_root": memory.is_root, "memory": rank_view(memory, 1)}
    report["file"] = rank_view(sp.read_h5(f"{out_dir}/blocks.h5"), 1)
    with open(f"{out_dir}/report.json", "w") as f:
        json.dump(report, f)
"""


def _assert_rank_ready_waits_and_block(view: dict) -> None:
    """A rank's ticks were kept ready by the 30 ms hold, and the hold is its one block."""
    waits, awaits = view["ready_wait_ns"], view["await_ns"]
    assert len(waits) == 3 and not any(view["ready_wait_nan"]), view
    assert all(0 <= w <= a for w, a in zip(waits, awaits)), view
    # each ticker was due within 2 ms of the hold's start, so it waited for most of it
    assert max(waits) >= 20_000_000, view
    assert all(w is not None and w >= 0 for w in view["task_ready_waits"]), view
    assert max(view["task_ready_waits"]) >= 0.02, view
    assert view["thread_ready_wait"] is not None and view["thread_ready_wait"] >= 0.02, view
    (block,) = view["blocks"]
    assert 0.028 <= block["duration"] <= 0.060, block
    assert block["region"] == "hold" and block["delayed_tasks"] >= 1, block
    assert block["thread"] == 0 and block["task"] >= 0, block


@needs_mpi
def test_mpi_ready_waits_and_loop_blocks_of_every_rank_reach_the_file(tmp_path):
    """Rank 1's ready waits (calls, tasks, its loop's thread) and its loop block travel to
    rank 0: the one file and rank 0's merged results have them."""
    script = tmp_path / "job.py"
    script.write_text(BLOCKING_JOB)
    mpirun(2, script, tmp_path, cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["is_root"]
    for where in ("memory", "file"):
        _assert_rank_ready_waits_and_block(report[where])
    assert report["memory"] == report["file"]


@needs_mpi
def test_mpi_threads_example_one_file_with_every_rank(tmp_path):
    out = tmp_path / "mpi_threads.h5"
    proc = mpirun(NP, ROOT / "examples" / "mpi_threads.py", out, cwd=tmp_path)
    assert f"wrote {out}: {NP} rank(s)" in proc.stdout
    assert not list(tmp_path.glob(".*.tmp")), "temporary files left behind"

    r = sp.read_h5(out)
    assert r.num_ranks == NP
    assert r.metadata["mpi_size"] == NP and r.metadata["num_nodes"] == 1
    assert sorted(r.threads) == list(range(NP)) and sorted(r.tasks) == []
    for rank in range(NP):
        names = [t.name for t in r.threads[rank]]
        assert names[0] == "MainThread"
        assert sorted(names[1:]) == [f"rank{rank}-w{k}" for k in range(3)]
        assert all(t.rank == rank for t in r.threads[rank])
        indices = {t.index for t in r.threads[rank]}
        for name in ("worker", "item", "compute", "scope_profiler.session"):
            region = r[name][rank]
            assert set(region.threads) <= indices, (name, rank)
        assert r["item"][rank].num_calls == 3 * 20 and r["compute"][rank].num_calls == 60
        assert r["worker"][rank].threads == sorted(indices - {0})
        rows = r.thread_summary(rank)
        assert sum(row["num_calls"] for row in rows) == sum(
            r[n][rank].num_calls for n in r.region_names if rank in r[n].ranks
        )
        worker = r["worker"][rank]
        assert worker.exclusive_duration < worker.inclusive_duration
    assert r["item"].num_calls == NP * 60

    # per-rank speedscope profiles
    paths = sp.export_speedscope(
        r, tmp_path / "job.speedscope.json", ranks=list(range(NP)), verbose=False
    )
    doc = json.loads(Path(paths[0]).read_text())
    assert [p["name"] for p in doc["profiles"]] == [
        f"rank {k} - {name}"
        for k in range(NP)
        for name in ["MainThread", *(f"rank{k}-w{w}" for w in range(3))]
    ]

    # the reference reads the same file: four ranks, each with its own thread table
    ref = reference_read(out)
    assert ref["num_ranks"] == NP
    assert sorted(ref["threads"]) == [str(k) for k in range(NP)]
    for rank in range(NP):
        assert [t["name"] for t in ref["threads"][str(rank)]] == [t.name for t in r.threads[rank]]
        got = ref["regions"][f"item@{rank}"]
        assert got["num_calls"] == 60
        assert got["durations_ns"] == [int(x) for x in r["item"][rank].durations_ns]
        assert got["thread_ids"] == [int(x) for x in r["item"][rank].thread_ids]


@needs_mpi
def test_run_under_mpirun_prints_and_draws_once_from_rank_0(tmp_path):
    """`mpirun -np N scope-profiler run`: rank 0 writes every rank's calls, prints the
    summary and writes the flame graph once; the other ranks print nothing of the run."""
    script = tmp_path / "job.py"
    script.write_text(
        "from mpi4py import MPI\nimport scope_profiler as sp\n"
        "with sp.region('work'):\n    MPI.COMM_WORLD.Barrier()\n"
    )
    out = tmp_path / "job.h5"
    proc = mpirun(NP, "-m", "scope_profiler", "run", "-o", out, script, cwd=tmp_path)
    assert proc.stdout.count(f"{out}: 2 region(s), {2 * NP} call(s), {NP} rank(s)") == 1, (
        proc.stdout
    )
    assert proc.stdout.count(f"wrote {out}") == 1, proc.stdout
    assert sp.read_h5(out)["work"].num_calls == NP
    assert (tmp_path / "job.flamegraph.svg").read_text().count("<svg") >= 1


@needs_mpi
def test_single_process_forced_mpi(tmp_path):
    """SCOPE_PROFILER_MPI=1 without a launcher: a one-rank MPI job (singleton init)."""
    code = textwrap.dedent(f"""
        import scope_profiler as sp
        with sp.ProfileManager.session(file_path={str(tmp_path / "one.h5")!r}, track_threads=True,
                                       return_results=True, verbose=False) as s:
            assert sp.ProfileManager.get_config().comm is not None
            with sp.profile_region("x"):
                pass
        r = s.results
        assert r.is_root and r.num_ranks == 1 and r["x"][0].num_calls == 1
        assert sp.read_h5({str(tmp_path / "one.h5")!r}).threads[0][0].name == "MainThread"
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=_clean_env(SCOPE_PROFILER_MPI="1"),
    )
    assert proc.returncode == 0, proc.stderr


# A failed write under MPI keeps every rank's calls: no rank retires its buffers before
# rank 0 has written the file, so the retry writes the whole run.
@needs_mpi
def test_a_failed_mpi_write_keeps_every_ranks_calls(tmp_path):
    target = tmp_path / "missing" / "run.h5"
    target.parent.mkdir()  # setup() refuses a path it cannot write: it breaks after setup()
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, scope_profiler as sp
            from mpi4py import MPI
            comm = MPI.COMM_WORLD
            sp.ProfileManager.setup(file_path={str(target)!r})
            comm.Barrier()
            if comm.Get_rank() == 0:
                os.rmdir({str(target.parent)!r})
            comm.Barrier()
            for _ in range(3 + comm.Get_rank()):
                with sp.profile_region("work"):
                    pass
            try:
                sp.ProfileManager.finalize(verbose=False)
                raise SystemExit("the write should have failed")
            except (FileNotFoundError, RuntimeError) as e:
                kind = type(e).__name__
            assert kind == ("FileNotFoundError" if comm.Get_rank() == 0 else "RuntimeError"), kind
            assert sp.ProfileManager.last_results()["work"][0].num_calls == 3 + comm.Get_rank()
            if comm.Get_rank() == 0:
                os.makedirs({str(target.parent)!r})
            comm.Barrier()
            sp.ProfileManager.finalize(verbose=False)  # the retry writes every call
            """
        )
    )
    mpirun(2, script, cwd=tmp_path)
    r = sp.read_h5(str(target))
    assert (r.num_ranks, r["work"][0].num_calls, r["work"][1].num_calls) == (2, 3, 4)
    # call ids are per rank, given again from the first id of the failed finalize
    assert (r["work"][0].call_ids.tolist(), r["work"][1].call_ids.tolist()) == (
        [0, 1, 2],
        [0, 1, 2, 3],
    )


# Under `mpirun` without mpi4py every rank runs as a serial run and writes the same file (one
# rank's calls survive): each rank is warned, at its setup() line.
NO_MPI4PY_SCRIPT = """
import sys
sys.modules["mpi4py"] = None  # as if mpi4py were not installed
import scope_profiler as sp
sp.setup(file_path=sys.argv[1])
with sp.region("x"):
    pass
sp.finalize(verbose=False)
"""


def test_an_mpi_rank_without_mpi4py_is_warned_at_its_setup_line(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(NO_MPI4PY_SCRIPT)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMPI_", "PMI", "SCOPE_PROFILER_MPI"))
    }
    ranked = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "a.h5")],
        env={**env, "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"},
        capture_output=True,
        text=True,
    )
    assert ranked.returncode == 0, ranked.stderr
    assert f"{script}:5: RuntimeWarning: this process looks like an MPI rank" in ranked.stderr
    assert "every rank writes the same output file" in ranked.stderr
    assert sp.read_h5(str(tmp_path / "a.h5"))["x"][0].num_calls == 1  # still recorded
    plain = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "b.h5")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
