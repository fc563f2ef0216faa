"""prediction_issues: a model's confident boxes where the labels have none (missing) or another class (wrong class)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stable_explore as se
from stable_explore.signals import prediction_issues
from stable_explore.testing.coco_scenes import CATEGORY_IDS, coco_scene

NAMES = ["cat", "dog", "person"]


def _planted(home: Path) -> se.CachedDataset:
    rows = [
        {  # a cat labelled where the model sees a dog; a cat the labels miss; an unsure box that does not count
            "objects": [{"bbox": [0, 0, 10, 10], "category": "cat"}],
            "predictions": [
                {"bbox": [0, 0, 10, 10], "category": "dog", "score": 0.9},
                {"bbox": [50, 50, 10, 10], "category": "cat", "score": 0.8},
                {"bbox": [70, 70, 10, 10], "category": "cat", "score": 0.3},
            ],
        },
        {  # the model agrees with the label (and also says cat, more sure): not a wrong class
            "objects": [{"bbox": [0, 0, 20, 20], "category": "dog"}],
            "predictions": [
                {"bbox": [0, 0, 20, 20], "category": "cat", "score": 0.97},
                {"bbox": [1, 1, 19, 19], "category": "dog", "score": 0.95},
            ],
        },
        {  # a crowd of people covers a person inside it; a person far off is missing
            "objects": [{"bbox": [0, 0, 100, 100], "category": "person", "iscrowd": 1}],
            "predictions": [
                {"bbox": [10, 10, 5, 5], "category": "person", "score": 0.9},
                {"bbox": [200, 200, 20, 20], "category": "person", "score": 0.7},
            ],
        },
        {"objects": [], "predictions": [{"bbox": [5, 5, 5, 5], "category": "dog", "score": 0.6}]},  # nothing labelled
        {"objects": [{"bbox": [0, 0, 5, 5], "category": "cat"}], "predictions": []},
    ]
    features = se.Features(
        objects=se.Boxes(names=NAMES),
        predictions=se.Boxes(names=list(reversed(NAMES))),  # another order: classes are matched by name
    )
    return se.build(rows, features, name="planted", home=home, progress=False)


def test_planted_missing_boxes_and_wrong_classes_come_out_most_confident_first(tmp_path: Path) -> None:
    found = prediction_issues(_planted(tmp_path)).to_pylist()
    got = [(r["row"], r["key"], r["issue"], r["box"], r["prediction"], r["category"], r["predicted"]) for r in found]
    assert got == [
        (0, 0, "wrong class", 0, 0, "cat", "dog"),
        (0, 0, "missing box", -1, 1, None, "cat"),
        (2, 2, "missing box", -1, 1, None, "person"),
        (3, 3, "missing box", -1, 0, None, "dog"),
    ]
    assert [r["score"] for r in found] == pytest.approx([0.9, 0.8, 0.7, 0.6])
    assert [r["iou"] for r in found] == pytest.approx([1.0, 0.0, 0.0, 0.0])
    looser = prediction_issues(_planted(tmp_path), min_score=0.2)
    assert ("missing box", 0, 2) in {(r["issue"], r["row"], r["prediction"]) for r in looser.to_pylist()}


def _brute_force(coco: dict[str, Any], results: list[dict[str, Any]], min_score: float, threshold: float) -> list:
    """The same definitions, one box pair at a time in plain Python."""

    def inter(a: list[float], b: list[float]) -> float:
        w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
        h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
        return max(w, 0) * max(h, 0)

    def iou(a: list[float], b: list[float]) -> float:
        both = inter(a, b)
        union = a[2] * a[3] + b[2] * b[3] - both
        return both / union if union > 0 else 0.0

    out = []
    for row, image in enumerate(coco["images"]):
        truth = [a for a in coco["annotations"] if a["image_id"] == image["id"]]
        preds = [(i, p) for i, p in enumerate(r for r in results if r["image_id"] == image["id"])]
        sure = [(i, p) for i, p in preds if p["score"] >= min_score]
        for i, p in sure:
            area = p["bbox"][2] * p["bbox"][3]
            covered = [inter(p["bbox"], t["bbox"]) / area if t["iscrowd"] else iou(p["bbox"], t["bbox"]) for t in truth]
            if max(covered, default=0.0) < threshold:
                out.append((row, "missing box", -1, i, p["score"]))
        for g, t in enumerate(truth):
            if t["iscrowd"]:
                continue
            hits = [(i, p) for i, p in sure if iou(p["bbox"], t["bbox"]) >= threshold]
            if not hits or any(p["category_id"] == t["category_id"] for _, p in hits):
                continue
            i, p = max(hits, key=lambda hit: hit[1]["score"])
            out.append((row, "wrong class", g, i, p["score"]))
    return sorted(out, key=lambda item: (-item[4], item[0], item[3]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_generated_scene_gives_what_the_definitions_give_box_by_box(tmp_path: Path, seed: int) -> None:
    _, _, coco, results = coco_scene(images=40, seed=seed)
    names = [c["name"] for c in coco["categories"]]
    boxes = se.Boxes(names=names, category_ids=list(CATEGORY_IDS))
    index = {c: i for i, c in enumerate(CATEGORY_IDS)}
    rows = []
    for image in coco["images"]:
        truth = [a for a in coco["annotations"] if a["image_id"] == image["id"]]
        preds = [r for r in results if r["image_id"] == image["id"]]
        rows.append(
            {
                "objects": [
                    {"bbox": a["bbox"], "category": index[a["category_id"]], "iscrowd": a["iscrowd"]} for a in truth
                ],
                "predictions": [
                    {"bbox": p["bbox"], "category": index[p["category_id"]], "score": p["score"]} for p in preds
                ],
            }
        )
    ds = se.build(rows, se.Features(objects=boxes, predictions=boxes), name="scene", home=tmp_path, progress=False)
    found = prediction_issues(ds, min_score=0.3)
    got = [(r["row"], r["issue"], r["box"], r["prediction"]) for r in found.to_pylist()]
    expected = _brute_force(coco, results, 0.3, 0.5)
    assert got == [item[:4] for item in expected]
    assert found.column("score").to_pylist() == pytest.approx([item[4] for item in expected], abs=1e-6)
    assert {"missing box", "wrong class"} <= set(found.column("issue").to_pylist()), "the scene has both"
    scores = np.asarray(found.column("score"))
    assert (np.diff(scores) <= 0).all(), "most confident first"


def test_normalized_predictions_over_pixel_labels_are_scaled_by_the_image_size(tmp_path: Path) -> None:
    features = se.Features(
        objects=se.Boxes(names=NAMES),
        predictions=se.Boxes(names=NAMES, format="cxcywh", normalized=True),
        width=se.Value("int64"),
        height=se.Value("int64"),
    )
    row = {
        "objects": [{"bbox": [20, 10, 20, 10], "category": "cat"}],
        "predictions": [
            {"bbox": [0.375, 0.375, 0.25, 0.25], "category": "dog", "score": 0.9},  # the cat's box, as a dog
            {"bbox": [0.9, 0.9, 0.1, 0.1], "category": "cat", "score": 0.8},
        ],
        "width": 80,
        "height": 40,
    }
    ds = se.build([row], features, name="scaled", home=tmp_path, progress=False)
    found = prediction_issues(ds).to_pylist()
    assert [(r["issue"], r["box"], r["prediction"]) for r in found] == [("wrong class", 0, 0), ("missing box", -1, 1)]
    assert found[0]["iou"] == pytest.approx(1.0)
    plain = ds.select_columns(["objects", "predictions"])
    with pytest.raises(se.InvalidOptionError, match="no 'width' and 'height' columns"):
        prediction_issues(plain)


def test_columns_that_are_not_boxes_and_bad_thresholds_are_refused(tmp_path: Path) -> None:
    ds = _planted(tmp_path)
    with pytest.raises(se.ColumnNotFoundError, match=r"predictions='found' is not a Boxes column \(no such column\)"):
        prediction_issues(ds, "found")
    with pytest.raises(se.InvalidOptionError, match=r"iou must be in \(0, 1\], got 0"):
        prediction_issues(ds, iou=0)
    alone = ds.select_columns(["predictions"])
    with pytest.raises(se.ColumnNotFoundError, match="no Boxes column of ground truth beside 'predictions'"):
        prediction_issues(alone)
