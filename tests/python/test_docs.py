"""The Python snippets of the user docs run as written (in a scratch directory,
in order: the HDF5 page reads the file the threads page writes)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from helpers import ROOT

DOCS = ROOT / "docs"
# pages whose ```python blocks are complete programs, in the order they run
PAGES = [
    "getting-started.md",
    "threads-tasks.md",
    "hdf5-layout.md",
    "notebooks.md",
    "datasets.md",
    "trio.md",
]


def blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_every_page_has_snippets():
    assert all(blocks(p) for p in PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_doc_snippets_run(page, tmp_path_factory):
    needs = {
        "notebooks.md": ["polars", "pandas"],
        "hdf5-layout.md": ["h5py"],
        "datasets.md": ["polars"],
        "trio.md": ["trio"],
    }
    for module in needs.get(page, []):
        pytest.importorskip(module)
    work = tmp_path_factory.getbasetemp() / "docs-snippets"
    work.mkdir(exist_ok=True)
    (work / "datasets").unlink(missing_ok=True)
    (work / "datasets").symlink_to(ROOT / "datasets")  # notebooks.md reads the bundled runs
    if page == "hdf5-layout.md" and not (work / "lanes.h5").exists():
        test_doc_snippets_run("threads-tasks.md", tmp_path_factory)
    code = "\n\n".join(blocks(page))
    if page == "notebooks.md":
        code = code.replace("SVG(filename=str(svg))", "print(svg)")  # no IPython needed
        stub = (
            "import sys\nfrom unittest import mock\n"
            "sys.modules.setdefault('IPython', mock.MagicMock())\n"
            "sys.modules.setdefault('IPython.display', mock.MagicMock())\n"
        )
        code = stub + code
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{page}:\n{proc.stdout}\n{proc.stderr}"
    if page == "threads-tasks.md":
        assert "'name': 'worker'" in proc.stdout and "fetch held" in proc.stdout
    if page == "datasets.md":
        assert "exclusive_s_per_rank" in proc.stdout and "scope_profiler.session" in proc.stdout
