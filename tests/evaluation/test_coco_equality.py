"""Our numpy COCO evaluation against pycocotools' COCOeval on the same boxes: equal figures."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from stable_explore.evaluation.coco import ImageBoxes, evaluate_boxes

pytest.importorskip("pycocotools", reason="pycocotools is in the test extras: the reference for COCO's figures")

CATEGORY_IDS = [1, 3, 7, 12]  # not 0..n-1, as in COCO files


def _scene(seed: int, images: int = 60) -> tuple[list[ImageBoxes], list[ImageBoxes], dict, list[dict]]:
    """Random ground truth (crowds, empty images, a class no image has) and predictions (near copies,
    duplicates, false positives, a class with no ground truth), as our arrays and as COCO JSON."""
    rng = np.random.default_rng(seed)
    truths, detections = [], []
    coco = {
        "images": [{"id": i + 1, "width": 640, "height": 480, "file_name": f"{i}.jpg"} for i in range(images)],
        "categories": [{"id": c, "name": f"c{c}"} for c in CATEGORY_IDS],
        "annotations": [],
    }
    results: list[dict] = []
    for image in range(images):
        n = 0 if image % 7 == 0 else int(rng.integers(1, 9))
        xy = rng.uniform(0, 500, (n, 2))
        wh = rng.uniform(4, 140, (n, 2))
        boxes = np.concatenate([xy, wh], axis=1)
        classes = rng.integers(0, 3, n)  # class 3 (id 12) never appears in the ground truth
        crowd = rng.random(n) < 0.1
        truths.append(ImageBoxes(boxes, classes, crowd=crowd))
        for box, k, c in zip(boxes, classes, crowd, strict=True):
            coco["annotations"].append(
                {
                    "id": len(coco["annotations"]) + 1,
                    "image_id": image + 1,
                    "category_id": CATEGORY_IDS[k],
                    "bbox": box.tolist(),
                    "area": float(box[2] * box[3]),
                    "iscrowd": int(c),
                }
            )
        keep = rng.random(n) < 0.85
        near = boxes[keep] + rng.normal(0, 5, (int(keep.sum()), 4))
        near[:, 2:] = np.abs(near[:, 2:]) + 1
        near_classes = np.where(rng.random(int(keep.sum())) < 0.9, classes[keep], rng.integers(0, 4, int(keep.sum())))
        dup = near[: max(0, len(near) // 3)] + rng.normal(0, 2, (max(0, len(near) // 3), 4))
        dup[:, 2:] = np.abs(dup[:, 2:]) + 1
        m = int(rng.integers(0, 4))
        stray = np.concatenate([rng.uniform(0, 500, (m, 2)), rng.uniform(4, 100, (m, 2))], axis=1)
        det_boxes = np.concatenate([near, dup, stray])
        det_classes = np.concatenate([near_classes, near_classes[: len(dup)], rng.integers(0, 4, m)])
        scores = rng.random(len(det_boxes))
        detections.append(ImageBoxes(det_boxes, det_classes, scores=scores))
        for box, k, s in zip(det_boxes, det_classes, scores, strict=True):
            results.append(
                {"image_id": image + 1, "category_id": CATEGORY_IDS[k], "bbox": box.tolist(), "score": float(s)}
            )
    return truths, detections, coco, results


def _cocoeval(coco: dict, results: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = coco
        gt.createIndex()
        dt = gt.loadRes(results)
        run = COCOeval(gt, dt, "bbox")
        run.evaluate()
        run.accumulate()
        run.summarize()
    per_class = []
    for k in range(len(coco["categories"])):
        values = run.eval["precision"][:, :, k, 0, -1]
        kept = values[values > -1]
        per_class.append(kept.mean() if kept.size else np.nan)
    return np.asarray(run.stats), np.asarray(per_class)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_map_map50_map75_and_per_class_ap_equal_pycocotools(seed: int) -> None:
    truths, detections, coco, results = _scene(seed)
    stats, per_class = _cocoeval(coco, results)
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
    stats, _ = _cocoeval(coco, results)
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
