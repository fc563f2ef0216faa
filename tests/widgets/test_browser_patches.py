"""The patches browser (``ds.patches("objects").browse()``) without a page: crop tiles paged, filtered by class,
sorted by area and score; relabel and delete through the page's requests become the source dataset's pending
box edits, and "save version" writes a version whose boxes changed exactly there."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from tests.widgets.commands import invoke

NAMES = ["person", "car", "dog"]
COLOURS = {"person": (220, 40, 40), "car": (40, 80, 220), "dog": (230, 200, 40)}


def _dataset(tmp_path: Path, images: int = 40, *, scores: bool = False) -> se.CachedDataset:
    """``images`` 64 x 48 pictures, each with 1-3 boxes of a solid colour per class; every 7th box of a car
    is stored as a "person" (the planted wrong class)."""
    rng = np.random.default_rng(3)
    rows = []
    box_number = 0
    for i in range(images):
        pixels = np.full((48, 64, 3), 90, np.uint8)
        objects = []
        for b in range(1 + i % 3):
            name = NAMES[(i + b) % 3]
            x, y = 4 + 20 * b, 4 + 2 * b
            w, h = 12 + b * 2, 20 + (i % 5) * 4
            pixels[y : y + h, x : x + w] = COLOURS[name]
            stored = "person" if name == "car" and box_number % 7 == 0 else name
            box = {"bbox": [x, y, w, h], "category": stored}
            if scores:
                box["score"] = float(rng.uniform(0.05, 0.99))
            objects.append(box)
            box_number += 1
        rows.append({"image": pixels, "objects": objects})
    features = se.Features(image=se.Image(), objects=se.Boxes(names=NAMES))
    return se.build(rows, features, name="shapes", home=tmp_path / "home", progress=False)


def test_pages_of_crop_tiles_each_cut_from_its_box(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    patches = ds.patches("objects")
    browser = patches.browse(page_size=24, thumb_size=64)
    assert browser.num_rows == len(patches) == 79
    assert browser.num_pages == 4
    assert browser.has_images
    assert browser.class_names == NAMES
    assert "79 boxes on 40 images" in browser.title
    content, buffers = invoke(browser, "refresh")
    assert len(content["cells"]) == 24 == len(buffers)
    for cell in content["cells"]:
        where = patches.table.slice(cell["row"], 1).to_pylist()[0]
        assert cell["key"].endswith(f"box {where['box']}")
        crop = PILImage.open(io.BytesIO(buffers[cell["buffer"]])).convert("RGB")
        x, y, w, h = where["bbox"]
        assert crop.size == (int(w), int(h))  # smaller than the thumbnail: the crop as cut
        painted = ds[where["row"]]["image"].convert("RGB").getpixel((int(x + w / 2), int(y + h / 2)))
        middle = crop.getpixel((crop.width // 2, crop.height // 2))
        assert np.abs(np.subtract(middle, painted)).max() < 24  # the box's own colour (JPEG)
    # the last page has the rest; a page asked again comes from the cache (nothing cut again)
    browser.page = 3
    content, _ = invoke(browser, "refresh")
    assert len(content["cells"]) == 79 - 3 * 24
    cached = len(browser._state.cache)
    invoke(browser, "refresh")
    assert len(browser._state.cache) == cached


def test_the_class_chips_filter_boxes_and_sort_by_area_and_score(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, scores=True)
    patches = ds.patches("objects")
    browser = patches.browse(page_size=24)
    persons = patches.where(cls="person")
    assert browser.label_counts == [len(patches.where(cls=n)) for n in NAMES]
    browser.label_filter = [0]
    assert browser.num_rows == len(persons)
    content, _ = invoke(browser, "refresh")
    assert {patches.table.column("category")[c["row"]].as_py() for c in content["cells"]} == {"person"}
    # each tile says its score; sorted by score, highest first
    browser.sort_by, browser.sort_desc = "score", True
    content, _ = invoke(browser, "refresh")
    notes = [float(c["note"]) for c in content["cells"]]
    assert notes == sorted(notes, reverse=True)
    assert notes[0] == pytest.approx(max(persons["score"]), abs=0.005)
    # by area, smallest first: width x height of the box
    browser.sort_by, browser.sort_desc = "area", False
    rows = browser.page_rows().tolist()
    areas = [patches.table.column("bbox")[r].as_py()[2] * patches.table.column("bbox")[r].as_py()[3] for r in rows]
    assert areas == sorted(areas)
    assert sorted(browser.histograms) == ["area", "score"]  # a box's image row and index are no values to plot


def test_relabel_and_delete_tiles_then_save_changes_exactly_those_boxes(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    before = ds.arrow_column("objects").to_pylist()
    patches = ds.patches("objects")
    browser = patches.browse(page_size=48)
    browser.label_filter = [0]
    shown = browser.page_rows().tolist()
    first, second, third = shown[0], shown[1], shown[2]
    where = {p: (patches.table.column("row")[p].as_py(), patches.table.column("box")[p].as_py()) for p in shown[:3]}
    # two tiles relabelled as "car" with the page's requests, a third flagged and deleted
    invoke(browser, "click", {"row": first})
    invoke(browser, "click", {"row": second, "toggle": True})
    invoke(browser, "relabel", {"label": 1})
    invoke(browser, "click", {"row": third})
    invoke(browser, "flag")
    invoke(browser, "drop_flagged")
    draft = browser.draft
    assert draft is not None
    edits = draft.pending_edits.box_edits
    assert edits[(where[first][0], "objects")][0] == ("relabel", where[first][1], 1)
    assert ("drop", where[third][1]) in edits[(where[third][0], "objects")]
    # the tiles show it: two pending classes, one deleted
    assert browser.pending_labels == {str(first): 1, str(second): 1}
    assert browser.dropped == [third]
    saved = browser.save("two persons are cars, one box was no person")
    after = saved.arrow_column("objects").to_pylist()
    changed = {r for r in range(len(ds)) if after[r] != before[r]}
    assert changed == {where[p][0] for p in (first, second, third)}
    for p in (first, second):
        row, box = where[p]
        dropped_before = 1 if where[third][0] == row and where[third][1] < box else 0
        assert after[row][box - dropped_before]["category"] == 1
    row, box = where[third]
    assert len(after[row]) == len(before[row]) - 1
    assert before[row][box]["bbox"] not in [b["bbox"] for b in after[row]]
    # the browser now shows the saved version's boxes: one fewer, three fewer persons
    assert len(browser.patches) == len(patches) - 1
    assert browser.label_counts[0] == len(patches.where(cls="person")) - 3
    assert browser.draft is None
    assert browser.pending == ""
    assert saved.ref in browser.status


def test_edits_go_on_from_a_draft_made_in_code(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, images=6)
    draft = ds.drop_boxes({0: [0]})
    browser = ds.patches("objects").browse(draft=draft)
    assert browser.dropped == [0]
    browser.selected = [1]
    browser.relabel_selection("dog")
    assert browser.draft is not None
    assert browser.draft.pending_edits.box_edits[(0, "objects")] == (("drop", 0),)
    assert browser.draft.pending_edits.box_edits[(1, "objects")] == (("relabel", 0, 2),)
    browser.discard()
    assert browser.dropped == []
    assert browser.pending_labels == {}
    with pytest.raises(InvalidOptionError, match="no pending box edits"):
        browser.save()


def test_the_patches_repr_is_a_strip_of_crops_with_class_names(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, images=10, scores=True)
    shown = ds.patches("objects")._repr_html_()
    assert "19 boxes on 10 images" in shown
    assert shown.count("<img ") == 12
    assert "person" in shown
    assert "car" in shown


def test_closing_the_browser_removes_the_boxes_index(tmp_path: Path) -> None:
    browser = _dataset(tmp_path, images=6).patches("objects").browse()
    home = Path(browser._home)
    assert list(home.glob("patches/versions/*/_metadata.json"))
    browser.close()
    assert not home.exists()


def test_the_detail_of_a_tile_is_its_crop_and_its_box_s_fields(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, images=6)
    patches = ds.patches("objects")
    browser = patches.browse()
    reply, buffers = invoke(browser, "detail", {"row": 3})
    where = patches.table.slice(3, 1).to_pylist()[0]
    crop = PILImage.open(io.BytesIO(buffers[0]))
    assert crop.size == (int(where["bbox"][2]), int(where["bbox"][3]))
    assert reply["image"]["format"] == f"crop of image row {where['row']}, box {where['box']}"
    fields = dict(reply["fields"])
    assert fields["category"] == f"{where['category']} ({NAMES.index(where['category'])})"
    assert fields["row"] == str(where["row"])


@pytest.mark.filterwarnings("error")
def test_a_draft_of_other_rows_is_refused(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, images=6)
    with pytest.raises(InvalidOptionError, match=r"draft\.origin\.patches"):
        ds[2:4].patches("objects").browse(draft=ds.drop_boxes({0: [0]}))


def test_the_patches_of_a_view_edit_the_view_s_rows(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, images=6)
    view = ds[2:4]
    before = view.arrow_column("objects").to_pylist()
    browser = view.patches("objects").browse()
    browser.selected = [0]
    browser.relabel_selection("dog")
    saved = browser.save("the view's first box is a dog")
    after = saved.arrow_column("objects").to_pylist()
    assert len(saved) == 2
    assert after[0][0]["category"] == 2
    assert after[1] == before[1]


@pytest.mark.filterwarnings("error")
def test_a_dataset_without_boxes_browses_an_empty_grid(tmp_path: Path) -> None:
    features = se.Features(image=se.Image(), objects=se.Boxes(names=NAMES))
    rows = [{"image": np.zeros((8, 8, 3), np.uint8), "objects": []} for _ in range(3)]
    ds = se.build(rows, features, name="empty", home=tmp_path / "home", progress=False)
    browser = ds.patches("objects").browse()
    content, buffers = invoke(browser, "refresh")
    assert browser.num_rows == 0
    assert content["cells"] == []
    assert buffers == []
    assert "no rows" in content["empty"]


def test_where_the_widget_cannot_run_the_browser_shows_the_strip_of_crops(tmp_path: Path) -> None:
    browser = _dataset(tmp_path, images=6).patches("objects").browse()
    data, _ = browser._repr_mimebundle_()
    assert "patches of objects" in data["text/html"]
    assert data["text/html"].count("<img ") == 12
    assert "patches of objects" in browser.snapshot_html()
