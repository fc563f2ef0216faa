"""Boxes worth a look: ``box_issues`` and ``prediction_issues``.

``box_issues`` finds boxes outside the image, degenerate, tiny or duplicated, and images without
boxes; ``prediction_issues`` what a model's confident boxes say the labels miss or get wrong.

Read from the Boxes columns as stored (one Arrow read each, numpy over the boxes); no image is
decoded. The image's size comes from ``width`` and ``height`` columns when the dataset has them
(COCO and YOLO imports do), else boxes in pixels are not checked against the image.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import ColumnNotFoundError, InvalidOptionError
from stable_explore.schema import Boxes
from stable_explore.schema.boxes import flat_boxes
from stable_explore.signals._rows import result_table

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["box_issues", "prediction_issues"]


def box_issues(
    ds: CachedDataset, *, column: str | None = None, tiny: float = 4.0, duplicate_iou: float = 0.9
) -> pa.Table:
    """One row per box worth a look, and per image without boxes.

    Parameters
    ----------
    ds
        The dataset (or a view of it).
    column
        The :class:`~stable_explore.Boxes` column (default: the first one).
    tiny
        A box narrower or lower than this many pixels is ``"tiny"`` (normalized boxes are checked
        only where the dataset has ``width`` and ``height`` columns).
    duplicate_iou
        Two boxes of one class in one image overlapping more than this are ``"duplicate"`` (the
        later one is listed, ``other`` names the first).

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``box`` (its index in the row; -1 for ``"no boxes"``), ``category`` (the
        class name), ``issue`` (``"outside"``, ``"degenerate"``, ``"tiny"``, ``"duplicate"`` or
        ``"no boxes"``), ``other`` (the first box of a duplicate, else -1). ``ds.drop_boxes`` takes
        ``row`` and ``box``.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> from stable_explore.signals import box_issues
    >>> features = se.Features(objects=se.Boxes(names=["cat"]), width=se.Value("int64"), height=se.Value("int64"))
    >>> boxes = {"bbox": [[0, 0, 20, 20], [1, 0, 20, 20], [30, 30, 2, 2]], "category": [0, 0, 0]}
    >>> rows = [{"objects": boxes, "width": 40, "height": 40}, {"objects": [], "width": 40, "height": 40}]
    >>> ds = se.build(rows, features, name="b", home=tempfile.mkdtemp(), progress=False)
    >>> [(r["row"], r["box"], r["issue"]) for r in box_issues(ds).to_pylist()]
    [(0, 1, 'duplicate'), (0, 2, 'tiny'), (1, -1, 'no boxes')]
    """
    name = column if column is not None else ds.features.first_of(Boxes)
    feature = ds.features.get(name) if name is not None else None
    if name is None or not isinstance(feature, Boxes):
        what = f"named {column!r}" if column else "in this dataset"
        msg = f"no Boxes column {what}; columns: {list(ds.features)}"
        raise ColumnNotFoundError(msg)
    flat, row_of, index_in_row = flat_boxes(ds.arrow_column(name))
    counts = np.bincount(row_of, minlength=len(ds))  # boxes per row
    coords = _xyxy(flat, feature)
    categories = flat.field("category").to_numpy(zero_copy_only=False) if len(flat) else np.zeros(0, np.int64)
    sizes = _image_sizes(ds, row_of)
    issues: list[tuple[int, int, int, str, int]] = [
        (int(r), -1, -1, "no boxes", -1) for r in np.flatnonzero(counts == 0)
    ]
    width, height = coords[:, 2] - coords[:, 0], coords[:, 3] - coords[:, 1]
    degenerate = (width <= 0) | (height <= 0)
    scale = sizes if sizes is not None and feature.normalized else None
    pixel_w = width * scale[:, 0] if scale is not None else width
    pixel_h = height * scale[:, 1] if scale is not None else height
    small = ~degenerate & ((pixel_w < tiny) | (pixel_h < tiny))
    if feature.normalized and scale is None:
        small[:] = False  # fractions of an image of unknown size: no pixel threshold applies
    outside: np.ndarray = np.zeros(len(coords), dtype=bool)
    if feature.normalized:
        outside = np.asarray((coords < -1e-6).any(axis=1) | (coords > 1 + 1e-6).any(axis=1))
    elif sizes is not None:
        outside = np.asarray((coords[:, :2] < -1e-6).any(axis=1) | (coords[:, 2] > sizes[:, 0] + 1e-6))
        outside |= coords[:, 3] > sizes[:, 1] + 1e-6
    for kind, mask in (("outside", outside), ("degenerate", degenerate), ("tiny", small)):
        issues += [(int(row_of[i]), int(index_in_row[i]), int(categories[i]), kind, -1) for i in np.flatnonzero(mask)]
    issues += _duplicates(coords, categories, row_of, index_in_row, counts, duplicate_iou)
    issues.sort(key=lambda item: (item[0], item[1], item[3]))
    names = feature.names
    return result_table(
        ds,
        np.array([item[0] for item in issues], dtype=np.int64),
        {
            "box": pa.array([item[1] for item in issues], type=pa.int64()),
            "category": pa.array([names[item[2]] if item[2] >= 0 else None for item in issues], type=pa.string()),
            "issue": pa.array([item[3] for item in issues], type=pa.string()),
            "other": pa.array([item[4] for item in issues], type=pa.int64()),
        },
    )


def _xyxy(flat: pa.Array, feature: Boxes) -> np.ndarray:
    if not len(flat):
        return np.zeros((0, 4), dtype=np.float64)
    raw: np.ndarray = np.asarray(pc.list_flatten(flat.field("bbox")).to_numpy(zero_copy_only=False), dtype=np.float64)
    raw = raw.reshape(-1, 4)
    a, b, c, d = raw.T
    if feature.format == "xyxy":
        return raw
    if feature.format == "cxcywh":
        return np.stack([a - c / 2, b - d / 2, a + c / 2, b + d / 2], axis=1)
    return np.stack([a, b, a + c, b + d], axis=1)


def _image_sizes(ds: CachedDataset, row_of: np.ndarray) -> np.ndarray | None:
    """Each box's image (width, height) from the ``width`` and ``height`` columns, or None without them."""
    if "width" not in ds.features or "height" not in ds.features:
        return None
    columns = [
        np.asarray(ds.arrow_column(name).to_numpy(zero_copy_only=False), dtype=np.float64)
        for name in ("width", "height")
    ]
    sizes: np.ndarray = np.stack(columns, axis=1)[row_of]
    return sizes


def _duplicates(
    coords: np.ndarray,
    categories: np.ndarray,
    row_of: np.ndarray,
    index_in_row: np.ndarray,
    counts: np.ndarray,
    threshold: float,
) -> list[tuple[int, int, int, str, int]]:
    found = []
    starts = np.cumsum(counts) - counts
    for row in np.flatnonzero(counts > 1).tolist():
        part = slice(int(starts[row]), int(starts[row] + counts[row]))
        box, cls = coords[part], categories[part]
        left = np.maximum(box[:, None, :2], box[None, :, :2])
        right = np.minimum(box[:, None, 2:], box[None, :, 2:])
        inter = np.clip(right - left, 0, None).prod(axis=2)
        area = np.clip(box[:, 2:] - box[:, :2], 0, None).prod(axis=1)
        union = area[:, None] + area[None, :] - inter
        overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        same = (cls[:, None] == cls[None, :]) & (overlap > threshold) & np.triu(np.ones_like(overlap, bool), 1)
        for later in range(len(box)):
            firsts = np.flatnonzero(same[:, later])
            if firsts.size:
                i = part.start + later
                found.append((row, int(index_in_row[i]), int(cls[later]), "duplicate", int(firsts[0])))
    return found


def prediction_issues(
    ds: CachedDataset,
    predictions: str = "predictions",
    ground_truth: str | None = None,
    *,
    min_score: float = 0.5,
    iou: float = 0.5,
) -> pa.Table:
    """Boxes a confident model disagrees with: likely missing boxes and likely wrong classes, most confident first.

    Only predictions scored ``min_score`` or more count (a box without a score counts).

    - ``"missing box"``: a prediction that overlaps no ground-truth box (of any class) with an IoU of
      ``iou`` or more: an object the labels may have left out. A crowd region (a box whose
      ``iscrowd`` attribute is 1, as COCO marks them) covers a prediction lying at least ``iou``
      inside it, as COCO's evaluation counts it.
    - ``"wrong class"``: a ground-truth box that a prediction of another class overlaps with an IoU of
      ``iou`` or more while no prediction of its own class does: its label may be wrong. The most
      confident such prediction is named.

    Parameters
    ----------
    ds
        The dataset (or a view of it).
    predictions
        The :class:`~stable_explore.Boxes` column of the model's boxes (scores set).
    ground_truth
        The Boxes column of the labels (default: the first other Boxes column).
    min_score
        The lowest score of a prediction that counts.
    iou
        The overlap (intersection over union) at which two boxes are the same object.

    Returns
    -------
    pyarrow.Table
        ``row``, ``key``, ``issue`` (``"missing box"`` or ``"wrong class"``), ``box`` (the ground-truth
        box's index in its row; -1 for a missing box), ``prediction`` (the prediction's index in its
        row), ``category`` (the ground-truth class; None for a missing box), ``predicted`` (the
        predicted class), ``score`` and ``iou`` (with the box named, or the best with any ground-truth
        box for a missing one), sorted by ``score``, highest first. ``ds.set_boxes`` adds a missing
        box; ``ds.relabel_boxes({row: {box: predicted}})`` takes a wrong class's fix.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> from stable_explore.signals import prediction_issues
    >>> features = se.Features(objects=se.Boxes(names=["cat", "dog"]), predictions=se.Boxes(names=["cat", "dog"]))
    >>> truth = {"bbox": [[0, 0, 10, 10]], "category": ["cat"]}
    >>> found = {"bbox": [[0, 0, 10, 10], [20, 20, 5, 5]], "category": ["dog", "cat"], "score": [0.9, 0.8]}
    >>> ds = se.build([{"objects": truth, "predictions": found}], features, name="b", home=tempfile.mkdtemp(),
    ...               progress=False)
    >>> found = prediction_issues(ds).to_pylist()
    >>> [(r["row"], r["issue"], r["box"], r["prediction"], round(r["score"], 2)) for r in found]
    [(0, 'wrong class', 0, 0, 0.9), (0, 'missing box', -1, 1, 0.8)]
    """
    if not 0 < iou <= 1:
        msg = f"prediction_issues: iou must be in (0, 1], got {iou!r}"
        raise InvalidOptionError(msg)
    pred_feature = _boxes_of(ds, predictions, "predictions")
    if ground_truth is None:
        ground_truth = next((n for n, f in ds.features.items() if isinstance(f, Boxes) and n != predictions), None)
        if ground_truth is None:
            msg = f"prediction_issues: no Boxes column of ground truth beside {predictions!r}; pass ground_truth="
            raise ColumnNotFoundError(msg)
    truth_feature = _boxes_of(ds, ground_truth, "ground_truth")
    truth = _flat_boxes(ds, ground_truth, truth_feature)
    found = _flat_boxes(ds, predictions, pred_feature)
    if truth_feature.normalized != pred_feature.normalized:
        sizes = _row_sizes(ds, f"{ground_truth!r} and {predictions!r} are not both normalized")
        for part, feature in ((truth, truth_feature), (found, pred_feature)):
            if feature.normalized:
                part["xyxy"] *= np.tile(sizes[part["row"]], 2)
    # the predictions' classes as the ground truth's indexes (by name; -1: a class the labels do not have)
    to_truth = np.array([truth_feature.names.index(n) if n in truth_feature.names else -1 for n in pred_feature.names])
    pred_class = to_truth[found["category"]] if len(found["category"]) else found["category"]
    scores = np.where(np.isnan(found["score"]), 1.0, found["score"])
    confident = scores >= min_score
    crowd = _crowds(ds, ground_truth, len(truth["row"]))
    issues: list[tuple[int, str, int, int, int, float, float]] = []
    truth_start = np.searchsorted(truth["row"], np.arange(len(ds) + 1))
    pred_rows = found["row"][confident]
    for row in np.unique(pred_rows).tolist():
        mine = np.flatnonzero(confident & (found["row"] == row))
        lo, hi = int(truth_start[row]), int(truth_start[row + 1])
        issues += _row_issues(
            row,
            found["xyxy"][mine],
            pred_class[mine],
            scores[mine],
            found["index"][mine],
            truth["xyxy"][lo:hi],
            truth["category"][lo:hi],
            crowd[lo:hi],
            iou,
        )
    issues.sort(key=lambda item: (-item[5], item[0], item[3]))
    pred_names = list(pred_feature.names)
    truth_names = list(truth_feature.names)
    start = np.searchsorted(found["row"], np.arange(len(ds) + 1))  # each row's first prediction
    return result_table(
        ds,
        np.array([item[0] for item in issues], dtype=np.int64),
        {
            "issue": pa.array([item[1] for item in issues], type=pa.string()),
            "box": pa.array([item[2] for item in issues], type=pa.int64()),
            "prediction": pa.array([item[3] for item in issues], type=pa.int64()),
            "category": pa.array([truth_names[item[4]] if item[4] >= 0 else None for item in issues], pa.string()),
            "predicted": pa.array(
                [pred_names[int(found["category"][start[item[0]] + item[3]])] for item in issues], type=pa.string()
            ),
            "score": pa.array([item[5] for item in issues], type=pa.float64()),
            "iou": pa.array([item[6] for item in issues], type=pa.float64()),
        },
    )


def _row_issues(
    row: int,
    pred: np.ndarray,
    pred_class: np.ndarray,
    scores: np.ndarray,
    pred_index: np.ndarray,
    truth: np.ndarray,
    truth_class: np.ndarray,
    crowd: np.ndarray,
    threshold: float,
) -> list[tuple[int, str, int, int, int, float, float]]:
    """One image's missing boxes and wrong classes: its confident predictions against its ground truth."""
    out: list[tuple[int, str, int, int, int, float, float]] = []
    if len(truth):
        left = np.maximum(pred[:, None, :2], truth[None, :, :2])
        right = np.minimum(pred[:, None, 2:], truth[None, :, 2:])
        inter = np.clip(right - left, 0, None).prod(axis=2)
        pred_area = np.clip(pred[:, 2:] - pred[:, :2], 0, None).prod(axis=1)
        truth_area = np.clip(truth[:, 2:] - truth[:, :2], 0, None).prod(axis=1)
        union = pred_area[:, None] + truth_area[None, :] - inter
        overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        inside = np.divide(inter, pred_area[:, None], out=np.zeros_like(inter), where=pred_area[:, None] > 0)
        covered = np.where(crowd[None, :], inside, overlap)  # a crowd region covers what lies inside it
    else:
        overlap = covered = np.zeros((len(pred), 0))
    best = covered.max(axis=1) if len(truth) else np.zeros(len(pred))
    plain = np.where(crowd[None, :], 0.0, overlap) if len(truth) else overlap
    for p in np.flatnonzero(best < threshold).tolist():
        nearest = float(plain[p].max()) if len(truth) else 0.0
        out.append((row, "missing box", -1, int(pred_index[p]), -1, float(scores[p]), nearest))
    for g in np.flatnonzero(~crowd).tolist():
        hits = overlap[:, g] >= threshold
        if not hits.any() or (hits & (pred_class == truth_class[g])).any():
            continue
        others = np.flatnonzero(hits)
        p = int(others[np.argmax(scores[others])])
        out.append(
            (row, "wrong class", g, int(pred_index[p]), int(truth_class[g]), float(scores[p]), float(overlap[p, g]))
        )
    return out


def _boxes_of(ds: CachedDataset, column: str, what: str) -> Boxes:
    feature = ds.features.get(column)
    if not isinstance(feature, Boxes):
        boxes = [name for name, f in ds.features.items() if isinstance(f, Boxes)]
        found = "no such column" if feature is None else repr(feature)
        msg = f"prediction_issues: {what}={column!r} is not a Boxes column ({found}); the Boxes columns are {boxes}"
        raise ColumnNotFoundError(msg)
    return feature


def _flat_boxes(ds: CachedDataset, column: str, feature: Boxes) -> dict[str, np.ndarray]:
    """Every box of a column: its row, index in the row, corners, class and score (NaN: none)."""
    flat, rows, index = flat_boxes(ds.arrow_column(column))
    empty = not len(flat)
    return {
        "row": rows,
        "index": index,
        "xyxy": _xyxy(flat, feature),
        "category": np.zeros(0, np.int64) if empty else flat.field("category").to_numpy(zero_copy_only=False),
        "score": np.zeros(0)
        if empty
        else np.asarray(flat.field("score").to_numpy(zero_copy_only=False), dtype=np.float64),
    }


def _crowds(ds: CachedDataset, column: str, count: int) -> np.ndarray:
    """Which boxes of a column are crowd regions (their ``iscrowd`` attribute 1 or true)."""
    if not count:
        return np.zeros(0, dtype=bool)
    flat = pc.list_flatten(ds.arrow_column(column))
    marked = pc.match_substring_regex(flat.field("attributes"), r'"iscrowd":(1|true)[,}]')
    return np.asarray(marked.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _row_sizes(ds: CachedDataset, why: str) -> np.ndarray:
    if "width" not in ds.features or "height" not in ds.features:
        msg = f"prediction_issues: {why}, and the dataset has no 'width' and 'height' columns to scale them by"
        raise InvalidOptionError(msg)
    columns = [
        np.asarray(ds.arrow_column(n).to_numpy(zero_copy_only=False), dtype=np.float64) for n in ("width", "height")
    ]
    sizes: np.ndarray = np.stack(columns, axis=1)
    return sizes
