"""Shared fixtures for the Python tests: paths of the reference datasets, a private
`ProfileManager` per test (`manager`), the global manager reset after each test, and, under
CI, `pytest.importorskip` failing instead of
skipping."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import unavailable, under_ci

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ROOT / "datasets"
REFERENCE = DATASETS / "reference"
COMPAT = DATASETS / "compat"
REFERENCE_NAMES = ["single", "threads", "pool", "async"]


@pytest.fixture
def datasets_dir() -> Path:
    return DATASETS


@pytest.fixture
def reference_dir() -> Path:
    return REFERENCE


@pytest.fixture
def compat_dir() -> Path:
    return COMPAT


@pytest.fixture
def manager():
    """A `ProfileManager` of the test's own, reset after it."""
    from scope_profiler import ProfileManager

    m = ProfileManager()
    yield m
    m.reset()


@pytest.fixture(autouse=True)
def _global_manager_reset():
    """Every test starts with the process-wide ProfileManager unconfigured: a session ends
    FINALIZED but configured (finalize is a checkpoint), which a later test that checks
    `is_configured()` of the global manager (test_recording::test_instances_are_isolated)
    would see, depending on the order the files run in."""
    yield
    from scope_profiler import ProfileManager

    if ProfileManager.is_configured():
        ProfileManager.reset()


_importorskip = pytest.importorskip


def _import_or_unavailable(modname: str, *args, **kwargs):
    """`pytest.importorskip`, whose skip goes through `helpers.unavailable`: tests/run_all.sh
    installs every module a test imports this way, so under CI a missing one fails."""
    try:
        return _importorskip(modname, *args, **kwargs)
    except pytest.skip.Exception as skip:
        reason = skip.msg
    unavailable(reason)


def pytest_configure(config):
    if under_ci():
        pytest.importorskip = _import_or_unavailable
