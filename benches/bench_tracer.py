"""Function-level tracing, end to end: cost per traced call of ``scope-profiler run
--recursive`` with its default outputs (trace, finalize, the summary printed, the .h5 and
its flame graph written) and with ``--speedscope`` (the full timeline too), against
``python -m cProfile -o`` under the same interpreter, the reference's ``run --recursive``
and viztracer (``--tracer_entries`` large enough to keep every call), on a recursive
pure-Python workload of ~1M calls. Each command is a whole process; its time minus the
untraced script's time under its interpreter, divided by the calls, is the cost per call.
After one warm-up run of each, median of ``--repeat`` rounds (every command once per round,
interleaved, 3.13's too); the load average and each file's bytes per call are printed with
the table.

Also, with ``--python313``: the same under 3.13, and the cost on 3.12+ of code outside the
selection (``--include`` matching nothing: every code object is DISABLEd at its first
call), measured in one process (whole processes would measure the CLI's fixed cost).

    .venv/bin/python benches/bench_tracer.py [--depth 28] [--repeat 3]
        [--reference $SCOPE_PROFILER_REF_PYTHON's scope-profiler]
        [--viztracer $SCOPE_PROFILER_REF_PYTHON's viztracer]
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


def ours_commands(python: str, tag: str) -> list[tuple[str, list[str], str]]:
    """Under ``python``: cProfile and ours, ``run --recursive`` with its default outputs (the
    summary printed, the ``.h5`` and its flame graph written) and with ``--speedscope`` (the
    full timeline too); ``tag`` names the rows."""
    ours = str(Path(python).with_name("scope-profiler"))
    recursive = [ours, "run", "--recursive"]
    return [
        (f"untraced{tag}", [python, "app.py"], python),
        (f"cProfile -o{tag}", [python, "-m", "cProfile", "-o", "out.prof", "app.py"], python),
        (f"ours{tag} --recursive (default)", [*recursive, "-o", "ours.h5", "app.py"], python),
        (
            f"ours{tag} --recursive --speedscope",
            [*recursive, "--speedscope", "-o", "ours_ss.h5", "app.py"],
            python,
        ),
    ]


def default_tool(name: str) -> str:
    """``name`` beside ``$SCOPE_PROFILER_REF_PYTHON`` (the reference's interpreter), else in
    ``.venv-ref/bin`` of the checkout."""
    ref_python = os.environ.get("SCOPE_PROFILER_REF_PYTHON")
    if ref_python:
        return str(Path(ref_python).with_name(name))
    return f".venv-ref/bin/{name}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--depth", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", default=default_tool("scope-profiler"))
    ap.add_argument("--viztracer", default=default_tool("viztracer"))
    ap.add_argument("--python313", default=None)
    args = ap.parse_args()
    # the commands run in a scratch directory: paths given relative to here are made absolute
    # (not resolved: a venv's python is a symlink that must stay one)
    for name in ("reference", "viztracer", "python313"):
        if getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).absolute()))

    calls = calls_of(args.depth)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "app.py").write_text(WORKLOAD.format(depth=args.depth))
        py = sys.executable
        ours = str(Path(py).with_name("scope-profiler"))
        commands = ours_commands(py, "")
        commands.insert(
            2, ("ours run (no tracing)", [ours, "run", "-q", "-o", "plain.h5", "app.py"], py)
        )
        tags = [("", py)]
        if args.python313:
            commands += ours_commands(args.python313, " 3.13")
            tags.append((" 3.13", args.python313))
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
        viz_py = str(viz.with_name("python"))
        if viz.exists():
            if not Path(viz_py).exists():  # a launcher script: its interpreter is on line 1
                viz_py = viz.read_text().splitlines()[0].removeprefix("#!").strip()
            commands.append(("untraced (viztracer venv)", [viz_py, "app.py"], viz_py))
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
                    viz_py,
                )
            )
        for _, cmd, _ in commands:  # warm-up: every package's bytecode cached, files paged in
            timed(cmd, 1, d)
        # interleaved: round by round every command once, so load changes hit all alike
        times: dict[str, list[float]] = {name: [] for name, _, _ in commands}
        for _ in range(args.repeat):
            for name, cmd, _ in commands:
                times[name] += timed(cmd, 1, d)
        medians = {name: statistics.median(spent) for name, spent in times.items()}
        print(
            f"fib({args.depth}): {calls:,} calls; median of {args.repeat}; load average {os.getloadavg()}"
        )
        print(f"{'command':36s} {'wall s':>9s} {'ns/call':>9s}")
        # each command's untraced time: the untraced row of its interpreter
        baselines = {
            interp: medians[name] for name, cmd, interp in commands if cmd == [interp, "app.py"]
        }
        per_call: dict[str, float] = {}
        for name, _, interp in commands:
            ns = (medians[name] - baselines[interp]) / calls * 1e9
            per_call[name] = ns
            print(f"{name:36s} {medians[name]:9.3f} {ns:9.1f}")
        print()
        for tag, _ in tags:
            cprofile = per_call[f"cProfile -o{tag}"]
            default = per_call[f"ours{tag} --recursive (default)"]
            full = per_call[f"ours{tag} --recursive --speedscope"]
            print(
                f"ours{tag} default / cProfile{tag}      = {default / cprofile:.2f}  (target <= 1.5)"
            )
            print(f"ours{tag} --speedscope / cProfile{tag} = {full / cprofile:.2f}")
        ours_ns = per_call["ours --recursive (default)"]
        if ref.exists():
            print(
                f"ours default / reference = {ours_ns / per_call['reference run --recursive']:.3f}  (target <= 0.05)"
            )
        if viz.exists():
            print(
                f"ours default / viztracer = {ours_ns / per_call['viztracer']:.3f}  (target <= 0.1)"
            )
        sizes = {f.name: f.stat().st_size for f in sorted(d.iterdir()) if f.name.startswith("ours")}
        print(
            "files of ours (3.11 run last): "
            + ", ".join(f"{name} {size / calls:.1f} B/call" for name, size in sizes.items())
        )
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
