"""Where the exports of the Python API write: a directory gets the default name(s) inside,
a file name is used exactly, outputs of several ranks are named per rank, and a writer's
error is the OSError subclass of its errno, naming the path."""

from __future__ import annotations

import pytest
import scope_profiler as sp
from helpers import DATASETS, THREADS

_EXPORTS = {
    # function name -> (default file name(s) of pool.h5 in a directory, exact name to give)
    "export_speedscope": (["pool.speedscope.json"], "my.speedscope.json"),
    "export_chrome_trace": (["pool.trace.json"], "my.trace.json"),
    "export_perfetto": (["pool.pftrace"], "my.pftrace"),
    "export_pprof": (["pool.pb.gz"], "my.pb.gz"),
    "export_prof": (["pool_rank0.prof"], "my.v2.prof"),
    "export_folded": (["pool.folded"], "my.folded"),
    "export_flamegraph_svg": (["pool.flamegraph.svg"], "pool.flame.svg"),
    "export_timeline_svg": (["pool.timeline.svg"], "my.timeline.svg"),
    "export_parquet": (["pool.parquet", "pool.lanes.parquet"], "my.parquet"),
    "export_json": (["pool.json"], "my.json.gz"),
}


# Every export of the Python API: a directory (existing, or a path ending in a separator)
# gets the default name(s) inside (never `/tmp.speedscope.json` beside it); a file name for
# one output is used exactly (`pool.flame.svg`, not `pool.flame_rank0.svg`).
@pytest.mark.parametrize("function", sorted(_EXPORTS))
def test_an_export_to_a_directory_uses_the_default_names_and_a_file_name_exactly(
    tmp_path, monkeypatch, function
):
    import errno
    from pathlib import Path

    if function == "export_parquet":
        pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)
    export = getattr(sp, function)
    results = sp.read_h5(DATASETS / "reference" / "pool.h5")
    defaults, exact = _EXPORTS[function]

    def written(paths):
        assert all(p.is_file() and p.stat().st_size > 0 for p in paths), paths
        return [str(p) for p in paths]

    existing = tmp_path / "existing"
    existing.mkdir()
    for target, inside in (
        (existing, existing),  # an existing directory (as a Path)
        (str(existing), existing),  # ... and as a str without separator
        ("outdir/", tmp_path / "outdir"),  # a separator: a directory, created
        (f"{tmp_path}/nested/deeper/", tmp_path / "nested" / "deeper"),
        (".", tmp_path),
    ):
        paths = export(results, target, verbose=False)
        written(paths)
        assert paths == [Path(target) / d for d in defaults], target
        assert sorted(p.name for p in inside.iterdir() if p.is_file()) == sorted(defaults)
        for p in paths:
            p.unlink()
    assert not (tmp_path / "existing.speedscope.json").exists()
    assert not any(p.name.startswith(("outdir.", "outdir_")) for p in tmp_path.iterdir())
    # an exact file name is used as given
    paths = export(results, tmp_path / "files" / exact, verbose=False)
    # but by export_prof, which names its files per rank as 0.7.5 does
    want = exact.replace(".prof", "_rank0.prof") if function == "export_prof" else exact
    assert paths[0].name == want
    assert written(paths)[0] == str(tmp_path / "files" / want)
    assert all(p.parent == tmp_path / "files" for p in paths)
    # a directory where the file must go is refused (nothing written elsewhere instead)
    (tmp_path / "blocked" / defaults[0]).mkdir(parents=True)
    with pytest.raises(IsADirectoryError) as info:
        export(results, tmp_path / "blocked", verbose=False)
    assert info.value.errno == errno.EISDIR
    assert info.value.filename == str(tmp_path / "blocked" / defaults[0])
    assert [p.name for p in (tmp_path / "blocked").iterdir()] == [defaults[0]]
    # a directory target that is a file: NotADirectoryError
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        export(results, "plain/", verbose=False)
    assert info.value.errno == errno.ENOTDIR
    assert (tmp_path / "plain").read_text() == "x"


# Outputs of several ranks keep their documented names (`_rank<R>`), in a directory too;
# `write_json` (one file) takes a directory as well.
def test_outputs_of_several_ranks_are_named_per_rank_and_write_json_takes_a_directory(tmp_path):
    threads = sp.read_h5(DATASETS / "reference" / "threads.h5")
    two_ranks = sp.merge_results(threads, sp.read_h5(DATASETS / "reference" / "pool.h5"))
    assert two_ranks.num_ranks == 2
    stem = two_ranks.display_label
    out = sp.export_flamegraph_svg(two_ranks, tmp_path / "g.svg", ranks=[0, 1], verbose=False)
    assert [p.name for p in out] == ["g_rank0.svg", "g_rank1.svg"]
    out = sp.export_prof(two_ranks, f"{tmp_path}/d/", ranks=[1, 0], verbose=False)
    assert [p.name for p in out] == [f"{stem}_rank1.prof", f"{stem}_rank0.prof"]
    one = sp.export_flamegraph_svg(two_ranks, tmp_path / "one.svg", ranks=[1], verbose=False)
    assert one == [tmp_path / "one.svg"]
    assert sp.write_json(threads, tmp_path) == tmp_path / "threads.json"
    assert sp.write_json(threads, str(tmp_path / "j") + "/") == tmp_path / "j" / "threads.json"
    assert sp.write_json(threads, tmp_path / "exact") == tmp_path / "exact"
    assert sp.read_json(tmp_path / "exact")["solve"][0].num_calls == threads["solve"][0].num_calls


# Errors from inside the export writers are the OSError subclass of their errno, with the
# errno and the file name set, so `except FileNotFoundError` / `except PermissionError`
# around an export works.
def test_export_writer_errors_are_the_oserror_subclass_of_their_errno(tmp_path):
    import errno

    r = sp.read_h5(str(THREADS))
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    cases = [
        (
            blocker / "sub" / "x.speedscope.json",
            NotADirectoryError,
            errno.ENOTDIR,
            str(blocker / "sub"),
        ),
        (
            "/proc/scope-profiler-test/x.prof",
            FileNotFoundError,
            errno.ENOENT,
            "/proc/scope-profiler-test",
        ),
    ]
    for target, kind, code, filename in cases:
        for export in (sp.export_speedscope, sp.export_prof, sp.export_chrome_trace):
            with pytest.raises(kind) as e:
                export(r, str(target), verbose=False)
            assert (e.value.errno, e.value.filename) == (code, filename), (export.__name__, e.value)
            assert filename in str(e.value)
