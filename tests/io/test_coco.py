"""COCO in and out: ids kept, every box equal, read back by pycocotools; bad files refused before a build."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore import AnnotationError, InvalidOptionError

CATEGORIES = [{"id": 1, "name": "person"}, {"id": 3, "name": "car"}, {"id": 7, "name": "dog"}]
SIZES = {101: (64, 48), 205: (40, 30), 307: (32, 32), 400: (50, 20)}  # image id -> (width, height)


def coco_document() -> dict[str, Any]:
    images = [{"id": i, "file_name": f"img_{i}.png", "width": w, "height": h} for i, (w, h) in SIZES.items()]
    annotations = [
        {"id": 11, "image_id": 101, "category_id": 7, "bbox": [1.5, 2.25, 30.07, 20.0], "area": 601.4, "iscrowd": 0},
        {"id": 12, "image_id": 101, "category_id": 1, "bbox": [0, 0, 64, 48], "area": 3072.0, "iscrowd": 1,
         "segmentation": [[0, 0, 64, 0, 64, 48]]},
        {"id": 30, "image_id": 205, "category_id": 3, "bbox": [10.33, 5.91, 12.5, 7.77], "area": 97.125, "iscrowd": 0},
        {"id": 31, "image_id": 205, "category_id": 3, "bbox": [0.0, 0.0, 0.0, 0.0], "area": 0.0, "iscrowd": 0},
        {"id": 99, "image_id": 400, "category_id": 1, "bbox": [49.5, 19.5, 0.5, 0.5], "area": 0.25, "iscrowd": 0},
    ]  # fmt: skip
    return {"images": images, "annotations": annotations, "categories": CATEGORIES}


def write_set(folder: Path, document: dict[str, Any] | None = None) -> tuple[Path, Path]:
    images = folder / "images"
    images.mkdir(parents=True, exist_ok=True)
    for i, (w, h) in SIZES.items():
        PILImage.fromarray(np.full((h, w, 3), i % 256, dtype=np.uint8)).save(images / f"img_{i}.png")
    path = folder / "instances.json"
    path.write_text(json.dumps(document or coco_document()))
    return path, images


PREDICTIONS = [
    {"image_id": 101, "category_id": 7, "bbox": [2.0, 2.5, 29.0, 21.0], "score": 0.91},
    {"image_id": 307, "category_id": 3, "bbox": [5.0, 5.0, 40.0, 10.0], "score": 0.125},  # leaves the image: kept
]


def test_from_coco_keeps_every_id_box_and_attribute(tmp_path: Path) -> None:
    annotations, images = write_set(tmp_path)
    (tmp_path / "predictions.json").write_text(json.dumps(PREDICTIONS))
    ds = se.from_coco(
        annotations, images, predictions=tmp_path / "predictions.json", home=tmp_path / "h", progress=False
    )
    assert list(ds.features) == ["image", "objects", "image_id", "file_name", "width", "height", "predictions"]
    assert ds.features["objects"].names == ("person", "car", "dog")
    assert ds.features["objects"].category_ids == (1, 3, 7)
    assert ds.keys() == [101, 205, 307, 400]
    assert ds["image_id"] == [101, 205, 307, 400]
    assert ds[2]["objects"]["bbox"] == []  # the image without boxes is a row
    first = ds[0]
    assert first["objects"]["category"] == [2, 0]
    assert first["objects"]["id"] == [11, 12]
    assert first["objects"]["iscrowd"] == [0, 1]
    assert first["objects"]["segmentation"] == [None, [[0, 0, 64, 0, 64, 48]]]
    assert (first["width"], first["height"], first["file_name"]) == (64, 48, "img_101.png")
    assert first["image"].size == (64, 48)
    assert first["predictions"]["score"] == [pytest.approx(0.91)]
    assert ds[2]["predictions"]["bbox"] == [[5.0, 5.0, 40.0, 10.0]]
    again = se.from_coco(
        annotations, images, predictions=tmp_path / "predictions.json", home=tmp_path / "h", progress=False
    )
    assert again.version == ds.version
    assert again.build_info.startswith("reused")


def test_to_coco_is_read_by_pycocotools_with_every_box_equal(tmp_path: Path) -> None:
    from pycocotools.coco import COCO

    annotations, images = write_set(tmp_path)
    ds = se.from_coco(annotations, images, home=tmp_path / "h", progress=False)
    out = ds.to_coco(tmp_path / "out" / "instances.json", images_dir=tmp_path / "out" / "images")
    original, written = COCO(str(annotations)), COCO(str(out))
    assert sorted(written.getImgIds()) == sorted(original.getImgIds()) == sorted(SIZES)
    assert written.loadCats(written.getCatIds()) == CATEGORIES
    assert sorted(written.getAnnIds()) == sorted(original.getAnnIds())
    for annotation_id in original.getAnnIds():
        theirs, mine = original.anns[annotation_id], written.anns[annotation_id]
        assert mine == theirs, annotation_id  # bbox, category id, image id, area, iscrowd, segmentation
    for image_id in SIZES:
        assert written.imgs[image_id] == original.imgs[image_id]
        assert (tmp_path / "out" / "images" / f"img_{image_id}.png").read_bytes() == (
            images / f"img_{image_id}.png"
        ).read_bytes()
    assert written.getAnnIds(imgIds=[307]) == []
    again = se.from_coco(out, tmp_path / "out" / "images", name="again", home=tmp_path / "h", progress=False)
    assert again["objects"] == ds["objects"]
    assert ds.to_coco(out) == out  # a file to_coco wrote may be written again


def test_predictions_go_out_with_their_scores_and_load_as_results(tmp_path: Path) -> None:
    from pycocotools.coco import COCO

    annotations, images = write_set(tmp_path)
    (tmp_path / "predictions.json").write_text(json.dumps(PREDICTIONS))
    ds = se.from_coco(
        annotations, images, predictions=tmp_path / "predictions.json", home=tmp_path / "h", progress=False
    )
    out = ds.to_coco(tmp_path / "predictions_out.json", column="predictions")
    written = json.loads(out.read_text())["annotations"]
    assert [(a["image_id"], a["category_id"], a["bbox"], a["score"]) for a in written] == [
        (p["image_id"], p["category_id"], p["bbox"], p["score"]) for p in PREDICTIONS
    ]
    results = COCO(str(annotations)).loadRes(written)
    assert len(results.anns) == 2


def _broken(change: Any) -> dict[str, Any]:
    document = copy.deepcopy(coco_document())
    change(document)
    return document


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["annotations"][2].update(bbox=[30, 5, 12, 7]),
            r"instances.json, image 205, annotation 30: the box \[30, 5, 12, 7\] .* outside the 40 x 30 image",
        ),
        (
            lambda d: d["annotations"][0].update(category_id=2),
            r"image 101, annotation 11: category_id 2 has no name in 'categories' \(ids \[1, 3, 7\]\)",
        ),
        (
            lambda d: d["annotations"][4].update(image_id=999),
            r"annotation 99: its image_id 999 is no image",
        ),
        (
            lambda d: d["images"][1].update(width=-40),
            r"image 205: expected a positive int 'width' and 'height', got -40 x 30",
        ),
        (
            lambda d: d["annotations"][1].update(bbox=[1, 1, -2, 3]),
            r"image 101, annotation 12: the box \[1, 1, -2, 3\] has a negative size",
        ),
        (lambda d: d["images"][0].update(file_name="missing.png"), r"image 101: its file 'missing.png' is not in"),
        (lambda d: d["categories"].append({"id": 9, "name": "car"}), r"category 9 \('car'\) repeats"),
    ],
)
def test_bad_files_are_refused_naming_file_image_and_annotation_and_nothing_is_built(
    tmp_path: Path, change: Any, message: str
) -> None:
    annotations, images = write_set(tmp_path, _broken(change))
    with pytest.raises(AnnotationError, match=message):
        se.from_coco(annotations, images, home=tmp_path / "h", progress=False)
    assert not (tmp_path / "h").exists() or se.datasets(home=tmp_path / "h") == []


def test_exports_refuse_folders_and_files_they_did_not_write(tmp_path: Path) -> None:
    annotations, images = write_set(tmp_path)
    ds = se.from_coco(annotations, images, home=tmp_path / "h", progress=False)
    with pytest.raises(InvalidOptionError, match="exists and stable-explore did not write it"):
        ds.to_coco(annotations)
    assert json.loads(annotations.read_text()) == coco_document()
    with pytest.raises(InvalidOptionError, match=r"not empty \(.*\) and no stable-explore export wrote it"):
        ds.to_coco(tmp_path / "new.json", images_dir=images)
    assert not (tmp_path / "new.json").exists()
    with pytest.raises(InvalidOptionError, match="not empty"):
        ds.to_yolo(images)
    with pytest.raises(InvalidOptionError, match="inside the catalog home"):
        ds.to_coco(tmp_path / "h" / "instances.json")


def test_ids_written_as_whole_floats_still_find_their_image_and_category(tmp_path: Path) -> None:
    document = coco_document()
    document["annotations"][0].update(image_id=101.0, category_id=7.0)  # some tools write every number as a float
    annotations, images = write_set(tmp_path, document)
    ds = se.from_coco(annotations, images, home=tmp_path / "h", progress=False)
    assert ds[0]["objects"]["category"] == [2, 0]
    assert ds[0]["objects"]["id"] == [11, 12]


def test_to_coco_of_fractions_without_a_size_names_the_image_and_the_fix(tmp_path: Path) -> None:
    features = se.Features(objects=se.Boxes(names=["cat"], format="cxcywh", normalized=True))
    row = {"objects": {"bbox": [[0.5, 0.5, 0.2, 0.2]], "category": [0]}}
    ds = se.build([(4, row)], features, name="fractions", home=tmp_path / "h", progress=False)
    with pytest.raises(se.SchemaError, match=r"image 4 has normalized boxes but no size; add 'width' and 'height'"):
        ds.to_coco(tmp_path / "out.json")  # it multiplied by None (a TypeError) before


def test_to_coco_refuses_an_image_id_column_coco_cannot_hold(tmp_path: Path) -> None:
    features = se.Features(objects=se.Boxes(names=["cat"]), image_id=se.Value("float64"))
    row = {"objects": {"bbox": [[1, 2, 3, 4]], "category": [0]}, "image_id": 1.5}
    ds = se.build([("a", row)], features, name="floats", home=tmp_path / "h", progress=False)
    with pytest.raises(se.SchemaError, match=r"row 'a' \(index 0\): expected an int or str 'image_id', found 1\.5"):
        ds.to_coco(tmp_path / "out.json")
