"""``Sequence``: a list of another feature type, of any or a fixed length."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe

__all__ = ["Sequence"]


@dataclass(frozen=True, repr=False)
class Sequence(Feature):
    """A variable-length list (or fixed, with ``length``) of another feature, or of dicts of features.

    Given a dict of features (``Sequence({"bbox": Sequence(Value("float32"), length=4), "category":
    ClassLabel(names=[...])})``), each item is a dict with those fields, stored as an Arrow struct:
    the list-of-dicts column of ``datasets`` (see :mod:`stable_explore.schema.fields`).

    Examples
    --------
    >>> from stable_explore import Value
    >>> Sequence(Value("float32")).arrow_type
    ListType(list<item: float>)
    >>> Sequence({"x": Value("int32")}).encode_value([{"x": 1}, {"x": None}])
    [{'x': 1}, {'x': None}]
    """

    feature: Feature
    length: int = -1
    _type_name: ClassVar[str] = "Sequence"

    def __post_init__(self) -> None:
        if isinstance(self.feature, Mapping):  # a list of dicts: each item a struct of these features
            from stable_explore.schema.fields import Fields

            object.__setattr__(self, "feature", Fields.of(self.feature))
        if not isinstance(self.feature, Feature):
            msg = f"Sequence needs a feature type such as Value('int64'), got {self.feature!r}"
            raise SchemaError(msg)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        if self.length >= 0:
            return pa.list_(self.feature.arrow_type, self.length)
        return pa.list_(self.feature.arrow_type)

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (SequenceABC, np.ndarray)):
            msg = f"expected a list or 1-D array, got {describe(value)}"
            raise EncodingError(msg)
        if self.length >= 0 and len(value) != self.length:
            msg = f"expected a sequence of length {self.length}, got length {len(value)}"
            raise EncodingError(msg)
        items = value.tolist() if isinstance(value, np.ndarray) else list(value)
        encoded = []
        for position, item in enumerate(items):
            try:
                encoded.append(self.feature.encode_value(item))
            except EncodingError as exc:
                msg = f"item {position}: {exc.reason}"
                raise EncodingError(msg) from exc
        return encoded

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return [self.feature.decode_value(v, image_format=image_format) for v in value]

    @override
    def to_dict(self) -> dict[str, Any]:
        return {"_type": self._type_name, "feature": self.feature.to_dict(), "length": self.length}
