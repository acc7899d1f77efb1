"""The rest of the reference's manager API and the package root.

``define_region``/``RegionHandle``, ``region_factory``/``RegionFactory``, opt-in tags,
``instrument``, ``run``, ``profile_script``, ``profile_command``, ``setup_from_env``,
``config_path=`` precedence; the root's names against scope-profiler 0.7.5; and
``docs/api-coverage.md`` against the real module. The same scripts run under this package
and, when ``SCOPE_PROFILER_REF_PYTHON`` is set, under the reference, each in its own
process (never both packages in one interpreter).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import scope_profiler as sp
from helpers import ROOT, reference_python
from scope_profiler import ProfileManager

# One process records: handles, opt-in tags, instrument, factories, run(), TOML precedence
# and setup_from_env; prints what a user observes as JSON.
MANAGER_SCRIPT = 'import json, os, sys, types\nimport scope_profiler as sp\nfrom scope_profiler import ProfileManager as PM\n\nout = {}\ntmp = sys.argv[1]\nout["configured_before"] = PM.is_configured()\nh = PM.define_region("handle", tags=("a",))\nout["registered_before_setup"] = list(PM.registered_regions())\ntry:\n    PM.define_region("handle", tags=("b",))\nexcept ValueError as e:\n    out["redefine"] = str(e)\nPM.register_opt_in_tag("lib")\ntry:\n    PM.register_opt_in_tag("")\nexcept TypeError as e:\n    out["bad_tag"] = str(e)\n\n@PM.profile("libfn", tags=("lib",))\ndef libfn(x):\n    return x + 1\n\nmod = types.ModuleType("mymod")\nexec("def alpha(n):\\n    return n * 2\\ndef beta():\\n    return \'b\'\\ndef _private():\\n    return 0\\nclass C:\\n    pass\\nimport math\\nsqrt = math.sqrt\\n", mod.__dict__)\nchanged = PM.instrument(mod, include=("a*", "b*", "_*"), exclude=("_*",), prefix="pre")\nout["instrumented"] = sorted(changed)\n\nfac = PM.region_factory("fac")\nPM.setup(output=None)\nout["configured_after"] = PM.is_configured()\nout["registered_after_setup"] = sorted(PM.registered_regions())\nwith h:\n    with h:\n        pass\nwith fac():\n    pass\nwith fac():\n    pass\nout["libfn"] = libfn(1)\nout["alpha"] = mod.alpha(4)\nout["beta"] = mod.beta()\nmod.beta()\nwith PM.region("tagged", tags=("lib",)):\n    pass\nout["recorded"] = sorted(PM.recorded_regions())\nr = PM.finalize(verbose=False, return_results=True)\nout["last_is_r"] = PM.last_results() is r\nout["calls1"] = {n: int(r[n][0].num_calls) for n in r.region_names}\n\nos.environ["SCOPE_PROFILER_ENABLE_TAGS"] = "lib"\nPM.setup(output=None, replace=True)\nlibfn(2)\nwith PM.region("tagged", tags=("lib",)):\n    pass\nr = PM.finalize(verbose=False, return_results=True)\nout["calls2"] = {n: int(r[n][0].num_calls) for n in r.region_names}\nwith h:\n    PM.setup(output=None, replace=True)  # the handle exits the region it entered\nwith h:\n    pass\nr = PM.finalize(verbose=False, return_results=True)\nout["calls3"] = {n: int(r[n][0].num_calls) for n in r.region_names}\ndel os.environ["SCOPE_PROFILER_ENABLE_TAGS"]\n\ndef work(a, b=3):\n    with PM.region("inside"):\n        return a * b\nout["run_value"] = PM.run(work, 7, track_threads=True)\nres = PM.last_results()\nout["run_regions"] = {n: int(res[n][0].num_calls) for n in res.region_names}\n\n# TOML precedence: defaults < config_path < options < keywords\ntoml = os.path.join(tmp, "prof.toml")\nwith open(toml, "w") as f:\n    f.write(\'[profiling]\\nlabel = "from-toml"\\nbuffer_limit = 77\\nmetadata_detail = "full"\\nfile_path = "toml.h5"\\n\')\nopts = sp.ProfilingOptions(buffer_limit=88, file_path="opts.h5")\nrun = PM.setup(opts, config_path=toml, file_path=os.path.join(tmp, "kw.h5"), replace=True)\ncfg = PM.get_config()\nout["toml"] = [cfg.label, cfg.buffer_limit, cfg.metadata_detail, os.path.basename(cfg.file_path), os.path.basename(run.file_path)]\nbad = os.path.join(tmp, "bad.toml")\nwith open(bad, "w") as f:\n    f.write("[profiling]\\ntrack_thread = true\\n")\ntry:\n    PM.setup(config_path=bad, replace=True)\nexcept ValueError as e:\n    out["bad_toml"] = str(e)\n\nos.environ["SCOPE_PROFILER_OUTPUT"] = os.path.join(tmp, "env.h5")\nos.environ["SCOPE_PROFILER_CONFIG"] = toml\nos.environ["SCOPE_PROFILER_RECURSIVE"] = "no"\nrun = PM.setup_from_env(replace=True, label="kw-label")\ncfg = PM.get_config()\nout["env"] = [cfg.label, cfg.buffer_limit, os.path.basename(run.file_path), bool(cfg.recursive_profile)]\nwith PM.region("env-region"):\n    pass\nr = PM.finalize(verbose=False, return_results=True)\nout["env_file"] = os.path.exists(os.path.join(tmp, "env.h5"))\nout["env_calls"] = {n: int(r[n][0].num_calls) for n in r.region_names}\nPM.reset()\nout["configured_after_reset"] = PM.is_configured()\nout["registered_after_reset"] = sorted(PM.registered_regions())\nprint(json.dumps(out, sort_keys=True))\n'

# profile_script / profile_command on TARGET_SCRIPT.
SCRIPT_RUNNERS = 'import json, os, sys\nfrom scope_profiler import ProfileManager as PM\ntmp, script = sys.argv[1], sys.argv[2]\nout = {}\nos.environ["ARGV_OUT"] = os.path.join(tmp, "argv1.json")\nr = PM.profile_script(script, script_args=["x", "y"], output=os.path.join(tmp, "ps.h5"))\nout["script_calls"] = {n: int(r[n][0].num_calls) for n in r.region_names}\nout["script_argv"] = json.load(open(os.environ["ARGV_OUT"]))\nout["script_file"] = os.path.exists(os.path.join(tmp, "ps.h5"))\nos.environ["ARGV_OUT"] = os.path.join(tmp, "argv2.json")\nc = PM.profile_command(["python", script, "z"], output=os.path.join(tmp, "pc.h5"))\nout["cmd_rc"] = c.returncode\nr = c.profile_results\nout["cmd_calls"] = {n: int(r[n][0].num_calls) for n in r.region_names}\nout["cmd_argv"] = json.load(open(os.environ["ARGV_OUT"]))\ntry:\n    PM.profile_command([sys.executable])\nexcept ValueError as e:\n    out["cmd_empty"] = str(e)\nc = PM.profile_command([os.path.join(tmp, "missing.py")], output=os.path.join(tmp, "none.h5"))\nout["cmd_missing"] = [c.returncode != 0, c.profile_results]\nprint(json.dumps(out, sort_keys=True))\n'

TARGET_SCRIPT = 'import json, os, sys\nimport scope_profiler as sp\nwith sp.region("work"):\n    for i in range(3):\n        with sp.region("step"):\n            pass\nwith open(os.environ["ARGV_OUT"], "w") as f:\n    json.dump({"argv": sys.argv[1:], "name": __name__}, f)\n'

#: What MANAGER_SCRIPT prints; every value was checked equal under scope-profiler 0.7.5.
EXPECTED_MANAGER = {
    "alpha": 8,
    "bad_tag": "opt-in tags must be non-empty strings, got ''",
    "bad_toml": "Unknown profiling setting(s): 'track_thread' (did you mean 'track_threads'?)",
    "beta": "b",
    # opt-in "lib" off: libfn and the tagged region record nothing
    "calls1": {"fac": 2, "handle": 2, "pre.alpha": 1, "pre.beta": 2},
    # SCOPE_PROFILER_ENABLE_TAGS=lib at the next setup(): both record
    "calls2": {"libfn": 1, "tagged": 1},
    # the handle entered before setup(replace=True) exited cleanly; the new run has one call
    "calls3": {"handle": 1},
    "configured_after": True,
    "configured_after_reset": False,
    "configured_before": False,
    # keyword label > TOML; TOML buffer_limit; SCOPE_PROFILER_OUTPUT; _RECURSIVE=no
    "env": ["kw-label", 77, "env.h5", False],
    "env_calls": {"env-region": 1},
    "env_file": True,
    "instrumented": ["alpha", "beta"],
    "last_is_r": True,
    "libfn": 2,
    "recorded": ["fac", "handle", "pre.alpha", "pre.beta"],
    "redefine": "region 'handle' was already defined differently",
    "registered_after_reset": [],
    "registered_after_setup": ["fac", "handle", "libfn", "pre.alpha", "pre.beta"],
    "registered_before_setup": ["handle"],
    "run_regions": {"inside": 1, "scope_profiler.session": 1},
    "run_value": 21,
    # TOML label and metadata_detail; options buffer_limit over TOML; keyword file_path
    "toml": ["from-toml", 88, "full", "kw.h5", "kw.h5"],
}


def _observe(python: str, script: str, tmp: Path, *args: str, env=None) -> dict:
    path = tmp / "observe.py"
    path.write_text(script)
    proc = subprocess.run(
        [python, str(path), str(tmp), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp,
        env=_env_for(python, env),
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env_for(python: str, extra: dict | None) -> dict:
    """The environment of a child: the reference's never sees a PYTHONPATH that could put
    this package before its own."""
    env = {**os.environ, **(extra or {})}
    if python != sys.executable:
        env.pop("PYTHONPATH", None)
    return env


@pytest.fixture(autouse=True)
def _fresh_manager():
    ProfileManager._reset()
    yield
    ProfileManager._reset()


def test_manager_api_values(tmp_path):
    assert _observe(sys.executable, MANAGER_SCRIPT, tmp_path) == EXPECTED_MANAGER


def test_manager_api_same_as_reference(tmp_path):
    ref = reference_python()
    (tmp_path / "ours").mkdir()
    (tmp_path / "ref").mkdir()
    ours = _observe(sys.executable, MANAGER_SCRIPT, tmp_path / "ours")
    theirs = _observe(ref, MANAGER_SCRIPT, tmp_path / "ref")
    assert ours == theirs


def _runners(python: str, tmp: Path) -> dict:
    (tmp / "target.py").write_text(TARGET_SCRIPT)
    return _observe(python, SCRIPT_RUNNERS, tmp, str(tmp / "target.py"))


def test_profile_script_and_command(tmp_path):
    out = _runners(sys.executable, tmp_path)
    assert out["script_calls"] == {"step": 3, "work": 1}
    assert out["script_argv"] == {"argv": ["x", "y"], "name": "__main__"}
    assert out["script_file"] is True
    assert out["cmd_rc"] == 0
    # scope-profiler run adds its root region around the script (docs/api-coverage.md)
    assert out["cmd_calls"] == {"scope_profiler.session": 1, "step": 3, "work": 1}
    assert out["cmd_argv"] == {"argv": ["z"], "name": "__main__"}
    assert out["cmd_empty"] == "profile_command() requires a Python script path"
    assert out["cmd_missing"] == [True, None]


def test_profile_script_and_command_same_as_reference(tmp_path):
    ref = reference_python()
    (tmp_path / "ours").mkdir()
    (tmp_path / "ref").mkdir()
    ours = _runners(sys.executable, tmp_path / "ours")
    theirs = _runners(ref, tmp_path / "ref")
    # the documented difference: scope-profiler run's root region around the script
    assert ours["cmd_calls"].pop("scope_profiler.session") == 1
    assert ours == theirs


def test_profile_script_restores_argv_and_path_and_finalizes_on_error(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        "import scope_profiler as sp\nwith sp.region('before'):\n    pass\nraise SystemExit(3)\n"
    )
    argv, path = list(sys.argv), list(sys.path)
    with pytest.raises(SystemExit) as info:
        ProfileManager.profile_script(script, script_args=["a"], output=None)
    assert info.value.code == 3
    assert sys.argv == argv
    assert sys.path == path
    results = ProfileManager.last_results()
    assert {n: results[n][0].num_calls for n in results.region_names} == {"before": 1}


def test_profile_command_mpi_calls_refused(tmp_path):
    with pytest.raises(NotImplementedError, match="profile_mpi_calls"):
        ProfileManager.profile_command([str(tmp_path / "x.py")], mpi_calls=True)


def test_instrument_takes_one_glob_string_and_skips_wrapped_functions():
    mod = types.ModuleType("strmod")
    exec("def beta():\n    return 1\ndef bravo():\n    return 2\n", mod.__dict__)
    changed = ProfileManager.instrument(mod, include="be*")
    assert sorted(changed) == ["beta"]
    assert ProfileManager.instrument(mod) == {"bravo": mod.bravo}  # beta is wrapped already
    ProfileManager.setup(output=None)
    mod.beta()
    mod.bravo()
    results = ProfileManager.finalize(verbose=False, return_results=True)
    assert {n: results[n][0].num_calls for n in results.region_names} == {
        "strmod.beta": 1,
        "strmod.bravo": 1,
    }
    with pytest.raises(TypeError, match="include"):
        ProfileManager.instrument(mod, include=3)


def test_instrument_leaves_profiled_coroutine_and_generator_functions_alone():
    import asyncio

    mod = types.ModuleType("lifemod")
    exec(
        "async def fetch():\n    return 1\ndef numbers():\n    yield from range(3)\n",
        mod.__dict__,
    )
    assert sorted(ProfileManager.instrument(mod)) == ["fetch", "numbers"]
    assert ProfileManager.instrument(mod) == {}  # their wrappers are functions too
    ProfileManager.setup(output=None)
    assert asyncio.run(mod.fetch()) == 1
    assert list(mod.numbers()) == [0, 1, 2]
    results = ProfileManager.finalize(verbose=False, return_results=True)
    assert {n: results[n][0].num_calls for n in results.region_names} == {
        "lifemod.fetch": 1,
        "lifemod.numbers": 1,
    }


def test_run_passes_args_only_and_returns_value():
    def add(a, b):
        with ProfileManager.region("add"):
            return a + b

    assert ProfileManager.run(add, 2, 5, output=None) == 7
    results = ProfileManager.last_results()
    assert results["add"][0].num_calls == 1
    assert not ProfileManager.get_config().track_threads


def test_region_factory_metadata_refused_without_metadata_support():
    factory = ProfileManager.region_factory("factory")
    if hasattr(ProfileManager, "metadata"):
        pytest.skip("per-call metadata exists: the factory uses it")
    with pytest.raises(NotImplementedError, match="per-call metadata"):
        factory(step=1)


def test_region_handles_keep_their_entered_regions_per_task():
    import asyncio

    handle = ProfileManager.define_region("per-task", tags=["t"])
    factory = ProfileManager.region_factory("made")
    assert repr(handle) == "RegionHandle('per-task', tags=('t',))"
    assert repr(factory) == "RegionFactory('made', tags=None)"
    assert isinstance(factory(), sp.RegionHandle) and factory().name == "made"
    with pytest.raises(
        RuntimeError, match="^region handle 'per-task' exited without being entered$"
    ):
        handle.__exit__(None, None, None)

    async def one(delay):
        with handle:
            await asyncio.sleep(delay)  # the other task enters and exits meanwhile

    async def both():
        await asyncio.gather(one(0.02), one(0.0))

    with ProfileManager.session(output=None, verbose=False, return_results=True) as session:
        asyncio.run(both())
        with factory(step=1):
            pass
    assert session.results["per-task"][0].num_calls == 2
    assert list(session.results["made"][0].event_metadata) == [{"step": 1}]


def test_instances_keep_their_own_definitions():
    manager = ProfileManager()
    manager.define_region("only-instance")
    manager.setup(output=None)
    ProfileManager.setup(output=None)
    assert "only-instance" in manager.registered_regions()
    assert "only-instance" not in ProfileManager.registered_regions()
    manager.reset()


def test_setup_from_env_auto_finalize_writes_at_exit(tmp_path):
    out = tmp_path / "atexit.h5"
    code = (
        "import scope_profiler as sp\n"
        "sp.setup_from_env()\n"
        "for _ in range(4):\n"
        "    with sp.region('tick'):\n        pass\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **os.environ,
            "SCOPE_PROFILER_OUTPUT": str(out),
            "SCOPE_PROFILER_AUTO_FINALIZE": "TRUE",
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert sp.read_h5(out, verbose=False)["tick"][0].num_calls == 4


#: Four daemon threads entering a region as fast as they can while the program ends with
#: auto_finalize; an atexit handler registered before setup() (it runs after the exit-time
#: finalize) prints how long that finalize took and the calls made since the recording ended.
_BUSY_DAEMON_THREADS_AT_EXIT = """
import atexit, json, threading, time
import scope_profiler as sp

marks = {}

@atexit.register
def after_the_finalize():
    native = sp.ProfileManager._config._native
    took = time.perf_counter() - marks["finalize"]
    print(json.dumps({"finalize_s": took, "calls_after": native.calls_after_stop}), flush=True)

def spin():
    region = sp.profile_region("spin")
    while True:
        with region:
            pass

sp.ProfileManager.setup(file_path="busy.h5", track_threads=True, auto_finalize=True)
atexit.register(lambda: marks.setdefault("finalize", time.perf_counter()))  # runs before it
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
time.sleep(0.3)
"""


# The exit-time finalize stops recording before it does its work: daemon threads still
# entering regions add nothing to the buffers and give the GIL way, so they neither grow the
# process nor starve the finalize (without it they kept their pace, millions of calls while it
# ran, and a 0.3 s script took seconds to exit). One line says how many calls were left out.
def test_the_exit_time_finalize_stops_recording_so_busy_daemon_threads_do_not_hold_it_up(
    tmp_path,
):
    proc = subprocess.run(
        [sys.executable, "-c", _BUSY_DAEMON_THREADS_AT_EXIT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    recorded = sp.read_h5(tmp_path / "busy.h5", verbose=False)["spin"][0].num_calls
    recording_rate = recorded / 0.3  # at most: the threads ran 0.3 s and more
    rate_after = seen["calls_after"] / seen["finalize_s"]
    assert seen["calls_after"] > 0 and rate_after < 0.2 * recording_rate, (seen, recorded)
    lines = [line for line in proc.stderr.splitlines() if "exit-time finalize" in line]
    assert len(lines) == 1 and "are not in busy.h5, which it wrote" in lines[0], proc.stderr


# ------------------------------------------------------------------------ package root
#: spec-api.md section 1: the module-level functions that are the manager's classmethods.
MANAGER_FUNCTIONS = [
    "finalize",
    "define_region",
    "is_active",
    "is_configured",
    "instrument",
    "last_results",
    "metadata",
    "profile_command",
    "profile_script",
    "profile",
    "region_factory",
    "recorded_regions",
    "region",
    "register_opt_in_tag",
    "reset",
    "registered_regions",
    "session",
    "setup",
    "setup_from_env",
    "run",
]


def _unsupported() -> dict:
    return sp._UNSUPPORTED


def test_module_functions_are_the_classmethods():
    for name in MANAGER_FUNCTIONS:
        if name in _unsupported():
            continue
        assert getattr(sp, name) == getattr(ProfileManager, name), name
    assert sp.region is ProfileManager.region


def test_unsupported_names_say_why():
    for name, reason in _unsupported().items():
        with pytest.raises(NotImplementedError) as info:
            getattr(sp, name)
        assert reason in str(info.value) and name in str(info.value)
        assert name not in sp.__all__ and name not in dir(sp)
    with pytest.raises(NotImplementedError, match="matplotlib"):
        exec("from scope_profiler import plot_gantt", {})
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        sp.nonexistent


def test_all_resolves_and_import_stays_light():
    for name in sp.__all__:
        assert getattr(sp, name) is not None, name
    code = (
        "import sys, scope_profiler\n"
        "print([m for m in ('asyncio', 'greenlet', 'h5py', 'tomllib') if m in sys.modules])"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


#: Modules ``import scope_profiler`` must not load (each is loaded on first use of what
#: needs it - arrays, Arrow, event loops, option dataclasses, TOML, the tracer's bytecode
#: and path tables), so the import costs no more than the reference's.
HEAVY_MODULES = (
    "numpy",
    "pyarrow",
    "polars",
    "pandas",
    "h5py",
    "asyncio",
    "greenlet",
    "inspect",
    "dataclasses",
    "typing",
    "enum",
    "re",
    "pathlib",
    "datetime",
    "dis",
    "sysconfig",
    "tomllib",
    "linecache",
)


def test_import_loads_no_heavy_module():
    # a fresh process, so nothing imported by the test session hides a heavy import
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"  # 3.13 loads linecache at startup for -c
        "import scope_profiler\n"
        f"print([m for m in {HEAVY_MODULES!r} if m in sys.modules and m not in before])\n"
        "names = set(dir(scope_profiler))\n"
        "print(sorted(n for n in scope_profiler.__all__ if n not in names))\n"
        "from scope_profiler import ProfilingOptions, GPUOptions, HDF5Options, MemrayOptions\n"
        "print(ProfilingOptions(label='x').to_kwargs(), 'dataclasses' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "[]", "{'label': 'x'} True"]


REFERENCE_NAMES_CODE = (
    "import json, scope_profiler as s\n"
    "m = [n for n in dir(s.ProfileManager) if not n.startswith('_')]\n"
    "print(json.dumps({'root': sorted(s.__all__), 'manager': sorted(m)}))"
)


def test_root_covers_the_reference():
    ref = reference_python()
    proc = subprocess.run(
        [ref, "-c", REFERENCE_NAMES_CODE],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env_for(ref, None),
    )
    assert proc.returncode == 0, proc.stderr
    names = json.loads(proc.stdout)
    missing = set(names["root"]) - set(sp.__all__) - set(_unsupported())
    assert not missing
    doc_root, doc_manager = _coverage_doc()
    assert set(names["root"]) | {"__version__"} == set(doc_root)
    assert set(names["manager"]) == set(doc_manager)


# ------------------------------------------------------------------------ the coverage doc
DOC = ROOT / "docs" / "api-coverage.md"
STATUSES = {"supported", "differs", "not supported"}


def _coverage_doc() -> tuple[dict, dict]:
    """The two tables of docs/api-coverage.md as {name: status}."""
    tables: list[dict] = []
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            tables.append({})
        match = re.match(r"\| `([^`]+)` \| ([a-z ]+) \|", line)
        if match:
            assert tables, line
            name, status = match.groups()
            assert status in STATUSES, line
            assert name not in tables[-1], f"{name} listed twice"
            tables[-1][name] = status
    assert len(tables) == 2
    return tables[0], tables[1]


def test_api_coverage_doc_matches_the_package():
    root, manager = _coverage_doc()
    # every name of spec-api.md section 1 and of the reference's manager is listed
    assert set(MANAGER_FUNCTIONS) <= set(root)
    assert set(_unsupported()) == {n for n, s in root.items() if s == "not supported"}
    for name, status in root.items():
        if status == "not supported":
            with pytest.raises(NotImplementedError):
                getattr(sp, name)
        else:
            assert getattr(sp, name) is not None, name
            if name != "__version__":
                assert name in sp.__all__, name
    for name, status in manager.items():
        assert hasattr(ProfileManager, name) == (status != "not supported"), name


# ------------------------------------------------------------------------ to_pstats
# Both packages' to_pstats on the same reference-written file, two runs (a repeated label).
PSTATS_SCRIPT = 'import json, sys\nimport scope_profiler as sp\nfrom scope_profiler.prof_export import to_pstats\nr = sp.read_h5(sys.argv[2], verbose=False)\nout = {}\nfor (label, rank), st in to_pstats([r, r], ranks=[0], call_paths=sys.argv[3] == "1").items():\n    out[f"{label}@{rank}"] = sorted(\n        [list(k), v[0], v[1], round(v[2], 9), round(v[3], 9), sorted([list(c), list(e[:2])] for c, e in v[4].items())]\n        for k, v in st.stats.items() if not k[2].startswith("<")\n    )\nprint(json.dumps(out, sort_keys=True))\n'


@pytest.mark.parametrize(
    ("dataset", "call_paths"),
    [("single", "1"), ("single", "0"), ("threads", "1"), ("pool", "1"), ("async", "1")],
)
def test_to_pstats_same_as_reference(tmp_path, dataset, call_paths):
    ref = reference_python()
    h5 = str(ROOT / "datasets" / "reference" / f"{dataset}.h5")
    (tmp_path / "ours").mkdir()
    (tmp_path / "ref").mkdir()
    ours = _observe(sys.executable, PSTATS_SCRIPT, tmp_path / "ours", h5, call_paths)
    theirs = _observe(ref, PSTATS_SCRIPT, tmp_path / "ref", h5, call_paths)
    assert set(ours) == {f"{dataset}@0", f"{dataset} (2)@0"}
    assert ours == theirs


def test_to_pstats_is_what_export_prof_writes(tmp_path):
    results = sp.read_h5(ROOT / "datasets" / "reference" / "threads.h5", verbose=False)
    stats = sp.to_pstats(results, call_paths=False)
    assert list(stats) == [(results.display_label, 0)]
    [path] = sp.export_prof(results, tmp_path / "t.prof", call_paths=False, verbose=False)
    assert stats[(results.display_label, 0)].stats == sp.load_prof(path).stats
    with pytest.raises(ValueError, match="Invalid rank requested: 5"):
        sp.to_pstats(results, ranks=5)
    with pytest.raises(ValueError, match="No regions matched"):
        sp.to_pstats(results, include="nothing*")
    with pytest.raises(ValueError, match="No profiling data"):
        sp.to_pstats([])


# ------------------------------------------------------------------------ region_tags
# setup(region_tags=...): only regions with one of the tags record (it also enables that
# opt-in tag); the next run without it records untagged regions again.
REGION_TAGS_SCRIPT = 'import json, sys\nfrom scope_profiler import ProfileManager as PM\nPM.register_opt_in_tag("io")\n@PM.profile("read", tags=("io",))\ndef read():\n    return 1\n@PM.profile("plain")\ndef plain():\n    return 2\nh = PM.define_region("defined-io", tags=("io", "x"))\nout = {}\nwith PM.session(output=None, return_results=True, verbose=False, region_tags=["io"]) as s:\n    read(); plain()\n    with PM.region("untagged"):\n        pass\n    with PM.region("tagged-other", tags=("cpu",)):\n        pass\n    with h:\n        pass\nout["filtered"] = {n: int(s.results[n][0].num_calls) for n in s.results.region_names}\nwith PM.session(output=None, return_results=True, verbose=False) as s:\n    read(); plain()\n    with PM.region("untagged"):\n        pass\nout["unfiltered"] = {n: int(s.results[n][0].num_calls) for n in s.results.region_names}\nprint(json.dumps(out, sort_keys=True))\n'

EXPECTED_REGION_TAGS = {
    "filtered": {"defined-io": 1, "read": 1},
    "unfiltered": {"plain": 1, "scope_profiler.session": 1, "untagged": 1},
}


def test_region_tags_values(tmp_path):
    assert _observe(sys.executable, REGION_TAGS_SCRIPT, tmp_path) == EXPECTED_REGION_TAGS


def test_region_tags_same_as_reference(tmp_path):
    assert _observe(reference_python(), REGION_TAGS_SCRIPT, tmp_path) == EXPECTED_REGION_TAGS


# ------------------------------------------------------------------------ sample_every
SAMPLE_EVERY_SCRIPT = 'import json, sys\nfrom scope_profiler import ProfileManager as PM\nout = {"selected": []}\nwith PM.session(output=None, return_results=True, verbose=False) as s:\n    with PM.sample_every(3, start=1) as profile_step:\n        for t in range(10):\n            with profile_step(t) as selected:\n                out["selected"].append(selected)\n                with PM.region("step"):\n                    pass\n    out["paused_after"] = PM.get_config().paused\n    with PM.region("after"):\n        pass\n    for bad in (0, True):\n        try:\n            with PM.sample_every(bad):\n                pass\n        except ValueError as e:\n            out[f"bad_{bad}"] = str(e)\n    try:\n        with PM.sample_every(2) as step, step("1"):\n            pass\n    except TypeError as e:\n        out["bad_step"] = str(e)\nout["calls"] = {n: int(s.results[n][0].num_calls) for n in s.results.region_names}\nprint(json.dumps(out, sort_keys=True))\n'

EXPECTED_SAMPLE_EVERY = {
    "bad_0": "every must be a positive integer",
    "bad_True": "every must be a positive integer",
    "bad_step": "timestep must be an integer",
    # timesteps 1, 4, 7 of 0..9 recorded; recording resumes after the loop
    "calls": {"after": 1, "scope_profiler.session": 1, "step": 3},
    "paused_after": False,
    "selected": [False, True, False, False, True, False, False, True, False, False],
}


def test_sample_every_values(tmp_path):
    assert _observe(sys.executable, SAMPLE_EVERY_SCRIPT, tmp_path) == EXPECTED_SAMPLE_EVERY


def test_sample_every_same_as_reference(tmp_path):
    assert _observe(reference_python(), SAMPLE_EVERY_SCRIPT, tmp_path) == EXPECTED_SAMPLE_EVERY


# ------------------------------------------------------------------------ traced scripts
TRACED_APP = "def leaf(n):\n    return n + 1\ndef middle(n):\n    return leaf(n) * 2\nfor i in range(3):\n    middle(i)\n"

TRACED_RUNNER = (
    "import json, sys\n"
    "from scope_profiler import ProfileManager as PM\n"
    "r = PM.profile_script(sys.argv[2], output=None, recursive_profile=True)\n"
    "print(json.dumps({n: int(r[n][0].num_calls) for n in sorted(r.region_names)}))\n"
)

#: profile_script with recursive_profile=True: the script's root region (its file name)
#: and every traced function, as 0.7.5 records them.
EXPECTED_TRACED = {"__main__.<module>": 1, "__main__.leaf": 3, "__main__.middle": 3, "app.py": 1}


@pytest.mark.parametrize("which", ["ours", "reference"])
def test_profile_script_recursive(tmp_path, which):
    python = sys.executable if which == "ours" else reference_python()
    app = tmp_path / "app.py"
    app.write_text(TRACED_APP)
    assert _observe(python, TRACED_RUNNER, tmp_path, str(app)) == EXPECTED_TRACED


# ------------------------------------------------------------------------ lifecycle queries
LIFECYCLE_SCRIPT = 'import json, os, sys\nfrom scope_profiler import ProfileManager as PM\ntmp = sys.argv[1]\nout = {}\nout["a"] = [PM.is_configured(), PM.is_active(), PM.last_results(), list(PM.registered_regions())]\nwith PM.region("before"):\n    pass\nout["b"] = [list(PM.registered_regions()), list(PM.recorded_regions())]\nrun = PM.setup(file_path=os.path.join(tmp, "life.h5"))\nout["c"] = [PM.is_configured(), PM.is_active(), run.is_active, list(PM.registered_regions())]\nwith PM.region("x"):\n    pass\nPM.region("never")\nout["d"] = [list(PM.registered_regions()), list(PM.recorded_regions())]\nPM.finalize(verbose=False)\nout["e"] = [PM.last_results() is None, PM.is_active(), list(PM.recorded_regions())]\nres = run.finalize(verbose=False)\nout["f"] = [PM.last_results() is res, run.results is res, sorted(res.region_names)]\nout["g"] = sorted(PM.read_results().region_names)\nPM.setup(output=None, deactivate_profiling=True, replace=True)\nout["h"] = [PM.is_configured(), PM.is_active(), run.is_active]\ntry:\n    run.finalize()\nexcept RuntimeError as e:\n    out["i"] = str(e)\nprint(json.dumps(out, sort_keys=True))\n'

EXPECTED_LIFECYCLE = {
    "a": [False, False, None, []],
    # before setup() a region is made (disabled) and registered, never recorded
    "b": [["before"], []],
    "c": [True, True, True, []],
    "d": [["x", "never"], ["x"]],
    # finalize() without return_results leaves last_results() None; num_calls is lifetime
    "e": [True, True, ["x"]],
    # the second finalize reports only what came after the first (nothing)
    "f": [True, True, []],
    "g": [],
    "h": [True, False, False],
    "i": "this profiling run has been replaced",
}


@pytest.mark.parametrize("which", ["ours", "reference"])
def test_lifecycle_queries(tmp_path, which):
    python = sys.executable if which == "ours" else reference_python()
    assert _observe(python, LIFECYCLE_SCRIPT, tmp_path) == EXPECTED_LIFECYCLE


# ------------------------------------------------------------------------ TOML settings
TOML_SCRIPT = 'import json, os, sys\nfrom scope_profiler import ProfileManager as PM\nfrom scope_profiler import ProfilingOptions\ntmp = sys.argv[1]\nout = {}\ncases = {\n    "group": \'[profiling]\\nfile_path = "g.h5"\\n[profiling.hdf5]\\ncompression = "gzip"\\ncompression_level = 4\\n\',\n    "both": \'[profiling]\\nhdf5_compression = "gzip"\\n[profiling.hdf5]\\ncompression = "lzf"\\n\',\n    "badgroup": \'[profiling.hdf5]\\ncolour = 1\\n\',\n    "toplevel": \'label = "top"\\nbuffer_limit = 5\\n\',\n    "notable": \'profiling = 3\\n\',\n    "broken": \'[profiling\\n\',\n    "badvalue": \'[profiling]\\nbuffer_limit = -1\\n\',\n}\nfor name, text in cases.items():\n    path = os.path.join(tmp, name + ".toml")\n    with open(path, "w") as f:\n        f.write(text)\n    try:\n        with PM.session(config_path=path, output=None, verbose=False, replace=True):\n            c = PM.get_config()\n            out[name] = [c.label, c.buffer_limit, c.hdf5_compression, c._settings.get("hdf5_compression_level") if hasattr(c, "_settings") else c.hdf5_compression_level]\n    except (ValueError, TypeError) as e:\n        out[name] = [type(e).__name__, str(e).replace(tmp, "TMP")]\ntry:\n    PM.setup(config_path=os.path.join(tmp, "missing.toml"), replace=True)\nexcept ValueError as e:\n    out["missing"] = str(e).replace(tmp, "TMP").split(":")[0]\nprint(json.dumps(out, sort_keys=True))\n'


def test_toml_settings_same_as_reference(tmp_path):
    ref = reference_python()
    (tmp_path / "ours").mkdir()
    (tmp_path / "ref").mkdir()
    ours = _observe(sys.executable, TOML_SCRIPT, tmp_path / "ours")
    theirs = _observe(ref, TOML_SCRIPT, tmp_path / "ref")
    # the reference's message for a negative buffer_limit is numpy's; ours names the setting
    assert ours.pop("badvalue") == ["ValueError", "buffer_limit must be a positive integer"]
    assert theirs.pop("badvalue")[0] == "ValueError"
    assert ours == theirs
    assert ours["group"] == [None, 1024, "gzip", 4]
    assert ours["toplevel"] == ["top", 5, None, None]


# ------------------------------------------------------------------------ import paths
def test_profile_manager_and_profile_config_import_paths(tmp_path):
    from scope_profiler import profile_config, profile_manager

    # the reference's own names there, less its internal RankPayload / SetupOptions
    for name in ["ProfileManager", "ProfilingRun", "RegionFactory", "RegionHandle"]:
        assert getattr(profile_manager, name) is getattr(sp, name)
    for name in ["GPUOptions", "HDF5Options", "MemrayOptions", "ProfilingOptions"]:
        assert getattr(profile_config, name) is getattr(sp, name)
    assert profile_config.ProfilingConfig is type(ProfileManager.get_config())
    toml = tmp_path / "p.toml"
    toml.write_text('[profiling]\nlabel = "x"\n[profiling.gpu]\nbackend = "cupy"\n')
    assert profile_config.load_profiling_config(toml) == {
        "label": "x",
        "gpu_timing_backend": "cupy",
    }


def test_to_pstats_of_a_repeated_run_names_its_root_by_the_unique_label():
    results = sp.read_h5(ROOT / "datasets" / "reference" / "threads.h5", verbose=False)
    stats = sp.to_pstats([results, results])
    assert list(stats) == [("threads", 0), ("threads (2)", 0)]
    first, second = stats[("threads", 0)].stats, stats[("threads (2)", 0)].stats
    assert ("~", 0, "<threads rank 0>") in first and ("~", 0, "<threads (2) rank 0>") in second
    renamed = {("~", 0, "<threads rank 0>"): ("~", 0, "<threads (2) rank 0>")}
    assert {renamed.get(k, k): v[:4] for k, v in first.items()} == {
        k: v[:4] for k, v in second.items()
    }
    assert stats[("threads", 0)].total_calls == stats[("threads (2)", 0)].total_calls > 0


# `import scope_profiler.__main__` does not run the CLI, and keeps `main`.
def test_importing_the_main_module_does_not_run_the_cli():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", "import scope_profiler.__main__ as m; print(callable(m.main))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert "usage" not in (proc.stdout + proc.stderr).lower()
    from scope_profiler.profile_manager import ProfileManager

    assert ProfileManager is sp.ProfileManager


# A first `import scope_profiler.region` (scope_profiler.native_trace imports `.region`)
# keeps the `scope_profiler.region` shortcut (ProfileManager.region), as the reference
# does, rather than replacing it with the submodule.
def test_importing_the_region_submodule_keeps_the_region_shortcut():
    code = (
        "import scope_profiler as sp, scope_profiler.region, scope_profiler.native_trace\n"
        "from scope_profiler.region import Region\n"
        "assert sp.region == sp.ProfileManager.region, sp.region\n"
        "assert Region is sp.Region\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
