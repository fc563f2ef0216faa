"""The issues panel in a real JupyterLab (headless Chromium): list, click, the group side by side, kernel agrees."""

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

CELLS = [
    """\
import stable_explore as se
from stable_explore import signals
from stable_explore.testing.planted import planted_digits
from stable_explore.widgets.issues_panel import IssuesPanel

truth = planted_digits(exact=6, near=0, flipped=20, noise=0, blurred=0)
ds = se.build(truth.rows, truth.features, name="planted", progress=False)
dups = signals.exact_duplicates(ds)
suspects = signals.neighbor_label_issues(ds)
browser = ds.browse(page_size=24)
panel = IssuesPanel(ds, duplicates=dups, label_issues=suspects, browser=browser)
panel""",
    "print('SHOWN', panel.shown_rows, 'ACTIVE', panel.active, 'PLANTED', tuple(panel.shown_rows) in truth.exact)",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, lab_server: SharedLab) -> Iterator[Any]:
    with lab_server.notebook(tmp_path_factory.mktemp("lab"), "issues.ipynb", CELLS) as page:
        yield page


def test_issues_panel_lists_groups_and_shows_one_side_by_side(page: Any) -> None:
    panel = page.locator("[data-testid=se-issues]")
    panel.wait_for(timeout=180_000)
    assert panel.get_attribute("data-lm-suppress-shortcuts") == "true"
    assert "6 duplicate group(s)" in page.locator("[data-testid=se-issues-title]").inner_text()
    kinds = page.eval_on_selector_all("[data-testid=se-issue]", "els => els.map(e => e.dataset.kind)")
    assert kinds[:6] == ["duplicates"] * 6
    assert "label" in kinds  # suspected label errors follow

    first = page.locator("[data-testid=se-issue]").first
    assert first.inner_text().startswith("2 exact duplicates of row ")
    first.click()
    page.wait_for_selector("[data-testid=se-issues-group][data-ready='entry-0']", timeout=60_000)
    loaded = page.eval_on_selector_all(
        "[data-testid=se-issue-thumb] img", "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length"
    )
    assert loaded == 2
    rows = page.eval_on_selector_all("[data-testid=se-issue-thumb]", "els => els.map(e => Number(e.dataset.row))")
    assert first.get_attribute("aria-selected") == "true"

    out = run_cell(page, 1)
    shown = out.split("SHOWN ")[1].split(" ACTIVE")[0]
    assert shown == str(rows)
    assert "ACTIVE 0" in out
    assert "PLANTED True" in out  # the group is a planted (original, copy) pair

    # a suspected label error: one row, its label in the caption
    label_entry = page.locator("[data-testid=se-issue][data-kind=label]").first
    index = label_entry.get_attribute("data-index")
    label_entry.click()
    page.wait_for_selector(f"[data-testid=se-issues-group][data-ready='entry-{index}']", timeout=60_000)
    assert page.locator("[data-testid=se-issue-thumb]").count() == 1
    assert page.locator("[data-testid=se-issue-example]").count() == 6  # rows of the suggested class beside it
    assert page.locator("[data-testid=se-issue-examples]").inner_text().startswith("labelled ")
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "issues-panel.png"))
