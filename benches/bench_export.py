"""Export benchmarks.

1. Batch: `scope-profiler export speedscope,folded,flamegraph,timeline,parquet` over 100
   reference-like files (a 4-thread run, four nested regions, written by the reference
   package scope-profiler 0.7.5), once with one worker (-j 1) and once with the default
   (one per core). Prints wall and CPU time; CPU/wall near the core count shows every core
   is used.
2. Large: speedscope export of a 2M-event file written by the reference (500k iterations
   of four nested regions on one thread), ours (`export_speedscope` in-process, and the
   CLI end to end) against the reference's own `export_speedscope` on the same file.

usage: python benches/bench_export.py [--ref-python PATH] [--files N] [--keep DIR]
The reference interpreter defaults to $SCOPE_PROFILER_REF_PYTHON.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GEN = r"""
import sys, threading
import scope_profiler as sp
kind, path = sys.argv[1], sys.argv[2]
def nested(a, b, c, d):
    with a:
        with b:
            with c:
                with d:
                    pass
if kind == "batch":
    sp.setup(file_path=path, track_threads=True)
    regs = [sp.region(n) for n in ("outer", "middle", "inner", "leaf")]
    def work():
        for _ in range(1_000):
            nested(*regs)
    ts = [threading.Thread(target=work, name=f"worker-{i}") for i in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
else:
    sp.setup(file_path=path, buffer_limit=1 << 20)
    regs = [sp.region(n) for n in ("outer", "middle", "inner", "leaf")]
    for _ in range(500_000):
        nested(*regs)
sp.finalize(verbose=False)
"""

REF_EXPORT = r"""
import sys, time
import scope_profiler as sp
r = sp.read_h5(sys.argv[1])
t, c = time.perf_counter(), time.process_time()
sp.export_speedscope(r, sys.argv[2], verbose=False)
print(time.perf_counter() - t, time.process_time() - c)
"""


def cli() -> list[str]:
    exe = ROOT / "target" / "release" / "scope-profiler"
    if os.environ.get("CARGO_TARGET_DIR"):
        exe = Path(os.environ["CARGO_TARGET_DIR"]) / "release" / "scope-profiler"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "scope_profiler"]


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the child) of running `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... failed:\n{proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ref-python", default=os.environ.get("SCOPE_PROFILER_REF_PYTHON"))
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temp dir)")
    args = ap.parse_args()
    if not args.ref_python or not Path(args.ref_python).exists():
        raise SystemExit("needs the reference package: --ref-python or $SCOPE_PROFILER_REF_PYTHON")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_export_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"cores: {os.cpu_count()}, cli: {' '.join(cli())}, work dir: {work}")

    # 1. batch
    src = work / "batch_src.h5"
    if not src.exists():
        subprocess.run([args.ref_python, "-c", GEN, "batch", str(src)], check=True)
    files = []
    for i in range(args.files):
        f = work / "batch" / f"run{i:03d}.h5"
        f.parent.mkdir(exist_ok=True)
        if not f.exists():
            shutil.copy(src, f)
        files.append(str(f))
    formats = "speedscope,folded,flamegraph,timeline,parquet"
    print(f"\n[batch] {args.files} files x 16000 events (4 threads), formats {formats}")
    print(
        f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes share the cores)"
    )
    results = {}
    for jobs in ("1", None):
        out = work / f"out_j{jobs or 'all'}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [*cli(), "export", formats, *files, "-o", str(out)] + (["-j", jobs] if jobs else [])
        wall, cpu = timed(cmd)
        results[jobs] = (wall, cpu)
        label = "-j 1      " if jobs else "default -j"
        print(
            f"  {label}: wall {wall:7.3f} s  cpu {cpu:7.3f} s  cpu/wall {cpu / wall:4.2f}  "
            f"({len(list(out.iterdir()))} outputs)"
        )
    w1, wn = results["1"][0], results[None][0]
    print(f"  speedup default vs -j 1: {w1 / wn:.2f}x wall")

    # 2. large speedscope
    big = work / "big_2M.h5"
    if not big.exists():
        print("\n[large] writing the 2M-event file with the reference ...")
        subprocess.run([args.ref_python, "-c", GEN, "single", str(big)], check=True)
    print(
        f"\n[large] speedscope export of {big.name} (2,000,000 events, {big.stat().st_size / 1e6:.1f} MB)"
    )
    import scope_profiler as sp

    t = time.perf_counter()
    run = sp.read_h5(big)
    read_s = time.perf_counter() - t
    ours, ours_cpu = [], []
    for k in range(3):
        t, c = time.perf_counter(), time.process_time()
        sp.export_speedscope(run, work / f"ours_{k}.speedscope.json", verbose=False)
        ours.append(time.perf_counter() - t)
        ours_cpu.append(time.process_time() - c)
    ours_s, ours_c = min(ours), min(ours_cpu)
    cli_wall, cli_cpu = timed(
        [*cli(), "export", "speedscope", str(big), "-o", str(work / "cli_big")]
    )
    proc = subprocess.run(
        [args.ref_python, "-c", REF_EXPORT, str(big), str(work / "ref.speedscope.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    ref_s, ref_c = map(float, proc.stdout.strip().splitlines()[-1].split())
    print(
        f"  load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes share the cores)"
    )
    print(
        f"  ours export_speedscope (in-process, read {read_s:.3f} s excluded): wall {ours_s:7.3f} s  cpu {ours_c:7.3f} s (best of 3)"
    )
    print(
        f"  ours CLI end to end (read + export):                       wall {cli_wall:7.3f} s  cpu {cli_cpu:7.3f} s"
    )
    print(
        f"  reference export_speedscope (read excluded):               wall {ref_s:7.3f} s  cpu {ref_c:7.3f} s"
    )
    print(
        f"  ratio ours/reference: wall 1/{ref_s / ours_s:.0f}, cpu 1/{ref_c / ours_c:.0f}; "
        f"CLI end to end (incl. read) / reference: wall 1/{ref_s / cli_wall:.0f}, cpu 1/{ref_c / cli_cpu:.0f}; target <= 1/50"
    )
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
