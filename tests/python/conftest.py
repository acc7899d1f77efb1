"""Shared fixtures for the Python tests: paths of the reference datasets, and the global
manager reset after each test."""

from __future__ import annotations

from pathlib import Path

import pytest

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
