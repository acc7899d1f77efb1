"""ns per coroutine step under track_async: ours (Rust TimedCoroutine) vs the reference's
(scope-profiler 0.7.5, a Python `_timed_coroutine` + `_StepTimer`).

    python benches/bench_async_step.py [--steps N] [--repeat R]

Runs R rounds of the measurement, each in a fresh process of this interpreter (our package)
and then of the reference interpreter (`$SCOPE_PROFILER_REF_PYTHON`, default
.venv-ref/bin/python of this checkout; never the same venv), interleaved, and prints both, the
ratios and the load average before and after.

* `send`: a task's wrapped coroutine driven directly with `send(None)` (what the C Task
  does each step), N steps; overhead per send = wrapped - bare coroutine.
* `loop`: 100 tasks each doing `await asyncio.sleep(0)` N/100 times under `asyncio.run`
  (real event loop, C Task); ns per step, with and without tracking.
* `program`: the 50,000-step program - 100 tasks x 500 `await asyncio.sleep(0)`, each task
  inside one region - profiled under `track_async` (setup to finalize, no file) against the
  same program unprofiled; CPU s of the process per run (`time.process_time`: other
  programs on a shared box slow the wall clock, not this) and the ratio.
Each figure is its minimum over the R rounds, on both sides (the box is noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path


@types.coroutine
def _ticks(n):
    for _ in range(n):
        yield


async def _inner(n):
    await _ticks(n)


def _drive(coro, n):
    send = coro.send
    t0 = time.perf_counter_ns()
    try:
        for _ in range(n + 1):
            send(None)
    except StopIteration:
        pass
    return time.perf_counter_ns() - t0


def _wrapper_factory(tracker):
    """(coro) -> wrapped coroutine, as the task factory builds it, for either package."""
    native = getattr(tracker, "_native", None)
    if native is not None and hasattr(native, "timed_coroutine"):  # ours

        def wrap(coro):
            return native.timed_coroutine(coro, native.new_task("task", "", "bench"))

        return wrap
    from scope_profiler import concurrency  # the reference

    def wrap(coro):
        return concurrency._timed_coroutine(coro, tracker._new_task("task", "", "bench"), tracker)

    return wrap


def _loop_ns(steps, tasks=100):
    per = max(1, steps // tasks)

    async def worker():
        for _ in range(per):
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(*(worker() for _ in range(tasks)))

    t0 = time.perf_counter_ns()
    asyncio.run(main())
    return (time.perf_counter_ns() - t0) / (per * tasks)


def _program_s(manager=None, tasks=100, per=500):
    """CPU s for the 50,000-step program, profiled with `manager` (setup to finalize) or not."""

    async def worker():
        if manager is None:
            for _ in range(per):
                await asyncio.sleep(0)
            return
        with manager.region("worker"):
            for _ in range(per):
                await asyncio.sleep(0)

    async def main():
        await asyncio.gather(*(worker() for _ in range(tasks)))

    t0 = time.process_time()
    if manager is not None:
        manager.setup(track_async=True, deactivate_file_output=True, replace=True)
    asyncio.run(main())
    if manager is not None:
        manager.finalize(verbose=False)
        manager.reset()
    return time.process_time() - t0


def measure(steps, repeat):
    from scope_profiler import ProfileManager

    out = {"python": sys.executable}
    bare, wrapped, loop_off, loop_on = [], [], [], []
    m = ProfileManager()
    for _ in range(repeat):  # alternate, so drifting load hits both sides alike
        loop_off.append(_loop_ns(steps))
        bare.append(_drive(_inner(steps), steps) / steps)
        m.setup(track_async=True, deactivate_file_output=True, replace=True)
        try:
            wrap = _wrapper_factory(m.get_config().tracker)
            wrapped.append(_drive(wrap(_inner(steps)), steps) / steps)
            loop_on.append(_loop_ns(steps))
        finally:
            m.reset()
    out["send_bare_ns"] = min(bare)
    out["send_wrapped_ns"] = min(wrapped)
    out["send_overhead_ns"] = min(wrapped) - min(bare)
    out["loop_untracked_ns"] = min(loop_off)
    out["loop_tracked_ns"] = min(loop_on)
    plain, profiled = [], []
    for _ in range(repeat):
        plain.append(_program_s())
        profiled.append(_program_s(m))
    out["program_plain_s"] = min(plain)
    out["program_profiled_s"] = min(profiled)
    return out


def _worker(python: str, steps: int) -> dict:
    """One `measure` round (each statistic once) in the interpreter `python`."""
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", "--steps", str(steps), "--repeat", "1"],
        capture_output=True,
        text=True,
        cwd="/",
        timeout=600,
    )
    if proc.returncode != 0:
        sys.exit(f"{python} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def _load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in avg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(args.steps, args.repeat)))
        return
    ref_python = (
        os.environ.get("SCOPE_PROFILER_REF_PYTHON")
        or os.environ.get("REF_PYTHON")
        or str(Path(__file__).resolve().parents[1] / ".venv-ref" / "bin" / "python")
    )
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"ours": [], "ref": []}
    for _ in range(args.repeat):  # interleaved: drifting load hits both sides alike
        runs["ours"].append(_worker(sys.executable, args.steps))
        runs["ref"].append(_worker(ref_python, args.steps))
    ours = {k: min(r[k] for r in runs["ours"]) for k in runs["ours"][0] if k != "python"}
    ref = {k: min(r[k] for r in runs["ref"]) for k in runs["ref"][0] if k != "python"}
    for side in (ours, ref):  # recomputed from the minima, as printed
        side["send_overhead_ns"] = side["send_wrapped_ns"] - side["send_bare_ns"]
    print(f"load average before {_load(load_before)}, after {_load(os.getloadavg())}")
    keys = (
        "send_bare_ns",
        "send_wrapped_ns",
        "send_overhead_ns",
        "loop_untracked_ns",
        "loop_tracked_ns",
    )
    print(f"{'ns per step':<22}{'ours':>10}{'reference':>12}")
    for k in keys:
        print(f"{k:<22}{ours[k]:>10.1f}{ref[k]:>12.1f}")
    ratio = (
        ref["send_overhead_ns"] / ours["send_overhead_ns"]
        if ours["send_overhead_ns"] > 0
        else float("inf")
    )
    print(f"send overhead ratio (reference / ours): {ratio:.1f}x")
    d_ours = ours["loop_tracked_ns"] - ours["loop_untracked_ns"]
    d_ref = ref["loop_tracked_ns"] - ref["loop_untracked_ns"]
    print(
        f"event-loop step overhead: ours {d_ours:.0f} ns, reference {d_ref:.0f} ns"
        + (f" ({d_ref / d_ours:.1f}x)" if d_ours > 0 else " (ours below the noise)")
    )
    print("50,000 task steps (100 tasks x 500 sleep(0), one region each), CPU s per run:")
    print(f"{'':<22}{'ours':>10}{'reference':>12}")
    for k in ("program_plain_s", "program_profiled_s"):
        print(f"{k:<22}{ours[k]:>10.4f}{ref[k]:>12.4f}")
    print(
        "profiled / unprofiled: ours "
        f"{ours['program_profiled_s'] / ours['program_plain_s']:.2f}x, reference "
        f"{ref['program_profiled_s'] / ref['program_plain_s']:.2f}x"
    )


if __name__ == "__main__":
    main()
