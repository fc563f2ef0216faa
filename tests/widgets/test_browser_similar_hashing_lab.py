"""The first "similar rows" of a dataset without an embedding, in a real JupyterLab (Playwright, headless Chromium).

Before, the click hashed every image with no sign of work (the status line unchanged, the button
enabled) and the grid jumped a minute later. Now a progress line says the rows hashed of all and
advances, the button waits, Cancel stops it with nothing kept in the home, a whole hashing shows the
similar rows, and the next click answers at once. The progress line's screenshot goes to the docs.
"""

from __future__ import annotations

import re
import time
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

CELLS = [
    """\
import io
import numpy as np
from PIL import Image
import stable_explore as se

rng = np.random.default_rng(0)
ramp = np.add.outer(np.arange(192), np.arange(192)).astype(np.uint8)
pngs = []
for i in range(40):  # 40 distinct pictures (PNG decodes whole: about 1.5 ms an image to hash)
    out = io.BytesIO()
    pixels = np.roll(ramp, 5 * i, axis=1) + rng.integers(0, 8, size=ramp.shape)
    Image.fromarray(pixels.astype(np.uint8)).save(out, "PNG")
    pngs.append(out.getvalue())
ds = se.build(({"image": pngs[i % 40]} for i in range(8000)), se.Features(image=se.Image()), name="ramps",
              progress=False)
browser = ds.browse(page_size=24)
browser""",
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("lab")
    with lab_server.notebook(root, "hashing.ipynb", CELLS) as page:
        yield page, root / "home" / "ramps" / "signals"


def _done(text: str) -> int:
    found = re.search(r": ([\d,]+) / 8,000 rows", text)
    assert found is not None, text
    return int(found.group(1).replace(",", ""))


def test_progress_advances_cancel_keeps_nothing_and_the_second_click_is_at_once(lab: tuple[Any, Path]) -> None:
    page, signals = lab
    widget = page.locator("[data-testid=se-browser]").first
    widget.wait_for(timeout=180_000)
    widget.locator("[data-testid=se-grid][data-ready='page-0']").wait_for(timeout=60_000)
    widget.locator("[data-testid=se-thumb][data-row='5']").dblclick()
    detail = widget.locator("[data-testid=se-detail]")
    detail.wait_for(state="visible", timeout=30_000)
    button = detail.locator("[data-testid=se-similar]")
    button.wait_for(timeout=30_000)
    line = widget.locator("[data-testid=se-hashing-text]")
    cancel = widget.locator("[data-testid=se-hashing-cancel]")

    # the first click: a progress line that advances, the button waiting, and Cancel
    button.click()
    page.wait_for_function(
        "() => /: [1-9][\\d,]* \\/ 8,000 rows/"
        ".test(document.querySelector('[data-testid=se-hashing-text]').textContent)",
        timeout=60_000,
    )
    first = line.inner_text()
    assert first.startswith("similar rows: hashing images for the phash of 'image': ")
    assert button.is_disabled()
    assert cancel.is_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.screenshot(path=str(SHOTS / "browser-similar-hashing.png"))
    page.wait_for_function(
        "(before) => document.querySelector('[data-testid=se-hashing-text]').textContent !== before",
        arg=first,
        timeout=60_000,
    )
    assert _done(line.inner_text()) > _done(first)  # it advances
    cancel.click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-hashing-text]').textContent.includes('cancelled')",
        timeout=60_000,
    )
    assert re.fullmatch(r"similar rows: hashing cancelled at [\d,]+ / 8,000 rows; nothing kept", line.inner_text())
    assert button.is_enabled()
    assert widget.locator("[data-testid=se-subset]").is_hidden()  # the grid as it was
    assert not signals.exists() or not any(p.is_file() for p in signals.rglob("*"))  # nothing half-kept

    # again, to the end: the similar rows are shown (row 5 first; every 40th row is the same picture)
    button.click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-subset-title]')?.textContent.startsWith('showing row 5 and')",
        timeout=180_000,
    )
    assert widget.locator("[data-testid=se-hashing]").is_hidden()
    assert len([p for p in signals.rglob("*") if p.is_file()]) == 1  # kept as a signal of the version
    # the title is synced before the kernel sends the page of those rows: wait for the page too
    widget.locator("[data-testid=se-grid] > [data-testid=se-thumb]:first-child[data-row='5']").wait_for(timeout=60_000)
    rows = [int(r) for r in widget.locator("[data-testid=se-thumb]").evaluate_all("els => els.map(e => e.dataset.row)")]
    assert rows[0] == 5
    assert all(r % 40 == 5 for r in rows)

    # the second click is at once: no progress line, the grid within a moment
    widget.locator("[data-testid=se-back]").click()
    widget.locator("[data-testid=se-subset]").wait_for(state="hidden", timeout=30_000)
    widget.locator("[data-testid=se-thumb][data-row='5']").dblclick()
    button = widget.locator("[data-testid=se-detail] [data-testid=se-similar]")
    start = time.monotonic()
    button.click()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=se-subset-title]')?.textContent.startsWith('showing row 5 and')",
        timeout=30_000,
    )
    elapsed = time.monotonic() - start
    assert widget.locator("[data-testid=se-hashing]").is_hidden()
    print(f"second similar rows click: {elapsed * 1000:.0f} ms")
