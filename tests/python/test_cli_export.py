"""`scope-profiler export FORMAT[,FORMAT...]` batches (a bad file in the middle never stops
the batch: one error line, exit 1) and `scope-profiler timeline`; outputs go through their
real consumers (inferno + xmllint, pyarrow)."""

from __future__ import annotations

import shutil

import pytest
from helpers import DATASETS, run_cli
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
    assert proc.returncode == 2  # issue 14 (new-user trial): a usage error (was 1)
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
