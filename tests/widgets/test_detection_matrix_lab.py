"""A detector's matrix in a real JupyterLab (headless Chromium): a click on a background cell filters the linked
browser's grid to exactly the images numpy finds, and a click on a class in the AP table draws its
precision-recall curve as SVG, the points of ``r.precision_recall``. A screenshot goes to
docs/_static/screenshots/detection-matrix-light.png (docs/evaluation.md shows it)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab, run_cell, screenshot_dark, wait_grid_rows

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"

CELLS = [
    """\
import numpy as np
import stable_explore as se
from stable_explore.testing.coco_scenes import coco_scene, scene_rows

names = ["cat", "dog", "<i>fox</i>", "owl"]
truths, found, _, _ = coco_scene(images=60, seed=2, boxes_per_image=(1, 4))
features = se.Features(image=se.Image(), objects=se.Boxes(names=names), predictions=se.Boxes(names=names))
rows = [
    (f"img-{i:03d}", {"image": np.full((48, 64, 3), (i * 37) % 255, np.uint8), **row})
    for i, row in enumerate(scene_rows(truths, {"predictions": found}, names))
]
ds = se.build(rows, features, name="scenes", progress=False)
r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
m = r.confusion_matrix
k = len(names)
# the background row: false positives on nothing. numpy's images with such a box of class p: a false
# positive of class p that overlaps (IoU >= 0.5) no missed ground-truth box of another class
p = int(np.argmax(m[k, :k]))
boxes = r.boxes()
def on_nothing(i, d):
    det, truth = found[i], truths[i]
    missed = boxes[(boxes.row == i) & (boxes.side == "truth") & (boxes.outcome == "fn")].box.to_numpy()
    a, b = det.boxes[d], truth.boxes[missed]
    w = np.minimum(a[0] + a[2], b[:, 0] + b[:, 2]) - np.maximum(a[0], b[:, 0])
    h = np.minimum(a[1] + a[3], b[:, 1] + b[:, 3]) - np.maximum(a[1], b[:, 1])
    inter = np.clip(w, 0, None) * np.clip(h, 0, None)
    iou = inter / (a[2] * a[3] + b[:, 2] * b[:, 3] - inter)
    return not ((iou >= 0.5) & (truth.classes[missed] != det.classes[d])).any()
fp = boxes[(boxes.side == "prediction") & (boxes.outcome == "fp") & (boxes["class"] == names[p])]
false = sorted({int(i) for i, d in zip(fp.row, fp.box) if on_nothing(i, d)})
print("CELL", k, p, "ROWS", false)
print("CURVE", 0, " ".join(f"{v:.6f}" for v in r.precision_recall(0)["precision"]))
browser = ds.browse(page_size=96)
browser""",
    """\
matrix = r.widget(browser=browser)
matrix""",
    "print('ACTIVE', matrix.active_cell, 'SHOWN', matrix.shown_rows, 'SUBSET', browser.subset)",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "boxes.ipynb", CELLS, viewport=(1400, 1700)) as page:
        yield page


def test_a_background_cell_filters_the_grid_and_a_class_draws_its_curve(page: Any) -> None:
    matrix = page.locator("[data-testid=se-cm]")
    matrix.wait_for(timeout=180_000)
    printed = page.evaluate(
        "() => document.querySelectorAll('.jp-Notebook .jp-Cell')[0].querySelector('.jp-OutputArea').innerText"
    )
    found = re.search(r"CELL (\d+) (\d+) ROWS \[([\d, ]*)\]", printed)
    assert found is not None, printed
    t, p = int(found[1]), int(found[2])
    rows = [int(v) for v in found[3].split(",")]
    assert rows
    precision = [float(v) for v in re.search(r"CURVE 0 ([\d. ]+)", printed)[1].split()]  # type: ignore[index]

    assert page.locator("[data-testid=se-cm-cell]").count() == 25  # four classes and the background
    assert page.locator("[data-testid=se-cm-background]").count() == 2
    assert page.locator("[data-testid=se-cm] i").count() == 0  # class names are text, never markup
    assert page.locator("[data-testid=se-cm-ap-row]").count() == 4

    cell = page.locator(f"[data-testid=se-cm-cell][data-true='{t}'][data-pred='{p}']")
    cell.click()
    page.wait_for_selector(f"[data-testid=se-cm][data-ready='cell-{t}-{p}']", timeout=60_000)
    wait_grid_rows(page, rows)  # exactly the images with a false positive of that class on nothing
    subset = page.locator("[data-testid=se-subset-title]").inner_text()
    assert re.match(rf"showing {len(rows)} images? with a false ", subset), subset
    out = run_cell(page, 2)
    assert f"ACTIVE [{t}, {p}] SHOWN {rows}" in out

    page.locator("[data-testid=se-cm-ap-class][data-index='0']").click()
    page.wait_for_selector("[data-testid=se-cm-curve][data-ready='curve-0']", timeout=60_000)
    figures = page.locator("[data-testid=se-cm-figures]").inner_text()
    assert re.search(r"AP \d\.\d{3}\s+AP50 \d\.\d{3}\s+AP75 \d\.\d{3}\s+tp \d+\s+fp \d+\s+fn \d+", figures), figures
    d = page.locator("[data-testid=se-cm-curve-path]").get_attribute("d") or ""
    # the path's heights are the class's precision at COCO's 101 recall points, in a 160-pixel-high plot
    heights = [float(v) for v in re.findall(r"V([\d.]+)", d)]
    start = re.match(r"M([\d.]+) ([\d.]+)", d)
    assert start is not None, d
    drawn = [1 - float(start[2]) / 160] + [1 - y / 160 for y in heights]
    assert len(drawn) == 101
    assert drawn == pytest.approx(precision, abs=0.01)

    # the second class, then back to the first, and the whole widget beside the grid for the docs
    page.locator("[data-testid=se-cm-ap-class][data-index='1']").click()
    page.wait_for_selector("[data-testid=se-cm-curve][data-ready='curve-1']", timeout=60_000)
    page.locator("[data-testid=se-cm-ap-class][data-index='0']").click()
    page.wait_for_selector("[data-testid=se-cm-curve][data-ready='curve-0']", timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    matrix.evaluate("e => e.scrollIntoView({block: 'start'})")
    matrix.screenshot(path=str(SHOTS / "detection-matrix-light.png"))
    screenshot_dark(page, matrix, SHOTS / "detection-matrix-dark.png")
