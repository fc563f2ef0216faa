"""Notebook 06, run, saved and reopened on a new kernel in a real JupyterLab: no "model not found".

Before, its issues panel's cell said "Error displaying widget: model not found" once the notebook was
reopened without running it; now the panel shows its static list (and the browser its snapshot).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.lab import CHROMIUM, SharedLab

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")
pytest.importorskip("sklearn", reason="notebook 06 uses scikit-learn (the clean extra)")

REPO = Path(__file__).resolve().parents[2]
NAME = "06_find_what_to_clean.ipynb"


def test_notebook_06_reopened_shows_the_panel_snapshot(tmp_path: Path, lab_server: SharedLab) -> None:
    env = {"PYTHONPATH": str(REPO)}
    with lab_server.notebook(
        tmp_path, NAME, copy_from=REPO / "notebooks" / NAME, env=env, viewport=(1280, 1200)
    ) as page:
        page.locator("[data-testid=se-issues]").wait_for(timeout=300_000)
        page.wait_for_function(
            "() => !window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
            " || window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
            timeout=300_000,
        )
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        page.evaluate(
            "async () => { try { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); } catch {} }"
        )
        lab_server.reopen(page, tmp_path, NAME)
        snapshot = page.locator(".se-static-issues")
        snapshot.wait_for(state="visible", timeout=60_000)
        page.wait_for_timeout(3000)  # what JupyterLab does after opening has happened
        # (cells out of view are not painted, content-visibility: read the text, and what is shown by style)
        assert "Issues panel, static list" in (snapshot.text_content() or "")
        assert "duplicate group(s)" in (snapshot.text_content() or "")
        assert snapshot.evaluate("e => getComputedStyle(e.closest('.jp-OutputArea-child')).display") != "none"
        output = page.locator(".jp-OutputArea", has=snapshot)
        assert output.get_by_text("Error displaying widget").is_hidden()
        errors = page.get_by_text("model not found")
        assert all(errors.nth(i).is_hidden() for i in range(errors.count()))  # the browser's too
        snapshot.screenshot(path=str(tmp_path / "panel.png"))
        artifacts = REPO / "test-artifacts"
        artifacts.mkdir(exist_ok=True)
        shutil.copy2(tmp_path / "panel.png", artifacts / "notebook06-reopened-panel.png")
