"""Our feature types <-> Hugging Face ``datasets`` features, and Arrow columns between the two layouts.

The two libraries agree on most things: a ``Value`` is the same Arrow type, a ``ClassLabel`` is an
int64 with names, a list is an Arrow list. They differ in how two types are stored:

============  ==================================  ==========================================
feature       stable-explore stores               ``datasets`` stores
============  ==================================  ==========================================
``Image``     the file's bytes (``large_binary``)  ``struct<bytes: binary, path: string>``
``Array3D``   its C-order bytes (``large_binary``) nested lists (an Arrow extension type)
``Video``     ``struct<bytes: large_binary, path>`` ``struct<bytes: binary, path>`` (decoded by torchcodec)
============  ==================================  ==========================================

:func:`hf_features_dict` gives the ``datasets`` feature dict for a table in either layout (it is
what the ``huggingface`` schema metadata key holds, so ``datasets`` reads our exports with their
label names); :func:`to_hf_layout` converts an Arrow table to the ``datasets`` layout without
copying image bytes through Python; :func:`features_from_hf` converts ``datasets`` features (the
object or its ``to_dict()``) to ours, and :func:`from_hf_layout` a table back to our layout.
``datasets`` itself is never imported here: its features travel as their JSON form.

Examples
--------
>>> from stable_explore import ClassLabel, Features, Image
>>> features = Features(image=Image(), label=ClassLabel(names=["cat", "dog"]))
>>> hf_features_dict(features)["image"], hf_features_dict(features, layout="stored")["image"]
({'_type': 'Image'}, {'_type': 'Value', 'dtype': 'large_binary'})
>>> features_from_hf(hf_features_dict(features)) == features
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import SchemaError
from stable_explore.schema.array3d import Array3D
from stable_explore.schema.boxes import Boxes
from stable_explore.schema.class_label import ClassLabel
from stable_explore.schema.features import Features
from stable_explore.schema.fields import Fields
from stable_explore.schema.hf_boxes import box_layout, boxes_to_hf, spec_arrow_type
from stable_explore.schema.image import Image
from stable_explore.schema.keypoints import Keypoints
from stable_explore.schema.mask import Mask
from stable_explore.schema.sequence import Sequence
from stable_explore.schema.value import Value
from stable_explore.schema.video import Video, video_struct_array

if TYPE_CHECKING:
    from stable_explore.schema.base import Feature

__all__ = [
    "HF_SCHEMA_KEY",
    "LAYOUTS",
    "features_from_hf",
    "from_hf_layout",
    "hf_boxes",
    "hf_features_dict",
    "hf_schema_metadata",
    "is_hf_features",
    "to_hf_layout",
]

HF_SCHEMA_KEY = b"huggingface"
"""The schema metadata key ``datasets`` reads its features from (``{"info": {"features": ...}}``)."""

LAYOUTS = ("stored", "huggingface")
"""How an export lays out images and arrays: as stable-explore stores them, or as ``datasets`` does."""

_HF_IMAGE_TYPE = pa.struct([pa.field("bytes", pa.binary()), pa.field("path", pa.string())])
_HF_VIDEO_TYPE = _HF_IMAGE_TYPE  # datasets stores a Video as it stores an Image
_LIST_TYPES = ("List", "Sequence", "LargeList")
_OFFSET_LIMIT = 2**31 - 1  # bytes a ``binary`` (int32 offsets) chunk may hold


def is_hf_features(value: object) -> bool:
    """Whether ``value`` is a Hugging Face ``datasets.Features`` (checked without importing ``datasets``)."""
    return type(value).__module__.startswith("datasets.") and type(value).__name__ == "Features"


def _check_layout(layout: str) -> None:
    if layout not in LAYOUTS:
        msg = f"layout must be one of {LAYOUTS}, got {layout!r}"
        raise SchemaError(msg)


# -- ours -> datasets ----------------------------------------------------------------


def hf_features_dict(features: Features, *, layout: str = "huggingface", arrays: bool = False) -> dict[str, Any]:
    """The ``datasets`` feature dict (``datasets.Features.from_dict`` reads it) of a table in ``layout``.

    In the ``"stored"`` layout, images and arrays are plain ``large_binary`` values to ``datasets``
    (that is what the bytes are to it); in the ``"huggingface"`` layout images are ``Image`` and
    arrays nested lists of their dtype, or ``Array3D`` with ``arrays=True`` (for a table whose
    array columns carry ``datasets``' own extension type, which only ``datasets`` can make).
    Label names, lists and scalar types are the same in every layout.
    """
    _check_layout(layout)
    return {name: _hf_feature(feature, layout, arrays=arrays) for name, feature in features.items()}


def _hf_feature(feature: Feature, layout: str, *, arrays: bool = False) -> dict[str, Any]:
    if isinstance(feature, ClassLabel):
        return {"_type": "ClassLabel", "names": list(feature.names or ())}
    if isinstance(feature, Value):
        return {"_type": "Value", "dtype": feature.dtype}
    if isinstance(feature, Sequence):
        spec: dict[str, object] = {"_type": "List", "feature": _hf_feature(feature.feature, layout, arrays=arrays)}
        if feature.length >= 0:
            spec["length"] = feature.length
        return spec
    if isinstance(feature, Image):
        return {"_type": "Image"} if layout == "huggingface" else {"_type": "Value", "dtype": "large_binary"}
    if isinstance(feature, Array3D):
        if layout == "huggingface" and arrays:
            return {"_type": "Array3D", "shape": list(feature.shape), "dtype": feature.dtype}
        if layout == "huggingface":
            nested: dict[str, object] = {"_type": "Value", "dtype": feature.dtype}
            for _ in feature.shape:
                nested = {"_type": "List", "feature": nested}
            return nested
        return {"_type": "Value", "dtype": "large_binary"}
    if isinstance(feature, Video):  # datasets' own layout (bytes widened to large_binary in ours)
        if layout == "huggingface":
            return {"_type": "Video"}
        return {"bytes": {"_type": "Value", "dtype": "large_binary"}, "path": {"_type": "Value", "dtype": "string"}}
    if isinstance(feature, Boxes) and layout == "huggingface" and feature.hf_feature is not None:
        return feature.hf_spec() or {}  # the detection column's own shape, as it came from datasets
    if isinstance(feature, Boxes):  # a list of structs in both layouts, the class a ClassLabel of the names
        box = {
            "bbox": {"_type": "List", "feature": {"_type": "Value", "dtype": "float32"}, "length": 4},
            "category": {"_type": "ClassLabel", "names": list(feature.names)},
            "score": {"_type": "Value", "dtype": "float32"},
            "id": {"_type": "Value", "dtype": "int64"},
            "attributes": {"_type": "Value", "dtype": "string"},
        }
        return {"_type": "List", "feature": box}
    if isinstance(feature, Mask):
        return {"_type": "Value", "dtype": "large_binary"}  # the PNG's bytes
    if isinstance(feature, Keypoints):
        point = {"_type": "List", "feature": {"_type": "Value", "dtype": "float32"}, "length": 3}
        return {"_type": "List", "feature": {"_type": "List", "feature": point, "length": len(feature.names)}}
    if isinstance(feature, Fields):  # a list's dict item: datasets writes a dict of features, no _type
        return {name: _hf_feature(f, layout, arrays=arrays) for name, f in feature.fields}
    msg = f"no Hugging Face feature for {feature!r}"
    raise SchemaError(msg)


def hf_schema_metadata(features: Features, *, layout: str = "stored") -> dict[bytes, bytes]:
    """The ``huggingface`` schema metadata entry for a table of ``features`` in ``layout``."""
    info = {"info": {"features": hf_features_dict(features, layout=layout)}}
    return {HF_SCHEMA_KEY: json.dumps(info, ensure_ascii=False).encode()}


def hf_arrow_type(feature: Feature) -> pa.DataType:
    """The Arrow storage type ``datasets`` uses for ``feature`` (Array3D: the extension's storage)."""
    if isinstance(feature, Image):
        return _HF_IMAGE_TYPE
    if isinstance(feature, Video):
        return _HF_VIDEO_TYPE
    if isinstance(feature, Array3D):
        return pa.list_(pa.list_(pa.list_(pa.from_numpy_dtype(np.dtype(feature.dtype)))))
    if isinstance(feature, Sequence):
        inner = hf_arrow_type(feature.feature)
        return pa.list_(inner, feature.length) if feature.length >= 0 else pa.list_(inner)
    if isinstance(feature, Fields):
        return pa.struct([pa.field(name, hf_arrow_type(f)) for name, f in feature.fields])
    if isinstance(feature, Boxes) and feature.hf_feature is not None:
        return spec_arrow_type(feature.hf_feature)
    return feature.arrow_type


def to_hf_layout(table: pa.Table, features: Features) -> pa.Table:
    """``table`` (our stored layout) with images and arrays as ``datasets`` stores them.

    Image bytes are not copied through Python (the data buffers are shared where Arrow can); an
    Array3D's bytes become nested lists over the same values. Other columns are passed as they are.
    """
    columns = []
    for name in table.column_names:
        column = table.column(name)
        feature = features.get(name)
        if feature is not None and _differs(feature):
            pieces = [piece for chunk in column.chunks for piece in _to_hf_array(chunk, feature)]
            column = pa.chunked_array(pieces, type=hf_arrow_type(feature))
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _differs(feature: Feature) -> bool:
    if isinstance(feature, (Image, Array3D, Video)):
        return True
    if isinstance(feature, Boxes):
        return feature.hf_feature is not None
    if isinstance(feature, Fields):
        return any(_differs(f) for _, f in feature.fields)
    return isinstance(feature, Sequence) and _differs(feature.feature)


def _to_hf_array(array: pa.Array, feature: Feature) -> list[pa.Array]:
    """One stored chunk in the ``datasets`` layout (several chunks when it is too big for int32 offsets)."""
    if isinstance(feature, Image):
        return [_image_struct(piece) for piece in _binary_pieces(array)]
    if isinstance(feature, Video):  # an older cache's path strings too
        structs = video_struct_array(array)
        return [piece.cast(_HF_VIDEO_TYPE) for piece in _binary_pieces(structs.field("bytes"), structs)]
    if isinstance(feature, Array3D):
        return [_nested_lists(array, feature)]
    if isinstance(feature, Boxes):
        return [boxes_to_hf(array, feature.hf_spec() or {})]
    if isinstance(feature, Fields):  # each field converted, the struct's nulls kept
        children = [
            pa.concat_arrays(_to_hf_array(array.field(name), f)) if _differs(f) else array.field(name)
            for name, f in feature.fields
        ]
        mask = array.is_null() if array.null_count else None
        return [pa.StructArray.from_arrays(children, names=[name for name, _ in feature.fields], mask=mask)]
    assert isinstance(feature, Sequence)
    values = pa.concat_arrays(_to_hf_array(array.flatten(), feature.feature))  # a slice's own items
    mask = array.is_null() if array.null_count else None
    if pa.types.is_fixed_size_list(array.type):
        return [pa.FixedSizeListArray.from_arrays(values, feature.length, mask=mask)]
    offsets = pc.subtract(array.offsets, array.offsets[0])  # from 0, as flatten() gives the items
    return [pa.ListArray.from_arrays(offsets, values, mask=mask)]


def _binary_pieces(array: pa.Array, whole: pa.Array | None = None) -> list[pa.Array]:
    """A ``large_binary`` chunk cut where each piece's bytes fit int32 offsets (``whole``: cut it instead)."""
    cut = array if whole is None else whole
    ends = np.cumsum(pc.binary_length(array).fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if len(array) == 0 or int(ends[-1]) <= _OFFSET_LIMIT:
        return [cut]
    pieces, start, before = [], 0, 0
    while start < len(array):
        stop = max(int(np.searchsorted(ends, before + _OFFSET_LIMIT, side="right")), start + 1)
        pieces.append(cut.slice(start, stop - start))
        before, start = int(ends[stop - 1]), stop
    return pieces


def _image_struct(array: pa.Array) -> pa.Array:
    data = array.cast(pa.binary())
    paths = pa.nulls(len(array), pa.string())
    mask = array.is_null() if array.null_count else None
    return pa.StructArray.from_arrays([data, paths], fields=list(_HF_IMAGE_TYPE), mask=mask)


def _nested_lists(array: pa.Array, feature: Array3D) -> pa.Array:
    """Array3D bytes -> three levels of lists over the same values (nulls stay null)."""
    dtype = np.dtype(feature.dtype)
    per_row = int(np.prod(feature.shape))
    filled = array.fill_null(b"\x00" * per_row * dtype.itemsize) if array.null_count else array
    _, offset_buffer, buffer = filled.buffers()
    raw = np.zeros(0, dtype=np.uint8)
    if len(filled) and offset_buffer is not None and buffer is not None:
        offsets = np.frombuffer(offset_buffer, dtype=np.int64)[filled.offset : filled.offset + len(filled) + 1]
        raw = np.frombuffer(buffer, dtype=np.uint8)[offsets[0] : offsets[-1]]
    values = pa.array(np.ascontiguousarray(raw).view(dtype))
    a, b, c = feature.shape
    inner = pa.ListArray.from_arrays(pa.array(np.arange(0, len(values) + 1, c, dtype=np.int32)), values)
    middle = pa.ListArray.from_arrays(pa.array(np.arange(0, len(inner) + 1, b, dtype=np.int32)), inner)
    mask = array.is_null() if array.null_count else None
    return pa.ListArray.from_arrays(pa.array(np.arange(0, len(middle) + 1, a, dtype=np.int32)), middle, mask=mask)


# -- datasets -> ours ----------------------------------------------------------------


def features_from_hf(features: Any, *, box_format: str | None = None, box_normalized: bool = False) -> Features:
    """Our :class:`Features` for ``datasets`` features (a ``datasets.Features`` or its ``to_dict()``).

    ``Value``, ``ClassLabel``, ``Image`` (kept as encoded bytes), ``Array3D`` and lists of these map
    one to one; ``Array2D(shape=(r, c))`` is a ``Sequence`` (length ``r``, any when None) of
    ``Sequence(Value(dtype), length=c)``; a list of dicts (``List({"bbox": ..., "category": ...})``)
    is a ``Sequence`` of that dict of features. A feature with no counterpart here (a dict column,
    ``Audio``, ``Value("null")``, ...) is a :class:`SchemaError` naming the column and what to do.

    With ``box_format`` (``"xywh"``, ``"xyxy"`` or ``"cxcywh"``), a detection column (objects with
    a ``bbox`` of four numbers and a ``ClassLabel`` class, as a list of dicts or a dict of lists;
    see :mod:`stable_explore.schema.hf_boxes`) is a :class:`Boxes` of that format instead, its
    ``hf_feature`` the column's feature so the way out gives it back.

    Examples
    --------
    >>> features_from_hf({"label": {"_type": "ClassLabel", "names": ["no", "yes"]},
    ...                   "tokens": {"_type": "List", "feature": {"_type": "Value", "dtype": "int32"}}})
    Features(label=ClassLabel(names=['no', 'yes']), tokens=Sequence(feature=Value(dtype='int32'), length=-1))
    """
    spec = features.to_dict() if is_hf_features(features) else features
    if not isinstance(spec, Mapping):
        msg = f"expected datasets.Features or its to_dict(), got {type(features).__name__}"
        raise SchemaError(msg)
    if box_format is None:
        return Features({name: _our_feature(name, value) for name, value in spec.items()})
    return Features(
        {
            name: hf_boxes(value, box_format, box_normalized) if box_layout(value) else _our_feature(name, value)
            for name, value in spec.items()
        }
    )


def hf_boxes(spec: Mapping[str, Any], box_format: str = "xywh", normalized: bool = False) -> Boxes:
    """The :class:`Boxes` a ``datasets`` detection column (its feature's ``to_dict()``) comes in as."""
    layout = box_layout(spec)
    if layout is None:
        msg = f"not a Hugging Face detection column (objects with a bbox and a ClassLabel): {dict(spec)!r}"
        raise SchemaError(msg)
    fields = spec["feature"] if layout[0] == "list" else {name: field["feature"] for name, field in spec.items()}
    names = list(fields[layout[1]]["names"])
    return Boxes(names=names, format=box_format, normalized=normalized, hf_feature=spec)


def _our_feature(column: str, spec: Any) -> Feature:
    kind = spec.get("_type") if isinstance(spec, Mapping) else None
    if kind == "Value":
        dtype = spec["dtype"]
        if dtype == "null":
            msg = f"column {column!r} is Value('null') (no values at all): give it a type with cast_column first"
            raise SchemaError(msg)
        return Value(dtype)
    if kind == "ClassLabel":
        return ClassLabel(names=list(spec["names"]))
    if kind == "Image":
        return Image()
    if kind == "Video":
        return Video()
    if kind == "Array3D":
        return Array3D(shape=tuple(spec["shape"]), dtype=spec.get("dtype", "float32"))
    if kind == "Array2D":
        return _array2d(column, spec)
    if kind in _LIST_TYPES:
        inner = spec.get("feature")
        length = spec.get("length", -1)
        length = -1 if length is None else int(length)
        if isinstance(inner, Mapping) and "_type" not in inner:  # a list of dicts: each item a struct
            item = {name: _our_item(column, name, value) for name, value in inner.items()}
            return Sequence(Fields.of(item), length=length)
        return Sequence(_our_feature(column, inner), length=length)
    if kind is None and isinstance(spec, Mapping):
        msg = (
            f"column {column!r} is a nested dict of features {sorted(spec)}, which has no feature type here; "
            "flatten it first (hf_dataset.flatten() gives one column per leaf)"
        )
        raise SchemaError(msg)
    msg = f"column {column!r} is a Hugging Face {kind} feature, which has no counterpart here; remove or cast it"
    raise SchemaError(msg)


def _our_item(column: str, name: str, spec: object) -> Feature:
    """One field of a list's dict item (a dict inside it must be in a list of its own)."""
    if isinstance(spec, Mapping) and "_type" not in spec:
        msg = (
            f"column {column!r}: field {name!r} of its list items is itself a dict of features, which a list's "
            "dict item cannot hold here; flatten that field into fields of the item, or keep it as JSON text"
        )
        raise SchemaError(msg)
    return _our_feature(f"{column}.{name}", spec)


def _array2d(column: str, spec: Mapping[str, Any]) -> Feature:
    """``Array2D(shape=(rows, cols))``: a list of rows of ``cols`` values (``rows`` fixed too unless None)."""
    shape = list(spec.get("shape") or ())
    if len(shape) != 2 or shape[1] is None or any(n is not None and (not isinstance(n, int) or n < 0) for n in shape):
        msg = f"column {column!r} is an Array2D of shape {shape}; expected (rows, columns), only rows may be None"
        raise SchemaError(msg)
    row = Sequence(Value(spec.get("dtype", "float32")), length=int(shape[1]))
    return Sequence(row, length=-1 if shape[0] is None else int(shape[0]))


def from_hf_layout(table: pa.Table, features: Features) -> pa.Table:
    """A table in the ``datasets`` layout (images as structs, arrays as nested lists) in our stored layout.

    Image structs whose bytes are missing (only a path) keep the struct: :meth:`Image.encode_value`
    reads the file. Use :func:`row_values` on the result to get values every feature encodes.
    """
    columns = []
    for name in table.column_names:
        column = table.column(name)
        feature = features.get(name)
        if isinstance(column.type, pa.ExtensionType) and not isinstance(feature, Array3D):
            # datasets' Array2D: nested lists in an extension type; a Sequence of Sequences takes the lists
            storage = column.type.storage_type
            column = pa.chunked_array([chunk.storage for chunk in column.chunks], type=storage)
        if isinstance(feature, Image) and pa.types.is_struct(column.type):
            column = _image_bytes(column)
        if isinstance(feature, Video):
            column = pa.chunked_array([video_struct_array(chunk) for chunk in column.chunks], type=feature.arrow_type)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _image_bytes(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Image structs -> their bytes as ``large_binary``, when every non-null struct has its bytes."""
    chunks = []
    for chunk in column.chunks:
        data = chunk.field("bytes")
        missing = pc.and_(chunk.is_valid(), data.is_null())
        if pc.any(missing).as_py():
            return column  # some images are paths: encoded row by row (the file is read then)
        mask = chunk.is_null() if chunk.null_count else None
        chunks.append(data.cast(pa.large_binary()) if mask is None else pc.if_else(mask, None, data))
    return pa.chunked_array([c.cast(pa.large_binary()) for c in chunks], type=pa.large_binary())


def row_values(features: Features, rows: list[dict[str, object]]) -> list[dict[str, Any]]:
    """Rows read from Arrow (either layout) turned into values our features encode (arrays from bytes).

    A detection column whose class field has another name (``label``, ``classes``...) gets it as
    ``category``.
    """
    arrays = [(name, f) for name, f in features.items() if isinstance(f, Array3D)]
    renamed = [(name, label) for name, label in _class_fields(features) if label != "category"]
    if renamed:
        for row in rows:
            for name, label in renamed:
                row[name] = _category_named(row.get(name), label)
    if not arrays:
        return rows
    for row in rows:
        for name, feature in arrays:
            value = row.get(name)
            if isinstance(value, (bytes, bytearray)):
                row[name] = np.frombuffer(value, dtype=feature.dtype).reshape(feature.shape)
            elif isinstance(value, list):
                row[name] = _integer_array(value, np.dtype(feature.dtype))
    return rows


def _class_fields(features: Features) -> list[tuple[str, str]]:
    """(column, class field) of each Boxes column that came from a ``datasets`` detection column."""
    out = []
    for name, feature in features.items():
        layout = box_layout(feature.hf_feature) if isinstance(feature, Boxes) and feature.hf_feature else None
        if layout is not None:
            out.append((name, layout[1]))
    return out


def _category_named(value: Any, label: str) -> Any:
    """A row's boxes (dict of lists or list of dicts) with the ``label`` field named ``category``."""
    if isinstance(value, dict):
        return _renamed(value, label)
    if isinstance(value, list):
        return [_renamed(box, label) if isinstance(box, dict) else box for box in value]
    return value


def _renamed(box: dict[str, Any], label: str) -> dict[str, Any]:
    if label not in box or "category" in box:
        return box
    return {("category" if key == label else key): item for key, item in box.items()}


def _integer_array(value: list[Any], dtype: np.dtype[Any]) -> Any:
    """Nested lists (the ``datasets`` layout) of an integer array as that dtype when every value fits.

    Python ints come out of ``to_pylist`` as ``int64`` to numpy, which a ``uint8`` array refuses
    as an unsafe cast; the values read from a ``uint8`` column fit, so they are taken as they are.
    Anything else is left for :meth:`Array3D.encode_value` to judge (and name the row).
    """
    try:
        array = np.asarray(value)
    except ValueError:  # ragged: the wrong shape, which the encoder names
        return value
    if dtype.kind not in "iub" or array.dtype.kind not in "iub" or array.dtype == dtype:
        return value
    with np.errstate(over="ignore"):
        converted = array.astype(dtype)
    return converted if np.array_equal(converted, array) else value
