"""Boxes over the thumbnails in a real JupyterLab: a COCO set with predictions, imported with se.from_coco and browsed.

The first cell draws its ground-truth and predicted boxes; switching the predictions off hides them, and the
score threshold hides the low-score ones. Screenshots go to docs/_static/screenshots/ (docs/labels.md shows them).
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

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"

# 12 images of three shapes (wide, tall, square: the boxes must follow the letterboxing), each with coloured
# objects, their boxes, and predictions: on image 1 two confident ones and one at 0.2
NOTEBOOK = """\
import json, pathlib, tempfile
import numpy as np
from PIL import Image, ImageDraw
import stable_explore as se

folder = pathlib.Path(tempfile.mkdtemp())
(folder / "images").mkdir()
categories = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 7, "name": "dog"}]
paint = {1: (220, 70, 60), 3: (60, 120, 220), 7: (240, 190, 40)}
rng = np.random.default_rng(7)
images, annotations, predictions = [], [], []
for image_id in range(1, 13):
    width, height = [(320, 200), (180, 280), (256, 256)][image_id % 3]
    y = np.linspace(0, 1, height)[:, None, None]
    picture = Image.fromarray((np.array([70, 110, 90]) + 80 * y * np.ones((height, width, 3))).astype(np.uint8))
    draw = ImageDraw.Draw(picture)
    objects = [(1, [0.08, 0.1, 0.3, 0.6]), (3, [0.5, 0.55, 0.42, 0.3]), (7, [0.45, 0.08, 0.25, 0.3])]
    for category, (fx, fy, fw, fh) in objects[: 1 + image_id % 3] if image_id > 1 else objects:
        x, y0, w, h = fx * width, fy * height, fw * width, fh * height
        draw.ellipse([x + 3, y0 + 3, x + w - 3, y0 + h - 3], fill=paint[category])
        annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": category,
                            "bbox": [round(x, 1), round(y0, 1), round(w, 1), round(h, 1)], "iscrowd": 0, "area": w * h})
        score = 0.2 if (image_id, category) == (1, 7) else float(rng.uniform(0.6, 0.99))
        moved = [round(x + 0.04 * width, 1), round(y0 + 0.02 * height, 1), round(w, 1), round(h, 1)]
        predictions.append({"image_id": image_id, "category_id": category, "score": score, "bbox": moved})
    picture.save(folder / "images" / f"{image_id}.jpg", quality=92)
    images.append({"id": image_id, "file_name": f"{image_id}.jpg", "width": width, "height": height})
document = {"images": images, "annotations": annotations, "categories": categories}
(folder / "instances.json").write_text(json.dumps(document))
(folder / "results.json").write_text(json.dumps(predictions))
ds = se.from_coco(folder / "instances.json", folder / "images", predictions=folder / "results.json",
                  name="shapes", progress=False)
browser = ds.browse(page_size=24, thumb_size=128)
browser"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "boxes.ipynb", [NOTEBOOK], viewport=(1280, 1100)) as page:
        yield page


def boxes_on(page: Any, selector: str, field: str | None = None) -> int:
    where = f"{selector} [data-testid=se-box]" + (f"[data-field={field}]" if field else "")
    return int(page.eval_on_selector_all(where, "els => els.length"))


def wait_count(page: Any, selector: str, count: int) -> None:
    page.wait_for_function(f"() => document.querySelectorAll({selector!r}).length === {count}", timeout=30_000)


def test_boxes_are_drawn_toggled_and_thresholded(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]")
    widget.wait_for(timeout=120_000)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    first = "[data-testid=se-thumb][data-row='0']"

    # image 1: three ground-truth boxes (solid) and three predictions (dashed), one of them at score 0.2
    assert boxes_on(page, first, "objects") == 3
    assert boxes_on(page, first, "predictions") == 3
    dashed = page.eval_on_selector_all(
        f"{first} [data-testid=se-box]", "els => els.map(e => getComputedStyle(e).strokeDasharray)"
    )
    assert sum(d not in ("none", "") for d in dashed) == 3
    # every cell of the page has its boxes, and each box sits inside the thumbnail's drawn image
    assert boxes_on(page, "[data-testid=se-grid]") == 2 * (3 + sum(1 + i % 3 for i in range(2, 13)))
    inside = page.eval_on_selector_all(
        "[data-testid=se-thumb] .se-frame",
        """frames => frames.every(frame => {
            const img = frame.querySelector('img').getBoundingClientRect();
            return [...frame.querySelectorAll('[data-testid=se-box]')].every(box => {
                const r = box.getBoundingClientRect();
                return r.left >= img.left - 2 && r.right <= img.right + 2
                    && r.top >= img.top - 2 && r.bottom <= img.bottom + 2;
            });
        })""",
    )
    assert inside
    # a wide image's boxes stay within its letterboxed band: the person box (y 10%..70%) of a 320 x 200 image
    # in a 128 px square starts 24 px below the frame's top (bars of 24 px) plus 10% of 80 px
    wide = "[data-testid=se-thumb][data-row='2']"
    offset = page.eval_on_selector(
        wide,
        """cell => {
            const frame = cell.querySelector('.se-frame').getBoundingClientRect();
            const person = '[data-testid=se-box][data-field=objects][data-class="0"]';
            const box = cell.querySelector(person).getBoundingClientRect();
            return [box.top - frame.top, box.height, frame.height];
        }""",
    )
    assert offset[2] == pytest.approx(128, abs=1)
    assert offset[0] == pytest.approx(24 + 0.1 * 80, abs=1.5)
    assert offset[1] == pytest.approx(0.6 * 80, abs=1.5)
    legend = page.locator("[data-testid=se-legend-item]").all_inner_texts()
    assert legend == ["person", "car", "dog"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-boxes-light.png"))

    # predictions off: only the ground truth is drawn; on again: back
    toggle = page.locator("[data-testid=se-overlay-toggle][data-field=predictions]")
    toggle.click()
    wait_count(page, f"{first} [data-testid=se-box]", 3)
    assert boxes_on(page, "[data-testid=se-grid]", "predictions") == 0
    assert toggle.get_attribute("aria-pressed") == "false"
    toggle.click()
    wait_count(page, f"{first} [data-testid=se-box]", 6)

    # the threshold hides the prediction scored 0.2, never a ground-truth box
    page.locator("[data-testid=se-score-threshold]").fill("0.5")
    wait_count(page, f"{first} [data-testid=se-box]", 5)
    assert boxes_on(page, first, "objects") == 3
    assert page.locator("[data-testid=se-score-threshold-text]").inner_text() == "score ≥ 0.50"

    # the detail pane draws the same boxes over the larger image
    page.dblclick(first)
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-detail]').dataset.row === '0'", timeout=30_000
    )
    wait_count(page, "[data-testid=se-detail] [data-testid=se-box]", 5)
    page.locator("[data-testid=se-detail-img]").evaluate("img => img.decode()")
    widget.screenshot(path=str(SHOTS / "browser-boxes-detail-light.png"))

    # the dark theme: the same boxes, screenshot for the docs
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=60_000)
    page.wait_for_timeout(500)
    widget.screenshot(path=str(SHOTS / "browser-boxes-dark.png"))


def test_the_filter_bar_keeps_images_with_a_small_box_of_a_class(page: Any) -> None:
    # "images with a dog smaller than 4000 px²": only image 1's dog (45 x 84) is; the others are 64 x 76.8
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    page.select_option("[data-testid=se-field]", "objects")
    assert page.locator("[data-testid=se-box-class]").is_visible()
    page.select_option("[data-testid=se-box-class]", "2")
    page.fill("[data-testid=se-field-max]", "4000")
    page.click("[data-testid=se-field-apply]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-field-filters]').textContent.includes('objects: a box of dog')",
        timeout=30_000,
    )
    wait_count(page, "[data-testid=se-thumb]", 1)
    assert page.eval_on_selector_all("[data-testid=se-thumb]", "els => els.map(e => e.dataset.row)") == ["0"]
    chip = page.locator("[data-testid=se-field-filters] .se-field-chip").inner_text()
    assert "objects: a box of dog, area ≤ 4000" in chip
    page.locator("[data-testid=se-field-filters] .se-x").click()  # removed: every image again
    wait_count(page, "[data-testid=se-thumb]", 12)
