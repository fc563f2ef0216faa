"""Masks over the thumbnails in a real JupyterLab: a segmentation set, its masks painted in class colours, toggled.

The screenshot goes to docs/_static/screenshots/ (docs/labels.md shows it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab
from tests.widgets.test_browser_boxes_lab import SHOTS, boxes_on, wait_count

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")


MASK_NOTEBOOK = """\
import numpy as np
from PIL import Image, ImageDraw
import stable_explore as se

def rows():
    for i in range(6):
        width, height = [(240, 160), (160, 220)][i % 2]
        labels = np.zeros((height, width), np.uint8)
        labels[height // 2 :, : width // 2] = 1  # a cat in the lower left quarter
        labels[10 : 10 + height // 3, width - width // 3 - 10 : width - 10] = 2  # a dog in the upper right
        picture = np.stack([labels * 60 + 60, 120 - labels * 20, 160 - labels * 30], axis=-1).astype(np.uint8)
        yield {"image": picture, "seg": labels,
               "objects": [{"bbox": [0, height // 2, width // 2, height - height // 2], "category": "cat"}],
               "pose": [[[width * 0.1, height * 0.6, 2], [width * 0.3, height * 0.8, 2], [0, 0, 0]]]}

features = se.Features(image=se.Image(), seg=se.Mask(names=["background", "cat", "dog"]),
                       objects=se.Boxes(names=["background", "cat", "dog"]),
                       pose=se.Keypoints(names=["ear", "paw", "tail"], skeleton=[(0, 1), (1, 2)]))
seg = se.build(rows, features, name="seg", progress=False)
browser = seg.browse(page_size=24, thumb_size=128)
browser"""


@pytest.fixture(scope="module")
def mask_page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    with lab_server.notebook(
        tmp_path_factory.mktemp("lab"), "masks.ipynb", [MASK_NOTEBOOK], viewport=(1280, 900)
    ) as page:
        yield page


def test_masks_are_painted_in_class_colours_and_toggled(mask_page: Any) -> None:
    page = mask_page
    widget = page.locator("[data-testid=se-browser]")
    widget.wait_for(timeout=120_000)
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=60_000)
    wait_count(page, "[data-testid=se-mask][data-painted=true]", 6)
    # the first mask's pixels: cat (lower left) in class 1's colour, half transparent; background clear
    pixels = page.eval_on_selector(
        "[data-testid=se-thumb][data-row='0'] [data-testid=se-mask]",
        """canvas => {
            const context = canvas.getContext('2d');
            const at = (x, y) => [...context.getImageData(x, y, 1, 1).data];
            return {cat: at(5, canvas.height - 5), background: at(5, 5), dog: at(canvas.width - 20, 12),
                    size: [canvas.width, canvas.height]};
        }""",
    )
    assert pixels["size"] == [128, 85]
    assert pixels["background"][3] == 0
    assert pixels["cat"][3] == 120
    assert pixels["dog"][3] == 120
    assert pixels["cat"][:3] != pixels["dog"][:3]
    assert page.locator("[data-testid=se-legend-item]").all_inner_texts() == ["cat", "dog"]
    assert boxes_on(page, "[data-testid=se-thumb][data-row='0']") == 1
    # keypoints: the two labelled points and the one line between them (the tail is not labelled)
    first = "[data-testid=se-thumb][data-row='0']"
    assert page.eval_on_selector_all(f"{first} [data-testid=se-keypoint]", "els => els.length") == 2
    assert page.eval_on_selector_all(f"{first} [data-testid=se-keypoint-line]", "els => els.length") == 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-masks-light.png"))
    # the mask switched off: no canvas shows, the boxes stay
    page.locator("[data-testid=se-overlay-toggle][data-field=seg]").click()
    wait_count(page, "[data-testid=se-mask]:not([hidden])", 0)
    assert boxes_on(page, "[data-testid=se-thumb][data-row='0']") == 1
    assert page.locator("[data-testid=se-legend-item]").all_inner_texts() == ["cat"]
