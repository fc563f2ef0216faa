"""The patches browser in a real JupyterLab: 300 generated images with about 2,000 boxes, three blue cars planted
as "person". The user filters to person, sees the crop tiles, relabels two of the planted ones as car, deletes
the third and saves; the kernel reads the saved version's boxes back. Screenshots, light and dark, go to
docs/_static/screenshots/ (docs/labels.md shows them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab, run_cell, wait_grid_rows

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"

# boxes of solid colours by their true class (person red, car blue, dog yellow) on a grey gradient; the first
# box of images 0, 1 and 2 is a blue car stored as "person", their other boxes dogs: the first three persons
BUILD = """\
import json
import numpy as np
import stable_explore as se

names = ["person", "car", "dog"]
paint = {"person": (210, 60, 50), "car": (50, 90, 210), "dog": (235, 190, 40)}
rows = []
for i in range(300):
    pixels = (np.linspace(60, 150, 120)[:, None, None] * np.ones((120, 160, 3))).astype(np.uint8)
    objects = []
    for b in range(4 + i % 6):
        truth = names[(i + b) % 3] if i > 2 else ("car" if b == 0 else "dog")
        w, h = (14, 30) if truth == "person" else (30, 18) if truth == "car" else (22, 20)
        x, y = 4 + (b % 5) * 31, 6 + (b // 5) * 56 + (i % 4) * 5
        pixels[y : y + h, x : x + w] = paint[truth]
        objects.append({"bbox": [x, y, w, h], "category": "person" if i <= 2 and b == 0 else truth})
    rows.append({"image": pixels, "objects": objects})
ds = se.build(rows, se.Features(image=se.Image(), objects=se.Boxes(names=names)), name="scenes", progress=False)
patches = ds.patches("objects")
persons = patches.table.column("category").to_numpy(zero_copy_only=False) == "person"
print("PATCHES", len(patches), "PERSONS", json.dumps(np.flatnonzero(persons)[:48].tolist()))
browser = patches.browse(page_size=48, thumb_size=128)
browser"""

READ_BACK = """\
saved = se.load("scenes")
after, before = saved.arrow_column("objects").to_pylist(), ds.arrow_column("objects").to_pylist()
changed = [r for r in range(len(ds)) if after[r] != before[r]]
print("CHANGED", changed, "FIRST", [names[after[r][0]["category"]] for r in changed],
      "COUNTS", [len(after[r]) - len(before[r]) for r in changed], "NEW", saved.version != ds.version,
      "DRAFT", browser.draft)"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("lab")
    with lab_server.notebook(root, "patches.ipynb", [BUILD, READ_BACK], viewport=(1280, 1100)) as page:
        yield page


def test_filter_relabel_delete_and_save_boxes_from_crop_tiles(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]")
    widget.wait_for(timeout=180_000)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    output = page.evaluate(
        "() => document.querySelectorAll('.jp-Notebook .jp-Cell')[0].querySelector('.jp-OutputArea').innerText"
    )
    found = re.search(r"PATCHES (\d+) PERSONS (\[[\d, ]+\])", output)
    assert found, output
    total, persons = int(found.group(1)), json.loads(found.group(2))
    assert 1_900 <= total <= 2_100
    assert persons[:3] == [0, 4, 9]  # the planted three: the first box of images 0, 1 and 2
    assert "boxes on 300 images" in page.locator(".se-title, [data-testid=se-title]").first.inner_text()

    # the class chip "person": only person boxes, a page of 48 crop tiles, each labelled person
    page.click("[data-testid=se-filter-label] [data-class='0']")
    wait_grid_rows(page, persons)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    tiles = page.locator("[data-testid=se-thumb]")
    assert tiles.count() == 48
    assert page.locator("[data-testid=se-thumb] img.se-img").count() == 48
    labels = page.eval_on_selector_all(
        "[data-testid=se-thumb] figcaption .se-label:not(.se-pending-label)", "els => els.map(e => e.textContent)"
    )
    assert set(labels) == {"person"}
    # a crop is the box's pixels: a person tile is red, a planted one blue
    colours = page.evaluate(
        """(rows) => rows.map(row => {
            const img = document.querySelector(`[data-testid=se-thumb][data-row='${row}'] img`);
            const canvas = document.createElement('canvas');
            canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
            const context = canvas.getContext('2d');
            context.drawImage(img, 0, 0);
            const [r, g, b] = context.getImageData(canvas.width >> 1, canvas.height >> 1, 1, 1).data;
            return r > b ? 'red' : 'blue';
        })""",
        [persons[0], persons[1], persons[2], persons[3]],
    )
    assert colours == ["blue", "blue", "blue", "red"]

    # relabel the first two as car, flag the third and delete it
    page.click(f"[data-testid=se-thumb][data-row='{persons[0]}']")
    page.click(f"[data-testid=se-thumb][data-row='{persons[1]}']", modifiers=["Control"])
    page.wait_for_function("() => document.querySelectorAll('.se-cell.se-selected').length === 2", timeout=30_000)
    page.select_option("[data-testid=se-relabel-class]", label="car")
    page.click("[data-testid=se-relabel]")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=se-pending-label]:not([hidden])').length === 2",
        timeout=30_000,
    )
    page.click(f"[data-testid=se-thumb][data-row='{persons[2]}']")
    widget.press("x")
    page.click("[data-testid=se-drop-flagged]")
    page.wait_for_function("() => document.querySelectorAll('.se-cell.se-dropped').length === 1", timeout=30_000)
    # the kernel sends the dropped tiles before the pending line: wait for the line the drop makes too
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-pending]').textContent.includes('3 row(s)')", timeout=30_000
    )
    pending = page.locator("[data-testid=se-pending]").inner_text()
    assert pending == "pending: edit the boxes of 3 row(s)"
    pending_label = page.locator(f"[data-testid=se-thumb][data-row='{persons[0]}'] [data-testid=se-pending-label]")
    assert pending_label.inner_text() == "→ car"
    page.click("[data-testid=se-clear]")

    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "patches-browser-light.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
    page.wait_for_timeout(500)
    widget.screenshot(path=str(SHOTS / "patches-browser-dark.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=60_000)

    # save: the new version's boxes changed exactly there; the browser shows its persons, three fewer
    page.fill("[data-testid=se-message]", "two cars were persons, one box was nothing")
    page.click("[data-testid=se-save]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-status]').textContent.includes('saved scenes@')", timeout=60_000
    )
    output = run_cell(page, 1)
    assert "CHANGED [0, 1, 2] FIRST ['car', 'car', 'dog'] COUNTS [0, 0, -1] NEW True DRAFT None" in output

    # a double-click opens the box's detail: its crop, enlarged
    page.dblclick("[data-testid=se-grid] [data-testid=se-thumb] >> nth=0")
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=se-detail-img]') || {}).naturalWidth > 0",
        timeout=30_000,
    )
    assert "crop of image row" in page.locator("[data-testid=se-detail-info]").inner_text()
