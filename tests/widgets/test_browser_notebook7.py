"""The shard browser also works in Notebook 7 (the classic interface, built on JupyterLab's components)."""

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
pytest.importorskip("notebook", reason="Notebook 7 is in the test extras")

CELLS = [
    "import numpy as np, stable_explore as se\n"
    "features = se.Features(image=se.Image(), label=se.ClassLabel(names=['dark', 'light']))\n"
    "rows = [{'image': np.full((8, 8), 30 + 3 * i, dtype=np.uint8), 'label': i % 2} for i in range(60)]\n"
    "ds = se.build(rows, features, name='tiles', progress=False)",
    "browser = ds.browse(page_size=24)\nbrowser",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, notebook7_lab: SharedLab) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("nb7")
    with notebook7_lab.notebook7(root, "tiles.ipynb", CELLS, viewport=(1300, 1000)) as page:
        yield page


def test_thumbnails_labels_and_paging_in_notebook_7(page: Any) -> None:
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-0']", timeout=120_000)
    rows = [int(r) for r in page.eval_on_selector_all("[data-testid=se-thumb]", "els => els.map(e => e.dataset.row)")]
    assert rows == list(range(24))
    assert page.locator("[data-testid=se-label]").all_inner_texts()[:2] == ["dark", "light"]
    page.click("[data-testid=se-next]")
    page.wait_for_selector("[data-testid=se-grid][data-ready='page-1']", timeout=60_000)
    assert page.locator("[data-testid=se-page]").inner_text() == "page 2 of 3"
