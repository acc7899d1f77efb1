"""Per-call metadata: ``ProfileManager.metadata(**values)``,
``profile(metadata=..., record_outcome=...)``, ``RegionFactory(**values)`` and
``Region.event_metadata``, against scope-profiler 0.7.5.

``METADATA_SCRIPT`` records the same program under this package and, when
``SCOPE_PROFILER_REF_PYTHON`` is set, under the reference (each in its own process) and
prints what a user observes: the metadata in memory and in ``events()``, the file's
``rank_region_index/event_metadata`` strings, the metadata read back and in the JSON profile.
Key order is part of what is compared (dicts are printed as lists of pairs).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import reference_python
from scope_profiler import ProfileManager

METADATA_SCRIPT = 'import asyncio, json, os, sys, threading\nimport h5py\nimport scope_profiler as sp\nfrom scope_profiler import ProfileManager as PM\n\ntmp = sys.argv[1]\npath = os.path.join(tmp, "meta.h5")\nout = {}\npairs = lambda text: json.loads(text, object_pairs_hook=lambda kv: [list(p) for p in kv])\nPM.setup(file_path=path, track_threads=True, track_async=True)\nout["active_scope"] = type(PM.metadata()).__name__ != ""\nwith PM.metadata(a=1, s="x", nested={"l": [1, 2.5, None, True]}, t=(1, 2)) as d:\n    with PM.region("r"):\n        pass\n    with PM.metadata(b=2, a=5) as inner:\n        out["inner_dict"] = sorted(inner)\n        with PM.region("r"):\n            pass\n    d["late"] = "é"\nwith PM.region("r"):\n    with PM.metadata(inside=1):\n        pass\nwith PM.region("r"):\n    pass\n\n@PM.profile("f", metadata={"k": "v"}, record_outcome=True)\ndef f(x):\n    with PM.region("in_f"):\n        pass\n    if x:\n        raise KeyError(x)\n    return 1\n\nf(0)\ntry:\n    f(1)\nexcept KeyError:\n    pass\n\n@PM.profile("g", metadata=lambda x, y=0: {"x": x, "y": y})\ndef g(x, y=0):\n    return x\n\ng(1, y=2)\ng(3)\n\n@PM.profile("h", record_outcome=True)\ndef h():\n    pass\n\nh()\n\n@PM.profile("plain", metadata={})\ndef plain():\n    pass\n\nplain()\n\nclass C:\n    @PM.profile("meth", metadata=lambda self, x: {"x": x, "kind": type(self).__name__})\n    def meth(self, x):\n        return x\n\nout["meth"] = C().meth(5)\n\n@PM.metadata(dec=1)\ndef decorated():\n    with PM.region("d"):\n        pass\n\ndecorated()\ndecorated()\n# a call on another thread inside the main thread\'s block (the rule is time)\ngo, done = threading.Event(), threading.Event()\n\ndef worker():\n    go.wait()\n    with PM.region("t"):\n        pass\n    done.set()\n\nth = threading.Thread(target=worker)\nth.start()\nwith PM.metadata(thread="main"):\n    go.set()\n    done.wait()\nth.join()\n\ndef worker2():\n    with PM.metadata(w=1):\n        with PM.region("t2"):\n            pass\n\nth = threading.Thread(target=worker2)\nth.start()\nth.join()\n\nasync def task(n):\n    with PM.metadata(task=n):\n        with PM.region("a"):\n            await asyncio.sleep(0.02 * n)\n\nasync def main():\n    await asyncio.gather(task(1), task(2))\n\nasyncio.run(main())\nfac = PM.region_factory("fac")\nwith fac(step=3):\n    pass\nwith fac():\n    pass\nwith PM.region("none"):\n    pass\nr = PM.finalize(verbose=False, return_results=True)\nout["memory"] = {n: [list(map(list, e.items())) for e in r[n][0].event_metadata] for n in r.region_names}\nout["events"] = {n: [e.get("metadata") for e in r[n][0].events()] for n in r.region_names}\nwith h5py.File(path) as fh:\n    names = [x.decode() for x in fh["region_table/names"][()]]\n    ids = fh["rank_region_index/region_ids"][()]\n    blobs = fh["rank_region_index/event_metadata"][()]\n    out["h5"] = {names[int(i)]: (b.decode() if isinstance(b, bytes) else b) for i, b in zip(ids, blobs)}\nback = sp.read_h5(path)\nout["read"] = {n: [list(map(list, e.items())) for e in back[n][0].event_metadata] for n in back.region_names}\njpath = os.path.join(tmp, "meta.json")\nsp.export_json(back, jpath)\ndoc = pairs(open(jpath).read())\nregions = dict(doc)["regions"]\nout["json"] = {dict(row)["name"]: dict(row).get("event_metadata") for row in regions}\nprint(json.dumps(out, sort_keys=True))\n'

#: What METADATA_SCRIPT stores per region in ``rank_region_index/event_metadata``; every
#: string was checked equal to scope-profiler 0.7.5's.
EXPECTED_H5 = {
    "a": '[{"task": 1}, {"task": 2}]',
    "d": '[{"dec": 1}, {"dec": 1}]',
    "f": '[{"k": "v", "status": "ok"}, {"k": "v", "status": "error", "exception": "KeyError"}]',
    "fac": '[{"step": 3}, {}]',
    "g": '[{"x": 1, "y": 2}, {"x": 3, "y": 0}]',
    "h": '[{"status": "ok"}]',
    # calls of another region inside the decorated function carry its metadata too
    "in_f": '[{"k": "v", "status": "ok"}, {"k": "v", "status": "error", "exception": "KeyError"}]',
    "meth": '[{"x": 5, "kind": "C"}]',
    "none": "[]",
    "plain": "[]",
    # the outer block's dict changed inside it ("late"); the inner block wins on "a"; the
    # block opened inside the third call does not contain it
    "r": '[{"a": 1, "s": "x", "nested": {"l": [1, 2.5, null, true]}, "t": [1, 2], '
    '"late": "\\u00e9"}, {"a": 5, "s": "x", "nested": {"l": [1, 2.5, null, true]}, '
    '"t": [1, 2], "late": "\\u00e9", "b": 2}, {}, {}]',
    # a call on another thread inside the main thread's block (the rule is time)
    "t": '[{"thread": "main"}]',
    "t2": '[{"w": 1}]',
}


def _observe(python: str, tmp: Path) -> dict:
    tmp.mkdir(exist_ok=True)
    script = tmp / "observe.py"
    script.write_text(METADATA_SCRIPT)
    env = None
    if python != sys.executable:
        import os

        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [python, str(script), str(tmp)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _reference_event_metadata(path: Path) -> dict:
    code = (
        "import json, sys\n"
        "import scope_profiler as sp\n"
        "r = sp.read_h5(sys.argv[1])\n"
        "print(json.dumps({n: [list(map(list, e.items())) for e in r[n][0].event_metadata]"
        " for n in r.region_names}))\n"
    )
    proc = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(autouse=True)
def _fresh_manager():
    ProfileManager._reset()
    yield
    ProfileManager._reset()


def test_metadata_values(tmp_path):
    out = _observe(sys.executable, tmp_path)
    assert out["h5"] == EXPECTED_H5
    assert out["inner_dict"] == ["a", "b", "nested", "s", "t"]
    for name, text in EXPECTED_H5.items():
        # "[]": no call has metadata (these regions have one call each)
        stored = [list(map(list, d.items())) for d in json.loads(text)] or [[]]
        assert out["read"][name] == stored, name
        assert out["memory"][name] == stored, name
        assert out["events"][name] == [dict(d) or None for d in json.loads(text) or [{}]], name
    # the JSON profile has the list only where some call has metadata (any(event_metadata))
    assert out["json"]["none"] is None and out["json"]["plain"] is None
    assert out["json"]["fac"] == [[["step", 3]], []]


def test_metadata_same_as_reference(tmp_path):
    ref = reference_python()
    ours = _observe(sys.executable, tmp_path / "ours")
    theirs = _observe(ref, tmp_path / "ref")
    assert ours == theirs
    # each opens the other's file with the same event metadata
    assert _reference_event_metadata(tmp_path / "ours" / "meta.h5") == ours["read"]
    back = sp.read_h5(str(tmp_path / "ref" / "meta.h5"))
    assert {
        n: [list(map(list, e.items())) for e in back[n][0].event_metadata]
        for n in back.region_names
    } == theirs["read"]


def test_for_thread_keeps_the_metadata(tmp_path):
    """The reference's ``for_thread`` drops it (every call ``{}``); ours keeps each call's."""
    import threading

    sp.setup(output=None, track_threads=True)

    def work():
        with sp.metadata(where="worker"), sp.region("r"):
            pass

    with sp.metadata(where="main"), sp.region("r"):
        pass
    th = threading.Thread(target=work)
    th.start()
    th.join()
    r = sp.finalize(verbose=False, return_results=True)
    region = r["r"][0]
    assert region.event_metadata == ({"where": "main"}, {"where": "worker"})
    main, worker = sorted(region.threads)
    assert region.for_thread(main).event_metadata == ({"where": "main"},)
    assert region.for_thread(worker).event_metadata == ({"where": "worker"},)


def test_nothing_recorded_while_inactive_and_scopes_go_with_their_calls(tmp_path):
    with sp.metadata(a=1) as values:  # not set up: a plain dict, nothing recorded
        assert values == {"a": 1}
    sp.setup(file_path=str(tmp_path / "one.h5"))
    with sp.metadata(a=1), sp.region("r"):
        pass
    first = sp.finalize(verbose=False, return_results=True)
    assert first["r"][0].event_metadata == ({"a": 1},)
    with sp.region("r"):  # the scope went with the calls the file took
        pass
    second = sp.finalize(verbose=False, return_results=True)
    assert second["r"][0].event_metadata == ({},)
    # without file output the calls stay, and so do the scopes
    sp.setup(output=None, replace=True)
    with sp.metadata(b=2), sp.region("r"):
        pass
    for _ in range(2):
        r = sp.finalize(verbose=False, return_results=True)
        assert r["r"][0].event_metadata == ({"b": 2},)


def test_values_that_are_not_json_are_refused_at_the_end_of_the_block():
    sp.setup(output=None)
    with pytest.raises(TypeError, match="per-call metadata must be JSON values"):
        with sp.metadata(bad=object()):
            pass
    assert sp.metadata == ProfileManager.metadata


def test_instances_keep_their_own_scopes():
    one, two = ProfileManager(), ProfileManager()
    one.setup(output=None)
    two.setup(output=None)
    with one.metadata(who="one"):
        with two.metadata(who="two") as inner:
            assert inner == {"who": "two"}  # not merged with the other manager's block
            with one.region("r"), two.region("r"):
                pass
    assert one.finalize(verbose=False, return_results=True)["r"][0].event_metadata == (
        {"who": "one"},
    )
    assert two.finalize(verbose=False, return_results=True)["r"][0].event_metadata == (
        {"who": "two"},
    )


def test_coroutine_outcome_is_its_run():
    """A decorated ``async def`` is timed over its whole run (docs/api-coverage.md), so its
    metadata block spans that run and ``status`` is the coroutine's outcome (the reference
    times the call that creates the coroutine and records ``"ok"`` for it)."""
    sp.setup(output=None, track_async=True)

    @sp.profile("co", metadata={"k": 1}, record_outcome=True)
    async def co(fail):
        await asyncio.sleep(0)
        if fail:
            raise ValueError

    async def main():
        await co(False)
        with pytest.raises(ValueError):
            await co(True)

    asyncio.run(main())
    r = sp.finalize(verbose=False, return_results=True)
    assert r["co"][0].event_metadata == (
        {"k": 1, "status": "ok"},
        {"k": 1, "status": "error", "exception": "ValueError"},
    )


def test_calls_streamed_before_their_block_ends_get_its_values(tmp_path):
    """With ``flush_interval`` the calls inside a block may be in the sidecar before the
    block exits; ``finalize()`` applies the block to them all the same."""
    path = tmp_path / "streamed.h5"
    sp.setup(file_path=str(path), flush_interval=60)
    native = sp.get_config()._native
    with sp.metadata(phase="load"):
        with sp.region("r"):
            pass
        assert native.flush_now() == 1  # the call is in the sidecar, the block still open
        with sp.region("r"):
            pass
    r = sp.finalize(verbose=False, return_results=True)
    assert r["r"][0].event_metadata == ({"phase": "load"}, {"phase": "load"})
    assert sp.read_h5(str(path))["r"][0].event_metadata == ({"phase": "load"}, {"phase": "load"})


#: Values Python's ``json`` stores in its own dialect: NaN and infinities as ``NaN``,
#: ``Infinity`` and ``-Infinity``, a lone surrogate as its ``\\udXXX`` escape.
ODD_VALUES = (
    "import math, sys\n"
    "from scope_profiler import ProfileManager as PM\n"
    "PM.setup(file_path=sys.argv[1])\n"
    "with PM.metadata(v=float('nan'), w=float('inf'), x=-float('inf'), y=1e308 * 10, s='\\ud800'):\n"
    "    with PM.region('m'):\n"
    "        pass\n"
    "with PM.region('plain'):\n"
    "    pass\n"
    "PM.finalize(verbose=False)\n"
)


def _odd_values_read_back(call: dict) -> None:
    import math

    assert list(call) == ["v", "w", "x", "y", "s"]
    assert math.isnan(call["v"]) and isinstance(call["v"], float)
    assert (call["w"], call["x"], call["y"]) == (math.inf, -math.inf, math.inf)
    assert call["s"] == "\ud800"


def test_non_finite_floats_and_lone_surrogates_are_stored_and_read_back(tmp_path):
    path = tmp_path / "odd.h5"
    subprocess.run([sys.executable, "-c", ODD_VALUES, str(path)], check=True, timeout=120)
    import h5py

    with h5py.File(path) as f:
        stored = [b.decode() for b in f["rank_region_index/event_metadata"][()]]
    assert '[{"v": NaN, "w": Infinity, "x": -Infinity, "y": Infinity, "s": "\\ud800"}]' in stored
    back = sp.read_h5(str(path))
    (call,) = back["m"][0].event_metadata
    _odd_values_read_back(call)
    assert back["plain"][0].event_metadata == ({},)
    (event,) = back["m"][0].events()
    _odd_values_read_back(event["metadata"])
    summary = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "summary", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert summary.returncode == 0 and summary.stderr == "", summary.stderr
    assert "m" in summary.stdout and "plain" in summary.stdout
    _reference_reads_odd_values(path)


def _reference_reads_odd_values(path: Path) -> None:
    """The reference reads the values of ``ODD_VALUES`` back from ``path``."""
    code = (
        "import math, sys\n"
        "import scope_profiler as sp\n"
        "(c,) = sp.read_h5(sys.argv[1])['m'][0].event_metadata\n"
        "assert math.isnan(c['v']) and (c['w'], c['x'], c['y']) == (math.inf, -math.inf, math.inf)\n"
        "assert c['s'] == '\\ud800'\n"
    )
    proc = subprocess.run(
        [reference_python(), "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_non_finite_floats_and_lone_surrogates_of_the_reference_are_read(tmp_path):
    path = tmp_path / "ref-odd.h5"
    proc = subprocess.run(
        [reference_python(), "-c", ODD_VALUES, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (call,) = sp.read_h5(str(path))["m"][0].event_metadata
    _odd_values_read_back(call)


def _written(tmp_path, metadata: list[dict]) -> Path:
    """A file of region ``io`` (3 calls, with ``metadata``) and region ``ok`` (1 call)."""
    import numpy as np

    starts = np.arange(3, dtype=np.int64) * 20
    io = sp.Region(starts, starts + 10, event_metadata=metadata)
    ok = sp.Region(np.array([100]), np.array([110]), event_metadata=[{"k": 1}])
    regions = {"io": sp.MPIRegion("io", {0: io}), "ok": sp.MPIRegion("ok", {0: ok})}
    path = tmp_path / "damaged.h5"
    sp.ProfilingResults(regions)._native_run().write_h5(str(path))
    return path


@pytest.mark.parametrize(
    "stored, why",
    [
        ('[{"a": 1}, {"b"', "not a JSON list of objects"),
        ("7", "not a JSON list of objects"),
        ("[1, 2, 3]", "call 0's entry is not an object"),
        ('[{"a": 1}, {"b": Nan}, {}]', "call 1's entry"),
        ('[{"a": 1}]', "1 entries for 3 calls"),
    ],
)
def test_an_unreadable_metadata_row_costs_that_row_only(tmp_path, stored, why):
    import h5py

    path = _written(tmp_path, [{"a": 1}, {}, {"c": [2]}])
    assert sp.read_h5(str(path))["io"][0].event_metadata == ({"a": 1}, {}, {"c": [2]})
    with h5py.File(path, "r+") as f:
        assert list(f["region_table/names"][()]) == [b"io", b"ok"]
        f["rank_region_index/event_metadata"][0] = stored
    with pytest.warns(RuntimeWarning) as caught:
        back = sp.read_h5(str(path))
    (warning,) = [str(w.message) for w in caught]
    assert str(path) in warning and "region 'io' on rank 0" in warning, warning
    assert "rank_region_index/event_metadata row 0" in warning and why in warning, warning
    assert back["io"][0].event_metadata == ({}, {}, {})
    assert back["io"][0].num_calls == 3
    assert back["ok"][0].event_metadata == ({"k": 1},)
    summary = subprocess.run(
        [sys.executable, "-m", "scope_profiler", "summary", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert summary.returncode == 0, summary.stderr
    assert summary.stderr.startswith("warning: ") and "region 'io' on rank 0" in summary.stderr
