"""Predictions against labels: classification figures and COCO's detection figures, with the rows behind them.

``se.evaluate(ds, predictions=..., ground_truth=...)`` is the entry point (:mod:`.evaluate`); the figures
equal scikit-learn's and pycocotools' (tests/evaluation/).
"""

from stable_explore.evaluation.classification import ClassificationResult
from stable_explore.evaluation.coco import BoxMatches, ImageBoxes, evaluate_boxes
from stable_explore.evaluation.detection import DetectionResult
from stable_explore.evaluation.detection_compare import DetectionComparison
from stable_explore.evaluation.evaluate import Comparison, evaluate

__all__ = [
    "BoxMatches",
    "ClassificationResult",
    "Comparison",
    "DetectionComparison",
    "DetectionResult",
    "ImageBoxes",
    "evaluate",
    "evaluate_boxes",
]
