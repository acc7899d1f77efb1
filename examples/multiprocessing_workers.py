"""One profile per worker process, under every multiprocessing start method.

    python examples/multiprocessing_workers.py [--method fork|spawn|forkserver ...] [--out DIR]
    scope-profiler summary --merge DIR/worker_*.h5

Each worker process opens its own ``session()`` with its own ``file_path``
(``worker_<pid>.h5``) around its work, with thread tracking; the parent profiles itself
into ``parent.h5``. Works the same with ``multiprocessing.Pool`` and
``concurrent.futures.ProcessPoolExecutor`` and with the ``fork``, ``spawn`` and
``forkserver`` start methods: a child forked out of the parent's active session stands
down and its own ``session()`` replaces the inherited run. A pool process that runs
several tasks rewrites its file with each session (the later one wins, atomically).
"""

import argparse
import concurrent.futures
import multiprocessing
import os
import sys
import threading
from pathlib import Path

from scope_profiler import ProfileManager, merge_results, read_h5

N_THREADS = 2
N_ITEMS = 10


@ProfileManager.profile("compute")
def compute(x):
    return sum(i * i for i in range(1000 + 10 * x))


def process_items(k, seed):
    for item in range(N_ITEMS):
        with ProfileManager.profile_region("item"):
            compute(seed + k + item)


def work(seed, out_dir="."):
    """One task: the whole of it is profiled into this process's own file."""
    with ProfileManager.session(
        file_path=os.path.join(out_dir, f"worker_{os.getpid()}.h5"),
        track_threads=True,
        verbose=False,
    ):
        threads = [
            threading.Thread(target=process_items, args=(k, seed), name=f"item-thread-{k}")
            for k in range(N_THREADS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return os.getpid()


def run_pools(method, out_dir, tasks=6, processes=3):
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(processes) as pool:
        pids = pool.starmap(work, [(seed, out_dir) for seed in range(tasks)])
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=ctx) as pool:
        pids += list(pool.map(work, range(tasks), [out_dir] * tasks))
    return pids


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", action="append", choices=["fork", "spawn", "forkserver"])
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    methods = args.method or [
        m for m in ("fork", "spawn", "forkserver") if m in multiprocessing.get_all_start_methods()
    ]
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    with ProfileManager.session(
        file_path=os.path.join(out_dir, "parent.h5"),
        track_threads=True,
        verbose=False,
    ):
        pids = []
        for method in methods:
            with ProfileManager.profile_region(f"pools ({method})"):
                pids += run_pools(method, out_dir)
    files = sorted(Path(out_dir).glob("worker_*.h5"))
    merged = merge_results(*(read_h5(f) for f in files))
    print(
        f"{len(pids)} tasks in {len(set(pids))} worker processes ({', '.join(methods)}); "
        f"{len(files)} worker files, merged: {merged.num_ranks} rank(s), "
        f"{merged['item'].num_calls} item calls"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
