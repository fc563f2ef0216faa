"""The confusion matrix in a real JupyterLab (headless Chromium): a click on a cell filters the linked
browser's grid to exactly the rows numpy finds; a click on a class name shows its figures. Light and dark
screenshots go to docs/_static/screenshots/ (docs/evaluation.md shows them)."""

from __future__ import annotations

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

CELLS = [
    """\
import numpy as np
from sklearn.datasets import load_digits
import stable_explore as se

bunch = load_digits()
names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "<i>nine</i>"]
rng = np.random.default_rng(5)
n = 400
true = bunch.target[:n]
pred = np.where(rng.random(n) < 0.85, true, rng.integers(0, 10, n))
features = se.Features(image=se.Image(), label=se.ClassLabel(names=names), pred=se.ClassLabel(names=names))
rows = [
    (f"digit-{i:04d}", {"image": np.kron((bunch.images[i] * 15).astype(np.uint8), np.ones((4, 4), np.uint8)),
                        "label": int(true[i]), "pred": int(pred[i])})
    for i in range(n)
]
ds = se.build(rows, features, name="digits", progress=False)
off = np.where(np.eye(10, dtype=bool), -1, se.evaluate(ds, predictions="pred").confusion_matrix)
t, p = (int(v) for v in np.unravel_index(np.argmax(off), off.shape))
print("CELL", t, p, "ROWS", np.flatnonzero((true == t) & (pred == p)).tolist())
browser = ds.browse(page_size=24)
browser""",
    """\
r = se.evaluate(ds, predictions="pred", ground_truth="label")
matrix = r.widget(browser=browser)
matrix""",
    "print('ACTIVE', matrix.active_cell, 'SHOWN', matrix.shown_rows, 'SUBSET', browser.subset)",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "matrix.ipynb", CELLS, viewport=(1400, 1700)) as page:
        yield page


def test_a_cell_click_filters_the_grid_to_the_rows_numpy_finds(page: Any) -> None:
    matrix = page.locator("[data-testid=se-cm]")
    matrix.wait_for(timeout=180_000)
    printed = page.evaluate(
        "() => document.querySelectorAll('.jp-Notebook .jp-Cell')[0].querySelector('.jp-OutputArea').innerText"
    )
    found = re.search(r"CELL (\d+) (\d+) ROWS \[([\d, ]*)\]", printed)
    assert found is not None, printed
    t, p = int(found[1]), int(found[2])
    rows = [int(v) for v in found[3].split(",")]
    assert 1 < len(rows) <= 24
    assert matrix.get_attribute("data-lm-suppress-shortcuts") == "true"
    assert page.locator("[data-testid=se-cm-cell]").count() == 100
    # class names reach the page as text, never as markup
    assert page.locator("[data-testid=se-cm] i").count() == 0
    assert "<i>nine</i>" in page.locator("[data-testid=se-cm-class][data-axis=true][data-index='9']").inner_text()

    cell = page.locator(f"[data-testid=se-cm-cell][data-true='{t}'][data-pred='{p}']")
    assert cell.inner_text() == str(len(rows))
    cell.click()
    page.wait_for_selector(f"[data-testid=se-cm][data-ready='cell-{t}-{p}']", timeout=60_000)
    wait_grid_rows(page, rows)  # the linked browser shows exactly these rows, in row order
    assert cell.get_attribute("aria-selected") == "true"
    subset = page.locator("[data-testid=se-subset-title]").inner_text()
    assert subset.startswith(f"showing {len(rows)} rows labelled ")
    out = run_cell(page, 2)
    assert f"ACTIVE [{t}, {p}] SHOWN {rows}" in out

    # the keyboard reaches the cells too: Enter on the diagonal cell of class t shows its rows
    diagonal = page.locator(f"[data-testid=se-cm-cell][data-true='{t}'][data-pred='{t}']")
    diagonal.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(f"[data-testid=se-cm][data-ready='cell-{t}-{t}']", timeout=60_000)
    count = int(diagonal.get_attribute("data-count") or 0)
    page.wait_for_function(
        "(n) => document.querySelector('[data-testid=se-subset-title]').textContent.startsWith(`showing ${n} rows`)",
        arg=count,
        timeout=60_000,
    )
    # the title comes a moment before the page: wait for the diagonal's rows in the grid, or the click back below
    # finds the mistakes still shown, its wait passes at once and the diagonal's page is drawn after it
    page.wait_for_function(
        """(rows) => {
            const thumbs = [...document.querySelectorAll('[data-testid=se-browser] [data-testid=se-thumb]')];
            return thumbs.length > 0 && thumbs.every(e => !rows.includes(Number(e.dataset.row)));
        }""",
        arg=rows,
        timeout=60_000,
    )
    cell.click()  # back to the mistakes, for the screenshot
    wait_grid_rows(page, rows)

    page.locator(f"[data-testid=se-cm-class][data-axis=true][data-index='{t}']").click()
    page.wait_for_selector(f"[data-testid=se-cm-figures][data-ready='class-{t}']", timeout=60_000)
    figures = page.locator("[data-testid=se-cm-figures]").inner_text()
    assert re.search(r"precision \d\.\d{3}", figures), figures
    assert re.search(r"recall \d\.\d{3}\s+f1 \d\.\d{3}\s+support \d+", figures), figures

    # the matrix beside the grid it filtered, for the docs
    browser = page.locator("[data-testid=se-browser]")
    page.locator(f"[data-testid=se-browser] [data-testid=se-thumb][data-row='{rows[-1]}'] img").wait_for()
    browser.evaluate("e => e.scrollIntoView({block: 'start'})")
    top, bottom = browser.bounding_box(), matrix.bounding_box()
    assert top is not None
    assert bottom is not None
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(SHOTS / "matrix-light.png"),
        clip={
            "x": min(top["x"], bottom["x"]),
            "y": top["y"],
            "width": max(top["width"], bottom["width"]),
            "height": bottom["y"] + bottom["height"] - top["y"],
        },
    )


def test_the_matrix_follows_the_dark_theme(page: Any) -> None:
    matrix = page.locator("[data-testid=se-cm]")
    matrix.wait_for(timeout=180_000)
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    colour = page.eval_on_selector("[data-testid=se-cm-title]", "e => getComputedStyle(e).color")
    channels = [int(v) for v in re.findall(r"\d+", colour)[:3]]
    assert min(channels) > 150, f"the title stays dark on a dark page: {colour}"
    matrix.screenshot(path=str(SHOTS / "matrix-dark.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'", timeout=30_000)
