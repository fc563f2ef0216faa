"""Boxes, Mask and Keypoints: how rows are written, read back, refused, and kept in a cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stable_explore as se
from stable_explore import Boxes, EncodingError, Features, Keypoints, Mask, SchemaError

NAMES = ["cat", "dog", "bird"]


def test_boxes_take_a_dict_of_lists_and_a_list_of_box_dicts_alike() -> None:
    boxes = Boxes(names=NAMES)
    columns = {"bbox": [[1, 2, 3, 4], [5, 6, 0, 0]], "category": ["dog", 2], "area": [12, 0], "iscrowd": [0, 1]}
    per_box = [
        {"bbox": [1, 2, 3, 4], "category": "dog", "area": 12, "iscrowd": 0},
        {"bbox": np.array([5, 6, 0, 0]), "category": "bird", "attributes": {"area": 0, "iscrowd": 1}},
    ]
    assert boxes.encode_value(columns) == boxes.encode_value(per_box)
    decoded = boxes.decode_value(boxes.encode_column([columns]).to_pylist()[0])
    assert decoded == {
        "bbox": [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 0.0, 0.0]],
        "category": [1, 2],
        "score": [None, None],
        "id": [None, None],
        "area": [12, 0],
        "iscrowd": [0, 1],
    }
    assert boxes.encode_value(decoded) == boxes.encode_value(columns)  # what is read writes the same again
    assert boxes.decode_value(boxes.encode_value([])) == {"bbox": [], "category": [], "score": [], "id": []}


def test_scores_ids_and_formats() -> None:
    boxes = Boxes(names=NAMES, format="xyxy")
    stored = boxes.encode_value([{"bbox": [1, 2, 4, 6], "category": 0, "score": 0.25, "id": 7}])
    assert stored == [{"bbox": [1.0, 2.0, 4.0, 6.0], "category": 0, "score": 0.25, "id": 7, "attributes": None}]
    assert se.schema.convert_box([1, 2, 4, 6], "xyxy", "cxcywh") == [2.5, 4.0, 3.0, 4.0]
    normalized = Boxes(names=NAMES, format="cxcywh", normalized=True)
    assert normalized.encode_value({"bbox": [[0.5, 0.5, 1, 1]], "category": [0]})[0]["bbox"] == [0.5, 0.5, 1, 1]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"bbox": [[1, 2, 3]], "category": ["cat"]}, r"box 0: expected 4 numbers for 'bbox'"),
        ({"bbox": [[1, 2, 3, 4]], "category": ["cta"]}, r"box 0: unknown class 'cta'.*did you mean 'cat'"),
        ({"bbox": [[1, 2, 3, 4]], "category": [9]}, r"box 0: unknown class 9"),
        ({"bbox": [[1, 2, 3, 4], [1, 2, -3, 4]], "category": [0, 0]}, r"box 1: bbox .* negative width"),
        ({"bbox": [[1, 2, 3, 4]], "category": [0, 1]}, r"as long as each other"),
        ([{"bbox": [1, 2, 3, float("nan")], "category": 0}], r"finite"),
        ([{"bbox": [1, 2, 3, 4]}], r"needs 'bbox' and 'category'"),
        ("cat", r"a dict of lists or a list of box dicts"),
    ],
)
def test_bad_boxes_are_refused_naming_the_box(value: Any, message: str) -> None:
    with pytest.raises(EncodingError, match=message):
        Boxes(names=NAMES).encode_value(value)


def test_normalized_boxes_stay_in_the_image_and_bad_schemas_are_refused() -> None:
    with pytest.raises(EncodingError, match=r"normalized .* outside \[0, 1\]"):
        Boxes(names=NAMES, normalized=True).encode_value({"bbox": [[0.5, 0.5, 0.6, 0.1]], "category": [0]})
    with pytest.raises(SchemaError, match="format must be one of"):
        Boxes(names=NAMES, format="ltrb")
    with pytest.raises(SchemaError, match="unique"):
        Boxes(names=["a", "a"])
    with pytest.raises(SchemaError, match="one distinct int per name"):
        Boxes(names=["a", "b"], category_ids=[1, 1])
    with pytest.raises(SchemaError, match="skeleton"):
        Keypoints(names=["a"], skeleton=[("a", "z")])


def test_masks_are_lossless_pngs_of_8_or_16_bits() -> None:
    mask = Mask(names=NAMES)
    small = np.array([[0, 1, 2], [2, 1, 255]], dtype=np.int64)
    stored = mask.encode_value(small)
    assert stored.startswith(b"\x89PNG")
    back = mask.decode_value(stored)
    assert back.dtype == np.uint8
    assert np.array_equal(back, small)
    wide = np.array([[0, 300], [65535, 1]])
    back = mask.decode_value(mask.encode_value(wide))
    assert back.dtype == np.uint16
    assert np.array_equal(back, wide)
    assert mask.encode_value(stored) == stored  # PNG bytes are kept as they are
    assert mask.decode_value(stored, image_format="bytes") == stored
    with pytest.raises(EncodingError, match="2-D integer array"):
        mask.encode_value(np.zeros((2, 2), dtype=np.float32))
    with pytest.raises(EncodingError, match=r"\[0, 65535\]"):
        mask.encode_value(np.array([[-1, 0]]))
    with pytest.raises(EncodingError, match="PNG bytes"):
        mask.encode_value(b"\xff\xd8\xff\xe0 a jpeg")


def test_keypoints_are_n_by_k_by_3() -> None:
    points = Keypoints(names=["nose", "tail"], skeleton=[("nose", "tail")])
    assert points.skeleton == ((0, 1),)
    value = np.arange(12, dtype=np.float64).reshape(2, 2, 3)
    back = points.decode_value(points.encode_value(value))
    assert back.dtype == np.float32
    assert np.array_equal(back, value)
    assert points.decode_value(points.encode_value([])).shape == (0, 2, 3)
    with pytest.raises(EncodingError, match=r"shape \(N, 2, 3\).*got shape \(1, 3, 3\)"):
        points.encode_value(np.zeros((1, 3, 3)))


def detections(n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {
            "image": np.full((8, 8, 3), i, dtype=np.uint8),
            "objects": [{"bbox": [i, 1, 2, 3], "category": NAMES[i % 3], "iscrowd": i % 2}] * (i % 3),
            "mask": np.eye(8, dtype=np.uint8) * (i % 3),
            "pose": np.full((i % 2, 2, 3), i, dtype=np.float32),
        }


FEATURES = Features(
    image=se.Image(),
    objects=Boxes(names=NAMES, category_ids=[1, 3, 7]),
    mask=Mask(names=NAMES),
    pose=Keypoints(names=["nose", "tail"], skeleton=[(0, 1)]),
)


def test_a_cache_of_boxes_masks_and_keypoints_opens_without_its_code(tmp_path: Path) -> None:
    assert Features.from_dict(FEATURES.to_dict()) == FEATURES
    built = se.build(detections, FEATURES, args=(9,), name="det", home=tmp_path, progress=False)
    loaded = se.load("det", home=tmp_path)
    assert loaded.features == FEATURES
    assert loaded.features["objects"].category_ids == (1, 3, 7)
    row = loaded[4]
    assert row["objects"] == {
        "bbox": [[4.0, 1.0, 2.0, 3.0]],
        "category": [1],
        "score": [None],
        "id": [None],
        "iscrowd": [0],
    }
    assert loaded[3]["objects"]["bbox"] == []
    assert np.array_equal(row["mask"], np.eye(8, dtype=np.uint8))
    assert loaded[5]["pose"].shape == (1, 2, 3)
    as_numpy = loaded.with_format("numpy")[4]["objects"]["bbox"]
    assert as_numpy.dtype == np.float32
    assert as_numpy.shape == (1, 4)
    assert len(loaded.to_pandas()) == 9
    assert "Boxes" in repr(loaded.features)
    assert "objects" in loaded._repr_html_()
    assert "identical" in str(se.compare(built, loaded))


def test_the_browser_opens_on_boxes_masks_and_keypoints(tmp_path: Path) -> None:
    ds = se.build(detections, FEATURES, args=(9,), name="det", home=tmp_path, progress=False)
    browser = ds.browse(page_size=24)
    assert browser.has_images
    content, buffers = browser.page_message()
    assert len(buffers) == 2 * 9  # each row's thumbnail, and its mask as a small PNG the page paints over it
    masks = [cell["overlays"]["masks"]["mask"]["buffer"] for cell in content["cells"]]
    assert sorted({cell["buffer"] for cell in content["cells"]} | set(masks)) == list(range(18))
    assert all(buffers[i].startswith(b"\x89PNG") for i in masks)
    detail, _ = browser.detail_message(4)
    fields = dict(detail["fields"])
    assert "objects" in fields
    assert "mask" in fields
