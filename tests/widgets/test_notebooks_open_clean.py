"""The shipped notebooks open in JupyterLab without being marked modified (issue 27 item 10).

JupyterLab rewrites a notebook's kernelspec and language_info with what the kernel reports when it
connects; a notebook whose metadata differs is then "modified" before the user did anything, and
closing it asks "Save changes?". Each notebook in notebooks/ is opened, on a fresh server whose
kernel is ipykernel's, and must stay clean.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.lab import CHROMIUM, CHROMIUM_ARGS, jupyter_lab, open_notebook

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_every_shipped_notebook_opens_clean(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    served = tmp_path / "notebooks"
    served.mkdir()
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert len(names) >= 5
    for name in names:
        shutil.copy2(NOTEBOOKS / name, served / name)
    dirty: list[str] = []
    with (
        jupyter_lab(tmp_path, served, {"STABLE_EXPLORE_HOME": str(tmp_path / "home")}) as url,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for number, name in enumerate(names):
                page = browser.new_page()
                open_notebook(page, url, name, workspace=f"w{number}")  # alone in its own workspace
                page.wait_for_timeout(2000)  # what JupyterLab does after the kernel connects has happened
                if page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty"):
                    dirty.append(name)
                page.close()
        finally:
            browser.close()
    assert dirty == [], f"marked modified right after opening: {dirty}"
    for name in names:  # opening saved nothing
        assert (served / name).read_bytes() == (NOTEBOOKS / name).read_bytes()
