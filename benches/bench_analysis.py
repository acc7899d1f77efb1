"""Analysis engine benchmark: ours (this interpreter or $OURS_PYTHON) vs scope-profiler 0.7.5
($SCOPE_PROFILER_REF_PYTHON or $REF_PYTHON, default .venv-ref/bin/python of this checkout,
which tests/run_all.sh makes) on files written by the reference.

    python benches/bench_analysis.py [--cache DIR] [--repeat N] [--cap SECONDS]

1. Generates, with the reference package, into the cache dir (default
   $SCOPE_PROFILER_BENCH_CACHE or /tmp/scope_profiler_bench) when absent:
   * single_2M.h5        500k iterations of four nested regions on one thread (2M events)
   * threads_8x250k.h5   8 threads x 250k events (track_threads)
   * tasks_100k_lanes.h5 10 gathers of 10k tasks, four nested regions each
                         (track_async: 100k task lanes, 400k events)
2. Times, each in a fresh subprocess per implementation (benches/_bench_worker.py):
   * load: read_h5 (best of N);
   * analysis: build_call_arrays(get_regions(), 0) + split_by_lane + thread_summary(0) on
     a freshly loaded run (best of N). Ours also with the cached results API
     (results.call_arrays / results.split_by_lane / results.thread_summary);
   * peak RSS of load + analysis of the 2M-event file.
   A reference measurement longer than --cap seconds (default 60) is cut and shown "> cap".
3. Prints a table with the ratios ours / reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OURS = os.environ.get("OURS_PYTHON", sys.executable)
REF = (
    os.environ.get("SCOPE_PROFILER_REF_PYTHON")
    or os.environ.get("REF_PYTHON")
    or str(Path(__file__).resolve().parents[1] / ".venv-ref" / "bin" / "python")
)
FILES = {
    "single_2M": "single",
    "threads_8x250k": "threads",
    "tasks_100k_lanes": "tasks",
}
TARGETS = {  # (what, file) -> maximum ratio ours/ref
    ("load", "*"): 1 / 5,
    ("analysis", "single_2M"): 1 / 20,
    ("analysis", "threads_8x250k"): 1 / 20,
    ("analysis", "tasks_100k_lanes"): 1 / 500,
    ("memory", "single_2M"): 1 / 3,
}


def generate(cache: Path) -> None:
    cache.mkdir(parents=True, exist_ok=True)
    for stem, kind in FILES.items():
        path = cache / f"{stem}.h5"
        if path.exists():
            continue
        print(f"generating {path} with the reference ({kind}) ...", flush=True)
        t0 = time.perf_counter()
        subprocess.run([REF, str(HERE / "_gen_reference.py"), kind, str(path)], check=True)
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)


def measure(python: str, impl: str, what: str, path: Path, repeat: int, cap: float) -> dict | None:
    cmd = [python, str(HERE / "_bench_worker.py"), impl, what, str(path), str(repeat)]
    try:
        out = subprocess.run(
            cmd, check=True, capture_output=True, text=True, timeout=cap * (repeat + 1) + 30
        )
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt_s(v: float | None, cap: float) -> str:
    return f"> {cap:.0f} s" if v is None else f"{v * 1000:9.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--cache", default=os.environ.get("SCOPE_PROFILER_BENCH_CACHE", "/tmp/scope_profiler_bench")
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cache = Path(args.cache)
    generate(cache)
    rows = []
    for stem in FILES:
        path = cache / f"{stem}.h5"
        for what in ("load", "analysis"):
            # the reference's analysis of the 100k-lane file takes ~26 s: run it once
            ref_repeat = 1 if (what == "analysis" and stem == "tasks_100k_lanes") else args.repeat
            ref = measure(REF, "ref", what, path, ref_repeat, args.cap)
            ours = measure(OURS, "ours", what, path, args.repeat, args.cap)
            if what == "load":
                rows.append(
                    (
                        what,
                        stem,
                        "read_h5",
                        ours["seconds"],
                        None if ref is None else ref["seconds"],
                    )
                )
            else:
                ref_s = None if ref is None or ref["api"] > args.cap else ref["api"]
                rows.append((what, stem, "same API calls", ours["api"], ref_s))
                rows.append((what, stem, "cached results API", ours["cached"], ref_s))
    ref_mem = measure(REF, "ref", "memory", cache / "single_2M.h5", 1, args.cap)
    ours_mem = measure(OURS, "ours", "memory", cache / "single_2M.h5", 1, args.cap)

    print()
    print(
        f"{'measure':<9} {'file':<17} {'variant':<19} {'ours':>12} {'reference':>12} {'ratio':>9} {'target':>8}  ok"
    )
    print("-" * 96)
    for what, stem, variant, o, r in rows:
        target = TARGETS.get((what, stem), TARGETS.get((what, "*")))
        if r is None:
            ratio_s, ok = f"< {o / args.cap:.4f}", o / args.cap <= target
        else:
            ratio_s, ok = f"{o / r:9.4f}", o / r <= target
        print(
            f"{what:<9} {stem:<17} {variant:<19} {fmt_s(o, args.cap):>12} {fmt_s(r, args.cap):>12} "
            f"{ratio_s:>9} {f'1/{round(1 / target)}':>8}  {'yes' if ok else 'NO'}"
        )
    for label, key in (("peak RSS", "peak_rss"), ("RSS - import", None)):
        o = ours_mem["peak_rss"] - (0 if key else ours_mem["baseline_rss"])
        r = ref_mem["peak_rss"] - (0 if key else ref_mem["baseline_rss"])
        ok = o / r <= TARGETS[("memory", "single_2M")]
        print(
            f"{'memory':<9} {'single_2M':<17} {label:<19} {o / 2**20:9.1f} MiB {r / 2**20:9.1f} MiB "
            f"{o / r:9.4f} {'1/3':>8}  {'yes' if ok else 'NO'}"
        )
    print()
    print(
        f"ours: {OURS}; reference: {REF}; best of {args.repeat} (reference 100k-lane analysis: 1 run); "
        f"{os.cpu_count()} CPUs; load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    sys.exit(main())
