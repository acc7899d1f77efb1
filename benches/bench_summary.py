"""results.summary() benchmark: ours ($OURS_PYTHON, default this interpreter) vs
scope-profiler 0.7.5 ($SCOPE_PROFILER_REF_PYTHON or $REF_PYTHON, default .venv-ref/bin/python of this checkout,
which tests/run_all.sh makes) on a 20,000-region run.

    python benches/bench_summary.py [--cache DIR] [--repeat N] [--cap SECONDS]

1. Generates, with the reference package in its interpreter, into the cache dir (default
   $SCOPE_PROFILER_BENCH_CACHE or /tmp/scope_profiler_bench) when absent:
   * regions_20k.h5  4 threads (track_threads), each 1,000 groups of five distinct regions
                     (p > [a > b], [c > d]: nesting depth 3), each group run 3 times:
                     20,000 distinct regions, 3 calls each, 60,000 calls.
2. Checks once that both implementations produce the same summary rows (same names in the same
   order, same num_calls, total_duration equal to 1e-9 relative), so both time the same work.
3. Times, each in a fresh process, ours and the reference interleaved (A B A B ...), best of N
   (--repeat, default 3) processes each:
   * load     : sp.read_h5(path)
   * summary  : results.summary() on that freshly loaded run (nothing cached)
   * total    : sp.read_h5(path).summary()  (load + summary in the same process)
   A reference process longer than --cap seconds (default 120) is cut and shown "> cap".
4. Prints the load average, the CPU count and a table: measure, ours, reference, ratio
   ours / reference, target (1/10, on total and summary) and ok.

The same file is also this bench's worker: `python bench_summary.py --gen PATH` (reference
interpreter) writes the profile; `python bench_summary.py --worker {time|rows} PATH` measures
one process and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
OURS = os.environ.get("OURS_PYTHON", sys.executable)
REF = (
    os.environ.get("SCOPE_PROFILER_REF_PYTHON")
    or os.environ.get("REF_PYTHON")
    or str(Path(__file__).resolve().parents[1] / ".venv-ref" / "bin" / "python")
)
STEM = "regions_20k"
THREADS, GROUPS_PER_THREAD, REPEATS = 4, 1_000, 3  # 4 x 1000 x 5 = 20,000 regions
TARGETS = {"total": 1 / 10, "summary": 1 / 10}  # measure -> maximum ratio ours/ref


# --- worker side (runs in ours' or the reference's interpreter) -----------------------------


def gen(path: str) -> None:
    """Write the 20,000-region profile with the package of this interpreter (the reference)."""
    import threading

    import scope_profiler as sp

    sp.setup(file_path=path, track_threads=True, buffer_limit=1 << 16)

    def work(t: int) -> None:
        groups = []
        for g in range(GROUPS_PER_THREAD):
            base = f"t{t}.g{g:04d}"
            groups.append([sp.region(f"{base}.{leaf}") for leaf in ("p", "a", "b", "c", "d")])
        for _ in range(REPEATS):
            for p, a, b, c, d in groups:
                with p:
                    with a, b:
                        pass
                    with c, d:
                        pass

    threads = [threading.Thread(target=work, args=(t,), name=f"w{t}") for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    sp.finalize(verbose=False)


def worker(what: str, path: str) -> None:
    import numpy  # noqa: F401  (imported before timing, as read_h5 needs it anyway)
    import scope_profiler as sp

    if what == "time":
        t0 = time.perf_counter()
        results = sp.read_h5(path)
        t1 = time.perf_counter()
        rows = results.summary()
        t2 = time.perf_counter()
        print(
            json.dumps({"load": t1 - t0, "summary": t2 - t1, "total": t2 - t0, "rows": len(rows)})
        )
    elif what == "rows":
        rows = sp.read_h5(path).summary()
        print(
            json.dumps([[r["name"], int(r["num_calls"]), float(r["total_duration"])] for r in rows])
        )
    else:
        raise SystemExit(f"unknown worker measure {what}")


# --- driver side -----------------------------------------------------------------------------


def generate(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{STEM}.h5"
    if not path.exists():
        print(f"generating {path} with the reference ...", flush=True)
        t0 = time.perf_counter()
        tmp = path.with_suffix(".tmp.h5")
        subprocess.run([REF, str(HERE), "--gen", str(tmp)], check=True)
        tmp.rename(path)
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def run_worker(python: str, what: str, path: Path, cap: float):
    cmd = [python, str(HERE), "--worker", what, str(path)]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=cap + 30)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_same_rows(path: Path, cap: float) -> int:
    ours = run_worker(OURS, "rows", path, cap)
    ref = run_worker(REF, "rows", path, cap)
    if ref is None:
        raise SystemExit(f"the reference's summary of {path} took longer than {cap + 30:.0f} s")
    problems = []
    if len(ours) != len(ref):
        problems.append(f"{len(ours)} rows (ours) vs {len(ref)} (reference)")
    for i, (o, r) in enumerate(zip(ours, ref)):
        if o[0] != r[0] or o[1] != r[1] or abs(o[2] - r[2]) > 1e-9 * max(abs(r[2]), 1e-300):
            problems.append(f"row {i}: ours {o} vs reference {r}")
        if len(problems) > 5:
            break
    if problems:
        raise SystemExit("summary rows differ:\n  " + "\n  ".join(problems))
    return len(ref)


def fmt_s(v: float | None, cap: float) -> str:
    return f"> {cap:.0f} s" if v is None else f"{v * 1000:9.1f} ms"


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--gen":
        return gen(sys.argv[2])
    if len(sys.argv) >= 4 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--cache", default=os.environ.get("SCOPE_PROFILER_BENCH_CACHE", "/tmp/scope_profiler_bench")
    )
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cap", type=float, default=120.0)
    args = ap.parse_args()
    path = generate(Path(args.cache))
    nrows = check_same_rows(path, args.cap)
    print(f"same summary rows in both (names, num_calls, total_duration): {nrows} rows", flush=True)

    measures = ("total", "load", "summary")
    best = {impl: dict.fromkeys(measures, float("inf")) for impl in ("ours", "ref")}
    ref_cut = False
    for _ in range(args.repeat):  # interleaved: ours, reference, ours, reference, ...
        for impl, python in (("ours", OURS), ("ref", REF)):
            if impl == "ref" and ref_cut:
                continue
            out = run_worker(python, "time", path, args.cap)
            if out is None:
                ref_cut = impl == "ref"
                continue
            for m in measures:
                best[impl][m] = min(best[impl][m], out[m])

    print()
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"{'measure':<9} {'ours':>12} {'reference':>12} {'ratio':>9} {'target':>8}  ok")
    print("-" * 58)
    for m in measures:
        o = best["ours"][m]
        r = None if best["ref"][m] == float("inf") else best["ref"][m]
        target = TARGETS.get(m)
        ratio = o / (args.cap if r is None else r)
        ratio_s = f"< {ratio:.4f}" if r is None else f"{ratio:9.4f}"
        target_s = f"1/{round(1 / target)}" if target else "-"
        ok_s = ("yes" if ratio <= target else "NO") if target else "-"
        print(
            f"{m:<9} {fmt_s(o, args.cap):>12} {fmt_s(r, args.cap):>12} {ratio_s:>9} {target_s:>8}  {ok_s}"
        )
    print()
    print(
        f"file: {path} ({nrows} regions, {THREADS} threads); ours: {OURS}; reference: {REF}; "
        f"best of {args.repeat} fresh processes each, interleaved"
    )


if __name__ == "__main__":
    sys.exit(main())
