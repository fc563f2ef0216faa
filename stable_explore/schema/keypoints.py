"""``Keypoints``: the keypoints of each instance in one image, K points of (x, y, visibility)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe
from stable_explore.schema.class_label import ClassLabel

__all__ = ["Keypoints"]


@dataclass(frozen=True, repr=False, eq=False)
class Keypoints(Feature):
    """The keypoints of the instances in one image: per instance K points, each (x, y, visibility).

    ``names`` names the K points (``["nose", "left_eye", ...]``), ``skeleton`` the pairs of point
    indexes drawn as lines. Stored as ``list<fixed_size_list<fixed_size_list<float32, 3>, K>>``;
    written as an array-like of shape (N, K, 3) (or a list of N arrays K x 3); read back as a
    float32 numpy array of shape (N, K, 3). Visibility follows COCO: 0 not labelled, 1 labelled
    but hidden, 2 visible.

    Examples
    --------
    >>> points = Keypoints(names=["head", "tail"], skeleton=[(0, 1)])
    >>> points.decode_value(points.encode_value([[[1, 2, 2], [3, 4, 1]]])).shape
    (1, 2, 3)
    """

    names: list[str] | tuple[str, ...]
    skeleton: list[Any] | tuple[Any, ...] = ()
    _type_name: ClassVar[str] = "Keypoints"

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not isinstance(self.names, (list, tuple)) or not self.names:
            msg = f"Keypoints names must be a non-empty list of point names, got {self.names!r}"
            raise SchemaError(msg)
        names = ClassLabel(names=list(self.names)).names or ()
        pairs = []
        for pair in self.skeleton:
            ends = list(pair) if isinstance(pair, (list, tuple)) else []
            if len(ends) != 2:
                msg = f"Keypoints skeleton must be pairs of point indexes or names, got {pair!r}"
                raise SchemaError(msg)
            indexes = []
            for end in ends:
                if isinstance(end, str) and end in names:
                    indexes.append(names.index(end))
                elif isinstance(end, int) and not isinstance(end, bool) and 0 <= end < len(names):
                    indexes.append(end)
                else:
                    msg = f"Keypoints skeleton pair {pair!r}: {end!r} is no point of {list(names)}"
                    raise SchemaError(msg)
            pairs.append((indexes[0], indexes[1]))
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "skeleton", tuple(pairs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keypoints) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(("Keypoints", self.names, self.skeleton))

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.list_(pa.list_(pa.list_(pa.float32(), 3), len(self.names)))

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        if isinstance(value, (str, bytes, dict)):
            msg = f"expected keypoints of shape (N, {len(self.names)}, 3), got {describe(value)}"
            raise EncodingError(msg)
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            msg = f"expected keypoints of shape (N, {len(self.names)}, 3) of numbers, got {describe(value)}"
            raise EncodingError(msg) from exc
        if array.size == 0 and array.ndim <= 1:
            return []
        if array.ndim != 3 or array.shape[1:] != (len(self.names), 3):
            msg = f"expected keypoints of shape (N, {len(self.names)}, 3) (x, y, visibility), got shape {array.shape}"
            raise EncodingError(msg)
        if not np.isfinite(array).all():
            msg = "expected finite keypoint coordinates, got NaN or infinity"
            raise EncodingError(msg)
        return array.astype(np.float32).tolist()

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return np.asarray(value, dtype=np.float32).reshape(len(value), len(self.names), 3)

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "names": list(self.names), "skeleton": [list(p) for p in self.skeleton]}

    def __repr__(self) -> str:
        return f"Keypoints(names={list(self.names)!r}, skeleton={[list(p) for p in self.skeleton]!r})"
