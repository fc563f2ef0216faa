"""A Hugging Face detection set (objects = bbox + ClassLabel category) comes in as Boxes when asked, in both layouts."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se

NAMES = ["coverall", "face_shield", "gloves"]
ROWS = [
    [{"id": 1, "area": 6.0, "bbox": [1.0, 2.0, 3.0, 2.0], "category": 2}],
    [],  # an image without boxes
    [
        {"id": 5, "area": 2.0, "bbox": [0.0, 0.0, 1.0, 2.0], "category": 0},
        {"id": 6, "area": 1.0, "bbox": [4.5, 4.0, 1.0, 1.0], "category": 1},
    ],
]


def _hf(layout: str) -> datasets.Dataset:
    label = datasets.ClassLabel(names=NAMES)
    fields = {"id": datasets.Value("int64"), "area": datasets.Value("float32"), "category": label}
    if layout == "list of dicts":
        objects: object = datasets.List({**fields, "bbox": datasets.List(datasets.Value("float32"), length=4)})
        data: list[object] = ROWS
    else:  # Sequence of a dict: datasets stores it as a dict of lists
        objects = datasets.Sequence({**fields, "bbox": datasets.Sequence(datasets.Value("float32"), length=4)})
        data = [{k: [box[k] for box in row] for k in ("id", "area", "bbox", "category")} for row in ROWS]
    images = [PILImage.fromarray(np.full((20, 30, 3), i, np.uint8)) for i in range(len(ROWS))]
    features = datasets.Features(image=datasets.Image(), objects=objects)
    return datasets.Dataset.from_dict({"image": images, "objects": data}, features=features)


@pytest.mark.parametrize("layout", ["list of dicts", "sequence of a dict"])
def test_from_hf_with_a_boxes_feature_keeps_every_box(tmp_path: Path, layout: str) -> None:
    hf = _hf(layout)
    features = se.Features(image=se.Image(), objects=se.Boxes(names=NAMES))
    ds = se.from_hf(hf, features, name="cppe", home=tmp_path, progress=False)
    assert ds.features["objects"] == se.Boxes(names=NAMES)
    for position, boxes in enumerate(ROWS):
        got = ds[position]["objects"]
        assert got["bbox"] == [box["bbox"] for box in boxes]
        assert got["category"] == [box["category"] for box in boxes]
        assert got["id"] == [box["id"] for box in boxes]
        assert got.get("area", []) == [box["area"] for box in boxes]
    back = ds.to_hf()
    assert back.features["objects"].feature["category"].names == NAMES  # class names travel with the column
    assert [box["bbox"] for box in back[2]["objects"]] == [box["bbox"] for box in ROWS[2]]
