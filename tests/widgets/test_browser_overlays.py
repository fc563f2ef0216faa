"""Boxes over the thumbnails: each page (and the detail pane) carries every cell's boxes, as fractions of its image."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import Boxes, ClassLabel, Features, Image
from tests.widgets.commands import invoke

pytest.importorskip("anywidget", reason="the lab extra is part of the test extras")

NAMES = ["cat", "dog", "bird"]


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (width, height), (90, 120, 150)).save(buffer, format="PNG")
    return buffer.getvalue()


def _close(sent: list[float], expected: list[float]) -> None:
    assert sent == pytest.approx(expected, abs=1e-4)


def test_a_page_carries_each_cells_boxes_scaled_to_its_image(tmp_path: Path) -> None:
    # images of three sizes, boxes in pixels (xyxy) and a second column normalized (cxcywh) with scores
    sizes = [(200, 100), (50, 150), (64, 64), (80, 40)]
    rows = [
        {
            "image": _png(200, 100),
            "truth": [{"bbox": [20, 10, 120, 60], "category": "dog"}, {"bbox": [0, 0, 200, 100], "category": 2}],
            "guess": {"bbox": [[0.5, 0.5, 0.2, 0.4]], "category": ["dog"], "score": [0.75]},
        },
        {"image": _png(50, 150), "truth": [{"bbox": [5, 30, 45, 150], "category": "cat"}], "guess": []},
        {"image": _png(64, 64), "truth": [], "guess": None},
        {
            "image": _png(80, 40),
            "truth": None,
            "guess": {"bbox": [[0.25, 0.5, 0.5, 1.0]], "category": [0], "score": [0.125]},
        },
    ]
    features = Features(
        image=Image(),
        truth=Boxes(names=NAMES, format="xyxy"),
        guess=Boxes(names=NAMES, format="cxcywh", normalized=True),
        label=ClassLabel(names=["a", "b"]),
    )
    ds = se.build(
        [{**r, "label": i % 2} for i, r in enumerate(rows)], features, name="boxes", home=tmp_path, progress=False
    )
    browser = ds.browse(page_size=24)
    assert browser.label_fields == [
        {"name": "truth", "kind": "boxes", "names": NAMES, "role": "truth"},
        {"name": "guess", "kind": "boxes", "names": NAMES, "role": "truth"},
    ]
    content, buffers = invoke(browser, "refresh")
    cells = content["cells"]
    assert len(buffers) == 4  # still one message, one buffer per thumbnail; the boxes travel in its JSON
    assert [c["overlays"]["size"] for c in cells] == [list(s) for s in sizes]
    first = cells[0]["overlays"]["boxes"]
    assert [b[4:] for b in first["truth"]] == [[1, None], [2, None]]  # class index, no score
    _close(first["truth"][0][:4], [0.1, 0.1, 0.6, 0.6])
    _close(first["truth"][1][:4], [0.0, 0.0, 1.0, 1.0])
    _close(first["guess"][0][:4], [0.4, 0.3, 0.6, 0.7])  # centre 0.5, 0.5, size 0.2 x 0.4
    assert first["guess"][0][4:] == [1, 0.75]
    second = cells[1]["overlays"]["boxes"]
    _close(second["truth"][0][:4], [0.1, 0.2, 0.9, 1.0])
    assert second["guess"] == []
    assert cells[2]["overlays"]["boxes"] == {"truth": [], "guess": None}  # no boxes, and no value
    fourth = cells[3]["overlays"]["boxes"]
    assert fourth["truth"] is None
    _close(fourth["guess"][0][:4], [0.0, 0.0, 0.5, 1.0])
    assert fourth["guess"][0][4:] == [0, 0.125]
    # the detail pane gets the same
    detail, _ = invoke(browser, "detail", {"row": 0, "step": 0})
    assert detail["overlays"] == cells[0]["overlays"]
    # a filtered page: each cell keeps its own boxes
    browser.label_filter = [1]
    content, _ = browser.page_message()
    assert [c["row"] for c in content["cells"]] == [1, 3]
    assert content["cells"][0]["overlays"] == cells[1]["overlays"]
    assert content["cells"][1]["overlays"] == cells[3]["overlays"]


def _coco(folder: Path) -> tuple[Path, Path, Path, dict[int, list[dict]]]:
    """A COCO file with non-contiguous category ids, images of several sizes (one without boxes), and predictions."""
    rng = np.random.default_rng(35)
    images_dir = folder / "images"
    images_dir.mkdir(parents=True)
    categories = [{"id": 2, "name": "person"}, {"id": 5, "name": "car"}, {"id": 9, "name": "dog"}]
    images, annotations, predictions = [], [], []
    expected: dict[int, list[dict]] = {}
    for image_id in range(1, 9):
        width, height = int(rng.integers(40, 160)), int(rng.integers(40, 160))
        PILImage.new("RGB", (width, height), (image_id * 20, 80, 120)).save(images_dir / f"{image_id}.jpg")
        images.append({"id": image_id, "file_name": f"{image_id}.jpg", "width": width, "height": height})
        expected[image_id] = []
        for _ in range(0 if image_id == 4 else int(rng.integers(1, 5))):
            w, h = float(rng.integers(2, width // 2)), float(rng.integers(2, height // 2))
            x, y = float(rng.integers(0, width - int(w))), float(rng.integers(0, height - int(h)))
            category = categories[int(rng.integers(0, 3))]
            annotations.append({"id": len(annotations) + 100, "image_id": image_id, "category_id": category["id"],
                                "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0})  # fmt: skip
            score = round(float(rng.uniform(0.05, 1.0)), 3)
            predictions.append(
                {"image_id": image_id, "category_id": category["id"], "bbox": [x + 1, y, w, h], "score": score}
            )
            expected[image_id].append({"xywh": [x, y, w, h], "class": categories.index(category), "score": score,
                                       "size": (width, height)})  # fmt: skip
    path = folder / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    results = folder / "results.json"
    results.write_text(json.dumps(predictions))
    return path, images_dir, results, expected


def test_a_coco_set_sends_every_box_with_its_class_and_score(tmp_path: Path) -> None:
    path, images_dir, results, expected = _coco(tmp_path)
    ds = se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)
    browser = ds.browse(page_size=24)
    assert [f["name"] for f in browser.label_fields] == ["objects", "predictions"]
    assert browser.label_fields[0]["names"] == ["person", "car", "dog"]
    content, _ = browser.page_message()
    assert len(content["cells"]) == 8
    for cell in content["cells"]:
        image_id = ds[cell["row"]]["image_id"]
        boxes = expected[image_id]
        overlays = cell["overlays"]
        width, height = overlays["size"]
        assert (width, height) == next((b["size"] for b in boxes), (width, height))
        assert len(overlays["boxes"]["objects"]) == len(boxes) == len(overlays["boxes"]["predictions"])
        for want, truth, guess in zip(
            boxes, overlays["boxes"]["objects"], overlays["boxes"]["predictions"], strict=True
        ):
            x, y, w, h = want["xywh"]
            _close(truth[:4], [x / width, y / height, (x + w) / width, (y + h) / height])
            assert truth[4:] == [want["class"], None]
            _close(guess[:4], [(x + 1) / width, y / height, (x + 1 + w) / width, (y + h) / height])
            assert guess[4] == want["class"]
            assert guess[5] == pytest.approx(want["score"], abs=1e-4)
    # image 4 has no boxes and is still a cell, with empty lists
    empty = next(c for c in content["cells"] if ds[c["row"]]["image_id"] == 4)
    assert empty["overlays"]["boxes"] == {"objects": [], "predictions": []}


def test_a_dataset_without_boxes_sends_what_it_sent_before(pets: se.CachedDataset) -> None:
    browser = pets.browse(page_size=24)
    assert browser.label_fields == []
    content, _ = browser.page_message()
    assert all("overlays" not in cell for cell in content["cells"])


def test_a_row_without_its_image_gets_no_pixel_boxes_rather_than_wrong_ones(tmp_path: Path) -> None:
    features = Features(image=Image(), truth=Boxes(names=NAMES))
    rows = [{"image": None, "truth": [{"bbox": [1, 2, 3, 4], "category": "cat"}]}, {"image": _png(10, 20), "truth": []}]
    ds = se.build(rows, features, name="missing", home=tmp_path, progress=False)
    content, _ = ds.browse().page_message()
    assert content["cells"][0]["overlays"] == {"size": None, "boxes": {"truth": None}}
    assert content["cells"][1]["overlays"] == {"size": [10, 20], "boxes": {"truth": []}}


def test_a_mask_column_travels_as_a_small_png_of_class_indexes(tmp_path: Path) -> None:
    # a 300 x 200 mask: left third cat (1), a dog (2) block, 255 ("ignore") in a corner, the rest background
    label_map = np.zeros((200, 300), dtype=np.uint8)
    label_map[:, :100] = 1
    label_map[50:150, 150:250] = 2
    label_map[:10, -10:] = 255
    features = Features(image=Image(), seg=se.Mask(names=["background", "cat", "dog"]), objects=Boxes(names=NAMES))
    rows = [
        {"image": _png(300, 200), "seg": label_map, "objects": [{"bbox": [0, 0, 100, 200], "category": "cat"}]},
        {"image": _png(30, 20), "seg": None, "objects": []},
    ]
    ds = se.build(rows, features, name="seg", home=tmp_path, progress=False)
    browser = ds.browse(page_size=24, thumb_size=128)
    assert browser.label_fields[0] == {
        "name": "seg",
        "kind": "mask",
        "names": ["background", "cat", "dog"],
        "background": True,
    }
    content, buffers = invoke(browser, "refresh")
    first, second = content["cells"]
    mask = first["overlays"]["masks"]["seg"]
    assert mask["size"] == [128, 85]  # fits the thumbnail, aspect kept
    assert mask["classes"] == [0, 1, 2, 255]
    assert len(buffers) == 3  # two thumbnails and one mask, in the page's one message
    assert first["buffer"] == 0
    assert second["buffer"] == 2
    assert mask["buffer"] == 1
    small = np.asarray(PILImage.open(io.BytesIO(buffers[mask["buffer"]])))
    assert small.shape == (85, 128)
    assert set(np.unique(small).tolist()) == {0, 1, 2, 255}  # nearest neighbour: no class made of two
    assert (small[:, :40] == 1).all()
    assert small[42, 85] == 2
    assert second["overlays"]["masks"] == {"seg": None}
    assert first["overlays"]["boxes"]["objects"] == [[0.0, 0.0, pytest.approx(1 / 3, abs=1e-4), 1.0, 0, None]]
    # the detail pane: the mask larger (up to 512 px), after the image's buffer
    detail, detail_buffers = invoke(browser, "detail", {"row": 0, "step": 0})
    assert detail["overlays"]["masks"]["seg"]["buffer"] == 1
    assert detail["overlays"]["masks"]["seg"]["size"] == [300, 200]
    assert np.array_equal(np.asarray(PILImage.open(io.BytesIO(detail_buffers[1]))), label_map)


def test_box_filters_keep_the_images_with_a_matching_box(tmp_path: Path) -> None:
    path, images_dir, results, expected = _coco(tmp_path)
    ds = se.from_coco(path, images_dir, predictions=results, name="coco", home=tmp_path / "home", progress=False)
    browser = ds.browse(page_size=24)
    assert {
        "name": "objects",
        "kind": "boxes",
        "names": ["person", "car", "dog"],
        "normalized": False,
    } in browser.fields
    image_ids = [ds[r]["image_id"] for r in range(len(ds))]

    def rows_where(keep: Any) -> list[int]:
        return [r for r, image_id in enumerate(image_ids) if keep(expected[image_id])]

    # "images with a dog smaller than 300 px²", as the filter bar sends it
    invoke(browser, "where_boxes", {"column": "objects", "cls": 2, "max_area": 300, "min_area": None})
    want = rows_where(lambda boxes: any(b["class"] == 2 and b["xywh"][2] * b["xywh"][3] <= 300 for b in boxes))
    assert 0 < len(want) < len(ds)
    assert browser.page_rows().tolist() == want
    assert browser.field_filters == [
        {"column": "objects", "boxes": True, "class": 2, "class_name": "dog", "max_area": 300.0}
    ]
    assert "objects: a box of dog, area ≤ 300" in browser.empty_reason()
    # predictions scored 0.5 or more, besides (the two filters combine)
    browser.where_boxes("predictions", min_score=0.5)
    want_scored = rows_where(lambda boxes: any(b["score"] >= 0.5 for b in boxes))
    assert browser.page_rows().tolist() == sorted(set(want) & set(want_scored))
    browser.where_boxes("objects")  # removed: the predictions' filter stays
    assert browser.page_rows().tolist() == want_scored
    # the images without boxes
    browser.clear_filters()
    browser.where_boxes("objects", max_count=0)
    assert [image_ids[r] for r in browser.page_rows().tolist()] == [4]
    with pytest.raises(se.InvalidOptionError, match="the Boxes columns are \\['objects', 'predictions'\\]"):
        browser.where_boxes("image_id", cls="dog")
    with pytest.raises(se.EncodingError, match="cat"):
        browser.where_boxes("objects", cls="cat")


def test_keypoints_travel_as_fractions_of_the_image_with_their_skeleton(tmp_path: Path) -> None:
    points = se.Keypoints(names=["head", "hip", "foot"], skeleton=[("head", "hip"), ("hip", "foot")])
    features = Features(image=Image(), pose=points)
    rows = [
        {
            "image": _png(200, 100),
            "pose": [[[20, 10, 2], [100, 50, 1], [0, 0, 0]], [[200, 100, 2], [0, 0, 0], [50, 25, 2]]],
        },
        {"image": _png(10, 10), "pose": None},
    ]
    ds = se.build(rows, features, name="pose", home=tmp_path, progress=False)
    browser = ds.browse()
    assert browser.label_fields == [
        {"name": "pose", "kind": "keypoints", "names": ["head", "hip", "foot"], "skeleton": [[0, 1], [1, 2]]}
    ]
    content, _ = browser.page_message()
    first, second = (c["overlays"]["keypoints"]["pose"] for c in content["cells"])
    _close(first[0], [0.1, 0.1, 2, 0.5, 0.5, 1, 0, 0, 0])
    _close(first[1], [1.0, 1.0, 2, 0, 0, 0, 0.25, 0.25, 2])
    assert second is None
