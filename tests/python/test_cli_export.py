"""`scope-profiler export FORMAT[,FORMAT...]` batches (a bad file in the middle never stops
the batch: one error line, exit 1) and `scope-profiler timeline`; outputs go through their
real consumers (inferno + xmllint, pyarrow)."""

from __future__ import annotations

import os
import shutil
import time

import pytest
import scope_profiler as sp
from helpers import (
    DATASETS,
    THREADS,
    _caption,
    _lanes,
    _record_peeked_generator,
    _svg,
    _threads,
    run_cli,
)
from scope_profiler import ProfileManager
from test_export_graphics import FOLDED_CHECK, SVG_CHECK, _run_check

REF = DATASETS / "reference"
ALL_FORMATS = "speedscope,folded,flamegraph,timeline,parquet,prof,chrome,perfetto,pprof"
OUTPUTS = {
    "speedscope": [".speedscope.json"],
    "folded": [".folded"],
    "flamegraph": [".flamegraph.svg"],
    "timeline": [".timeline.svg"],
    "parquet": [".parquet", ".lanes.parquet"],
    "prof": [".prof"],
    "chrome": [".trace.json"],
    "perfetto": [".pftrace"],
    "pprof": [".pb.gz"],
}


def test_multi_format_batch_with_a_bad_file(tmp_path):
    inputs = [REF / f"{n}.h5" for n in ("threads", "async", "pool")]
    bad = tmp_path / "broken.h5"
    bad.write_bytes(b"not an hdf5 file")
    missing = tmp_path / "missing.h5"
    out = tmp_path / "out"
    proc = run_cli("export", ALL_FORMATS, inputs[0], bad, inputs[1], missing, inputs[2], "-o", out)
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, proc.stderr
    assert any(str(bad) in e for e in errors) and any(str(missing) in e for e in errors)
    assert "2 of 5 file(s) failed" in proc.stderr
    # every good file got every format, the bad ones nothing
    for f in inputs:
        for fmt, suffixes in OUTPUTS.items():
            for suffix in suffixes:
                assert (out / f"{f.stem}{suffix}").is_file(), (f.stem, fmt)
    assert not list(out.glob("broken*")) and not list(out.glob("missing*"))
    # consumers
    _run_check(FOLDED_CHECK, out / "async.folded", tmp_path / "async.inferno.svg")
    _run_check(SVG_CHECK, out / "threads.flamegraph.svg")
    _run_check(SVG_CHECK, out / "pool.timeline.svg")
    pq = pytest.importorskip(
        "pyarrow.parquet", reason="pyarrow not installed (tests/run_all.sh installs it)"
    )
    assert pq.read_table(out / "pool.parquet").num_rows == 49


def test_good_batch_exits_zero_and_parallel_jobs(tmp_path):
    inputs = [REF / f"{n}.h5" for n in ("threads", "async", "pool", "single")]
    proc = run_cli("export", "folded,timeline", *inputs, "-o", tmp_path / "o", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert "exported 4 file(s)" in proc.stderr
    assert "error" not in proc.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(
        f"{f.stem}{s}" for f in inputs for s in (".folded", ".timeline.svg")
    )


def test_same_stem_twice_does_not_overwrite(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    shutil.copy(REF / "pool.h5", a / "run.h5")
    shutil.copy(REF / "async.h5", b / "run.h5")
    proc = run_cli("export", "folded", a / "run.h5", b / "run.h5", "-o", tmp_path / "o")
    assert proc.returncode == 0, proc.stderr
    assert "pool_0;job" in (tmp_path / "o" / "run.folded").read_text()
    assert "Task-2 (fetch)" in (tmp_path / "o" / "run_2.folded").read_text()


def test_unknown_format_and_bad_rank(tmp_path):
    proc = run_cli("export", "folded,gif", REF / "pool.h5", "-o", tmp_path)
    assert proc.returncode == 2
    assert "unknown format 'gif'" in proc.stderr and "timeline" in proc.stderr
    proc = run_cli("export", "folded", REF / "pool.h5", "-o", tmp_path, "--rank", "3")
    assert proc.returncode == 2  # a usage error
    assert "Invalid rank requested: 3" in proc.stderr


def test_timeline_subcommand(tmp_path):
    out = tmp_path / "pics" / "timeline.svg"
    proc = run_cli("timeline", REF / "async.h5", "-o", out, "--width", "1800")
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    _run_check(SVG_CHECK, out, 3)
    text = out.read_text()
    assert 'width="1800"' in text
    assert text.count('<g class="lane"') == 8
    # default name: <stem>.timeline.svg in the current directory
    proc = run_cli("timeline", REF / "threads.h5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "threads.timeline.svg").is_file()
    proc = run_cli("timeline", tmp_path / "nope.h5")
    assert proc.returncode == 1 and "error:" in proc.stderr


def test_help_has_examples_for_every_subcommand():
    top = run_cli("--help")
    assert top.returncode == 0
    for sub in ("run", "summary", "threads", "export", "timeline"):
        proc = run_cli(sub, "--help")
        assert proc.returncode == 0, sub
        assert "Example" in proc.stdout, sub
        assert f"scope-profiler {sub}" in proc.stdout, sub
    export_help = run_cli("export", "--help").stdout
    for fmt in ALL_FORMATS.split(","):
        assert fmt in export_help


# The batch `scope-profiler export` says how many calls were set aside, per file and rank
# and in total, so a call missing from its files is never missing silently.
def test_batch_export_says_how_many_calls_were_set_aside(tmp_path):
    peeked = tmp_path / "peek.h5"
    _record_peeked_generator(peeked)
    clean = tmp_path / "clean.h5"
    with ProfileManager.session(file_path=str(clean), track_threads=True, verbose=False):
        with ProfileManager.profile_region("main"):
            time.sleep(0.001)
    out = tmp_path / "out"
    proc = run_cli("export", "speedscope,folded", peeked, clean, "-o", out)
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if ln.startswith("note:")]
    # one note for the one rank with a set-aside call, naming the file and the call
    assert len(notes) == 1, proc.stderr
    assert str(peeked) in notes[0] and "1 call(s) on rank 0 do not nest" in notes[0], notes
    assert "starts inside 'header' call 0" in notes[0], notes
    assert "1 call(s) in 1 file(s) were set aside" in proc.stderr, proc.stderr
    assert "exported 2 file(s)" in proc.stderr, proc.stderr
    # and the files really leave it out: the folded stacks have no frame of the generator
    folded = (out / "peek.folded").read_text()
    assert "header" in folded and "rows" not in folded, folded
    # a batch without set-aside calls prints no such line
    proc = run_cli("export", "folded", clean, "-o", tmp_path / "out2")
    assert proc.returncode == 0 and "set aside" not in proc.stderr, proc.stderr


# The timeline's size limits and options on the command line.
def test_timeline_cli_limits_and_options(tmp_path):
    h5 = tmp_path / "threads.h5"
    _threads(200)._native_run().write_h5(str(h5))
    out = tmp_path / "t.svg"
    proc = run_cli("timeline", h5, "-o", out)
    assert proc.returncode == 0, proc.stderr
    svg = _svg(out)
    assert len(_lanes(svg)) == 64 and ">+ 136 more lane(s)</text>" in svg
    proc = run_cli("timeline", h5, "-o", out, "--lanes", "3", "--max-depth", "1")
    assert proc.returncode == 0, proc.stderr
    assert _lanes(_svg(out)) == [-2 - k for k in range(197, 200)]
    proc = run_cli("timeline", h5, "-o", out, "--lanes", "0", "--window", ":0.000001")
    assert proc.returncode == 0, proc.stderr
    svg = _svg(out)
    assert len(_lanes(svg)) == 200 and _caption(svg)[0].startswith("Window 0.0000 ms – 0.0010 ms")
    assert run_cli("timeline", h5, "-o", out, "--include", "wo*").returncode == 0
    proc = run_cli("timeline", h5, "-o", out, "--exclude", "w?rk")
    # a usage error, exit 2
    assert proc.returncode == 2 and "No regions matched the selected filters." in proc.stderr
    proc = run_cli("timeline", h5, "-o", out, "--window", "2:1")
    assert proc.returncode != 0 and "0 <= START < END" in proc.stderr
    help_text = run_cli("timeline", "--help").stdout
    for option in ("--lanes", "--window", "--include", "--exclude", "--max-depth", "32,767"):
        assert option in help_text, option
    assert os.path.getsize(out) > 0


# `timeline --window 0.06:` past the end of the run is a usage error (exit 2) naming the
# window and the run's extent, not an empty drawing; a window overlapping the run in part is
# drawn.
def test_a_timeline_window_past_the_run_end_is_a_usage_error(tmp_path):
    out = tmp_path / "t.svg"
    proc = run_cli("timeline", THREADS, "--window", "0.06:", "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"error: {THREADS}: window 0.06: starts after the end of the run: its calls span 0 to "
        "0.050958 s from the run start; give a window starting before 0.050958 s\n"
    )
    assert not out.exists()
    proc = run_cli("timeline", THREADS, "--window", "0.05:", "-o", out)  # its last 0.96 ms
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    with pytest.raises(ValueError, match=r"window 0\.06:1 starts after the end of the run"):
        sp.export_timeline_svg(sp.read_h5(str(THREADS)), str(tmp_path / "p.svg"), window=(0.06, 1))
