"""Box edits from the detail pane, without a page: the requests the page sends (edit_box, add_box) become the
draft's relabel_boxes / drop_boxes / set_boxes, the detail and the thumbnails show the boxes after them, and
"save version" writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

import stable_explore as se
from stable_explore.errors import RowIndexError
from tests.widgets.commands import invoke
from tests.widgets.test_browser_overlays import _coco


def _dataset(tmp_path: Path) -> se.CachedDataset:
    path, images_dir, results, _ = _coco(tmp_path)
    return se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)


def _row_with(ds: se.CachedDataset, boxes: int) -> int:
    return next(r for r in range(len(ds)) if len(ds[r]["objects"]["category"]) >= boxes)


def test_relabel_and_delete_from_the_detail_then_save(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    row = _row_with(ds, 3)
    before = ds[row]["objects"]
    browser = ds.browse(page_size=24)
    invoke(browser, "detail", {"row": row})
    # delete the first box shown, then relabel what is now the first (the stored box 1) as "dog"
    reply, _ = invoke(browser, "edit_box", {"row": row, "column": "objects", "index": 0, "drop": True})
    assert len(reply["overlays"]["boxes"]["objects"]) == len(before["category"]) - 1
    reply, _ = invoke(browser, "edit_box", {"row": row, "column": "objects", "index": 0, "label": 2})
    shown = reply["overlays"]["boxes"]["objects"]
    assert shown[0][4] == 2
    assert browser.draft is not None
    assert browser.draft.pending_edits.box_edits[(row, "objects")] == (("drop", 0), ("relabel", 1, 2))
    assert browser.pending == "edit the boxes of 1 row(s)"
    # the page's thumbnail shows the boxes after the edits too
    content, _ = invoke(browser, "refresh")
    cell = next(c for c in content["cells"] if c["row"] == row)
    assert cell["overlays"]["boxes"]["objects"] == shown
    saved = browser.save("two box edits")
    after = saved[row]["objects"]
    assert after["bbox"] == before["bbox"][1:]
    assert after["category"] == [2, *before["category"][2:]]
    assert [saved[r]["objects"] for r in range(len(ds)) if r != row] == [
        ds[r]["objects"] for r in range(len(ds)) if r != row
    ]


def test_a_dragged_box_is_added_in_the_column_s_format_and_pixels(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    row = _row_with(ds, 1)
    width, height = ds[row]["width"], ds[row]["height"]
    browser = ds.browse(page_size=24)
    reply, _ = invoke(
        browser, "add_box", {"row": row, "column": "objects", "corners": [0.5, 0.6, 0.1, 0.2], "label": 1}
    )
    assert reply["overlays"]["boxes"]["objects"][-1][:5] == pytest.approx([0.1, 0.2, 0.5, 0.6, 1], abs=0.01)
    # then the new box is deleted and another relabelled: the row's boxes were set, edits set them again
    n = len(reply["overlays"]["boxes"]["objects"])
    invoke(browser, "edit_box", {"row": row, "column": "objects", "index": 0, "label": 0})
    saved = browser.save("a box drawn")
    got = saved[row]["objects"]
    assert len(got["bbox"]) == n
    assert got["bbox"][-1] == pytest.approx([0.1 * width, 0.2 * height, 0.4 * width, 0.4 * height], abs=0.02)
    assert got["category"][-1] == 1
    assert got["category"][0] == 0


def test_an_edit_of_a_box_that_is_not_there_names_the_row_and_box(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    browser = ds.browse(page_size=24)
    with pytest.raises(RowIndexError, match="no box 40"):
        browser.drop_box(0, "objects", 40)
    assert browser.draft is None
