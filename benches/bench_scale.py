"""Scale check: a synthetic 20M-event file loads and reconstructs (ours only).

    python benches/bench_scale.py [--events 20000000] [--path /tmp/scope_profiler_bench/scale_20M.h5]

Builds (once) a tracked run of 8 threads x 625k iterations of four nested regions
(20M calls) with numpy and writes it with our HDF5 writer (reference layout, gzip as the
reference's auto policy), then in a fresh process: read_h5, reconstruct every rank
(``results.reconstruct()``), split rank 0 by lane and summarize threads. Prints seconds per
step, peak RSS and bytes per event.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def build(path: Path, events: int) -> None:
    import numpy as np
    from scope_profiler import _native

    threads = 8
    iterations = events // 4 // threads
    rows = []
    step = 1000
    for k, name in enumerate(("outer", "middle", "inner", "leaf")):
        starts, ends, tids = [], [], []
        for t in range(threads):
            base = 1_000_000 + t * 7 + np.arange(iterations, dtype=np.int64) * step
            starts.append(base + 10 * k)
            ends.append(base + step - 10 - 10 * k)
            tids.append(np.full(iterations, t, dtype=np.int64))
        rows.append(
            {
                "name": name,
                "rank": 0,
                "start_ns": np.concatenate(starts),
                "end_ns": np.concatenate(ends),
                "thread_ids": np.concatenate(tids),
            }
        )
    thread_rows = [(0, t, 0, 0, False, 0, -1, 0, f"w{t}") for t in range(threads)]
    native = _native.NativeRun.from_columns(
        ["outer", "middle", "inner", "leaf"], rows, thread_rows, [], {"start_time_ns": 0}, 1
    )
    del rows
    native.write_h5(str(path))


def child(path: str) -> None:
    import resource

    import scope_profiler as sp

    out = {}
    t0 = time.perf_counter()
    results = sp.read_h5(path)
    out["load_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    results.reconstruct()
    out["reconstruct_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    lanes = results.split_by_lane(0)
    summary = results.thread_summary(0)
    out["split_summary_s"] = time.perf_counter() - t0
    out["events"] = sum(r.num_calls for r in results)
    out["lanes"] = len(lanes)
    out["threads"] = len(summary)
    out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000_000)
    ap.add_argument("--path", default="/tmp/scope_profiler_bench/scale_20M.h5")
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.path)
        return
    path = Path(args.path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        build(path, args.events)
        print(
            f"built {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t0:.1f} s"
        )
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--path", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"events {r['events']:,}  lanes {r['lanes']}  threads {r['threads']}")
    print(
        f"load {r['load_s']:.2f} s  reconstruct {r['reconstruct_s']:.2f} s  "
        f"split+thread_summary {r['split_summary_s']:.3f} s  "
        f"total {r['load_s'] + r['reconstruct_s'] + r['split_summary_s']:.2f} s"
    )
    print(
        f"peak RSS {r['peak_rss'] / 2**30:.2f} GiB = {r['peak_rss'] / r['events']:.0f} bytes/event "
        f"({os.cpu_count()} CPUs)"
    )


if __name__ == "__main__":
    main()
