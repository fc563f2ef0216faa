"""Our numpy COCO evaluation against pycocotools' COCOeval on the same boxes: equal figures."""

from __future__ import annotations

import numpy as np
import pytest

from stable_explore.evaluation.coco import ImageBoxes, evaluate_boxes
from stable_explore.testing.coco_scenes import CATEGORY_IDS, coco_scene, pycocotools_figures

pytest.importorskip("pycocotools", reason="pycocotools is in the test extras: the reference for COCO's figures")


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_map_map50_map75_and_per_class_ap_equal_pycocotools(seed: int) -> None:
    truths, detections, coco, results = coco_scene(seed=seed)
    stats, per_class = pycocotools_figures(coco, results)
    ours = evaluate_boxes(truths, detections, num_classes=len(CATEGORY_IDS))
    assert ours.map == pytest.approx(stats[0], abs=1e-4)
    assert ours.map50 == pytest.approx(stats[1], abs=1e-4)
    assert ours.map75 == pytest.approx(stats[2], abs=1e-4)
    np.testing.assert_allclose(ours.per_class_ap(), per_class, atol=1e-4)  # the class with no truth: NaN in both
    assert np.isnan(ours.per_class_ap()[3])


def test_more_than_a_hundred_detections_of_a_class_in_one_image_keep_the_best_hundred() -> None:
    rng = np.random.default_rng(9)
    truth_boxes = np.concatenate([rng.uniform(0, 400, (30, 2)), rng.uniform(10, 60, (30, 2))], axis=1)
    det_boxes = np.concatenate([truth_boxes + rng.normal(0, 3, (30, 4))] * 5)
    det_boxes[:, 2:] = np.abs(det_boxes[:, 2:]) + 1
    scores = rng.random(len(det_boxes))
    coco = {
        "images": [{"id": 1, "width": 640, "height": 480}],
        "categories": [{"id": 1, "name": "a"}],
        "annotations": [
            {"id": i + 1, "image_id": 1, "category_id": 1, "bbox": b.tolist(), "area": float(b[2] * b[3]), "iscrowd": 0}
            for i, b in enumerate(truth_boxes)
        ],
    }
    results = [
        {"image_id": 1, "category_id": 1, "bbox": b.tolist(), "score": float(s)}
        for b, s in zip(det_boxes, scores, strict=True)
    ]
    stats, _ = pycocotools_figures(coco, results)
    ours = evaluate_boxes(
        [ImageBoxes(truth_boxes, np.zeros(30))], [ImageBoxes(det_boxes, np.zeros(150), scores=scores)], num_classes=1
    )
    assert ours.map == pytest.approx(stats[0], abs=1e-4)
    assert (ours.detection_outcomes[0] == "ignored").sum() >= 50  # the 50 lowest scores are not evaluated


def test_outcomes_at_iou_half_name_each_box() -> None:
    truth = ImageBoxes(np.array([[0, 0, 10, 10], [50, 50, 10, 10], [100, 100, 40, 40]]), [0, 0, 0], crowd=[0, 0, 1])
    det = ImageBoxes(
        np.array([[0, 0, 10, 10], [1, 1, 10, 10], [200, 200, 5, 5], [105, 105, 10, 10]]),
        [0, 0, 0, 0],
        scores=[0.9, 0.8, 0.7, 0.6],
    )
    result = evaluate_boxes([truth], [det], num_classes=1)
    assert result.detection_outcomes[0].tolist() == ["tp", "fp", "fp", "ignored"]  # a duplicate; a stray; in a crowd
    assert result.detection_match[0].tolist() == [0, -1, -1, 2]
    assert result.truth_outcomes[0].tolist() == ["tp", "fn", "ignored"]
