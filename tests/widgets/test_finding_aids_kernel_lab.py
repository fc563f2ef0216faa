"""The embedding map and the issues panel when their kernel is gone, in a real JupyterLab (Playwright, Chromium).

Before, after a kernel restart both looked alive: the map went on selecting and counting, with nothing
reaching the kernel. Now each says the kernel restarted, as the shard browser does, and disables its
controls; the map no longer selects. Saved and reopened on a new kernel, their cells said "Error
displaying widget: model not found"; now they show a static snapshot (the map's points as a picture,
the panel's list) with a note to run the cell. Screenshots go to test-artifacts/.
"""

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

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"

CELLS = [
    """\
import numpy as np
import stable_explore as se
from stable_explore import signals
from stable_explore.testing.planted import planted_digits
from stable_explore.widgets import EmbeddingMap
from stable_explore.widgets.issues_panel import IssuesPanel

truth = planted_digits(exact=6, near=0, flipped=20, noise=0, blurred=0)
ds = se.build(truth.rows, truth.features, name="planted", progress=False)
panel = IssuesPanel(ds, duplicates=signals.exact_duplicates(ds), label_issues=signals.neighbor_label_issues(ds))
panel""",
    "embedding_map = EmbeddingMap(ds, np.random.default_rng(0).normal(size=(len(ds), 8)))\nembedding_map",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("aids")
    env = {"PYTHONPATH": str(REPO)}
    with lab_server.notebook(root, "aids.ipynb", CELLS, env=env, viewport=(1280, 1400)) as page:
        yield page, root


def _drag_box(page: Any) -> None:
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    page.keyboard.down("Shift")  # shift-drag: a box, whatever the mode
    page.mouse.move(box["x"] + 5, box["y"] + 5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    page.mouse.move(box["x"] + box["width"] - 5, box["y"] + box["height"] - 5, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")


def test_after_a_kernel_restart_the_map_and_the_panel_say_so_and_stop(lab: tuple[Any, Path]) -> None:
    page = lab[0]
    panel = page.locator("[data-testid=se-issues]")
    panel.wait_for(timeout=180_000)
    widget = page.locator("[data-testid=se-map]")
    widget.wait_for(timeout=120_000)
    page.wait_for_selector("[data-testid=se-map-canvas][data-ready^='points-']", timeout=60_000)
    count = page.locator("[data-testid=se-map-count]")
    assert count.get_attribute("data-count") == "0"
    assert page.locator("[data-testid=se-dead]").count() == 2
    assert page.locator("[data-testid=se-dead]:visible").count() == 0

    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:restart-kernel'); }")  # Kernel > Restart
    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=30_000)
    for where, text in (
        (panel, "the kernel restarted: run the cell again to list the issues"),
        (widget, "the kernel restarted: run the cell again to select on the map"),
    ):
        note = where.locator("[data-testid=se-dead]")
        note.wait_for(state="visible", timeout=60_000)
        assert note.inner_text() == text
        enabled = where.locator("button, input, select").evaluate_all("els => els.filter(e => !e.disabled).length")
        assert enabled == 0

    _drag_box(page)  # a dead map does not select, nor count
    widget.locator("[data-testid=se-map-canvas]").focus()
    page.keyboard.press("Escape")
    page.wait_for_timeout(500)
    assert count.get_attribute("data-count") == "0"
    assert count.get_attribute("data-shape") is None  # nothing was sent
    panel.locator("[data-testid=se-issue]").first.click(force=True)  # nor does a dead panel open an entry
    page.wait_for_timeout(500)
    assert panel.locator("[data-testid=se-issues-group]").get_attribute("data-ready") is None
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "issues-kernel-restarted.png"))
    widget.screenshot(path=str(ARTIFACTS / "map-kernel-restarted.png"))


def test_reopened_on_a_new_kernel_they_show_a_snapshot_not_model_not_found(
    lab: tuple[Any, Path], lab_server: SharedLab
) -> None:
    page, root = lab
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    saved = lab_server.saved(root, "aids.ipynb")
    for cell in saved["cells"]:  # each widget is saved with its snapshot before it
        kinds = [set(o.get("data", {})) for o in cell["outputs"]]  # (a signal's progress bar before them)
        assert kinds[-2] == {"text/html"}
        assert "application/vnd.jupyter.widget-view+json" in kinds[-1]
    page.evaluate(
        "async () => { try { await window.jupyterapp.shell.currentWidget.sessionContext.shutdown(); } catch {} }"
    )
    lab_server.reopen(page, root, "aids.ipynb")  # the kernel is gone for good
    cells = page.locator(".jp-Notebook .jp-Cell")
    panel = cells.nth(0).locator(".jp-OutputArea [data-testid=se-static]")
    panel.wait_for(state="visible", timeout=60_000)
    picture = cells.nth(1).locator(".jp-OutputArea [data-testid=se-static]")
    picture.wait_for(state="visible", timeout=60_000)
    page.wait_for_timeout(3000)  # what JupyterLab does after opening has happened
    shown = page.locator(".jp-Notebook").inner_text()
    assert shown.count("model not found") == 0
    assert "Issues panel, static list: run the cell to show each entry's rows." in panel.inner_text()
    assert "6 duplicate group(s)" in panel.inner_text()
    assert "2 exact duplicates of row " in panel.inner_text()
    assert "Embedding map, static picture: run the cell to pan, zoom and select." in picture.inner_text()
    image = picture.locator("[data-testid=se-static-picture]")
    assert image.evaluate("img => img.complete && img.naturalWidth") == 480
    ARTIFACTS.mkdir(exist_ok=True)
    cells.nth(0).locator(".jp-OutputArea").screenshot(path=str(ARTIFACTS / "issues-reopened-snapshot.png"))
    cells.nth(1).locator(".jp-OutputArea").screenshot(path=str(ARTIFACTS / "map-reopened-snapshot.png"))
