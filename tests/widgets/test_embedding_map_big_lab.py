"""The embedding map at 200,000 points in a real JupyterLab, driven by Playwright in headless Chromium.

Above 150,000 points the page draws in slices and moves the last frame while a pan or zoom goes on;
this checks, with the mouse, that a lasso selects exactly the rows ``rows_in_polygon`` finds for the
vertices drawn (compared by count and hash: 80,000 rows do not print), that zooming and panning keep
the selection (in the kernel and on the canvas: selected points in full colour, far ones faded), and
that a lasso drawn in the zoomed, panned view is right too. Its own module: one JupyterLab at a time.
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

from stable_explore.signals import pca_2d, rows_in_polygon
from tests.lab import CHROMIUM, SharedLab, run_cell_until

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="playwright is in the test extras")

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
def big_page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    cells = [BIG_CELLS[0].format(n=BIG), *BIG_CELLS[1:]]
    with lab_server.notebook(tmp_path_factory.mktemp("biglab"), "big.ipynb", cells) as page:
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
    """The kernel's selection (its shape's kind, its size, a digest of its rows) once it is the one the page drew.

    The page's lasso reaches the kernel on a subshell, beside the cells (see :func:`tests.lab.run_cell_until`)."""
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-map-count]').dataset.shape !== undefined", timeout=30_000
    )
    kind = page.get_attribute("[data-testid=se-map-count]", "data-shape")
    count = int(page.get_attribute("[data-testid=se-map-count]", "data-count"))

    def parse(output: str) -> tuple[str, int, str]:
        found = re.search(r"KIND (\w+) COUNT (\d+) SHA (\w+)", output)
        assert found, output
        return found[1], int(found[2]), found[3]

    output = run_cell_until(
        page, 2, lambda out: parse(out)[:2] == (kind, count), f"the page's {kind} of {count:,} rows"
    )
    return parse(output)


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


def assert_selection_drawn(page: Any, points: np.ndarray, rows: np.ndarray) -> None:
    """The canvas, once still, shows ``rows`` selected: each in a class's full colour, points far from them faded."""
    view = still(page)
    full = {
        int(r) << 16 | int(g) << 8 | int(b)
        for r, g, b in page.eval_on_selector_all(
            "[data-testid=se-map-legend] [data-rgb]", "items => items.map(i => i.dataset.rgb.split(',').map(Number))"
        )
    }
    colours = pixel_colours(page, points, view)
    chosen = np.zeros(len(points), dtype=bool)
    chosen[rows] = True
    on_canvas = colours >= 0
    assert on_canvas[chosen].sum() > 500
    # every selected point's corner pixel is in a class's full colour (selected rows are drawn on top) ...
    assert np.isin(colours[chosen & on_canvas], list(full)).all()
    # ... and a point far from them (no selected square reaches it) is faded
    pixel = np.column_stack([points[:, 0] * view["sx"] + view["ox"], points[:, 1] * view["sy"] + view["oy"]])
    low, high = pixel[chosen].min(axis=0) - 4, pixel[chosen].max(axis=0) + 4
    far = on_canvas & ~chosen & ((pixel < low) | (pixel > high)).any(axis=1)
    assert far.sum() > 1_000
    assert not np.isin(colours[far], list(full)).any()


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
    # drawn from the view's layer of codes (the points were not drawn again) and right
    assert page.get_attribute(canvas, "data-paint-fresh") == "false"
    assert_selection_drawn(page, big_points, expected)

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
    assert page.get_attribute(canvas, "data-paint-fresh") == "true"  # every point drawn in the new view
    assert_selection_drawn(page, big_points, expected)

    # a lasso drawn in the zoomed and panned view selects what Python finds in it, and is drawn
    page.click("[data-testid=se-map-mode-lasso]")
    polygon = draw_lasso(page, box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.4, 90)
    kind, count, digest = big_selection(page)
    expected = rows_in_polygon(big_points, polygon)
    assert kind == "lasso"
    assert count == len(expected) > 500
    assert digest == hashlib.sha256(expected.astype(np.int64).tobytes()).hexdigest()
    assert_selection_drawn(page, big_points, expected)
    page.click("[data-testid=se-map-mode-pan]")
