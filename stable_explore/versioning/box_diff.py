"""What changed in the boxes of one row between two versions: boxes added, removed, moved and relabelled.

Boxes of the two sides are matched first by their ``id`` (when both have one), then equal boxes,
then by overlap: the pairs of highest IoU (intersection over union), at least
:data:`MATCH_IOU`, one box to one box. A matched pair whose coordinates differ was moved (its IoU
is given), one whose class differs was relabelled (both may hold); unmatched boxes were removed
(from ``a``) or added (in ``b``). Only the rows the row diff found changed are looked at.

Examples
--------
>>> from stable_explore import Boxes
>>> feature = Boxes(names=["cat", "dog"])
>>> old = feature.encode_value({"bbox": [[0, 0, 10, 10], [50, 50, 10, 10]], "category": [0, 0]})
>>> new = feature.encode_value({"bbox": [[1, 0, 10, 10], [50, 50, 10, 10], [80, 0, 5, 5]], "category": [0, 1, 1]})
>>> change = box_changes(old, new, feature, feature)
>>> change.summary()
'+1 -0 moved 1 relabelled 1'
>>> change.moved[0]["iou"], change.relabelled[0]["from"], change.relabelled[0]["to"]
(0.818, 'cat', 'dog')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stable_explore.schema import Boxes, convert_box

__all__ = ["MATCH_IOU", "BoxChange", "box_changes", "iou"]

MATCH_IOU = 0.3  # a box moved less than this overlap is reported as removed and another added


def iou(first: list[float], second: list[float]) -> float:
    """Intersection over union of two ``xyxy`` boxes (1.0 for two equal empty boxes).

    Examples
    --------
    >>> iou([0, 0, 10, 10], [5, 0, 15, 10])
    0.3333333333333333
    """
    if first == second:
        return 1.0
    width = min(first[2], second[2]) - max(first[0], second[0])
    height = min(first[3], second[3]) - max(first[1], second[1])
    inter = max(0.0, width) * max(0.0, height)
    union = (first[2] - first[0]) * (first[3] - first[1]) + (second[2] - second[0]) * (second[3] - second[1]) - inter
    return inter / union if union > 0 else 0.0


@dataclass
class BoxChange:
    """The box changes of one row; each box is named by its index on its side (``a``, ``b``)."""

    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    relabelled: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.moved or self.relabelled)

    def summary(self) -> str:
        """``"+1 -0 moved 1 relabelled 1"``."""
        return f"+{len(self.added)} -{len(self.removed)} moved {len(self.moved)} relabelled {len(self.relabelled)}"

    def describe(self) -> str:
        """The changes one by one: ``"box 2 dog->cat; box 0 moved (IoU 0.82); +box 3 dog"``."""
        parts = [f"box {r['a']} {r['from']}->{r['to']}" for r in self.relabelled]
        parts += [f"box {m['a']} moved (IoU {m['iou']:.2f})" for m in self.moved]
        parts += [f"-box {r['a']} {r['category']}" for r in self.removed]
        parts += [f"+box {r['b']} {r['category']}" for r in self.added]
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"added": self.added, "removed": self.removed, "moved": self.moved, "relabelled": self.relabelled}


def box_changes(old: Any, new: Any, feature_a: Boxes, feature_b: Boxes) -> BoxChange:
    """The changes from one row's stored boxes (``a``) to another's (``b``)."""
    boxes_a, boxes_b = list(old or []), list(new or [])
    corners_a = [convert_box(box["bbox"], feature_a.format, "xyxy") for box in boxes_a]
    corners_b = [convert_box(box["bbox"], feature_b.format, "xyxy") for box in boxes_b]
    pairs: dict[int, int] = {}
    ids_b = {box["id"]: j for j, box in enumerate(boxes_b) if box.get("id") is not None}
    for i, box in enumerate(boxes_a):
        j = ids_b.get(box.get("id")) if box.get("id") is not None else None
        if j is not None and j not in pairs.values():
            pairs[i] = j
    free_a = [i for i in range(len(boxes_a)) if i not in pairs]
    free_b = [j for j in range(len(boxes_b)) if j not in pairs.values()]
    if free_a and free_b:
        overlaps = np.array([[iou(corners_a[i], corners_b[j]) for j in free_b] for i in free_a])
        # equal boxes of the same class first, then the highest overlaps
        same = np.array([[boxes_a[i] == boxes_b[j] for j in free_b] for i in free_a], dtype=float)
        order = np.argsort(-(overlaps + 2 * same), axis=None, kind="stable")
        taken_a: set[int] = set()
        taken_b: set[int] = set()
        for flat in order.tolist():
            row, col = divmod(flat, len(free_b))
            if overlaps[row, col] < MATCH_IOU and not same[row, col]:
                break
            if row in taken_a or col in taken_b:
                continue
            taken_a.add(row)
            taken_b.add(col)
            pairs[free_a[row]] = free_b[col]
    change = BoxChange()
    for i, j in sorted(pairs.items()):
        before, after = boxes_a[i], boxes_b[j]
        if list(before["bbox"]) != list(after["bbox"]):
            overlap = round(iou(corners_a[i], corners_b[j]), 3)
            change.moved.append({"a": i, "b": j, "iou": overlap, "from": before["bbox"], "to": after["bbox"]})
        name_a, name_b = _name(feature_a, before["category"]), _name(feature_b, after["category"])
        if name_a != name_b:
            change.relabelled.append({"a": i, "b": j, "from": name_a, "to": name_b})
    matched_b = set(pairs.values())
    for i, box in enumerate(boxes_a):
        if i not in pairs:
            change.removed.append({"a": i, "bbox": box["bbox"], "category": _name(feature_a, box["category"])})
    for j, box in enumerate(boxes_b):
        if j not in matched_b:
            change.added.append({"b": j, "bbox": box["bbox"], "category": _name(feature_b, box["category"])})
    return change


def _name(feature: Boxes, index: object) -> Any:
    names = feature.names
    return names[index] if isinstance(index, int) and 0 <= index < len(names) else index
