"""se.compare on boxes: per changed row, the boxes added, removed, moved (with IoU) and relabelled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore.versioning.box_diff import box_changes, iou

FEATURES = se.Features(image=se.Image(), objects=se.Boxes(names=["cat", "dog", "bird"]), x=se.Value("int64"))


def _rows(n: int) -> list[tuple[str, dict[str, object]]]:
    boxes = {
        "bbox": [[0, 0, 10, 10], [20, 20, 10, 10], [40, 0, 4, 4]],
        "category": ["cat", "dog", "cat"],
        "id": [1, 2, 3],
    }
    return [(f"k{i}", {"image": np.full((8, 8, 3), i, np.uint8), "objects": boxes, "x": i}) for i in range(n)]


def test_compare_lists_each_rows_box_changes_in_every_form(tmp_path: Path) -> None:
    ds = se.build(_rows(10), FEATURES, name="det", home=tmp_path, progress=False)
    moved = [
        {"bbox": [2, 0, 10, 10], "category": "cat", "id": 1},  # moved right by 2: IoU 8/12
        {"bbox": [20, 20, 10, 10], "category": "bird", "id": 2},  # relabelled
        {"bbox": [40, 0, 4, 4], "category": "cat", "id": 3},
        {"bbox": [60, 60, 5, 5], "category": "dog"},  # added
    ]
    fixed = (
        ds.relabel_boxes({1: {0: "dog"}})
        .drop_boxes({2: [2]})
        .set_boxes(3, moved)
        .set(4, "x", 40)
        .drop([9])
        .save(message="boxes", progress=False)
    )
    diff = se.compare(ds, fixed)
    assert diff.rows.changed == ["k1", "k2", "k3", "k4"]
    boxes = diff.boxes["objects"]
    assert set(boxes) == {"k1", "k2", "k3"}  # k4 changed x only
    assert boxes["k1"].relabelled == [{"a": 0, "b": 0, "from": "cat", "to": "dog"}]
    assert (boxes["k1"].added, boxes["k1"].removed, boxes["k1"].moved) == ([], [], [])
    assert boxes["k2"].removed == [{"a": 2, "bbox": [40.0, 0.0, 4.0, 4.0], "category": "cat"}]
    assert boxes["k3"].moved == [
        {"a": 0, "b": 0, "iou": 0.667, "from": [0.0, 0.0, 10.0, 10.0], "to": [2.0, 0.0, 10.0, 10.0]}
    ]
    assert boxes["k3"].relabelled == [{"a": 1, "b": 1, "from": "dog", "to": "bird"}]
    assert boxes["k3"].added == [{"b": 3, "bbox": [60.0, 60.0, 5.0, 5.0], "category": "dog"}]
    assert diff.summary() == "+0 -1 ~4 rows; objects: boxes +1 -1 moved 1 relabelled 2 in 3 row(s)"
    text = str(diff)
    assert "~ k1: objects: box 0 cat->dog" in text
    assert "~ k2: objects: -box 2 cat" in text
    assert "~ k3: objects: box 1 dog->bird; box 0 moved (IoU 0.67); +box 3 dog" in text
    assert "~ k4: x: 4 -> 40" in text
    data = json.loads(diff.to_json())
    assert data["boxes"]["objects"]["k3"]["added"] == [{"b": 3, "bbox": [60.0, 60.0, 5.0, 5.0], "category": "dog"}]
    html = diff._repr_html_()
    assert "objects: box 0 cat-&gt;dog" in html
    assert "box 0 moved (IoU 0.67)" in html


def test_boxes_are_matched_by_id_then_overlap() -> None:
    feature = se.Boxes(names=["cat", "dog"])
    old = feature.encode_value({"bbox": [[0, 0, 10, 10], [100, 100, 10, 10]], "category": [0, 1]})
    swapped = feature.encode_value({"bbox": [[101, 100, 10, 10], [0, 0, 10, 10]], "category": [1, 0]})
    change = box_changes(old, swapped, feature, feature)
    assert [(m["a"], m["b"]) for m in change.moved] == [(1, 0)]  # reordered boxes match by overlap
    assert not change.added
    assert not change.removed
    assert not change.relabelled
    far = feature.encode_value({"bbox": [[50, 50, 10, 10]], "category": [0]})
    change = box_changes(old[:1], far, feature, feature)
    assert (len(change.removed), len(change.added), change.moved) == (1, 1, [])  # no overlap: gone and new
    with_ids = feature.encode_value({"bbox": [[50, 50, 10, 10]], "category": [0], "id": [7]})
    same_id = feature.encode_value({"bbox": [[0, 0, 10, 10]], "category": [1], "id": [7]})
    change = box_changes(with_ids, same_id, feature, feature)
    assert change.moved[0]["iou"] == 0.0
    assert change.relabelled == [{"a": 0, "b": 0, "from": "cat", "to": "dog"}]
    assert iou([0, 0, 10, 10], [0, 0, 10, 10]) == pytest.approx(1.0)
