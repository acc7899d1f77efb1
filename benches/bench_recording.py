"""Per-call recording cost: ours vs the reference (scope-profiler 0.7.5), side by side.

usage: python benches/bench_recording.py [--calls N] [--repeat R] [--ref-python PATH]

Each variant runs in its own subprocess (ours: this interpreter; the reference: its own
venv, `$SCOPE_PROFILER_REF_PYTHON`, default /work/refvenv/bin/python). A variant times N
`with region:` blocks (and N calls of a `@profile`d function) inside a session with file
output off, best of R repeats, minus the same loop with no profiler (the bare loop for `with`,
a plain call of the undecorated function for the decorator), and prints ns per call and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

WORKER = r"""
import json, sys, time
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

kw = {"track_threads": True} if mode == "track_threads" else {}
manager = ProfileManager()
with manager.session(deactivate_file_output=True, verbose=False, **kw):
    region = manager.profile_region("r")
    decorated = manager.profile(plain)
    def with_region():
        for _ in range(calls):
            with region: pass
    def call_decorated():
        for _ in range(calls): decorated()
    res = {"with": best(with_region) - best(base_with),
           "decorator": best(call_decorated) - best(base_call)}
print(json.dumps(res))
"""


def run(python: str, mode: str, calls: int, repeat: int) -> dict:
    proc = subprocess.run(
        [python, "-c", WORKER, mode, str(calls), str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        cwd="/tmp",
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--ref-python",
        default=os.environ.get("SCOPE_PROFILER_REF_PYTHON", "/work/refvenv/bin/python"),
    )
    a = ap.parse_args()
    print(
        f"ns per call, best of {a.repeat} x {a.calls} calls, loop overhead subtracted; load {os.getloadavg()[0]:.2f}"
    )
    print(f"{'mode':<14} {'path':<10} {'ours':>8} {'reference':>10} {'ref/ours':>9}")
    for mode in ("untracked", "track_threads"):
        ours = run(sys.executable, mode, a.calls, a.repeat)
        ref = run(a.ref_python, mode, a.calls, a.repeat)
        for path in ("with", "decorator"):
            print(
                f"{mode:<14} {path:<10} {ours[path]:>8.0f} {ref[path]:>10.0f} {ref[path] / ours[path]:>9.1f}"
            )


if __name__ == "__main__":
    main()
