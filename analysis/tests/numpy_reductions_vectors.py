"""Test vectors for `analysis::numpy_reductions`: numpy's own results, as exact float64 bit patterns.

Run with the project's venv (numpy 2.4) from the repository root:

    .venv/bin/python analysis/tests/numpy_reductions_vectors.py

It writes `analysis/tests/data/numpy_reductions.json`. Arrays are not stored: each case names a
distribution, a size and a seed, and `analysis/tests/numpy_reductions.rs` regenerates the same int64
values with the same 64-bit LCG (see `lcg_values` and `draw`). Float64 cases are the int64
values divided by 1e9 (durations in seconds, as the results objects build them). The pooled
standard deviation cases replay the Python expression of `MPIRegion.std_duration`.
"""

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

MASK = (1 << 64) - 1
LCG_MUL = 6364136223846793005
LCG_INC = 1442695040888963407
LCG_SHIFT = 11

DISTRIBUTIONS = ["small", "dur", "huge", "wide", "mixed", "neg", "const", "giant"]
SIZES = [*range(21), 127, 128, 129, 130, 1000, 8191, 8192, 8193, 8194, 16385, 100_000, 1_000_003]
PERCENTS = [0.0, 0.1, 5.0, 25.0, 33.3, 50.0, 66.7, 95.0, 99.9, 100.0]


def lcg_values(seed: int, n: int):
    """`n` draws: state = state * MUL + INC (mod 2**64), draw = state >> SHIFT."""
    state = seed & MASK
    for _ in range(n):
        state = (state * LCG_MUL + LCG_INC) & MASK
        yield state >> LCG_SHIFT


def draw(dist: str, u: int) -> int:
    """One int64 value of distribution `dist` from one LCG draw `u` (53 bits)."""
    if dist == "small":
        return u % 1000
    if dist == "dur":
        return 1_000 + u % 50_000_000
    if dist == "huge":
        return 10**15 + u % 10**12
    if dist == "wide":
        return u % (1 << 53)
    if dist == "mixed":
        return 10**15 + u % 10**9 if u % 5 == 0 else u % 10_000
    if dist == "neg":
        return u % (2 * 10**12) - 10**12
    if dist == "const":
        return 987_654_321
    if dist == "giant":  # beyond 2**53: the int64 -> float64 cast rounds
        return (1 << 62) + u
    raise ValueError(dist)


def bits(x) -> str:
    """float64 bit pattern as 16 hex digits."""
    return f"{np.float64(x).view(np.uint64):016x}"


def percentile_or_none(a, q):
    try:
        return bits(float(np.percentile(a, q)))
    except IndexError:  # numpy raises on an empty array
        return None


def stats(a) -> dict:
    if a.dtype == np.int64:
        total = np.add.reduce(a, dtype=np.float64)
    else:
        total = np.add.reduce(a)
    return {
        "sum": bits(total),
        "mean": bits(float(np.mean(a))),
        "var": bits(float(np.var(a))),
        "std": bits(float(np.std(a))),
        "pct": [percentile_or_none(a, q) for q in PERCENTS],
    }


def pooled_python(summaries) -> float:
    """`MPIRegion.std_duration` for summary-only rows, verbatim (seconds)."""
    count = sum(int(s["count"]) for s in summaries)
    mean = sum(int(s["count"]) * float(s["mean"]) for s in summaries) / count
    m2 = sum(float(s["m2"]) + int(s["count"]) * (float(s["mean"]) - mean) ** 2 for s in summaries)
    return float(np.sqrt(max(m2, 0.0) / count)) / 1e9


def stored_python(count: int, m2: float) -> float:
    """`Region.std_duration` for a summary-only row, verbatim (seconds)."""
    return float(np.sqrt(max(float(m2), 0.0) / count)) / 1e9 if count else 0.0


def pooled_cases():
    out = []
    draws = lcg_values(424242, 10_000)
    for group in range(80):
        rows = []
        for _ in range(1 + group % 8):
            count = 1 + next(draws) % 1000
            mean = (next(draws) % 10**10) / 3.0
            m2 = (next(draws) % 10**18) * 1.25
            if group % 17 == 0:
                m2 = -float(next(draws) % 1000)
            if group == 1:
                m2 = -0.0  # Python's max(-0.0, 0.0) keeps -0.0, and so does np.sqrt
            rows.append({"count": count, "mean": mean, "m2": m2})
        summaries = [{"count": r["count"], "mean": r["mean"], "m2": r["m2"]} for r in rows]
        out.append(
            {
                "rows": [[r["count"], bits(r["mean"]), bits(r["m2"])] for r in rows],
                "pooled": bits(pooled_python(summaries)),
                "stored": [bits(stored_python(r["count"], r["m2"])) for r in rows],
            }
        )
    return out


def main() -> None:
    warnings.simplefilter("ignore", RuntimeWarning)  # empty slices: numpy's nan is the value
    cases = []
    for n in SIZES:
        for k, dist in enumerate(DISTRIBUTIONS):
            seed = n * 1000 + k + 1
            ints = np.fromiter(
                (draw(dist, u) for u in lcg_values(seed, n)), dtype=np.int64, count=n
            )
            floats = ints / 1e9
            cases.append(
                {"dist": dist, "n": n, "seed": seed, "i64": stats(ints), "f64": stats(floats)}
            )
    doc = {
        "numpy": np.__version__,
        "python": sys.version.split()[0],
        "lcg": {"mul": LCG_MUL, "inc": LCG_INC, "shift": LCG_SHIFT},
        "percents": [bits(q) for q in PERCENTS],
        "cases": cases,
        "pooled": pooled_cases(),
    }
    assert all(math.isfinite(q) for q in PERCENTS)
    path = Path(__file__).parent / "data" / "numpy_reductions.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"{path}: {len(cases)} array cases, {len(doc['pooled'])} pooled cases")


if __name__ == "__main__":
    main()
