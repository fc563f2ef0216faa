"""se.evaluate on Boxes columns: a COCO set cached with se.from_coco, evaluated, equal to pycocotools."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.errors import InvalidOptionError
from stable_explore.evaluation import DetectionResult
from stable_explore.testing.coco_scenes import CATEGORY_IDS, coco_scene, pycocotools_figures

pytest.importorskip("pycocotools", reason="pycocotools is in the test extras: the reference for COCO's figures")


def _files(tmp_path: Path, seed: int) -> tuple[Path, Path, dict, list[dict]]:
    _, _, coco, results = coco_scene(images=30, seed=seed)
    images = tmp_path / "images"
    images.mkdir()
    for image in coco["images"]:  # as large as the file says: from_coco checks the sizes
        PILImage.fromarray(np.zeros((image["height"], image["width"], 3), np.uint8)).save(images / image["file_name"])
    # boxes fully inside their 640 x 480 image, as from_coco asks
    for entry in [*coco["annotations"], *results]:
        x, y, w, h = entry["bbox"]
        x, y = min(max(0.0, x), 600.0), min(max(0.0, y), 440.0)
        entry["bbox"] = [x, y, min(w, 640 - x), min(h, 480 - y)]
        if "area" in entry:
            entry["area"] = entry["bbox"][2] * entry["bbox"][3]
    (tmp_path / "truth.json").write_text(json.dumps(coco))
    (tmp_path / "found.json").write_text(json.dumps(results))
    return tmp_path / "truth.json", tmp_path / "found.json", coco, results


@pytest.mark.parametrize("seed", [0, 1])
def test_a_coco_set_evaluates_to_pycocotools_figures(tmp_path: Path, home: Path, seed: int) -> None:
    truth, found, coco, results = _files(tmp_path, seed)
    ds = se.from_coco(truth, tmp_path / "images", predictions=found, home=home, progress=False)
    stats, per_class = pycocotools_figures(coco, results)
    r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
    assert isinstance(r, DetectionResult)
    assert r.map == pytest.approx(stats[0], abs=1e-4)
    assert r.map50 == pytest.approx(stats[1], abs=1e-4)
    assert r.map75 == pytest.approx(stats[2], abs=1e-4)
    names = [c["name"] for c in coco["categories"]]
    np.testing.assert_allclose(r.per_class_ap().reindex(names).to_numpy(), per_class, atol=1e-4)


def test_every_number_leads_to_its_rows_and_boxes(tmp_path: Path, home: Path) -> None:
    truth, found, _, _ = _files(tmp_path, 3)
    ds = se.from_coco(truth, tmp_path / "images", predictions=found, home=home, progress=False)
    r = se.evaluate(ds, predictions="predictions")  # the ground truth: the other Boxes column
    boxes = r.boxes()
    assert set(boxes["outcome"]) <= {"tp", "fp", "fn", "ignored"}
    assert len(boxes[boxes["side"] == "truth"]) == sum(len(row["objects"]["bbox"]) for row in ds)
    counts = r.counts()
    fp_rows = r.rows(outcome="fp")
    assert fp_rows.tolist() == np.flatnonzero(counts["fp"] > 0).tolist()
    assert set(boxes[boxes["outcome"] == "fp"]["row"]) == set(fp_rows.tolist())
    name = f"c{CATEGORY_IDS[0]}"
    missed = r.rows(outcome="fn", cls=name)
    expected = boxes[(boxes["outcome"] == "fn") & (boxes["class"] == name)]["row"].unique()
    assert sorted(missed.tolist()) == sorted(expected.tolist())
    tp = boxes[(boxes["side"] == "prediction") & (boxes["outcome"] == "tp")]
    truths = boxes[boxes["side"] == "truth"].set_index(["row", "box"])
    for row, box, matched in zip(tp["row"], tp["box"], tp["matched"], strict=True):
        assert truths.loc[(row, matched), "outcome"] == "tp"  # the box it matched was found
        assert truths.loc[(row, matched), "matched"] == box
    curve = r.precision_recall(name, iou=0.75)
    assert len(curve) == 101
    assert curve["precision"].is_monotonic_decreasing
    saved = r.save(progress=False)
    assert saved["predictions_fp"] == counts["fp"].tolist()
    with pytest.raises(InvalidOptionError, match="outcome must be one of"):
        r.rows(outcome="wrong")
    with pytest.raises(InvalidOptionError, match="not one of COCO's thresholds"):
        r.precision_recall(name, iou=0.52)


def test_a_predicted_class_the_truth_does_not_name_is_refused_naming_the_box(home: Path) -> None:
    features = se.Features(objects=se.Boxes(names=["cat"]), predictions=se.Boxes(names=["cat", "dog"]))
    rows = [
        (
            "img-1",
            {
                "objects": {"bbox": [[0, 0, 5, 5]], "category": ["cat"]},
                "predictions": {"bbox": [[0, 0, 5, 5]], "category": ["dog"], "score": [0.5]},
            },
        )
    ]
    ds = se.build(rows, features, name="mismatch", home=home, progress=False)
    with pytest.raises(InvalidOptionError, match=r"row 0 \(key 'img-1'\) box 0 is of class 'dog'"):
        se.evaluate(ds, predictions="predictions", ground_truth="objects")
