"""``Boxes``: the bounding boxes of one image, each with a class, an optional score, id and free attributes."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore._canonical import canonical_json, json_value
from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.class_label import ClassLabel
from stable_explore.schema.hf_boxes import box_layout, with_class_names

__all__ = ["BOX_FIELDS", "BOX_FORMATS", "Boxes", "convert_box", "flat_boxes"]

BOX_FORMATS = ("xywh", "xyxy", "cxcywh")
BOX_FIELDS = ("bbox", "category", "score", "id")  # the typed fields; every other key of a box is an attribute

_BOX_STRUCT = pa.struct(
    [
        pa.field("bbox", pa.list_(pa.float32(), 4), nullable=False),
        pa.field("category", pa.int64(), nullable=False),
        pa.field("score", pa.float32()),
        pa.field("id", pa.int64()),
        pa.field("attributes", pa.string()),
    ]
)


def flat_boxes(stored: pa.Array | pa.ChunkedArray) -> tuple[pa.StructArray, np.ndarray, np.ndarray]:
    """Every box of a stored ``Boxes`` column, with the row it is in and its index in that row (int64).

    A null row has no boxes.

    Examples
    --------
    >>> import pyarrow as pa
    >>> boxes, rows, index = flat_boxes(pa.array([[{"category": 1}, {"category": 0}], None, [{"category": 1}]]))
    >>> boxes.field("category").to_pylist(), rows.tolist(), index.tolist()
    ([1, 0, 1], [0, 0, 2], [0, 1, 0])
    """
    import pyarrow.compute as pc  # not on the import path of ``import stable_explore``

    stored = stored.combine_chunks() if isinstance(stored, pa.ChunkedArray) else stored
    counts = pc.fill_null(pc.list_value_length(stored), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    index = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return pc.list_flatten(stored), rows, index


def convert_box(box: SequenceABC[float], source: str, target: str) -> list[float]:
    """One box's four coordinates from format ``source`` to format ``target`` (same units).

    Examples
    --------
    >>> convert_box([10, 20, 30, 40], "xywh", "xyxy")
    [10.0, 20.0, 40.0, 60.0]
    >>> convert_box([25, 40, 30, 40], "cxcywh", "xywh")
    [10.0, 20.0, 30.0, 40.0]
    """
    a, b, c, d = (float(v) for v in box)
    if source == "xyxy":
        x, y, w, h = a, b, c - a, d - b
    elif source == "cxcywh":
        x, y, w, h = a - c / 2, b - d / 2, c, d
    else:
        x, y, w, h = a, b, c, d
    if target == "xyxy":
        return [x, y, x + w, y + h]
    if target == "cxcywh":
        return [x + w / 2, y + h / 2, w, h]
    return [x, y, w, h]


@dataclass(frozen=True, repr=False, eq=False)
class Boxes(Feature):
    """The bounding boxes of one image: a list of boxes, each with a class and optional score, id and attributes.

    Stored as ``list<struct<bbox: fixed_size_list<float32, 4>, category: int64, score: float32,
    id: int64, attributes: string>>`` (see docs/format.md). ``format`` says what the four
    coordinates are (``"xywh"``: left, top, width, height as COCO; ``"xyxy"``: corners as
    Pascal VOC; ``"cxcywh"``: centre and size as YOLO), ``normalized`` whether they are fractions
    of the image's size (then each is in [0, 1]) or pixels.

    A row is written as a dict of lists (Hugging Face's ``objects``: ``{"bbox": [[...], ...],
    "category": ["cat", ...]}``, names or class indexes) or as a list of box dicts
    (``[{"bbox": [...], "category": "cat"}, ...]``); ``score`` and ``id`` are optional, every other
    key (``area``, ``iscrowd``, ...) is a free attribute of its box. It reads back as a dict of
    lists: ``bbox``, ``category`` (class indexes; ``names`` on the feature), ``score``, ``id``
    (None where a box has none) and one list per attribute any box of the row has (None where a box
    has not that one; an attribute set to None is one the box has not). In the numpy and torch
    formats ``bbox`` is one float32 array (N, 4).

    ``category_ids`` (optional) are the ids another tool gives the classes (COCO's 1, 3, 7...), one
    per name: imports and exports map them to and from the class indexes.

    ``hf_feature`` (optional; ``se.from_hf`` sets it) is the Hugging Face feature the column came
    in as (its ``to_dict()`` form: a list of ``{bbox, category: ClassLabel, ...}`` dicts or a dict of
    such lists), so ``ds.to_hf()`` hands the boxes back in that shape with those types. It says how
    the boxes travel, not what they are: two ``Boxes`` that differ only in it are equal.

    Examples
    --------
    >>> boxes = Boxes(names=["cat", "dog"])
    >>> stored = boxes.encode_value([{"bbox": [1, 2, 3, 4], "category": "dog", "iscrowd": 0}])
    >>> boxes.decode_value(stored)
    {'bbox': [[1.0, 2.0, 3.0, 4.0]], 'category': [1], 'score': [None], 'id': [None], 'iscrowd': [0]}
    """

    names: list[str] | tuple[str, ...]
    format: str = "xywh"
    normalized: bool = False
    category_ids: list[int] | tuple[int, ...] | None = None
    hf_feature: Mapping[str, Any] | None = None
    _type_name: ClassVar[str] = "Boxes"
    _labels: ClassLabel = field(default=None, init=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not isinstance(self.names, (list, tuple)):
            msg = f"Boxes names must be a list of class names, got {self.names!r}"
            raise SchemaError(msg)
        labels = ClassLabel(names=list(self.names))  # the same checks as a class label's names
        object.__setattr__(self, "names", labels.names)
        object.__setattr__(self, "_labels", labels)
        if self.format not in BOX_FORMATS:
            msg = f"Boxes format must be one of {list(BOX_FORMATS)}, got {self.format!r}"
            raise SchemaError(msg)
        if not isinstance(self.normalized, bool):
            msg = f"Boxes normalized must be True or False, got {self.normalized!r}"
            raise SchemaError(msg)
        if self.category_ids is not None:
            ids = self.category_ids
            ok = isinstance(ids, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
            if not ok or len(ids) != len(labels.names or ()) or len(set(ids)) != len(ids):
                msg = (
                    f"Boxes category_ids must be one distinct int per name ({len(labels.names or ())} names), "
                    f"got {ids!r}"
                )
                raise SchemaError(msg)
            object.__setattr__(self, "category_ids", tuple(ids))
        if self.hf_feature is not None:
            if not isinstance(self.hf_feature, Mapping) or box_layout(self.hf_feature) is None:
                msg = (
                    "Boxes hf_feature must be a Hugging Face detection column's feature dict (a list of "
                    f"{{bbox, category: ClassLabel, ...}} or a dict of such lists), got {self.hf_feature!r}"
                )
                raise SchemaError(msg)
            object.__setattr__(self, "hf_feature", json.loads(json.dumps(self.hf_feature)))  # a copy of its own

    def identity(self) -> dict[str, Any]:
        """:meth:`to_dict` without ``hf_feature``: what two equal ``Boxes`` share."""
        out = self.to_dict()
        out.pop("hf_feature", None)  # how the boxes travel to datasets, not what they are
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Boxes) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(canonical_json(self.identity()))

    def hf_spec(self) -> dict[str, Any] | None:
        """The Hugging Face feature dict ``to_hf`` writes the column as (the one it came in as), or None.

        Its class field lists this feature's ``names``.
        """
        if self.hf_feature is None:
            return None
        return with_class_names(self.hf_feature, list(self.names))

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.list_(_BOX_STRUCT)

    @property
    def labels(self) -> ClassLabel:
        """The classes as a :class:`ClassLabel` (``boxes.labels.int2str(1)``)."""
        return self._labels

    def category_index(self, value: object) -> int:
        """The class index of a name or an index; raises :class:`EncodingError` naming the classes."""
        if isinstance(value, (bool, np.bool_)) or value is None:
            raise EncodingError(self._labels._unknown_message(value))
        index = self._labels.encode_value(value)
        if index == -1:
            raise EncodingError(self._labels._unknown_message(value))
        return int(index)

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        boxes = _as_box_dicts(value)
        encoded = []
        for position, box in enumerate(boxes):
            try:
                encoded.append(self._encode_box(box))
            except EncodingError as exc:
                msg = f"box {position}: {exc.reason}"
                raise EncodingError(msg) from exc
        return encoded

    def _encode_box(self, box: Mapping[str, object]) -> dict[str, Any]:
        if "bbox" not in box or "category" not in box:
            msg = f"a box needs 'bbox' and 'category', got keys {sorted(map(str, box))}"
            raise EncodingError(msg)
        coordinates = self._checked_bbox(box["bbox"])
        score = box.get("score")
        if score is not None:
            if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
                msg = f"expected a number or None for 'score', got {describe(score)}"
                raise EncodingError(msg)
            score = float(score)
        box_id = box.get("id")
        if box_id is not None:
            if isinstance(box_id, (bool, np.bool_)) or not isinstance(box_id, (int, np.integer)):
                msg = f"expected an int or None for 'id', got {describe(box_id)}"
                raise EncodingError(msg)
            box_id = int(box_id)
        attributes = box.get("attributes") or {}
        if isinstance(attributes, str):  # the stored form: a JSON object's text
            try:
                attributes = json.loads(attributes)
            except ValueError as exc:
                msg = f"expected 'attributes' as a dict or a JSON object's text, got {describe(attributes)}"
                raise EncodingError(msg) from exc
        if not isinstance(attributes, Mapping):
            msg = f"expected 'attributes' as a dict, got {describe(attributes)}"
            raise EncodingError(msg)
        attributes = dict(attributes)
        attributes.update({k: v for k, v in box.items() if k not in (*BOX_FIELDS, "attributes")})
        attributes = {k: v for k, v in attributes.items() if v is not None}  # None: the box has no such attribute
        return {
            "bbox": coordinates,
            "category": self.category_index(box["category"]),
            "score": score,
            "id": box_id,
            "attributes": _attributes_text(attributes) if attributes else None,
        }

    def _checked_bbox(self, value: object) -> list[float]:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (SequenceABC, np.ndarray)):
            msg = f"expected 4 numbers for 'bbox', got {describe(value)}"
            raise EncodingError(msg)
        items = list(np.asarray(value).reshape(-1).tolist()) if isinstance(value, np.ndarray) else list(value)
        if len(items) != 4 or not all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) for v in items
        ):
            msg = f"expected 4 numbers for 'bbox' ({self.format}), got {describe(value)}"
            raise EncodingError(msg)
        numbers = [float(v) for v in items]
        if not all(math.isfinite(v) for v in numbers):
            msg = f"expected 4 finite numbers for 'bbox', got {numbers}"
            raise EncodingError(msg)
        x, y, w, h = convert_box(numbers, self.format, "xywh")
        if w < 0 or h < 0:
            msg = f"bbox {numbers} ({self.format}) has a negative width or height ({w:g} x {h:g})"
            raise EncodingError(msg)
        if self.normalized and not all(-1e-6 <= v <= 1 + 1e-6 for v in (x, y, x + w, y + h)):
            msg = f"bbox {numbers} is normalized ({self.format}) but reaches outside [0, 1]"
            raise EncodingError(msg)
        return numbers

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        columns: dict[str, Any] = boxes_as_columns(value)
        if image_format == "numpy":  # the numpy and torch formats: the coordinates as one (N, 4) array
            columns["bbox"] = np.asarray(columns["bbox"], dtype=np.float32).reshape(-1, 4)
        return columns

    @override
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = {"_type": self._type_name, "names": list(self.names), "format": self.format}
        out["normalized"] = self.normalized
        if self.category_ids is not None:
            out["category_ids"] = list(self.category_ids)
        if self.hf_feature is not None:
            out["hf_feature"] = json.loads(json.dumps(self.hf_feature))
        return out

    def __repr__(self) -> str:
        names = list(self.names)
        shown = names if len(names) <= 10 else [*names[:10], f"... {len(names) - 10} more"]
        extra = f", format={self.format!r}" if self.format != "xywh" else ""
        extra += ", normalized=True" if self.normalized else ""
        return f"Boxes(names={shown!r}{extra})"


def boxes_as_columns(stored: list[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Stored boxes (a list of box structs) as a dict of lists, attributes spread into lists of their own."""
    columns: dict[str, list[object]] = {
        "bbox": [list(b["bbox"]) for b in stored],
        "category": [b["category"] for b in stored],
        "score": [b["score"] for b in stored],
        "id": [b["id"] for b in stored],
    }
    attributes = [json.loads(b["attributes"]) if b.get("attributes") else {} for b in stored]
    for name in sorted({k for a in attributes for k in a}):
        columns[name] = [a.get(name) for a in attributes]
    return columns


def _as_box_dicts(value: object) -> list[Mapping[str, Any]]:
    """A row's boxes as a list of box dicts, from a dict of lists or a list of dicts."""
    if isinstance(value, Mapping):
        lengths = {}
        for name, column in value.items():
            if isinstance(column, (str, bytes, Mapping)) or not isinstance(column, (SequenceABC, np.ndarray)):
                msg = f"expected a list per key of a dict of boxes, got {describe(column)} for {name!r}"
                raise EncodingError(msg)
            lengths[name] = len(column)
        if len(set(lengths.values())) > 1:
            msg = f"the lists of a dict of boxes must be as long as each other, got lengths {lengths}"
            raise EncodingError(msg)
        count = next(iter(lengths.values()), 0)
        return [
            {
                name: (column[i] if not (name == "attributes" and column[i] is None) else {})
                for name, column in value.items()
                if name not in ("score", "id") or column[i] is not None
            }
            for i in range(count)
        ]
    if isinstance(value, (str, bytes)) or not isinstance(value, (SequenceABC, np.ndarray)):
        msg = f"expected a dict of lists or a list of box dicts, got {describe(value)}"
        raise EncodingError(msg)
    boxes = list(value)
    for position, box in enumerate(boxes):
        if not isinstance(box, Mapping):
            msg = f"box {position}: expected a dict with 'bbox' and 'category', got {describe(box)}"
            raise EncodingError(msg)
    return boxes


# canonical_json's settings (sorted keys, no spaces), built once: json.dumps builds an encoder per call
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_PLAIN = (str, int, bool)


def _attributes_text(attributes: Mapping[str, object]) -> str:
    try:
        return _ENCODER.encode({str(k): v if type(v) in _PLAIN else json_value(v) for k, v in attributes.items()})
    except (TypeError, ValueError) as exc:
        msg = f"box attributes must be JSON values (numbers, strings, lists, dicts), got {describe(attributes)}"
        raise EncodingError(msg) from exc
