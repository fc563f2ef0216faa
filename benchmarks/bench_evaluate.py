"""Benchmark: se.evaluate's figures at scale, against scikit-learn's and pycocotools' time on the same input.

* Classification: N rows (default 1,000,000), 10 classes, the model's probabilities (N x 10): building the
  result, accuracy, the confusion matrix, ``report()``, ``rows(true=, pred=)`` of one cell and
  ``mistakes()`` sorted by confidence; against scikit-learn's ``confusion_matrix`` and
  ``precision_recall_fscore_support`` on the same arrays. Peak RSS is the process's high-water mark
  (VmHWM) over the arrays already made.
* Detection: I images (default 2,000; ``--images 100000`` for the issue's 100k, about 1M boxes) with about
  10 ground-truth boxes each (10% crowds, every 7th image empty) and predictions that are near copies,
  duplicates and strays with random scores: ``stable_explore.evaluation.evaluate_boxes`` on arrays against
  pycocotools' ``COCOeval`` (index, loadRes, evaluate, accumulate, summarize) on the same boxes as COCO
  JSON, and the largest difference of mAP, mAP50 and mAP75. Memory: the process's peak RSS (VmHWM) before
  and after each, so each figure is what that step added over the peak before it (ours runs first).
  ``--reference-images N`` runs pycocotools only up to N images (it takes minutes and GBs at 100k).
* ``--dataset``: the same boxes cached as a dataset in a temp home; ``se.evaluate`` on it the first time
  (read the columns, match, keep the answer in the home) and the second (read back from the home).

Each time is the median of ``--runs`` runs (default 3). The exit status is always 0: the figures are the result.

Run::

    python benchmarks/bench_evaluate.py                     # 1M rows, 2,000 images
    python benchmarks/bench_evaluate.py --rows 200000 --images 500 --dataset
    python benchmarks/bench_evaluate.py --rows 0 --images 100000 --runs 1 --reference-images 10000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import status_kb
from _report import rule
from stable_explore.evaluation import ClassificationResult, ImageBoxes, evaluate_boxes
from stable_explore.testing.coco_scenes import coco_scene, pycocotools_figures

RUNS = [3]  # --runs sets it
CATEGORY_IDS = [1, 3, 7, 12, 18]


def median_time(run: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(RUNS[0]):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def classification(rows: int) -> None:
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    rng = np.random.default_rng(0)
    classes = 10
    true = rng.integers(0, classes, rows)
    logits = rng.normal(0, 1, (rows, classes))
    logits[np.arange(rows), true] += 2.5  # right about 80% of the time
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    pred = probs.argmax(axis=1)
    names = [f"class{k}" for k in range(classes)]
    before = status_kb("VmHWM")

    def figures() -> tuple[ClassificationResult, float, np.ndarray, Any]:
        r = ClassificationResult(true, pred, names, probs=probs)
        return r, r.accuracy, r.confusion_matrix, r.report()

    def sklearn() -> tuple[np.ndarray, Any]:
        return confusion_matrix(true, pred), precision_recall_fscore_support(true, pred, zero_division=0)

    took, (result, accuracy, matrix, report) = median_time(figures)
    rows_took, cell = median_time(lambda: len(result.rows(true=3, pred=5)))
    mistakes_took, mistakes = median_time(lambda: len(result.mistakes()))
    peak = status_kb("VmHWM")
    tracemalloc.start()
    figures()[0].mistakes()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    sk_took, (reference, (precision, recall, f1, _)) = median_time(sklearn)
    equal = (
        np.array_equal(matrix, reference)
        and np.allclose(report["precision"], precision)
        and np.allclose(report["recall"], recall)
        and np.allclose(report["f1"], f1)
    )
    rule(f"classification: {rows:,} rows, {classes} classes, probabilities")
    print(f"accuracy {accuracy:.4f}; {mistakes:,} mistakes; cell (3, 5): {cell:,} rows")
    print(f"ours (result, accuracy, confusion matrix, report): {took:.3f} s")
    print(f"scikit-learn (confusion_matrix + precision_recall_fscore_support): {sk_took:.3f} s")
    print(f"ratio ours / scikit-learn: {took / sk_took:.2f}")
    print(
        f"and the rows behind them: one cell's rows {rows_took:.3f} s, mistakes() sorted by confidence "
        f"{mistakes_took:.3f} s"
    )
    print(f"figures equal to scikit-learn's: {equal}")
    inputs = (true.nbytes + pred.nbytes + probs.nbytes) / 2**20
    print(
        f"memory: inputs {inputs:,.0f} MB; the figures and mistakes() allocate at most {traced / 2**20:,.0f} MB "
        f"at once (tracemalloc); process peak RSS {peak / 1024:,.0f} MB (+{(peak - before) / 1024:,.0f} MB "
        "over the peak of making the inputs)"
    )


def scene(images: int, seed: int = 0) -> tuple[list[ImageBoxes], list[ImageBoxes], dict, list[dict]]:
    """A denser scene than the tests': 5 to 15 boxes an image, every class in the ground truth."""
    return coco_scene(images, seed, boxes_per_image=(5, 16), category_ids=CATEGORY_IDS, truth_classes=len(CATEGORY_IDS))


def cocoeval(coco: dict, results: list[dict]) -> np.ndarray:
    return pycocotools_figures(coco, results)[0]


def detection(images: int, reference_images: int | None, dataset: bool) -> None:
    try:
        import pycocotools  # noqa: F401
    except ImportError:
        print("pycocotools is missing (it is in the test extras): detection skipped")
        return
    made = time.perf_counter()
    truths, detections, coco, results = scene(images)
    made = time.perf_counter() - made
    boxes = sum(len(t.boxes) for t in truths)
    rule(f"detection: {images:,} images, {boxes:,} ground-truth boxes, {len(results):,} predictions")
    print(f"(the scene took {made:.1f} s to generate, as arrays and as COCO JSON)")
    before = status_kb("VmHWM")
    took, ours = median_time(lambda: evaluate_boxes(truths, detections, num_classes=len(CATEGORY_IDS)))
    after_ours = status_kb("VmHWM")
    print(f"mAP {ours.map:.4f}, mAP50 {ours.map50:.4f}, mAP75 {ours.map75:.4f}")
    print(f"ours (evaluate_boxes on arrays): {took:.3f} s; peak RSS {after_ours / 1024:,.0f} MB "
          f"(+{(after_ours - before) / 1024:,.0f} MB over the peak before it)")  # fmt: skip
    if reference_images is None or images <= reference_images:
        ref_took, stats = median_time(lambda: cocoeval(coco, results))
        after_ref = status_kb("VmHWM")
        diff = max(abs(ours.map - stats[0]), abs(ours.map50 - stats[1]), abs(ours.map75 - stats[2]))
        print(f"pycocotools (COCOeval on the same boxes as COCO JSON): {ref_took:.3f} s; peak RSS "
              f"{after_ref / 1024:,.0f} MB (+{(after_ref - after_ours) / 1024:,.0f} MB over ours)")  # fmt: skip
        print(f"ratio ours / pycocotools: {took / ref_took:.2f}")
        print(f"largest difference of mAP, mAP50, mAP75 from pycocotools': {diff:.2e}")
    else:
        print(f"pycocotools not run at {images:,} images (--reference-images {reference_images:,})")
    if dataset:
        cached(truths, detections)


def cached(truths: list[ImageBoxes], detections: list[ImageBoxes]) -> None:
    """se.evaluate on the boxes as a dataset: the first call computes and keeps, the second reads back."""
    import tempfile

    import stable_explore as se
    from stable_explore.testing.coco_scenes import scene_rows

    names = [f"c{c}" for c in CATEGORY_IDS]
    with tempfile.TemporaryDirectory() as home:
        features = se.Features(objects=se.Boxes(names=names), predictions=se.Boxes(names=names))
        built = time.perf_counter()
        rows = scene_rows(truths, {"predictions": detections}, names)
        ds = se.build(rows, features, name="scenes", home=home, progress=False)
        built = time.perf_counter() - built
        del rows
        first = time.perf_counter()
        r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
        first = time.perf_counter() - first
        again_took, again = median_time(lambda: se.evaluate(ds, predictions="predictions", ground_truth="objects"))
        kept = sum(p.stat().st_size for p in Path(home).rglob("*.npz"))
        print(f"as a dataset (built in {built:.1f} s): se.evaluate the first time {first:.3f} s ({r.cache_info}); "
              f"again {again_took:.3f} s ({again.cache_info}); kept in the home: {kept / 2**20:,.1f} MB")  # fmt: skip
        print(f"same figures when read back: {(again.map, again.map50, again.map75) == (r.map, r.map50, r.map75)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3, help="runs a time is the median of")
    parser.add_argument("--reference-images", type=int, default=None, help="run pycocotools only up to this size")
    parser.add_argument("--dataset", action="store_true", help="also se.evaluate on the boxes cached as a dataset")
    args = parser.parse_args()
    RUNS[0] = args.runs
    if args.rows:
        classification(args.rows)
    if args.images:
        detection(args.images, args.reference_images, args.dataset)


if __name__ == "__main__":
    main()
