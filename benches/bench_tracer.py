"""Function-level tracing, end to end: cost per traced call of ``scope-profiler run
--recursive`` (trace + finalize + write the .h5) against ``python -m cProfile -o``, the
reference's ``run --recursive`` and viztracer (``--tracer_entries`` large enough to keep
every call), on a recursive pure-Python workload of ~1M calls. Each command is a whole
process; its time minus the untraced script's time, divided by the calls, is the cost per
call. After one warm-up run of each, median of ``--repeat`` rounds (every command once per
round, interleaved); the load average is printed with the table.

Also, with ``--python313``: the same under 3.13, and the cost on 3.12+ of code outside the
selection (``--include`` matching nothing: every code object is DISABLEd at its first
call), measured in one process (whole processes would measure the CLI's fixed cost).

    .venv/bin/python benches/bench_tracer.py [--depth 28] [--repeat 3]
        [--reference .venv-ref/bin/scope-profiler] [--viztracer .venv-ref/bin/viztracer]
        [--python313 .venv-3.13/bin/python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = """
import sys
sys.setrecursionlimit(10_000)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

fib({depth})
"""


#: In one process (3.12+), alternating: fib(24) untraced, then under a recording whose
#: selection matches nothing (`recursive_include="nomatch"`: every code object DISABLEd at
#: its first call). Whole processes would measure the CLI's fixed cost instead.
UNTRACED_CHECK = """
import statistics, sys, time
from scope_profiler import ProfileManager as PM

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def once():
    t = time.perf_counter()
    fib(24)
    return time.perf_counter() - t

base, traced = [], []
for _ in range(15):
    base.append(once())
    PM.setup(recursive_profile=True, deactivate_file_output=True, recursive_include="nomatch", replace=True)
    once()  # first calls: decided, DISABLEd
    traced.append(once())
    PM._finalize(verbose=False, close_open=True)
mb, mt = statistics.median(base), statistics.median(traced)
print(f"{sys.version.split()[0]} code outside the selection: untraced median {mb * 1e3:.2f} ms, "
      f"under --include nomatch {mt * 1e3:.2f} ms: slowdown {(mt / mb - 1) * 100:+.1f} % "
      f"(min {(min(traced) / min(base) - 1) * 100:+.1f} %)  (target <= 5 %)")
"""


def calls_of(depth: int) -> int:
    """Calls of fib(depth): c(n) = 1 + c(n-1) + c(n-2), c(0) = c(1) = 1."""
    a, b = 1, 1
    for _ in range(depth - 1):
        a, b = b, 1 + a + b
    return b if depth >= 1 else 1


#: The commands' environment: without PYTHONDONTWRITEBYTECODE (set on these machines), a
#: package installed editable (ours) would compile every module from source at every start,
#: which no user of an installed wheel pays (pip compiles on install), while the reference's
#: wheel ships compiled: the fixed cost would be ours alone.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], repeat: int, cwd: Path) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
        out.append(time.perf_counter() - t)
        # its output written back to disk now, not by the kernel during the next command
        # (viztracer's JSON is ~100 MB: its writeback slowed whatever ran after it)
        os.sync()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--depth", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", default=".venv-ref/bin/scope-profiler")
    ap.add_argument("--viztracer", default=".venv-ref/bin/viztracer")
    ap.add_argument("--python313", default=None)
    args = ap.parse_args()

    calls = calls_of(args.depth)
    ours = str(Path(sys.executable).with_name("scope-profiler"))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "app.py").write_text(WORKLOAD.format(depth=args.depth))
        py = sys.executable
        commands: list[tuple[str, list[str], str]] = [
            ("untraced", [py, "app.py"], py),
            ("cProfile -o", [py, "-m", "cProfile", "-o", "out.prof", "app.py"], py),
            (
                "ours run (no tracing)",
                [ours, "run", "-q", "--no-speedscope", "-o", "plain.h5", "app.py"],
                py,
            ),
            (
                "ours run --recursive",
                [ours, "run", "--recursive", "-q", "--no-speedscope", "-o", "ours.h5", "app.py"],
                py,
            ),
        ]
        ref = Path(args.reference)
        if ref.exists():
            ref_py = str(ref.with_name("python"))
            commands.append(("untraced (ref venv)", [ref_py, "app.py"], ref_py))
            commands.append(
                (
                    "reference run --recursive",
                    [str(ref), "run", "--recursive", "-q", "-o", "ref.h5", "app.py"],
                    ref_py,
                )
            )
        viz = Path(args.viztracer)
        if viz.exists():
            commands.append(
                (
                    "viztracer",
                    [
                        str(viz),
                        "--quiet",
                        "--tracer_entries",
                        str(3 * calls + 1000),
                        "-o",
                        "viz.json",
                        "app.py",
                    ],
                    str(viz.with_name("python")),
                )
            )
        if args.python313:
            ours313 = str(Path(args.python313).with_name("scope-profiler"))
            commands.append(("untraced 3.13", [args.python313, "app.py"], args.python313))
            commands.append(
                (
                    "ours 3.13 run --recursive",
                    [
                        ours313,
                        "run",
                        "--recursive",
                        "-q",
                        "--no-speedscope",
                        "-o",
                        "o313.h5",
                        "app.py",
                    ],
                    args.python313,
                )
            )
        medians: dict[str, float] = {}
        for _, cmd, _ in commands:  # warm-up: every package's bytecode cached, files paged in
            timed(cmd, 1, d)
        # interleaved: round by round every command once, so load changes hit all alike
        times: dict[str, list[float]] = {name: [] for name, _, _ in commands}
        for _ in range(args.repeat):
            for name, cmd, _ in commands:
                times[name] += timed(cmd, 1, d)
        for name, spent in times.items():
            medians[name] = statistics.median(spent)
        print(
            f"fib({args.depth}): {calls:,} calls; median of {args.repeat}; load average {os.getloadavg()}"
        )
        print(f"{'command':30s} {'wall s':>9s} {'ns/call':>9s}")
        baselines = {
            py: medians["untraced"],
            **(
                {str(ref.with_name("python")): medians["untraced (ref venv)"]}
                if ref.exists()
                else {}
            ),
            **({args.python313: medians["untraced 3.13"]} if args.python313 else {}),
        }
        per_call: dict[str, float] = {}
        for name, _, interp in commands:
            base = baselines.get(interp, medians["untraced"])
            ns = (medians[name] - base) / calls * 1e9
            per_call[name] = ns
            print(f"{name:30s} {medians[name]:9.3f} {ns:9.1f}")
        ours_ns = per_call["ours run --recursive"]
        print()
        print(f"ours / cProfile   = {ours_ns / per_call['cProfile -o']:.2f}  (target <= 2)")
        if ref.exists():
            print(
                f"ours / reference  = {ours_ns / per_call['reference run --recursive']:.3f}  (target <= 0.05)"
            )
        if viz.exists():
            print(f"ours / viztracer  = {ours_ns / per_call['viztracer']:.3f}  (target <= 0.1)")
        if args.python313:
            (d / "untraced_check.py").write_text(UNTRACED_CHECK)
            proc = subprocess.run(
                [args.python313, "untraced_check.py"],
                cwd=d,
                capture_output=True,
                text=True,
                check=True,
            )
            print(proc.stdout.strip())


if __name__ == "__main__":
    main()
