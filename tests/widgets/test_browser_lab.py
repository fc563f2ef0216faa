"""The shard browser in a real JupyterLab, driven by Playwright in headless Chromium.

A notebook caches scikit-learn's digits and browses them; the test checks
the thumbnails and label names shown, pages, filters, opens the detail view,
selects three cells and proves the kernel sees them, and saves a screenshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab import CHROMIUM, SharedLab, run_cell

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

NOTEBOOK_CELLS = [
    """\
import numpy as np
from sklearn.datasets import load_digits
import stable_explore as se

features = se.Features(image=se.Image(), label=se.ClassLabel(names={names!r}), note=se.Value("string"))

def digits():
    bunch = load_digits()
    for i, (pixels, target) in enumerate(zip(bunch.images, bunch.target)):
        big = np.kron((pixels * 15).astype(np.uint8), np.ones((4, 4), dtype=np.uint8))
        yield f"digit-{{i:04d}}", {{"image": big, "label": int(target), "note": f"digit number {{i}}"}}

ds = se.build(digits, features, shard_size="64KB", progress=False)
ds""",
    "browser = ds.browse(page_size=24)\nbrowser",
    "print('SELECTED', sorted(browser.selected), 'FLAGGED', sorted(browser.flagged))",
    "latest = se.load('digits')\n"
    "print('SAVED', len(latest), latest.metadata['message'], latest.metadata['operations'])",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    cells = [NOTEBOOK_CELLS[0].format(names=DIGIT_NAMES), *NOTEBOOK_CELLS[1:]]
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "browse.ipynb", cells) as page:
        yield page


def expected_labels(rows: list[int]) -> list[str]:
    from sklearn.datasets import load_digits

    targets = load_digits().target
    return [DIGIT_NAMES[int(targets[r])] for r in rows]


def visible_rows(page: Any) -> list[int]:
    return [int(r) for r in page.eval_on_selector_all("[data-testid=se-thumb]", "els => els.map(e => e.dataset.row)")]


def wait_ready(page: Any, page_number: int) -> None:
    page.wait_for_selector(f"[data-testid=se-grid][data-ready='page-{page_number}']", timeout=60_000)


def test_browser_pages_filters_details_and_selection(page: Any) -> None:
    widget = page.locator("[data-testid=se-browser]")
    widget.wait_for(timeout=120_000)
    wait_ready(page, 0)

    # thumbnails with label names, first page
    assert visible_rows(page) == list(range(24))
    labels = page.locator("[data-testid=se-label]").all_inner_texts()
    assert labels == expected_labels(list(range(24)))
    loaded = page.eval_on_selector_all(
        "[data-testid=se-thumb] img", "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length"
    )
    assert loaded == 24
    assert page.locator("[data-testid=se-page]").inner_text() == "page 1 of 75"
    assert widget.get_attribute("data-lm-suppress-shortcuts") == "true"

    # next page
    page.click("[data-testid=se-next]")
    wait_ready(page, 1)
    assert visible_rows(page) == list(range(24, 48))
    assert page.locator("[data-testid=se-page]").inner_text() == "page 2 of 75"

    # filter by one label: every cell shows it
    page.click("[data-testid=se-filter-label] [data-class='7']")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-page]').textContent === 'page 1 of 8'", timeout=30_000
    )
    wait_ready(page, 0)
    labels = page.locator("[data-testid=se-label]").all_inner_texts()
    assert len(labels) == 24
    assert set(labels) == {"seven"}
    rows = visible_rows(page)
    assert expected_labels(rows) == ["seven"] * 24

    # detail view of a row (a double-click; a click only selects)
    page.dblclick(f"[data-testid=se-thumb][data-row='{rows[0]}']")
    detail = page.locator("[data-testid=se-detail]")
    detail.wait_for(state="visible", timeout=30_000)
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=se-detail]').dataset.row === '{rows[0]}'", timeout=30_000
    )
    text = detail.inner_text()
    assert f"key digit-{rows[0]:04d}" in text
    assert f"digit number {rows[0]}" in text
    assert detail.locator("img").evaluate("img => img.decode().then(() => img.naturalWidth)") == 32
    page.keyboard.press("ArrowRight")  # steps to the next row of the filter
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=se-detail]').dataset.row === '{rows[1]}'", timeout=30_000
    )
    page.keyboard.press("Escape")
    detail.wait_for(state="hidden", timeout=10_000)

    # select three cells, flag them with x (inside the widget only), and the kernel sees them
    cells_before = page.locator(".jp-Notebook .jp-Cell").count()
    page.click(f"[data-testid=se-thumb][data-row='{rows[1]}']")
    page.click(f"[data-testid=se-thumb][data-row='{rows[2]}']", modifiers=["Control"])
    page.click(f"[data-testid=se-thumb][data-row='{rows[3]}']", modifiers=["Control"])
    page.wait_for_function("() => document.querySelectorAll('.se-cell.se-selected').length === 3", timeout=30_000)
    widget.press("x")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-status]').textContent.includes('3 flagged')", timeout=30_000
    )
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells_before  # JupyterLab did not cut a cell

    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=str(ARTIFACTS / "shard-browser.png"))

    output = run_cell(page, 2)
    chosen = sorted(rows[1:4])
    assert f"SELECTED {chosen} FLAGGED {chosen}" in output


def test_cleaning_in_the_browser_saves_a_version(page: Any) -> None:
    """Runs after the test above: the three flagged sevens are dropped, one row is relabelled, saved."""
    widget = page.locator("[data-testid=se-browser]")
    page.click("[data-testid=se-drop-flagged]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-pending]').textContent === 'pending: drop 3'", timeout=30_000
    )
    assert page.locator(".se-cell.se-dropped").count() == 3
    rows = visible_rows(page)
    target = rows[5]
    page.click(f"[data-testid=se-thumb][data-row='{target}']")
    page.select_option("[data-testid=se-relabel-class]", label="one")
    page.click("[data-testid=se-relabel]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-pending]').textContent === 'pending: drop 3, relabel 1'",
        timeout=30_000,
    )
    pending = page.locator(f"[data-testid=se-thumb][data-row='{target}'] [data-testid=se-pending-label]")
    assert pending.inner_text() == "→ one"
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=str(ARTIFACTS / "shard-browser-editing.png"))
    page.fill("[data-testid=se-message]", "drop 3 blurry sevens <b>, fix one")
    page.click("[data-testid=se-save]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-status]').textContent.includes('saved digits@')", timeout=60_000
    )
    # the new version is shown, still filtered to sevens: 179 - 3 dropped - 1 relabelled
    assert page.locator("[data-testid=se-status]").inner_text().startswith("175 rows")
    assert page.locator("[data-testid=se-page]").inner_text() == "page 1 of 8"
    output = run_cell(page, 3)
    assert "SAVED 1794 drop 3 blurry sevens <b>, fix one" in output
    assert "'op': 'drop'" in output
    assert "'seven', 'one'" in output
