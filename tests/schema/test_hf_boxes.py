"""A Hugging Face detection set (objects = bbox + ClassLabel category) comes in as Boxes and goes back as it came."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.schema.hf_boxes import box_layout

NAMES = ["coverall", "face_shield", "gloves"]
ROWS = [
    [{"id": 1, "area": 6.0, "bbox": [1.0, 2.0, 3.0, 2.0], "category": 2}],
    [],  # an image without boxes
    [
        {"id": 5, "area": 2.5, "bbox": [0.0, 0.0, 1.0, 2.5], "category": 0},
        {"id": 6, "area": 1.0, "bbox": [4.5, 4.0, 1.0, 1.0], "category": 1},
    ],
]
LAYOUTS = ["list of dicts", "sequence of a dict"]


def _hf(layout: str, *, label: str = "category") -> datasets.Dataset:
    """cppe-5's shape: image, image_id, objects {id, area, bbox, category}, in either of datasets' two layouts."""
    fields = {"id": datasets.Value("int64"), "area": datasets.Value("float32")}
    fields[label] = datasets.ClassLabel(names=NAMES)
    rows = [[{(label if k == "category" else k): v for k, v in box.items()} for box in row] for row in ROWS]
    if layout == "list of dicts":
        objects: object = datasets.List({**fields, "bbox": datasets.List(datasets.Value("float32"), length=4)})
        data: list[object] = list(rows)
    else:  # Sequence of a dict: datasets stores it as a dict of lists
        objects = datasets.Sequence({**fields, "bbox": datasets.Sequence(datasets.Value("float32"), length=4)})
        data = [{k: [box[k] for box in row] for k in ("id", "area", label, "bbox")} for row in rows]
    images = [PILImage.fromarray(np.full((20, 30, 3), i, np.uint8)) for i in range(len(ROWS))]
    features = datasets.Features(image=datasets.Image(), image_id=datasets.Value("int64"), objects=objects)
    return datasets.Dataset.from_dict({"image": images, "image_id": [10, 11, 12], "objects": data}, features=features)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_from_hf_reads_a_detection_column_as_boxes_and_to_hf_gives_its_features_back(
    tmp_path: Path, layout: str
) -> None:
    hf = _hf(layout)
    ds = se.from_hf(hf, name="cppe", home=tmp_path, progress=False)  # no features= needed
    assert ds.features["objects"] == se.Boxes(names=NAMES), "xywh pixels, the class names of the ClassLabel"
    assert ds.features["image_id"] == se.Value("int64")
    for position, boxes in enumerate(ROWS):
        got = ds[position]["objects"]
        assert got["bbox"] == [box["bbox"] for box in boxes]
        assert got["category"] == [box["category"] for box in boxes]
        assert got["id"] == [box["id"] for box in boxes]
        assert got.get("area", []) == [box["area"] for box in boxes]
    assert se.load("cppe", home=tmp_path).features["objects"].hf_feature == hf.features.to_dict()["objects"]

    back = ds.to_hf()
    assert back.features["objects"] == hf.features["objects"], "the same datasets feature, field for field"
    assert back["objects"] == hf["objects"], "every value equal"
    assert back["image_id"] == hf["image_id"]
    again = se.from_hf(back, name="again", home=tmp_path, progress=False)
    assert again.version == ds.version, "the same rows build the same version"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_our_boxes_feature_over_a_detection_column_also_goes_back_as_it_came(tmp_path: Path, layout: str) -> None:
    hf = _hf(layout)
    features = se.Features(image=se.Image(), objects=se.Boxes(names=NAMES))
    ds = se.from_hf(hf, features, name="cppe", home=tmp_path, progress=False)
    assert list(ds.features) == ["image", "objects"]
    assert ds[2]["objects"]["bbox"] == [box["bbox"] for box in ROWS[2]]
    back = ds.to_hf()
    assert back.features["objects"] == hf.features["objects"]
    assert back["objects"] == hf["objects"]


def test_a_box_edit_goes_back_to_datasets_in_the_columns_shape(tmp_path: Path) -> None:
    hf = _hf("sequence of a dict")
    ds = se.from_hf(hf, name="cppe", home=tmp_path, progress=False)
    fixed = ds.relabel_boxes({2: {0: "gloves"}}).drop_boxes({2: [1]}).save(message="two box fixes")
    back = fixed.to_hf()
    assert back.features["objects"] == hf.features["objects"]
    assert back[2]["objects"] == {"id": [5], "area": [2.5], "bbox": [[0.0, 0.0, 1.0, 2.5]], "category": [2]}
    added = fixed.set_boxes(1, [{"bbox": [1, 1, 2, 2], "category": "coverall"}]).save(message="a box added")
    assert added.to_hf()[1]["objects"] == {
        "id": [None],
        "area": [None],
        "bbox": [[1.0, 1.0, 2.0, 2.0]],
        "category": [0],
    }


def test_a_class_field_named_label_and_other_box_formats(tmp_path: Path) -> None:
    hf = _hf("list of dicts", label="label")
    assert box_layout(hf.features.to_dict()["objects"]) == ("list", "label")
    ds = se.from_hf(hf, name="labelled", home=tmp_path, progress=False, box_format="cxcywh", box_normalized=False)
    assert ds.features["objects"] == se.Boxes(names=NAMES, format="cxcywh")
    assert ds[0]["objects"]["category"] == [2]
    back = ds.to_hf()
    assert back.features["objects"] == hf.features["objects"]
    assert back["objects"] == hf["objects"]
    kept = se.from_hf(hf, name="kept", home=tmp_path, progress=False, box_format=None)
    assert isinstance(kept.features["objects"], se.Sequence), "box_format=None keeps the list of dicts"


def test_a_box_that_does_not_fit_the_format_says_how_to_read_it_otherwise(tmp_path: Path) -> None:
    hf = _hf("list of dicts")  # xywh boxes: read as corners, [4.5, 4, 1, 1] has a negative width
    with pytest.raises(se.EncodingError, match=r"row 2, key 2, field 'objects': box 1: .* negative width") as caught:
        se.from_hf(hf, name="corners", home=tmp_path, progress=False, box_format="xyxy")
    assert "pass box_format='xywh' or 'cxcywh'" in str(caught.value)
    assert "nothing was saved" in "\n".join(getattr(caught.value, "__notes__", ["nothing was saved"]))


def test_to_parquet_and_back_keeps_the_boxes(tmp_path: Path) -> None:
    hf = _hf("sequence of a dict")
    ds = se.from_hf(hf, name="cppe", home=tmp_path / "home", progress=False)
    path = ds.to_parquet(tmp_path / "cppe.parquet")
    assert datasets.Dataset.from_parquet(str(path)).features["objects"] == hf.features["objects"]
    back = se.from_parquet(path, home=tmp_path / "home", progress=False)
    assert back.features["objects"] == ds.features["objects"]
    assert [back[i]["objects"] for i in range(3)] == [ds[i]["objects"] for i in range(3)]
    assert ds.to_dict()["objects"] == hf["objects"][:], "plain values as datasets gives them"


def test_not_every_list_of_dicts_is_boxes(tmp_path: Path) -> None:
    no_names = datasets.Features(
        objects=datasets.List(
            {"bbox": datasets.List(datasets.Value("float32"), length=4), "category": datasets.Value("int64")}
        )
    )
    hf = datasets.Dataset.from_dict({"objects": [[{"bbox": [0, 0, 1, 1], "category": 3}]]}, features=no_names)
    ds = se.from_hf(hf, name="ints", home=tmp_path, progress=False)
    assert isinstance(ds.features["objects"], se.Sequence), "a class without names stays a list of dicts"
    with pytest.raises(se.SchemaError, match="hf_feature must be a Hugging Face detection column"):
        se.Boxes(names=["a"], hf_feature=no_names.to_dict()["objects"])
    with pytest.raises(se.InvalidOptionError, match=r"box_format must be one of \['xywh', 'xyxy', 'cxcywh'\] or None"):
        se.from_hf(hf, name="ints", home=tmp_path, progress=False, box_format="ltrb")
