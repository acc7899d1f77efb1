"""Cost of `flush_interval` (streaming to a sidecar) on the recording path.

usage: python benches/bench_flush.py [--calls N] [--repeat R] [--intervals 0.2,0.05]

Each variant runs in its own subprocess: a session with file output (`track_threads`), N
`with region:` blocks timed as one loop, best of R repeats (each repeat a fresh session),
minus the bare loop: ns per call without `flush_interval` and with each interval. The hot path is the same code either way; what streaming
adds is the flush thread's periodic work under the GIL (snapshot, retire) and its fsync.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

WORKER = r"""
import json, os, sys, time
from scope_profiler import ProfileManager
calls, repeat, interval, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
interval = None if interval == "none" else float(interval)

def bare():
    t = time.perf_counter_ns()
    for _ in range(calls):
        pass
    return time.perf_counter_ns() - t

best, best_bare = None, min(bare() for _ in range(repeat))
for _ in range(repeat):
    manager = ProfileManager()
    with manager.session(file_path=out, track_threads=True, flush_interval=interval, verbose=False):
        region = manager.profile_region("r")
        t = time.perf_counter_ns()
        for _ in range(calls):
            with region:
                pass
        took = time.perf_counter_ns() - t
    best = took if best is None else min(best, took)
print(json.dumps({"ns_per_call": (best - best_bare) / calls, "seconds": best / 1e9}))
"""


def run(calls: int, repeat: int, interval: str, out: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(calls), str(repeat), interval, out],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--intervals", default="0.2,0.05")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = f"{d}/bench.h5"
        print(f"{args.calls} calls per loop, best of {args.repeat}, track_threads, file output")
        base = run(args.calls, args.repeat, "none", out)
        print(
            f"  without flush_interval : {base['ns_per_call']:7.1f} ns/call ({base['seconds']:.3f} s)"
        )
        for iv in args.intervals.split(","):
            r = run(args.calls, args.repeat, iv, out)
            ratio = r["ns_per_call"] / base["ns_per_call"]
            print(
                f"  flush_interval={iv:<6}   : {r['ns_per_call']:7.1f} ns/call "
                f"({r['seconds']:.3f} s, x{ratio:.3f})"
            )


if __name__ == "__main__":
    main()
