"""Hugging Face detection columns (``objects``) <-> the ``Boxes`` layout.

``datasets`` writes a detection column in one of two shapes, both with a box (``bbox``: four
numbers) and a class (a ``ClassLabel``) per object:

- a list of dicts, ``List({"bbox": List(float32, length=4), "category": ClassLabel(...), ...})``,
  stored as ``list<struct<...>>``;
- a dict of lists (what ``Sequence({...})`` gives, as in cppe-5 and most COCO ports),
  ``{"bbox": List(List(float32, length=4)), "category": List(ClassLabel(...)), ...}``, stored as
  ``struct<bbox: list<...>, category: list<int64>, ...>``.

:func:`box_layout` recognises either from the feature's ``to_dict()`` form (``datasets`` is never
imported here) and names the class field; :func:`spec_arrow_type` is the Arrow type ``datasets``
stores a feature dict as; :func:`boxes_to_hf` turns a stored ``Boxes`` chunk back into the shape
it came in, every field with the type it had.

Examples
--------
>>> spec = {"_type": "List", "feature": {"bbox": {"_type": "List", "length": 4,
...         "feature": {"_type": "Value", "dtype": "float32"}}, "category": {"_type": "ClassLabel", "names": ["a"]}}}
>>> box_layout(spec)
('list', 'category')
>>> spec_arrow_type(spec)
ListType(list<item: struct<bbox: fixed_size_list<item: float>[4], category: int64>>)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from stable_explore.errors import SchemaError
from stable_explore.schema.value import VALUE_TYPES

__all__ = ["CLASS_FIELDS", "box_layout", "boxes_to_hf", "item_specs", "spec_arrow_type", "with_class_names"]

CLASS_FIELDS = ("category", "label", "labels", "class", "classes", "category_id")
"""The names a detection column's class field goes by, in the order they are looked for (a ClassLabel)."""

_LISTS = ("List", "Sequence", "LargeList")
_NUMBERS = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"}
)
_INTEGERS = frozenset(d for d in _NUMBERS if not d.startswith("float"))
_PLAIN = _NUMBERS | {"bool", "string", "large_string"}
# the Value types a box field may take, as Value stores them
_VALUE_TYPES: dict[str, pa.DataType] = {dtype: VALUE_TYPES[dtype] for dtype in _PLAIN}


def _kind(spec: Any) -> str | None:
    return spec.get("_type") if isinstance(spec, Mapping) else None


def _is_list(spec: Any, *, length: int | None = None) -> bool:
    """A list feature (of any length, or of exactly ``length`` when given)."""
    if _kind(spec) not in _LISTS:
        return False
    given = spec.get("length", -1)
    given = -1 if given is None else int(given)
    return given == -1 if length is None else given in (-1, length)


def _value(spec: Any, dtypes: frozenset[str]) -> bool:
    return _kind(spec) == "Value" and spec.get("dtype") in dtypes


def _is_bbox(spec: Any) -> bool:
    return _is_list(spec, length=4) and _value(spec.get("feature"), _NUMBERS)


def _is_attribute(spec: Any) -> bool:
    """A field kept as a box attribute: plain values (JSON's), class labels, lists of those."""
    if _value(spec, frozenset(_PLAIN)) or _kind(spec) == "ClassLabel":
        return True
    return _kind(spec) in _LISTS and _is_attribute(spec.get("feature"))


def item_specs(spec: Any) -> tuple[str, dict[str, Any]] | None:
    """``("list" | "dict", {field: one box's feature})`` for a column of dicts or of lists, else None."""
    if _is_list(spec) and isinstance(spec.get("feature"), Mapping) and _kind(spec["feature"]) is None:
        return "list", dict(spec["feature"])
    if isinstance(spec, Mapping) and _kind(spec) is None and spec and all(_is_list(f) for f in spec.values()):
        return "dict", {name: field.get("feature") for name, field in spec.items()}
    return None


def box_layout(spec: Any) -> tuple[str, str] | None:
    """``(layout, class field)`` when ``spec`` (a ``datasets`` feature's dict) is a detection column, else None.

    A detection column's objects have a ``bbox`` of four numbers and a ``ClassLabel`` field (named
    one of :data:`CLASS_FIELDS`); an ``id`` must be an int, a ``score`` a number, and every other
    field plain values (numbers, strings, bools, class labels or lists of them), which become the
    boxes' attributes.
    """
    found = item_specs(spec)
    if found is None:
        return None
    layout, fields = found
    if not _is_bbox(fields.get("bbox")):
        return None
    label = next((name for name in CLASS_FIELDS if _kind(fields.get(name)) == "ClassLabel"), None)
    if label is None:
        return None
    if "id" in fields and not _value(fields["id"], _INTEGERS):
        return None
    if "score" in fields and not _value(fields["score"], _NUMBERS):
        return None
    others = [spec for name, spec in fields.items() if name not in ("bbox", label, "id", "score")]
    if "attributes" in fields or not all(_is_attribute(field) for field in others):
        return None
    return layout, label


def with_class_names(spec: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """A copy of a detection column's ``spec`` whose class field lists ``names``."""
    layout = box_layout(spec)
    if layout is None:
        msg = f"not a Hugging Face detection column's feature: {dict(spec)!r}"
        raise SchemaError(msg)
    out = copy.deepcopy(dict(spec))
    label = out["feature"][layout[1]] if layout[0] == "list" else out[layout[1]]["feature"]
    label["names"] = list(names)
    return out


def spec_arrow_type(spec: Any) -> pa.DataType:
    """The Arrow type ``datasets`` stores a feature (its ``to_dict()`` form) as, for the types boxes hold."""
    kind = _kind(spec)
    if kind == "Value" and spec.get("dtype") in _VALUE_TYPES:
        return _VALUE_TYPES[spec["dtype"]]
    if kind == "ClassLabel":
        return pa.int64()
    if kind in _LISTS:
        inner = spec_arrow_type(spec.get("feature"))
        length = spec.get("length", -1)
        if length is not None and int(length) >= 0:
            return pa.list_(inner, int(length))
        return pa.large_list(inner) if kind == "LargeList" else pa.list_(inner)
    if isinstance(spec, Mapping) and kind is None:
        return pa.struct([pa.field(name, spec_arrow_type(field)) for name, field in spec.items()])
    msg = f"no Arrow type for the Hugging Face feature {spec!r} in a detection column"
    raise SchemaError(msg)


def boxes_to_hf(array: pa.Array, spec: Mapping[str, Any]) -> pa.Array:
    """One stored ``Boxes`` chunk (``list<struct<bbox, category, score, id, attributes>>``) in ``spec``'s shape.

    The coordinates, class indexes, ids and scores are Arrow casts of the stored columns; the other
    fields are read from each box's attributes (the JSON text) and typed as ``spec`` says, None
    where a box has not that attribute. A null row stays null.
    """
    layout = box_layout(spec)
    found = item_specs(spec)
    if layout is None or found is None:
        msg = f"not a Hugging Face detection column's feature: {dict(spec)!r}"
        raise SchemaError(msg)
    fields = found[1]
    boxes = array.flatten()  # this chunk's boxes (a slice's own)
    stored = dict(zip([f.name for f in boxes.type], boxes.flatten(), strict=True))
    typed = {"bbox": stored["bbox"], layout[1]: stored["category"], "id": stored["id"], "score": stored["score"]}
    attributes: list[dict[str, Any]] | None = None
    children = []
    for name, field_spec in fields.items():
        target = spec_arrow_type(field_spec)
        if name in typed:
            children.append(typed[name].cast(target))
            continue
        if attributes is None:
            attributes = [json.loads(text) if text else {} for text in stored["attributes"].to_pylist()]
        children.append(pa.array([a.get(name) for a in attributes], type=target))
    import pyarrow.compute as pc  # here: se.load and se.build need not import it (~20 ms)

    offsets = pc.subtract(array.offsets, array.offsets[0])
    mask = array.is_null() if array.null_count else None
    if layout[0] == "list":
        items = pa.StructArray.from_arrays(children, names=list(fields))
        if _kind(spec) == "LargeList":
            return pa.LargeListArray.from_arrays(offsets.cast(pa.int64()), items, mask=mask)
        return pa.ListArray.from_arrays(offsets, items, mask=mask)
    lists = []
    for name, child in zip(fields, children, strict=True):
        kind = spec_arrow_type(spec[name])
        made = (
            pa.LargeListArray.from_arrays(offsets.cast(pa.int64()), child)
            if pa.types.is_large_list(kind)
            else pa.ListArray.from_arrays(offsets, child)
        )
        lists.append(made)
    return pa.StructArray.from_arrays(lists, names=list(fields), mask=mask)
