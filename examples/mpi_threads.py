"""Threads on every MPI rank, one profile for the whole job.

    mpirun -np 4 python examples/mpi_threads.py [OUT.h5]

Every rank runs a small threaded pipeline under ``session(track_threads=True)``. At the
end of the session each rank's calls and thread table go to rank 0, which writes one file
with all ranks inside (ranks in order, each with its own thread table). Rank 0 prints the
summary; every rank reports how many calls it recorded.
"""

import sys
import threading
import time

from scope_profiler import ProfileManager

OUT = sys.argv[1] if len(sys.argv) > 1 else "mpi_threads.h5"
N_WORKERS = 3
N_ITEMS = 20


@ProfileManager.profile("compute")
def compute(x):
    # a little CPU work, long enough to show up
    total = 0
    for i in range(2000 + 200 * x):
        total += i * i
    return total


def worker(rank, k, results):
    with ProfileManager.profile_region("worker"):
        for item in range(N_ITEMS):
            with ProfileManager.profile_region("item"):
                results.append(compute(rank + k + item))
                time.sleep(0.0005)


def main():
    with ProfileManager.session(
        file_path=OUT,
        track_threads=True,
        return_results=True,
        verbose=False,
    ) as run:
        comm = ProfileManager.get_config().comm
        rank = comm.Get_rank() if comm is not None else 0
        out = []
        with ProfileManager.profile_region("setup"):
            threads = [
                threading.Thread(target=worker, args=(rank, k, out), name=f"rank{rank}-w{k}")
                for k in range(N_WORKERS)
            ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if comm is not None:
            with ProfileManager.profile_region("barrier"):
                comm.Barrier()
    results = run.results
    if results.is_root:
        results.print_summary()
        print(f"wrote {OUT}: {results.num_ranks} rank(s)")
    print(f"rank {rank}: {len(out)} items")


if __name__ == "__main__":
    main()
