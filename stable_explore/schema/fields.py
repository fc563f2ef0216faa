"""``Fields``: the item of a list of dicts (``Sequence({"bbox": ..., "category": ...})``), stored as an Arrow struct.

A ``Sequence`` given a dict of features holds one of these: each item of the list is a dict
with those keys, each encoded by its own feature (a ``ClassLabel`` keeps its names, a fixed-length
``Sequence`` its length). It is the list-of-dicts column of Hugging Face ``datasets``
(``List({"bbox": ..., "category": ...})``, an Arrow ``list<struct<...>>``). ``Fields`` is only
a ``Sequence``'s item: a dict column at the top level is split into columns instead.

Examples
--------
>>> from stable_explore import ClassLabel, Sequence, Value
>>> boxes = Sequence({"bbox": Sequence(Value("float32"), length=4), "category": ClassLabel(names=["cat", "dog"])})
>>> boxes.encode_value([{"bbox": [0, 0, 2, 3], "category": "dog"}])
[{'bbox': [0, 0, 2, 3], 'category': 1}]
>>> boxes.arrow_type
ListType(list<item: struct<bbox: fixed_size_list<item: float>[4], category: int64>>)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
from typing_extensions import override

from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.base import Feature, describe

__all__ = ["Fields"]


@dataclass(frozen=True, repr=False)
class Fields(Feature):
    """Named features of one dict (an Arrow struct): the item type of a list of dicts.

    Build it through ``Sequence({...})``; ``Fields.of(mapping)`` makes one from a dict.
    """

    fields: tuple[tuple[str, Feature], ...]
    _type_name: ClassVar[str] = "Fields"

    def __post_init__(self) -> None:
        if not self.fields:
            msg = "a dict of features needs at least one field"
            raise SchemaError(msg)
        names = [name for name, _ in self.fields]
        for name, feature in self.fields:
            if not isinstance(name, str) or not name:
                msg = f"a field name must be non-empty text, got {name!r}"
                raise SchemaError(msg)
            if not isinstance(feature, Feature):
                msg = f"field {name!r} must be a feature type such as Value('int64'), got {feature!r}"
                raise SchemaError(msg)
        if len(set(names)) != len(names):
            msg = f"field names repeat: {names}"
            raise SchemaError(msg)

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> Fields:
        """The fields of a dict of features (nested dicts inside lists too), in the dict's order."""
        items = []
        for name, feature in mapping.items():
            if isinstance(feature, Mapping):
                msg = (
                    f"field {name!r} is itself a dict of features; a dict item holds features (Value, ClassLabel, "
                    "Sequence, ...): put the inner dict in a Sequence, or flatten it into fields"
                )
                raise SchemaError(msg)
            items.append((name, feature))
        return cls(tuple(items))

    def as_dict(self) -> dict[str, Feature]:
        """The fields as a dict of name -> feature."""
        return dict(self.fields)

    @property
    @override
    def arrow_type(self) -> pa.DataType:
        return pa.struct([pa.field(name, feature.arrow_type) for name, feature in self.fields])

    @override
    def encode_value(self, value: object) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            msg = f"expected a dict with fields {[n for n, _ in self.fields]}, got {describe(value)}"
            raise EncodingError(msg)
        known = self.as_dict()
        unknown = [key for key in value if key not in known]
        if unknown:
            msg = f"unexpected field(s) {unknown}; the fields are {list(known)}"
            raise EncodingError(msg)
        encoded = {}
        for name, feature in self.fields:
            try:
                encoded[name] = feature.encode_value(value.get(name))
            except EncodingError as exc:
                msg = f"field {name!r}: {exc.reason}"
                raise EncodingError(msg) from exc
        return encoded

    @override
    def decode_value(self, value: Any, *, image_format: str = "pil") -> Any:
        if value is None:
            return None
        return {name: feature.decode_value(value.get(name), image_format=image_format) for name, feature in self.fields}

    @override
    def to_dict(self) -> dict[str, Any]:
        """A dict of the fields' ``to_dict()``, with no ``_type`` (the form ``datasets`` writes a dict in)."""
        return {name: feature.to_dict() for name, feature in self.fields}

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{name!r}: {feature!r}" for name, feature in self.fields) + "}"
