"""Notebook 7 too shows the browser's static snapshot, not "model not found", when a saved notebook is
reopened on a new kernel; a save's progress bar is static HTML there, and the notebook is not marked
modified by opening it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")
pytest.importorskip("notebook", reason="Notebook 7 is in the test extras")

REPO = Path(__file__).resolve().parents[2]
CELLS = [
    "import numpy as np, stable_explore as se\n"
    "features = se.Features(image=se.Image(), label=se.ClassLabel(names=['dark', 'light']))\n"
    "rows = [{'image': np.full((8, 8), 30 + 3 * i, dtype=np.uint8), 'label': i % 2} for i in range(60)]\n"
    "ds = se.build(rows, features, name='tiles', progress=False)",
    "browser = ds.browse(page_size=24)\nbrowser",
    "clean = ds.drop([0]).save(message='drop one')",  # a progress bar: HTML, not a widget
]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, notebook7_lab: SharedLab) -> Iterator[tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("nb7-reopen")
    env = {"PYTHONPATH": str(REPO)}
    with notebook7_lab.notebook7(root, "tiles.ipynb", CELLS, viewport=(1280, 1200), env=env) as page:
        yield page, root


def test_reopened_notebook_7_shows_the_snapshot(session: tuple[Any, Path], notebook7_lab: SharedLab) -> None:
    page, root = session
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=120_000)
    output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
    assert output.locator("[data-testid=se-static]").is_hidden()  # the live browser is shown instead
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    page.evaluate("async () => { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); }")
    notebook7_lab.reopen7(page, root, "tiles.ipynb")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')]"
        ".some(e => e.textContent.includes('model not found'))",
        timeout=60_000,
    )
    output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-OutputArea")
    output.locator("[data-testid=se-static]").wait_for(state="visible", timeout=30_000)
    assert output.get_by_text("Error displaying widget").is_hidden()
    assert "tiles@" in output.inner_text()
    page.wait_for_timeout(3000)  # what Notebook 7 does after opening has happened
    shown = page.locator(".jp-Notebook").inner_text()
    assert shown.count("model not found") == 0  # none shown: the save's bar is static HTML
    assert "saving tiles done: 59/59 rows" in shown
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty") is False
