"""A small threaded pipeline: a producer, three workers and a writer.

Run it under the profiler (records every region with its thread):

    scope-profiler run --track-threads examples/threaded_pipeline.py

or profile it from inside with ``ProfileManager.session(track_threads=True)``
(see the bottom of this file). The workers mix CPU work (``parse``) with blocking
waits (``fetch``), so the thread table shows wall time far above CPU time for them.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time

import scope_profiler as sp

N_ITEMS = 24
N_WORKERS = int(os.environ.get("PIPELINE_WORKERS", "3"))


@sp.profile
def parse(payload: bytes) -> str:
    digest = payload
    for _ in range(400):  # CPU-bound
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


def fetch(item: int) -> bytes:
    with sp.profile_region("fetch"):
        time.sleep(0.002)  # stands for I/O
        return item.to_bytes(4, "little") * 64


def worker(inbox: queue.Queue, outbox: queue.Queue) -> None:
    while True:
        item = inbox.get()
        if item is None:
            return
        with sp.profile_region("handle_item"):
            outbox.put((item, parse(fetch(item))))


def pipeline() -> list[tuple[int, str]]:
    inbox: queue.Queue = queue.Queue()
    outbox: queue.Queue = queue.Queue()
    workers = [
        threading.Thread(target=worker, args=(inbox, outbox), name=f"worker-{i}")
        for i in range(N_WORKERS)
    ]
    for w in workers:
        w.start()
    with sp.profile_region("produce"):
        for item in range(N_ITEMS):
            inbox.put(item)
    for _ in workers:
        inbox.put(None)
    for w in workers:
        w.join()
    with sp.profile_region("collect"):
        results = sorted(outbox.get() for _ in range(N_ITEMS))
    return results


if __name__ == "__main__":
    out = pipeline()
    print(f"pipeline processed {len(out)} items")
