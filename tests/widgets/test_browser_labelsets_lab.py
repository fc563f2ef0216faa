"""Ground truth and predictions in a real JupyterLab: the COCO set of test_browser_boxes_lab (objects and
predictions), drawn over one image or side by side in the detail pane, predictions dashed with their scores
and the score threshold applying to them only.

Screenshots go to docs/_static/screenshots/ (docs/labels.md shows them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, notebook_in_chromium, run_cell_until
from tests.widgets.test_browser_boxes_lab import NOTEBOOK

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"

ROLES = 'print("roles", [(f["name"], f["role"]) for f in browser.label_fields if f["kind"] == "boxes"])'


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cells = [NOTEBOOK, ROLES]
    with notebook_in_chromium(tmp_path_factory.mktemp("lab"), "labelsets.ipynb", cells, viewport=(1280, 1200)) as page:
        yield page


def count(page: Any, selector: str) -> int:
    return int(page.eval_on_selector_all(selector, "els => els.length"))


def wait_count(page: Any, selector: str, n: int) -> None:
    page.wait_for_function(f"() => document.querySelectorAll({selector!r}).length === {n}", timeout=30_000)


def test_ground_truth_and_predictions_side_by_side_or_overlaid(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]").first
    widget.wait_for(timeout=120_000)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    # the kernel says which column is the model's: "predictions" by its name
    out = run_cell_until(page, 1, lambda text: "roles" in text, "the label fields' roles")
    assert "('objects', 'truth'), ('predictions', 'predictions')" in out

    # image 1 in the detail: its 3 truths solid, its 3 predictions dashed, each named with its score
    page.dblclick("[data-testid=se-thumb][data-row='0']")
    page.wait_for_function("() => document.querySelector('[data-testid=se-detail]').dataset.row === '0'")
    detail = "[data-testid=se-detail]"
    wait_count(page, f"{detail} [data-testid=se-box]", 6)
    assert count(page, f"{detail} [data-testid=se-detail-pane]") == 1
    labels = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box-label][data-field=predictions]", "els => els.map(e => e.textContent)"
    )
    assert len(labels) == 3
    assert "dog 0.20" in labels
    assert all(len(text.split()) == 2 for text in labels)  # "class score"
    truth_labels = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box-label][data-field=objects]", "els => els.map(e => e.textContent)"
    )
    assert sorted(truth_labels) == ["car", "dog", "person"]  # ground truth: names only
    dashes = page.eval_on_selector_all(
        f"{detail} [data-testid=se-box]",
        "els => els.map(e => [e.dataset.field, getComputedStyle(e).strokeDasharray])",
    )
    assert all((dash not in ("none", "")) == (field == "predictions") for field, dash in dashes)

    # the threshold hides the prediction at 0.2 and no ground truth
    page.locator("[data-testid=se-score-threshold]").fill("0.5")
    wait_count(page, f"{detail} [data-testid=se-box]", 5)
    assert count(page, f"{detail} [data-testid=se-box][data-field=objects]") == 3

    # side by side: ground truth on the left, predictions on the right, each over its own copy of the image
    switch = page.locator("[data-testid=se-detail-mode][data-mode=side]")
    assert switch.is_visible()
    switch.click()
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 2)
    panes = page.eval_on_selector_all(
        f"{detail} [data-testid=se-detail-pane]",
        """els => els.map(p => [p.dataset.fields,
            [...p.querySelectorAll('[data-testid=se-box]')].map(b => b.dataset.field)])""",
    )
    assert panes == [["objects", ["objects"] * 3], ["predictions", ["predictions"] * 2]]
    for img in page.locator(f"{detail} .se-detail-img").all():
        img.evaluate("img => img.decode()")
    left, right = page.eval_on_selector_all(
        f"{detail} [data-testid=se-detail-pane]", "els => els.map(e => e.getBoundingClientRect().left)"
    )
    assert right > left + 50
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-side-by-side-light.png"))

    # the threshold still applies in the predictions' pane; the next row keeps the layout
    page.locator("[data-testid=se-score-threshold]").fill("0")
    wait_count(page, f"{detail} [data-testid=se-box][data-field=predictions]", 3)
    page.locator(f"{detail} .se-detail-bar button[title^='next row']").click()
    page.wait_for_function("() => document.querySelector('[data-testid=se-detail]').dataset.row === '1'")
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 2)

    # back to overlay: one image with both columns
    page.locator("[data-testid=se-detail-mode][data-mode=overlay]").click()
    wait_count(page, f"{detail} [data-testid=se-detail-pane]", 1)
    assert count(page, f"{detail} [data-testid=se-box][data-field=predictions]") > 0
    assert count(page, f"{detail} [data-testid=se-box][data-field=objects]") > 0
