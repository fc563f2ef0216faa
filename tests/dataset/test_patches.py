"""ds.patches(column): one row per box, its crop cut from the image as shown, with len, indexing, filters, to_pandas."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from tests.io.test_exif_rotation import BOX, SHOWN, sideways_jpeg

NAMES = ["person", "car", "dog"]
COLOURS = {"person": (250, 0, 0), "car": (0, 250, 0), "dog": (0, 0, 250)}
# per image: (x, y, w, h, class) of ground truth; each box painted in its class's colour
TRUTH = {
    1: [(4, 6, 20, 12, "person"), (40, 10, 16, 24, "car")],
    2: [(10, 10, 30, 20, "dog")],
    3: [],
}
# predictions: (x, y, w, h, class, score)
PREDICTED = {1: [(4, 6, 20, 12, "person", 0.9), (40, 10, 16, 24, "dog", 0.4)], 2: [(10, 10, 30, 20, "dog", 0.8)]}


def _coco(folder: Path) -> se.CachedDataset:
    folder.mkdir(parents=True)
    ids = {"person": 1, "car": 3, "dog": 7}
    for image_id, boxes in TRUTH.items():
        pixels = np.full((48, 64, 3), 128, np.uint8)
        for x, y, w, h, cls in boxes:
            pixels[y : y + h, x : x + w] = COLOURS[cls]
        PILImage.fromarray(pixels).save(folder / f"{image_id}.png")
    annotations = [
        {"id": 100 * image_id + i, "image_id": image_id, "category_id": ids[c], "bbox": [x, y, w, h]}
        for image_id, boxes in TRUTH.items()
        for i, (x, y, w, h, c) in enumerate(boxes)
    ]
    coco = {
        "images": [{"id": i, "file_name": f"{i}.png", "width": 64, "height": 48} for i in TRUTH],
        "categories": [{"id": ids[n], "name": n} for n in NAMES],
        "annotations": annotations,
    }
    results = [
        {"image_id": image_id, "category_id": ids[c], "bbox": [x, y, w, h], "score": s}
        for image_id, boxes in PREDICTED.items()
        for x, y, w, h, c, s in boxes
    ]
    (folder / "truth.json").write_text(json.dumps(coco))
    (folder / "found.json").write_text(json.dumps(results))
    return se.from_coco(
        folder / "truth.json", folder, predictions=folder / "found.json", home=folder / "home", progress=False
    )


def _colour(crop: PILImage.Image) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(crop.convert("RGB")).reshape(-1, 3).mean(axis=0).round())


def test_one_row_per_box_with_its_crop_box_class_row_and_key(tmp_path: Path) -> None:
    ds = _coco(tmp_path / "coco")
    patches = ds.patches("objects")
    assert len(patches) == 3
    assert patches.num_rows == 3
    assert repr(patches) == "Patches(column='objects', patches=3, images=2)"
    first = patches[0]
    assert list(first) == ["image", "row", "key", "box", "category", "score", "bbox", "id"]
    expected = [(0, 1, 0, "person", 100), (0, 1, 1, "car", 101), (1, 2, 0, "dog", 200)]
    for patch, (row, key, box, cls, box_id) in zip(patches, expected, strict=True):
        assert (patch["row"], patch["key"], patch["box"], patch["category"], patch["id"]) == (
            row,
            key,
            box,
            cls,
            box_id,
        )
        x, y, w, h = TRUTH[key][box][:4]
        assert patch["bbox"] == [x, y, w, h]
        assert patch["score"] is None
        assert patch["image"].size == (w, h), "the crop is the box"
        assert _colour(patch["image"]) == COLOURS[cls], "cut from where the box is"
    assert patches[-1]["category"] == "dog"
    with pytest.raises(IndexError, match="patch 3 is out of range: this view has 3 patches"):
        patches[3]
    assert patches["category"] == ["person", "car", "dog"]
    # the row and box a patch names are what the box edits take
    fixed = ds.relabel_boxes({patches[1]["row"]: {patches[1]["box"]: "dog"}}).save(message="car -> dog")
    assert fixed.patches()["category"] == ["person", "dog", "dog"]


def test_views_filters_and_sorts_never_lose_the_box_they_point_at(tmp_path: Path) -> None:
    predictions = _coco(tmp_path / "coco").patches("predictions")
    assert predictions["score"] == pytest.approx([0.9, 0.4, 0.8])
    ranked = predictions.sort("score", reverse=True)
    assert ranked["score"] == pytest.approx([0.9, 0.8, 0.4])
    assert [(p["key"], p["box"]) for p in ranked] == [(1, 0), (2, 0), (1, 1)]
    confident = predictions.where(min_score=0.5)
    assert confident["category"] == ["person", "dog"]
    dogs = predictions.where(cls="dog")
    assert [(p["key"], p["box"], p["category"]) for p in dogs] == [(1, 1, "dog"), (2, 0, "dog")]
    assert _colour(dogs[0]["image"]) == COLOURS["car"], "a dog predicted over a car: the crop shows the car"
    assert predictions.where(min_area=500)["key"] == [2]
    assert predictions.where(cls=["person", "car"], max_score=0.95)["key"] == [1]
    assert predictions.filter(lambda p: p["key"] == 1 and p["box"] == 1)["score"] == pytest.approx([0.4])
    assert predictions[1:]["box"] == [1, 0]
    assert predictions[::-1]["key"] == [2, 1, 1]
    assert predictions[[2, 0]]["key"] == [2, 1]
    assert predictions.select(np.array([1]))["category"] == ["dog"]
    assert len(predictions.where(rows=[1])) == 1
    with pytest.raises(se.InvalidOptionError, match=r"no class \['cat'\] in column 'predictions'"):
        predictions.where(cls="cat")


def test_to_pandas_gives_the_fields_and_the_crops_or_their_thumbnails(tmp_path: Path) -> None:
    patches = _coco(tmp_path / "coco").patches()
    plain = patches.to_pandas(images="drop")
    assert list(plain.columns) == ["row", "key", "box", "category", "score", "bbox", "id"]
    assert plain.index.name == "patch"
    assert plain["category"].tolist() == ["person", "car", "dog"]
    whole = patches.to_pandas(images="pil")
    assert [im.size for im in whole["image"]] == [(20, 12), (16, 24), (30, 20)]
    small = patches.to_pandas(thumbnail_size=8)
    assert all(max(im.size) <= 8 for im in small["image"])
    assert [_colour(im) for im in small["image"]] == [COLOURS["person"], COLOURS["car"], COLOURS["dog"]]
    with pytest.raises(se.InvalidOptionError, match="images must be one of"):
        patches.to_pandas(images="bytes")


def test_a_view_of_the_dataset_and_normalized_boxes(tmp_path: Path) -> None:
    ds = _coco(tmp_path / "coco")
    assert ds.select([1, 2]).patches()["row"] == [0], "rows of the view"
    features = se.Features(image=se.Image(), objects=se.Boxes(names=NAMES, format="cxcywh", normalized=True))
    pixels = np.zeros((40, 80, 3), np.uint8)
    pixels[10:30, 20:40] = COLOURS["dog"]
    row = {"image": pixels, "objects": [{"bbox": [0.375, 0.5, 0.25, 0.5], "category": "dog"}]}
    yolo = se.build([row], features, name="yolo", home=tmp_path / "home", progress=False)
    crop = yolo.patches()[0]["image"]
    assert crop.size == (20, 20)
    assert _colour(crop) == COLOURS["dog"]


def test_a_sideways_photo_is_cropped_as_shown(tmp_path: Path) -> None:
    features = se.Features(image=se.Image(), objects=se.Boxes(names=["block"]))
    row = {"image": sideways_jpeg(6), "objects": [{"bbox": BOX, "category": "block"}]}
    ds = se.build([row], features, name="turned", home=tmp_path, progress=False)
    crop = ds.patches()[0]["image"]
    assert crop.size == (BOX[2], BOX[3])
    red, green, _ = _colour(crop)
    assert red - green > 150, "the red block, as the box (in the shown image's pixels) says"
    assert SHOWN == (60, 40)


def test_a_column_that_is_not_boxes_is_refused_naming_the_boxes_columns(tmp_path: Path) -> None:
    ds = _coco(tmp_path / "coco")
    with pytest.raises(
        se.SchemaError, match=r"column 'file_name' is .*not Boxes; the Boxes columns are \['objects', 'predictions'\]"
    ):
        ds.patches("file_name")
    with pytest.raises(se.ColumnNotFoundError, match="no column 'boxes'"):
        ds.patches("boxes")
