"""Streaming to a sidecar (`flush_interval`) and `scope-profiler recover`: what a killed
writer leaves is recovered into a valid file, by the command or by `read_h5` of the missing
path (docs/recovery.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import scope_profiler as sp
from helpers import run_cli
from scope_profiler import ProfileManager

_STREAMING_CHILD = textwrap.dedent(
    """
    import sys, threading, time
    from scope_profiler import ProfileManager
    out, interval = sys.argv[1], float(sys.argv[2])
    ProfileManager.setup(file_path=out, track_threads=True, flush_interval=interval)
    def helper():
        with ProfileManager.profile_region("helper_work"):
            time.sleep(0.02)
    t = threading.Thread(target=helper, name="helper")
    t.start()
    t.join()
    work = ProfileManager.profile_region("work")
    n = 0
    with ProfileManager.profile_region("open_outer"):  # open at the kill: not recoverable
        while True:
            with work:
                time.sleep(0.002)
            n += 1
            print(n, time.monotonic(), flush=True)  # calls completed, when
    """
)


_INTERVAL = 0.2


def _killed_streaming_child(tmp_path, run_for: float = 1.0):
    """A child recording with flush_interval=0.2, SIGKILLed after `run_for` s: (target,
    its sidecar, [(completed calls, monotonic time)], monotonic time of the kill)."""
    script = tmp_path / "streaming_child.py"
    script.write_text(_STREAMING_CHILD)
    target = tmp_path / "killed.h5"
    child = subprocess.Popen(
        [sys.executable, str(script), str(target), str(_INTERVAL)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    progress = []
    first = child.stdout.readline()
    assert first, "the child did not start recording"
    progress.append(tuple(float(x) for x in first.split()))
    t0 = time.monotonic()
    while time.monotonic() - t0 < run_for:
        progress.append(tuple(float(x) for x in child.stdout.readline().split()))
    child.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    sidecars = list(tmp_path.glob(".killed.h5.*.partial"))
    assert len(sidecars) == 1, os.listdir(tmp_path)
    assert not target.exists()
    assert f"-{child.pid}.partial" in sidecars[0].name
    return target, sidecars[0], progress, killed_at


def _completed_before(progress, moment: float) -> int:
    return int(max((n for n, t in progress if t <= moment), default=0))


# A SIGKILL (or the OOM killer) leaves no file. With flush_interval=0.2 the sidecar of a
# child killed after ~1 s becomes, by `scope-profiler recover`, a valid file (ours and the
# reference read it) holding at least every call completed more than one interval before
# the kill, and the thread table.
def test_recover_after_sigkill_keeps_the_calls_completed_an_interval_before_the_kill(tmp_path):
    from helpers import reference_read

    target, sidecar, progress, killed_at = _killed_streaming_child(tmp_path)
    proc = run_cli("recover", target)
    assert proc.returncode == 0, proc.stderr
    assert "recovered" in proc.stdout and sidecar.name in proc.stdout, proc.stdout
    assert target.exists() and not sidecar.exists()
    results = sp.read_h5(str(target))
    work = results["work"][0].num_calls
    # every call completed one interval before the kill (+ 50 ms for the GIL and the fsync)
    promised = _completed_before(progress, killed_at - _INTERVAL - 0.05)
    printed = int(progress[-1][0])
    assert promised > 50 and promised <= work <= printed, (promised, work, printed)
    assert f"recovered {work + 1} call(s) of 2 region(s) and 2 thread(s)" in proc.stdout
    assert results["helper_work"][0].num_calls == 1
    assert "open_outer" not in results.region_names  # open at the kill
    names = sorted(t.name for t in results.threads[0])
    assert names == ["MainThread", "helper"], names
    assert results.metadata["recovered_from"] == sidecar.name
    # the call graph was numbered: ids 0..n-1
    ids = sorted(int(i) for g in results.get_regions() for i in g.regions[0].call_ids)
    assert ids == list(range(work + 1))
    ref = reference_read(target)
    assert ref["regions"]["work@0"]["num_calls"] == work
    assert sorted(t["name"] for t in ref["threads"]["0"]) == ["MainThread", "helper"]
    print(f"recovered {work} of {printed} calls printed, {promised} promised")


# A sidecar cut inside its last frame (a kill during the append) or with garbage after it
# recovers every frame before, never failing.
@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_recover_tolerates_a_torn_last_frame(tmp_path, damage):
    target, sidecar, _, _ = _killed_streaming_child(tmp_path, run_for=0.7)
    whole = sidecar.read_bytes()
    intact = tmp_path / "intact.h5"
    assert run_cli("recover", target, "-o", intact).returncode == 0
    all_calls = sp.read_h5(str(intact))["work"][0].num_calls
    assert sidecar.exists()  # -o elsewhere keeps the sidecar
    if damage == "cut":
        sidecar.write_bytes(whole[:-7])
    else:
        sidecar.write_bytes(whole + b"SPFR\x40\x00\x00\x00\x00\x00\x00\x00junk")
    proc = run_cli("recover", target)
    assert proc.returncode == 0, proc.stderr
    assert "reading stopped: frame" in proc.stdout, proc.stdout
    got = sp.read_h5(str(target))["work"][0].num_calls
    if damage == "cut":
        assert 0 < got < all_calls, (got, all_calls)  # the frames before the torn one
    else:
        assert got == all_calls


# `read_h5` of a missing path whose sidecar exists recovers the file (writes it) and reads
# it, with a warning naming both files; a file older than such a sidecar is read as it is (a
# read never replaces a file), with a warning saying how to recover.
def test_read_h5_of_a_missing_path_with_a_sidecar_recovers_it(tmp_path):
    target, sidecar, progress, _ = _killed_streaming_child(tmp_path, run_for=0.7)
    with pytest.warns(RuntimeWarning) as seen:
        results = sp.read_h5(str(target))
    message = str(seen[0].message)
    assert str(target) in message and str(sidecar) in message, message
    assert "recovered" in message
    assert 0 < results["work"][0].num_calls <= progress[-1][0]
    assert target.exists() and not sidecar.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = sp.read_h5(str(target))  # nothing left to recover: no warning
    assert again["work"][0].num_calls == results["work"][0].num_calls
    # a file older than a pending sidecar is read as it is
    (tmp_path / "b").mkdir()
    target2, sidecar2, _, _ = _killed_streaming_child(tmp_path / "b", run_for=0.5)
    shutil.copy(target, target2)
    os.utime(target2, (time.time() - 60, time.time() - 60))
    with pytest.warns(RuntimeWarning, match="scope-profiler recover") as seen:
        old = sp.read_h5(str(target2))
    assert str(sidecar2) in str(seen[0].message)
    assert old["work"][0].num_calls == results["work"][0].num_calls
    assert sidecar2.exists()


# Without flush_interval there is no sidecar and no flush thread; with it, a normal end writes
# every call once into the file and leaves no sidecar, and each checkpoint of
# setup()/finalize() takes what was flushed since the previous one.
def test_flush_interval_streams_to_a_sidecar_that_a_normal_end_removes(tmp_path):
    manager = ProfileManager()
    plain = tmp_path / "plain.h5"
    with manager.session(file_path=str(plain), track_threads=True, verbose=False):
        region = manager.profile_region("r")
        for _ in range(200):
            with region:
                time.sleep(0.0005)
        assert manager.get_config()._native.sidecar_path is None
        assert "sp-flush" not in _thread_names()
    assert not list(tmp_path.glob(".*"))
    streamed = tmp_path / "streamed.h5"
    with manager.session(
        file_path=str(streamed), track_threads=True, flush_interval=0.05, verbose=False
    ):
        region = manager.profile_region("r")
        for i in range(200):
            with region:
                time.sleep(0.0005)
            if i == 100:
                time.sleep(0.2)
                side = manager.get_config()._native.sidecar_path
                assert side is not None and os.path.exists(side)  # flushed meanwhile
                assert "sp-flush" in _thread_names()
    assert not list(tmp_path.glob(".*")), os.listdir(tmp_path)
    assert "sp-flush" not in _thread_names()
    a, b = sp.read_h5(str(plain)), sp.read_h5(str(streamed))
    assert b["r"][0].num_calls == a["r"][0].num_calls == 200
    assert [t.name for t in b.threads[0]] == [t.name for t in a.threads[0]]
    assert sorted(b["r"][0].call_ids) == list(range(1, 201))  # numbered as one run
    # checkpoints
    manager.setup(file_path=str(tmp_path / "ckpt.h5"), flush_interval=0.05)
    region = manager.profile_region("c")
    counts = []
    for n in (30, 7):
        for _ in range(n):
            with region:
                pass
        time.sleep(0.2)
        assert list(tmp_path.glob(".ckpt.h5.*.partial"))
        results = manager.finalize(verbose=False, return_results=True)
        counts.append(results["c"][0].num_calls)
        assert not list(tmp_path.glob(".ckpt.h5.*.partial"))
        assert sp.read_h5(str(tmp_path / "ckpt.h5"))["c"][0].num_calls == n
    assert counts == [30, 7]
    manager.reset()


def _thread_names() -> list[str]:
    """OS names of this process's threads (the flush thread is a Rust thread)."""
    names = []
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


# `read_h5` of a missing file whose only sidecar is unreadable names the sidecar it tried,
# not just "file not found".
def test_read_h5_names_the_sidecar_it_could_not_recover_from(tmp_path):
    target, sidecar, _, _ = _killed_streaming_child(tmp_path, run_for=0.5)
    sidecar.write_bytes(sidecar.read_bytes()[:6])  # cut inside its header
    with pytest.warns(RuntimeWarning) as seen, pytest.raises(FileNotFoundError):
        sp.read_h5(str(target))
    message = " ".join(str(w.message) for w in seen)
    assert str(sidecar) in message and "nothing could be recovered" in message, message
    assert sidecar.exists()  # kept for `scope-profiler recover` or a person to look at


# `run -o k.json` records into k.json.scope-profiler.h5, whose sidecar a kill leaves:
# `recover k.json` finds that sidecar, recovers the recording and renders k.json, as the run
# would have.
def test_recover_of_a_json_output_renders_it(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(
        "import os, signal, time\nimport scope_profiler as sp\n"
        "for _ in range(3):\n    with sp.profile_region('step'):\n        pass\n"
        "time.sleep(0.5)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = tmp_path / "k.json"
    h5 = tmp_path / "k.json.scope-profiler.h5"
    proc = run_cli("run", "-q", "--flush-interval", "0.1", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists()
    proc = run_cli("recover", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout, proc.stdout
    assert sp.read_profile(str(out))["step"][0].num_calls == 3
    assert not h5.exists()  # rendered, then removed, as `run` does
    # nothing left to recover now: the error says so, exit 1
    again = run_cli("recover", out, cwd=tmp_path)
    assert again.returncode == 1 and "error:" in again.stderr, again.stderr


#: A script whose spawned worker records 5 calls and writes its file, then the script's own
#: process is killed before it recorded a call of its own.
_KILLED_AFTER_ITS_WORKER = """
import multiprocessing, os, signal
import scope_profiler as sp

def work():
    for _ in range(5):
        with sp.profile_region("work"):
            pass

if __name__ == "__main__":
    worker = multiprocessing.get_context("spawn").Process(target=work)
    worker.start()
    worker.join()
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("output", ["k.h5", "k.json"])
def test_recover_keeps_the_workers_of_a_run_killed_before_it_recorded(tmp_path, output):
    script = tmp_path / "app.py"
    script.write_text(_KILLED_AFTER_ITS_WORKER)
    out = tmp_path / output
    proc = run_cli("run", "-q", "-o", out, script, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists() and list(tmp_path.glob("*.procs-*")), sorted(os.listdir(tmp_path))
    proc = run_cli("recover", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 (that process) is empty" in proc.stdout, proc.stdout
    results = sp.read_profile(str(out)) if output.endswith(".json") else sp.read_h5(str(out))
    assert results.num_ranks == 2
    assert results["work"][1].num_calls == 5
    assert not list(tmp_path.glob("*.procs-*"))  # merged, then removed


#: A program recording with flush_interval and auto_finalize whose atexit handler, registered
#: before its setup(), runs after the exit-time finalize and makes more calls while the flush
#: thread would have streamed them.
_CALLS_AFTER_THE_EXIT_FINALIZE = """
import atexit, time
import scope_profiler as sp

@atexit.register
def late():
    for _ in range(470):
        with sp.profile_region("late"):
            pass
    time.sleep(0.3)  # several flush intervals

sp.ProfileManager.setup(output="x.h5", flush_interval=0.05, auto_finalize=True)
for _ in range(1000):
    with sp.profile_region("work"):
        pass
time.sleep(0.2)  # streamed before the end
"""


def _region_calls(path) -> dict[str, int]:
    return {g.name: g.num_calls for g in sp.read_h5(str(path)).get_regions()}


# The exit-time finalize is the recording's last: streaming ends with it and no sidecar
# outlives it (one left behind would make read_h5 suggest `recover`, which would add calls the
# file was never meant to hold). The calls made after it are not recorded; one line on stderr
# says how many and why.
def test_the_exit_time_finalize_ends_streaming_and_leaves_no_sidecar(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(_CALLS_AFTER_THE_EXIT_FINALIZE)
    proc = subprocess.run(
        [sys.executable, script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert not list(tmp_path.glob(".x.h5.*")), os.listdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "older than its sidecar", no recover advice
        assert _region_calls(tmp_path / "x.h5") == {"work": 1000}
    lines = [line for line in proc.stderr.splitlines() if "exit-time finalize" in line]
    assert lines == [
        "scope-profiler: 470 call(s) made after the exit-time finalize are not in x.h5, which it "
        "wrote (atexit handlers registered before setup() run after it; daemon threads may "
        "still run): that finalize ends the recording"
    ], proc.stderr
    again = run_cli("recover", "x.h5", cwd=tmp_path)
    assert again.returncode == 1 and "error:" in again.stderr, again.stderr
    assert _region_calls(tmp_path / "x.h5") == {"work": 1000}


#: A program that finalizes (a checkpoint, not the recording's end), records more with
#: flush_interval, and is killed: its sidecar, newer than the file, is of the same recording.
_KILLED_AFTER_A_CHECKPOINT = """
import os, signal, time
import scope_profiler as sp

sp.ProfileManager.setup(output="x.h5", flush_interval=0.05)
for _ in range(1000):
    with sp.profile_region("work"):
        pass
sp.ProfileManager.finalize(verbose=False)
for _ in range(5):
    with sp.profile_region("late"):
        pass
time.sleep(0.5)  # the flush thread streams them meanwhile
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_recover_adds_the_calls_a_process_streamed_after_writing_its_file(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(_KILLED_AFTER_A_CHECKPOINT)
    assert subprocess.run([sys.executable, script], cwd=tmp_path).returncode == -signal.SIGKILL
    assert len(list(tmp_path.glob(".x.h5.*.partial"))) == 1
    with pytest.warns(RuntimeWarning, match="adds them to it when its process wrote both"):
        assert _region_calls(tmp_path / "x.h5") == {"work": 1000}
    proc = run_cli("recover", "x.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "recovered 5 call(s)" in proc.stdout and "after the 1000 call(s) it held" in proc.stdout
    assert _region_calls(tmp_path / "x.h5") == {"work": 1000, "late": 5}
    assert not list(tmp_path.glob(".x.h5.*.partial"))
    r = sp.read_h5(str(tmp_path / "x.h5"))
    ids = sorted([*r["work"][0].call_ids.tolist(), *r["late"][0].call_ids.tolist()])
    assert ids == list(range(1005)), "the late calls are numbered after the file's"


def test_recover_never_replaces_a_file_with_fewer_calls_of_another_recording(tmp_path):
    complete = tmp_path / "complete.py"
    complete.write_text(
        "import scope_profiler as sp\n"
        "with sp.ProfileManager.session(output='x.h5', verbose=False):\n"
        "    for _ in range(1000):\n"
        "        with sp.profile_region('work'):\n"
        "            pass\n"
    )
    subprocess.run([sys.executable, complete], cwd=tmp_path, check=True)
    killed = tmp_path / "killed.py"  # a later run to the same file, killed after a flush
    killed.write_text(
        "import os, signal, time\n"
        "import scope_profiler as sp\n"
        "sp.ProfileManager.setup(output='x.h5', flush_interval=0.05)\n"
        "for _ in range(5):\n"
        "    with sp.profile_region('other'):\n"
        "        pass\n"
        "time.sleep(0.5)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, killed], cwd=tmp_path).returncode == -9
    proc = run_cli("recover", "x.h5", cwd=tmp_path)
    assert proc.returncode == 1
    # 1000 calls and the session's own
    assert "holds 1001 call(s) of another recording" in proc.stderr, proc.stderr
    assert "not replaced by fewer calls than it holds" in proc.stderr
    with pytest.warns(RuntimeWarning, match="never replaces it by fewer calls"):
        assert _region_calls(tmp_path / "x.h5") == {"scope_profiler.session": 1, "work": 1000}
    proc = run_cli("recover", "x.h5", "-o", "other.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _region_calls(tmp_path / "other.h5") == {"other": 5}
