"""The detail pane's "similar rows" in a real JupyterLab, driven by Playwright in headless Chromium.

A notebook caches scikit-learn's digits with their 64 pixel values as an ``embedding`` column and
browses them; the test filters by a label, opens a card's detail, clicks *similar rows* and finds the
row and its 8 nearest neighbours in the grid, in the order computed here from the same pixels; *back*
brings the filtered grid again. A second browser, of rows with no embedding and no image, shows the
button disabled with a tooltip that says what to add. The detail pane's screenshot goes to the docs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stable_explore.signals import nearest_rows
from tests.lab import CHROMIUM, SharedLab, wait_grid_rows

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"
DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

NOTEBOOK_CELLS = [
    """\
import numpy as np
from sklearn.datasets import load_digits
import stable_explore as se

bunch = load_digits()
features = se.Features(
    image=se.Image(),
    label=se.ClassLabel(names={names!r}),
    embedding=se.Sequence(se.Value("float64"), length=64),
)

def digits():
    for i, (pixels, target) in enumerate(zip(bunch.images, bunch.target)):
        big = np.kron((pixels * 15).astype(np.uint8), np.ones((4, 4), dtype=np.uint8))
        yield f"digit-{{i:04d}}", {{"image": big, "label": int(target), "embedding": bunch.data[i].tolist()}}

ds = se.build(digits, features, shard_size="256KB", progress=False)
browser = ds.browse(page_size=24)
browser""",
    """\
plain = se.build([{{"x": float(i)}} for i in range(30)], se.Features(x=se.Value("float64")), name="plain",
                 progress=False)
plain.browse(page_size=24)""",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    cells = [NOTEBOOK_CELLS[0].format(names=DIGIT_NAMES), NOTEBOOK_CELLS[1].format()]
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "similar.ipynb", cells) as page:
        yield page


def shown_rows(widget: Any) -> list[int]:
    return [int(r) for r in widget.locator("[data-testid=se-thumb]").evaluate_all("els => els.map(e => e.dataset.row)")]


def test_similar_rows_of_a_card_then_back(page: Any) -> None:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    widget = page.locator("[data-testid=se-browser]").first
    widget.wait_for(timeout=120_000)
    widget.locator("[data-testid=se-grid][data-ready='page-0']").wait_for(timeout=60_000)

    # a filtered grid to come back to
    widget.locator("[data-testid=se-filter-label] [data-class='3']").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-page]').textContent === 'page 1 of 8'", timeout=30_000
    )
    wait_grid_rows(page, [int(r) for r in (bunch.target == 3).nonzero()[0]], among=True)
    widget.locator("[data-testid=se-grid][data-ready='page-0']").wait_for(timeout=60_000)
    filtered = shown_rows(widget)
    assert all(int(bunch.target[r]) == 3 for r in filtered)
    row = filtered[4]

    widget.locator(f"[data-testid=se-thumb][data-row='{row}']").dblclick()
    detail = widget.locator("[data-testid=se-detail]")
    detail.wait_for(state="visible", timeout=30_000)
    button = detail.locator("[data-testid=se-similar]")
    button.wait_for(timeout=30_000)
    assert button.is_enabled()
    assert "by the embedding 'embedding'" in (button.get_attribute("title") or "")
    button.click()

    expected = [row, *nearest_rows(bunch.data, row, k=8).tolist()]
    wait_grid_rows(page, expected)
    assert shown_rows(widget) == expected  # the row first, then its neighbours, closest first
    subset = widget.locator("[data-testid=se-subset-title]").inner_text()
    assert subset == f"showing row {row} and the 8 rows most like it by the embedding 'embedding'"
    assert detail.get_attribute("data-row") == str(row)  # the pane stays on the row
    widget.locator("[data-testid=se-grid][data-ready='page-0']").wait_for(timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-similar-light.png"))

    widget.locator("[data-testid=se-back]").click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-page]').textContent === 'page 1 of 8'", timeout=30_000
    )
    widget.locator("[data-testid=se-back]").wait_for(state="hidden", timeout=30_000)
    assert widget.locator("[data-testid=se-subset]").is_hidden()
    wait_grid_rows(page, filtered)
    widget.locator("[data-testid=se-grid][data-ready='page-0']").wait_for(timeout=60_000)
    assert shown_rows(widget) == filtered


def test_without_an_embedding_or_an_image_the_button_says_what_to_add(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]").nth(1)
    widget.wait_for(timeout=120_000)
    widget.scroll_into_view_if_needed()
    widget.locator("[data-testid=se-thumb][data-row='2']").dblclick()
    button = widget.locator("[data-testid=se-detail] [data-testid=se-similar]")
    button.wait_for(timeout=30_000)
    assert button.is_disabled()
    why = widget.locator("[data-testid=se-similar-wrap]").get_attribute("title") or ""
    assert why.startswith("no similar rows: nothing to find similar rows by: no embedding column")
    assert "ds.add_columns({'embedding': vectors})" in why
