"""Every export of one run, each with the viewer that opens it.

    python examples/exports.py [RUN.h5] [OUT_DIR]

Reads RUN.h5 (default: records a small threaded + asyncio run first) and writes into
OUT_DIR (default ``exports/``):

    run.speedscope.json   https://www.speedscope.app (drag the file in), one profile per lane
    run.trace.json        https://ui.perfetto.dev or chrome://tracing, one track per lane
    run.pftrace           https://ui.perfetto.dev, task tracks with "awaiting" slices
    run_rank0.prof        snakeviz run_rank0.prof, gprof2dot -f pstats run_rank0.prof, pstats.Stats
    run.pb.gz             go tool pprof -http=: run.pb.gz
    run.folded            inferno-flamegraph / flamegraph.pl, speedscope
    run.svg               flame graph (any browser)
    run.timeline.svg      lane timeline (any browser)
    run.parquet           DuckDB, Polars, pandas (+ run.lanes.parquet)
    run.html              the HTML report (any browser, no server)
    run.json              the JSON profile (scope_profiler.read_json)

A directory as the target writes the default names inside it; a name without a suffix gets
the format's own.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path

import scope_profiler as sp


def record(path: Path) -> None:
    """A worker thread and two asyncio tasks, recorded with track_async."""

    def work():
        for _ in range(3):
            with sp.region("work"):
                time.sleep(0.003)

    async def task(i):
        with sp.region("task"):
            await asyncio.sleep(0.005 * (i + 1))

    async def both():
        await asyncio.gather(task(0), task(1))

    with sp.session(file_path=str(path), track_async=True, verbose=False):
        t = threading.Thread(target=work, name="worker")
        t.start()
        asyncio.run(both())
        t.join()


def main(run_h5: Path, out: Path) -> list[Path]:
    if not run_h5.exists():
        record(run_h5)
    results = sp.read_h5(str(run_h5))
    stem = out / "run"
    written: list[Path] = []
    written += sp.export_speedscope(results, f"{stem}.speedscope.json", verbose=False)
    written += sp.export_chrome_trace(results, f"{stem}.trace.json", verbose=False)
    written += sp.export_perfetto(results, f"{stem}.pftrace", verbose=False)
    written += sp.export_prof(results, f"{stem}.prof", verbose=False)
    written += sp.export_pprof(results, f"{stem}.pb.gz", verbose=False)
    written += sp.export_folded(results, f"{stem}.folded", verbose=False)
    written += sp.export_flamegraph_svg(results, f"{stem}.svg", verbose=False)
    written += sp.export_timeline_svg(results, f"{stem}.timeline.svg", verbose=False)
    written += sp.export_parquet(results, f"{stem}.parquet", verbose=False)
    written += sp.export_html(results, f"{stem}.html", verbose=False)
    written += sp.export_json(results, f"{stem}.json", verbose=False)
    for p in written:
        print(f"{p.stat().st_size:>9,} bytes  {p}")
    return written


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0] if args else "exports_run.h5"), Path(args[1] if len(args) > 1 else "exports"))
