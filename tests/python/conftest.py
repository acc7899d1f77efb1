"""Shared fixtures for the Python tests: paths of the reference datasets."""

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
