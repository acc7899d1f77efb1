"""Greenlets as lanes: a gevent pool of 8 greenlets, each "downloading" with a cooperative
``gevent.sleep`` and hashing on the CPU afterwards.

    python examples/gevent_workers.py [OUT.h5]      (needs: pip install gevent)

With ``track_async=True`` every greenlet is a lane (``Greenlet-N on MainThread``), like an
asyncio task: a region held across a greenlet switch (``download``) is not a nesting error,
and its ``await_times`` are the time the greenlet was switched out inside it. Monkey-patching
is not needed for the profiler; this example uses ``gevent.sleep`` directly.
"""

from __future__ import annotations

import hashlib
import sys

import gevent
import gevent.pool
import scope_profiler as sp

N_JOBS = 16
POOL = 8


def download(i: int) -> bytes:
    with sp.region("download"):  # held across the switch
        gevent.sleep(0.01 + 0.001 * (i % 4))
        return str(i).encode()


def digest(data: bytes) -> str:
    with sp.region("digest"):
        for _ in range(1000):
            data = hashlib.sha256(data).digest()
        return data.hex()


def job(i: int) -> str:
    with sp.region("job"):
        return digest(download(i))


def main(out: str) -> None:
    with sp.session(file_path=out, track_async=True, verbose=False, return_results=True) as run:
        pool = gevent.pool.Pool(POOL)
        done = pool.map(job, range(N_JOBS))
    results = run.results
    dl = results["download"][0]
    print(f"{len(done)} jobs on {len(results.tasks[0])} greenlet lanes into {out}")
    print(
        f"download: {dl.num_calls} calls, {dl.await_times.sum():.3f} s switched out, "
        f"{(dl.durations - dl.await_times).sum():.3f} s held"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gevent_workers.h5")
