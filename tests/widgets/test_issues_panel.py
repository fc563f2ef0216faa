"""The issues panel in Python: what it lists, what a click shows, and where it sends the rows."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import signals
from stable_explore.errors import InvalidOptionError
from stable_explore.widgets.issues_panel import GroupMessage, IssueEntry, IssuesPanel
from tests.typed_json import conforms
from tests.widgets.commands import invoke


@pytest.fixture
def digits(tmp_path: Path) -> se.CachedDataset:
    images = [np.full((8, 8), v, dtype=np.uint8) for v in (10, 200, 10, 90, 200, 10)]
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b"]))
    rows = [(f"k{i}", {"image": im, "label": i % 2}) for i, im in enumerate(images)]
    return se.build(rows, features, name="d", home=tmp_path, progress=False)


def sent_messages(panel: IssuesPanel) -> list[tuple[dict[str, Any], list[bytes]]]:
    sent: list[tuple[dict[str, Any], list[bytes]]] = []
    panel.send = lambda content, buffers=None: sent.append((content, list(buffers or [])))  # type: ignore[method-assign]
    return sent


def test_entries_list_groups_then_label_errors(digits: se.CachedDataset) -> None:
    probs = np.array([[0.9, 0.1], [0.1, 0.9], [0.9, 0.1], [0.95, 0.05], [0.8, 0.2], [0.2, 0.8]])
    panel = IssuesPanel(
        digits,
        duplicates=signals.exact_duplicates(digits),
        label_issues=signals.label_issues(digits, probs, method="numpy"),
    )
    assert [(e["kind"], e["rows"]) for e in panel.entries] == [
        ("duplicates", [0, 2, 5]),
        ("duplicates", [1, 4]),
        ("label", [3]),
    ]
    assert panel.entries[2]["title"] == "row 3: labelled b, looks like a"
    sent = sent_messages(panel)
    panel.show(2)
    content, buffers = sent[-1]
    # the suspect, then rows labelled as the suggestion ("a": rows 0, 2, 4) to compare with
    assert [(item["row"], item["example"]) for item in content["items"]] == [
        (3, False),
        (0, True),
        (2, True),
        (4, True),
    ]
    assert len(buffers) == 4
    assert "2 duplicate group(s) · 1 suspected label error(s)" in panel.title
    # the entries and the group pushed to the page are what issues_panel.py's TypedDicts declare
    conforms(panel.entries, list[IssueEntry], "entries")
    conforms(content, GroupMessage, "group")


def test_a_click_sends_the_group_thumbnails_and_filters_the_browser(digits: se.CachedDataset) -> None:
    browser = digits.browse()
    seen: list[tuple[list[int], str]] = []
    panel = IssuesPanel(
        digits, duplicates=signals.exact_duplicates(digits), browser=browser, on_show=lambda r, t: seen.append((r, t))
    )
    sent = sent_messages(panel)
    assert invoke(panel, "open", {"index": 0}) == ({"type": "ok"}, [])  # what a click in the page sends
    assert panel.active == 0
    assert panel.shown_rows == [0, 2, 5]
    assert seen == [([0, 2, 5], "3 exact duplicates of row 0")]
    if not hasattr(browser, "show_rows"):  # until the browser filters to given rows, the panel selects them
        assert browser.selected == [0, 2, 5]
    [(content, buffers)] = [m for m in sent if m[0].get("type") == "group"]  # pushed, as show() in code does
    assert content["type"] == "group"
    assert [item["row"] for item in content["items"]] == [0, 2, 5]
    assert [item["key"] for item in content["items"]] == ["k0", "k2", "k5"]
    assert len(buffers) == 3
    assert PILImage.open(io.BytesIO(buffers[0])).size == (8, 8)


def test_a_bad_entry_is_said_on_the_page(digits: se.CachedDataset) -> None:
    panel = IssuesPanel(digits, duplicates=signals.exact_duplicates(digits))
    reply, _ = invoke(panel, "open", {"index": 9})
    assert reply["message"] == panel.status
    assert panel.status.startswith("error: InvalidOptionError: no entry 9")
    with pytest.raises(InvalidOptionError, match="no entry 9"):
        panel.show(9)


def test_a_table_of_another_dataset_is_refused(digits: se.CachedDataset) -> None:
    groups = signals.exact_duplicates(digits)
    with pytest.raises(InvalidOptionError, match="names row 5, but the dataset has 3 rows"):
        IssuesPanel(digits[:3], duplicates=groups)
