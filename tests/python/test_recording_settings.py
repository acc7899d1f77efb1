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


@pytest.mark.parametrize("seconds", [1e20, 86_400.5, 1e308 * 10, float("nan"), -1.0])
def test_a_flush_interval_no_timer_can_take_is_refused_naming_it(manager, tmp_path, seconds):
    with pytest.raises(ValueError, match="flush_interval must be") as e:
        manager.setup(file_path=str(tmp_path / "p.h5"), flush_interval=seconds)
    assert type(e.value) is ValueError, repr(e.value)
    manager.setup(file_path=str(tmp_path / "p.h5"), flush_interval=86_400)
    assert manager.get_config().flush_interval == 86_400


# Every setting is checked at setup(), before anything starts: a wrong type is a
# TypeError and a wrong value a ValueError, each naming the setting and what it accepts.
def test_a_flag_is_true_or_false_from_a_keyword_or_a_settings_file(manager, tmp_path):
    with pytest.raises(TypeError) as info:
        manager.setup(track_async="no", deactivate_file_output=True)
    assert str(info.value) == "track_async must be True or False, got 'no'"
    toml = tmp_path / "p.toml"
    toml.write_text('[profiling]\ntrack_threads = "false"\n')
    with pytest.raises(TypeError, match="^track_threads must be True or False, got 'false'$"):
        manager.setup(config_path=str(toml), deactivate_file_output=True)
    with pytest.raises(TypeError, match="^use_nvtx must be True or False, got 2$"):
        manager.setup(use_nvtx=2, deactivate_file_output=True)
    assert not manager.is_configured()
    manager.setup(track_threads=1, deactivate_file_output=0)  # 1 and 0 equal True and False
    assert manager.get_config().track_threads is True


def test_a_path_is_a_str_or_path_like_not_empty_and_without_nul(manager, tmp_path):
    with pytest.raises(TypeError) as info:
        manager.setup(file_path=b"x.h5")
    assert str(info.value) == "file_path must be a str or os.PathLike path, got b'x.h5'"
    with pytest.raises(ValueError, match="^file_path must not be empty$"):
        manager.setup(file_path="")
    with pytest.raises(ValueError, match="^file_path contains a NUL character"):
        manager.setup(file_path="a\0b.h5")
    with pytest.raises(TypeError, match="^output must be a str or os.PathLike path, got 5$"):
        manager.setup(output=5)
    manager.setup(file_path=tmp_path / "run.h5")  # a PathLike is a path
    assert manager.get_config().file_path == str(tmp_path / "run.h5")


def test_an_output_that_cannot_be_written_is_refused_at_setup(manager, tmp_path):
    missing = tmp_path / "missing" / "run.h5"
    with pytest.raises(ValueError) as info:
        manager.setup(file_path=str(missing))
    assert str(info.value) == (
        f"file_path {str(missing)!r} cannot be written: "
        f"the directory {str(missing.parent)!r} does not exist"
    )
    with pytest.raises(ValueError, match="^output '/proc/x/run.json' cannot be written"):
        manager.setup(output="/proc/x/run.json")
    with pytest.raises(ValueError, match="is a directory; name the file to write$"):
        manager.setup(file_path=str(tmp_path))
    assert not manager.is_configured() and not missing.parent.exists()
    # a run that writes no file does not look at the path
    manager.setup(file_path=str(missing), deactivate_file_output=True)
    assert manager.is_configured()


def test_an_unwritable_output_from_the_environment_or_the_command_line_is_refused(tmp_path):
    code = textwrap.dedent(
        """
        from scope_profiler import ProfileManager
        try:
            ProfileManager.setup_from_env()
        except ValueError as e:
            print(e)
        """
    )
    env = {**__import__("os").environ, "SCOPE_PROFILER_OUTPUT": "/proc/x/env.h5"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.startswith("output '/proc/x/env.h5' cannot be written"), out
    script = tmp_path / "script.py"
    script.write_text("print('the script ran')\n")
    (tmp_path / "plain").write_text("a file where the directory should be")
    proc = run_cli("run", "-o", tmp_path / "plain" / "out.h5", script)
    assert proc.returncode == 1, proc
    assert "the script ran" not in proc.stdout
    assert "is not a directory" in proc.stderr


def test_region_tags_are_a_str_or_an_iterable_of_str(manager):
    with pytest.raises(
        TypeError, match=r"^region_tags must be a str or an iterable of str, got 5$"
    ):
        manager.setup(region_tags=5, deactivate_file_output=True)
    with pytest.raises(TypeError, match=r"^enable_tags must be a str or an iterable of str"):
        manager.setup(enable_tags=["io", 3], deactivate_file_output=True)
    manager.setup(region_tags=(t for t in ["io"]), deactivate_file_output=True)
    assert manager.is_configured()


def test_a_count_beyond_64_bits_names_the_setting(manager):
    with pytest.raises(ValueError) as info:
        manager.setup(buffer_limit=2**70, deactivate_file_output=True)
    assert str(info.value) == (
        f"buffer_limit must be an integer from 1 to {2**63 - 1}, got {2**70}"
    )
    assert not manager.is_configured()


# The reference's compressions are accepted (its files use gzip, the writer's own choice)
# and anything else is refused at setup() naming the setting.
def test_a_compression_is_checked_as_the_reference_checks_it(manager):
    for value, normalized in (("zstd", "zstd"), (" LZF", "lzf"), ("GZIP", "gzip")):
        manager.setup(hdf5_compression=value, deactivate_file_output=True, replace=True)
        assert manager.get_config().hdf5_compression == normalized
    manager.reset()
    with pytest.raises(
        ValueError,
        match="^hdf5_compression must be None, 'auto', 'gzip', 'lzf', or 'zstd', got 'brotli'$",
    ):
        manager.setup(hdf5_compression="brotli", deactivate_file_output=True)
    assert not manager.is_configured()


def test_a_flush_interval_beyond_one_day_is_refused_not_a_panic(manager, tmp_path):
    for value in (1e20, 86_400.5, 2**70):
        with pytest.raises(ValueError, match="^flush_interval must be at most 86400"):
            manager.setup(file_path=str(tmp_path / "f.h5"), flush_interval=value)
        assert not manager.is_configured()
    with pytest.raises(
        TypeError, match="^flush_interval must be a number of seconds from 0.01 to 86400, got .1.$"
    ):
        manager.setup(file_path=str(tmp_path / "f.h5"), flush_interval="1")
    script = tmp_path / "script.py"
    script.write_text("print('the script ran')\n")
    proc = run_cli("run", "--flush-interval", "1e20", "-o", tmp_path / "out.h5", script)
    assert proc.returncode == 2 and "flush_interval must be at most 86400" in proc.stderr, proc
    assert "the script ran" not in proc.stdout and not list(tmp_path.glob("*.procs-*"))


# Odd values of every setting raise a TypeError, ValueError or NotImplementedError (or are
# accepted): never a Rust panic (pyo3's PanicException is a BaseException).
def test_odd_values_of_every_setting_raise_python_errors_not_panics(manager):
    import numpy as np

    class BadRepr:
        def __repr__(self):
            raise RuntimeError("no repr")

    def items():
        yield "a"
        raise LookupError("mid-way")

    odd = [np.int64(3), np.array([1, 2]), 1e308, float("nan"), -(2**80), "", "\0", BadRepr(), {}]
    for name in (*DEFAULTS, "flush_interval", "recursive_include", "recursive_call_limit"):
        for value in odd:
            try:
                manager.setup(**{name: value}, deactivate_file_output=True, replace=True)
            except (TypeError, ValueError, NotImplementedError, OverflowError):
                pass
    with pytest.raises(LookupError):
        manager.setup(enable_tags=items(), deactivate_file_output=True, replace=True)
