"""Recording cost at scale: ours vs the reference (scope-profiler 0.7.5), side by side.

usage: python benches/bench_recording.py [--what calls,names,scale,import,finalize]
                                         [--calls N] [--names N] [--rounds R] [--repeat K]
                                         [--ref-python PATH]

Every measurement runs in a fresh subprocess, ours (this interpreter) and the reference
(its own venv, `$SCOPE_PROFILER_REF_PYTHON`, default .venv-ref/bin/python of this checkout) alternating
round by round (ours, ref, ours, ref, ...), so machine drift hits both alike. Per figure the
best and the median over the rounds are printed, with ours/reference of the best (lower is
better for us), and the load average before and after.

* calls    : ns per call in each mode (untracked, track_threads, track_async - inside an
             asyncio task), for a region object kept in a variable (`with region:`), a
             `@profile`d call and `with manager.profile_region("r"):` /
             `with ProfileManager.profile_region("r"):` looked up per call; best of K loops
             of N calls in one session (file output off), minus the same loop without the
             profiler (a bare loop; a plain call for the decorator)
* names    : first use of N distinct names `with ProfileManager.profile_region(f"GET /item/{i}"):`
             in µs per name, minus the loop that only builds the names
* scale    : 100,000 distinct names (one call each): seconds to record and RSS growth per
             name (process RSS after minus before, the names' strings included)
* import   : `import scope_profiler` in a fresh process, ms (best of K in-process timings
             is one round); our package's bytecode is written first (`compileall`), as
             `pip install` wrote the reference's
* finalize : `finalize()` writing the file after N calls of 4 regions (track_threads): ns
             per recorded call, peak RSS growth during finalize per call, bytes on disk per
             call; checked: the reference reads our file back with the same call counts
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS_WORKER = r"""
import asyncio, json, sys, time
from scope_profiler import ProfileManager
mode, calls, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def plain(): return None

def best(fn):
    out = []
    for _ in range(repeat):
        t = time.perf_counter_ns(); fn(); out.append(time.perf_counter_ns() - t)
    return min(out) / calls

def base_with():  # the bare loop: the with-statement machinery is part of the region's cost
    for _ in range(calls):
        pass
def base_call():
    for _ in range(calls): plain()

kw = {"untracked": {}, "track_threads": {"track_threads": True},
      "track_async": {"track_async": True}}[mode]

def measure():
    manager = ProfileManager()
    with manager.session(deactivate_file_output=True, verbose=False, **kw):
        ProfileManager.setup(deactivate_file_output=True, **kw)
        region = manager.profile_region("r")
        decorated = manager.profile(plain)
        def with_region():
            for _ in range(calls):
                with region: pass
        def call_decorated():
            for _ in range(calls): decorated()
        def lookup_instance():
            for _ in range(calls):
                with manager.profile_region("r"): pass
        def lookup_class():
            for _ in range(calls):
                with ProfileManager.profile_region("r"): pass
        res = {"with": best(with_region) - best(base_with),
               "decorator": best(call_decorated) - best(base_call),
               "lookup": best(lookup_instance) - best(base_with),
               "lookup_cls": best(lookup_class) - best(base_with)}
        ProfileManager.finalize(verbose=False)
    return res

if mode == "track_async":
    async def main():
        return measure()
    res = asyncio.run(main())
else:
    res = measure()
print(json.dumps(res))
"""

NAMES_WORKER = r"""
import json, sys, time
from scope_profiler import ProfileManager
names, repeat = int(sys.argv[1]), int(sys.argv[2])
best_new, best_base = float("inf"), float("inf")
for k in range(repeat):
    ProfileManager.setup(deactivate_file_output=True, replace=True)
    prefix = f"GET /item{k}/"
    t = time.perf_counter_ns()
    for i in range(names):
        with ProfileManager.profile_region(f"{prefix}{i}"):
            pass
    best_new = min(best_new, time.perf_counter_ns() - t)
    t = time.perf_counter_ns()
    for i in range(names):
        f"{prefix}{i}"
    best_base = min(best_base, time.perf_counter_ns() - t)
    ProfileManager.finalize(verbose=False)
    ProfileManager.reset()
print(json.dumps({"us_per_name": (best_new - best_base) / names / 1e3}))
"""

SCALE_WORKER = r"""
import gc, json, resource, sys, time
from scope_profiler import ProfileManager
names = int(sys.argv[1])
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
ProfileManager.setup(deactivate_file_output=True)
with ProfileManager.profile_region("warm"):
    pass
gc.collect()
before = rss()
t = time.perf_counter()
for i in range(names):
    with ProfileManager.profile_region(f"GET /item/{i}"):
        pass
took = time.perf_counter() - t
gc.collect()
after = rss()
print(json.dumps({"seconds": took, "bytes_per_name": (after - before) / names}))
ProfileManager.finalize(verbose=False)
"""

IMPORT_WORKER = r"""
import json, sys, time
t = time.perf_counter()
import scope_profiler
took = time.perf_counter() - t
heavy = sorted(m for m in ("numpy", "pyarrow", "asyncio", "greenlet", "h5py") if m in sys.modules)
print(json.dumps({"ms": took * 1e3, "heavy": heavy}))
"""

FINALIZE_WORKER = r"""
import json, os, resource, sys, time, threading
from scope_profiler import ProfileManager
calls, path = int(sys.argv[1]), sys.argv[2]
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
ProfileManager.setup(file_path=path, track_threads=True)
regions = [ProfileManager.profile_region(n) for n in ("outer", "middle", "inner", "leaf")]
outer, middle, inner, leaf = regions
for _ in range(calls // 4):
    with outer:
        with middle:
            with inner:
                with leaf:
                    pass
peak = [0]
stop = threading.Event()
def sample():  # RSS sampled every ~1 ms while finalize runs (it releases the GIL to write)
    while not stop.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.001)
base = rss()
sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
t = time.perf_counter()
ProfileManager.finalize(verbose=False)
took = time.perf_counter() - t
stop.set(); sampler.join()
peak[0] = max(peak[0], rss())
print(json.dumps({"ns_per_call": took * 1e9 / calls, "peak_bytes_per_call": (peak[0] - base) / calls,
                  "disk_bytes_per_call": os.path.getsize(path) / calls}))
"""

READBACK = r"""
import json, sys
import scope_profiler as sp
r = sp.read_h5(sys.argv[1])
print(json.dumps({name: r[name].num_calls if hasattr(r[name], "num_calls") else r[name][0].num_calls
                  for name in ("outer", "middle", "inner", "leaf")}))
"""


def run(python: str, code: str, *args: str) -> dict:
    proc = subprocess.run(
        [python, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd="/tmp",
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_ours() -> None:
    """Write our package's bytecode, as ``pip install`` does for the reference's: an editable
    install under ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module from source
    on each import, which no installed wheel does."""
    code = "import os, scope_profiler; print(os.path.dirname(scope_profiler.__file__))"
    pkg = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], env=env, check=False)


def rounds(ref_python: str, n: int, code: str, *args) -> tuple[list[dict], list[dict]]:
    """``n`` rounds of (ours, reference), interleaved."""
    ours, ref = [], []
    for _ in range(n):
        ours.append(run(sys.executable, code, *args))
        ref.append(run(ref_python, code, *args))
    return ours, ref


def row(
    label: str, key: str, ours: list[dict], ref: list[dict], unit: str, fmt: str = ".0f"
) -> None:
    o = [r[key] for r in ours]
    f = [r[key] for r in ref]
    ratio = min(o) / min(f) if min(f) else float("nan")
    print(
        f"{label:<50} {min(o):>9{fmt}} {statistics.median(o):>9{fmt}}   "
        f"{min(f):>9{fmt}} {statistics.median(f):>9{fmt}}   {ratio:>6.3f}  {unit}"
    )


def header(title: str) -> None:
    print(f"\n{title}")
    print(
        f"{'':<50} {'ours best':>9} {'median':>9}   {'ref best':>9} {'median':>9}   {'ours/ref':>6}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--what", default="calls,names,scale,import,finalize")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--names", type=int, default=20_000)
    ap.add_argument("--scale-names", type=int, default=100_000)
    ap.add_argument("--finalize-calls", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--ref-python",
        default=os.environ.get("SCOPE_PROFILER_REF_PYTHON")
        or os.environ.get("REF_PYTHON")
        or str(Path(__file__).resolve().parents[1] / ".venv-ref" / "bin" / "python"),
    )
    a = ap.parse_args()
    if os.sep in a.ref_python:  # the workers run in /tmp: a relative path would not resolve
        a.ref_python = os.path.abspath(a.ref_python)
    what = a.what.split(",")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"rounds {a.rounds} (ours and reference interleaved, each a fresh process)")
    if "calls" in what:
        header(f"per call, ns (best of {a.repeat} x {a.calls} calls per round, loop subtracted)")
        for mode in ("untracked", "track_threads", "track_async"):
            ours, ref = rounds(a.ref_python, a.rounds, CALLS_WORKER, mode, a.calls, a.repeat)
            for key, label in (
                ("with", "with region (reused)"),
                ("decorator", "@profile call"),
                ("lookup", "with manager.profile_region(r)"),
                ("lookup_cls", "with ProfileManager.profile_region"),
            ):
                row(f"{mode:<13} {label}", key, ours, ref, "ns")
    if "names" in what:
        header(f"new region name, µs per name ({a.names} names, best of {a.repeat})")
        ours, ref = rounds(a.ref_python, a.rounds, NAMES_WORKER, a.names, a.repeat)
        row("first use of a name", "us_per_name", ours, ref, "µs", ".2f")
    if "scale" in what:
        header(f"{a.scale_names} distinct names, one call each")
        ours, ref = rounds(a.ref_python, a.rounds, SCALE_WORKER, a.scale_names)
        row("record", "seconds", ours, ref, "s", ".3f")
        row("RSS growth per name", "bytes_per_name", ours, ref, "bytes")
    if "import" in what:
        header("import scope_profiler, ms (fresh process each)")
        compile_ours()
        ours, ref = rounds(a.ref_python, a.rounds * a.repeat, IMPORT_WORKER)
        row("import", "ms", ours, ref, "ms", ".1f")
        print(f"  heavy modules after import: ours {ours[0]['heavy']}, ref {ref[0]['heavy']}")
    if "finalize" in what:
        header(f"finalize() after {a.finalize_calls} calls (4 regions, track_threads), file output")
        with tempfile.TemporaryDirectory() as d:
            ours, ref = [], []
            for k in range(a.rounds):
                ours.append(run(sys.executable, FINALIZE_WORKER, a.finalize_calls, f"{d}/o{k}.h5"))
                ref.append(run(a.ref_python, FINALIZE_WORKER, a.finalize_calls, f"{d}/r{k}.h5"))
            row("finalize per recorded call", "ns_per_call", ours, ref, "ns", ".1f")
            row("peak RSS growth per call", "peak_bytes_per_call", ours, ref, "bytes", ".1f")
            row("file size per call", "disk_bytes_per_call", ours, ref, "bytes", ".2f")
            back = run(a.ref_python, READBACK, f"{d}/o0.h5")
            expected = dict.fromkeys(("outer", "middle", "inner", "leaf"), a.finalize_calls // 4)
            print(
                f"  reference reads our file: {back} ({'ok' if back == expected else 'MISMATCH'})"
            )
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
