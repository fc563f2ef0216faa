"""``Features``: the schema of a dataset, column name -> feature type, with its JSON and Arrow forms."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from stable_explore._canonical import fingerprint, unencodable_text
from stable_explore.errors import EncodingError, SchemaError
from stable_explore.schema.array3d import Array3D
from stable_explore.schema.base import Feature
from stable_explore.schema.boxes import Boxes
from stable_explore.schema.class_label import ClassLabel
from stable_explore.schema.columns import FEATURES_SCHEMA_KEY, HASH_COLUMN, KEY_COLUMN, RESERVED_COLUMNS
from stable_explore.schema.fields import Fields
from stable_explore.schema.image import Image
from stable_explore.schema.keypoints import Keypoints
from stable_explore.schema.mask import Mask
from stable_explore.schema.sequence import Sequence
from stable_explore.schema.value import VALUE_TYPES, Value
from stable_explore.schema.video import Video

__all__ = ["Features", "feature_from_dict"]

_FEATURE_TYPES: dict[str, type[Feature]] = {
    cls._type_name: cls for cls in (Value, ClassLabel, Image, Array3D, Sequence, Video, Boxes, Mask, Keypoints)
}


def feature_from_dict(data: Mapping[str, Any]) -> Feature:
    """Rebuild one feature type from its ``to_dict()`` form."""
    if not isinstance(data, Mapping) or "_type" not in data:
        msg = f"a feature must be a dict with a '_type' key, got {data!r}"
        raise SchemaError(msg)
    kind = data["_type"]
    args = {k: v for k, v in data.items() if k != "_type"}
    try:
        if kind == "Sequence":
            item = args["feature"]
            if isinstance(item, Mapping) and "_type" not in item:  # a dict of features: a list of dicts
                return Sequence(
                    Fields.of({k: feature_from_dict(v) for k, v in item.items()}), length=int(args.get("length", -1))
                )
            return Sequence(feature_from_dict(item), length=int(args.get("length", -1)))
        if kind == "Array3D":
            return Array3D(shape=tuple(args["shape"]), dtype=args.get("dtype", "float32"))
        return _FEATURE_TYPES[kind](**args)
    except SchemaError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"cannot rebuild feature {dict(data)!r}: {exc}"
        raise SchemaError(msg) from exc


class Features(dict[str, Feature]):
    """An ordered mapping of column name -> feature type: the schema of a dataset.

    Examples
    --------
    >>> from stable_explore import Features, ClassLabel, Value
    >>> features = Features(label=ClassLabel(names=["cat", "dog"]), score=Value("float32"))
    >>> features.to_arrow_schema().names
    ['label', 'score']
    >>> features.encode_example({"label": "dog", "score": 0.5})
    {'label': 1, 'score': 0.5}
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        for name, feature in self.items():
            _check_column(name, feature)

    # every way of adding a column checks it as __init__ does
    def __setitem__(self, name: str, feature: Feature) -> None:
        _check_column(name, feature)
        super().__setitem__(name, feature)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Add or replace columns (checked as in ``Features(...)``)."""
        added = dict(*args, **kwargs)
        for name, feature in added.items():
            _check_column(name, feature)
        super().update(added)

    def setdefault(self, name: str, feature: Feature | None = None) -> Feature:
        """``dict.setdefault`` with the same checks as adding a column."""
        if name not in self:
            self[name] = feature  # type: ignore[assignment]
        return self[name]

    def __ior__(self, other: object) -> Features:  # type: ignore[override]
        self.update(other)
        return self

    def __or__(self, other: object) -> Features:  # type: ignore[override]
        merged = Features(self)
        merged.update(other)
        return merged

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``Features.from_dict`` inverts it exactly."""
        return {name: feature.to_dict() for name, feature in self.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Features:
        """Rebuild features from ``to_dict()`` output (or its JSON)."""
        if not isinstance(data, Mapping):
            msg = f"features must be a dict of name -> feature dict, got {type(data).__name__}"
            raise SchemaError(msg)
        return cls({name: feature_from_dict(spec) for name, spec in data.items()})

    def fingerprint(self) -> str:
        """Hash of the canonical JSON: changes when a class is renamed, a shape changes or columns move."""
        return fingerprint({"columns": list(self), "features": self.to_dict()})

    def to_json(self) -> str:
        """Compact JSON that keeps the column order (``from_dict(json.loads(...))`` inverts it)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def to_arrow_schema(self, *, with_row_columns: bool = False, key_type: pa.DataType | None = None) -> pa.Schema:
        """The Arrow schema of the stored columns (optionally with the key and row-hash columns)."""
        fields = [pa.field(name, feature.arrow_type) for name, feature in self.items()]
        if with_row_columns:
            fields.append(pa.field(KEY_COLUMN, key_type or pa.int64()))
            fields.append(pa.field(HASH_COLUMN, pa.uint64()))
        return pa.schema(fields, metadata={FEATURES_SCHEMA_KEY: self.to_json().encode()})

    @classmethod
    def from_arrow_schema(cls, schema: pa.Schema) -> Features:
        """Features stored in a schema's metadata, or inferred from its types."""
        stored = (schema.metadata or {}).get(FEATURES_SCHEMA_KEY)
        if stored:
            return cls.from_dict(json.loads(stored))
        inferred: dict[str, Feature] = {}
        for arrow_field in schema:
            if arrow_field.name in RESERVED_COLUMNS:
                continue
            inferred[arrow_field.name] = _infer_feature(arrow_field.type)
        return cls(inferred)

    def first_of(self, kind: type[Feature] | tuple[type[Feature], ...]) -> str | None:
        """The name of the first column of a feature type (``features.first_of(ClassLabel)``), or None."""
        return next((name for name, feature in self.items() if isinstance(feature, kind)), None)

    def check_columns(self, example: Mapping[str, object]) -> str | None:
        """A message naming missing or extra fields of ``example``, or None if it fits."""
        if example.keys() == self.keys():
            return None
        missing = [name for name in self if name not in example]
        extra = [name for name in example if name not in self]
        parts = []
        if missing:
            parts.append(f"missing field(s) {missing}")
        if extra:
            parts.append(f"unexpected field(s) {extra} (not in features)")
        return "; ".join(parts) + f"; features are {list(self)}"

    def encode_example(self, example: Mapping[str, object]) -> dict[str, Any]:
        """Encode one example dict; raises EncodingError naming the field."""
        problem = self.check_columns(example)
        if problem:
            raise EncodingError(problem)
        encoded = {}
        for name, feature in self.items():
            try:
                encoded[name] = feature.encode_value(example[name])
            except EncodingError as exc:
                raise EncodingError(exc.reason, field=name) from exc
        return encoded

    def decode_example(self, row: Mapping[str, object], *, image_format: str = "pil") -> dict[str, Any]:
        """Decode a stored row: images to PIL, arrays to ndarrays, labels stay ints."""
        return {
            name: self[name].decode_value(value, image_format=image_format) if name in self else value
            for name, value in row.items()
        }

    def __repr__(self) -> str:
        body = ", ".join(f"{name}={feature!r}" for name, feature in self.items())
        return f"Features({body})"


_SEPARATORS = ("/", "\\", "\x00")


def _check_column(name: object, feature: object) -> None:
    """A column name is a plain, non-empty name (it becomes a folder name in exports); a feature is a feature type."""
    if not isinstance(name, str) or not name:
        msg = f"feature names must be non-empty strings, got {name!r}"
        raise SchemaError(msg)
    if name in RESERVED_COLUMNS:
        msg = f"the column name {name!r} is reserved for stable-explore's row keys and hashes"
        raise SchemaError(msg)
    if name in (".", "..") or any(s in name for s in _SEPARATORS) or name != name.strip():
        msg = (
            f"the column name {name!r} is not a plain name: it may not be '.' or '..', contain '/', '\\' "
            "or NUL, or start or end with spaces (exports use column names as folder names)"
        )
        raise SchemaError(msg)
    problem = unencodable_text(name)
    if problem:
        msg = f"the column name {name!r} cannot be stored as UTF-8 ({problem}); rename the column"
        raise SchemaError(msg)
    if not isinstance(feature, Feature):
        msg = f"feature {name!r} must be a feature type such as Value('int64'), got {feature!r}"
        raise SchemaError(msg)
    if isinstance(feature, Fields):
        msg = (
            f"feature {name!r} is a dict of features, which is only a list's item here (Sequence({{...}})); "
            "give each field a column of its own"
        )
        raise SchemaError(msg)


def _infer_feature(arrow_type: pa.DataType) -> Feature:
    for dtype, candidate in VALUE_TYPES.items():
        if arrow_type == candidate:
            return Value(dtype)
    if pa.types.is_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        length = arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else -1
        item = arrow_type.value_type
        if pa.types.is_struct(item) and item.num_fields:  # a list of dicts
            return Sequence(Fields.of({f.name: _infer_feature(f.type) for f in item}), length=length)
        return Sequence(_infer_feature(item), length=length)
    msg = f"cannot map Arrow type {arrow_type} to a feature type; pass features= explicitly"
    raise SchemaError(msg)
