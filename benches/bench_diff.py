"""`scope-profiler diff` against `scope-profiler summary` of the same files (target: diff costs
at most 3x the summary), with this interpreter's package ($OURS_PYTHON, default this one).

    python benches/bench_diff.py [--cache DIR] [--repeat N]

1. Generates, into the cache dir (default $SCOPE_PROFILER_BENCH_CACHE or
   /tmp/scope_profiler_bench) when absent:
   * diff_2M/base.h5, diff_2M/new.h5  500k iterations of four nested regions on one thread:
                                      2M calls each; the new run's innermost region does a
                                      little more work.
   * diff_groups/base/, diff_groups/new/  10 runs per side of 200k calls each (50k iterations).
2. Times each command in a fresh process, summary and diff alternately (S D S D ..., the order
   of each pair swapped every other time), N pairs (--repeat, default 5):
   * pair:   `summary base.h5 new.h5`   vs `diff base.h5 new.h5`
   * groups: `summary base/*.h5 new/*.h5` vs `diff base/ new/` (the 20 files read in parallel)
   The statistic is the same for both: the whole process's wall time (start-up included), and
   its peak RSS (`wait4`). The ratio diff / summary is taken pair by pair; its median is the
   figure (pairing keeps it meaningful when the machine's speed drifts).
3. Prints the load average before and after, the CPU count, and a table: medians of each,
   the median paired ratio, its spread (min-max), the target and whether it is met.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

OURS = os.environ.get("OURS_PYTHON", sys.executable)
TARGET = 3.0  # diff / summary, at most


def gen(path: str, iterations: int, extra: int) -> None:
    """One run: `iterations` x (outer > middle > inner > leaf); `extra` more work in leaf."""
    import scope_profiler as sp

    outer, middle, inner, leaf = (sp.region(n) for n in ("outer", "middle", "inner", "leaf"))
    with sp.session(file_path=path, verbose=False, buffer_limit=1 << 20):
        acc = 0
        for i in range(iterations):
            with outer, middle, inner, leaf:
                for k in range(extra):
                    acc += i ^ k


def generate(cache: Path) -> tuple[Path, Path]:
    pair, groups = cache / "diff_2M", cache / "diff_groups"
    jobs = [(pair / "base.h5", 500_000, 0), (pair / "new.h5", 500_000, 2)]
    for side, extra in (("base", 0), ("new", 2)):
        jobs += [(groups / side / f"run{k}.h5", 50_000, extra) for k in range(10)]
    for path, iterations, extra in jobs:
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} ({4 * iterations:,} calls) ...", flush=True)
        tmp = path.with_suffix(".tmp.h5")
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_diff; bench_diff.gen({str(tmp)!r}, {iterations}, {extra})"
        subprocess.run([OURS, "-c", code], check=True)
        tmp.rename(path)
    return pair, groups


def timed(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process running `args`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {err}")
    return wall, usage.ru_maxrss / 1024


def compare(name: str, summary: list[str], diff: list[str], repeat: int) -> dict:
    cli = [OURS, "-m", "scope_profiler"]
    timed(cli + summary)  # warm the page cache once for each
    timed(cli + diff)
    s_times, d_times, ratios, s_rss, d_rss = [], [], [], [], []
    for k in range(repeat):
        order = (("s", summary), ("d", diff)) if k % 2 == 0 else (("d", diff), ("s", summary))
        got = {}
        for which, args in order:
            got[which] = timed(cli + args)
        s_times.append(got["s"][0])
        d_times.append(got["d"][0])
        s_rss.append(got["s"][1])
        d_rss.append(got["d"][1])
        ratios.append(got["d"][0] / got["s"][0])
    return {
        "name": name,
        "summary": statistics.median(s_times),
        "diff": statistics.median(d_times),
        "ratio": statistics.median(ratios),
        "spread": (min(ratios), max(ratios)),
        "rss": (max(s_rss), max(d_rss)),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--cache", default=os.environ.get("SCOPE_PROFILER_BENCH_CACHE", "/tmp/scope_profiler_bench")
    )
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    pair, groups = generate(Path(args.cache))
    base_files = sorted(str(p) for p in (groups / "base").glob("*.h5"))
    new_files = sorted(str(p) for p in (groups / "new").glob("*.h5"))
    before = os.getloadavg()
    results = [
        compare(
            "pair 2M+2M",
            ["summary", str(pair / "base.h5"), str(pair / "new.h5")],
            ["diff", str(pair / "base.h5"), str(pair / "new.h5")],
            args.repeat,
        ),
        compare(
            "groups 10+10",
            ["summary", *base_files, *new_files],
            ["diff", str(groups / "base"), str(groups / "new")],
            args.repeat,
        ),
    ]
    after = os.getloadavg()
    print()
    print(
        f"load average before: {' '.join(f'{v:.2f}' for v in before)}; after: "
        f"{' '.join(f'{v:.2f}' for v in after)}; {os.cpu_count()} CPUs"
    )
    print(
        f"{'measure':<13} {'summary':>10} {'diff':>10} {'ratio':>7} {'spread':>13} "
        f"{'RSS s/d MiB':>13} {'target':>7}  ok"
    )
    print("-" * 86)
    for r in results:
        lo, hi = r["spread"]
        spread = f"{lo:.2f}-{hi:.2f}"
        rss = f"{r['rss'][0]:.0f}/{r['rss'][1]:.0f}"
        target = f"<= {TARGET:g}"
        print(
            f"{r['name']:<13} {r['summary'] * 1e3:8.0f}ms {r['diff'] * 1e3:8.0f}ms "
            f"{r['ratio']:7.2f} {spread:>13} {rss:>13} {target:>7}  "
            f"{'yes' if r['ratio'] <= TARGET else 'NO'}"
        )
    print()
    print(
        f"whole-process wall time (start-up included), median of {args.repeat} alternating "
        f"pairs; ratio = diff / summary pair by pair; files in {args.cache}; python: {OURS}"
    )


if __name__ == "__main__":
    main()
