"""Two detectors side by side: each one's figures equal pycocotools' on its own boxes, and the table of images
where they differ lists exactly the images where a box one found the other missed, or their false positives differ."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from stable_explore.evaluation import DetectionComparison, DetectionResult, ImageBoxes
from stable_explore.testing.coco_scenes import coco_scene, pycocotools_figures, scene_as_coco, scene_rows

pytest.importorskip("pycocotools", reason="pycocotools is in the test extras: the reference for COCO's figures")

NAMES = ["c1", "c3", "c7", "c12"]


def _second_model(found: list[ImageBoxes], seed: int) -> list[ImageBoxes]:
    """Another detector on the same images: some boxes dropped, the rest moved a little and scored anew."""
    rng = np.random.default_rng(seed)
    out = []
    for det in found:
        keep = rng.random(len(det.boxes)) < 0.7
        boxes = det.boxes[keep] + rng.normal(0, 3, (int(keep.sum()), 4))
        boxes[:, 2:] = np.abs(boxes[:, 2:]) + 1
        out.append(ImageBoxes(boxes, det.classes[keep], scores=rng.random(int(keep.sum()))))
    return out


@pytest.mark.parametrize("seed", [0, 5])
def test_each_models_figures_equal_pycocotools(home: Path, seed: int) -> None:
    truths, found_a, _, _ = coco_scene(images=50, seed=seed)
    found_b = _second_model(found_a, seed + 100)
    features = se.Features(objects=se.Boxes(names=NAMES), model_a=se.Boxes(names=NAMES), model_b=se.Boxes(names=NAMES))
    rows = scene_rows(truths, {"model_a": found_a, "model_b": found_b}, NAMES)
    ds = se.build(rows, features, name="two", home=home, progress=False)
    both = se.evaluate(ds, predictions=["model_a", "model_b"], ground_truth="objects")
    assert isinstance(both, DetectionComparison)
    summary = both.summary()
    assert list(summary.index) == ["model_a", "model_b"]
    for name, found in (("model_a", found_a), ("model_b", found_b)):
        stats, per_class = pycocotools_figures(*scene_as_coco(truths, found))
        r = both[name]
        assert isinstance(r, DetectionResult)
        assert r.map == pytest.approx(stats[0], abs=1e-4)
        assert r.map50 == pytest.approx(stats[1], abs=1e-4)
        assert r.map75 == pytest.approx(stats[2], abs=1e-4)
        np.testing.assert_allclose(r.per_class_ap().to_numpy(), per_class, atol=1e-4)
        np.testing.assert_allclose(both.per_class_ap()[name].to_numpy(), per_class, atol=1e-4)
        assert summary.loc[name, "map"] == pytest.approx(stats[0], abs=1e-4)
        assert summary.loc[name, "fp"] == r.counts()["fp"].sum()
        # the same as evaluating that model alone
        alone = se.evaluate(ds, predictions=name, ground_truth="objects")
        assert isinstance(alone, DetectionResult)
        assert alone.map == r.map

    # the table: every image where a ground-truth box is found by one and missed by the other, or the false
    # positives differ, and no other, counted from each model's own outcomes
    table = both.differ()
    a_found = [o == "tp" for o in both["model_a"].matches.truth_outcomes]
    b_found = [o == "tp" for o in both["model_b"].matches.truth_outcomes]
    fp_a, fp_b = both["model_a"].counts()["fp"], both["model_b"].counts()["fp"]
    expected = [i for i in range(len(ds)) if (a_found[i] != b_found[i]).any() or fp_a[i] != fp_b[i]]
    assert table["row"].tolist() == expected
    assert table["key"].tolist() == [ds.keys()[i] for i in expected]
    assert table["model_a_only"].tolist() == [int((a_found[i] & ~b_found[i]).sum()) for i in expected]
    assert table["model_b_fp"].tolist() == fp_b[expected].tolist()
    a_not_b = both.rows(found_by="model_a", missed_by="model_b")
    assert a_not_b.tolist() == [i for i in range(len(ds)) if (a_found[i] & ~b_found[i]).any()]
    assert set(a_not_b.tolist()) <= set(expected)
    assert len(a_not_b)  # the second model drops boxes, so the first finds some it misses


def test_the_table_names_each_kind_of_difference(home: Path) -> None:
    boxes = se.Boxes(names=["cat", "dog"])
    features = se.Features(objects=boxes, model_a=boxes, model_b=boxes)
    cat = {"bbox": [0, 0, 10, 10], "category": "cat"}
    dog = {"bbox": [50, 50, 20, 20], "category": "dog"}
    stray = {"bbox": [200, 200, 5, 5], "category": "dog", "score": 0.3}
    rows = [
        {"objects": [cat], "model_a": [{**cat, "score": 0.9}], "model_b": [{**cat, "score": 0.8}]},  # both found
        {"objects": [cat, dog], "model_a": [{**cat, "score": 0.9}], "model_b": [{**dog, "score": 0.6}]},
        {"objects": [dog], "model_a": [{**dog, "score": 0.9}], "model_b": [{**dog, "score": 0.9}, stray]},
        {"objects": [], "model_a": [], "model_b": []},
        {"objects": [dog], "model_a": [], "model_b": []},  # both missed: no difference
    ]
    ds = se.build(rows, features, name="small", home=home, progress=False)
    both = se.evaluate(ds, predictions=["model_a", "model_b"])  # the ground truth: the other Boxes column
    assert isinstance(both, DetectionComparison)
    table = both.differ()
    assert table["row"].tolist() == [1, 2]
    assert table.loc[0, ["model_a_tp", "model_a_fn", "model_a_only", "model_b_tp", "model_b_only"]].tolist() == [
        1,
        1,
        1,
        1,
        1,
    ]
    assert table.loc[1, ["model_a_fp", "model_b_fp", "model_a_only", "model_b_only"]].tolist() == [0, 1, 0, 0]
    assert both.rows(found_by="model_a", missed_by="model_b", cls="cat").tolist() == [1]
    assert both.rows(found_by="model_a", missed_by="model_b", cls="dog").tolist() == []
    assert both.rows(found_by="model_b", missed_by="model_a").tolist() == [1]
    assert "DetectionComparison of 2 models over 5 images" in repr(both)
    assert "<table>" in both._repr_html_()
    pd.testing.assert_series_equal(both.per_class_ap()["model_a"], both["model_a"].per_class_ap(), check_names=False)
    with pytest.raises(InvalidOptionError, match="'model_c' is not one of the compared predictions"):
        both.rows(found_by="model_a", missed_by="model_c")


def test_boxes_and_class_labels_are_not_compared_together(home: Path) -> None:
    features = se.Features(
        objects=se.Boxes(names=["cat"]), boxes=se.Boxes(names=["cat"]), kind=se.ClassLabel(names=["cat"])
    )
    rows = [{"objects": [], "boxes": [], "kind": 0}]
    ds = se.build(rows, features, name="mixed", home=home, progress=False)
    with pytest.raises(InvalidOptionError, match="Boxes columns only, or classifiers only"):
        se.evaluate(ds, predictions=["boxes", "kind"], ground_truth="objects")
    with pytest.raises(InvalidOptionError, match="top_k= is for classifiers"):
        se.evaluate(ds, predictions=["boxes"], ground_truth="objects", top_k=1)
