"""One measurement in a fresh process (run with ours' or the reference's Python).

usage: python _bench_worker.py {ours|ref} {load|analysis|memory} FILE [REPEAT]
Prints one JSON line: seconds (best of REPEAT) or peak RSS bytes.
* load     : read_h5(FILE)
* analysis : reconstruction + split_by_lane + thread_summary on rank 0 of a loaded run
             (ref: build_call_arrays(get_regions) + split_by_lane + thread_summary;
              ours: the same calls, "api", and the cached results API, "cached")
* memory   : peak RSS of load + analysis, and the RSS after imports (baseline)
"""

import json
import resource
import sys
import time


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main() -> None:
    impl, what, path = sys.argv[1], sys.argv[2], sys.argv[3]
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    import numpy  # noqa: F401  (imported before the baseline)
    import scope_profiler as sp
    from scope_profiler.call_stack import build_call_arrays, split_by_lane

    baseline = rss_now()

    def analysis_api(results):
        calls = build_call_arrays(results.get_regions(), 0)
        lanes = split_by_lane(calls)
        summary = results.thread_summary(0)
        return len(calls), len(lanes), len(summary)

    def analysis_cached(results):
        calls = results.call_arrays(0)
        lanes = results.split_by_lane(0)
        summary = results.thread_summary(0)
        return len(calls), len(lanes), len(summary)

    out = {"impl": impl, "what": what, "file": path}
    if what == "load":
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            results = sp.read_h5(path)
            best = min(best, time.perf_counter() - t0)
            del results
        out["seconds"] = best
    elif what == "analysis":
        variants = {"api": analysis_api}
        if impl == "ours":
            variants["cached"] = analysis_cached
        for name, fn in variants.items():
            best = float("inf")
            for _ in range(repeat):
                results = sp.read_h5(path)  # fresh results: nothing cached
                t0 = time.perf_counter()
                shape = fn(results)
                best = min(best, time.perf_counter() - t0)
                del results
            out[name] = best
            out["shape"] = shape
    elif what == "memory":
        results = sp.read_h5(path)
        analysis_api(results)
        out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out["baseline_rss"] = baseline
    print(json.dumps(out))


if __name__ == "__main__":
    main()
