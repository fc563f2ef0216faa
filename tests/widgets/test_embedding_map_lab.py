"""The embedding map in a real JupyterLab, driven by Playwright in headless Chromium.

A notebook caches scikit-learn's digits, maps their 64 pixel values (PCA), and links a browser. The
test checks the canvas holds every label's colour, drags a box and a lasso with the mouse and compares
the rows the kernel received with the rows the same shapes hold in a projection computed here, hovers
an isolated point and sees its thumbnail, and finds the selection in the browser.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

from stable_explore.signals import pca_2d, rows_in_box, rows_in_polygon
from tests.lab import CHROMIUM, notebook_in_chromium, run_cell

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
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cells = [NOTEBOOK_CELLS[0].format(names=DIGIT_NAMES), *NOTEBOOK_CELLS[1:]]
    with notebook_in_chromium(tmp_path_factory.mktemp("lab"), "map.ipynb", cells) as page:
        yield page


@pytest.fixture(scope="module")
def points() -> np.ndarray:
    """The projection, computed here from the same pixels (not read from the kernel)."""
    from sklearn.datasets import load_digits

    return pca_2d(load_digits().data.astype(np.float64))


def kernel_state(page: Any) -> dict[str, Any]:
    output = run_cell(page, 3)
    found = re.search(r"MAP (.*) SHAPE (.*)\nBROWSER (.*) SHOWN (.*) SUBSET (True|False)", output)
    assert found, output
    return {
        "selected": json.loads(found[1]),
        "shape": json.loads(found[2]),
        "browser": json.loads(found[3]),
        "shown": json.loads(found[4]),
        "subset": found[5] == "True",
    }


def screen(page: Any, points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Viewport pixels of these rows' points, from the view the page publishes on its canvas."""
    view = json.loads(page.get_attribute("[data-testid=se-map-canvas]", "data-view"))
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    xs = points[rows, 0].astype(float) * view["sx"] + view["ox"] + box["x"]
    ys = points[rows, 1].astype(float) * view["sy"] + view["oy"] + box["y"]
    return np.column_stack([xs, ys])


def wait_selected(page: Any, count: int) -> None:
    page.wait_for_function(
        f"() => document.querySelector('[data-testid=se-map-count]').dataset.count === '{count}'", timeout=30_000
    )


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
    page.wait_for_function(
        "() => Number(document.querySelector('[data-testid=se-map-count]').dataset.count) > 0", timeout=30_000
    )
    state = kernel_state(page)
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
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-map-count]').dataset.count !== undefined", timeout=30_000
    )
    for _ in range(50):
        state = kernel_state(page)
        if state["shape"].get("kind") == "lasso":
            break
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


# -- 200,000 points: the sliced redraw and grid, the quick pans and zooms, and selections made on them --------

BIG = 200_000
BIG_CELLS = [
    """\
import hashlib
import numpy as np
import stable_explore as se
from stable_explore.widgets import EmbeddingMap

rng = np.random.default_rng(7)
labels = rng.integers(0, 6, {n})
vectors = rng.normal(scale=3.0, size=(6, 5))[labels] + rng.normal(size=({n}, 5))
features = se.Features(label=se.ClassLabel(names=[f"class {{i}}" for i in range(6)]))
ds = se.build(({{"label": int(v)}} for v in labels), features, name="big", progress=False, batch_size=50_000)
big_map = EmbeddingMap(ds, vectors)""",
    "big_map",
    "rows = np.asarray(big_map.selected, dtype=np.int64)\n"
    "digest = hashlib.sha256(rows.tobytes()).hexdigest()\n"
    "print('KIND', big_map.selection_shape.get('kind'), 'COUNT', len(rows), 'SHA', digest)",
]


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    cells = [BIG_CELLS[0].format(n=BIG), *BIG_CELLS[1:]]
    with notebook_in_chromium(tmp_path_factory.mktemp("biglab"), "big.ipynb", cells) as page:
        page.wait_for_selector(f"[data-testid=se-map-canvas][data-ready='points-{BIG}']", timeout=300_000)
        page.wait_for_selector("[data-testid=se-map-canvas][data-grid='ready']", timeout=60_000)
        page.locator("[data-testid=se-map]").scroll_into_view_if_needed()
        yield page


@pytest.fixture(scope="module")
def big_points() -> np.ndarray:
    """The notebook's projection, computed here from the same random vectors."""
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 6, BIG)
    vectors = rng.normal(scale=3.0, size=(6, 5))[labels] + rng.normal(size=(BIG, 5))
    return pca_2d(vectors)


def big_selection(page: Any) -> tuple[str, int, str]:
    found = re.search(r"KIND (\w+) COUNT (\d+) SHA (\w+)", run_cell(page, 2))
    assert found
    return found[1], int(found[2]), found[3]


def draw_lasso(page: Any, cx: float, cy: float, size: float) -> list[list[float]]:
    """A concave lasso drawn with the mouse around (cx, cy); returns its vertices in the projection's coordinates."""
    view = json.loads(page.get_attribute("[data-testid=se-map-canvas]", "data-view"))
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    angles = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    radius = size * (1 + 0.35 * np.sin(4 * angles))
    path = np.column_stack([cx + radius * np.cos(angles), cy + radius * np.sin(angles)])
    paints = page.get_attribute("[data-testid=se-map-canvas]", "data-paints")
    page.mouse.move(*path[0])
    page.mouse.down()
    for x, y in path[1:]:
        page.mouse.move(float(x), float(y), steps=2)
    page.mouse.up()
    page.wait_for_function(  # the selection is drawn (a sliced redraw lands a few tasks after the mouseup)
        "(paints) => document.querySelector('[data-testid=se-map-canvas]').dataset.paints !== paints",
        arg=paints,
        timeout=30_000,
    )
    local = path - [box["x"], box["y"]]
    return np.column_stack([(local[:, 0] - view["ox"]) / view["sx"], (local[:, 1] - view["oy"]) / view["sy"]]).tolist()


def still(page: Any) -> dict[str, float]:
    """Wait until every point is drawn again in the current view; the view of the pixels on the canvas."""
    page.wait_for_function(
        """() => {
            const canvas = document.querySelector('[data-testid=se-map-canvas]');
            return !canvas.dataset.quick && canvas.dataset.paintedView === canvas.dataset.view;
        }""",
        timeout=30_000,
    )
    view: dict[str, float] = json.loads(page.get_attribute("[data-testid=se-map-canvas]", "data-painted-view"))
    return view


def pixel_colours(page: Any, points: np.ndarray, view: dict[str, float]) -> np.ndarray:
    """For each point, the canvas pixel (0xRRGGBB) at its square's top-left corner; -1 outside the canvas."""
    size = page.evaluate(
        "() => { const c = document.querySelector('[data-testid=se-map-canvas]'); return [c.width, c.height]; }"
    )
    ratio = page.evaluate("() => window.devicePixelRatio || 1")
    side = max(1, round(2 * ratio))  # the map's square for 20,001 to 200,000 points
    xs = np.floor(points[:, 0].astype(np.float64) * (view["sx"] * ratio) + (view["ox"] * ratio - (side >> 1)))
    ys = np.floor(points[:, 1].astype(np.float64) * (view["sy"] * ratio) + (view["oy"] * ratio - (side >> 1)))
    inside = (xs >= 0) & (xs < size[0]) & (ys >= 0) & (ys < size[1])
    data = np.asarray(
        page.evaluate(
            """() => {
                const c = document.querySelector('[data-testid=se-map-canvas]');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                const packed = new Array(c.width * c.height);
                for (let i = 0; i < packed.length; i++) {
                    packed[i] = (d[4 * i] << 16) | (d[4 * i + 1] << 8) | d[4 * i + 2];
                }
                return packed;
            }"""
        ),
        dtype=np.int64,
    )
    colours = np.full(len(points), -1, dtype=np.int64)
    colours[inside] = data[(ys[inside] * size[0] + xs[inside]).astype(np.int64)]
    return colours


def test_at_200k_points_a_lasso_selects_what_python_finds_and_pan_and_zoom_keep_it(
    big_page: Any, big_points: np.ndarray
) -> None:
    page = big_page
    canvas = "[data-testid=se-map-canvas]"
    assert int(page.get_attribute(canvas, "data-points-bytes")) == BIG * 9  # float32 x, y and a uint8 code
    page.click("[data-testid=se-map-mode-lasso]")
    box = page.locator("[data-testid=se-map-overlay]").bounding_box()
    cx, cy = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5
    polygon = draw_lasso(page, cx, cy, 120)
    kind, count, digest = big_selection(page)
    expected = rows_in_polygon(big_points, polygon)  # the vertices the mouse drew, through the published view
    assert kind == "lasso"
    assert count == len(expected) > 5_000
    assert digest == hashlib.sha256(expected.astype(np.int64).tobytes()).hexdigest()
    assert int(page.get_attribute("[data-testid=se-map-count]", "data-count")) == count

    # zoom in about a point off the centre, then drag: the selection stays, in the kernel and on the canvas
    page.click("[data-testid=se-map-mode-pan]")
    before = json.loads(page.get_attribute(canvas, "data-view"))
    page.mouse.move(cx + 60, cy - 40)
    for _ in range(4):
        page.mouse.wheel(0, -120)
        page.wait_for_timeout(30)
    page.mouse.down()
    page.mouse.move(cx - 20, cy + 10, steps=12)
    page.mouse.up()
    view = still(page)
    assert view["sx"] > before["sx"] * 1.3
    assert view["ox"] != before["ox"]
    assert big_selection(page) == (kind, count, digest)
    assert int(page.get_attribute("[data-testid=se-map-count]", "data-count")) == count
    full = {
        int(r) << 16 | int(g) << 8 | int(b)
        for r, g, b in page.eval_on_selector_all(
            "[data-testid=se-map-legend] [data-rgb]", "items => items.map(i => i.dataset.rgb.split(',').map(Number))"
        )
    }
    colours = pixel_colours(page, big_points, view)
    chosen = np.zeros(len(big_points), dtype=bool)
    chosen[expected] = True
    on_canvas = colours >= 0
    assert on_canvas[chosen].sum() > 1_000
    # every selected point's corner pixel is in a class's full colour (selected rows are drawn on top) ...
    assert np.isin(colours[chosen & on_canvas], list(full)).all()
    # ... and a point far from the lasso (no selected square reaches it) is faded
    pixel = np.column_stack([big_points[:, 0] * view["sx"] + view["ox"], big_points[:, 1] * view["sy"] + view["oy"]])
    low, high = pixel[chosen].min(axis=0) - 4, pixel[chosen].max(axis=0) + 4
    far = on_canvas & ~chosen & ((pixel < low) | (pixel > high)).any(axis=1)
    assert far.sum() > 1_000
    assert not np.isin(colours[far], list(full)).any()

    # a lasso drawn in the zoomed and panned view selects what Python finds in it
    page.click("[data-testid=se-map-mode-lasso]")
    polygon = draw_lasso(page, box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.4, 90)
    kind, count, digest = big_selection(page)
    expected = rows_in_polygon(big_points, polygon)
    assert kind == "lasso"
    assert count == len(expected) > 500
    assert digest == hashlib.sha256(expected.astype(np.int64).tobytes()).hexdigest()
    page.click("[data-testid=se-map-mode-pan]")
