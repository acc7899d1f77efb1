"""The command line on a batch of runs: record the same script with three settings, then
summarise, merge, export and report them without writing any Python.

    python examples/batch_cli.py [OUT_DIR]

It runs, in order (``scope-profiler`` is also ``python -m scope_profiler``):

    scope-profiler run --track-threads -q -o OUT/runs/workers_N.h5 examples/threaded_pipeline.py   (N = 1, 2, 4)
    scope-profiler summary OUT/runs/workers_1.h5
    scope-profiler summary --merge OUT/runs/workers_*.h5
    scope-profiler export speedscope,timeline,parquet OUT/runs/*.h5 -o OUT/exports
    scope-profiler report OUT/runs/*.h5 -o OUT/report.html
    duckdb: select the busiest region of each run from the Parquet files (when duckdb is installed)

``threaded_pipeline.py`` reads its number of workers from ``PIPELINE_WORKERS``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "scope_profiler"]


def sh(*args: object, env: dict | None = None) -> str:
    cmd = [*CLI, *map(str, args)]
    print("$ scope-profiler " + " ".join(map(str, args)))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return out.stdout + out.stderr


def main(out: Path) -> None:
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    files = []
    for n in (1, 2, 4):
        f = runs / f"workers_{n}.h5"
        env = {**os.environ, "PIPELINE_WORKERS": str(n)}
        sh(
            "run",
            "--track-threads",
            "-q",
            "--no-speedscope",
            "-o",
            f,
            HERE / "threaded_pipeline.py",
            env=env,
        )
        files.append(f)
    print(sh("summary", files[0]))
    print(sh("summary", "--merge", *files).splitlines()[0])
    print(sh("export", "speedscope,timeline,parquet", *files, "-o", out / "exports"))
    print(sh("report", *files, "-o", out / "report.html"))
    try:
        import duckdb
    except ImportError:
        return
    events = [str(out / "exports" / f"{f.stem}.parquet") for f in files]  # not the .lanes ones
    query = f"""
        select filename, arg_max(region, s), max(s) from (
            select filename, region, sum(exclusive_ns) / 1e9 as s
            from read_parquet({events!r}, filename = true)
            where region != 'scope_profiler.session' group by all
        ) group by filename order by filename"""
    for name, region, secs in duckdb.sql(query).fetchall():
        print(f"{Path(name).stem}: busiest region {region} ({secs:.3f} s exclusive)")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "batch_cli"))
