"""Generated detection scenes, as our arrays and as COCO JSON, and pycocotools' figures for them.

What tests/evaluation/ and benchmarks/bench_evaluate.py compare ``evaluate_boxes`` with: ground truth with
crowds, images without boxes and (by default) a class no image has; predictions that are near copies,
duplicates and strays, some of another class. pycocotools is imported only by :func:`pycocotools_figures`.

Examples
--------
>>> truths, found, coco, results = coco_scene(images=8, seed=1)
>>> len(truths) == len(found) == len(coco["images"]), len(coco["annotations"]) == sum(len(t.boxes) for t in truths)
(True, True)
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from stable_explore.evaluation.coco import ImageBoxes

__all__ = ["CATEGORY_IDS", "coco_scene", "pycocotools_figures", "scene_as_coco", "scene_rows"]

CATEGORY_IDS = (1, 3, 7, 12)  # not 0..n-1, as in COCO files


def coco_scene(
    images: int = 60,
    seed: int = 0,
    *,
    boxes_per_image: tuple[int, int] = (1, 9),
    category_ids: Sequence[int] = CATEGORY_IDS,
    truth_classes: int | None = None,
) -> tuple[list[ImageBoxes], list[ImageBoxes], dict[str, Any], list[dict[str, Any]]]:
    """A random scene: every 7th image has no box, the others ``boxes_per_image`` (low, high) boxes.

    Ground truth uses the first ``truth_classes`` categories (default: all but the last, so one class
    has no truth); predictions use them all. Returns our ground truth and predictions (one
    :class:`ImageBoxes` each per image) and the same as a COCO file and a COCO results list.
    """
    rng = np.random.default_rng(seed)
    classes_all = len(category_ids)
    in_truth = classes_all - 1 if truth_classes is None else truth_classes
    truths, detections = [], []
    coco: dict[str, Any] = {
        "images": [{"id": i + 1, "width": 640, "height": 480, "file_name": f"{i}.jpg"} for i in range(images)],
        "categories": [{"id": c, "name": f"c{c}"} for c in category_ids],
        "annotations": [],
    }
    results: list[dict[str, object]] = []
    for image in range(images):
        n = 0 if image % 7 == 0 else int(rng.integers(*boxes_per_image))
        boxes = np.concatenate([rng.uniform(0, 500, (n, 2)), rng.uniform(4, 140, (n, 2))], axis=1)
        classes = rng.integers(0, in_truth, n)
        crowd = rng.random(n) < 0.1
        truths.append(ImageBoxes(boxes, classes, crowd=crowd))
        for box, k, c in zip(boxes, classes, crowd, strict=True):
            coco["annotations"].append(
                {
                    "id": len(coco["annotations"]) + 1,
                    "image_id": image + 1,
                    "category_id": category_ids[k],
                    "bbox": box.tolist(),
                    "area": float(box[2] * box[3]),
                    "iscrowd": int(c),
                }
            )
        keep = rng.random(n) < 0.85
        kept = int(keep.sum())
        near = boxes[keep] + rng.normal(0, 5, (kept, 4))
        near[:, 2:] = np.abs(near[:, 2:]) + 1
        near_classes = np.where(rng.random(kept) < 0.9, classes[keep], rng.integers(0, classes_all, kept))
        dup = near[: kept // 3] + rng.normal(0, 2, (kept // 3, 4))
        dup[:, 2:] = np.abs(dup[:, 2:]) + 1
        m = int(rng.integers(0, 4))
        stray = np.concatenate([rng.uniform(0, 500, (m, 2)), rng.uniform(4, 100, (m, 2))], axis=1)
        det_boxes = np.concatenate([near, dup, stray])
        det_classes = np.concatenate([near_classes, near_classes[: len(dup)], rng.integers(0, classes_all, m)])
        scores = rng.random(len(det_boxes))
        detections.append(ImageBoxes(det_boxes, det_classes, scores=scores))
        for box, k, s in zip(det_boxes, det_classes, scores, strict=True):
            results.append(
                {"image_id": image + 1, "category_id": category_ids[k], "bbox": box.tolist(), "score": float(s)}
            )
    return truths, detections, coco, results


def scene_rows(
    truths: Sequence[ImageBoxes], models: dict[str, Sequence[ImageBoxes]], names: Sequence[str]
) -> list[dict[str, Any]]:
    """Rows for ``se.build``: an ``objects`` column of the truths, and a column of predictions per model.

    Crowds are boxes with ``{"iscrowd": 1}``; ``models`` maps a column name to one :class:`ImageBoxes` per image.
    """
    rows = []
    for image, truth in enumerate(truths):
        crowd = truth.crowd if truth.crowd is not None else np.zeros(len(truth.boxes), dtype=bool)
        row: dict[str, object] = {
            "objects": [
                {"bbox": b.tolist(), "category": names[k], "attributes": {"iscrowd": 1} if c else {}}
                for b, k, c in zip(truth.boxes, truth.classes, crowd, strict=True)
            ]
        }
        for column, found in models.items():
            det = found[image]
            scores = det.scores if det.scores is not None else np.ones(len(det.boxes))
            row[column] = [
                {"bbox": b.tolist(), "category": names[k], "score": float(s)}
                for b, k, s in zip(det.boxes, det.classes, scores, strict=True)
            ]
        rows.append(row)
    return rows


def scene_as_coco(
    truths: Sequence[ImageBoxes], found: Sequence[ImageBoxes], category_ids: Sequence[int] = CATEGORY_IDS
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A COCO file and results list of these boxes, as a ``Boxes`` column stores them (float32 boxes and scores)."""

    def stored(values: np.ndarray) -> list[float]:
        return [float(v) for v in np.asarray(values, dtype=np.float32)]

    coco: dict[str, Any] = {
        "images": [{"id": i + 1, "width": 640, "height": 480, "file_name": f"{i}.jpg"} for i in range(len(truths))],
        "categories": [{"id": c, "name": f"c{c}"} for c in category_ids],
        "annotations": [],
    }
    results: list[dict[str, object]] = []
    for image, (truth, det) in enumerate(zip(truths, found, strict=True)):
        crowd = truth.crowd if truth.crowd is not None else np.zeros(len(truth.boxes), dtype=bool)
        for box, k, c in zip(truth.boxes, truth.classes, crowd, strict=True):
            bbox = stored(box)
            coco["annotations"].append(
                {
                    "id": len(coco["annotations"]) + 1,
                    "image_id": image + 1,
                    "category_id": category_ids[k],
                    "bbox": bbox,
                    "area": bbox[2] * bbox[3],
                    "iscrowd": int(c),
                }
            )
        scores = det.scores if det.scores is not None else np.ones(len(det.boxes))
        for box, k, score in zip(det.boxes, det.classes, stored(scores), strict=True):
            results.append({"image_id": image + 1, "category_id": category_ids[k], "bbox": stored(box), "score": score})
    return coco, results


def pycocotools_figures(coco: dict[str, Any], results: list[dict[str, object]]) -> tuple[np.ndarray, np.ndarray]:
    """Pycocotools' ``COCOeval`` stats (bbox) and each category's AP (NaN: no ground truth), quietly."""
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
