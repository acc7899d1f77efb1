"""Dataset benchmarks: building a dataset of many runs, and querying it.

1. Build: `scope-profiler dataset FILES -o DIR` against `scope-profiler export parquet FILES
   -o DIR` of the same files (target: dataset <= 1.5x export), and in-process
   `dataset.build` (the files converted on threads inside one Rust call) against a Python
   thread pool calling the conversion once per file.
2. Query "exclusive time per run and region": `scan(DIR).calls` grouped by Polars against a
   Python loop of `read_h5` over the files (target: <= 0.25x).

Runs: N runs (default 300) of 4,000 calls (two threads, each 500 times four nested
regions), recorded by this package. Every pair of measurements is
interleaved (A, B, A, B, ...) and the best of each is compared, so a load change of the
shared machine hits both; the load average is printed.

3. `--large N`: N runs of 10,000 calls (recorded by two processes at once) built with a
   Dask LocalCluster of two worker processes: wall time, the largest memory (RSS) of each
   worker during the build, the dataset's size, and the time of the query over all runs.

usage: python benches/bench_dataset.py [--runs N] [--repeat K] [--keep DIR]
       python benches/bench_dataset.py --large N [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GEN = r"""
import sys, threading
import scope_profiler as sp
out, n = sys.argv[1], int(sys.argv[2])
first, loops = int(sys.argv[3]) if len(sys.argv) > 3 else 0, int(sys.argv[4]) if len(sys.argv) > 4 else 500
def work(regs):
    for _ in range(loops):
        with regs[0]:
            with regs[1]:
                with regs[2]:
                    with regs[3]:
                        pass
for i in range(first, first + n):
    sp.setup(file_path=f"{out}/run{i:05d}.h5", track_threads=True, label=f"run {i}")
    regs = [sp.region(x) for x in ("outer", "middle", "inner", "leaf")]
    ts = [threading.Thread(target=work, args=(regs,)) for _ in range(2)]
    for t in ts: t.start()
    for t in ts: t.join()
    sp.finalize(verbose=False)
"""


def cli() -> list[str]:
    exe = ROOT / "target" / "release" / "scope-profiler"
    if os.environ.get("CARGO_TARGET_DIR"):
        exe = Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "scope-profiler"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "scope_profiler"]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed_cmd(cmd: list[str], out: Path) -> float:
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed:\n{proc.stderr}")
    return wall


def timed(fn, *args) -> float:
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def build_local(files: list[str], out: Path) -> None:
    from scope_profiler.dataset import build

    shutil.rmtree(out, ignore_errors=True)
    build(files, out)


def build_thread_pool(files: list[str], out: Path) -> None:
    """The same build with the per-file conversion called from a Python thread pool."""
    from scope_profiler import _native

    shutil.rmtree(out, ignore_errors=True)
    _native.dataset_prepare(str(out), False)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        parts = pool.map(lambda f: _native.dataset_convert([f], str(out), set(), 1), files)
        converted = [c for part in parts for c in part]
    _native.dataset_commit(str(out), [], converted)


def query_scan(ds: Path) -> int:
    import polars as pl
    import scope_profiler as sp

    per = sp.scan(ds).calls.group_by("run", "region").agg(pl.col("exclusive_ns").sum()).collect()
    return per.height


def query_loop(files: list[str]) -> int:
    import scope_profiler as sp

    per = {}
    for f in files:
        r = sp.read_h5(f)
        for name in r.region_names:
            per[(f, name)] = r[name].exclusive_duration
    return len(per)


def compare(name: str, a: tuple[str, object], b: tuple[str, object], k: int, target: str) -> None:
    times: dict[str, list[float]] = {a[0]: [], b[0]: []}
    for _ in range(k):
        for label, fn in (a, b):
            times[label].append(fn())  # type: ignore[operator]
    ta, tb = min(times[a[0]]), min(times[b[0]])
    print(f"\n[{name}] load average: {load()}")
    for label in times:
        print(
            f"  {label:44s} best {min(times[label]):7.3f} s  ({', '.join(f'{t:.3f}' for t in times[label])})"
        )
    print(f"  ratio {a[0]} / {b[0]}: {ta / tb:.2f}x  (target {target})")


def record_large(src: Path, n: int) -> list[str]:
    """`n` runs of 10,000 calls in `src`, recorded by two processes at once."""
    files = sorted(str(p) for p in src.glob("*.h5"))
    if len(files) == n:
        return files
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    half = n // 2
    t = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", GEN, str(src), str(count), str(first), "1250"])
        for first, count in ((0, half), (half, n - half))
    ]
    if any(p.wait() for p in procs):
        raise SystemExit("recording the runs failed")
    print(f"recorded {n} runs of 10,000 calls in {time.perf_counter() - t:.0f} s")
    return sorted(str(p) for p in src.glob("*.h5"))


def large(work: Path, n: int) -> None:
    import threading

    import polars as pl
    import psutil
    from distributed import Client, LocalCluster
    from scope_profiler.dataset import build

    files = record_large(work / "large_runs", n)
    size_in = sum(os.path.getsize(f) for f in files)
    ds = work / "large_dataset"
    shutil.rmtree(ds, ignore_errors=True)
    peak: dict[str, int] = {}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with cluster, Client(cluster) as client:
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                rss = client.run(lambda: psutil.Process().memory_info().rss)
                for w, v in rss.items():
                    peak[w] = max(peak.get(w, 0), v)
                done.wait(0.5)

        sampler = threading.Thread(target=sample)
        print(f"\n[large] load average before: {load()}")
        t = time.perf_counter()
        sampler.start()
        ps = build(files, ds, client=client)
        wall = time.perf_counter() - t
        done.set()
        sampler.join()
    calls = ps.runs.select(pl.col("num_calls").sum()).collect().item()
    size = sum(p.stat().st_size for p in ds.rglob("*.parquet"))
    print(f"  load average after: {load()}")
    print(f"  {len(ps.report.added)} runs, {calls:,} calls, inputs {size_in / 1e9:.2f} GB")
    print(
        f"  build on 2 Dask workers: {wall:.1f} s ({calls / wall / 1e6:.2f} M calls/s, {wall / n * 1e3:.1f} ms per run)"
    )
    print(f"  files per worker: {sorted(ps.report.workers.values())}")
    print(f"  peak RSS per worker: {', '.join(f'{v / 1e6:.0f} MB' for v in sorted(peak.values()))}")
    print(f"  dataset size: {size / 1e9:.2f} GB ({size / calls:.1f} B per call)")
    t = time.perf_counter()
    height = query_scan(ds)
    print(
        f"  query exclusive time per run and region over all calls: {time.perf_counter() - t:.1f} s ({height} rows)"
    )
    if not (work / "keep").exists():
        shutil.rmtree(ds, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temp dir)")
    ap.add_argument("--large", type=int, metavar="N", help="the large case: N runs on Dask")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_dataset_"))
    if args.large:
        large(work, args.large)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return
    src = work / "runs"
    src.mkdir(parents=True, exist_ok=True)
    files = sorted(str(p) for p in src.glob("*.h5"))
    if len(files) != args.runs:
        shutil.rmtree(src)
        src.mkdir()
        print(f"recording {args.runs} runs of 4,000 calls ...")
        subprocess.run([sys.executable, "-c", GEN, str(src), str(args.runs)], check=True)
        files = sorted(str(p) for p in src.glob("*.h5"))
    print(f"cores: {os.cpu_count()}, cli: {' '.join(cli())}, {len(files)} runs, work dir: {work}")
    k = args.repeat
    ds, ex = work / "dataset", work / "export"
    compare(
        "build: CLI",
        (
            "scope-profiler dataset",
            lambda: timed_cmd([*cli(), "dataset", *files, "-o", str(ds)], ds),
        ),
        (
            "scope-profiler export parquet",
            lambda: timed_cmd([*cli(), "export", "parquet", *files, "-o", str(ex)], ex),
        ),
        k,
        "<= 1.5x",
    )
    pool_dir = work / "dataset_pool"
    compare(
        "build: in-process",
        ("dataset.build (threads in one Rust call)", lambda: timed(build_local, files, ds)),
        (
            "per-file conversion in a Python thread pool",
            lambda: timed(build_thread_pool, files, pool_dir),
        ),
        k,
        "informative",
    )
    build_local(files, ds)
    size = sum(p.stat().st_size for p in ds.rglob("*.parquet"))
    print(f"  dataset size: {size / 1e6:.1f} MB for {len(files)} runs")
    compare(
        "query: exclusive time per run and region",
        ("scan(DIR).calls group_by (Polars)", lambda: timed(query_scan, ds)),
        ("loop of read_h5 over the files", lambda: timed(query_loop, files)),
        k,
        "<= 0.25x",
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
