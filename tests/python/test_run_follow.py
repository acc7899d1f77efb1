"""`scope-profiler run` on ordinary scripts: worker processes the script starts
(`multiprocessing` under every start method, `concurrent.futures.ProcessPoolExecutor`,
`subprocess` running Python) are profiled too, each into its own file, and merged into one
result at the end, one rank block per process; `--no-follow` turns it off. Exit codes as
Python's. (`scope_profiler._follow`, `finalize/src/followed.rs`, docs/processes.md)"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap

import pytest
import scope_profiler as sp
from helpers import run_cli

SESSION = "scope_profiler.session"

#: A script starting one process of each kind, each recording its own regions (a distinct
#: count per process), and ending with its own exit code.
FAMILY = textwrap.dedent(
    """
    import multiprocessing as mp
    import subprocess
    import sys
    from concurrent.futures import ProcessPoolExecutor

    import scope_profiler as sp

    CHILD = "import scope_profiler as sp\\nfor _ in range({n}):\\n    with sp.profile_region('{name}'): pass"


    @sp.profile
    def work(n):
        for _ in range(n):
            with sp.profile_region("work.step"):
                pass


    def pool_task(x):
        with sp.profile_region("pool.task"):
            if x == 0:  # a worker's own child process: followed too
                subprocess.run([sys.executable, "-c", CHILD.format(n=2, name="nested.child")], check=True)
            return x * x


    if __name__ == "__main__":
        for _ in range(2):
            with sp.profile_region("parent.step"):
                pass
        for method, n in (("fork", 3), ("spawn", 4), ("forkserver", 5)):
            p = mp.get_context(method).Process(target=work, args=(n,))
            p.start()
            p.join()
            assert p.exitcode == 0, (method, p.exitcode)
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            assert sum(pool.map(pool_task, range(6))) == 55
        subprocess.run([sys.executable, "-c", CHILD.format(n=7, name="child.py")], check=True)
        subprocess.run(["/bin/sh", "-c", "exit 0"], check=True)  # not Python: unaffected
        sys.exit(5)
    """
)


def counts(results, rank: int) -> dict[str, int]:
    return {
        name: results[name][rank].num_calls
        for name in results.region_names
        if rank in results[name].ranks and results[name][rank].num_calls
    }


def test_every_kind_of_child_process_is_one_rank_block_with_its_own_calls(tmp_path):
    script = tmp_path / "family.py"
    script.write_text(FAMILY)
    out = tmp_path / "run.h5"
    proc = run_cli("run", "-o", out, script, cwd=tmp_path)
    # the script's own exit code, as `python family.py` gives
    assert proc.returncode == 5, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 7
    assert [counts(r, rank) for rank in range(7)] == [
        {SESSION: 1, "parent.step": 2},
        {SESSION: 1, "work": 1, "work.step": 3},  # fork
        {SESSION: 1, "work": 1, "work.step": 4},  # spawn
        {SESSION: 1, "work": 1, "work.step": 5},  # forkserver
        {SESSION: 1, "pool.task": 6},  # the ProcessPoolExecutor's worker
        {SESSION: 1, "nested.child": 2},  # started by that worker
        {SESSION: 1, "child.py": 7},  # subprocess running python -c
    ]
    processes = r.metadata["processes"]
    assert len(processes) == 7
    pids = [int(re.match(r"pid (\d+)", p).group(1)) for p in processes]
    assert len(set(pids)) == 7
    assert processes[0] == f"pid {pids[0]}: {script}"
    assert re.fullmatch(
        rf"pid {pids[1]} \(child of {pids[0]}\): multiprocessing ForkProcess-1", processes[1]
    )
    assert re.fullmatch(
        rf"pid {pids[2]} \(child of {pids[0]}\): multiprocessing SpawnProcess-2", processes[2]
    )
    # a forkserver child's parent is the forkserver
    assert re.fullmatch(
        rf"pid {pids[3]} \(child of \d+\): multiprocessing ForkServerProcess-3", processes[3]
    )
    assert re.fullmatch(
        rf"pid {pids[4]} \(child of {pids[0]}\): multiprocessing SpawnProcess-4", processes[4]
    )
    assert processes[5].startswith(
        f"pid {pids[5]} (child of {pids[4]}): python -c 'import scope_profiler"
    )
    assert processes[6].startswith(
        f"pid {pids[6]} (child of {pids[0]}): python -c 'import scope_profiler"
    )
    # the summary names each rank's process
    assert f"rank 4 ({processes[4]}): regions" in proc.stdout
    # the private directory is gone; the flame graph is beside the profile
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "family.py",
        "run.flamegraph.svg",
        "run.h5",
    ]


def test_no_follow_records_only_the_scripts_own_process(tmp_path):
    script = tmp_path / "family.py"
    script.write_text(FAMILY)
    out = tmp_path / "run.h5"
    proc = run_cli("run", "--no-follow", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 1
    assert counts(r, 0) == {SESSION: 1, "parent.step": 2}
    assert "processes" not in r.metadata
    # no child wrote anything anywhere (no private directory was made)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "family.py",
        "run.flamegraph.svg",
        "run.h5",
    ]


def test_a_script_without_children_is_recorded_as_before(tmp_path):
    script = tmp_path / "alone.py"
    script.write_text(
        "import os\nimport scope_profiler as sp\n"
        "with sp.profile_region('a'):\n    print(bool(os.environ.get('SCOPE_PROFILER_FOLLOW')))\n"
    )
    out = tmp_path / "alone.h5"
    proc = run_cli("run", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"  # the children would be followed
    r = sp.read_h5(str(out))
    assert (r.num_ranks, counts(r, 0)) == (1, {SESSION: 1, "a": 1})
    assert "processes" not in r.metadata  # no merge
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "alone.flamegraph.svg",
        "alone.h5",
        "alone.py",
    ]


# a killed spawn child is named by its multiprocessing name, as when it ends normally (not
# by the spawn_main command line, nor as `multiprocessing spawn child`)
@pytest.mark.parametrize(
    ("method", "victim_label", "survivor_label"),
    [
        ("fork", "multiprocessing ForkProcess-1", "ForkProcess-2"),
        ("spawn", "multiprocessing SpawnProcess-1", "SpawnProcess-2"),
    ],
)
def test_a_killed_child_is_a_warning_and_the_others_are_kept(
    tmp_path, method, victim_label, survivor_label
):
    script = tmp_path / "killed.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp, os, signal
            import scope_profiler as sp

            def victim():
                with sp.profile_region("victim"):
                    pass
                os.kill(os.getpid(), signal.SIGKILL)

            def survivor():
                for _ in range(3):
                    with sp.profile_region("survivor"):
                        pass

            if __name__ == "__main__":
                for target in (victim, survivor):
                    p = mp.get_context(METHOD).Process(target=target)
                    p.start()
                    p.join()
                    print(target.__name__, p.exitcode)
            """
        ).replace("METHOD", repr(method))
    )
    out = tmp_path / "killed.h5"
    proc = run_cli("run", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "victim -9" in proc.stdout and "survivor 0" in proc.stdout
    warned = re.search(
        rf"warning: process pid (\d+) \(child of \d+\): {victim_label} ended without "
        r"writing its profile \(killed\?\); it is left out of the result",
        proc.stderr,
    )
    assert warned, proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert [counts(r, rank) for rank in range(2)] == [{SESSION: 1}, {SESSION: 1, "survivor": 3}]
    assert survivor_label in r.metadata["processes"][1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "killed.flamegraph.svg",
        "killed.h5",
        "killed.py",
    ]


def test_a_killed_child_streaming_keeps_its_calls_up_to_its_last_flush(tmp_path):
    script = tmp_path / "streamed.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp, os, signal, time
            import scope_profiler as sp

            def victim():
                for _ in range(4):
                    with sp.profile_region("victim.step"):
                        pass
                time.sleep(0.6)  # past a flush
                os.kill(os.getpid(), signal.SIGKILL)

            if __name__ == "__main__":
                p = mp.get_context("spawn").Process(target=victim)
                p.start()
                p.join()
            """
        )
    )
    out = tmp_path / "streamed.h5"
    proc = run_cli("run", "-q", "--flush-interval", "0.1", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "note: a process was killed before it wrote its profile: 4 call(s) recovered from"
        in proc.stderr
    )
    # the note names the sidecar by its process (not by a path in the removed directory), and
    # the recovered rank is labelled as its process, not only "pid N"
    assert re.search(r"sidecar of pid \d+ \(child of \d+\): multiprocessing", proc.stderr)
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert re.fullmatch(r"pid \d+ \(child of \d+\): multiprocessing .+", r.metadata["processes"][1])
    assert counts(r, 1) == {"victim.step": 4}  # the session root was still open: not flushed
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "streamed.flamegraph.svg",
        "streamed.h5",
        "streamed.py",
    ]


def test_pool_workers_terminated_by_with_pool_write_their_calls(tmp_path):
    """`with Pool(...)` ends with Pool.terminate(): SIGTERM to every worker. A followed
    worker writes its file first, also when it is terminated while still starting (were
    SIGTERM to raise `run`'s own exception inside an after-fork hook, that worker would wait
    forever on the pool's lock)."""
    script = tmp_path / "pools.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp
            import scope_profiler as sp

            def task(x):
                with sp.profile_region("task"):
                    return x + 1

            if __name__ == "__main__":
                for method in ("fork", "spawn"):
                    with mp.get_context(method).Pool(2) as pool:
                        assert sum(pool.map(task, range(10))) == 55
            """
        )
    )
    out = tmp_path / "pools.h5"
    for _ in range(3):  # the terminate races with the workers' start: a few times
        proc = run_cli("run", "-q", "-o", out, script, cwd=tmp_path, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "warning" not in proc.stderr, proc.stderr
        r = sp.read_h5(str(out))
        workers = r.metadata["processes"][1:]
        # a worker that ran no task recorded nothing and is not a block
        assert all(re.search(r"multiprocessing (Fork|Spawn)PoolWorker-\d+$", w) for w in workers)
        per_method = {"Fork": 0, "Spawn": 0}
        for rank, w in enumerate(workers, start=1):
            per_method["Fork" if "ForkPool" in w else "Spawn"] += counts(r, rank)["task"]
        assert per_method == {"Fork": 10, "Spawn": 10}


# A multiprocessing child still running when the script ends is in the result: `run` runs
# multiprocessing's exit handler (which terminates the daemonic children and joins the
# others) before it merges the files, so each child writes its file (on SIGTERM, or at its
# end).
def test_children_still_running_at_the_end_are_ended_as_multiprocessing_ends_them(tmp_path):
    script = tmp_path / "unjoined.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp, time
            import scope_profiler as sp

            def forever(q):
                for _ in range(3):
                    with sp.profile_region("daemon_work"):
                        pass
                q.put("ready")
                time.sleep(60)  # never ends on its own

            def late():
                time.sleep(0.3)
                with sp.profile_region("late_work"):
                    pass

            def task(x):
                with sp.profile_region("task"):
                    return x

            if __name__ == "__main__":
                for method in ("fork", "spawn"):
                    q = mp.get_context(method).Queue()
                    mp.get_context(method).Process(target=forever, args=(q,), daemon=True).start()
                    assert q.get(timeout=30) == "ready"
                mp.get_context("fork").Process(target=late).start()  # not joined
                pool = mp.get_context("fork").Pool(2)  # neither closed nor terminated
                assert pool.map(task, range(4)) == [0, 1, 2, 3]
                with sp.profile_region("parent_work"):
                    pass
            """
        )
    )
    out = tmp_path / "unjoined.h5"
    proc = run_cli("run", "-q", "-o", out, script, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "left out" not in proc.stderr, proc.stderr
    r = sp.read_h5(str(out))
    assert counts(r, 0)["parent_work"] == 1
    what = {rank: c.rsplit(": ", 1)[1] for rank, c in enumerate(r.metadata["processes"])}
    by_name = {name: counts(r, rank) for rank, name in what.items() if rank}
    assert by_name["multiprocessing ForkProcess-1"] == {
        "scope_profiler.session": 1,
        "daemon_work": 3,
    }
    assert by_name["multiprocessing SpawnProcess-2"] == {
        "scope_profiler.session": 1,
        "daemon_work": 3,
    }
    assert by_name["multiprocessing ForkProcess-3"] == {"scope_profiler.session": 1, "late_work": 1}
    workers = [c for name, c in by_name.items() if "PoolWorker" in name]
    assert sum(c["task"] for c in workers) == 4


# A followed process's threads are on the run's clock: its MainThread starts when the
# process does, not at 0, and does not run to the script's end; merge_results of two such
# runs keeps one `processes` label per rank.
def test_a_child_rank_s_threads_are_on_the_run_s_clock(tmp_path):
    script = tmp_path / "later.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys, time
            import scope_profiler as sp
            with sp.profile_region("before"):
                time.sleep(0.1)
            child = "import time, scope_profiler as sp\\nwith sp.profile_region('c'): time.sleep(0.05)"
            subprocess.run([sys.executable, "-c", child], check=True)
            with sp.profile_region("after"):
                time.sleep(0.1)
            """
        )
    )
    outs = []
    for k in range(2):
        outs.append(tmp_path / f"run{k}.h5")
        proc = run_cli("run", "-q", "--track-threads", "-o", outs[k], script, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    r = sp.read_h5(str(outs[0]))
    assert r.num_ranks == 2
    parent, child = r.thread_summary(0)[0], r.thread_summary(1)[0]
    child_thread = r.threads[1][0]
    # the child started after the parent's 0.1 s region and ended before its last one
    assert 0.1 <= child_thread.start_time < parent["wall_time"] - 0.1
    assert not child_thread.alive
    assert 0.05 <= child["region_time"] <= child["wall_time"] < parent["wall_time"] - 0.15
    c = r["c"][1]
    assert child_thread.start_time <= c.start_times[0] - r.metadata["start_time_ns"] / 1e9 + 1e-3
    merged = sp.merge_results(r, sp.read_h5(str(outs[1])))
    assert merged.num_ranks == 4
    labels = merged.metadata["processes"]
    assert len(labels) == 4 and labels[:2] == r.metadata["processes"]
    assert labels[1].startswith(f"pid {labels[1].split()[1]} (child of")


# Under `run`, the warning about a call still open at the end names no line of the
# profiler's own files (`_cli.py`, `_follow.py`): it is printed plainly, as the profiler's,
# in the script's process and in a child alike.
def test_profiler_warnings_under_run_name_no_profiler_file(tmp_path):
    script = tmp_path / "leaves_open.py"
    script.write_text(
        textwrap.dedent(
            """
            import subprocess, sys, warnings
            import scope_profiler as sp
            child = "import scope_profiler as sp\\nsp.profile_region('child_open').__enter__()"
            subprocess.run([sys.executable, "-c", child], check=True)
            warnings.warn("the script's own warning")
            sp.profile_region("parent_open").__enter__()
            """
        )
    )
    proc = run_cli("run", "-q", "-o", tmp_path / "run.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "still open" in line]
    assert len(said) == 2, proc.stderr
    # the child's names the child, the script's process is plain
    child = next(line for line in said if "'child_open'" in line)
    assert re.match(r"scope-profiler \[pid \d+ \(child of \d+\): python -c .*\]: ", child), child
    parent = next(line for line in said if "'parent_open'" in line)
    assert parent.startswith("scope-profiler: RuntimeWarning: 1 call(s) still open"), parent
    for line in said:
        assert "]: RuntimeWarning: 1 call(s) still open" in line or line == parent, line
    assert "_cli.py" not in proc.stderr and "_follow.py" not in proc.stderr, proc.stderr
    # a warning of the script itself keeps its file and line
    assert f"{script}:6: UserWarning: the script's own warning" in proc.stderr, proc.stderr


# A spawn pool worker can get the pool's SIGTERM while it is still importing
# `scope_profiler._cli`. The handler needs nothing from `_cli` (an import there would raise
# ImportError, partially initialized module, and the worker would live on while the pool's
# join waits forever) and ends the process by the signal whatever happens while the file is
# written.
def test_sigterm_while_the_cli_module_is_half_imported_still_ends_the_process():
    code = textwrap.dedent(
        """
        import signal, sys, types
        from scope_profiler import _follow
        sys.modules["scope_profiler._cli"] = types.ModuleType("scope_profiler._cli")  # half imported
        _follow._terminated(signal.SIGTERM, None)
        print("survived")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, proc.stdout, proc.stderr)
    assert "survived" not in proc.stdout


# After the whole tree is SIGKILLed, `recover FILE` stacks the recordings of the processes
# the killed run followed after the recovered run, and removes their directory.
def test_recover_after_a_killed_run_keeps_its_followed_processes(tmp_path):
    script = tmp_path / "par.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp, os, signal, time
            import scope_profiler as sp

            def worker():
                for _ in range(5):
                    with sp.profile_region("worker.step"):
                        pass

            if __name__ == "__main__":
                p = mp.get_context("fork").Process(target=worker)
                p.start()
                p.join()
                for _ in range(3):
                    with sp.profile_region("parent.step"):
                        pass
                time.sleep(0.5)  # past a flush
                os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    out = tmp_path / "par.h5"
    proc = run_cli("run", "-q", "--flush-interval", "0.1", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert [p.name for p in tmp_path.glob("par.h5.procs-*")], "the run left no directory"
    proc = run_cli("recover", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ranks 1 to 1 are the processes the run followed" in proc.stdout, proc.stdout
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert counts(r, 0) == {"parent.step": 3}  # the session root was still open: not flushed
    assert counts(r, 1) == {SESSION: 1, "worker.step": 5}
    assert "ForkProcess-1" in r.metadata["processes"][1]
    assert not list(tmp_path.glob("par.h5.procs-*")), "the directory is removed once merged"


# A child of a bare `os.fork()` ends, by convention, with `os._exit()`, which runs no atexit
# handler; under `scope-profiler run` its calls are kept all the same (no "killed?" warning).
def test_run_keeps_the_calls_of_a_forked_child_that_ends_with_os_exit(tmp_path):
    script = tmp_path / "fork_exit.py"
    script.write_text(
        textwrap.dedent(
            """
            import os
            import scope_profiler as sp

            pid = os.fork()
            if pid == 0:
                for _ in range(3):
                    with sp.profile_region("child.step"):
                        pass
                os._exit(7)
            _, status = os.waitpid(pid, 0)
            print("child exit", os.waitstatus_to_exitcode(status))
            with sp.profile_region("parent.step"):
                pass
            """
        )
    )
    out = tmp_path / "fork_exit.h5"
    proc = run_cli("run", "-q", "--no-speedscope", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "child exit 7" in proc.stdout  # the status the child gave stands
    assert "without writing its profile" not in proc.stderr, proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert r["parent.step"][0].num_calls == 1
    assert r["child.step"].ranks == [1] and r["child.step"][1].num_calls == 3
    assert r.metadata["processes"][1].endswith(f"fork: {script}")


# A Python child started with `subprocess` and stopped with `Popen.terminate()` keeps its
# profile, as multiprocessing children stopped the same way do, and still dies by SIGTERM.
def test_run_keeps_the_calls_of_a_subprocess_child_stopped_by_sigterm(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(
        textwrap.dedent(
            """
            import sys, time
            import scope_profiler as sp

            for _ in range(2):
                with sp.profile_region("child.step"):
                    pass
            with sp.profile_region("child.wait"):
                print("ready", flush=True)
                time.sleep(30)
            """
        )
    )
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import subprocess, sys
            p = subprocess.Popen([sys.executable, {str(child)!r}], stdout=subprocess.PIPE, text=True)
            assert p.stdout.readline() == "ready\\n"
            p.terminate()
            print("child status", p.wait())
            """
        )
    )
    out = tmp_path / "parent.h5"
    proc = run_cli("run", "-q", "--no-speedscope", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "child status -15" in proc.stdout  # it still dies by SIGTERM
    assert "without writing its profile" not in proc.stderr, proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 2
    assert r["child.step"].ranks == [1] and r["child.step"][1].num_calls == 2
    wait = r["child.wait"][1]
    assert wait.num_calls == 1 and wait.event_metadata == ({"open_at_finalize": True},)


# Under `run --recursive`, a function of the main script is `__main__.task` in fork and spawn
# children alike (never `__mp_main__.task`, the name multiprocessing imports the main script
# under in spawn children), so its ranks line up.
def test_run_recursive_names_main_script_functions_alike_in_spawn_children(tmp_path):
    script = tmp_path / "pool.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing as mp

            def task(x):
                return x * x

            if __name__ == "__main__":
                for method in ("fork", "spawn"):
                    with mp.get_context(method).Pool(1) as pool:
                        assert sum(pool.map(task, range(4))) == 14
            """
        )
    )
    out = tmp_path / "pool.h5"
    proc = run_cli("run", "-q", "--recursive", "--no-speedscope", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = sp.read_h5(str(out))
    assert not [n for n in r.region_names if n.startswith("__mp_main__.")]
    task = r["__main__.task"]
    assert len(task.ranks) == 2 and sum(task[k].num_calls for k in task.ranks) == 8


# A spawn child is labelled `multiprocessing SpawnProcess-N` whether it ends normally, is
# killed or is recovered: the child's `.started` marker gets its name once multiprocessing
# gives it one.
SPAWN_KILLED_AND_NOT = """
import multiprocessing as mp, os, signal, time
import scope_profiler as sp

def victim():
    for _ in range(4):
        with sp.profile_region("victim.step"):
            pass
    time.sleep(0.6)  # past a flush
    os.kill(os.getpid(), signal.SIGKILL)

def survivor():
    with sp.profile_region("survivor.step"):
        pass

if __name__ == "__main__":
    for target in (victim, survivor):
        p = mp.get_context("spawn").Process(target=target)
        p.start()
        p.join()
        print(target.__name__, p.name, p.exitcode)
"""


def test_a_recovered_spawn_child_is_labelled_as_one_that_ended_normally(tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(SPAWN_KILLED_AND_NOT)
    out = tmp_path / "spawned.h5"
    proc = run_cli("run", "-q", "--flush-interval", "0.1", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["victim SpawnProcess-1 -9", "survivor SpawnProcess-2 0"]
    assert re.search(
        r"sidecar of pid \d+ \(child of \d+\): multiprocessing SpawnProcess-1\b", proc.stderr
    ), proc.stderr
    r = sp.read_h5(str(out))
    assert r.num_ranks == 3
    labels = r.metadata["processes"]
    by_region = {
        name: [rank for rank, n in r[name].num_calls_per_rank().items() if n > 0]
        for name in ("victim.step", "survivor.step")
    }
    assert [len(ranks) for ranks in by_region.values()] == [1, 1], by_region
    by_region = {name: ranks[0] for name, ranks in by_region.items()}
    pattern = r"pid \d+ \(child of \d+\): multiprocessing {}"
    assert re.fullmatch(pattern.format("SpawnProcess-1"), labels[by_region["victim.step"]])
    assert re.fullmatch(pattern.format("SpawnProcess-2"), labels[by_region["survivor.step"]])
    assert r["victim.step"][by_region["victim.step"]].num_calls == 4


# Under `run`, a followed process's profiler warnings name the process ('1 call(s) still
# open ... on thread #0' would not say which of ten processes).
CHILD_LEAVES_A_CALL_OPEN = """
import multiprocessing as mp
import scope_profiler as sp

def work():
    sp.profile_region("left_open").__enter__()  # never exited: open at the child's end

if __name__ == "__main__":
    p = mp.get_context("fork").Process(target=work)
    p.start()
    p.join()
"""


def test_a_followed_process_warning_names_the_process(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(CHILD_LEAVES_A_CALL_OPEN)
    proc = run_cli("run", "-q", "--no-speedscope", "-o", tmp_path / "r.h5", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "still open" in x)
    assert re.match(
        r"scope-profiler \[pid \d+ \(child of \d+\): multiprocessing ForkProcess-1\]: "
        r"RuntimeWarning: 1 call\(s\) still open at the end of the recording",
        line,
    ), line
    assert "'left_open' on thread #0" in line
