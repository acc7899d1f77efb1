"""Settings of setup()/session(): names, defaults, validation messages of the reference."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from helpers import run_cli
from scope_profiler import ProfileManager
from scope_profiler._settings import DEFAULTS, ProfilingOptions

THREADS_MSG = (
    "track_threads/track_async cannot be combined with line, GPU, NVTX, LIKWID, "
    "perf events, or aggregation profiling"
)


@pytest.fixture
def manager():
    m = ProfileManager()
    yield m
    m.reset()


def test_all_29_settings_with_reference_defaults():
    assert len(DEFAULTS) == 29
    assert DEFAULTS["file_path"] == "profiling_data.h5"
    assert DEFAULTS["buffer_limit"] == 1024
    assert DEFAULTS["output_mode"] == "auto"
    assert DEFAULTS["metadata_detail"] == "minimal"
    assert DEFAULTS["gpu_timing_backend"] == "auto"
    assert DEFAULTS["track_threads"] is False and DEFAULTS["track_async"] is False


def test_unknown_setting_suggests(manager):
    with pytest.raises(TypeError) as e:
        manager.setup(track_thread=True)
    assert (
        str(e.value)
        == "Unknown profiling setting(s): 'track_thread' (did you mean 'track_threads'?)"
    )
    with pytest.raises(TypeError, match=r"Unknown profiling setting\(s\): 'zzz'$"):
        manager.setup(zzz=1)
    assert not manager.is_configured()


def test_session_validates_at_enter(manager):
    s = manager.session(track_threads=True, use_nvtx=True)  # constructs fine
    with pytest.raises(ValueError) as e:
        with s:
            pass
    assert str(e.value) == THREADS_MSG
    with pytest.raises(TypeError, match="did you mean 'track_threads'"):
        with manager.session(track_thred=True):
            pass
    assert not manager.is_configured()


@pytest.mark.parametrize(
    "option",
    [
        {"use_line_profiler": True},
        {"use_gpu_timing": True},
        {"use_nvtx": True},
        {"use_likwid": True},
        {"perf_events": ["cycles"]},
        {"aggregation_mode": True},
    ],
)
def test_unsupported_options(manager, option):
    for tracked in ({"track_threads": True}, {"track_async": True}):
        with pytest.raises(ValueError) as e:
            manager.setup(**tracked, **option)
        assert str(e.value) == THREADS_MSG
    with pytest.raises(NotImplementedError, match="not supported"):
        manager.setup(**option)
    assert not manager.is_configured()


def test_aggregation_checked_before_threads(manager):
    with pytest.raises(
        ValueError,
        match="aggregation_mode cannot be combined with line, GPU, NVTX, LIKWID, or perf events",
    ):
        manager.setup(aggregation_mode=True, use_nvtx=True, track_threads=True)


def test_track_async_implies_track_threads(manager):
    manager.setup(track_async=True, deactivate_file_output=True)
    cfg = manager.get_config()
    assert cfg.track_async and cfg.track_threads and cfg.tracker is not None
    assert cfg.tracker.track_async


def test_value_validation(manager):
    with pytest.raises(
        ValueError, match=r"output_mode must be 'auto', 'direct', or 'parallel', got 'x'"
    ):
        manager.setup(output_mode="x")
    with pytest.raises(
        ValueError, match=r"metadata_detail must be one of \('minimal', 'full'\), got 'big'"
    ):
        manager.setup(metadata_detail="big")
    with pytest.raises(ValueError, match="gpu_sync_on_exit requires use_gpu_timing=True"):
        manager.setup(gpu_sync_on_exit=True)
    with pytest.raises(ValueError, match="hdf5_compression must be None"):
        manager.setup(hdf5_compression="bz2")
    with pytest.raises(ValueError, match="GZIP compression level must be between 0 and 9"):
        manager.setup(hdf5_compression="gzip", hdf5_compression_level=12)
    with pytest.raises(ValueError, match="hdf5_chunk_size must be a positive integer or None"):
        manager.setup(hdf5_chunk_size=0)
    assert not manager.is_configured()


def test_failed_setup_keeps_previous_config(manager):
    before = threading.getprofile()
    manager.setup(track_threads=True, deactivate_file_output=True)
    cfg = manager.get_config()
    with pytest.raises(ValueError):
        manager.setup(replace=True, output_mode="nope")
    assert manager.get_config() is cfg and cfg.tracker.installed
    manager.reset()
    assert threading.getprofile() is before


def test_none_means_unset_and_options_precedence(manager, tmp_path):
    toml = tmp_path / "p.toml"
    toml.write_text(
        '[profiling]\nfile_path = "from_toml.h5"\nbuffer_limit = 5\n[profiling.hdf5]\ncompression = "gzip"\n'
    )
    manager.setup(
        config_path=str(toml),
        options=ProfilingOptions(buffer_limit=9),
        file_path=None,
        track_threads=None,
        deactivate_file_output=True,
    )
    cfg = manager.get_config()
    assert cfg.file_path == "from_toml.h5"
    assert cfg.buffer_limit == 9
    assert cfg.hdf5_compression == "gzip"
    assert cfg.track_threads is False


def test_output_keyword(manager):
    manager.setup(output=None)
    assert manager.get_config().deactivate_file_output
    with pytest.raises(TypeError, match="output cannot be combined with file_path"):
        manager.setup(output="a.h5", file_path="b.h5", replace=True)
    manager.setup(output="c.h5", replace=True)
    assert manager.get_config().file_path == "c.h5"


# setup(output="run.html") writes the HTML report
# (from the HDF5 file recorded beside it, which is removed once the report is written).
def test_html_output_writes_the_report(manager, tmp_path):
    out = tmp_path / "run.html"
    manager.setup(output=str(out))
    with manager.region("work"):
        time.sleep(0.002)
    manager.finalize()
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert '<td>work</td><td class="num" data-v="1">1</td>' in html  # 1 call of "work"
    assert not (tmp_path / "run.html.scope-profiler.h5").exists()


def test_options_bag_flattens_groups_and_refuses_a_setting_given_twice():
    import scope_profiler as sp

    bag = sp.ProfilingOptions(
        file_path="a.h5", gpu=sp.GPUOptions(timing=False), hdf5=sp.HDF5Options(chunk_size=4)
    )
    assert bag.to_kwargs() == {"file_path": "a.h5", "use_gpu_timing": False, "hdf5_chunk_size": 4}
    twice = sp.ProfilingOptions(hdf5_compression="gzip", hdf5=sp.HDF5Options(compression="lzf"))
    with pytest.raises(ValueError) as info:
        twice.to_kwargs()
    assert str(info.value) == (
        "'hdf5_compression' is set both directly and on the 'hdf5' option group; "
        "set it in one place"
    )


# `deactivate_profiling=True` installs no hooks at all (the reference installs them: a defect
# we do not copy).
def test_deactivate_profiling_installs_no_hooks():
    code = textwrap.dedent(
        """
        import sys, threading
        from scope_profiler import ProfileManager
        ProfileManager.setup(deactivate_profiling=True, track_async=True)
        with ProfileManager.profile_region("r"):
            pass
        print(ProfileManager.get_config().tracker is None,
              threading._profile_hook is None,
              "scope_profiler._asyncio_hooks" in sys.modules,
              "scope_profiler._greenlet_hooks" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False", "False"], out.stdout


def test_a_flush_interval_below_10_ms_is_refused(tmp_path):
    for value in (1e-9, 0.005):
        with pytest.raises(ValueError, match=r"flush_interval must be at least 0\.01 s"):
            ProfileManager().setup(file_path=str(tmp_path / "f.h5"), flush_interval=value)
    proc = run_cli("run", "--flush-interval", "0.001", tmp_path / "x.py")
    assert proc.returncode == 2 and "flush_interval must be at least 0.01 s" in proc.stderr
