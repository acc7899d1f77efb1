"""Did my change make it faster? Record two versions of a program three times each and
compare them with ``scope_profiler.compare()`` (the same as ``scope-profiler diff``).

    python examples/compare_versions.py [OUT_DIR]

Version 1 orders each batch with an insertion sort, version 2 with ``sorted()``; loading a
batch (a sleep standing in for I/O) and the checksum are the same code in both (on a busy
machine their times can still differ a little: a process that burns less CPU is woken sooner). The runs are
recorded alternately (v1, v2, v1, v2, ...) so that a machine that gets busier or quieter
meanwhile weighs on both versions alike; each version's three runs are a group, whose
run-to-run variation the intervals count. Writes OUT_DIR/v1/run*.h5, OUT_DIR/v2/run*.h5 and
OUT_DIR/diff.html, and prints the rows.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import scope_profiler as sp

BATCHES = 20
BATCH_SIZE = 300


def load(batch: int) -> list[int]:
    with sp.region("load"):
        time.sleep(0.005)  # stands in for reading the batch
        rng = random.Random(batch)
        return [rng.randrange(1_000_000) for _ in range(BATCH_SIZE)]


def insertion_sort(items: list[int]) -> list[int]:
    out: list[int] = []
    for x in items:
        i = len(out)
        while i > 0 and out[i - 1] > x:
            i -= 1
        out.insert(i, x)
    return out


def order(items: list[int], version: int) -> list[int]:
    with sp.region("order"):
        return insertion_sort(items) if version == 1 else sorted(items)


def checksum(items: list[int]) -> int:
    with sp.region("checksum"):
        return sum(i * x for i, x in enumerate(items)) % 1_000_003


def record(version: int, path: Path) -> None:
    """One run of the program in `version`, recorded into `path`."""
    with sp.session(file_path=str(path), verbose=False):
        for batch in range(BATCHES):
            with sp.region("batch"):
                checksum(order(load(batch), version))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "compare_versions")
    for k in (1, 2, 3):
        for version in (1, 2):  # alternately: drift of the machine hits both versions
            (out / f"v{version}").mkdir(parents=True, exist_ok=True)
            record(version, out / f"v{version}" / f"run{k}.h5")

    c = sp.compare(out / "v1", out / "v2")
    print(f"{c.base['label']} ({len(c.base['runs'])} runs) -> {c.new['label']}")
    for r in c.rows:
        interval = f"[{r['ci_low']:+.1%}, {r['ci_high']:+.1%}]" if r["ci_low"] is not None else "-"
        change = f"{r['change']:+.1%}" if r["change"] is not None else "-"
        print(
            f"  {r['name']:<24} {r['base_time'] * 1e3:9.2f} ms -> {r['new_time'] * 1e3:9.2f} ms"
            f"  {change:>8} {interval:>18}  {r['verdict']}"
        )
    print("regressions above 10 %:", [r["name"] for r in c.regressions(10)] or "none")

    # the same comparison from the command line, with the page and its flame graph
    page = out / "diff.html"
    subprocess.run(
        [sys.executable, "-m", "scope_profiler", "diff", out / "v1", out / "v2", "-o", page],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"wrote {page}")


if __name__ == "__main__":
    main()
