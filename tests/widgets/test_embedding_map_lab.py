"""The embedding map in a real JupyterLab, driven by Playwright in headless Chromium.

A notebook caches scikit-learn's digits, maps their 64 pixel values (PCA), and links a browser. The
test checks the canvas holds every label's colour, drags a box and a lasso with the mouse and compares
the rows the kernel received with the rows the same shapes hold in a projection computed here, hovers
an isolated point and sees its thumbnail, and finds the selection in the browser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

from stable_explore.signals import pca_2d, rows_in_box, rows_in_polygon
from tests.lab import CHROMIUM, SharedLab, run_cell_until

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

NOTEBOOK_CELLS = [
    """\
import json
import numpy as np
from sklearn.datasets import load_digits
import stable_explore as se
from stable_explore.widgets import EmbeddingMap

bunch = load_digits()
features = se.Features(image=se.Image(), label=se.ClassLabel(names={names!r}))

def digits():
    for i, (pixels, target) in enumerate(zip(bunch.images, bunch.target)):
        big = np.kron((pixels * 15).astype(np.uint8), np.ones((4, 4), dtype=np.uint8))
        yield f"digit-{{i:04d}}", {{"image": big, "label": int(target)}}

ds = se.build(digits, features, shard_size="64KB", progress=False)
browser = ds.browse(page_size=24)
print("BUILT", len(ds))""",
    "embedding_map = EmbeddingMap(ds, bunch.data, browser=browser)\nembedding_map",
    "browser",
    "print('MAP', json.dumps(embedding_map.selected), 'SHAPE', json.dumps(embedding_map.selection_shape))\n"
    "print('BROWSER', json.dumps(browser.selected), 'SHOWN', json.dumps(browser.page_rows().tolist()),"
    " 'SUBSET', hasattr(browser, 'show_rows'))",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    cells = [NOTEBOOK_CELLS[0].format(names=DIGIT_NAMES), *NOTEBOOK_CELLS[1:]]
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "map.ipynb", cells) as page:
        yield page


@pytest.fixture(scope="module")
def points() -> np.ndarray:
    """The projection, computed here from the same pixels (not read from the kernel)."""
    from sklearn.datasets import load_digits

    return pca_2d(load_digits().data.astype(np.float64))


def parse_state(output: str) -> dict[str, Any]:
    found = re.search(r"MAP (.*) SHAPE (.*)\nBROWSER (.*) SHOWN (.*) SUBSET (True|False)", output)
    assert found, output
    return {
        "selected": json.loads(found[1]),
        "shape": json.loads(found[2]),
        "browser": json.loads(found[3]),
        "shown": json.loads(found[4]),
        "subset": found[5] == "True",
    }


def kernel_state(page: Any, kind: str) -> dict[str, Any]:
    """The map's and the browser's state in the kernel, once it has applied the page's last selection.

    The page drew a ``kind`` (box, lasso) of as many rows as its count shows; the kernel applies it on a
    subshell of its own (see :func:`tests.lab.run_cell_until`): the shape first, then the rows, then the
    browser's grid and selection, so the state is read when all three are there."""
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=se-map-count]').dataset.shape === '{kind}'", timeout=30_000
    )
    count = int(page.get_attribute("[data-testid=se-map-count]", "data-count"))

    def applied(output: str) -> bool:
        state = parse_state(output)
        rows = state["selected"]
        return state["shape"].get("kind") == kind and len(rows) == count and state["browser"] == rows

    return parse_state(run_cell_until(page, 3, applied, f"the {kind} of {count} rows in the map and the browser"))


def screen(page: Any, points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Viewport pixels of these rows' points, from the view the page publishes on its canvas."""
    view = json.loads(page.get_attribute("[data-testid=se-map-canvas]", "data-view"))
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    xs = points[rows, 0].astype(float) * view["sx"] + view["ox"] + box["x"]
    ys = points[rows, 1].astype(float) * view["sy"] + view["oy"] + box["y"]
    return np.column_stack([xs, ys])


def test_the_map_paints_every_label_colour(page: Any) -> None:
    widget = page.locator("[data-testid=se-map]")
    widget.wait_for(timeout=120_000)
    widget.scroll_into_view_if_needed()
    page.wait_for_selector("[data-testid=se-map-canvas][data-ready='points-1797']", timeout=60_000)
    legend = page.locator("[data-testid=se-map-legend] .se-map-name").all_inner_texts()
    assert legend == DIGIT_NAMES
    colours = page.eval_on_selector_all(
        "[data-testid=se-map-legend] [data-rgb]", "items => items.map(i => i.dataset.rgb.split(',').map(Number))"
    )
    counts = page.evaluate(
        """(colours) => {
            const canvas = document.querySelector('[data-testid=se-map-canvas]');
            const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
            const keys = colours.map(c => c.join(','));
            const counts = new Array(colours.length).fill(0);
            let background = 0;
            const bg = [data[0], data[1], data[2]].join(',');
            for (let i = 0; i < data.length; i += 4) {
                const key = `${data[i]},${data[i + 1]},${data[i + 2]}`;
                const k = keys.indexOf(key);
                if (k >= 0) counts[k]++;
                else if (key === bg) background++;
            }
            return {counts, background, total: data.length / 4};
        }""",
        colours,
    )
    assert all(c > 0 for c in counts["counts"]), counts["counts"]  # every class is drawn in its colour
    assert sum(counts["counts"]) > 1797  # a few pixels per point
    assert counts["background"] > counts["total"] / 2
    ARTIFACTS.mkdir(exist_ok=True)
    widget.screenshot(path=str(ARTIFACTS / "embedding-map.png"))


def test_a_box_drawn_with_the_mouse_selects_the_rows_python_finds(page: Any, points: np.ndarray) -> None:
    page.wait_for_selector("[data-testid=se-map-canvas][data-ready='points-1797']", timeout=60_000)
    page.click("[data-testid=se-map-mode-box]")
    from sklearn.datasets import load_digits

    zeros = np.flatnonzero(load_digits().target == 0)
    centre = screen(page, points, zeros).mean(axis=0)
    page.mouse.move(centre[0] - 40, centre[1] - 30)
    page.mouse.down()
    page.mouse.move(centre[0] + 10, centre[1] + 5, steps=8)
    page.mouse.move(centre[0] + 40, centre[1] + 30, steps=8)
    page.mouse.up()
    state = kernel_state(page, "box")
    shape = state["shape"]
    assert shape["kind"] == "box"
    expected = rows_in_box(points, shape["x0"], shape["y0"], shape["x1"], shape["y1"]).tolist()
    assert state["selected"] == expected
    assert len(expected) > 20
    assert np.isin(expected, zeros).mean() > 0.8  # the box is around the zeros' cluster
    shown_count = int(page.get_attribute("[data-testid=se-map-count]", "data-count"))
    assert shown_count == len(expected)
    # the selection reached the browser: its selection, and (where it can) its grid
    assert state["browser"] == expected
    if state["subset"]:
        assert state["shown"] == expected[:24]
        page.wait_for_function(
            f"() => document.querySelector('[data-testid=se-grid] [data-testid=se-thumb]')?.dataset.row === "
            f"'{expected[0]}'",
            timeout=30_000,
        )
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("[data-testid=se-map]").screenshot(path=str(ARTIFACTS / "embedding-map-box.png"))


def test_a_lasso_drawn_with_the_mouse_selects_the_rows_python_finds(page: Any, points: np.ndarray) -> None:
    page.click("[data-testid=se-map-mode-lasso]")
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    angles = np.linspace(0, 2 * np.pi, 30, endpoint=False)
    radius = 90 + 40 * np.sin(3 * angles)  # concave, like a hand-drawn lasso
    page.mouse.move(cx + radius[0], cy)
    page.mouse.down()
    for angle, r in zip(angles[1:], radius[1:], strict=True):
        page.mouse.move(cx + r * np.cos(angle), cy + r * np.sin(angle), steps=2)
    page.mouse.up()
    state = kernel_state(page, "lasso")
    assert state["shape"]["kind"] == "lasso"
    expected = rows_in_polygon(points, state["shape"]["points"]).tolist()
    assert state["selected"] == expected
    assert len(expected) > 50
    assert int(page.get_attribute("[data-testid=se-map-count]", "data-count")) == len(expected)
    assert state["browser"] == expected


def test_hover_shows_the_rows_thumbnail(page: Any, points: np.ndarray) -> None:
    page.click("[data-testid=se-map-mode-pan]")
    page.click("[data-testid=se-map-reset]")
    # the most isolated point, so the cursor finds it and no other
    view = json.loads(page.get_attribute("[data-testid=se-map-canvas]", "data-view"))
    pixels = points.astype(float) * [view["sx"], view["sy"]]
    gaps = np.sqrt(((pixels[:, None, :] - pixels[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(gaps, np.inf)
    row = int(np.argmax(gaps.min(axis=1)))
    assert gaps[row].min() > 8
    x, y = screen(page, points, np.array([row]))[0]
    page.mouse.move(x + 20, y + 20)
    page.mouse.move(x, y, steps=4)
    tooltip = page.locator("[data-testid=se-map-tooltip]")
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=se-map-tooltip]').dataset.row === '{row}'", timeout=30_000
    )
    tooltip.wait_for(state="visible", timeout=10_000)
    assert tooltip.locator("img").evaluate("img => img.decode().then(() => img.naturalWidth)") > 0
    assert f"row {row} · digit-{row:04d}" in tooltip.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("[data-testid=se-map]").screenshot(path=str(ARTIFACTS / "embedding-map-hover.png"))


def test_the_wheel_zooms_about_the_cursor_and_a_drag_pans(page: Any) -> None:
    page.click("[data-testid=se-map-mode-pan]")
    page.click("[data-testid=se-map-reset]")
    canvas = "[data-testid=se-map-canvas]"
    page.wait_for_timeout(200)  # the reset's frame is drawn
    before_text = page.get_attribute(canvas, "data-view")
    before = json.loads(before_text)
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    x, y = box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.6
    page.mouse.move(x, y)
    page.mouse.wheel(0, -300)
    page.wait_for_function(
        f"(before) => document.querySelector('{canvas}').dataset.view !== before",
        arg=before_text,
        timeout=10_000,
    )
    zoomed = json.loads(page.get_attribute(canvas, "data-view"))
    assert zoomed["sx"] > before["sx"] * 1.2
    # the data point under the cursor stays under it (within a pixel: the page sees whole-pixel positions)
    local_x, local_y = x - box["x"], y - box["y"]
    for axis, offset, cursor in (("sx", "ox", local_x), ("sy", "oy", local_y)):
        under = (cursor - before[offset]) / before[axis]
        assert under * zoomed[axis] + zoomed[offset] == pytest.approx(cursor, abs=1.0)
    page.mouse.down()
    page.mouse.move(x + 60, y - 25, steps=5)
    page.mouse.up()
    page.wait_for_function(
        f"(ox) => JSON.parse(document.querySelector('{canvas}').dataset.view).ox !== ox",
        arg=zoomed["ox"],
        timeout=10_000,
    )
    panned = json.loads(page.get_attribute(canvas, "data-view"))
    assert panned["ox"] == pytest.approx(zoomed["ox"] + 60, abs=1)
    assert panned["oy"] == pytest.approx(zoomed["oy"] - 25, abs=1)
    assert panned["sx"] == zoomed["sx"]


def test_the_map_follows_the_theme_and_leaves_its_screenshots(page: Any) -> None:
    """Light and dark: the map's background follows JupyterLab's theme; the docs show both shots."""
    shots = Path(__file__).resolve().parents[2] / "docs" / "_static" / "screenshots"
    page.click("[data-testid=se-map-mode-pan]")
    page.click("[data-testid=se-map-reset]")
    page.wait_for_selector("[data-testid=se-map-canvas][data-ready='points-1797']", timeout=60_000)
    backgrounds = {}
    for theme, name in (("JupyterLab Dark", "dark"), ("JupyterLab Light", "light")):
        page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme)
        page.wait_for_function(
            "(light) => document.body.dataset.jpThemeLight === light", arg=str(name == "light").lower(), timeout=30_000
        )
        page.wait_for_timeout(1000)  # the canvas redraws on the theme's colours
        shot = shots / f"map-{name}.png"
        page.locator("[data-testid=se-map]").screenshot(path=str(shot))
        with PILImage.open(shot) as image:
            backgrounds[name] = float(np.asarray(image.convert("L"), dtype=np.float64).mean())
    assert backgrounds["dark"] < 0.5 * backgrounds["light"], backgrounds  # mostly background: dark is dark
