"""A thread pool: 24 jobs on a ``ThreadPoolExecutor`` of 4 workers.

    python examples/thread_pool.py [OUT.h5]
    scope-profiler threads OUT.h5

Every call records the thread that made it (``track_threads=True``), so the jobs of each pool
worker form that worker's lane. ``thread_summary()`` gives, per thread, its wall and CPU
time, its number of calls and the time it spent in regions; a worker that waits on I/O
(``download``, a sleep here) has far less CPU time than region time.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import sys
import time

import scope_profiler as sp

N_JOBS = 24
N_WORKERS = 4


@sp.profile
def download(i: int) -> bytes:
    time.sleep(0.004)  # blocking I/O: the worker waits, no CPU
    return str(i).encode()


@sp.profile
def checksum(data: bytes) -> str:
    for _ in range(2000):  # CPU-bound
        data = hashlib.sha256(data).digest()
    return data.hex()


def job(i: int) -> str:
    with sp.region("job"):
        return checksum(download(i))


def main(out: str) -> None:
    with (
        sp.session(file_path=out, track_threads=True, verbose=False, return_results=True) as run,
        concurrent.futures.ThreadPoolExecutor(N_WORKERS, thread_name_prefix="pool") as pool,
    ):
        digests = list(pool.map(job, range(N_JOBS)))
    results = run.results
    print(f"{len(digests)} jobs, {results['job'][0].num_calls} 'job' calls in {out}")
    print(f"{'thread':<14}{'calls':>6}{'region s':>10}{'cpu s':>8}")
    for row in results.thread_summary():
        print(
            f"{row['name']:<14}{row['num_calls']:>6}{row['region_time']:>10.3f}{row['cpu_time']:>8.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "thread_pool.h5")
