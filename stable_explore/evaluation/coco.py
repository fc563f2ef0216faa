"""COCO's detection evaluation in numpy: greedy matching at IoU 0.50:0.95, then 101-point interpolated AP.

What pycocotools' ``COCOeval`` (bounding boxes, area "all", at most 100 detections an image and class)
computes, written from its published definition and tested equal to it (tests/evaluation/): for each image
and class, detections in descending score order each take the unmatched ground-truth box of highest IoU
at or above the threshold (a later box wins a tie), preferring boxes that count over ignored ones; a
crowd box (``iscrowd``) is ignored, may be matched many times, and its IoU is the intersection over the
detection's area. A detection matched to an ignored box is ignored too. Per class, precision at 101 recall
points (0, 0.01, ..., 1) is made monotone and averaged; a class with no box that counts has no AP.

Examples
--------
>>> gt = [ImageBoxes(np.array([[0, 0, 10, 10]]), np.array([0]))]
>>> dt = [ImageBoxes(np.array([[0, 0, 10, 9]]), np.array([0]), scores=np.array([0.9]))]
>>> result = evaluate_boxes(gt, dt, num_classes=1)
>>> round(result.map, 4), round(result.map50, 4), round(result.map75, 4)
(0.9, 1.0, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stable_explore.errors import InvalidOptionError

__all__ = ["IOU_THRESHOLDS", "RECALL_POINTS", "BoxMatches", "ImageBoxes", "evaluate_boxes", "box_iou"]

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)  # as np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)
MAX_DETECTIONS = 100  # per image and class, as COCO's maxDets[-1]


@dataclass(frozen=True)
class ImageBoxes:
    """One image's boxes: ``boxes`` (N x 4, x y w h in pixels) and ``classes`` (N class indices).

    Ground truth may give ``crowd`` (N flags), predictions give ``scores`` (N).
    """

    boxes: np.ndarray
    classes: np.ndarray
    scores: np.ndarray | None = None
    crowd: np.ndarray | None = None

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "classes", np.asarray(self.classes, dtype=np.int64).reshape(-1))
        n = len(boxes)
        if len(self.classes) != n:
            msg = f"{n} boxes but {len(self.classes)} classes"
            raise InvalidOptionError(msg)
        for name in ("scores", "crowd"):
            value = getattr(self, name)
            if value is not None:
                value = np.asarray(value, dtype=np.float64 if name == "scores" else bool).reshape(-1)
                if len(value) != n:
                    msg = f"{n} boxes but {len(value)} {name}"
                    raise InvalidOptionError(msg)
                object.__setattr__(self, name, value)


@dataclass
class BoxMatches:
    """COCO's figures for a set of images, and what became of each box at IoU 0.5.

    ``precision`` is T x R x K (IoU thresholds x recall points x classes; -1 where a class has no box
    that counts), ``recall`` T x K. Per image, ``detection_outcomes[i]`` says for each prediction "tp",
    "fp" or "ignored" (matched to a crowd box, or beyond the 100 best of its class), and
    ``detection_match[i]`` the index of the ground-truth box it matched (-1: none); ``truth_outcomes[i]``
    says for each ground-truth box "tp", "fn" or "ignored" (a crowd).
    """

    precision: np.ndarray
    recall: np.ndarray
    detection_outcomes: list[np.ndarray] = field(repr=False)
    detection_match: list[np.ndarray] = field(repr=False)
    truth_outcomes: list[np.ndarray] = field(repr=False)

    def _mean(self, values: np.ndarray) -> float:
        kept = values[values > -1]
        return float(kept.mean()) if kept.size else -1.0

    @property
    def map(self) -> float:
        """AP averaged over IoU 0.50:0.95 and the classes (COCO's first stat)."""
        return self._mean(self.precision)

    @property
    def map50(self) -> float:
        """AP at IoU 0.5."""
        return self._mean(self.precision[0])

    @property
    def map75(self) -> float:
        """AP at IoU 0.75."""
        return self._mean(self.precision[5])

    def per_class_ap(self) -> np.ndarray:
        """Each class's AP over IoU 0.50:0.95 (NaN for a class with no box that counts)."""
        out = np.full(self.precision.shape[2], np.nan)
        for k in range(self.precision.shape[2]):
            value = self._mean(self.precision[:, :, k])
            if value > -1:
                out[k] = value
        return out


def box_iou(detections: np.ndarray, truths: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of each detection (rows) with each ground-truth box (columns), boxes as x y w h.

    Against a crowd box, the IoU is the intersection over the detection's area.
    """
    d = detections[:, None, :]
    g = truths[None, :, :]
    w = np.minimum(d[..., 0] + d[..., 2], g[..., 0] + g[..., 2]) - np.maximum(d[..., 0], g[..., 0])
    h = np.minimum(d[..., 1] + d[..., 3], g[..., 1] + g[..., 3]) - np.maximum(d[..., 1], g[..., 1])
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    det_area = (detections[:, 2] * detections[:, 3])[:, None]
    union = np.where(crowd[None, :], det_area, det_area + (truths[:, 2] * truths[:, 3])[None, :] - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, 0.0)


def _match(ious: np.ndarray, ignored: np.ndarray, crowd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of detections (rows of ``ious``, best score first) to ground truth (columns).

    The ground truth's columns hold the boxes that count first. For each threshold: the matched column
    of each detection (-1: none) and whether each column was matched.
    """
    thresholds = np.minimum(IOU_THRESHOLDS, 1 - 1e-10)
    num_t, (num_d, num_g) = len(thresholds), ious.shape
    det_match = np.full((num_t, num_d), -1, dtype=np.int64)
    taken = np.zeros((num_t, num_g), dtype=bool)
    counts = ~ignored
    for d in range(num_d):
        row = ious[d]
        # candidates at every threshold: not yet taken, or a crowd (which any number may match)
        free = ~taken | crowd[None, :]
        at_least = row[None, :] >= thresholds[:, None]
        for group in (counts, ignored):  # the boxes that count first; ignored ones only if none of those matches
            ok = free & at_least & group[None, :]
            if not ok.any():
                continue
            scores = np.where(ok, row[None, :], -1.0)
            best = scores.max(axis=1)
            # the last column holding the best value (pycocotools keeps a later box on a tie)
            last = num_g - 1 - np.argmax((scores == best[:, None])[:, ::-1], axis=1)
            newly = (det_match[:, d] < 0) & (best >= 0)
            det_match[newly, d] = last[newly]
            taken[np.flatnonzero(newly), last[newly]] = True
        # (a detection matched among the boxes that count never looks at the ignored ones)
    return det_match, taken


def evaluate_boxes(truths: list[ImageBoxes], detections: list[ImageBoxes], *, num_classes: int) -> BoxMatches:
    """COCO bounding-box evaluation of ``detections`` against ``truths`` (one :class:`ImageBoxes` each per image)."""
    if len(truths) != len(detections):
        msg = f"{len(truths)} images of ground truth but {len(detections)} of predictions"
        raise InvalidOptionError(msg)
    num_t = len(IOU_THRESHOLDS)
    # per class: the scores, matched flags and ignored flags of every kept detection, and the count of boxes
    scores_of: list[list[np.ndarray]] = [[] for _ in range(num_classes)]
    matched_of: list[list[np.ndarray]] = [[] for _ in range(num_classes)]
    ignored_of: list[list[np.ndarray]] = [[] for _ in range(num_classes)]
    counted = np.zeros(num_classes, dtype=np.int64)
    det_outcomes, det_matches, truth_outcomes = [], [], []
    for truth, det in zip(truths, detections, strict=True):
        crowd_all = truth.crowd if truth.crowd is not None else np.zeros(len(truth.boxes), dtype=bool)
        scores_all = det.scores if det.scores is not None else np.ones(len(det.boxes))
        for classes, name in ((truth.classes, "ground truth"), (det.classes, "prediction")):
            if len(classes) and (classes.min() < 0 or classes.max() >= num_classes):
                msg = f"a {name} box has class {int(classes.max())}, outside 0..{num_classes - 1}"
                raise InvalidOptionError(msg)
        d_outcome = np.full(len(det.boxes), "ignored", dtype=object)
        d_match = np.full(len(det.boxes), -1, dtype=np.int64)
        t_outcome = np.where(crowd_all, "ignored", "fn").astype(object)
        for k in np.union1d(truth.classes, det.classes):
            g_idx = np.flatnonzero(truth.classes == k)
            d_idx = np.flatnonzero(det.classes == k)
            crowd = crowd_all[g_idx]
            g_order = np.argsort(crowd, kind="stable")  # the boxes that count first, each group in file order
            g_idx, crowd = g_idx[g_order], crowd[g_order]
            d_order = np.argsort(-scores_all[d_idx], kind="stable")[:MAX_DETECTIONS]
            d_idx = d_idx[d_order]
            counted[k] += int((~crowd).sum())
            if not len(d_idx):
                continue
            ious = box_iou(det.boxes[d_idx], truth.boxes[g_idx], crowd)
            match, taken = _match(ious, crowd, crowd)
            matched = match >= 0
            ignored = np.zeros_like(matched)
            ignored[matched] = crowd[match[matched]]
            scores_of[k].append(scores_all[d_idx])
            matched_of[k].append(matched)
            ignored_of[k].append(ignored)
            # at IoU 0.5, what became of each box
            d_outcome[d_idx] = np.where(ignored[0], "ignored", np.where(matched[0], "tp", "fp"))
            d_match[d_idx[matched[0]]] = g_idx[match[0][matched[0]]]
            t_outcome[g_idx[taken[0] & ~crowd]] = "tp"
        det_outcomes.append(d_outcome)
        det_matches.append(d_match)
        truth_outcomes.append(t_outcome)
    precision = -np.ones((num_t, len(RECALL_POINTS), num_classes))
    recall = -np.ones((num_t, num_classes))
    for k in range(num_classes):
        if counted[k] == 0:
            continue
        if not scores_of[k]:
            precision[:, :, k] = 0.0
            recall[:, k] = 0.0
            continue
        scores = np.concatenate(scores_of[k])
        order = np.argsort(-scores, kind="mergesort")
        matched = np.concatenate(matched_of[k], axis=1)[:, order]
        ignored = np.concatenate(ignored_of[k], axis=1)[:, order]
        tp = np.cumsum(matched & ~ignored, axis=1, dtype=np.float64)
        fp = np.cumsum(~matched & ~ignored, axis=1, dtype=np.float64)
        for t in range(num_t):
            rc = tp[t] / counted[k]
            pr = tp[t] / (fp[t] + tp[t] + np.spacing(1))
            recall[t, k] = rc[-1] if len(rc) else 0.0
            pr = np.maximum.accumulate(pr[::-1])[::-1]  # precision made monotone, from the right
            at = np.searchsorted(rc, RECALL_POINTS, side="left")
            q = np.zeros(len(RECALL_POINTS))
            inside = at < len(pr)
            q[inside] = pr[at[inside]]
            precision[t, :, k] = q
    return BoxMatches(precision, recall, det_outcomes, det_matches, truth_outcomes)
