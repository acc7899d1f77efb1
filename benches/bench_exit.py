"""How long a program recorded with `auto_finalize` takes to exit while daemon threads are busy.

usage: python benches/bench_exit.py [--threads 4] [--repeat 5] [--python PYTHON]

Each run is a fresh process: `setup(track_threads=True, auto_finalize=True)`, THREADS daemon
threads entering a region as fast as they can, the main thread sleeping 0.3 s, then the exit
(the exit-time finalize writes the file and prints its summary). Printed per variant: the
median over the runs of the process's wall time, from its start to its end, and of its peak
RSS (`wait4`). The variants: the daemon threads still busy at the exit, and the same threads
told to stop (and joined) before it, which is what the finalize costs on its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import atexit, sys, threading, time
import scope_profiler as sp
threads, stop_first = int(sys.argv[2]), sys.argv[3] == "stop"
done = False

def spin():
    region = sp.profile_region("spin")
    while not done:
        with region:
            pass

sp.ProfileManager.setup(file_path=sys.argv[1], track_threads=True, auto_finalize=True)
started = [threading.Thread(target=spin, daemon=True) for _ in range(threads)]
if stop_first:
    @atexit.register  # registered after setup(): runs before the exit-time finalize
    def stop():
        global done
        done = True
        for t in started:
            t.join()
for t in started:
    t.start()
time.sleep(0.3)
"""


def _one(python: str, threads: int, variant: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "exit.h5")
        began = time.perf_counter()
        child = subprocess.Popen(
            [python, "-c", WORKER, out, str(threads), variant], stdout=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(child.pid, 0)
        took = time.perf_counter() - began
        if status != 0:
            sys.exit(f"the {variant} run failed: status {status}")
        return took, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    variants = {"busy": "daemon threads busy at the exit", "stop": "threads stopped first"}
    runs: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for _ in range(args.repeat):  # interleaved, so that the machine's load falls on both
        for variant in variants:
            runs[variant].append(_one(args.python, args.threads, variant))
    print(
        f"{args.threads} daemon threads, the script sleeps 0.3 s; median of {args.repeat} "
        f"runs on {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})"
    )
    for variant, label in variants.items():
        wall = statistics.median(t for t, _ in runs[variant])
        rss = statistics.median(r for _, r in runs[variant])
        print(f"  {label:32}: exit after {wall:5.2f} s, peak RSS {rss:5.0f} MB")


if __name__ == "__main__":
    main()
