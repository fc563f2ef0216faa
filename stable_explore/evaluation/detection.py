"""A detector's boxes against the ground-truth boxes: COCO's figures, and the rows and boxes behind them.

``se.evaluate(ds, predictions="predictions", ground_truth="objects")`` on two ``Boxes`` columns gives a
:class:`DetectionResult`: COCO's mAP, mAP50, mAP75 and per-class AP (computed by :mod:`.coco`, equal to
pycocotools'), and what became of each box at IoU 0.5 (true positive, false positive, missed), so a
number leads to its rows: ``ds[r.rows(outcome="fp", cls="dog")]``.

Examples
--------
>>> import tempfile, stable_explore as se
>>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]), predictions=se.Boxes(names=["cat", "dog"]))
>>> rows = [{"objects": {"bbox": [[0, 0, 10, 10]], "category": ["cat"]},
...          "predictions": {"bbox": [[0, 0, 10, 9], [20, 20, 5, 5]], "category": ["cat", "dog"], "score": [0.9, 0.4]}}]
>>> ds = se.build(rows, features, name="boxes", home=tempfile.mkdtemp(), progress=False)
>>> r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
>>> round(r.map50, 3), r.rows(outcome="fp").tolist()
(1.0, [0])
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.evaluation._keep import keep_outcomes
from stable_explore.evaluation.coco import (
    MAX_DETECTIONS,
    RECALL_POINTS,
    BoxMatches,
    ImageBoxes,
    box_iou,
    evaluate_boxes,
)
from stable_explore.schema import Boxes
from stable_explore.schema.boxes import convert_box

if TYPE_CHECKING:
    import pandas as pd

    from stable_explore.dataset import CachedDataset
    from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget

__all__ = ["DetectionResult", "evaluate_detections"]

OUTCOMES = ("tp", "fp", "fn")


def _boxes_column(ds: CachedDataset, column: str, what: str) -> Boxes:
    if column not in ds.features:
        msg = f"no column {column!r} of {what}; columns are {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    feature = ds.features[column]
    if not isinstance(feature, Boxes):
        msg = f"{what}={column!r} is not a Boxes column (it is {feature!r})"
        raise ColumnNotFoundError(msg)
    return feature


def _sizes(ds: CachedDataset, feature: Boxes, column: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's image width and height, for normalized boxes (from ``width`` / ``height`` columns)."""
    if not feature.normalized:
        return None
    if "width" not in ds.features or "height" not in ds.features:
        msg = (
            f"the boxes of {column!r} are normalized (0..1), and COCO's evaluation is in pixels: "
            f"the dataset needs 'width' and 'height' columns (it has {list(ds.features)})"
        )
        raise InvalidOptionError(msg)
    width = np.asarray(ds.arrow_column("width").to_pylist(), dtype=np.float64)
    height = np.asarray(ds.arrow_column("height").to_pylist(), dtype=np.float64)
    return width, height


def _image_boxes(
    ds: CachedDataset, column: str, feature: Boxes, classes: dict[str, int], *, scored: bool
) -> list[ImageBoxes]:
    """One :class:`ImageBoxes` per row: pixels, x y w h, classes indexed as the ground truth's names."""
    sizes = _sizes(ds, feature, column)
    keys = ds.keys()
    names = list(feature.names)
    out = []
    for row, stored in enumerate(ds.arrow_column(column).to_pylist()):
        boxes = stored or []
        xywh = np.zeros((len(boxes), 4))
        cls = np.zeros(len(boxes), dtype=np.int64)
        scores = np.ones(len(boxes))
        crowd = np.zeros(len(boxes), dtype=bool)
        for i, box in enumerate(boxes):
            xywh[i] = convert_box(box["bbox"], feature.format, "xywh")
            if sizes is not None:
                xywh[i] *= [sizes[0][row], sizes[1][row], sizes[0][row], sizes[1][row]]
            name = names[box["category"]]
            if name not in classes:
                msg = (
                    f"column {column!r}: row {row} (key {keys[row]!r}) box {i} is of class {name!r}, "
                    f"which the ground truth's classes {list(classes)} do not name"
                )
                raise InvalidOptionError(msg)
            cls[i] = classes[name]
            if scored:
                if box["score"] is None:
                    msg = f"column {column!r}: row {row} (key {keys[row]!r}) box {i} has no score; predictions need one"
                    raise InvalidOptionError(msg)
                scores[i] = box["score"]
            elif box.get("attributes"):
                crowd[i] = bool(json.loads(box["attributes"]).get("iscrowd", 0))
        out.append(ImageBoxes(xywh, cls, scores=scores if scored else None, crowd=None if scored else crowd))
    return out


class DetectionResult:
    """COCO's figures for predicted boxes against the ground truth, and each box's outcome at IoU 0.5."""

    def __init__(
        self,
        matches: BoxMatches,
        names: Sequence[str],
        *,
        keys: Sequence[object],
        truth_classes: Sequence[np.ndarray],
        pred_classes: Sequence[np.ndarray],
        name: str = "predictions",
        dataset: CachedDataset | None = None,
        ground_truth: str | None = None,
        confused: Sequence[np.ndarray] | None = None,
    ) -> None:
        self.matches = matches
        self.ground_truth = ground_truth  # the Boxes column of the ground truth (for the browser's overlays)
        self._truth_classes = list(truth_classes)
        self._pred_classes = list(pred_classes)
        # per image, per prediction: the missed ground-truth box of another class it lies on (-1: none)
        self._confused = (
            list(confused)
            if confused is not None
            else [np.full(len(o), -1, dtype=np.int64) for o in matches.detection_outcomes]
        )
        self._cells: list[np.ndarray] | None = None
        self.names = list(names)
        self.name = name
        self.dataset = dataset
        self._keys = list(keys)
        self.cache_info = "computed"
        """How ``se.evaluate`` came by this result: ``"reused: ..."`` from the home, or ``"computed: ..."`` and why."""

    @property
    def map(self) -> float:
        """AP over IoU 0.50:0.95, averaged over the classes (COCO's mAP)."""
        return self.matches.map

    @property
    def map50(self) -> float:
        """AP at IoU 0.5."""
        return self.matches.map50

    @property
    def map75(self) -> float:
        """AP at IoU 0.75."""
        return self.matches.map75

    def per_class_ap(self, iou: float | None = None) -> pd.Series:
        """Each class's AP over IoU 0.50:0.95 (or at one threshold ``iou``), by name (NaN: a class with no box)."""
        import pandas as pd

        if iou is None:
            values = self.matches.per_class_ap()
        else:
            at = self.matches.precision[self._threshold(iou)]
            values = np.array([at[:, k].mean() if (at[:, k] > -1).all() else np.nan for k in range(at.shape[1])])
        return pd.Series(values, index=pd.Index(self.names, name="class"), name="ap")

    def _threshold(self, iou: float) -> int:
        t = round((iou - 0.5) / 0.05)
        if not 0 <= t < self.matches.precision.shape[0] or abs(0.5 + 0.05 * t - iou) > 1e-9:
            msg = f"iou={iou} is not one of COCO's thresholds 0.5, 0.55, ..., 0.95"
            raise InvalidOptionError(msg)
        return t

    def precision_recall(self, cls: str | int, iou: float = 0.5) -> pd.DataFrame:
        """The interpolated precision-recall curve of class ``cls`` at IoU ``iou`` (0.5, 0.55, ..., 0.95)."""
        import pandas as pd

        k = self._class(cls)
        return pd.DataFrame({"recall": RECALL_POINTS, "precision": self.matches.precision[self._threshold(iou), :, k]})

    def class_index(self, cls: str | int) -> int:
        """The index in :attr:`names` of class ``cls`` (a name, or an index checked to be one)."""
        return self._class(cls)

    def _class(self, cls: str | int) -> int:
        if isinstance(cls, str):
            if cls not in self.names:
                msg = f"{cls!r} is not a class; the classes are {self.names}"
                raise InvalidOptionError(msg)
            return self.names.index(cls)
        if not 0 <= int(cls) < len(self.names):
            msg = f"class {cls!r} is outside 0..{len(self.names) - 1}"
            raise InvalidOptionError(msg)
        return int(cls)

    def _cells_of_images(self) -> list[np.ndarray]:
        """Per image, the confusion-matrix cell (true * (K + 1) + predicted, K: background) of each of its boxes."""
        if self._cells is not None:
            return self._cells
        k = len(self.names)
        cells = []
        m = self.matches
        for image, (d_out, t_out) in enumerate(zip(m.detection_outcomes, m.truth_outcomes, strict=True)):
            pred_cls, truth_cls, confused = self._pred_classes[image], self._truth_classes[image], self._confused[image]
            found: list[int] = []
            taken = np.zeros(len(t_out), dtype=bool)
            for d, outcome in enumerate(d_out):
                if outcome == "tp":
                    found.append(int(pred_cls[d]) * (k + 1) + int(pred_cls[d]))
                elif outcome == "fp":
                    g = int(confused[d])
                    if g >= 0:
                        taken[g] = True
                        found.append(int(truth_cls[g]) * (k + 1) + int(pred_cls[d]))
                    else:
                        found.append(k * (k + 1) + int(pred_cls[d]))
            for g, outcome in enumerate(t_out):
                if outcome == "fn" and not taken[g]:
                    found.append(int(truth_cls[g]) * (k + 1) + k)
            cells.append(np.asarray(found, dtype=np.int64))
        self._cells = cells
        return cells

    @property
    def confusion_matrix(self) -> np.ndarray:
        """Boxes at IoU 0.5 by true class (rows) and predicted class (columns); the last row and column: background.

        The diagonal holds the true positives. A false positive lying (IoU >= 0.5) on a missed ground-truth
        box of another class counts in (that box's class, the predicted class), greedily by score, as
        FiftyOne's class-agnostic confusion does; any other false positive in (background, its class), and
        any other missed box in (its class, background). Crowds and boxes COCO ignores are not counted.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> boxes = se.Boxes(names=["cat", "dog"])
        >>> cat = {"bbox": [0, 0, 10, 10], "category": "cat"}
        >>> rows = [{"objects": [cat], "predictions": [{**cat, "category": "dog", "score": 0.9}]},
        ...         {"objects": [], "predictions": [{**cat, "score": 0.5}]}]
        >>> ds = se.build(rows, se.Features(objects=boxes, predictions=boxes), name="b", home=tempfile.mkdtemp(),
        ...               progress=False)
        >>> r = se.evaluate(ds, predictions="predictions", ground_truth="objects")
        >>> r.confusion_matrix.tolist(), r.confusion_rows("background", "cat").tolist()
        ([[0, 1, 0], [0, 0, 0], [1, 0, 0]], [1])
        """
        k = len(self.names) + 1
        cells = self._cells_of_images()
        flat = np.concatenate(cells) if cells else np.zeros(0, dtype=np.int64)
        return np.bincount(flat, minlength=k * k).reshape(k, k)

    def confusion_rows(self, true: str | int, pred: str | int) -> np.ndarray:
        """The rows with at least one box in a cell of :attr:`confusion_matrix` (``"background"`` or ``len(names)``)."""
        k = len(self.names)
        t, p = (k if c in ("background", k) else self._class(c) for c in (true, pred))
        cell = t * (k + 1) + p
        return np.flatnonzero([bool((c == cell).any()) for c in self._cells_of_images()])

    def truth_classes(self, row: int) -> np.ndarray:
        """The class index of each ground-truth box of row ``row``, in the order of its boxes."""
        return self._truth_classes[row]

    def prediction_classes(self, row: int) -> np.ndarray:
        """The class index (in :attr:`names`) of each predicted box of row ``row``."""
        return self._pred_classes[row]

    @property
    def keys(self) -> list[Any]:
        """The stored key of every row (image) evaluated."""
        return self._keys

    def boxes(self) -> pd.DataFrame:
        """Every box with its outcome at IoU 0.5.

        Columns: ``row``, ``key``, ``side`` (``"prediction"`` or ``"truth"``), ``box`` (its index in
        the row), ``class``, ``outcome`` (``"tp"``, ``"fp"``, ``"fn"`` or ``"ignored"``) and
        ``matched`` (the other side's box, -1: none).
        """
        import pandas as pd

        table: dict[str, list[object]] = {k: [] for k in ("row", "key", "side", "box", "outcome", "matched")}
        m = self.matches
        for row in range(len(m.detection_outcomes)):
            matched_truth = m.detection_match[row]
            truth_match = np.full(len(m.truth_outcomes[row]), -1)
            for d, g in enumerate(matched_truth):
                if g >= 0:
                    truth_match[g] = d
            for side, outcomes, matched in (
                ("prediction", m.detection_outcomes[row], matched_truth),
                ("truth", m.truth_outcomes[row], truth_match),
            ):
                for i, outcome in enumerate(outcomes):
                    table["row"].append(row)
                    table["key"].append(self._keys[row])
                    table["side"].append(side)
                    table["box"].append(i)
                    table["outcome"].append(outcome)
                    table["matched"].append(int(matched[i]))
        frame = pd.DataFrame(table)
        frame["class"] = self._box_classes(frame)
        return frame

    def _box_classes(self, frame: pd.DataFrame) -> list[str]:
        classes = {"prediction": self._pred_classes, "truth": self._truth_classes}
        return [self.names[classes[s][r][b]] for r, s, b in zip(frame["row"], frame["side"], frame["box"], strict=True)]

    def counts(self) -> dict[str, np.ndarray]:
        """Per row: how many predictions were true and false positives, and how many truths were missed."""
        m = self.matches
        return {
            "tp": np.array([int((o == "tp").sum()) for o in m.detection_outcomes]),
            "fp": np.array([int((o == "fp").sum()) for o in m.detection_outcomes]),
            "fn": np.array([int((o == "fn").sum()) for o in m.truth_outcomes]),
        }

    def rows(self, outcome: str = "fp", cls: str | int | None = None) -> np.ndarray:
        """The rows with at least one box of ``outcome`` (``"tp"``, ``"fp"``, ``"fn"``), of class ``cls`` if given."""
        if outcome not in OUTCOMES:
            msg = f"outcome must be one of {OUTCOMES}, got {outcome!r}"
            raise InvalidOptionError(msg)
        m = self.matches
        k = None if cls is None else self._class(cls)
        side = m.truth_outcomes if outcome == "fn" else m.detection_outcomes
        classes = self._truth_classes if outcome == "fn" else self._pred_classes
        hit = [
            bool(((o == outcome) & (True if k is None else c == k)).any()) for o, c in zip(side, classes, strict=True)
        ]
        return np.flatnonzero(hit)

    def columns(self) -> dict[str, np.ndarray]:
        """Per-row counts to keep with the rows (``ds.add_columns(r.columns())``): ``<name>_tp``, ``_fp``, ``_fn``."""
        return {f"{self.name}_{k}": v for k, v in self.counts().items()}

    def save(self, *, message: str | None = None, tag: str | None = None, progress: bool = True) -> CachedDataset:
        """The evaluated dataset with :meth:`columns` added, as a new version."""
        text = message if message is not None else f"evaluation of {self.name}: mAP {self.map:.4f}"
        return keep_outcomes(self.dataset, self.columns(), text, tag=tag, progress=progress)

    def kept_arrays(self) -> dict[str, np.ndarray]:
        """What this result is made of, as flat numpy arrays (what :mod:`.cache` keeps in the home)."""
        m = self.matches
        return {
            "precision": m.precision,
            "recall": m.recall,
            "det_count": np.array([len(o) for o in m.detection_outcomes], dtype=np.int64),
            "truth_count": np.array([len(o) for o in m.truth_outcomes], dtype=np.int64),
            "det_outcome": _flat([[_CODES[o] for o in outcomes] for outcomes in m.detection_outcomes], np.int8),
            "det_match": _flat(m.detection_match, np.int64),
            "det_class": _flat(self._pred_classes, np.int64),
            "truth_outcome": _flat([[_CODES[o] for o in outcomes] for outcomes in m.truth_outcomes], np.int8),
            "truth_class": _flat(self._truth_classes, np.int64),
            "det_confused": _flat(self._confused, np.int64),
        }

    def widget(self, browser: object = None) -> ConfusionMatrixWidget:
        """The boxes' confusion matrix and per-class AP as a notebook widget, linked to a browser's grid.

        Rows are the true class, columns the predicted one, counted in boxes at IoU 0.5 (see
        :attr:`confusion_matrix`), with a background row and column; a click on a cell filters a shard
        browser's grid (``ds.browse()``) to exactly ``r.confusion_rows(true, pred)``. Beside it, each
        class's AP and AP50; a click on a class draws its precision-recall curve. Needs the ``lab`` extra.
        """
        from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget

        return ConfusionMatrixWidget(self, browser=browser)

    def __repr__(self) -> str:
        return (
            f"<DetectionResult {self.name}: mAP {self.map:.4f}, mAP50 {self.map50:.4f}, mAP75 {self.map75:.4f} "
            f"over {len(self._keys):,} images, {len(self.names)} classes>"
        )

    def _repr_html_(self) -> str:
        ap = self.per_class_ap()
        body = "".join(
            f"<tr><th>{html.escape(str(n))}</th><td>{'' if np.isnan(v) else f'{v:.4f}'}</td></tr>"
            for n, v in ap.items()
        )
        return f"<div><p>{html.escape(repr(self))}</p><table><tr><th>class</th><th>AP</th></tr>{body}</table></div>"


def truth_column(ds: CachedDataset, predictions: str, ground_truth: str | None) -> str:
    """The ``Boxes`` column of ground truth: ``ground_truth``, else the first Boxes column but ``predictions``."""
    _boxes_column(ds, predictions, "predictions")
    if ground_truth is None:
        ground_truth = next((n for n, f in ds.features.items() if isinstance(f, Boxes) and n != predictions), None)
        if ground_truth is None:
            msg = f"no Boxes column of ground truth beside {predictions!r}; pass ground_truth="
            raise ColumnNotFoundError(msg)
    _boxes_column(ds, ground_truth, "ground_truth")
    return ground_truth


def evaluate_detections(
    ds: CachedDataset, predictions: str, ground_truth: str | None, *, cache: bool = True
) -> DetectionResult:
    """COCO's evaluation of the ``Boxes`` column ``predictions`` against ``ground_truth`` (default: the first other).

    With ``cache`` (and ``ds`` in a catalog), an evaluation of the same version, columns and parameters
    is read back from the home (:mod:`.cache`) instead of computed.
    """
    ground_truth = truth_column(ds, predictions, ground_truth)
    pred_feature = _boxes_column(ds, predictions, "predictions")
    truth_feature = _boxes_column(ds, ground_truth, "ground_truth")
    names = list(truth_feature.names)
    entry = None
    if cache:
        from stable_explore.evaluation.cache import cache_entry

        roles = {"predictions": predictions, "ground_truth": ground_truth}
        geometry = {c: [ds.stored_column(n) for n in ("width", "height") if n in ds.features] for c in roles.values()}
        entry = cache_entry(ds, "detection", roles, {"max_detections": MAX_DETECTIONS, "sizes": geometry})
        kept = entry.load() if entry is not None else None
        if kept is not None:
            result = _from_arrays(kept, names, keys=ds.keys(), name=predictions, dataset=ds, ground_truth=ground_truth)
            result.cache_info = "reused: same version, columns and parameters"
            return result
    classes = {n: i for i, n in enumerate(names)}
    truths = _image_boxes(ds, ground_truth, truth_feature, classes, scored=False)
    found = _image_boxes(ds, predictions, pred_feature, classes, scored=True)
    matches = evaluate_boxes(truths, found, num_classes=len(names))
    result = DetectionResult(
        matches,
        names,
        keys=ds.keys(),
        truth_classes=[b.classes for b in truths],
        pred_classes=[b.classes for b in found],
        name=predictions,
        dataset=ds,
        ground_truth=ground_truth,
        confused=confusions(truths, found, matches),
    )
    if entry is not None:
        entry.store(result.kept_arrays())
        result.cache_info = f"computed: first evaluation of {predictions} against {ground_truth} on this version"
    elif not cache:
        result.cache_info = "computed: cache=False"
    else:
        result.cache_info = "computed: a dataset outside a catalog, whose evaluations are not kept"
    return result


def confusions(truths: Sequence[ImageBoxes], found: Sequence[ImageBoxes], matches: BoxMatches) -> list[np.ndarray]:
    """Per image, per prediction: the missed ground-truth box of another class it lies on (IoU >= 0.5), or -1.

    Only false positives at IoU 0.5 take one, the most confident first, each the free missed box of highest
    IoU; the confusion matrix then counts the pair as a confusion rather than a stray and a miss.
    """
    out = []
    for truth, det, d_out, t_out in zip(truths, found, matches.detection_outcomes, matches.truth_outcomes, strict=True):
        confused = np.full(len(det.boxes), -1, dtype=np.int64)
        fps = np.flatnonzero(d_out == "fp")
        missed = np.flatnonzero(t_out == "fn")
        if len(fps) and len(missed):
            scores = det.scores if det.scores is not None else np.ones(len(det.boxes))
            fps = fps[np.argsort(-scores[fps], kind="stable")]
            ious = box_iou(det.boxes[fps], truth.boxes[missed], np.zeros(len(missed), dtype=bool))
            free = np.ones(len(missed), dtype=bool)
            for i, d in enumerate(fps):
                candidates = np.where(free & (ious[i] >= 0.5) & (truth.classes[missed] != det.classes[d]), ious[i], -1)
                best = int(np.argmax(candidates))
                if candidates[best] >= 0.5:
                    confused[d] = missed[best]
                    free[best] = False
        out.append(confused)
    return out


_CODES = {"tp": 0, "fp": 1, "fn": 2, "ignored": 3}
_OUTCOME_OF = np.array(list(_CODES), dtype=object)


def _flat(parts: Sequence[Any], dtype: Any) -> np.ndarray:
    return np.concatenate([np.asarray(p, dtype=dtype) for p in parts]) if parts else np.zeros(0, dtype=dtype)


def _from_arrays(
    kept: dict[str, np.ndarray],
    names: list[str],
    *,
    keys: Sequence[object],
    name: str,
    dataset: CachedDataset,
    ground_truth: str,
) -> DetectionResult:
    def split(values: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
        return np.split(values, np.cumsum(counts)[:-1]) if len(counts) else []

    det, truth = kept["det_count"], kept["truth_count"]
    matches = BoxMatches(
        kept["precision"],
        kept["recall"],
        split(_OUTCOME_OF[kept["det_outcome"]], det),
        split(kept["det_match"], det),
        split(_OUTCOME_OF[kept["truth_outcome"]], truth),
    )
    return DetectionResult(
        matches,
        names,
        keys=keys,
        truth_classes=split(kept["truth_class"], truth),
        pred_classes=split(kept["det_class"], det),
        confused=split(kept["det_confused"], det),
        name=name,
        dataset=dataset,
        ground_truth=ground_truth,
    )
