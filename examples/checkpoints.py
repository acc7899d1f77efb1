"""Checkpoints: a long-running program writes what it recorded so far, phase by phase.

    python examples/checkpoints.py [OUT_DIR]

``setup()`` once, then ``finalize()`` after each phase: every finalize is a checkpoint that
writes the calls completed since the previous one to ``file_path`` and keeps recording (the
thread table carries on, call ids continue). Here each checkpoint's file is kept as
``phase<N>.h5`` and its results are returned, so each phase is read on its own; the three
files together are the whole run (``scope-profiler summary --merge OUT_DIR/phase*.h5``).
A call still open at a checkpoint is reported by the next one.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import scope_profiler as sp


def step(n: int) -> None:
    for _ in range(n):
        with sp.region("step"):
            time.sleep(0.002)


def phase(k: int) -> None:
    with sp.region(f"phase-{k}"):
        workers = [
            threading.Thread(target=step, args=(k + 1,), name=f"p{k}-w{i}") for i in range(2)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()


def main(out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    current = os.path.join(out_dir, "current.h5")
    sp.setup(file_path=current, track_threads=True)
    try:
        for k in range(1, 4):
            phase(k)
            results = sp.finalize(verbose=False, return_results=True)  # checkpoint
            kept = os.path.join(out_dir, f"phase{k}.h5")
            os.replace(current, kept)
            threads = [t.name for t in results.threads[0]]
            print(
                f"checkpoint {k}: {kept}: step x{results['step'][0].num_calls}, "
                f"{len(threads)} threads known ({', '.join(threads)})"
            )
    finally:
        sp.reset()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "checkpoints")
