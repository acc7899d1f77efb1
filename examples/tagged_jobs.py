"""Per-call metadata: tag calls with what they worked on and how they ended, then ask the
profile which inputs were slow and which failed.

    python examples/tagged_jobs.py [OUT.h5]

``sp.metadata(batch=...)`` tags every call made inside the block (the ``load`` calls and the
``process`` calls), ``@sp.profile(metadata=..., record_outcome=True)`` tags each ``process``
call with its job's size and its outcome (``status``, and ``exception`` for failures). The
values are in ``Region.event_metadata``, one dict per call, in the file and in memory alike.
"""

from __future__ import annotations

import sys
import time

import scope_profiler as sp


@sp.profile("load")
def load(size: int) -> list[int]:
    return list(range(size))


@sp.profile("process", metadata=lambda size: {"size": size}, record_outcome=True)
def process(size: int) -> int:
    data = load(size)
    if size % 7 == 0:
        raise ValueError(f"size {size} is not allowed")
    time.sleep(size / 1e5)
    return sum(data)


def main(path: str) -> None:
    with sp.session(file_path=path, verbose=False):
        for batch in range(2):
            with sp.metadata(batch=batch):
                for size in range(10 + 10 * batch, 20 + 10 * batch):
                    try:
                        process(size)
                    except ValueError:
                        pass
    r = sp.read_h5(path)
    calls = r["process"][0]
    failed = [m for m in calls.event_metadata if m["status"] == "error"]
    slowest = max(range(calls.num_calls), key=lambda i: calls.durations_ns[i])
    print(f"{calls.num_calls} process calls, {len(failed)} failed:")
    for m in failed:
        print(f"  batch {m['batch']} size {m['size']}: {m['exception']}")
    print(f"slowest: {calls.event_metadata[slowest]}")
    loads = r["load"][0].event_metadata
    print(f"load calls per batch: {[sum(m['batch'] == b for m in loads) for b in (0, 1)]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tagged_jobs.h5")
