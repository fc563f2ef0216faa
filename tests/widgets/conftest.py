"""The JupyterLab server and Chromium that every lab test module shares (tests/lab.py's SharedLab)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import CHROMIUM, SharedLab, shared_lab


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedLab]:
    """One JupyterLab and one headless Chromium for the session; a module opens its notebook with
    ``lab_server.notebook(root, name, cells)`` (its own folder, kernel, home, browser context and workspace)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")
    served = tmp_path_factory.getbasetemp()
    with shared_lab(tmp_path_factory.mktemp("shared-lab"), served) as lab:
        yield lab
