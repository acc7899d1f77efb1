"""Parity with the reference package: the same API calls on the same files give the same
answers (run in the reference's own interpreter; skipped when it is not available)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from conftest import COMPAT, REFERENCE, REFERENCE_NAMES
from helpers import reference_python

DUMP = r"""
import json, sys
import numpy as np
import scope_profiler as sp

def clean(value):
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and value != value:
        return "nan"
    return value

r = sp.read_h5(sys.argv[1])
out = {
    "region_names": r.region_names,
    "get_regions": [g.name for g in r.get_regions()],
    "num_ranks": r.num_ranks,
    "times": [r.run_start_time, r.finalize_time, r.total_time, r.time_origin,
              r.minimum_start_time, r.maximum_end_time, r.time_span, r.startup_time],
    "labels": [r.label, r.display_label, r.num_nodes, r.default_title()],
    "summary": r.summary(),
    "events": r.events(),
    "events_abs": r.events(relative=False, include=".*s"),
    "call_stack": r.call_stack(),
    "call_stack_filtered": r.call_stack(exclude=["inner", "parse", "solve"]),
    "call_graph": r.call_graph(),
    "call_graph_filtered": r.call_graph(exclude=["inner", "parse", "solve"]),
    "thread_summary": {rank: r.thread_summary(rank) for rank in range(r.num_ranks)},
    "regions": {},
}
for name in r.region_names:
    m = r[name]
    entry = {"mpi": m.get_summary(), "p": [m.p50_duration, m.p95_duration, m.p99_duration],
             "repr": repr(m), "source": [m.source_file, m.source_lineno, m.tags], "ranks": {}}
    for rank in m.ranks:
        g = m[rank]
        entry["ranks"][rank] = {
            "summary": g.get_summary(),
            "p": [g.percentile_duration(q) for q in (0, 10, 50, 95, 99, 100)],
            "first_last": [g.first_start_time, g.last_end_time],
            "repr": repr(g),
            "threads": g.threads,
            "total_await": g.total_await_duration,
            "events": g.events(origin=1.0),
            "exclusive_ns": g.exclusive_durations_ns.tolist(),
            "for_thread": {
                i: {k: v for k, v in g.for_thread(i).get_summary().items() if "exclusive" not in k}
                for i in g.threads
            },
        }
    out["regions"][name] = entry
print(json.dumps(clean(out)))
"""


def dump(python: str, path) -> dict:
    proc = subprocess.run([python, "-c", DUMP, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_same(ours, ref, where="$"):
    if isinstance(ref, float) and isinstance(ours, (int, float)):
        assert math.isclose(ours, ref, rel_tol=1e-12, abs_tol=1e-15), f"{where}: {ours} != {ref}"
    elif isinstance(ref, dict):
        assert isinstance(ours, dict), where
        assert list(ours) == list(ref), f"{where}: keys {list(ours)} != {list(ref)}"
        for key in ref:
            assert_same(ours[key], ref[key], f"{where}.{key}")
    elif isinstance(ref, list):
        assert isinstance(ours, list) and len(ours) == len(ref), f"{where}: length"
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert ours == ref, f"{where}: {ours!r} != {ref!r}"


FILES = [REFERENCE / f"{name}.h5" for name in REFERENCE_NAMES] + [
    COMPAT / f"schema-{n}.h5" for n in (1, 2, 3)
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_same_answers_as_reference(path):
    ref = dump(reference_python(), path)
    ours = dump(sys.executable, path)
    assert_same(ours, ref)


def test_speedscope_document_matches_reference(tmp_path):
    ref_python = reference_python()
    for name in ("threads", "async", "single", "pool"):
        src = REFERENCE / f"{name}.h5"
        ref_out = tmp_path / f"ref_{name}.speedscope.json"
        our_out = tmp_path / f"our_{name}.speedscope.json"
        code = ("import sys, scope_profiler as sp; "
                "sp.export_speedscope(sp.read_h5(sys.argv[1]), sys.argv[2], verbose=False)")
        for python, out in ((ref_python, ref_out), (sys.executable, our_out)):
            proc = subprocess.run([python, "-c", code, str(src), str(out)], capture_output=True,
                                  text=True, timeout=300)
            assert proc.returncode == 0, proc.stderr
        ours = json.loads(our_out.read_text())
        ref = json.loads(ref_out.read_text())
        # Documented differences of formats::speedscope: exporter name, profile order (main
        # thread first), frames with file/line, activeProfileIndex on the main thread. The
        # profiles themselves (names, times, events by frame name) must be identical.
        assert ours["$schema"] == ref["$schema"] and ours["name"] == ref["name"]
        assert sorted(f["name"] for f in ours["shared"]["frames"]) == sorted(
            f["name"] for f in ref["shared"]["frames"]
        )

        def profiles(doc):
            frames = [f["name"] for f in doc["shared"]["frames"]]
            return {
                p["name"]: {
                    **{k: v for k, v in p.items() if k != "events"},
                    "events": [[e["type"], frames[e["frame"]], e["at"]] for e in p["events"]],
                }
                for p in doc["profiles"]
            }

        ours_p, ref_p = profiles(ours), profiles(ref)
        assert sorted(ours_p) == sorted(ref_p)
        assert_same({k: ours_p[k] for k in ref_p}, ref_p, name)
